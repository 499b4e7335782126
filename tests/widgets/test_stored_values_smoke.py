"""The app on a shared project whose rows another program wrote: every column of a table's first row in the demo
set to an odd value of its own type (`-1`, `2^62`, `0`, empty text, text with a bidirectional override), then
`spokenbench-studio PROJECT --smoke` renders every screen once. Each screen renders, or the project is refused at
opening naming the row (core/store/stored_values.py); no screen fails. Before, 6 of 51 such cases failed: the
jobs panel's refresh raised on a job's time that is not a time, and the Results panels on a gold letter outside
A-Z or an empty model or question id. Slow: 17 smoke runs, one kind of odd value per table in turn (~2 min)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest
from demo_copies import linked_copy

from spokenbench.core.store.stored_values import VALUE_FORMS

ODD_VALUES = [
    {"INT": -1, "TEXT": "x\u202ey", "REAL": -1.5},
    {"INT": 2**62, "TEXT": "", "REAL": 1e308},
    {"INT": 0, "TEXT": "0", "REAL": 0.0},
]
TABLES = [
    "change_counters", "clip_screening", "clips", "imports", "items", "jobs", "options", "project_meta",
    "rating_queue_clips", "rating_queues", "ratings", "responses", "rewrite_checks", "rewrite_reviews", "rewrites",
    "runs", "transcripts",
]  # fmt: skip  # the demo's tables with rows: tests/core/test_stored_values_fuzz.py checks the list


def _storage(declared: str) -> str | None:
    declared = declared.upper()
    if "INT" in declared:
        return "INT"
    if "TEXT" in declared or "CHAR" in declared:
        return "TEXT"
    return "REAL" if "REAL" in declared else None


@pytest.mark.slow
@pytest.mark.parametrize("table", TABLES)
def test_every_screen_renders_or_the_project_is_refused_naming_the_row(built_demo, tmp_path, table):
    odd = ODD_VALUES[TABLES.index(table) % len(ODD_VALUES)]
    project = linked_copy(built_demo, tmp_path / "project")
    conn = sqlite3.connect(project / "project.sqlite", isolation_level=None)
    first = conn.execute(f"SELECT min(rowid) FROM {table}").fetchone()[0]
    for _, column, declared, _, _, key in conn.execute(f"PRAGMA table_info({table})").fetchall():
        kind = _storage(declared)
        if key or kind is None or (table, column) in VALUE_FORMS:  # a form's value is refused at opening
            continue
        try:  # a CHECK, NOT NULL or foreign key may refuse the value: the other columns change
            conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (odd[kind], first))
        except sqlite3.Error:
            pass
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    app = [sys.executable, "-c", "from spokenbench.app.main import main; raise SystemExit(main())"]
    result = subprocess.run([*app, str(project), "--smoke"], capture_output=True, text=True, timeout=300, env=env)
    said = result.stdout + result.stderr
    refused = "the project holds values SpokenBench did not write" in said
    assert result.returncode == 0 or refused, said[-2000:]
