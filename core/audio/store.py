"""The SQL of the audio stages: synthesized clips (clips), assembled evaluation inputs (assembled_inputs,
input_chunks) and the recorded speakers cloning may use (speakers, recordings, consents). Audio bytes themselves
live in the project's content-addressed folder (core/store/audio_files.py); these tables say what they are.
Functions take an open connection; those that write leave the transaction to the caller."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from spokenbench.core.store.database import NOT_A_CONTROL, utc_now

# --------------------------------------------------------------------------------------------------
# Clips


def clip_exists(conn: sqlite3.Connection, clip_id: int) -> bool:
    """Whether the project holds a clip with this id (of any status), before something refers to it."""
    return conn.execute("SELECT 1 FROM clips WHERE id = ?", (clip_id,)).fetchone() is not None


def good_clips_for_assembly(conn: sqlite3.Connection, backend: str | None = None) -> list[tuple]:
    """Every good clip, oldest first (so a later clip of the same part and voice wins), of one TTS backend when
    `backend` is given, as (item id or 0 for an instruction token, part, language, accent, voice, sha256, audio
    format, speech level dB, text, speaker gender, backend)."""
    where = f"status = 'ok' AND id {NOT_A_CONTROL}" + (" AND backend = ?" if backend else "")
    rows = conn.execute(
        f"SELECT coalesce(item_id, 0), part, language, accent, voice, sha256, audio_format, speech_level_db, text, "
        f"speaker_gender, backend FROM clips WHERE {where} ORDER BY id",
        (backend,) if backend else (),
    )
    return [tuple(row) for row in rows]


# --------------------------------------------------------------------------------------------------
# Assembled inputs


def assembled_recipes(conn: sqlite3.Connection) -> dict[tuple[int, str], str]:
    """(item id, condition key) → recipe hash of every stored input: an input whose recipe is unchanged is
    never rebuilt."""
    rows = conn.execute("SELECT item_id, condition_key, recipe_sha256 FROM assembled_inputs")
    return {(item_id, condition_key): recipe for item_id, condition_key, recipe in rows}


def replace_assembled_input(
    conn: sqlite3.Connection,
    item_id: int,
    condition_key: str,
    option_order: str,
    label_sequence: str,
    recipe_sha256: str,
    sha256: str,
    audio_format: str,
    duration_s: float,
    sample_rate: int,
    clipped_samples: int,
    text_rendering: str,
    created_at: str,
    chunks: Iterable[tuple[float, int, str, float]] = (),
) -> int:
    """Store the input of one item under one condition, replacing an earlier one (and its chunks), with its
    chunks as (max seconds, position, sha256, duration s). Returns the new input's id."""
    conn.execute("DELETE FROM assembled_inputs WHERE item_id = ? AND condition_key = ?", (item_id, condition_key))
    input_id = conn.execute(
        "INSERT INTO assembled_inputs(item_id, condition_key, option_order, label_sequence, recipe_sha256, sha256, "
        "audio_format, duration_s, sample_rate, clipped_samples, text_rendering, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            item_id,
            condition_key,
            option_order,
            label_sequence,
            recipe_sha256,
            sha256,
            audio_format,
            duration_s,
            sample_rate,
            clipped_samples,
            text_rendering,
            created_at,
        ),
    ).lastrowid
    conn.executemany(
        "INSERT INTO input_chunks(input_id, max_seconds, position, sha256, duration_s) VALUES (?, ?, ?, ?, ?)",
        [(input_id, m, p, s, d) for m, p, s, d in chunks],
    )
    return input_id


# --------------------------------------------------------------------------------------------------
# Speakers and their recordings (voice cloning)


