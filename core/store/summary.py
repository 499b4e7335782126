"""What a project holds, in numbers: the `info` command and the app's project overview."""

from __future__ import annotations

import json
import sqlite3

from spokenbench.core.store.database import ROLLBACK_JOURNAL_NOTE as ROLLBACK_JOURNAL_NOTE  # for `info`, the app
from spokenbench.core.store.database import journal_kind

# what each count reads: items being imported are hidden until their import is published (migration 14)
COUNTED_TABLES = {"items": "visible_items"} | {
    table: table
    for table in ("rewrites", "clips", "transcripts", "ratings", "speakers", "recordings", "runs", "responses")
}


def project_summary(conn: sqlite3.Connection) -> dict:
    def grouped(column: str, where: str = "1") -> dict[str, int]:
        rows = conn.execute(
            f"SELECT coalesce({column}, 'unknown'), count(*) FROM visible_items WHERE {where} GROUP BY 1 ORDER BY 1"
        )
        return {key: count for key, count in rows}

    counts = {
        name: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for name, table in COUNTED_TABLES.items()
    }
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
        "journal": journal_kind(conn),
    }


ITEM_ROW_FIELDS = ("item_id", "id", "language", "kind", "label", "answer", "question", "options")


def item_rows(conn: sqlite3.Connection) -> list[tuple]:
    """Flat rows for item lists (app table, CLI listing) in one query; options as a tuple of 'A. text'."""
    query = """
        SELECT i.id, i.source_id, i.language, i.kind, coalesce(i.cultural_label, i.category, ''),
               coalesce(i.answer, ''), i.question,
               (SELECT json_group_array(o.letter || '. ' || o.text) FROM
                   (SELECT letter, text FROM options WHERE item_id = i.id ORDER BY position) o)
        FROM visible_items i ORDER BY i.id"""
    return [(*row[:7], tuple(json.loads(row[7]))) for row in conn.execute(query)]


BROWSER_ROW_FIELDS = (*ITEM_ROW_FIELDS, "subject", "cultural_label", "category", "status")


def item_browser_rows(conn: sqlite3.Connection) -> list[tuple]:
    """item_rows plus what the app's item browser filters on: subject, cultural label, category, and the rewrite
    status of the item (its parts' newest versions: 'flagged' if any awaits review, else 'pending' if any is
    unchecked, else 'reviewed'; 'no rewrite' when it has none)."""
    statuses: dict[int, set[str]] = {}
    for item_id, status in conn.execute(
        """SELECT r.item_id, r.status FROM rewrites r
           JOIN (SELECT item_id, part, max(version) AS v FROM rewrites GROUP BY item_id, part) m
             ON m.item_id = r.item_id AND m.part = r.part AND m.v = r.version"""
    ):
        statuses.setdefault(item_id, set()).add(status)
    extra = {
        row[0]: row[1:]
        for row in conn.execute(
            "SELECT id, coalesce(subject, ''), coalesce(cultural_label, ''), coalesce(category, '') FROM visible_items"
        )
    }

    def status_of(item_id: int) -> str:
        found = statuses.get(item_id)
        if not found:
            return "no rewrite"
        return "flagged" if "flagged" in found else "pending" if "pending" in found else "reviewed"

    return [(*row, *extra[row[0]], status_of(row[0])) for row in item_rows(conn)]


def item_detail(conn: sqlite3.Connection, item_id: int) -> dict:
    """Everything the app shows about one item: its rewrites (every version), clips with their transcripts and
    screening error rate, ratings (undone ones marked) and model responses."""
    rewrites = [
        dict(row)
        for row in conn.execute(
            "SELECT id, part, version, text, origin, status, reviewer, reviewed_at FROM rewrites WHERE item_id = ? "
            "ORDER BY part, version",
            (item_id,),
        )
    ]
    clips = [
        dict(row)
        for row in conn.execute(
            """SELECT c.id, c.part, c.language, c.accent, c.voice, c.speaker_gender, c.backend, c.sha256,
                      c.audio_format, c.duration_s, c.status, s.error_rate, s.metric
               FROM clips c LEFT JOIN clip_screening s ON s.clip_id = c.id WHERE c.item_id = ? ORDER BY c.part, c.id""",
            (item_id,),
        )
    ]
    transcripts: dict[int, list[dict]] = {}
    for row in conn.execute(
        "SELECT t.clip_id, t.asr, t.text FROM transcripts t JOIN clips c ON c.id = t.clip_id WHERE c.item_id = ? "
        "ORDER BY t.clip_id, t.asr",
        (item_id,),
    ):
        transcripts.setdefault(row[0], []).append({"asr": row[1], "text": row[2]})
    for clip in clips:
        clip["transcripts"] = transcripts.get(clip["id"], [])
    ratings = [
        dict(row)
        for row in conn.execute(
            """SELECT r.clip_id, c.part, r.annotator, r.rating, r.note, r.created_at, r.undone_at
               FROM ratings r JOIN clips c ON c.id = r.clip_id WHERE c.item_id = ? ORDER BY r.id""",
            (item_id,),
        )
    ]
    responses = [
        dict(row)
        for row in conn.execute(
            """SELECT s.run_id, u.name AS run, u.model, s.condition_key, s.option_order, s.parsed_letter,
                      s.mapped_option, s.parse_status
               FROM responses s JOIN runs u ON u.id = s.run_id WHERE s.item_id = ? ORDER BY s.run_id, s.id""",
            (item_id,),
        )
    ]
    return {"item_id": item_id, "rewrites": rewrites, "clips": clips, "ratings": ratings, "responses": responses}


def clip_item_id(conn: sqlite3.Connection, clip_id: int) -> int | None:
    """The item a clip speaks (None when the clip no longer exists): how a click on a clip finds its item."""
    row = conn.execute("SELECT item_id FROM clips WHERE id = ?", (clip_id,)).fetchone()
    return None if row is None else row[0]
