"""Output paths and failed commands (issue 23, defects 8, 10, 12): an output whose folder is missing is refused
(exit 2, as documented) instead of creating folders; `parse F --out F` never overwrites its input; a `pack` that
fails stores nothing (not even the project id); a text argument that is not UTF-8 is refused before it is stored."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from bad_input_support import files_digest, project_snapshot, voiced_project

pytestmark = pytest.mark.slow  # a project with synthesized clips and a queue, and pandas for export


@pytest.fixture(scope="module")
def queued_project(tmp_path_factory) -> Path:
    """Two items with espeak clips in a rating queue 'q1'."""
    return voiced_project(tmp_path_factory.mktemp("outputs"), queue="q1")


@pytest.fixture
def copy(queued_project, tmp_path) -> Path:
    return Path(shutil.copytree(queued_project, tmp_path / "p"))


def _project_id(project: Path):
    with sqlite3.connect(project / "project.sqlite") as conn:
        row = conn.execute("SELECT value FROM project_meta WHERE key = 'project_id'").fetchone()
    conn.close()
    return row and row[0]


@pytest.mark.parametrize("command", ["export", "pack", "transcribe --clips-out"])
def test_an_output_in_a_missing_folder_is_refused_and_no_folder_is_made(cli, copy, tmp_path, command):
    out = tmp_path / "missing" / "deeper" / ("out.zip" if command == "pack" else "out.csv")
    args = {
        "export": ["export", copy, "--what", "items", "--out", out],
        "pack": ["pack", copy, "--queue", "q1", "--annotator", "ana", "--out", out],
        "transcribe --clips-out": ["transcribe", copy, "--clips-out", out],
    }[command]
    result = cli(*args)
    assert result.code == 2, result.err
    assert f"the folder {out.parent} does not exist" in result.err
    assert not (tmp_path / "missing").exists()


def test_a_pack_that_fails_stores_no_project_id(cli, copy, tmp_path):
    before = project_snapshot(copy)
    for args in (
        ["--queue", "no-such-queue", "--out", tmp_path / "a.zip"],
        ["--queue", "q1", "--out", tmp_path / "absent" / "a.zip"],
        ["--queue", "q1", "--out", tmp_path],
    ):
        result = cli("pack", copy, "--annotator", "ana", *args)
        assert result.code == 2, result.err
        assert _project_id(copy) is None
    assert project_snapshot(copy) == before
    made = cli("pack", copy, "--queue", "q1", "--annotator", "ana", "--out", tmp_path / "ok.zip", "--json")
    assert made.code == 0 and _project_id(copy) == made.json()["project_id"]


def test_parse_refuses_to_write_over_its_own_input(cli, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"raw_response": "Answer: B"}) + "\n")
    before = answers.read_bytes()
    for out in (answers, tmp_path / "." / "answers.jsonl"):
        result = cli("parse", answers, "--out", out)
        assert result.code == 2 and "is also the input" in result.err and "answers.jsonl" in result.err
    link = tmp_path / "link.jsonl"
    link.symlink_to(answers)
    assert cli("parse", answers, "--out", link).code == 2
    assert answers.read_bytes() == before


@pytest.mark.parametrize(
    "args, option",
    [
        (["speakers", "{p}", "--add", "\udcff", "--language", "en"], "--add"),
        (["pack", "{p}", "--queue", "q1", "--annotator", "a\udcff", "--out", "{t}/x.zip"], "--annotator"),
        (["evaluate", "{p}", "--model", "simulated:steady", "--mode", "text", "--prompt", "standard",
          "--limit", "1", "--name", "r\udcff"], "--name"),
    ],
)  # fmt: skip
def test_text_arguments_that_are_not_utf8_are_refused_before_anything_is_stored(cli, copy, tmp_path, args, option):
    args = [a.replace("{p}", str(copy)).replace("{t}", str(tmp_path)) for a in args]
    before = project_snapshot(copy), files_digest(tmp_path, skip_database=True)
    result = cli(*args)
    assert result.code == 2 and "internal error" not in result.err
    assert f"argument {option}:" in result.err and "\\xff" in result.err and "not valid UTF-8" in result.err
    assert (project_snapshot(copy), files_digest(tmp_path, skip_database=True)) == before
