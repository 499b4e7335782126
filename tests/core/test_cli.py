import json

import pandas as pd
import pytest
from support import gmmlu_rows, run_console_script, write_csv

from spokenbench.core.cli.main import build_parser


def test_every_command_has_help(capsys):
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    assert {"init", "import", "info", "export", "demo"} <= set(commands)
    for name, sub in commands.items():
        help_text = sub.format_help()
        assert name in help_text and "usage" in help_text


def test_the_command_table_names_every_command_its_module_and_its_help():
    from spokenbench.core.cli.commands import COMMANDS

    full = build_parser()._subparsers._group_actions[0]
    assert list(full.choices) == list(COMMANDS)  # same commands, same order in --help
    summaries = {action.dest: action.help for action in full._choices_actions}
    assert summaries == {name: summary for name, (_module, summary) in COMMANDS.items()}
    for name, (module_name, _summary) in COMMANDS.items():
        handler = full.choices[name].get_default("handler")
        assert handler is not None and handler.__module__ == f"spokenbench.core.cli.{module_name}", name


def test_a_command_loads_only_its_own_module_and_help_loads_none():
    """`spokenbench --help` imports no command module (nor pandas or numpy); `spokenbench info` imports the
    project commands only: the command line starts in a fraction of a second (tests/benchmarks/bench_cli.py)."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from spokenbench.core.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('spokenbench.core.cli.')"
        " and m.endswith('_commands')), 'pandas' in sys.modules, 'numpy' in sys.modules)"
    )

    def loaded(*argv):
        out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=True).stdout
        return out.rsplit("LOADED ", 1)[1].strip()

    assert loaded("--help") == "[] False False"
    assert loaded("info", "--help") == "['project_commands'] False False"
    assert loaded("no-such-command") == "[] False False"


@pytest.mark.slow
def test_demo_then_info_json(cli, tmp_path):
    result = cli("demo", tmp_path / "demo-project")
    assert result.code == 0, result.err
    info = cli("info", tmp_path / "demo-project", "--json").json()
    items = info["items"]
    assert items["by_language"] == {"en": 36, "ko": 24, "zh": 24}
    assert items["by_kind"] == {"gender-probe": 12, "mcq": 72}
    assert items["by_cultural_label"] == {"CA": 36, "CS": 36}
    assert items["by_category"] == {"dependent": 4, "independent": 4, "stereotypical": 4}
    rewrites = info["rewrites"]
    assert rewrites["total"] >= 72 * 5 and rewrites["by_status"].get("flagged", 0) > 0  # a few flagged for review
    # espeak-ng audio: en items in 2 accents, zh and ko in 1, each in 2 voices, plus instruction tokens
    assert info["clips"]["total"] > 1000 and info["clips"]["failed"] == 0
    assert info["runs"] == 14 and info["responses"] > 0  # three simulated listeners and the gender study's eleven runs


def test_demo_refuses_an_occupied_folder(cli, tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep.txt").write_text("precious")
    result = cli("demo", target)
    assert result.code == 2 and "not empty" in result.err
    assert (target / "keep.txt").read_text() == "precious"


@pytest.mark.slow
def test_demo_rewrites_make_items_readable(built_demo):
    from spokenbench.core.store import opened
    from spokenbench.core.store.rewrites import latest_rewrites

    with opened(built_demo) as project:
        conn = project.conn
        item_id = conn.execute("SELECT id FROM items WHERE source_id = 'demo/001' AND language = 'en'").fetchone()[0]
        question = conn.execute("SELECT question FROM items WHERE id = ?", (item_id,)).fetchone()[0]
        rewrite = latest_rewrites(conn, item_id)["question"]["text"]
    assert "^" in question and "^" not in rewrite


@pytest.mark.slow
def test_import_info_export_round_trip(cli, tmp_path):
    project = tmp_path / "p"
    assert cli("init", project).code == 0
    source = write_csv(tmp_path / "en.csv", gmmlu_rows(6))
    result = cli("import", project, source, "--format", "gmmlu-lite", "--json")
    assert result.code == 0 and result.json()[0]["imported"] == 6
    for suffix in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"items.{suffix}"
        assert cli("export", project, "--what", "items", "--out", out).code == 0
        frame = {"csv": pd.read_csv, "jsonl": lambda p: pd.read_json(p, lines=True), "parquet": pd.read_parquet}[
            suffix
        ](out)
        assert len(frame) == 6 and {"id", "question", "option_a", "option_d", "answer", "language"} <= set(
            frame.columns
        )
    # an items export re-imports into another project unchanged
    other = tmp_path / "q"
    cli("init", other)
    assert cli("import", other, tmp_path / "items.csv", "--format", "mcq").code == 0
    again = tmp_path / "again.csv"
    cli("export", other, "--what", "items", "--out", again)
    columns = ["id", "language", "question", "option_a", "option_b", "option_c", "option_d", "answer", "cultural_label"]
    assert pd.read_csv(again)[columns].equals(pd.read_csv(tmp_path / "items.csv")[columns])


def test_export_of_empty_responses_and_ratings_writes_headers_only(cli, tmp_path):
    cli("init", tmp_path / "p")
    for what in ("responses", "ratings"):
        out = tmp_path / f"{what}.csv"
        result = cli("export", tmp_path / "p", "--what", what, "--out", out, "--json")
        assert result.code == 0 and result.json()["rows"] == 0 and out.exists()


@pytest.mark.slow
def test_export_responses_has_metric_columns(cli, tmp_path, demo_copy):
    """Responses come out in the metrics engine's column names, one column per condition factor."""
    from spokenbench.core.store import opened

    with opened(demo_copy) as project, project.transaction() as conn:
        run_id = conn.execute(
            "INSERT INTO runs(name, model, mode, prompt, created_at) VALUES ('r', 'simulated', 'simulated', 'standard', 'now')"
        ).lastrowid
        item_id = conn.execute("SELECT id FROM items WHERE kind = 'mcq' LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO responses(run_id, item_id, condition_key, option_order, raw_text, parsed_letter, parse_status, "
            "mapped_option, created_at) VALUES (?, ?, ?, 'DCBA', 'Answer: A', 'A', 'ok', 'D', 'now')",
            (run_id, item_id, json.dumps({"accent": "american", "gender": "female", "order": "reversed"})),
        )
    out = tmp_path / "responses.jsonl"
    assert cli("export", demo_copy, "--what", "responses", "--out", out).code == 0
    [row] = [r for r in map(json.loads, out.read_text().splitlines()) if r["run_name"] == "r"]
    assert row["model"] == "simulated" and row["prediction"] == "A" and row["option_order"] == "DCBA"
    assert (row["accent"], row["gender"], row["order"]) == ("american", "female", "reversed")
    assert row["question_id"] == "demo/001" and row["answer"] in "ABCD"


