"""Reads for the gender-probe listening view (core/results/gender_views.py): the project's gender probes and every stored
question clip of one probe with its voice gender and neutralization (migration 10)."""

from __future__ import annotations

import sqlite3

from spokenbench.core.store.database import NOT_A_CONTROL


def gender_probe_items(conn: sqlite3.Connection) -> list[dict]:
    """The gender probes: item id, question id (source_id), language, category and question text, in id order."""
    rows = conn.execute(
        "SELECT id, source_id, language, category, question FROM visible_items WHERE kind = 'gender-probe' ORDER BY id"
    ).fetchall()
    return [
        {"item_id": r[0], "question_id": r[1], "language": r[2], "category": r[3] or "", "question": r[4]} for r in rows
    ]


def question_clip_rows(conn: sqlite3.Connection, item_id: int) -> list[dict]:
    """Every usable question clip of an item (status ok, audio stored), in id order."""
    rows = conn.execute(
        "SELECT id, voice, accent, speaker_gender, neutralization, backend, sha256, audio_format, duration_s "
        "FROM clips WHERE item_id = ? AND part = 'question' AND status = 'ok' AND sha256 IS NOT NULL "
        f"AND id {NOT_A_CONTROL} ORDER BY id",
        (item_id,),
    ).fetchall()
    keys = ("clip_id", "voice", "accent", "speaker_gender", "neutralization", "backend", "sha256", "audio_format")
    return [{**dict(zip(keys, r[:8])), "duration_s": r[8] or 0.0} for r in rows]
