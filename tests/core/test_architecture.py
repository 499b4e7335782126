"""The design card's rules that a reviewer would otherwise have to remember."""

import ast
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_core_never_imports_qt_at_runtime():
    """Import every core module in a fresh interpreter: no Qt module may be loaded."""
    script = textwrap.dedent(
        """
        import importlib, pkgutil, sys
        import spokenbench.core as core
        for module in pkgutil.walk_packages(core.__path__, "spokenbench.core."):
            importlib.import_module(module.name)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6")
                        or m.startswith(("spokenbench.app", "spokenbench.widgets")))
        print(",".join(loaded))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_core_source_has_no_qt_or_gui_imports():
    offenders = []
    for path in (REPO / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in ("PySide6", "shiboken6", "app", "widgets") or name.startswith(
                    ("spokenbench.app", "spokenbench.widgets")
                ):
                    offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert offenders == []


def test_wheel_installs_only_namespaced_packages(tmp_path):
    """`pip install .` must put spokenbench/core, spokenbench/app, … in site-packages, never a bare core/."""
    pytest.importorskip("setuptools")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    [wheel] = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert top_level == {"spokenbench", next(t for t in top_level if t.endswith(".dist-info"))}
    for package in ("core", "app", "widgets", "resources"):
        assert f"spokenbench/{package}/__init__.py" in names
    assert "spokenbench/resources/demo/demo_mcq.jsonl" in names
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "spokenbench = spokenbench.core.cli.main:main" in entry_points
    assert "spokenbench-studio = spokenbench.app.main:main" in entry_points


def test_cli_and_core_run_without_portaudio(tmp_path):
    """Where libportaudio2 is missing, importing sounddevice raises OSError; the tool must still work and say why."""
    fake = tmp_path / "fake_modules"
    fake.mkdir()
    (fake / "sounddevice.py").write_text("raise OSError('PortAudio library not found')\n")
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, sys.argv[1])
        from spokenbench.core.audio_support import sounddevice_support
        from spokenbench.core.cli.main import main
        support = sounddevice_support()
        assert not support.available and "libportaudio2" in support.message, support
        sys.exit(main(["init", sys.argv[2]]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(fake), str(tmp_path / "p")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
