"""`-` as standard input and output: tables piped in and out of `import`, `export`, `parse`, `metrics`, with
notes on standard error, a bounded read, and a reader that leaves early (`| head`) ending the command quietly."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import gmmlu_rows, write_csv

from spokenbench.core.foundation import standard_streams
from spokenbench.core.foundation.errors import InputError


@pytest.fixture
def stdin_bytes(monkeypatch):
    """Give the next command these bytes as standard input (a pipe, not a terminal)."""

    def give(data: bytes) -> None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))

    return give


def csv_bytes(tmp_path: Path, rows: list[dict]) -> bytes:
    return write_csv(tmp_path / "rows.csv", rows).read_bytes()


def test_import_from_stdin_then_export_to_stdout(cli, project, tmp_path, stdin_bytes):
    stdin_bytes(csv_bytes(tmp_path, gmmlu_rows(5)))
    result = cli("import", project.path, "-", "--format", "gmmlu-lite", "--language", "en")
    assert result.code == 0, result.err
    assert "imported 5 items from standard input" in result.out

    exported = cli("export", project.path, "--what", "items", "--out", "-")
    assert exported.code == 0, exported.err
    rows = list(csv.DictReader(io.StringIO(exported.out)))
    assert [r["question"] for r in rows] == [f"Question number {n}?" for n in range(5)]
    assert exported.err.strip() == "exported 5 items rows to -"  # the note stays off the table


def test_jsonl_on_stdin_is_recognised_and_reimport_skips(cli, project, tmp_path, stdin_bytes):
    data = "".join(json.dumps(r) + "\n" for r in gmmlu_rows(3)).encode()
    stdin_bytes(data)
    assert cli("import", project.path, "-", "--format", "gmmlu-lite", "--language", "ko").code == 0
    stdin_bytes(data)
    again = cli("import", project.path, "-", "--format", "gmmlu-lite", "--language", "ko", "--skip-existing")
    assert again.code == 0, again.err
    assert "imported 0 items" in again.out and "skipped 3" in again.out


def test_bad_rows_on_stdin_are_named_and_nothing_is_imported(cli, project, tmp_path, stdin_bytes):
    rows = gmmlu_rows(3)
    rows[1]["answer"] = "Z"
    stdin_bytes(csv_bytes(tmp_path, rows))
    result = cli("import", project.path, "-", "--format", "gmmlu-lite", "--language", "en")
    assert result.code == 2
    assert "standard input, row 2" in result.err
    assert cli("info", project.path, "--json").json()["items"]["total"] == 0


def test_stdin_is_bounded_and_a_terminal_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * 101), encoding="utf-8"))
    with pytest.raises(InputError, match="standard input: holds more than 100 bytes"):
        standard_streams.read_standard_input(100)

    class Terminal(io.BytesIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(Terminal(b"a,b\n"), encoding="utf-8"))
    with pytest.raises(InputError, match="is a terminal"):
        standard_streams.read_standard_input(100)


def test_sniffing_the_table_type():
    assert standard_streams.sniff_table_format(b"PAR1....") == "parquet"
    assert standard_streams.sniff_table_format(b'\n {"a": 1}\n') == "jsonl"
    assert standard_streams.sniff_table_format(b"a\tb\n1\t2\n") == "tsv"
    assert standard_streams.sniff_table_format(b"a,b\n1,2\n") == "csv"


def test_parse_from_stdin_to_stdout(cli, tmp_path, stdin_bytes):
    stdin_bytes(csv_bytes(tmp_path, [{"raw_response": "The answer is B."}, {"raw_response": "no idea"}]))
    result = cli("parse", "-", "--out", "-")
    assert result.code == 0, result.err
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert [(r["prediction"], r["parse_status"]) for r in rows] == [("B", "ok"), ("", "failed")]
    assert result.err.startswith("parsed 2 row(s) into -")
    refused = cli("parse", "-", "--out", "-", "--json")
    assert refused.code == 2 and "--json cannot go with --out -" in refused.err


def test_metrics_from_stdin(cli, tmp_path, stdin_bytes):
    rows = [
        {"question_id": f"q{q}", "model": "m1", "answer": "A", "prediction": "AB"[(q + o) % 2], "order": str(o)}
        for q in range(6)
        for o in range(2)
    ]
    stdin_bytes(csv_bytes(tmp_path, rows))
    result = cli("metrics", "-", "--bootstrap", "0", "--json")
    assert result.code == 0, result.err
    assert result.json()["m1"]["n"] == 12


@pytest.mark.slow
def test_export_into_a_closed_pipe_ends_quietly(built_demo):
    """`spokenbench export DIR --what items --out - | head`: the reader leaves, the command ends with 0 and
    prints no traceback (Python's SIGPIPE note: stdout is pointed at devnull before exit)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first byte
    script = Path(sys.executable).with_name("spokenbench")
    try:
        done = subprocess.run(
            [str(script), "export", str(built_demo), "--what", "items", "--out", "-"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr

    piped = subprocess.run(
        f"'{script}' export '{built_demo}' --what items --out - | head -n 2",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0 and piped.stdout.startswith("item_id,id,source")
    assert len(piped.stdout.splitlines()) == 2
