"""The code stays formatted and lint-free: the same ruff checks CI runs, so a developer sees them locally."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff(*args: str) -> subprocess.CompletedProcess:
    executable = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if executable is None:
        pytest.fail('ruff is not installed; it comes with the test extra: pip install -e ".[test]"')
    return subprocess.run([executable, *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint_passes():
    result = ruff("check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_unchanged():
    result = ruff("format", "--no-cache", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr
