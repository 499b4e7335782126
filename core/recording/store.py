"""The SQL of recording real speakers: speaker profiles (speakers), their consents (consents), their takes
(recordings) and the voices cloned from them (cloned_voices), plus what withdrawing a consent removes elsewhere
(clips synthesized with a cloned voice, inputs assembled from them). Audio bytes live in the project's
content-addressed folder; these tables say what they are. Functions take an open connection; those that write
leave the transaction to the caller."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from spokenbench.core.store.database import utc_now


@dataclass(frozen=True)
class SpeakerRow:
    id: int
    name: str
    language: str | None
    accent: str | None
    gender_self_described: str | None
    gender_group: str  # male / female / other / unspecified
    voice_gender: str | None  # male / female: the gender a cloned voice presents (speakers.gender)
    notes: str | None
    created_at: str


@dataclass(frozen=True)
class ConsentRow:
    id: int
    speaker_id: int
    scope: str
    consent_text: str
    given_at: str
    recorded_by: str
    withdrawn_at: str | None


@dataclass(frozen=True)
class TakeRow:
    id: int
    speaker_id: int
    consent_id: int
    item_id: int | None
    part: str | None
    prompt_key: str | None
    text: str | None
    take: int
    passed: bool
    snr_db: float | None
    checks: list[dict]
    sha256: str
    audio_format: str
    duration_s: float
    sample_rate: int
    device: str | None
    created_at: str


@dataclass(frozen=True)
class ClonedVoiceRow:
    id: int
    speaker_id: int
    recording_id: int
    backend: str
    model: str | None
    test_text: str
    test_sha256: str | None
    test_format: str | None
    created_at: str


_SPEAKER_COLUMNS = "id, name, language, accent, gender_self_described, gender_group, gender, notes, created_at"
_CONSENT_COLUMNS = "id, speaker_id, scope, consent_text, given_at, recorded_by, withdrawn_at"
_TAKE_COLUMNS = (
    "id, speaker_id, consent_id, item_id, part, prompt_key, text, take, passed, snr_db, checks_json, sha256, "
    "audio_format, duration_s, sample_rate, device, created_at"
)
_VOICE_COLUMNS = "id, speaker_id, recording_id, backend, model, test_text, test_sha256, test_format, created_at"


def _take(row) -> TakeRow:
    values = list(row)
    values[8] = bool(values[8])
    values[10] = json.loads(values[10]) if values[10] else []
    return TakeRow(*values)


# --------------------------------------------------------------------------------------------------
# Speakers


def insert_speaker(
    conn: sqlite3.Connection,
    name: str,
    language: str,
    accent: str | None,
    gender_self_described: str | None,
    gender_group: str,
    notes: str | None = None,
) -> int:
    voice_gender = gender_group if gender_group in ("male", "female") else None
    return conn.execute(
        "INSERT INTO speakers(name, gender, language, accent, notes, gender_self_described, gender_group, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (name, voice_gender, language, accent, notes, gender_self_described, gender_group, utc_now()),
    ).lastrowid


def speaker_by_name(conn: sqlite3.Connection, name: str) -> SpeakerRow | None:
    row = conn.execute(f"SELECT {_SPEAKER_COLUMNS} FROM speakers WHERE name = ?", (name,)).fetchone()
    return SpeakerRow(*row) if row else None


def speaker_by_id(conn: sqlite3.Connection, speaker_id: int) -> SpeakerRow | None:
    row = conn.execute(f"SELECT {_SPEAKER_COLUMNS} FROM speakers WHERE id = ?", (speaker_id,)).fetchone()
    return SpeakerRow(*row) if row else None


def all_speakers(conn: sqlite3.Connection) -> list[SpeakerRow]:
    return [SpeakerRow(*row) for row in conn.execute(f"SELECT {_SPEAKER_COLUMNS} FROM speakers ORDER BY name")]


def speaker_take_counts(conn: sqlite3.Connection) -> dict[int, tuple[int, int, int]]:
    """speaker id → (takes, passing takes, prompts whose newest take passed)."""
    counts = {
        speaker_id: [takes, passing, 0]
        for speaker_id, takes, passing in conn.execute(
            "SELECT speaker_id, count(*), coalesce(sum(passed), 0) FROM recordings GROUP BY speaker_id"
        )
    }
    newest_passing = conn.execute(
        "SELECT r.speaker_id, count(*) FROM recordings r WHERE r.passed = 1 AND r.prompt_key IS NOT NULL AND r.id = "
        "(SELECT max(id) FROM recordings WHERE speaker_id = r.speaker_id AND prompt_key = r.prompt_key) "
        "GROUP BY r.speaker_id"
    )
    for speaker_id, prompts in newest_passing:
        counts[speaker_id][2] = prompts
    return {speaker_id: tuple(values) for speaker_id, values in counts.items()}


# --------------------------------------------------------------------------------------------------
# Consents


def insert_consent(
    conn: sqlite3.Connection, speaker_id: int, scope: str, consent_text: str, recorded_by: str, given_at: str
) -> int:
    return conn.execute(
        "INSERT INTO consents(speaker_id, scope, consent_text, given_at, recorded_by) VALUES (?, ?, ?, ?, ?)",
        (speaker_id, scope, consent_text, given_at, recorded_by),
    ).lastrowid


def active_consent(conn: sqlite3.Connection, speaker_id: int) -> ConsentRow | None:
    """The newest consent of the speaker that is not withdrawn."""
    row = conn.execute(
        f"SELECT {_CONSENT_COLUMNS} FROM consents WHERE speaker_id = ? AND withdrawn_at IS NULL "
        "ORDER BY given_at DESC, id DESC LIMIT 1",
        (speaker_id,),
    ).fetchone()
    return ConsentRow(*row) if row else None


def consents_of(conn: sqlite3.Connection, speaker_id: int) -> list[ConsentRow]:
    rows = conn.execute(f"SELECT {_CONSENT_COLUMNS} FROM consents WHERE speaker_id = ? ORDER BY id", (speaker_id,))
    return [ConsentRow(*row) for row in rows]


def latest_consents(conn: sqlite3.Connection) -> dict[int, ConsentRow]:
    """speaker id → their newest consent (withdrawn or not)."""
    rows = conn.execute(
        f"SELECT {_CONSENT_COLUMNS} FROM consents c WHERE id = (SELECT max(id) FROM consents WHERE speaker_id = c.speaker_id)"
    )
    return {row[1]: ConsentRow(*row) for row in rows}


def mark_consents_withdrawn(conn: sqlite3.Connection, speaker_id: int, when: str) -> int:
    return conn.execute(
        "UPDATE consents SET withdrawn_at = ? WHERE speaker_id = ? AND withdrawn_at IS NULL", (when, speaker_id)
    ).rowcount


# --------------------------------------------------------------------------------------------------
# Takes


def next_take_number(conn: sqlite3.Connection, speaker_id: int, prompt_key: str) -> int:
    return conn.execute(
        "SELECT coalesce(max(take), 0) + 1 FROM recordings WHERE speaker_id = ? AND prompt_key = ?",
        (speaker_id, prompt_key),
    ).fetchone()[0]


def insert_take(
    conn: sqlite3.Connection,
    speaker_id: int,
    consent_id: int,
    item_id: int | None,
    part: str | None,
    prompt_key: str,
    text: str,
    take: int,
    passed: bool,
    snr_db: float | None,
    checks: list[dict],
    sha256: str,
    audio_format: str,
    duration_s: float,
    sample_rate: int,
    device: str | None,
) -> int:
    return conn.execute(
        "INSERT INTO recordings(speaker_id, consent_id, item_id, part, prompt_key, text, take, passed, snr_db, "
        "checks_json, sha256, audio_format, duration_s, sample_rate, device, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            speaker_id,
            consent_id,
            item_id,
            part,
            prompt_key,
            text,
            take,
            int(passed),
            snr_db,
            json.dumps(checks, ensure_ascii=False),
            sha256,
            audio_format,
            duration_s,
            sample_rate,
            device,
            utc_now(),
        ),
    ).lastrowid


def take_by_id(conn: sqlite3.Connection, recording_id: int) -> TakeRow | None:
    row = conn.execute(f"SELECT {_TAKE_COLUMNS} FROM recordings WHERE id = ?", (recording_id,)).fetchone()
    return _take(row) if row else None


def takes_of(conn: sqlite3.Connection, speaker_id: int) -> list[TakeRow]:
    """Every take of the speaker, oldest first."""
    rows = conn.execute(f"SELECT {_TAKE_COLUMNS} FROM recordings WHERE speaker_id = ? ORDER BY id", (speaker_id,))
    return [_take(row) for row in rows]


def delete_take(conn: sqlite3.Connection, recording_id: int) -> None:
    """Removes the take and any cloned voice made from it (cascade)."""
    conn.execute("DELETE FROM recordings WHERE id = ?", (recording_id,))


def delete_takes_of(conn: sqlite3.Connection, speaker_id: int) -> list[tuple[str, str]]:
    """Delete every take of the speaker; returns their (sha256, format)."""
    files = [
        tuple(r)
        for r in conn.execute("SELECT sha256, audio_format FROM recordings WHERE speaker_id = ?", (speaker_id,))
    ]
    conn.execute("DELETE FROM recordings WHERE speaker_id = ?", (speaker_id,))
    return files


# --------------------------------------------------------------------------------------------------
# Cloned voices and what was made with them


def insert_cloned_voice(
    conn: sqlite3.Connection,
    speaker_id: int,
    recording_id: int,
    backend: str,
    model: str | None,
    test_text: str,
    test_sha256: str | None,
    test_format: str | None,
) -> int:
    return conn.execute(
        "INSERT INTO cloned_voices(speaker_id, recording_id, backend, model, test_text, test_sha256, test_format, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (speaker_id, recording_id, backend, model, test_text, test_sha256, test_format, utc_now()),
    ).lastrowid


def cloned_voices_of(conn: sqlite3.Connection, speaker_id: int) -> list[ClonedVoiceRow]:
    rows = conn.execute(f"SELECT {_VOICE_COLUMNS} FROM cloned_voices WHERE speaker_id = ? ORDER BY id", (speaker_id,))
    return [ClonedVoiceRow(*row) for row in rows]


def cloned_voice_counts(conn: sqlite3.Connection) -> dict[int, int]:
    return {s: n for s, n in conn.execute("SELECT speaker_id, count(*) FROM cloned_voices GROUP BY speaker_id")}


def delete_cloned_voices_of(conn: sqlite3.Connection, speaker_id: int) -> tuple[int, list[tuple[str, str]]]:
    """Delete the speaker's cloned voices; returns (voices deleted, the (sha256, format) of their test sentences)."""
    files = [
        tuple(r)
        for r in conn.execute(
            "SELECT test_sha256, test_format FROM cloned_voices WHERE speaker_id = ? AND test_sha256 IS NOT NULL",
            (speaker_id,),
        )
    ]
    deleted = conn.execute("DELETE FROM cloned_voices WHERE speaker_id = ?", (speaker_id,)).rowcount
    return deleted, files


