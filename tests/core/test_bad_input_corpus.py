"""The bad-input corpus: hundreds of generated bad inputs — tables in every format, responses, raw answers,
damaged audio, broken projects, and every numeric or enumerated option of every command given out-of-range,
non-finite, negative, zero, huge and wrong-type values. Five classes are generated from the CLI's own parser
(tests/bad_input_support.py `generated_cases`, `generated_state_cases`), so a new command or option is covered
without a new test: non-UTF-8 values for every argument, non-regular files (FIFO, link to /dev/zero, folder) for
every file read, misused output paths, 5,000-digit numbers, and every project command on corrupted databases.
Each must end in the documented exit code with a message naming the file or option at fault, never an internal error, and change nothing. The last test prints the
tally per area (cases: clear errors, internal errors, data changed). The default run takes one case per area
and command; `pytest -m slow` runs the rest."""

from __future__ import annotations

import os
import shutil
import stat
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
from bad_input_support import (
    BASE_ITEMS,
    Case,
    Workspace,
    audio_cases,
    csv_of,
    deadline,
    files_digest,
    flag_cases,
    generated_cases,
    generated_state_cases,
    import_cases,
    limit_cases,
    metrics_cases,
    parse_cases,
    project_snapshot,
    state_cases,
)

from spokenbench.core.audio.assembly import AssemblySettings, plan_assembly
from spokenbench.core.cli import main as cli_module
from spokenbench.core.cli.main import main as cli_main
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store import Project

_SOURCE: dict[str, Path] = {}  # the shared project, once built (state cases copy it)


def _shared_source() -> Path:
    return _SOURCE["project"]


CASES: list[Case] = [
    *flag_cases(),
    *import_cases(),
    *metrics_cases(),
    *parse_cases(),
    *state_cases(_shared_source),
    *audio_cases(),
    *limit_cases(),
    *generated_cases(),
    *generated_state_cases(_shared_source),
]
TALLY: dict[str, Counter] = defaultdict(Counter)


@pytest.fixture(scope="module", autouse=True)
def one_parser():
    """The CLI's argument parser, built once for the corpus: building it is most of an in-process run's time,
    and a parser is not changed by parsing."""
    parser = cli_module.build_parser()
    original, cli_module.build_parser = cli_module.build_parser, lambda argv=None: parser
    yield
    cli_module.build_parser = original


@pytest.fixture(scope="module")
def shared_project(tmp_path_factory) -> Path:
    """Two items, no audio: every case that only needs a project runs against it (and must leave it as is)."""
    root = tmp_path_factory.mktemp("corpus")
    project = root / "project"
    items = csv_of(BASE_ITEMS)(root / "base.csv")
    assert cli_main(["init", str(project)]) == 0
    assert cli_main(["import", str(project), str(items), "--format", "mcq", "--source", "corpus"]) == 0
    _SOURCE["project"] = project
    shutil.copytree(project, root / "pristine")
    return project


def _restore(project: Path) -> None:
    """Put the shared project back after a case changed it, so one failure cannot hide or cause another."""
    shutil.rmtree(project)
    shutil.copytree(project.parent / "pristine", project)


@pytest.fixture(scope="module")
def audio_source(shared_project, tmp_path_factory) -> Path:
    """The shared project with espeak clips in one voice: cases that damage audio work on copies of it."""
    project = Path(shutil.copytree(shared_project, tmp_path_factory.mktemp("audio") / "project"))
    args = ["synthesize", str(project), "--tts", "espeak", "--voices", "espeak-female", "--accents", "american"]
    assert cli_main(args) == 0
    return project


def _run(args: list, capsys) -> SimpleNamespace:
    """The CLI in-process, as the `cli` fixture runs it, also when argparse refuses an option (SystemExit)."""
    try:
        code = cli_main([str(a) if not isinstance(a, Path) else os.fspath(a) for a in args])
    except SystemExit as exit:
        code = exit.code
    captured = capsys.readouterr()
    return SimpleNamespace(code=code, out=captured.out, err=captured.err)


def _sampled(cases: list[Case]) -> set[str]:
    """The default run's share of the corpus: the first case of each area and command; the whole corpus runs
    with -m slow."""
    first: dict[tuple[str, str], str] = {}
    for case in cases:
        area, _, rest = case.id.partition(":")
        first.setdefault((area, (rest.split() or [""])[0]), case.id)
    return set(first.values())


SAMPLED = _sampled(CASES)


