"""The SQL of ASR screening: transcripts per clip and ASR system (transcripts), the last failure of a system on a
clip (transcript_failures) and the per-clip screening scores (clip_screening). The screening's settings live in
project_meta (core/store/meta.py). Functions take an open connection; those that write leave the transaction to
the caller."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable, Iterator

from spokenbench.core.asr.normalize import NORMALIZER_VERSION
from spokenbench.core.asr.scoring import Scorer
from spokenbench.core.store.changes import count_change
from spokenbench.core.store.database import NOT_A_CONTROL, utc_now

# --------------------------------------------------------------------------------------------------
# Transcripts


def transcript_count(conn: sqlite3.Connection) -> int:
    """How many transcripts the project holds: none means nothing can be screened yet."""
    return conn.execute("SELECT count(*) FROM transcripts").fetchone()[0]


def transcript_counts_by_asr(conn: sqlite3.Connection) -> list[dict]:
    """[{asr, clips}] per ASR system, by name: which systems have transcribed how much."""
    rows = conn.execute("SELECT asr, count(*) AS clips FROM transcripts GROUP BY asr ORDER BY asr")
    return [dict(row) for row in rows]


def asr_systems_with_transcripts(conn: sqlite3.Connection) -> set[str]:
    """Names of the ASR systems that have transcribed something: screening wants two of them."""
    return {row[0] for row in conn.execute("SELECT DISTINCT asr FROM transcripts")}


def transcript_state(conn: sqlite3.Connection) -> tuple:
    """(count, newest id, newest time) of the transcripts screening reads (control clips' are not): changes
    whenever one is added, replaced or removed, so stored screening results can tell whether they are current."""
    return tuple(
        conn.execute(
            "SELECT count(*), coalesce(max(id), 0), coalesce(max(created_at), '') FROM transcripts "
            f"WHERE clip_id {NOT_A_CONTROL}"
        ).fetchone()
    )


def every_transcript_in_clip_order(conn: sqlite3.Connection) -> Iterator[tuple[int, int, str, str, int]]:
    """Every transcript as (transcript id, clip id, ASR system, text, 0), by clip then system, streamed: as
    transcripts_of_clips gives them, its counts to be made."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute("SELECT id, clip_id, asr, text, 0 FROM transcripts ORDER BY clip_id, asr")


def counted_transcripts_exist(conn: sqlite3.Connection) -> bool:
    """Whether any transcript has counts of this normalizer version: none (a project from before migration 16,
    or after a version bump), and screening scores every clip from its texts without gathering counts first."""
    return bool(
        conn.execute(
            "SELECT EXISTS (SELECT 1 FROM transcripts WHERE counts_version = ?)", (NORMALIZER_VERSION,)
        ).fetchone()[0]
    )


def transcript_failure_count(conn: sqlite3.Connection) -> int:
    """How many (clip, ASR system) pairs last failed: the next transcription run retries them."""
    return conn.execute("SELECT count(*) FROM transcript_failures").fetchone()[0]


# --------------------------------------------------------------------------------------------------
# Screening scores


_SCREENABLE = f"status = 'ok' AND item_id IS NOT NULL AND id {NOT_A_CONTROL}"


def screenable_languages(conn: sqlite3.Connection) -> dict[int, str]:
    """clip id → language of every good item clip, by id: what screening reports on, read without the texts
    (most clips are scored from their transcripts' stored counts)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return dict(cursor.execute(f"SELECT id, language FROM clips WHERE {_SCREENABLE}"))


def screenable_clips(conn: sqlite3.Connection) -> dict[int, tuple[str, str]]:
    """clip id → (language, text) of every good item clip (instruction tokens are not screened)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute(f"SELECT id, language, text FROM clips WHERE {_SCREENABLE}")
    return {clip_id: (language, text) for clip_id, language, text in rows}


def replace_screening_scores(conn: sqlite3.Connection, rows: Iterable[tuple]) -> None:
    """Replace every stored score with `rows`, each (clip id, metric, errors, reference units, error rate, WER
    interval, best ASR, ASR count, CER, screened at): a screening is always recomputed whole. clip_screening has
    no per-row counter triggers (migration 13): this and delete_screening_scores count their writes."""
    conn.execute("DELETE FROM clip_screening")
    count_change(conn, "clip_screening")
    conn.executemany(
        "INSERT INTO clip_screening(clip_id, metric, errors, reference_units, error_rate, wer_bin, best_asr, "
        "asr_count, cer, screened_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    # a clip deleted since its score was computed: its score goes too (what the foreign key would refuse, when the
    # writer has it off: foreign_keys_unchecked)
    conn.execute("DELETE FROM clip_screening WHERE clip_id NOT IN (SELECT id FROM clips)")


@contextlib.contextmanager
def foreign_keys_unchecked(conn: sqlite3.Connection) -> Iterator[None]:
    """Foreign keys not enforced on `conn` for a block holding a whole transaction (a pragma inside one does
    nothing) that only replaces screening's scores and stores transcript counts, which cascade nothing: with them
    on, SQLite deletes the old scores row by row and looks up each new row's clip (0.04 of 0.15 s for 44,800
    scores). replace_screening_scores drops the scores of clips deleted meanwhile itself."""
    was_on = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    if conn.in_transaction or not was_on:
        yield
        return
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        yield
    finally:
        conn.execute("PRAGMA foreign_keys = ON")


def delete_screening_scores(conn: sqlite3.Connection) -> None:
    """Forget every score, e.g. once the transcripts they came from are gone."""
    conn.execute("DELETE FROM clip_screening")
    count_change(conn, "clip_screening")


def screened_clip_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM clip_screening").fetchone()[0]


def screened_language_bins(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    """(language, WER interval) of every screened clip: what Table 2 counts."""
    rows = conn.execute("SELECT c.language, s.wer_bin FROM clip_screening s JOIN clips c ON c.id = s.clip_id")
    return [(language, wer_bin) for language, wer_bin in rows]


def screened_clip_bins(conn: sqlite3.Connection) -> list[tuple[int, str, int]]:
    """(clip id, language, WER interval) of every screened clip."""
    rows = conn.execute(
        "SELECT s.clip_id, c.language, s.wer_bin FROM clip_screening s JOIN clips c ON c.id = s.clip_id"
    )
    return [tuple(row) for row in rows]


def highest_error_clips(conn: sqlite3.Connection, limit: int) -> list[dict]:
    """The `limit` screened clips with the highest error rate, with what they should say and what the best ASR
    system heard, for a look by ear."""
    rows = conn.execute(
        """SELECT s.clip_id, c.language, c.accent, c.voice, c.part, i.source_id, s.metric, s.error_rate, s.best_asr,
                  c.text, t.text AS transcript
           FROM clip_screening s JOIN clips c ON c.id = s.clip_id LEFT JOIN items i ON i.id = c.item_id
           LEFT JOIN transcripts t ON t.clip_id = s.clip_id AND t.asr = s.best_asr
           ORDER BY s.error_rate DESC, s.clip_id LIMIT ?""",
        (limit,),
    )
    return [dict(row) for row in rows]


# --------------------------------------------------------------------------------------------------
# Transcription jobs and imported transcripts


def clips_to_transcribe(conn: sqlite3.Connection, languages: list[str] | None, include_tokens: bool) -> list:
    """Good clips with audio (item clips, and instruction tokens when asked), with their item's id. Control clips
    are transcribed like any other (so a rater who shows transcripts sees theirs too); screening skips them."""
    where = ["c.status = 'ok'", "c.sha256 IS NOT NULL"]
    params: list = []
    if not include_tokens:
        where.append("c.item_id IS NOT NULL")
    if languages:
        where.append(f"c.language IN ({','.join('?' * len(languages))})")
        params += languages
    return conn.execute(
        "SELECT c.id, c.sha256, c.audio_format, c.language, c.accent, c.voice, c.part, c.text, i.source_id "
        f"FROM clips c LEFT JOIN items i ON i.id = c.item_id WHERE {' AND '.join(where)} ORDER BY c.id",
        params,
    ).fetchall()


def clips_for_context(conn: sqlite3.Connection, languages: list[str] | None) -> list[dict]:
    """Good item clips with audio and what makes them one voice's reading of an item (for screening in context)."""
    where = ["c.status = 'ok'", "c.sha256 IS NOT NULL", "c.item_id IS NOT NULL", f"c.id {NOT_A_CONTROL}"]
    params: list = []
    if languages:
        where.append(f"c.language IN ({','.join('?' * len(languages))})")
        params += languages
    rows = conn.execute(
        "SELECT c.id, c.item_id, c.part, c.text, c.language, c.accent, c.voice, c.backend, c.model, c.prompt, "
        "c.speaker_id, c.neutralization, c.sha256, c.audio_format, i.source_id FROM clips c "
        f"JOIN items i ON i.id = c.item_id WHERE {' AND '.join(where)} ORDER BY c.id",
        params,
    )
    return [dict(row) for row in rows]


def clips_transcribed_by(conn: sqlite3.Connection, asr: str) -> set[int]:
    return {row[0] for row in conn.execute("SELECT clip_id FROM transcripts WHERE asr = ?", (asr,))}


def all_clip_ids(conn: sqlite3.Connection) -> set[int]:
    return {row[0] for row in conn.execute("SELECT id FROM clips")}


def store_transcripts(conn: sqlite3.Connection, asr: str, rows: Iterable[tuple[int, str | None, str]]) -> None:
    """(clip id, model, text) transcripts by one ASR system; replaces that system's earlier transcript and
    failure of the same clip. Each is stored with its edit counts against its clip's text (migration 16), in the
    same statement, so screening gathers them instead of scoring every text again. The caller holds the
    transaction."""
    now = utc_now()
    rows = list(rows)
    references = clip_references(conn, [row[0] for row in rows])
    counted = Scorer().transcript_counts(
        (clip_id, model, *references[clip_id], text) for clip_id, model, text in rows if clip_id in references
    )
    uncounted = [
        (clip_id, model, None, None, text, None, None, None, None)
        for clip_id, model, text in rows
        if clip_id not in references
    ]  # fmt: skip (no such clip: the insert's foreign key says so)
    conn.executemany(
        "INSERT INTO transcripts(clip_id, asr, model, text, created_at, counts_version, word_errors, words, "
        "character_errors, characters) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(clip_id, asr) DO UPDATE SET model = excluded.model, text = excluded.text, "
        "created_at = excluded.created_at, counts_version = excluded.counts_version, "
        "word_errors = excluded.word_errors, words = excluded.words, character_errors = excluded.character_errors, "
        "characters = excluded.characters",
        [(clip_id, asr, model, text, now, NORMALIZER_VERSION if counts[0] is not None else None, *counts)
         for clip_id, model, _language, _reference, text, *counts in counted + uncounted],
    )  # fmt: skip
    conn.executemany("DELETE FROM transcript_failures WHERE clip_id = ? AND asr = ?", [(row[0], asr) for row in rows])
    # a replaced transcript's no-speech probability described the old one
    conn.executemany("DELETE FROM project_meta WHERE key = ?", [(_no_speech_key(row[0], asr),) for row in rows])


def clip_references(conn: sqlite3.Connection, clip_ids: list[int]) -> dict[int, tuple[str, str]]:
    """clip id → (language, text) of the clips among `clip_ids` that exist."""
    cursor = conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute(
        "SELECT id, language, text FROM clips WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(clip_ids),)
    )
    return {clip_id: (language, text) for clip_id, language, text in rows}


# A transcript's stored counts (migration 16) as store_transcripts writes them, and when screening may use them:
# made by this normalizer version (a trigger forgets them when the clip's text or language changes), and
# plausible — whole numbers (their sum is an integer), none negative, words no more than characters, none above
# MOST_COUNTED (a clip of 2 million characters is no sentence). Counts from someone else's project are data: any
# other is counted again from the texts, which always gives the right score, so a bound errs on the safe side.
MOST_COUNTED = 2**21
LENGTHS_PACKED = 2**22  # words × LENGTHS_PACKED + characters: both reference lengths in one integer
_COUNTS_ARE_CURRENT = (
    f"(t.counts_version IS ? AND t.word_errors BETWEEN 0 AND {MOST_COUNTED} "
    f"AND t.character_errors BETWEEN 0 AND {MOST_COUNTED} AND t.words BETWEEN 0 AND t.characters "
    f"AND t.characters <= {MOST_COUNTED} AND typeof(t.word_errors + t.words + t.character_errors + t.characters) = 'integer')"
)


def clip_count_summaries(conn: sqlite3.Connection, asr_names: list[str]) -> Iterator[tuple]:
    """Per clip with transcripts, by clip id, its transcripts' stored counts gathered in SQL: (clip id,
    transcripts, how many have current counts, min(word errors × n + rank), min(character errors × n + rank), the
    lowest and the highest reference lengths (words × LENGTHS_PACKED + characters), the lowest character error
    rate), where rank is the ASR system's index in `asr_names` (every system's, sorted) and n = len(asr_names):
    the minimum's errors and, among equal errors, the first system by name, in one aggregate. Only a clip whose
    every transcript's counts are current, and whose reference lengths agree, may use them. Every clip's: the
    caller skips those it does not screen (a join to tell them apart here cost more)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    n = len(asr_names)
    rank = f"CASE t.asr {' '.join(f'WHEN ? THEN {index}' for index in range(n))} END" if n else "0"
    lengths = f"t.words * {LENGTHS_PACKED} + t.characters"
    return cursor.execute(
        f"SELECT t.clip_id, count(*), sum({_COUNTS_ARE_CURRENT}), min(t.word_errors * {n} + {rank}), "
        f"min(t.character_errors * {n} + {rank}), min({lengths}), max({lengths}), "
        "min(t.character_errors * 1.0 / t.characters) FROM transcripts t GROUP BY t.clip_id ORDER BY t.clip_id",
        (NORMALIZER_VERSION, *asr_names, *asr_names),
    )


def transcripts_of_clips(conn: sqlite3.Connection, clip_ids: list[int]) -> Iterator[tuple[int, int, str, str, int]]:
    """(transcript id, clip id, ASR system, text, whether its stored counts are current) of the clips `clip_ids`,
    by clip then system: the clips screening scores from their texts."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(
        f"SELECT t.id, t.clip_id, t.asr, t.text, {_COUNTS_ARE_CURRENT} FROM transcripts t "
        "WHERE t.clip_id IN (SELECT value FROM json_each(?)) ORDER BY t.clip_id, t.asr",
        (NORMALIZER_VERSION, json.dumps(clip_ids)),
    )


def store_transcript_counts(conn: sqlite3.Connection, rows: Iterable[tuple]) -> None:
    """Store counts of transcripts scored from their texts, each row (transcript id, language, reference, text,
    word errors, words, character errors, characters): only where the transcript still has that text and its clip
    that language and text (either changed since they were read: the counts made then are not its)."""
    conn.executemany(  # numbered parameters: the rows as they come, no list of reordered copies
        f"UPDATE transcripts SET counts_version = {NORMALIZER_VERSION}, word_errors = ?5, words = ?6, "
        "character_errors = ?7, characters = ?8 WHERE id = ?1 AND text = ?4 "
        "AND (SELECT language = ?2 AND text = ?3 FROM clips WHERE clips.id = transcripts.clip_id)",
        rows,
    )


# Whisper's no-speech probability of a transcript, where the backend gives one (local faster-whisper). Kept in
# project_meta, one key per (clip, ASR system) — `asr_no_speech:<clip id>:<asr>` — written in the transcript's own
# transaction, so the transcripts table keeps its schema; screening reads them all at once.
NO_SPEECH_PREFIX = "asr_no_speech:"


def _no_speech_key(clip_id: int, asr: str) -> str:
    return f"{NO_SPEECH_PREFIX}{clip_id}:{asr}"


def store_no_speech(conn: sqlite3.Connection, asr: str, clip_ids: Iterable[int], probability: float) -> None:
    """Record the no-speech probability of `asr`'s transcripts of `clip_ids` (stored just before)."""
    conn.executemany(
        "INSERT INTO project_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(_no_speech_key(clip_id, asr), repr(float(probability))) for clip_id in clip_ids],
    )


def no_speech_probabilities(conn: sqlite3.Connection) -> dict[tuple[int, str], float]:
    """(clip id, ASR system) → the no-speech probability its transcript came with, for the transcripts that have one."""
    found = {}
    rows = conn.execute(
        "SELECT key, value FROM project_meta WHERE key >= ? AND key < ?",
        (NO_SPEECH_PREFIX, NO_SPEECH_PREFIX[:-1] + ";"),
    )
    for key, value in rows:
        clip_id, _, asr = key[len(NO_SPEECH_PREFIX) :].partition(":")
        try:
            found[(int(clip_id), asr)] = float(value)
        except ValueError:
            continue
    return found


def store_transcript_failures(conn: sqlite3.Connection, asr: str, clip_ids: Iterable[int], message: str) -> None:
    now = utc_now()
    conn.executemany(
        "INSERT INTO transcript_failures(clip_id, asr, message, created_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT(clip_id, asr) DO UPDATE SET message = excluded.message, created_at = excluded.created_at",
        [(clip_id, asr, message, now) for clip_id in clip_ids],
    )


def transcript_failure_rows(conn: sqlite3.Connection, limit: int) -> list[dict]:
    rows = conn.execute("SELECT clip_id, asr, message FROM transcript_failures ORDER BY asr, clip_id LIMIT ?", (limit,))
    return [dict(row) for row in rows]


def transcribed_pairs(conn: sqlite3.Connection, pairs: list[tuple[str, int]]) -> set[tuple[str, int]]:
    """Of (ASR system, clip id) pairs, those that have a transcript now."""
    return {
        (asr, clip_id)
        for asr, clip_id in pairs
        if conn.execute("SELECT 1 FROM transcripts WHERE asr = ? AND clip_id = ?", (asr, clip_id)).fetchone()
    }
