import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json
from pathlib import Path

import pytest

from spokenbench.core.cli.main import main as cli_main
from spokenbench.core.store import Project


@pytest.fixture
def project(tmp_path):
    with Project.create(tmp_path / "proj") as p:
        yield p


class CliResult:
    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process; returns exit code and captured output."""

    def run(*args: str) -> CliResult:
        code = cli_main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def built_demo(tmp_path_factory):
    """The demo project, built once per test session (it synthesizes ~1,100 clips); copy it before changing it."""
    from spokenbench.core.demo import build_demo

    return build_demo(tmp_path_factory.mktemp("demo") / "demo-project")


@pytest.fixture
def demo_copy(built_demo, tmp_path):
    """A private, writable copy of the demo project."""
    import shutil

    return Path(shutil.copytree(built_demo, tmp_path / "demo-project"))