@pytest.mark.parametrize(
    "args, expected",
    [
        (["info", "{tmp}/missing"], "no such project folder"),
        (["import", "{tmp}/p", "{tmp}/nothing.csv", "--format", "mcq"], "nothing.csv: file not found"),
        (["import", "{tmp}/p", "{tmp}/en.csv", "--format", "gmmlu-lite", "--map", "bogus"], "is not FIELD=COLUMN"),
        (
            ["import", "{tmp}/p", "{tmp}/en.csv", "--format", "gmmlu-lite", "--map", "colour=x"],
            "unknown field 'colour'",
        ),
        (["export", "{tmp}/p", "--what", "items", "--out", "{tmp}/x.xlsx"], "unknown table type"),
        (["init", "{tmp}/p"], "already a SpokenBench project"),
    ],
)
def test_user_errors_exit_2_with_a_message(cli, tmp_path, args, expected):
    cli("init", tmp_path / "p")
    write_csv(tmp_path / "en.csv", gmmlu_rows(2))
    result = cli(*[a.format(tmp=tmp_path) for a in args])
    assert result.code == 2 and expected in result.err and "Traceback" not in result.err


@pytest.mark.slow
def test_console_script_reports_malformed_file_without_traceback(tmp_path):
    """The installed entry point, as outside scripts run it: exit 2, the problem named, nothing imported."""
    assert run_console_script("init", tmp_path / "p").returncode == 0
    rows = gmmlu_rows(3)
    rows[1]["option_c"] = ""
    write_csv(tmp_path / "en.csv", rows)
    result = run_console_script("import", tmp_path / "p", tmp_path / "en.csv", "--format", "gmmlu-lite")
    assert result.returncode == 2
    assert "en.csv, row 2, column 'option_c': is empty" in result.stderr
    assert "Traceback" not in result.stderr
    info = json.loads(run_console_script("info", tmp_path / "p", "--json").stdout)
    assert info["items"]["total"] == 0
    bad_args = run_console_script("import", tmp_path / "p")
    assert bad_args.returncode == 2 and "usage" in bad_args.stderr