def delete_cloned_clips(
    conn: sqlite3.Connection, speaker_id: int, voice_name: str
) -> tuple[int, list[tuple[str, str]]]:
    """Delete clips synthesized with the speaker's cloned voice (their transcripts, screening and ratings go with
    them); returns (clips deleted, their (sha256, format))."""
    where = "backend = 'clone' AND (voice = ? OR speaker_id = ?)"
    files = [
        tuple(r)
        for r in conn.execute(
            f"SELECT sha256, audio_format FROM clips WHERE {where} AND sha256 IS NOT NULL", (voice_name, speaker_id)
        )
    ]
    deleted = conn.execute(f"DELETE FROM clips WHERE {where}", (voice_name, speaker_id)).rowcount
    return deleted, files


def delete_cloned_inputs(conn: sqlite3.Connection, voice_name: str) -> tuple[int, list[tuple[str, str]]]:
    """Delete evaluation inputs assembled from the cloned voice (condition voice = the speaker, voice source
    'cloned') and their chunks; returns (inputs deleted, their files' (sha256, format))."""
    where = (
        "json_valid(condition_key) AND json_extract(condition_key, '$.voice') = ? "
        "AND json_extract(condition_key, '$.voice_source') = 'cloned'"
    )
    ids = [r[0] for r in conn.execute(f"SELECT id FROM assembled_inputs WHERE {where}", (voice_name,))]
    files: list[tuple[str, str]] = []
    for input_id in ids:
        files += [
            tuple(r)
            for r in conn.execute(
                "SELECT i.sha256, i.audio_format FROM assembled_inputs i WHERE i.id = ? "
                "UNION SELECT c.sha256, i.audio_format FROM input_chunks c JOIN assembled_inputs i ON i.id = c.input_id "
                "WHERE c.input_id = ?",
                (input_id, input_id),
            )
        ]
        conn.execute("DELETE FROM assembled_inputs WHERE id = ?", (input_id,))
    return len(ids), files


def audio_referenced(conn: sqlite3.Connection, sha256: str) -> bool:
    """Whether any row of the project still refers to this audio file (clips, inputs, chunks, recordings,
    cloned voices' test sentences): only unreferenced files may be deleted."""
    row = conn.execute(
        "SELECT EXISTS(SELECT 1 FROM clips WHERE sha256 = ?1) OR EXISTS(SELECT 1 FROM assembled_inputs WHERE sha256 = ?1) "
        "OR EXISTS(SELECT 1 FROM input_chunks WHERE sha256 = ?1) OR EXISTS(SELECT 1 FROM recordings WHERE sha256 = ?1) "
        "OR EXISTS(SELECT 1 FROM cloned_voices WHERE test_sha256 = ?1)",
        (sha256,),
    ).fetchone()
    return bool(row[0])


def item_language(conn: sqlite3.Connection, item_id: int) -> str | None:
    row = conn.execute("SELECT language FROM visible_items WHERE id = ?", (item_id,)).fetchone()
    return row[0] if row else None


def item_exists(conn: sqlite3.Connection, item_id: int) -> bool:
    return conn.execute("SELECT 1 FROM items WHERE id = ?", (item_id,)).fetchone() is not None
