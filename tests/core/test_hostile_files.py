"""Files that are not what they claim (issue 23): a clip that is a link to /dev/zero, a FIFO given as a table, a
folder in place of a clip, numbers of 5,000 digits, the same table twice. Each is refused at once with a message
naming it (exit 2, or the documented exit 1 of `assemble`/`check` for a bad stored clip), never read without
bound, never waited on, never an internal error. `core/foundation/safe_files.py` does the checking."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from bad_input_support import BASE_ITEMS, csv_of, deadline, voiced_project

from spokenbench.core.foundation.errors import InputError
from spokenbench.core.foundation.safe_files import read_regular_file


@pytest.fixture(scope="module")
def voiced(tmp_path_factory) -> Path:
    """Two items with espeak clips in one voice (copied by each test that damages it)."""
    return voiced_project(tmp_path_factory.mktemp("hostile"))


def _first_clip(project: Path) -> Path:
    with sqlite3.connect(f"file:{project / 'project.sqlite'}?mode=ro", uri=True) as conn:
        sha, fmt = conn.execute("SELECT sha256, audio_format FROM clips WHERE part = 'token:question'").fetchone()
    conn.close()
    return next((project / "audio").rglob(f"{sha}.{fmt}"))


def _replace(path: Path, how: str) -> None:
    path.unlink()
    if how == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif how == "FIFO":
        os.mkfifo(path)
    elif how == "folder":
        path.mkdir()


@pytest.mark.slow
@pytest.mark.parametrize("how", ["link to /dev/zero", "FIFO", "folder"])
def test_assemble_and_check_refuse_a_clip_that_is_not_a_regular_file_at_once(voiced, tmp_path, cli, how):
    project = Path(shutil.copytree(voiced, tmp_path / "p", symlinks=True))
    clip = _first_clip(project)
    _replace(clip, how)
    with deadline(20):
        assembled = cli("assemble", project)
        checked = cli("check", project)
    assert assembled.code == 1 and checked.code == 1  # their documented "inputs not built" / "problems found"
    assert "internal error" not in assembled.err + checked.err
    assert clip.name in assembled.out and "not a regular file" in assembled.out
    assert clip.stem in checked.out and "1 damaged" in checked.out


@pytest.mark.parametrize("command", ["import", "metrics", "parse", "import-transcripts"])
def test_a_fifo_given_as_a_table_is_refused_at_once(cli, project, tmp_path, command):
    fifo = tmp_path / "table.csv"
    os.mkfifo(fifo)
    args = {
        "import": ["import", project.path, fifo, "--format", "mcq"],
        "metrics": ["metrics", fifo],
        "parse": ["parse", fifo, "--out", tmp_path / "out.jsonl"],
        "import-transcripts": ["import-transcripts", project.path, fifo, "--asr", "w"],
    }[command]
    with deadline(10):
        result = cli(*args)
    assert result.code == 2
    assert "table.csv: is a FIFO (named pipe), not a regular file" in result.err


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null"])
def test_a_link_to_a_device_given_as_a_table_is_refused(cli, project, tmp_path, special):
    link = tmp_path / "items.csv"
    link.symlink_to(special)
    with deadline(10):
        result = cli("import", project.path, link, "--format", "mcq")
    assert result.code == 2 and "items.csv: is a character device, not a regular file" in result.err


def test_reads_are_bounded_to_the_limit_and_the_size_checked(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 100)
    assert read_regular_file(path, 100) == b"x" * 100
    with pytest.raises(InputError, match="f.bin: is 100 bytes; at most 99 bytes is read"):
        read_regular_file(path, 99)
    link = tmp_path / "link.bin"
    link.symlink_to(path)
    assert read_regular_file(link, 100) == b"x" * 100  # a user's own link to a table is followed
    with pytest.raises(InputError, match="link.bin: is a symbolic link"):
        read_regular_file(link, 100, follow_links=False)  # inside a project, never


def test_numbers_of_5000_digits_are_refused_by_import_and_parse(cli, project, tmp_path):
    huge = "9" * 5000
    items = tmp_path / "items.jsonl"
    items.write_text(
        f'{{"id": "q1", "question": "Q?", "options": ["a", "b"], "answer": "A", "language": "en", "n": {huge}}}\n'
    )
    imported = cli("import", project.path, items, "--format", "mcq")
    assert imported.code == 2 and "items.jsonl, row 1: line 1 holds a number of more than 4,300 digits" in imported.err
    answers = tmp_path / "answers.jsonl"
    answers.write_text(f'{{"raw_response": "A", "n": {huge}}}\n')
    parsed = cli("parse", answers, "--out", tmp_path / "out.jsonl")
    assert parsed.code == 2 and "answers.jsonl, row 1: line 1 holds a number" in parsed.err
    cell = tmp_path / "cell.csv"
    cell.write_text(f"id,question,options,answer,language\nq1,Q?,[{huge}],A,en\n")
    in_cell = cli("import", project.path, cell, "--format", "mcq")
    assert in_cell.code == 2 and "cell.csv" in in_cell.err and "internal error" not in in_cell.err


def test_the_same_table_twice_in_one_import_is_refused_naming_it(cli, project, tmp_path):
    table = csv_of(BASE_ITEMS)(tmp_path / "items.csv")
    result = cli("import", project.path, table, table, "--format", "mcq")
    assert result.code == 2 and "items.csv" in result.err and "the same file given twice" in result.err
    assert cli("info", project.path, "--json").json()["items"]["total"] == 0


@pytest.mark.parametrize(
    "content, problem",
    [
        ("[1, 2]", "expected a profile object or a list of profile objects"),
        ("[]", "expected a profile object"),
        ('{"base_accuracy": "high"}', "invalid profile"),
        ('{"shifts": [1]}', "invalid profile"),
        ("9" * 5000, "not valid JSON"),
    ],
)
def test_a_listener_profile_of_the_wrong_shape_is_refused(cli, project, tmp_path, content, problem):
    profile = tmp_path / "profile.json"
    profile.write_text(content)
    result = cli(
        "evaluate", project.path, "--model", "simulated:steady", "--mode", "text", "--prompt", "standard",
        "--dry-run", "--listener-profile", profile,
    )  # fmt: skip
    assert result.code == 2 and "profile.json" in result.err and problem in result.err, result.err


@pytest.mark.parametrize("field", ["{text.__class__}", "{text[0]}", "{text:>999999999}", "{text!r}", "{secret}"])
def test_a_tts_prompt_template_names_only_its_three_fields_plainly(field):
    """A template stored in a colleague's project is text with placeholders, never a format program: attribute
    access would read objects, a width of 10^9 would take a gigabyte."""
    from spokenbench.core.audio.tts.presets import default_template, render_template
    from spokenbench.core.foundation.errors import SpokenBenchError

    with pytest.raises(SpokenBenchError, match="the TTS prompt template is invalid"):
        render_template(f"Say {field}", "hello", "en", "american")
    assert render_template("Say {text} in {language_name} ({accent_name})", "hi", "en", None) == (
        "Say hi in English (standard)"
    )
    for name in ("gemini_prompt.txt", "openai_instructions.txt"):  # the shipped templates keep rendering
        render_template(default_template(name), "hello", "en", "american")


@pytest.mark.slow
def test_check_repair_changes_everything_or_nothing(voiced, tmp_path, cli):
    """A folder holding files where a clip belongs cannot be removed by the repair: it is refused before any row
    changes (it used to mark the clips failed, then stop on the folder). An empty folder or a link is removed."""
    from bad_input_support import project_snapshot

    project = Path(shutil.copytree(voiced, tmp_path / "p", symlinks=True))
    clip = _first_clip(project)
    _replace(clip, "folder")
    (clip / "inside.txt").write_text("someone's file")
    before = project_snapshot(project)
    refused = cli("check", project, "--repair")
    assert refused.code == 2 and "internal error" not in refused.err
    assert clip.name in refused.err and "a folder with files stands where an audio file belongs" in refused.err
    assert project_snapshot(project) == before  # no clip marked failed, nothing removed
    (clip / "inside.txt").unlink()
    repaired = cli("check", project, "--repair")
    assert repaired.code == 0, repaired.err
    assert not clip.exists() and "clips to synthesize again: 1" in repaired.out
