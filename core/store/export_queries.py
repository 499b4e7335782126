"""The queries behind the table exports (core/importers/exports.py): responses and ratings flattened with what they refer
to, and the option orientations of gender probes. pandas reads the result sets, so an export's column types are
pandas' own inference from the stored values."""

from __future__ import annotations

import sqlite3

import pandas as pd

from spokenbench.core.store.database import NOT_A_CONTROL


def responses_table(conn: sqlite3.Connection) -> pd.DataFrame:
    """One row per stored answer, with its run and item, in the metrics engine's column names (the condition is
    still one JSON column, condition_key)."""
    query = """
        SELECT r.id AS response_id, r.run_id, u.name AS run_name, u.model, u.mode, u.prompt,
               i.source_id AS question_id, i.id AS item_id, i.language, i.subject,
               i.cultural_label, i.category, i.answer, r.parsed_letter AS prediction, r.option_order,
               r.mapped_option, r.parse_status, r.parse_detail, r.condition_key, r.raw_text, r.transcript,
               r.latency_ms, r.input_tokens, r.output_tokens, r.cost_usd, r.cached, r.attempts, r.error, r.created_at
        FROM responses r JOIN runs u ON u.id = r.run_id JOIN items i ON i.id = r.item_id
        ORDER BY r.id"""
    return pd.read_sql_query(query, conn)


def ratings_table(conn: sqlite3.Connection) -> pd.DataFrame:
    """One row per live rating (an undone one is left out), with the rated clip's language, part, voice and TTS model and its item's id."""
    query = f"""
        SELECT g.id AS rating_id, g.clip_id, i.source_id AS question_id, c.language, c.part, c.accent, c.voice,
               c.speaker_gender, c.backend, c.model AS tts_model, g.annotator, g.rating, g.note, g.created_at
        FROM ratings g JOIN clips c ON c.id = g.clip_id LEFT JOIN items i ON i.id = c.item_id
        WHERE g.undone_at IS NULL AND g.clip_id {NOT_A_CONTROL}
        ORDER BY g.id"""
    return pd.read_sql_query(query, conn)


def gender_probe_orientations(conn: sqlite3.Connection) -> list[tuple[int, str, str | None]]:
    """(item id, letter, orientation) of every gender-probe option, in option order: the gender-probe metrics
    need each presented option's orientation."""
    rows = conn.execute(
        "SELECT o.item_id, o.letter, o.orientation FROM options o JOIN visible_items i ON i.id = o.item_id "
        "WHERE i.kind = 'gender-probe' ORDER BY o.item_id, o.position"
    )
    return [tuple(row) for row in rows]


def run_prompt_texts(conn: sqlite3.Connection) -> dict[int, tuple[str, str | None]]:
    """run id -> (prompt name, the prompt texts the run stored): the gender-probe export needs to know which runs
    offered a neutral option and which asked for free-form answers."""
    return {row[0]: (row[1], row[2]) for row in conn.execute("SELECT id, prompt, prompt_text FROM runs")}


def response_details(conn: sqlite3.Connection, response_ids) -> pd.DataFrame:
    """response_id, parse_detail, raw_text of the given responses (read in batches under SQLite's variable limit)."""
    ids = sorted({int(i) for i in response_ids})
    found = []
    for start in range(0, len(ids), 500):
        batch = ids[start : start + 500]
        found += conn.execute(
            f"SELECT id, parse_detail, raw_text FROM responses WHERE id IN ({','.join('?' * len(batch))})", batch
        ).fetchall()
    return pd.DataFrame(
        [tuple(row) for row in found], columns=["response_id", "parse_detail", "raw_text"], dtype=object
    )
