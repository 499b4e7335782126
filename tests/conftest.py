import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json

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


