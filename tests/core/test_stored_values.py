"""Rows another program wrote into a shared project (the trust model in docs/reliability.md): a value of another
type than its column's, or text that is not UTF-8, made commands fail as "internal error" (`items`, `export`,
`runs`, `jobs`, `qc-report` on a blob in the demo). Now the failure names the table, row and column and exits 2;
`check` lists every such value; a real bug is still reported as one; the demo itself has none."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from bad_input_support import files_digest

from spokenbench.core.cli import main as cli_module
from spokenbench.core.store.stored_values import foreign_values, stored_value_problems, undecodable_texts


def _edit(project: Path, sql: str, *parameters) -> None:
    conn = sqlite3.connect(project / "project.sqlite", isolation_level=None)
    conn.execute(sql, parameters)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _first_id(project: Path, table: str) -> int:
    conn = sqlite3.connect(project / "project.sqlite")
    row = conn.execute(f"SELECT min(rowid) FROM {table}").fetchone()[0]
    conn.close()
    return row


def test_the_demo_holds_no_value_either_scan_names(built_demo):
    with sqlite3.connect(f"{built_demo.resolve().as_uri()}/project.sqlite?mode=ro", uri=True) as conn:
        assert stored_value_problems(conn, limit=1000) == []
    conn.close()


@pytest.mark.parametrize(
    ("table", "column", "value", "named"),
    [
        ("runs", "name", b"\xff\x00", "a blob where SpokenBench stores text"),
        ("responses", "item_id", "seven", "text where SpokenBench stores an integer"),
        ("responses", "input_tokens", 2.5, "a real where SpokenBench stores an integer"),
        ("runs", "cost_usd", "free", "text where SpokenBench stores a real"),
        ("runs", "parameters_json", "[1, 2]", "not a JSON object"),
        ("jobs", "argv_json", "{not json", "not a JSON array"),
        ("options", "letter", "ab", "not a letter A-Z"),
        ("items", "answer", "x", "not a letter A-Z"),
        ("runs", "model", " ", "not a non-empty name"),
    ],
)
def test_a_value_of_another_type_is_named_by_table_row_and_column(demo_copy, table, column, value, named):
    row = _first_id(demo_copy, table)
    _edit(demo_copy, f"UPDATE {table} SET {column} = ? WHERE rowid = ?", value, row)
    with sqlite3.connect(demo_copy / "project.sqlite") as conn:
        found = [str(problem) for problem in foreign_values(conn)]
    conn.close()
    assert found == [f"table {table}, row {row}, column {column}: {named}"]


def test_text_that_is_not_utf8_is_named(demo_copy):
    row = _first_id(demo_copy, "items")
    _edit(demo_copy, "UPDATE items SET question = CAST(X'61FF62' AS TEXT) WHERE rowid = ?", row)
    with sqlite3.connect(demo_copy / "project.sqlite") as conn:
        assert foreign_values(conn) == []  # SQLite calls it text
        found = [str(problem) for problem in undecodable_texts(conn)]
        assert conn.text_factory is str  # the scan's bytes factory is put back
    conn.close()
    assert found == [f"table items, row {row}, column question: text that is not UTF-8"]


# Commands that failed as "internal error" on the demo with one wrong value in a table's first row (a fuzz of every
# table's columns against 13 reading commands, 2026-12-04: blobs; a big integer, stored as text; text that is no
# option letter), and two on text that is not UTF-8.
FAILED = [
    ("items", "question", b"\xff", ["items"]),
    ("items", "extra_json", b"\xff", ["items"]),
    ("options", "letter", b"\xff", ["export", "--what", "items", "--out", "{out}/items.csv"]),
    ("transcripts", "created_at", b"\xff", ["qc-report"]),
    ("runs", "parameters_json", b"\xff", ["runs"]),
    ("runs", "cost_usd", b"\xff", ["runs"]),
    ("jobs", "started_at", b"\xff", ["jobs"]),
    ("runs", "parameters_json", "4611686018427387904", ["runs"]),  # an integer, stored as text: valid JSON, no object
    ("options", "letter", "xy", ["export", "--what", "items", "--out", "{out}/items.csv"]),
    ("items", "question", "undecodable", ["items"]),
    ("runs", "name", "undecodable", ["runs"]),
]


@pytest.mark.parametrize(("table", "column", "value", "command"), FAILED, ids=lambda v: str(v)[:24])
def test_a_command_that_reads_such_a_value_names_it_and_exits_2(
    cli, demo_copy, tmp_path, table, column, value, command
):
    row = _first_id(demo_copy, table)
    if value == "undecodable":
        _edit(demo_copy, f"UPDATE {table} SET {column} = CAST(X'FF' AS TEXT) WHERE rowid = ?", row)
    else:
        _edit(demo_copy, f"UPDATE {table} SET {column} = ? WHERE rowid = ?", value, row)
    before = files_digest(demo_copy)
    result = cli(command[0], demo_copy, *[part.format(out=tmp_path) for part in command[1:]])
    assert result.code == 2, result.err
    assert "internal error" not in result.err
    assert f"table {table}, row {row}, column {column}" in result.err and "another program wrote them" in result.err
    assert files_digest(demo_copy) == before


def test_check_lists_them_and_exits_1(cli, demo_copy):
    runs, items = _first_id(demo_copy, "runs"), _first_id(demo_copy, "items")
    _edit(demo_copy, "UPDATE runs SET name = ? WHERE rowid = ?", b"\xff", runs)
    _edit(demo_copy, "UPDATE items SET question = CAST(X'FF' AS TEXT) WHERE rowid = ?", items)
    result = cli("check", demo_copy)
    assert result.code == 1
    assert f"table runs, row {runs}, column name: a blob where SpokenBench stores text" in result.out
    assert f"table items, row {items}, column question: text that is not UTF-8" in result.out
    as_json = cli("check", demo_copy, "--json").json()
    assert [(v["table"], v["column"]) for v in as_json["stored_values"]] == [("runs", "name"), ("items", "question")]


def test_a_real_bug_on_a_clean_project_is_still_reported_as_a_bug(cli, demo_copy, monkeypatch):
    def broken(args):
        raise TypeError("a bug of ours")

    parser = cli_module.build_parser()
    monkeypatch.setattr(cli_module, "build_parser", lambda argv=None: parser)
    parser.command_parsers["runs"].set_defaults(handler=broken)
    result = cli("runs", demo_copy)
    assert result.code == cli_module.EXIT_INTERNAL_ERROR
    assert "internal error: TypeError: a bug of ours" in result.err


def test_an_sqlite_without_json_functions_skips_only_the_json_forms(demo_copy, monkeypatch):
    from spokenbench.core.store import stored_values

    run, option = _first_id(demo_copy, "runs"), _first_id(demo_copy, "options")
    _edit(demo_copy, "UPDATE runs SET parameters_json = '[1]' WHERE rowid = ?", run)
    _edit(demo_copy, "UPDATE options SET letter = 'ab' WHERE rowid = ?", option)
    monkeypatch.setattr(stored_values, "_has_json_functions", lambda conn: False)
    with sqlite3.connect(demo_copy / "project.sqlite") as conn:
        found = [(problem.table, problem.column) for problem in foreign_values(conn)]
    conn.close()
    assert found == [("options", "letter")]
