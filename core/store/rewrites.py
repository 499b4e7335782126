"""Versioned spoken-readable text per item part. Adding a rewrite never overwrites an older version."""

from __future__ import annotations

import sqlite3

from spokenbench.core.store.database import utc_now

REWRITE_STATUSES = ("pending", "flagged", "accepted", "edited", "rejected")


def add_rewrite(
    conn: sqlite3.Connection,
    item_id: int,
    part: str,
    text: str,
    origin: str,
    status: str = "pending",
    reviewer: str | None = None,
) -> int:
    """Store the next version of a part's rewrite; the caller owns the transaction."""
    version = conn.execute(
        "SELECT coalesce(max(version), 0) + 1 FROM rewrites WHERE item_id = ? AND part = ?", (item_id, part)
    ).fetchone()[0]
    now = utc_now()
    cursor = conn.execute(
        "INSERT INTO rewrites(item_id, part, version, text, origin, status, reviewer, reviewed_at, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (item_id, part, version, text, origin, status, reviewer, now if reviewer else None, now),
    )
    return cursor.lastrowid


def latest_rewrites(conn: sqlite3.Connection, item_id: int) -> dict[str, sqlite3.Row]:
    """The newest version of each part's rewrite."""
    rows = conn.execute(
        "SELECT r.* FROM rewrites r JOIN (SELECT part, max(version) AS v FROM rewrites WHERE item_id = ? GROUP BY part) m "
        "ON r.part = m.part AND r.version = m.v WHERE r.item_id = ?",
        (item_id, item_id),
    )
    return {row["part"]: row for row in rows}