def consented_recordings(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """(speaker name, gender, sha256, audio format) of the recordings a voice may be cloned from, oldest first,
    so the one to use comes last for each speaker: only under a consent in force, never a take that failed its
    quality checks, and — once a cloned voice was made on the Speakers page — only the take it was made from."""
    rows = conn.execute(
        """SELECT s.name, s.gender, r.sha256, r.audio_format FROM recordings r
           JOIN speakers s ON s.id = r.speaker_id JOIN consents c ON c.id = r.consent_id
           LEFT JOIN cloned_voices v ON v.id = (
               SELECT max(id) FROM cloned_voices WHERE speaker_id = r.speaker_id)
           WHERE c.withdrawn_at IS NULL AND coalesce(r.passed, 1) = 1
             AND (v.recording_id IS NULL OR v.recording_id = r.id)
           ORDER BY r.id"""
    )
    return [tuple(row) for row in rows]


# --------------------------------------------------------------------------------------------------
# Synthesis


def stored_clip_audio(conn: sqlite3.Connection, cache_key: str) -> tuple | None:
    """(sha256, format, duration, rate, level) of a good clip with this recipe, if one exists: a recipe
    synthesized once is reused for every part that needs it."""
    return conn.execute(
        "SELECT sha256, audio_format, duration_s, sample_rate, speech_level_db FROM clips "
        "WHERE cache_key = ? AND status = 'ok' LIMIT 1",
        (cache_key,),
    ).fetchone()


@dataclass(frozen=True)
class ClipRow:
    """One synthesized (or failed) clip as stored."""

    item_id: int | None
    part: str
    text: str
    language: str
    accent: str | None
    voice: str
    speaker_gender: str | None
    backend: str
    model: str
    prompt: str | None
    cache_key: str
    sha256: str | None
    audio_format: str | None
    duration_s: float | None
    sample_rate: int | None
    speech_level_db: float | None
    status: str
    failure: str | None
    neutralization: str | None = None  # 'embedding-average' / 'signal-approximation' for neutralized voices


def store_clip_rows(conn: sqlite3.Connection, rows: Iterable[ClipRow]) -> None:
    """Store clips. A row already there for the same part and recipe is updated in place when it failed or its
    audio is being replaced (its id — and the transcripts and ratings that refer to it — stay), and kept as it
    is when another process stored it meanwhile (never an error). The caller holds the transaction."""
    now = utc_now()
    conn.executemany(
        "INSERT INTO clips(item_id, part, text, language, accent, voice, speaker_gender, backend, model, prompt, "
        "cache_key, sha256, audio_format, duration_s, sample_rate, speech_level_db, status, failure, created_at, "
        "neutralization) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(coalesce(item_id, 0), part, cache_key) DO UPDATE SET sha256 = excluded.sha256, "
        "audio_format = excluded.audio_format, duration_s = excluded.duration_s, sample_rate = excluded.sample_rate, "
        "speech_level_db = excluded.speech_level_db, status = excluded.status, failure = excluded.failure, "
        "created_at = excluded.created_at "
        "WHERE clips.status = 'failed' OR (excluded.status = 'ok' AND clips.sha256 IS NOT excluded.sha256)",
        [
            (
                row.item_id,
                row.part,
                row.text,
                row.language,
                row.accent,
                row.voice,
                row.speaker_gender,
                row.backend,
                row.model,
                row.prompt,
                row.cache_key,
                row.sha256,
                row.audio_format,
                row.duration_s,
                row.sample_rate,
                row.speech_level_db,
                row.status,
                row.failure,
                now,
                row.neutralization,
            )
            for row in rows
        ],
    )


def clips_with_files(conn: sqlite3.Connection) -> list[tuple[int, str, str, str, str]]:
    """(item id or 0, part, recipe key, sha256, format) of every good clip: the plan checks each file is there."""
    rows = conn.execute(
        "SELECT coalesce(item_id, 0), part, cache_key, sha256, audio_format FROM clips WHERE status = 'ok'"
    )
    return [tuple(row) for row in rows]


def inputs_with_recipes(conn: sqlite3.Connection, wanted: list[tuple[int, str, str]]) -> set[tuple[int, str, str]]:
    """Of (item id, condition key, recipe hash) triples, those already stored with exactly that recipe (another
    process may have assembled them since the plan was made)."""
    stored = set()
    for item_id, condition_key, recipe in wanted:
        row = conn.execute(
            "SELECT 1 FROM assembled_inputs WHERE item_id = ? AND condition_key = ? AND recipe_sha256 = ?",
            (item_id, condition_key, recipe),
        ).fetchone()
        if row is not None:
            stored.add((item_id, condition_key, recipe))
    return stored


# --------------------------------------------------------------------------------------------------
# Voices and their gender (core/audio/voice_gender.py)


def voice_inventory(conn: sqlite3.Connection) -> list[tuple[str, str, str | None, str | None, int]]:
    """(backend, voice, speaker gender, neutralization, good clips) of every voice the project's clips use."""
    rows = conn.execute(
        "SELECT backend, voice, speaker_gender, neutralization, count(*) FROM clips WHERE status = 'ok' "
        f"AND id {NOT_A_CONTROL} GROUP BY backend, voice, speaker_gender, neutralization ORDER BY backend, voice"
    )
    return [tuple(row) for row in rows]


def neutralized_voices(conn: sqlite3.Connection) -> set[str]:
    """Voices whose clips are gender-neutralized (clips.neutralization set): their answers are the gender study's
    neutralized-voice setting, not the plain one. Here, free of pandas, so planning a run never imports it."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(clips)")}
    if "neutralization" not in columns:  # a project from before migration 10
        return set()
    rows = conn.execute("SELECT DISTINCT voice FROM clips WHERE neutralization IS NOT NULL AND voice IS NOT NULL")
    return {row[0] for row in rows}


def clips_for_gender_check(conn: sqlite3.Connection, all_clips: bool = False) -> list[sqlite3.Row]:
    """Good clips with audio of the gender-probe items (of every item and instruction token with `all_clips`),
    oldest first, with their item's source id."""
    where = "" if all_clips else " AND i.kind = 'gender-probe'"
    return conn.execute(
        "SELECT c.id, i.source_id, c.part, c.language, c.accent, c.voice, c.speaker_gender, c.neutralization, "
        "c.backend, c.sha256, c.audio_format FROM clips c LEFT JOIN items i ON i.id = c.item_id "
        f"WHERE c.status = 'ok' AND c.sha256 IS NOT NULL AND c.id {NOT_A_CONTROL}{where} ORDER BY c.id"
    ).fetchall()
