"""What a project holds, in numbers: the `info` command and the app's project overview."""

from __future__ import annotations

import json
import sqlite3

COUNTED_TABLES = ("items", "rewrites", "clips", "transcripts", "ratings", "speakers", "recordings", "runs", "responses")


def project_summary(conn: sqlite3.Connection) -> dict:
    def grouped(column: str, where: str = "1") -> dict[str, int]:
        rows = conn.execute(
            f"SELECT coalesce({column}, 'unknown'), count(*) FROM items WHERE {where} GROUP BY 1 ORDER BY 1"
        )
        return {key: count for key, count in rows}

    counts = {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in COUNTED_TABLES}
    return {
        "schema_version": conn.execute("PRAGMA user_version").fetchone()[0],
        "items": {
            "total": counts["items"],
            "by_kind": grouped("kind"),
            "by_language": grouped("language"),
            "by_cultural_label": grouped("cultural_label", "kind = 'mcq'"),
            "by_category": grouped("category", "kind = 'gender-probe'"),
            "by_source": grouped("source"),
        },
        "rewrites": {
            "total": counts["rewrites"],
            "by_status": {s: n for s, n in conn.execute("SELECT status, count(*) FROM rewrites GROUP BY 1 ORDER BY 1")},
        },
        "clips": {
            "total": counts["clips"],
            "failed": conn.execute("SELECT count(*) FROM clips WHERE status = 'failed'").fetchone()[0],
        },
        "transcripts": counts["transcripts"],
        "ratings": counts["ratings"],
        "speakers": counts["speakers"],
        "recordings": counts["recordings"],
        "runs": counts["runs"],
        "responses": counts["responses"],
    }


ITEM_ROW_FIELDS = ("item_id", "id", "language", "kind", "label", "answer", "question", "options")


def item_rows(conn: sqlite3.Connection) -> list[tuple]:
    """Flat rows for item lists (app table, CLI listing) in one query; options as a tuple of 'A. text'."""
    query = """
        SELECT i.id, i.source_id, i.language, i.kind, coalesce(i.cultural_label, i.category, ''),
               coalesce(i.answer, ''), i.question,
               (SELECT json_group_array(o.letter || '. ' || o.text) FROM
                   (SELECT letter, text FROM options WHERE item_id = i.id ORDER BY position) o)
        FROM items i ORDER BY i.id"""
    return [(*row[:7], tuple(json.loads(row[7]))) for row in conn.execute(query)]
