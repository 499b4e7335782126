"""Every column of a table's first row in the demo set to a wrong value (a blob, a big integer, text with a
bidirectional override, a huge real), then 13 reading commands: none may fail as "internal error" (the trust
model in docs/reliability.md). Before the stored-value scans, 12 of the 68 (value, table) cases had a command fail
so (`items`, `export`, `runs`, `jobs`, `qc-report`). Slow: 68 demo copies, 884 commands (~45 s on 2 cores)."""

from __future__ import annotations

import sqlite3

import pytest
from demo_copies import linked_copy

WRONG_VALUES = {"blob": b"\xff\x00\xfe", "big integer": 2**62, "text": "x\u202ey", "huge real": 1e308}
READING_COMMANDS = [
    ["info"],
    ["items"],
    ["export", "--what", "items", "--out", "{out}/items.csv"],
    ["export", "--what", "responses", "--out", "{out}/responses.csv"],
    ["export", "--what", "ratings", "--out", "{out}/ratings.csv"],
    ["qc-report"],
    ["metrics"],
    ["runs"],
    ["jobs"],
    ["speakers"],
    ["gold"],
    ["batches"],
    ["report", "--out", "{out}/report", "--figures", "png"],
]
# the demo's tables with rows (a table added to the demo is covered once listed here; the test says if one is missing)
TABLES = [
    "change_counters", "clip_screening", "clips", "imports", "items", "jobs", "options", "project_meta",
    "rating_queue_clips", "rating_queues", "ratings", "responses", "rewrite_checks", "rewrite_reviews", "rewrites",
    "runs", "transcripts",
]  # fmt: skip


def test_the_list_holds_every_table_of_the_demo_with_rows(built_demo):
    conn = sqlite3.connect(f"{built_demo.resolve().as_uri()}/project.sqlite?mode=ro", uri=True)
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    with_rows = sorted(
        n for n in names if not n.startswith("sqlite_") and conn.execute(f"SELECT 1 FROM {n}").fetchone()
    )
    conn.close()
    assert with_rows == TABLES


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Glyph:UserWarning")  # a control character drawn in a figure's label
@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("kind", WRONG_VALUES)
def test_a_wrong_value_in_any_column_is_never_an_internal_error(cli, built_demo, tmp_path, kind, table):
    project = linked_copy(built_demo, tmp_path / "project")
    conn = sqlite3.connect(project / "project.sqlite", isolation_level=None)
    first = conn.execute(f"SELECT min(rowid) FROM {table}").fetchone()[0]
    changed = []
    for column in [row[1] for row in conn.execute(f"PRAGMA table_info({table})") if not row[5]]:
        try:  # a CHECK, NOT NULL or foreign key may refuse the value: the others change
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (WRONG_VALUES[kind], first))
            changed.append(column)
        except sqlite3.Error:
            pass
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    failures = []
    for command in READING_COMMANDS:
        result = cli(command[0], project, *[part.format(out=tmp_path) for part in command[1:]])
        if "internal error" in result.err or result.code not in (0, 1, 2):
            failures.append((" ".join(command[:3]), result.code, result.err[-300:]))
    assert not failures, (changed, failures)