def _marks(case: Case) -> list:
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return marks if case.id in SAMPLED else [*marks, pytest.mark.slow]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c)) for c in CASES])
def test_bad_input_is_refused_clearly_and_changes_nothing(case: Case, shared_project, audio_source, tmp_path, capsys):
    folder = tmp_path / "case"
    folder.mkdir()
    ws = Workspace(project=shared_project, folder=folder)
    if case.uses_audio_project:
        ws.audio_project = Path(shutil.copytree(audio_source, tmp_path / "audio-project"))
    if case.state is not None:
        ws.project = case.state(tmp_path)
    capsys.readouterr()
    args, must_name = case.build(ws)
    watched = ws.audio_project if case.uses_audio_project else ws.project

    def snapshot():
        if case.state is not None:
            return files_digest(watched)
        return project_snapshot(watched), files_digest(folder)

    before = snapshot()
    with deadline(60):  # a read that waits (a FIFO) or never ends (/dev/zero) fails the case, not the run
        result = _run(args, capsys)
    after = snapshot()

    internal = "internal error" in result.err or "Traceback" in result.err
    changed = before != after
    if changed and watched == shared_project:
        _restore(shared_project)
    tally = TALLY[case.area]
    tally["cases"] += 1
    tally["internal"] += internal
    tally["changed"] += changed
    # Refusals (exit 2) explain themselves on stderr; commands that finish with problems (exit 1, as
    # `assemble` and `check` document for damaged audio) list them in their report on stdout.
    message = result.err if case.codes == (2,) else result.err + result.out
    clear = result.code in case.codes and must_name in message and not internal and not changed
    tally["clear"] += clear
    assert not internal, result.err
    assert result.code in case.codes, f"exit {result.code}, expected {case.codes}\n{result.out}\n{result.err}"
    assert must_name in message, f"the message does not name {must_name!r}:\n{message}"
    assert not changed, "the refused command changed data or left files behind"


def test_corpus_summary(capsys):
    """The corpus's size per area and what the run measured (when the cases above ran in this session)."""
    areas = Counter(case.area for case in CASES)
    assert len(CASES) >= 200 and set(areas) >= {"flags", "import", "metrics", "parse", "project", "audio"}
    generated = {"non-UTF-8 arguments", "non-regular files", "output paths", "huge numbers", "corrupted databases"}
    assert set(areas) >= generated
    ran = sum(t["cases"] for t in TALLY.values())
    clear = sum(t["clear"] for t in TALLY.values())
    internal = sum(t["internal"] for t in TALLY.values())
    changed = sum(t["changed"] for t in TALLY.values())
    with capsys.disabled():
        print(
            f"\nbad-input corpus: {len(CASES)} cases ({', '.join(f'{a} {n}' for a, n in sorted(areas.items()))}); "
            f"ran {ran}: {clear} clear errors, {internal} internal, {changed} data changed"
        )


# ------------------------------------------------------------------------------------------------ output fixes


def test_items_escapes_control_characters_in_human_output(cli, shared_project, tmp_path):
    """Item text is shown, never executed by the terminal: ESC, BEL, CR and bidi overrides come out escaped."""
    project = Path(shutil.copytree(shared_project, tmp_path / "p"))
    rows = [{**BASE_ITEMS[0], "id": "esc\x1b[2J", "question": "Red \x1b[31malert\x07 \u202eevil\r done?"}]
    assert cli("import", project, csv_of(rows)(tmp_path / "esc.csv"), "--format", "mcq").code == 0
    shown = cli("items", project).out
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown and "\r" not in shown
    assert "\\x1b[31malert\\x07" in shown and "\\u202eevil" in shown and "esc\\x1b[2J" in shown
    assert "\x1b[31m" in cli("items", project, "--json").json()[-1]["question"]  # --json keeps the text as stored


@pytest.mark.slow
@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_exports_honour_the_umask(cli, shared_project, tmp_path, mask):
    """Written atomically through a 0600 temp file, an export still gets the mode a plain open would give."""
    previous = os.umask(mask)
    try:
        for name in ("items.csv", "items.jsonl", "items.parquet"):
            assert cli("export", shared_project, "--what", "items", "--out", tmp_path / name).code == 0
            assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask
    finally:
        os.umask(previous)


def test_max_text_chars_raises_the_import_limit(cli, shared_project, tmp_path):
    project = Path(shutil.copytree(shared_project, tmp_path / "p"))
    long_question = [{**BASE_ITEMS[0], "id": "long", "question": "Why? " * 1_000 + "Because?"}]  # 5,008 characters
    table = csv_of(long_question)(tmp_path / "long.csv")
    refused = cli("import", project, table, "--format", "mcq")
    assert (
        refused.code == 2
        and "5,008 characters long; at most 4,000" in refused.err
        and "--max-text-chars" in refused.err
    )
    assert cli("import", project, table, "--format", "mcq", "--max-text-chars", "6000").code == 0


def test_assembly_refuses_an_input_longer_than_its_bound(audio_source, tmp_path, monkeypatch, cli):
    """The duration bound stops an input before it is concatenated (here lowered to a second to test it)."""
    monkeypatch.setattr("spokenbench.core.audio.assembly.MAX_INPUT_SECONDS", 1)
    project = Path(shutil.copytree(audio_source, tmp_path / "p"))
    result = cli("assemble", project, "--json")
    assert result.code == 1 and result.json()["assembled"] == 0
    skipped = result.json()["skipped"]
    assert len(skipped) == 2 and all("minutes of audio" in message for message in skipped)


@pytest.mark.parametrize(
    "bad",
    [
        {"speeds": [0.0]},
        {"volumes": [float("nan")]},
        {"snrs": [-500.0]},
        {"settings": AssemblySettings(sample_rate=10**7)},
    ],
)
def test_plan_assembly_keeps_its_bounds_for_every_caller(shared_project, bad):
    """The app and scripts call plan_assembly directly: the CLI's ranges hold for them too."""
    with Project.open(shared_project) as project, pytest.raises(SpokenBenchError, match="outside"):
        plan_assembly(project.conn, ["original"], **bad)
