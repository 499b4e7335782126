"""What changed in a project, as seen from any process. Triggers (migration 5) bump a counter per table on
every insert, update and delete, whoever writes (clip_screening, written whole by one module, counts per statement
instead: migration 13; so do items inserted by an import: migration 14); a screen keeps the counters it last saw
and refreshes only the tables whose counter moved. Reading the counters is one query on a tiny table, cheap to
poll every second."""

from __future__ import annotations

import sqlite3


def table_versions(conn: sqlite3.Connection) -> dict[str, int]:
    """Each watched table's change counter."""
    return {name: version for name, version in conn.execute("SELECT name, version FROM change_counters")}


def changed_tables(before: dict[str, int], after: dict[str, int]) -> set[str]:
    """Tables whose counter differs between two readings (a table new in `after` counts as changed)."""
    return {name for name, version in after.items() if before.get(name) != version}


def count_change(conn: sqlite3.Connection, table: str) -> None:
    """Bump `table`'s counter once, for a statement that wrote many rows of a table whose writers count their
    own statements instead of a trigger per row (clip_screening, migration 13; an import's items, migration 14).
    In the writer's transaction."""
    conn.execute("UPDATE change_counters SET version = version + 1 WHERE name = ?", (table,))
