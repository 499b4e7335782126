"""The bad-input corpus (tests/core/test_bad_input_corpus.py): cases generated per area, the small files they
feed the CLI, and snapshots that show whether a refused input changed anything.

A case builds its command line in a fresh folder and says what the error message must name (the file or the
option at fault). The corpus asserts for every case: the documented exit code, that message, no "internal
error" or traceback, and no data changed in the project (every table's rows through sqlite3's iterdump, and
every audio file) nor any output file left behind."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from support import write_csv, write_jsonl, write_parquet

# Job bookkeeping is not data: a command that fails while running (assemble over a damaged clip) records its
# job as failed, and that record is what `spokenbench jobs` shows. Everything else must stay as it was.
BOOKKEEPING_TABLES = ("jobs", "work_claims")


@dataclass
class Workspace:
    """Where a case runs: `project` is the shared project (read-only for every case), `folder` a fresh,
    empty folder of the case's own for its files and outputs."""

    project: Path
    folder: Path
    audio_project: Path | None = None


@dataclass(frozen=True)
class Case:
    area: str
    name: str
    build: Callable[[Workspace], tuple[list, str]]  # → (arguments, text the error message must contain)
    codes: tuple[int, ...] = (2,)
    xfail: str | None = None  # reason, for flags that belong to another change still in progress
    uses_audio_project: bool = False  # runs on a private copy of the project with synthesized clips
    state: Callable[[Path], Path] | None = None  # builds a project-state folder; snapshot is its files

    @property
    def id(self) -> str:
        return f"{self.area}:{self.name}"


@dataclass
class Outcome:
    clear: int = 0
    internal: int = 0
    changed: int = 0
    other: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ snapshots


def database_dump(db_path: Path) -> list[str]:
    """Every row of every table but the job bookkeeping, as SQL text, read without writing anything."""
    if not db_path.is_file():
        return []
    uri = f"file:{db_path}?mode=ro"
    with sqlite3.connect(uri, uri=True) as conn:
        lines = list(conn.iterdump())
    conn.close()
    skipped = tuple(f'INSERT INTO "{table}"' for table in BOOKKEEPING_TABLES)
    return [
        line
        for line in lines
        if not line.startswith(skipped) and not any(f"'{table}'" in line for table in BOOKKEEPING_TABLES)
    ]


def files_digest(folder: Path, skip_database: bool = False) -> dict[str, str]:
    """sha256 of every file under `folder` (SQLite's -wal file only if it holds anything, never its -shm)."""
    digests = {}
    if not folder.exists():
        return digests
    paths = [folder] if folder.is_file() else sorted(p for p in folder.rglob("*") if p.is_file())
    for path in paths:
        name = str(path.relative_to(folder)) if path != folder else path.name
        if name.endswith("-shm") or (name.endswith("-wal") and path.stat().st_size == 0):
            continue  # SQLite's shared-memory index and an empty log hold no data; a non-empty log does
        if skip_database and (name.startswith("project.sqlite") or name.endswith(".part")):
            continue
        digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def project_snapshot(project: Path) -> tuple:
    """What a refused command must not change: the database's rows and the audio folder's files."""
    return database_dump(project / "project.sqlite"), files_digest(project, skip_database=True)


# ------------------------------------------------------------------------------------------------ inputs

MCQ_ROW = {
    "id": "q1",
    "question": "What is two plus two?",
    "option_a": "four",
    "option_b": "five",
    "option_c": "six",
    "option_d": "three",
    "answer": "A",
    "language": "en",
}


def mcq_rows(count: int = 3, **changes) -> list[dict]:
    rows = [{**MCQ_ROW, "id": f"q{n}", "question": f"What is {n} plus two?"} for n in range(1, count + 1)]
    rows[-1].update(changes)
    return rows


def list_rows(count: int = 3, **changes) -> list[dict]:
    """Rows with the options as one list column (JSONL and Parquet)."""
    rows = []
    for row in mcq_rows(count):
        rows.append(
            {k: v for k, v in row.items() if not k.startswith("option_")}
            | {"options": [row["option_a"], row["option_b"], row["option_c"], row["option_d"]]}
        )
    rows[-1].update(changes)
    return rows


