"""Project-wide settings kept as key/value text in `project_meta`: a capability stores its own prompt template or
the state its stored results were computed from under a key of its own, without a table of its own."""

from __future__ import annotations

import sqlite3


def read_meta(conn: sqlite3.Connection, key: str) -> str | None:
    """The value stored under `key`, or None when the project never stored one."""
    row = conn.execute("SELECT value FROM project_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def write_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Store `value` under `key`, replacing an earlier value; the caller owns the transaction."""
    conn.execute(
        "INSERT INTO project_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def delete_meta(conn: sqlite3.Connection, key: str) -> None:
    """Forget `key` (a no-op when absent), e.g. when what it described no longer holds."""
    conn.execute("DELETE FROM project_meta WHERE key = ?", (key,))