@pytest.mark.slow
def test_output_cut_short_by_the_reader_is_not_an_error(built_demo):
    """`spokenbench items DIR | head -1`: writing to a closed pipe ends the command quietly, exit code 0."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import os, sys
        from spokenbench.core.cli.main import main
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before we write
        sys.stdout = os.fdopen(write_end, "w", buffering=1)
        code = main(["items", sys.argv[1], "--limit", "0"])
        sys.stderr.write(f"exit={code}")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(built_demo)], capture_output=True, text=True, timeout=120
    )
    assert result.stderr.endswith("exit=0") and "internal error" not in result.stderr, result.stderr


def test_short_output_to_a_reader_gone_before_exit_ends_quietly(tmp_path):
    """`spokenbench-studio --cli qc-report … --json | head`: output shorter than the buffer is flushed when the
    command ends, not at interpreter exit, where a closed pipe printed 'Exception ignored … BrokenPipeError'."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import os, sys
        from spokenbench.core.cli.main import main
        main(["init", sys.argv[1]])
        read_end, write_end = os.pipe()
        os.close(read_end)  # the reader is gone before we write
        sys.stdout = os.fdopen(write_end, "w")  # fully buffered, as standard output is into a pipe
        code = main(["info", sys.argv[1], "--json"])
        sys.stderr.write(f"exit={code}")
        sys.exit(code)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "p")], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.endswith("exit=0") and "BrokenPipeError" not in result.stderr, result.stderr


def test_a_command_run_in_process_leaves_the_collector_as_it_was(tmp_path):
    """Only the program's own call (no argv: the console script, `python -m`) freezes what it made before the
    process exits; a caller running commands in its process keeps a collector that collects everything."""
    import gc

    from spokenbench.core.cli.main import main

    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    assert main(["init", str(tmp_path / "p")]) == 0
    assert main(["info", str(tmp_path / "missing")]) == 2
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, enabled)


@pytest.mark.slow
def test_the_program_exits_with_its_output_and_code_after_freezing_what_it_made(tmp_path):
    """Run as the program, a command's output is whole and its exit code kept, for a success and a user error,
    and the objects it made are out of the collector's reach by the time the interpreter exits."""
    import subprocess
    import sys

    script = (
        "import atexit, gc, sys; from spokenbench.core.cli.main import main; "
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, file=sys.stderr)); sys.exit(main())"
    )
    made = subprocess.run([sys.executable, "-c", script, "init", str(tmp_path / "p")], capture_output=True, text=True)
    assert made.returncode == 0 and "frozen True" in made.stderr, made.stderr
    info = subprocess.run(
        [sys.executable, "-c", script, "info", str(tmp_path / "p"), "--json"], capture_output=True, text=True
    )
    assert info.returncode == 0 and json.loads(info.stdout)["items"]["total"] == 0
    missing = subprocess.run(
        [sys.executable, "-c", script, "info", str(tmp_path / "nope")], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "no such project folder" in missing.stderr and "frozen True" in missing.stderr