def probe_rows(**changes) -> list[dict]:
    row = {
        "id": "p1",
        "question": "Who is the nurse?",
        "category": "stereotypical",
        "option_a": "the man",
        "option_b": "the woman",
        "orientation_a": "male",
        "orientation_b": "female",
    }
    return [row | changes]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def random_bytes(size: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(size)


def valid_parquet_bytes(folder: Path) -> bytes:
    return write_parquet(folder / "_valid.parquet", list_rows()).read_bytes()


def _write(folder: Path, name: str, content) -> Path:
    """A file from bytes, text, or a writer: (folder, name) → path."""
    path = folder / name
    if callable(content):
        return content(path)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def csv_of(rows, columns=None):
    """A CSV writer for `rows`; the header is every key of any row, so a change to the last row shows."""
    return lambda path: write_csv(path, rows, columns or list(dict.fromkeys(k for row in rows for k in row)))


def tsv_of(rows):
    def write(path: Path) -> Path:
        columns = list(rows[0])
        lines = ["\t".join(columns)] + ["\t".join(str(r.get(c, "")) for c in columns) for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    return write


def jsonl_of(rows):
    return lambda path: write_jsonl(path, rows)


def jsonl_text(lines: list[str]):
    return lambda path: (path.write_text("\n".join(lines) + "\n", encoding="utf-8"), path)[1]


def parquet_of(rows):
    """A Parquet writer for `rows`, every key of any row a column (Arrow would take the first row's keys)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return lambda path: write_parquet(path, [{c: row.get(c) for c in columns} for row in rows])


def parquet_table(table_factory):
    def write(path: Path) -> Path:
        import pyarrow.parquet as pq

        pq.write_table(table_factory(), path)
        return path

    return write


def invalid_utf8_parquet(column: str = "question", base=None):
    def table():
        import pyarrow as pa

        rows = base or list_rows(1)
        columns = {k: [r[k] for r in rows] for k in rows[0]}
        columns[column] = pa.array([b"bad \xff text"] * len(rows), pa.binary()).cast(pa.string(), safe=False)
        return pa.table(columns)

    return parquet_table(table)


# ------------------------------------------------------------------------------------------------ import

LONG = 4_001  # one more than the default --max-text-chars
HUGE = 1_000_001  # one more than any table cell may hold


def _utf16(rows):
    header = ",".join(rows[0])
    body = "\n".join(",".join(str(v) for v in r.values()) for r in rows)
    return (header + "\n" + body + "\n").encode("utf-16")


def _latin1():
    return "id,question,option_a,option_b,answer,language\nq1,Café ou thé?,café,thé,A,fr\n".encode("latin-1")


def _import_inputs() -> list[tuple[str, str, object, str]]:
    """(case name, file name, content, format)"""
    csv_cases = [
        ("empty", b"", "mcq"),
        ("blank lines", b"\n\n   \n", "mcq"),
        ("header only", "id,question,option_a,option_b,answer,language\n", "mcq"),
        ("utf-16", _utf16(mcq_rows()), "mcq"),
        ("latin-1", _latin1(), "mcq"),
        ("ragged long row", "id,question,option_a,option_b,answer,language\nq1,Q?,a,b,A,en,extra\n", "mcq"),
        ("ragged short row", "id,question,option_a,option_b,answer,language\nq1,Q?,a\n", "mcq"),
        ("NUL byte early", b"id,question\x00,option_a,option_b,answer\nq1,Q,a,b,A\n", "mcq"),
        (
            "NUL byte late",
            ("id,question,option_a,option_b,answer,language\n" + "q1,Q?,a,b,A,en\n" * 400).encode()
            + b"q9,Q\x00?,a,b,A,en\n",
            "mcq",
        ),
        ("random binary", random_bytes(3000), "mcq"),
        ("parquet bytes", "PARQUET", "mcq"),
        ("missing question column", csv_of([{k: v for k, v in MCQ_ROW.items() if k != "question"}]), "mcq"),
        ("missing answer column", csv_of([{k: v for k, v in MCQ_ROW.items() if k != "answer"}]), "mcq"),
        ("no option columns", csv_of([{"id": "q1", "question": "Q?", "answer": "A", "language": "en"}]), "mcq"),
        ("header twice", "id,question,question,option_a,option_b,answer,language\nq1,Q?,Q?,a,b,A,en\n", "mcq"),
        ("empty header field", "id,question,,option_a,option_b,answer,language\nq1,Q?,x,a,b,A,en\n", "mcq"),
        ("duplicate ids", csv_of(mcq_rows(3, id="q1")), "mcq"),
        ("answer letter beyond options", csv_of(mcq_rows(answer="E")), "mcq"),
        ("answer not an option", csv_of(mcq_rows(answer="seven")), "mcq"),
        ("answer empty", csv_of(mcq_rows(answer="")), "mcq"),
        ("option empty", csv_of(mcq_rows(option_b="")), "mcq"),
        ("options identical", csv_of(mcq_rows(option_b="four")), "mcq"),
        ("question empty", csv_of(mcq_rows(question="   ")), "mcq"),
        ("question over the limit", csv_of(mcq_rows(question="Why? " * (LONG // 5 + 1))), "mcq"),
        ("option over the limit", csv_of(mcq_rows(option_c="x" * LONG)), "mcq"),
        ("cell over the table limit", csv_of(mcq_rows(question="y" * HUGE)), "mcq"),
        ("id over the field limit", csv_of(mcq_rows(id="i" * 1_001)), "mcq"),
        ("unknown language code", csv_of(mcq_rows(language="zz")), "mcq"),
        ("language as a word", csv_of(mcq_rows(language="english")), "mcq"),
        ("language with junk subtag", csv_of(mcq_rows(language="zz-Nonsense")), "mcq"),
        ("cultural label unknown", csv_of(mcq_rows(cultural_label="XX")), "mcq"),
        ("unterminated quote", 'id,question,option_a,option_b,answer,language\nq1,"Q?,a,b,A,en\n', "mcq"),
        (
            "options list not JSON",
            csv_of([{"id": "q1", "question": "Q?", "options": "[a, b", "answer": "A", "language": "en"}]),
            "mcq",
        ),
        (
            "options list an object",
            csv_of([{"id": "q1", "question": "Q?", "options": '{"a": 1}', "answer": "A", "language": "en"}]),
            "mcq",
        ),
        (
            "options list nested 100,000 deep",
            csv_of([{"id": "q1", "question": "Q?", "options": nested(100_000), "answer": "A", "language": "en"}]),
            "mcq",
        ),
        ("gender probe unknown category", csv_of(probe_rows(category="sexist")), "gender-probe"),
        ("gender probe unknown orientation", csv_of(probe_rows(orientation_b="femme")), "gender-probe"),
        ("gender probe two male options", csv_of(probe_rows(orientation_b="male")), "gender-probe"),
        ("gmmlu-lite language unknown from name", csv_of(mcq_rows()), "gmmlu-lite"),
    ]
    cases = [(f"csv {name}", f"{_slug(name)}.csv", content, fmt) for name, content, fmt in csv_cases]
    tsv_cases = [
        ("empty", b""),
        ("utf-16", _utf16(mcq_rows()).replace(",".encode("utf-16")[2:], "\t".encode("utf-16")[2:])),
        ("ragged row", "id\tquestion\toption_a\toption_b\tanswer\tlanguage\nq1\tQ?\ta\tb\n"),
        ("question over the limit", tsv_of(mcq_rows(question="z" * LONG))),
        ("missing columns", "id\tquestion\nq1\tQ?\n"),
        ("NUL byte", b"id\tquestion\x00\toption_a\nq1\tQ\ta\n"),
        ("duplicate ids", tsv_of(mcq_rows(2, id="q1"))),
    ]
    cases += [(f"tsv {name}", f"{_slug(name)}.tsv", content, "mcq") for name, content in tsv_cases]
    jsonl_cases = [
        ("nested 100,000 deep", jsonl_text(['{"id": "q1", "question": ' + nested(100_000) + "}"])),
        ("nested 200 deep in an extra field", jsonl_of(list_rows(note=json.loads(nested(200))))),
        ("lone surrogate in question", jsonl_text([json.dumps(list_rows(1)[0])[:-1] + ', "question": "Q\\ud800?"}'])),
        ("lone surrogate in a field name", jsonl_text([json.dumps(list_rows(1)[0])[:-1] + ', "k\\udfff": 1}'])),
        ("escaped NUL in question", jsonl_of(list_rows(question="two\u0000plus"))),
        ("raw NUL byte", b'{"id": "q1", "question": "Q\x00"}\n'),
        ("a JSON array", json.dumps(list_rows())),
        ("a number per line", "42\n43\n"),
        ("invalid JSON", '{"id": "q1", "question": \n'),
        ("question is a list", jsonl_of(list_rows(question=["two", "plus"]))),
        ("question is an object", jsonl_of(list_rows(question={"text": "Q?"}))),
        ("question is null", jsonl_of(list_rows(question=None))),
        ("options a plain string", jsonl_of(list_rows(options="four, five"))),
        ("options hold a list", jsonl_of(list_rows(options=[["four"], "five"]))),
        ("options an object", jsonl_of(list_rows(options={"A": "four", "B": "five"}))),
        ("eleven options", jsonl_of(list_rows(options=[f"o{n}" for n in range(11)]))),
        ("100,000 options", jsonl_of(list_rows(options=[str(n) for n in range(100_000)]))),
        ("cell over the table limit", jsonl_of(list_rows(note="n" * HUGE))),
        ("question over the limit", jsonl_of(list_rows(question="q" * LONG))),
        ("option over the limit", jsonl_of(list_rows(options=["a", "b" * LONG]))),
        ("duplicate ids", jsonl_of(list_rows(3, id="q1"))),
        ("missing columns", jsonl_of([{"id": "q1", "question": "Q?"}])),
        ("answer a number", jsonl_of(list_rows(answer=7))),
        ("answer true", jsonl_of(list_rows(answer=True))),
        ("unknown language", jsonl_of(list_rows(language="xx-yy"))),
        ("random binary", random_bytes(2000, seed=3)),
        ("empty", b""),
        ("utf-16", "\n".join(json.dumps(r) for r in list_rows()).encode("utf-16")),
    ]
    cases += [(f"jsonl {name}", f"{_slug(name)}.jsonl", content, "mcq") for name, content in jsonl_cases]
    parquet_cases = [
        ("invalid UTF-8 text", invalid_utf8_parquet()),
        ("truncated", "TRUNCATED"),
        ("magic then junk", b"PAR1" + random_bytes(500) + b"PAR1"),
        ("CSV text inside", "id,question\nq1,Q?\n"),
        ("empty file", b""),
        ("no rows", parquet_table(_empty_arrow_table)),
        ("missing columns", parquet_of([{"id": "q1", "question": "Q?"}])),
        ("question over the limit", parquet_of(list_rows(question="p" * LONG))),
        ("cell over the table limit", parquet_of(list_rows(note="c" * HUGE))),
        ("duplicate ids", parquet_of(list_rows(3, id="q1"))),
        ("answer not an option", parquet_of(list_rows(answer="Z"))),
        ("question is binary", parquet_of(list_rows(question=b"\x00\x01binary"))),
        ("options hold lists", parquet_of([{**r, "options": [["a"], ["b"]]} for r in list_rows()])),
        ("unknown language", parquet_of(list_rows(language="qq"))),
    ]
    cases += [(f"parquet {name}", f"{_slug(name)}.parquet", content, "mcq") for name, content in parquet_cases]
    return cases


def _empty_arrow_table():
    import pyarrow as pa

    return pa.table({"id": pa.array([], pa.string()), "question": pa.array([], pa.string())})


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")[:60]


def _materialize(ws: Workspace, file_name: str, content) -> Path:
    if content == "PARQUET":
        return _write(ws.folder, file_name, valid_parquet_bytes(ws.folder))
    if content == "TRUNCATED":
        data = valid_parquet_bytes(ws.folder)
        return _write(ws.folder, file_name, data[: len(data) // 2])
    return _write(ws.folder, file_name, content)


def import_cases() -> list[Case]:
    cases = []
    for name, file_name, content, fmt in _import_inputs():

        def build(ws, file_name=file_name, content=content, fmt=fmt):
            path = _materialize(ws, file_name, content)
            return ["import", ws.project, path, "--format", fmt], file_name

        cases.append(Case("import", name, build))

    def special(name, make):
        cases.append(Case("import", name, make))

    special(
        "file name not UTF-8",
        lambda ws: (
            ["import", ws.project, _bad_name_copy(ws, "items.csv", csv_of(mcq_rows())), "--format", "mcq"],
            "items",
        ),
    )
    special(
        "unknown extension",
        lambda ws: (
            ["import", ws.project, _write(ws.folder, "items.xlsx", "id\n1\n"), "--format", "mcq"],
            "items.xlsx",
        ),
    )
    special(
        "a folder instead of a file",
        lambda ws: (["import", ws.project, _mkdir(ws.folder / "folder.csv"), "--format", "mcq"], "folder.csv"),
    )
    special(
        "no such file", lambda ws: (["import", ws.project, ws.folder / "absent.csv", "--format", "mcq"], "absent.csv")
    )
    special(
        "one good file and one bad",
        lambda ws: (
            [
                "import",
                ws.project,
                _write(ws.folder, "good.csv", csv_of(mcq_rows())),
                _write(ws.folder, "bad.csv", csv_of(mcq_rows(answer="Q"))),
                "--format",
                "mcq",
            ],
            "bad.csv",
        ),
    )
    special(
        "items already in the project",
        lambda ws: (
            [
                "import",
                ws.project,
                _write(ws.folder, "again.csv", csv_of(BASE_ITEMS)),
                "--format",
                "mcq",
                "--source",
                "corpus",
            ],
            "again.csv",
        ),
    )
    special(
        "import-transcripts unknown clip",
        lambda ws: (
            [
                "import-transcripts",
                ws.project,
                _write(ws.folder, "t.csv", csv_of([{"clip_id": 999999, "text": "hi"}])),
                "--asr",
                "whisper",
            ],
            "t.csv",
        ),
    )
    special(
        "import-transcripts not a clip id",
        lambda ws: (
            [
                "import-transcripts",
                ws.project,
                _write(ws.folder, "t.csv", csv_of([{"clip_id": "one", "text": "hi"}])),
                "--asr",
                "whisper",
            ],
            "t.csv",
        ),
    )
    special(
        "import-transcripts missing text column",
        lambda ws: (
            ["import-transcripts", ws.project, _write(ws.folder, "t.csv", csv_of([{"clip_id": 1}])), "--asr", "w"],
            "t.csv",
        ),
    )
    special(
        "import-transcripts deep JSONL",
        lambda ws: (
            [
                "import-transcripts",
                ws.project,
                _write(ws.folder, "t.jsonl", '{"clip_id": 1, "text": ' + nested(50_000) + "}\n"),
                "--asr",
                "w",
            ],
            "t.jsonl",
        ),
    )
    special(
        "import-transcripts lone surrogate",
        lambda ws: (
            [
                "import-transcripts",
                ws.project,
                _write(ws.folder, "t.jsonl", '{"clip_id": 1, "text": "\\udc80"}\n'),
                "--asr",
                "w",
            ],
            "t.jsonl",
        ),
    )
    cases.append(
        Case(
            "import",
            "import-transcripts superscript digit as clip id",
            lambda ws: (
                [
                    "import-transcripts",
                    ws.project,
                    _write(ws.folder, "t.csv", "clip_id,text\n\u00b2,hi\n"),
                    "--asr",
                    "w",
                ],
                "t.csv",
            ),
        )
    )
    return cases


BASE_ITEMS = [
    {**MCQ_ROW, "id": "base1", "question": "What is two plus two?"},
    {
        **MCQ_ROW,
        "id": "base2",
        "question": "Which colour is the sky?",
        "option_a": "blue",
        "option_b": "green",
        "option_c": "red",
        "option_d": "black",
    },
]


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def _bad_name_copy(ws: Workspace, name: str, content) -> Path:
    """A table whose file name holds the byte 0xff (not UTF-8), as Linux allows."""
    good = _write(ws.folder, name, content)
    bad = Path(os.fsdecode(bytes(ws.folder) + b"/bad\xff" + name.encode()))
    good.rename(bad)
    return bad


# ------------------------------------------------------------------------------------------------ metrics


def response_rows(**changes) -> list[dict]:
    rows = []
    for q in range(1, 5):
        for order in ("ABCD", "DCBA"):
            rows.append(
                {
                    "question_id": f"q{q}",
                    "model": "m1",
                    "answer": "A",
                    "prediction": order[0],
                    "option_order": order,
                    "language": "en" if q % 2 else "ko",
                }
            )
    rows[-1].update(changes)
    return rows


def metrics_cases() -> list[Case]:
    inputs = [
        ("prediction is an object", "r.jsonl", jsonl_of(response_rows(prediction={"a": 1}))),
        ("answer is a list", "r.jsonl", jsonl_of(response_rows(answer=["A", "B"]))),
        ("prediction is a number", "r.jsonl", jsonl_of(response_rows(prediction=1))),
        ("prediction not a letter", "r.csv", csv_of(response_rows(prediction="Z"))),
        ("answer outside the options", "r.csv", csv_of(response_rows(answer="E"))),
        ("option order not a permutation", "r.csv", csv_of(response_rows(option_order="ABCA"))),
        (
            "missing prediction column",
            "r.csv",
            csv_of([{k: v for k, v in r.items() if k != "prediction"} for r in response_rows()]),
        ),
        (
            "missing model column",
            "r.csv",
            csv_of([{k: v for k, v in r.items() if k != "model"} for r in response_rows()]),
        ),
        ("empty", "r.csv", b""),
        ("header only", "r.csv", "question_id,model,answer,prediction\n"),
        ("ragged rows", "r.csv", "question_id,model,answer,prediction\nq1,m1,A,A,extra,more\nq2,m1\n"),
        ("utf-16", "r.csv", _utf16(response_rows())),
        ("random binary", "r.csv", random_bytes(4000, seed=11)),
        ("nested 100,000 deep", "r.jsonl", jsonl_text(['{"question_id": ' + nested(100_000) + "}"])),
        ("lone surrogate", "r.jsonl", jsonl_text([json.dumps(response_rows()[0])[:-1] + ', "model": "m\\ud83d"}'])),
        ("cell over the table limit", "r.csv", csv_of(response_rows(raw="r" * HUGE))),
        ("parquet invalid UTF-8", "r.parquet", invalid_utf8_parquet("model", response_rows())),
        ("parquet truncated", "r.parquet", "TRUNCATED"),
        ("JSON array", "r.jsonl", json.dumps(response_rows())),
        ("unknown extension", "r.xlsx", "a,b\n1,2\n"),
        ("not a Parquet file", "r.parquet", "question_id\nq1\n"),
    ]
    cases = []
    for name, file_name, content in inputs:

        def build(ws, file_name=file_name, content=content):
            return ["metrics", _materialize(ws, file_name, content), "--bootstrap", "0"], file_name

        cases.append(Case("metrics", name, build))

    def good(ws):
        return _write(ws.folder, "good.csv", csv_of(response_rows()))

    cases += [
        Case("metrics", "unknown factor", lambda ws: (["metrics", good(ws), "--factors", "dialect"], "dialect")),
        Case("metrics", "no such file", lambda ws: (["metrics", ws.folder / "none.csv"], "none.csv")),
        Case("metrics", "a folder named .csv", lambda ws: (["metrics", _mkdir(ws.folder / "d.csv")], "d.csv")),
        Case(
            "metrics",
            "file name not UTF-8",
            lambda ws: (["metrics", _bad_name_copy(ws, "r.csv", csv_of(response_rows()))], "r.csv"),
        ),
        Case(
            "metrics",
            "report into /proc",
            lambda ws: (
                ["report", good(ws), "--out", "/proc/spokenbench-report", "--bootstrap", "0"],
                "/proc/spokenbench-report",
            ),
        ),
        Case(
            "metrics",
            "report under a file",
            lambda ws: (
                ["report", good(ws), "--out", _write(ws.folder, "plain.txt", "x") / "sub", "--bootstrap", "0"],
                "plain.txt",
            ),
        ),
        Case(
            "metrics",
            "report of a damaged table",
            lambda ws: (
                ["report", _write(ws.folder, "bad.csv", csv_of(response_rows(answer="Q"))), "--out", ws.folder / "rep"],
                "bad.csv",
            ),
        ),
    ]
    return cases


# ------------------------------------------------------------------------------------------------ parse


def answer_rows(**changes) -> list[dict]:
    rows = [{"raw_response": "Answer: A", "option_order": "ABCD"}, {"raw_response": "B", "option_order": "DCBA"}]
    rows[-1].update(changes)
    return rows


def parse_cases() -> list[Case]:
    def good(ws, name="answers.jsonl", rows=None):
        return _write(ws.folder, name, jsonl_of(rows or answer_rows()))

    inputs = [
        ("missing raw_response", "a.csv", csv_of([{"answer": "A"}])),
        ("option order not a permutation", "a.jsonl", jsonl_of(answer_rows(option_order="ABBA"))),
        ("options not a JSON list", "a.csv", csv_of(answer_rows(options="[four, five"))),
        ("options and order disagree", "a.jsonl", jsonl_of(answer_rows(options=["x", "y"]))),
        ("nested 100,000 deep", "a.jsonl", jsonl_text(['{"raw_response": ' + nested(100_000) + "}"])),
        ("lone surrogate", "a.jsonl", jsonl_text(['{"raw_response": "A\\udfff"}'])),
        ("empty", "a.jsonl", b""),
        ("random binary", "a.csv", random_bytes(1000, seed=5)),
    ]
    cases = []
    for name, file_name, content in inputs:

        def build(ws, file_name=file_name, content=content):
            out = ws.folder / "out.jsonl"
            return ["parse", _materialize(ws, file_name, content), "--out", out], file_name

        cases.append(Case("parse", name, build))
    cases += [
        Case(
            "parse",
            "mixed types into Parquet",
            lambda ws: (
                [
                    "parse",
                    good(ws, rows=[{"raw_response": "A", "x": 1}, {"raw_response": "B", "x": "two"}]),
                    "--out",
                    ws.folder / "out.parquet",
                ],
                "out.parquet",
            ),
        ),
        Case("parse", "output in /proc", lambda ws: (["parse", good(ws), "--out", "/proc/o.jsonl"], "/proc/o.jsonl")),
        Case(
            "parse",
            "output is a folder",
            lambda ws: (["parse", good(ws), "--out", _mkdir(ws.folder / "out.jsonl")], "out.jsonl"),
        ),
        Case(
            "parse",
            "output under a file",
            lambda ws: (["parse", good(ws), "--out", _write(ws.folder, "plain.txt", "x") / "o.jsonl"], "plain.txt"),
        ),
        Case(
            "parse", "output of unknown type", lambda ws: (["parse", good(ws), "--out", ws.folder / "o.xlsx"], "o.xlsx")
        ),
        Case(
            "parse",
            "input name not UTF-8",
            lambda ws: (
                ["parse", _bad_name_copy(ws, "a.jsonl", jsonl_of(answer_rows())), "--out", ws.folder / "o.jsonl"],
                "a.jsonl",
            ),
        ),
        Case(
            "parse",
            "output name not UTF-8",
            lambda ws: (
                ["parse", good(ws), "--out", Path(os.fsdecode(bytes(ws.folder) + b"/o\xff.jsonl"))],
                "o\\xff.jsonl",
            ),
        ),
        Case(
            "parse",
            "letters repeat",
            lambda ws: (
                ["parse", good(ws, rows=[{"raw_response": "A"}]), "--out", ws.folder / "o.jsonl", "--letters", "AAAA"],
                "--letters",
            ),
        ),
        Case(
            "parse",
            "letters not letters",
            lambda ws: (
                ["parse", good(ws, rows=[{"raw_response": "A"}]), "--out", ws.folder / "o.jsonl", "--letters", "A1"],
                "--letters",
            ),
        ),
    ]
    return cases


# ------------------------------------------------------------------------------------------------ flags

REAL_BAD = ("nan", "inf", "-inf", "1e400", "abc", "")
WHOLE_BAD = ("1.5", "abc", "", "9" * 5000)


@dataclass(frozen=True)
class Flag:
    command: str
    option: str
    values: tuple[str, ...]
    base: Callable[[Workspace], list] = lambda ws: []
    xfail: str | None = None


def _project(command: str, *rest):
    return lambda ws: [command, ws.project, *rest]


def _import_base(ws):
    return ["import", ws.project, _write(ws.folder, "items.csv", csv_of(mcq_rows())), "--format", "mcq"]


def _metrics_base(ws):
    return ["metrics", _write(ws.folder, "r.csv", csv_of(response_rows())), "--bootstrap", "0"]


def _report_base(ws):
    return ["report", _write(ws.folder, "r.csv", csv_of(response_rows())), "--out", ws.folder / "report"]


def _parse_base(ws):
    return ["parse", _write(ws.folder, "a.jsonl", jsonl_of([{"raw_response": "A"}])), "--out", ws.folder / "o.jsonl"]


def _evaluate_base(ws):
    return [
        "evaluate",
        ws.project,
        "--model",
        "simulated:steady",
        "--mode",
        "text",
        "--prompt",
        "standard",
        "--dry-run",
    ]


def _power_base(ws):
    return ["power", "--effect", "-3", "--simulations", "10", "--max-questions", "40"]


LANGUAGE_BAD = ("zz", "zz-Nonsense", "english", "")

FLAGS = [
    # project commands
    Flag("import", "--format", ("bogus", "MCQ"), _import_base),
    Flag("import", "--language", LANGUAGE_BAD + ("en us",), _import_base),
    Flag("import", "--max-text-chars", ("0", "-1", "20001", *WHOLE_BAD), _import_base),
    Flag("import", "--source", ("", " "), _import_base),
    Flag("items", "--limit", ("-1", *WHOLE_BAD), _project("items")),
    Flag("items", "--language", LANGUAGE_BAD, _project("items")),
    Flag("export", "--what", ("everything",), lambda ws: ["export", ws.project, "--out", ws.folder / "x.csv"]),
    # audio commands
    Flag("synthesize", "--tts", ("bogus",), _project("synthesize", "--dry-run")),
    Flag("synthesize", "--languages", ("zz", "en,zz"), _project("synthesize", "--tts", "espeak", "--dry-run")),
    Flag(
        "synthesize",
        "--parts",
        ("bogus", "questions,answers", ""),
        _project("synthesize", "--tts", "espeak", "--dry-run"),
    ),
    Flag("synthesize", "--token-language", ("klingon",), _project("synthesize", "--tts", "espeak", "--dry-run")),
    Flag(
        "synthesize",
        "--base-url",
        ("ftp://host/x", "not a url"),
        _project("synthesize", "--tts", "openai", "--dry-run"),
    ),
    Flag("assemble", "--speed", ("0", "-1", "100", "4.5", "0.1", "1,0", *REAL_BAD), _project("assemble", "--dry-run")),
    Flag("assemble", "--volume", ("-2", "0", "1e9", "4.01", *REAL_BAD), _project("assemble", "--dry-run")),
    Flag("assemble", "--snr", ("-500", "61", "-11", "loud", "clean,1e9", *REAL_BAD), _project("assemble", "--dry-run")),
    Flag(
        "assemble", "--chunk-seconds", ("0", "-1", "0.5", "1e9", "nan", "inf", "abc"), _project("assemble", "--dry-run")
    ),
    Flag(
        "assemble",
        "--rate",
        ("0", "-16000", "10000000", "7999", "48001", "16000.5", *WHOLE_BAD),
        _project("assemble", "--dry-run"),
    ),
    Flag("assemble", "--pause", ("-1", "10.5", "1e9", *REAL_BAD), _project("assemble", "--dry-run")),
    Flag("assemble", "--format", ("mp3",), _project("assemble", "--dry-run")),
    Flag("assemble", "--tts", ("bogus",), _project("assemble", "--dry-run")),
    Flag("assemble", "--token-language", ("klingon",), _project("assemble", "--dry-run")),
    Flag("assemble", "--languages", ("zz", "en,xx"), _project("assemble", "--dry-run")),
    # quality control
    Flag("rewrite", "--limit", ("0", "-1", *WHOLE_BAD), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--attempts", ("0", "11", "-1"), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--concurrency", ("0", "-1", "257", "abc"), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--rpm", ("0", "-5", *REAL_BAD), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--retries", ("0", "21", "-1"), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--timeout", ("0", "-1", "3601", *REAL_BAD), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--key-provider", ("bogus",), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--base-url", ("not a url", "file:///etc/passwd"), _project("rewrite", "--dry-run")),
    Flag("rewrite", "--languages", ("zz",), _project("rewrite", "--dry-run")),
    Flag("flag", "--language", ("zz",), _project("flag", "--list")),
    Flag("review", "--item", ("0", "-1", "abc"), _project("review", "--accept", "--reviewer", "ana")),
    Flag("review", "--reviewer", ("", "x" * 201), _project("review", "--item", "1", "--accept")),
    Flag(
        "review",
        "--edit",
        ("", "e" * 20_001, "bell\x07"),
        _project("review", "--item", "1", "--part", "question", "--reviewer", "ana"),
    ),
    Flag("transcribe", "--concurrency", ("0", "257"), _project("transcribe", "--asr", "openai:whisper-1", "--dry-run")),
    Flag("transcribe", "--retries", ("0", "21"), _project("transcribe", "--asr", "openai:whisper-1", "--dry-run")),
    Flag("transcribe", "--languages", ("zz",), _project("transcribe", "--asr", "openai:whisper-1", "--dry-run")),
    Flag(
        "import-transcripts",
        "--asr",
        ("", " "),
        lambda ws: [
            "import-transcripts",
            ws.project,
            _write(ws.folder, "t.csv", csv_of([{"clip_id": 1, "text": "hi"}])),
        ],
    ),
    Flag("screen", "--min-asr", ("0", "11", "abc"), _project("screen")),
    Flag("screen", "--worst", ("-1", "100001", "abc"), _project("screen")),
    Flag("screen", "--metric", ("zz=wer", "en=bogus", "wer"), _project("screen")),
    Flag("sample", "--per-bin", ("0", "-1", "100001", "abc"), _project("sample", "--name", "q")),
    Flag("sample", "--seed", ("-1", str(2**64), "abc", "1.5"), _project("sample", "--name", "q")),
    Flag("sample", "--name", ("", "  "), _project("sample")),
    Flag("qc-report", "--queue", ("",), _project("qc-report")),
    # metrics
    Flag("metrics", "--bootstrap", ("-1", "100001", "1.5", "abc"), _metrics_base),
    Flag("metrics", "--seed", ("-1", str(2**64), "abc"), _metrics_base),
    Flag("metrics", "--kind", ("bogus",), _metrics_base),
    Flag("report", "--bootstrap", ("-1", "1e3"), _report_base),
    Flag("report", "--seed", ("-1",), _report_base),
    Flag("report", "--kind", ("bogus",), _report_base),
    # jobs
    Flag("jobs", "--cancel", ("abc", "1.5"), _project("jobs")),
    Flag("jobs", "--limit", ("-1", "0", "x"), _project("jobs")),
    # evaluation (ranged in core/cli/evaluation_commands.py by the evaluation change)
    Flag("evaluate", "--concurrency", ("0", "-1"), _evaluate_base),
    Flag("evaluate", "--rpm", ("0", "-1"), _evaluate_base),
    Flag("evaluate", "--tpm", ("0", "-1"), _evaluate_base),
    Flag("evaluate", "--retries", ("0", "21"), _evaluate_base),
    Flag("evaluate", "--budget", ("0", "-1", "nan"), _evaluate_base),
    Flag("evaluate", "--price-input", ("-1",), _evaluate_base),
    Flag("evaluate", "--price-output", ("-1",), _evaluate_base),
    Flag("evaluate", "--price-audio-input", ("-1",), _evaluate_base),
    Flag("evaluate", "--limit", ("0", "-1"), _evaluate_base),
    Flag("evaluate", "--timeout", ("0", "-1", "3601"), _evaluate_base),
    Flag("evaluate", "--temperature", ("-1", "3", "nan"), _evaluate_base),
    Flag("evaluate", "--max-output-tokens", ("0", "-1"), _evaluate_base),
    Flag("evaluate", "--thinking", ("maybe",), _evaluate_base),
    Flag("evaluate", "--languages", ("zz",), _evaluate_base),
    Flag("evaluate", "--seed", ("-1", "abc"), _evaluate_base),
    Flag("evaluate", "--mode", ("bogus",), _evaluate_base),
    Flag("evaluate", "--prompt", ("bogus",), _evaluate_base),
    Flag("power", "--simulations", ("0", "-1", "9"), _power_base),
    Flag("power", "--power", ("0", "1", "1.5", "nan"), _power_base),
    Flag("power", "--alpha", ("0", "1", "-0.1"), _power_base),
    Flag("power", "--conditions", ("0", "-1"), _power_base),
    Flag("power", "--options", ("1", "11"), _power_base),
    Flag("power", "--base-accuracy", ("1.5", "-0.1"), _power_base),
    Flag("power", "--consistency", ("2", "-1"), _power_base),
    Flag("power", "--max-questions", ("0", "-1"), _power_base),
    Flag(
        "power",
        "--effect",
        ("nan", "inf"),
        lambda ws: ["power", "--simulations", "10", "--max-questions", "40"],
    ),
    Flag("power", "--metric", ("bogus",), _power_base),
    Flag("parse", "--letters", ("AAAA", "A", "A1", ""), _parse_base),
]


def flag_cases() -> list[Case]:
    cases = []
    for flag in FLAGS:
        for value in flag.values:

            def build(ws, flag=flag, value=value):
                return [*flag.base(ws), flag.option, value], flag.option

            shown = value if len(value) <= 20 else f"{value[:8]}…({len(value)} chars)"
            cases.append(Case("flags", f"{flag.command} {flag.option} {shown!r}", build, xfail=flag.xfail))
    return cases


# ------------------------------------------------------------------------------------------------ project state


def _not_a_project(root: Path) -> Path:
    return _mkdir(root / "plain-folder")


def _a_file(root: Path) -> Path:
    return _write(root, "a-file", "not a project\n")


def _empty_database(root: Path) -> Path:
    folder = _mkdir(root / "empty-db")
    (folder / "project.sqlite").write_bytes(b"")
    return folder


def _foreign_sqlite(root: Path) -> Path:
    folder = _mkdir(root / "foreign")
    with sqlite3.connect(folder / "project.sqlite") as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers(name) VALUES ('ana')")
    conn.close()
    return folder


def _text_as_database(root: Path) -> Path:
    folder = _mkdir(root / "text-db")
    (folder / "project.sqlite").write_text("SQLite format 3? no, a shopping list\n")
    return folder


def _database_is_folder(root: Path) -> Path:
    folder = _mkdir(root / "folder-db")
    _mkdir(folder / "project.sqlite")
    return folder


def _newer_schema(source: Path) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        folder = Path(shutil.copytree(source, root / "newer"))
        with sqlite3.connect(folder / "project.sqlite") as conn:
            conn.execute("PRAGMA user_version = 999")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the bytes compared are then the database's own
        conn.close()
        return folder

    return make


def _damaged(source: Path) -> Callable[[Path], Path]:
    """A project whose items pages are overwritten with garbage (a disk fault or a bad copy)."""

    def make(root: Path) -> Path:
        folder = Path(shutil.copytree(source, root / "damaged"))
        db = folder / "project.sqlite"
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = [row[0] for row in conn.execute("SELECT pageno FROM dbstat WHERE name = 'items'")]
            page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.close()
        with open(db, "r+b") as handle:
            for page in pages:
                handle.seek((page - 1) * page_size + 8)
                handle.write(random_bytes(page_size - 16, seed=page))
        return folder

    return make


STATE_COMMANDS = {
    "info": lambda p, ws: ["info", p],
    "items": lambda p, ws: ["items", p],
    "export": lambda p, ws: ["export", p, "--what", "items", "--out", ws.folder / "items.csv"],
    "import": lambda p, ws: ["import", p, _write(ws.folder, "i.csv", csv_of(mcq_rows())), "--format", "mcq"],
    "assemble": lambda p, ws: ["assemble", p, "--dry-run"],
    "synthesize": lambda p, ws: ["synthesize", p, "--tts", "espeak", "--dry-run"],
    "sample": lambda p, ws: ["sample", p, "--name", "q"],
    "runs": lambda p, ws: ["runs", p],
    "jobs": lambda p, ws: ["jobs", p],
    "init": lambda p, ws: ["init", p],
}


USING = tuple(c for c in STATE_COMMANDS if c != "init")  # init makes a project where there is none: not an error


def state_cases(source: Callable[[], Path]) -> list[Case]:
    states = {
        "no such folder": (lambda root: root / "absent", USING),
        "folder without a project": (_not_a_project, USING),
        "a file instead of a folder": (_a_file, tuple(STATE_COMMANDS)),
        "empty database file": (_empty_database, tuple(STATE_COMMANDS)),
        "foreign SQLite database": (_foreign_sqlite, tuple(STATE_COMMANDS)),
        "text file as database": (_text_as_database, ("info", "items", "import", "jobs", "init")),
        "database is a folder": (_database_is_folder, ("info", "import")),
        "newer schema": (lambda root: _newer_schema(source())(root), ("info", "items", "import")),
        "damaged database": (lambda root: _damaged(source())(root), ("info", "items", "export", "assemble")),
    }
    cases = []
    for state_name, (make, commands) in states.items():
        for command in commands:

            def build(ws, command=command):
                return STATE_COMMANDS[command](ws.project, ws), str(ws.project.name)

            cases.append(Case("project", f"{state_name}: {command}", build, state=make))
    return cases


# ------------------------------------------------------------------------------------------------ audio and limits


def _damage_clip(ws: Workspace, how: str) -> str:
    """Damage the spoken 'question' token every input starts with; returns its file name."""
    with sqlite3.connect(f"file:{ws.audio_project / 'project.sqlite'}?mode=ro", uri=True) as conn:
        sha, fmt = conn.execute("SELECT sha256, audio_format FROM clips WHERE part = 'token:question'").fetchone()
    conn.close()
    path = next((ws.audio_project / "audio").rglob(f"{sha}.{fmt}"))
    data = path.read_bytes()
    damaged = {
        "truncated": data[: len(data) // 3],
        "emptied": b"",
        "text instead of audio": b"this is not audio at all\n" * 40,
        "random bytes": random_bytes(len(data), seed=13),
        "header only": data[:44],
    }[how]
    path.write_bytes(damaged)
    return sha


def audio_cases() -> list[Case]:
    cases = []
    for how in ("truncated", "emptied", "text instead of audio", "random bytes", "header only"):
        # assemble and check report damaged stored audio with exit code 1 ("inputs not built" / "problems
        # found"), documented in their --help; the damaged clip is named and nothing else is built or changed.
        cases.append(
            Case(
                "audio",
                f"assemble over a {how} clip",
                lambda ws, how=how: (["assemble", ws.audio_project], _damage_clip(ws, how)[:12]),
                codes=(1,),
                uses_audio_project=True,
            )
        )
        cases.append(
            Case(
                "audio",
                f"check finds a {how} clip",
                lambda ws, how=how: (["check", ws.audio_project], _damage_clip(ws, how)[:12]),
                codes=(1,),
                uses_audio_project=True,
            )
        )
    return cases


def _lengthen(ws: Workspace, sql: str, text: str) -> None:
    with sqlite3.connect(ws.audio_project / "project.sqlite") as conn:
        conn.execute(sql, (text,))
    conn.close()


def limit_cases() -> list[Case]:
    def long_item(ws):
        # an item stored before the import limit existed (or by another program)
        _lengthen(ws, "UPDATE items SET question = ? WHERE source_id = 'base1'", "Why? " * 4_001)
        return ["synthesize", ws.audio_project, "--tts", "espeak", "--dry-run"], "base1"

    def long_clip_text(ws):
        _lengthen(ws, "UPDATE clips SET text = ? WHERE part = 'question' AND item_id = 1", "w" * 40_001)
        return ["assemble", ws.audio_project, "--dry-run"], "base1"

    return [
        Case("limits", "synthesize an over-long stored question", long_item, uses_audio_project=True),
        Case("limits", "assemble an over-long spoken text", long_clip_text, uses_audio_project=True),
    ]


# ------------------------------------------------------------------------------------------------ generated from
# the CLI's own parser: every command and every option, classified by what it takes (a project folder, a file
# read, a file or folder written, free text, a number, a choice). A command or option added later is covered by
# these classes without a new test.


@dataclass(frozen=True)
class Option:
    command: str
    dest: str
    name: str  # the option string (--out) or the positional's metavar (DIR, FILE): what messages name
    kind: str  # project | file-in | file-out | folder-out | folder-in | text | number | choice
    required: bool
    positional: bool
    nargs: object
    choices: tuple = ()


OUTPUT_DESTS = {"out", "clips_out", "batch_file", "report"}  # options that name something the command writes
FOLDER_METAVARS = {"DIR", "FOLDER", "OUT"}
FILE_IN_METAVARS = {"FILE", "RESULTS", "PACK", "FILE.json", "FILE|PROJECT"}
# Values a required option needs for the command to get as far as its files; anything else gets a neutral value.
REQUIRED_VALUES = {
    ("import", "--format"): "mcq",
    ("export", "--what"): "items",
    ("synthesize", "--tts"): "espeak",
    ("evaluate", "--model"): "simulated:steady",
    ("evaluate", "--mode"): "text",
    ("evaluate", "--prompt"): "standard",
    ("power", "--effect"): "-3",
    ("review", "--item"): "1",
    ("import-transcripts", "--asr"): "w",
}


def cli_options() -> list[Option]:
    """Every option and positional of every command, read from core/cli/main.py's parser."""
    import argparse

    from spokenbench.core.cli.main import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    options = []
    for command, sub in subparsers.choices.items():
        for action in sub._actions:
            if action.nargs == 0 or isinstance(action, argparse._HelpAction):
                continue  # flags take no value
            name = action.option_strings[-1] if action.option_strings else (action.metavar or action.dest)
            type_name = getattr(action.type, "__name__", "") or ""
            if action.dest == "dir":
                kind = "project"
            elif action.dest in OUTPUT_DESTS:
                kind = "folder-out" if action.metavar in FOLDER_METAVARS else "file-out"
            elif action.metavar in FILE_IN_METAVARS:
                kind = "file-in"
            elif action.metavar == "FOLDER":
                kind = "folder-in"
            elif action.choices:
                kind = "choice"
            elif "number" in type_name or type_name in ("seed",):
                kind = "number"
            else:
                kind = "text"
            options.append(
                Option(
                    command,
                    action.dest,
                    name,
                    kind,
                    bool(action.required) or not action.option_strings or action.dest == "dir",
                    not action.option_strings,
                    action.nargs,
                    tuple(action.choices or ()),
                )
            )
    return options


def _required_choices(command: str) -> list[tuple[str, set[str]]]:
    """Per required either-or group, its first flag (an option without a value: review's --accept of --accept |
    --reject | --edit, rate's --undo of --clip | --from | --undo) and the names of all its options."""
    import argparse

    from spokenbench.core.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    choices = []
    for group in sub._mutually_exclusive_groups:
        if group.required:
            flag = next(a for a in group._group_actions if a.nargs == 0)
            choices.append((flag.option_strings[-1], {a.option_strings[-1] for a in group._group_actions}))
    return choices


def _good_input(ws: Workspace, option: Option) -> Path:
    """A valid file for a command's input, so that the command gets as far as the option under test."""
    command = option.command
    if command in ("metrics", "report"):
        return _write(ws.folder, "responses.csv", csv_of(response_rows()))
    if command == "parse":
        return _write(ws.folder, "answers.jsonl", jsonl_of(answer_rows()))
    if command == "import-transcripts":
        return _write(ws.folder, "transcripts.csv", csv_of([{"clip_id": 1, "text": "hi"}]))
    if option.name == "--listener-profile":
        return _write(ws.folder, "profile.json", json.dumps({"base_accuracy": 0.7}))
    return _write(ws.folder, "items.csv", csv_of(mcq_rows()))


def _value_for(ws: Workspace, option: Option) -> str | Path:
    if (option.command, option.name) in REQUIRED_VALUES:
        return REQUIRED_VALUES[(option.command, option.name)]
    if option.kind == "project":
        return ws.folder / "new-project" if option.command in ("init", "demo") else ws.project
    if option.kind == "file-in":
        return _good_input(ws, option)
    if option.kind == "file-out":
        return ws.folder / ("out.zip" if option.command == "pack" else "out.jsonl")
    if option.kind == "folder-out":
        return ws.folder / "out-folder"
    if option.kind == "choice":
        return str(option.choices[0])
    if option.kind == "number":
        return "1"
    return "x"


def command_line(ws: Workspace, command: str, replace: Option | None = None, value=None) -> list:
    """A command line for `command` with its required arguments (and --dry-run where it has one, so a case never
    does real work), `replace` given `value` instead."""
    options = [o for o in cli_options() if o.command == command]
    args: list = [command]
    for option in options:
        if option is replace or (replace is not None and option.dest == replace.dest):
            given = value
        elif option.required:
            given = _value_for(ws, option)
        else:
            continue
        args += [given] if option.positional else [option.name, given]
    for flag, members in _required_choices(command):
        if replace is None or replace.name not in members:
            args.append(flag)  # a flag (review --accept); none when the option under test is of the group
    if command in DRY_RUN_COMMANDS:
        args.append("--dry-run")
    return args


DRY_RUN_COMMANDS = ("synthesize", "assemble", "evaluate", "rewrite", "transcribe")


@contextlib.contextmanager
def deadline(seconds: float):
    """Fail (instead of hanging the test run) if the block still runs after `seconds`: a read that waits on a
    FIFO or never ends on /dev/zero."""

    def expire(*_):
        raise TimeoutError(f"still running after {seconds} s: a file was waited on or read without bound")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def voiced_project(root: Path, queue: str | None = None) -> Path:
    """A project of BASE_ITEMS with espeak clips in one voice (and a rating queue, if named), built in-process."""
    from spokenbench.core.cli.main import main

    project = root / "project"
    assert main(["init", str(project)]) == 0
    assert main(["import", str(project), str(csv_of(BASE_ITEMS)(root / "items.csv")), "--format", "mcq"]) == 0
    synthesize = ["synthesize", str(project), "--tts", "espeak", "--voices", "espeak-female", "--accents", "american"]
    assert main(synthesize) == 0
    if queue is not None:
        assert main(["sample", str(project), "--name", queue]) == 0
    return project


def _not_regular(ws: Workspace, how: str, name: str) -> Path:
    path = ws.folder / name
    if how == "FIFO":
        os.mkfifo(path)
    elif how == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif how == "folder":
        path.mkdir()
    return path


def generated_cases() -> list[Case]:
    """Per option class: non-UTF-8 values, files that are not regular files, misused output paths, numbers of
    5,000 digits. Every case: exit 2, a message naming the option or file, nothing changed."""
    cases = []
    options = cli_options()
    with_input = {o.command for o in options if o.kind == "file-in" and o.required}
    for option in options:
        label = f"{option.command} {option.name}"

        def utf8(ws, option=option):
            base = {"project": f"{ws.project}\udcff", "file-in": f"{ws.folder}/t\udcff.csv"}.get(option.kind, "t\udcff")
            if option.kind in ("file-out", "folder-out"):
                base = f"{ws.folder}/o\udcff.jsonl"
            return command_line(ws, option.command, option, base), option.name

        cases.append(Case("non-UTF-8 arguments", f"{label} not UTF-8", utf8))
        if option.kind == "file-in":
            for how in ("FIFO", "link to /dev/zero", "folder"):

                def special(ws, option=option, how=how):
                    path = _not_regular(ws, how, "special.csv" if option.command != "evaluate" else "special.json")
                    return command_line(ws, option.command, option, path), path.name

                cases.append(Case("non-regular files", f"{label} a {how}", special))
        if option.kind == "file-out":
            name = "out.zip" if option.command == "pack" else "out.jsonl"
            misuses = {
                "in a missing folder": lambda ws, name=name: (ws.folder / "missing" / name, "missing"),
                "a folder": lambda ws, name=name: (_mkdir(ws.folder / name), name),
                "under a file": lambda ws, name=name: (_write(ws.folder, "plain.txt", "x") / name, "plain.txt"),
            }
            if option.command in with_input:
                misuses["its own input"] = lambda ws: (None, "is also the input")
            for misuse, make in misuses.items():

                def output(ws, option=option, make=make):
                    path, named = make(ws)
                    if path is None:  # the command's input, given again as its output
                        args = command_line(ws, option.command)
                        source = next(a for a in args if isinstance(a, Path) and a.parent == ws.folder)
                        return command_line(ws, option.command, option, source), named
                    return command_line(ws, option.command, option, path), named

                cases.append(Case("output paths", f"{label} {misuse}", output, xfail=_OUTPUT_XFAIL.get(option.command)))
        if option.kind == "folder-out":
            for misuse in ("a file", "under a file"):

                def folder_output(ws, option=option, misuse=misuse):
                    plain = _write(ws.folder, "plain.txt", "x")
                    return command_line(
                        ws, option.command, option, plain if misuse == "a file" else plain / "o"
                    ), "plain.txt"

                cases.append(Case("output paths", f"{label} {misuse}", folder_output))
        if option.kind == "number":

            def huge(ws, option=option):
                return command_line(ws, option.command, option, "9" * 5000), option.name

            cases.append(Case("huge numbers", f"{label} 5,000 digits", huge))
    for command, name, rows in (
        ("import", "items.jsonl", [{**list_rows(1)[0], "n": "HUGE"}]),
        ("metrics", "responses.jsonl", [{**r, "n": "HUGE"} for r in response_rows()]),
        ("parse", "answers.jsonl", [{**r, "n": "HUGE"} for r in answer_rows()]),
        ("import-transcripts", "transcripts.jsonl", [{"clip_id": "HUGE", "text": "hi"}]),
    ):

        def huge_in_file(ws, command=command, name=name, rows=rows):
            text = "\n".join(json.dumps(r).replace('"HUGE"', "9" * 5000) for r in rows) + "\n"
            path = _write(ws.folder, name, text)
            file_option = next(o for o in options if o.command == command and o.kind == "file-in")
            return command_line(ws, command, file_option, path), name

        cases.append(Case("huge numbers", f"{command} a 5,000-digit number in {name}", huge_in_file))
    return cases


_OUTPUT_XFAIL: dict[str, str] = {}


# Project states a command meets at open: each is refused naming the folder, and the folder stays as it was.
def _edited_database(source: Callable[[], Path], sql: str) -> Callable[[Path], Path]:
    """A copy of the project whose database another program changed with the statements `sql`."""

    def make(root: Path) -> Path:
        folder = Path(shutil.copytree(source(), root / "edited"))
        conn = sqlite3.connect(folder / "project.sqlite", isolation_level=None)
        conn.executescript(sql)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        return folder

    return make


def _database_special(how: str) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        folder = _mkdir(root / "special-db")
        _mkdir(folder / "audio")
        target = folder / "project.sqlite"
        os.mkfifo(target) if how == "FIFO" else target.symlink_to("/dev/zero")
        return folder

    return make


def _neighbour_special(source: Callable[[], Path], suffix: str, how: str) -> Callable[[Path], Path]:
    def make(root: Path) -> Path:
        folder = Path(shutil.copytree(source(), root / "neighbour"))
        for leftover in ("project.sqlite-wal", "project.sqlite-shm"):
            (folder / leftover).unlink(missing_ok=True)
        neighbour = folder / f"project.sqlite{suffix}"
        os.mkfifo(neighbour) if how == "FIFO" else neighbour.symlink_to("/dev/zero")
        return folder

    return make


def generated_state_cases(source: Callable[[], Path]) -> list[Case]:
    """Every command that takes a project folder, on each broken project state."""
    states = {
        "damaged database": lambda root: _damaged(source())(root),
        "schema number lowered": _edited_database(source, "PRAGMA user_version = 3"),
        "a table dropped": _edited_database(source, "DROP TABLE ratings"),
        "a trigger of another program": _edited_database(
            source, "CREATE TRIGGER zz AFTER INSERT ON ratings BEGIN UPDATE ratings SET rating = 'incorrect'; END"
        ),
        "a CHECK taken out": _edited_database(
            source,
            "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = replace(sql, "
            "'CHECK (length(trim(annotator)) > 0)', '') WHERE name = 'ratings'",
        ),
        "database is a FIFO": _database_special("FIFO"),
        "database links to /dev/zero": _database_special("link"),
        "journal is a FIFO": _neighbour_special(source, "-journal", "FIFO"),
        "WAL links to /dev/zero": _neighbour_special(source, "-wal", "link"),
    }
    commands = sorted({o.command for o in cli_options() if o.kind == "project" and o.command not in ("init", "demo")})
    cases = []
    for state_name, make in states.items():
        for command in commands:

            def build(ws, command=command):
                return command_line(ws, command), str(ws.project.name)

            cases.append(Case("corrupted databases", f"{state_name}: {command}", build, state=make))
    return cases
