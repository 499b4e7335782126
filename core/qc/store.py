"""The SQL of quality control's human side: named rating queues (rating_queues, rating_queue_clips), the ratings
given to clips, and the clip pool a queue is sampled from. Functions take an open connection; those that write
leave the transaction to the caller, so one decision is stored whole or not at all."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from spokenbench.core.store.database import NOT_A_CONTROL

# --------------------------------------------------------------------------------------------------
# The pool a rating queue is sampled from


def sampleable_clips(conn: sqlite3.Connection) -> list[tuple]:
    """Every good item clip as (clip id, language, accent, item id, part, subject, WER interval, error rate), the
    last two NULL where the clip has not been screened: what stratified sampling draws from."""
    rows = conn.execute(
        f"""SELECT c.id, c.language, c.accent, c.item_id, c.part, i.subject, s.wer_bin, s.error_rate
           FROM clips c JOIN items i ON i.id = c.item_id LEFT JOIN clip_screening s ON s.clip_id = c.id
           WHERE c.status = 'ok' AND c.id {NOT_A_CONTROL} ORDER BY c.id"""
    )
    return [tuple(row) for row in rows]


# --------------------------------------------------------------------------------------------------
# Rating queues


def queue_id_by_name(conn: sqlite3.Connection, name: str) -> int | None:
    """A queue is addressed by name (the app's session and the CLI open it so); None when there is none."""
    row = conn.execute("SELECT id FROM rating_queues WHERE name = ?", (name,)).fetchone()
    return row[0] if row else None


def queue_names(conn: sqlite3.Connection) -> list[str]:
    """Every queue's name, sorted, to tell a user which names exist."""
    return [row[0] for row in conn.execute("SELECT name FROM rating_queues ORDER BY name")]


def queue_clip_ids(conn: sqlite3.Connection, queue_id: int) -> list[int]:
    """A queue's clips in rating order, to tell whether a new sample equals the stored one."""
    rows = conn.execute("SELECT clip_id FROM rating_queue_clips WHERE queue_id = ? ORDER BY position", (queue_id,))
    return [row[0] for row in rows]


def delete_queue(conn: sqlite3.Connection, queue_id: int) -> None:
    """Drop a queue and its clip list; its ratings stay (their queue_id becomes NULL)."""
    conn.execute("DELETE FROM rating_queues WHERE id = ?", (queue_id,))


def insert_queue(
    conn: sqlite3.Connection,
    name: str,
    strategy: str,
    seed: int,
    per_bin: int,
    parameters_json: str,
    created_at: str,
    clips: Iterable[tuple[int, str, str | None, int | None, float | None]],
) -> int:
    """Store a queue with its clips, each (clip id, language, accent, WER interval, error rate) in rating order;
    the interval and rate are kept as they were at sampling time. Returns the queue's id."""
    queue_id = conn.execute(
        "INSERT INTO rating_queues(name, strategy, seed, per_bin, parameters_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (name, strategy, seed, per_bin, parameters_json, created_at),
    ).lastrowid
    conn.executemany(
        "INSERT INTO rating_queue_clips(queue_id, position, clip_id, language, accent, wer_bin, error_rate) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(queue_id, position, *clip) for position, clip in enumerate(clips, start=1)],
    )
    return queue_id


def queue_overviews(conn: sqlite3.Connection) -> list[dict]:
    """Every queue in creation order with its size and how many of its clips each annotator has rated: the
    progress a QC report shows."""
    queues = []
    for row in conn.execute("SELECT id, name, strategy, seed, per_bin, created_at FROM rating_queues ORDER BY id"):
        size = conn.execute("SELECT count(*) FROM rating_queue_clips WHERE queue_id = ?", (row["id"],)).fetchone()[0]
        by_annotator = dict(
            conn.execute(
                "SELECT annotator, count(DISTINCT r.clip_id) FROM ratings r JOIN rating_queue_clips q ON q.clip_id = r.clip_id "
                "AND q.queue_id = ? WHERE r.undone_at IS NULL GROUP BY annotator ORDER BY annotator",
                (row["id"],),
            ).fetchall()
        )
        queues.append(
            {
                "name": row["name"],
                "strategy": row["strategy"],
                "seed": row["seed"],
                "per_bin": row["per_bin"],
                "clips": size,
                "rated_by": by_annotator,
                "created_at": row["created_at"],
            }
        )
    return queues


def queue_clip_rows(conn: sqlite3.Connection, queue_id: int) -> list[tuple]:
    """A queue's clips in rating order, with what a rater needs to hear and judge them: (position, clip id,
    language, accent, voice, part, text, item source id, sha256, audio format, WER interval, error rate, metric).
    The error rate is the one the clip was sampled with; a queue sampled before screening takes the clip's
    screening since (before, an annotator saw 'WER —' beside the transcripts of a screened clip)."""
    rows = conn.execute(
        """SELECT q.position, q.clip_id, q.language, q.accent, c.voice, c.part, c.text, i.source_id, c.sha256,
                  c.audio_format, q.wer_bin, coalesce(q.error_rate, s.error_rate), s.metric
           FROM rating_queue_clips q JOIN clips c ON c.id = q.clip_id JOIN items i ON i.id = c.item_id
                LEFT JOIN clip_screening s ON s.clip_id = q.clip_id
           WHERE q.queue_id = ? ORDER BY q.position""",
        (queue_id,),
    )
    return [tuple(row) for row in rows]


def queue_has_clip(conn: sqlite3.Connection, queue_id: int, clip_id: int) -> bool:
    """Whether a clip belongs to a queue, so a rating cannot be filed under the wrong queue."""
    row = conn.execute(
        "SELECT 1 FROM rating_queue_clips WHERE queue_id = ? AND clip_id = ?", (queue_id, clip_id)
    ).fetchone()
    return row is not None


# --------------------------------------------------------------------------------------------------
# Ratings


def clips_rated_by(conn: sqlite3.Connection, annotator: str) -> set[int]:
    """Clips this annotator has a live (not undone) rating for in any queue: a session skips them."""
    rows = conn.execute("SELECT DISTINCT clip_id FROM ratings WHERE annotator = ? AND undone_at IS NULL", (annotator,))
    return {row[0] for row in rows}


def live_ratings_by(conn: sqlite3.Connection, annotator: str) -> dict[int, tuple[int, str, str | None]]:
    """This annotator's newest live rating per clip as clip id → (rating id, rating, note): what a rating
    session shows as already rated, and only this annotator's (each rater sees their own)."""
    rows = conn.execute(
        """SELECT r.clip_id, r.id, r.rating, r.note FROM ratings r
           JOIN (SELECT clip_id, max(id) AS id FROM ratings WHERE annotator = ? AND undone_at IS NULL GROUP BY clip_id)
                newest ON newest.id = r.id""",
        (annotator,),
    )
    return {row[0]: (row[1], row[2], row[3]) for row in rows}


def last_live_rating_in_queue(conn: sqlite3.Connection, annotator: str, queue_id: int) -> tuple[int, int] | None:
    """(rating id, clip id) of the annotator's most recent live rating filed under the queue: what undo takes back."""
    row = conn.execute(
        "SELECT id, clip_id FROM ratings WHERE annotator = ? AND queue_id = ? AND undone_at IS NULL "
        "ORDER BY id DESC LIMIT 1",
        (annotator, queue_id),
    ).fetchone()
    return (row[0], row[1]) if row else None


def mark_rating_undone(conn: sqlite3.Connection, rating_id: int, undone_at: str, undone_by: str) -> None:
    """Mark a rating undone; the row stays, so the record of what was rated (and taken back) is kept."""
    conn.execute(
        "UPDATE ratings SET undone_at = ?, undone_by = ? WHERE id = ? AND undone_at IS NULL",
        (undone_at, undone_by, rating_id),
    )


def set_rating_note(conn: sqlite3.Connection, rating_id: int, note: str | None) -> bool:
    """Attach a note to a live rating (the verdict is untouched); False when it is gone or undone."""
    cursor = conn.execute("UPDATE ratings SET note = ? WHERE id = ? AND undone_at IS NULL", (note, rating_id))
    return cursor.rowcount == 1


def queue_transcripts(conn: sqlite3.Connection, queue_id: int) -> dict[int, list[tuple[str, str]]]:
    """Transcripts of a queue's clips as clip id → [(ASR system, text)], for a rater who asks to see them."""
    rows = conn.execute(
        """SELECT t.clip_id, t.asr, t.text FROM transcripts t JOIN rating_queue_clips q ON q.clip_id = t.clip_id
           WHERE q.queue_id = ? ORDER BY t.clip_id, t.asr""",
        (queue_id,),
    )
    found: dict[int, list[tuple[str, str]]] = {}
    for clip_id, asr, text in rows:
        found.setdefault(clip_id, []).append((asr, text))
    return found


def insert_rating(
    conn: sqlite3.Connection,
    clip_id: int,
    annotator: str,
    rating: str,
    note: str | None,
    created_at: str,
    queue_id: int | None,
    seconds: float | None = None,
) -> int:
    """Append one rating (ratings are never overwritten: the newest per annotator counts), with the seconds the
    rater spent on the clip when known. Returns its id."""
    return conn.execute(
        "INSERT INTO ratings(clip_id, annotator, rating, note, created_at, queue_id, seconds) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (clip_id, annotator, rating, note, created_at, queue_id, seconds),
    ).lastrowid


def newest_ratings(conn: sqlite3.Connection, queue: str | None = None, controls: bool = False) -> list[dict]:
    """Newest live (not undone) rating per (clip, annotator), with the clip's language, accent, voice, part, item and WER interval:
    the queue's interval at sampling time when `queue` names one (then only its clips), else the current
    screening's. Ratings of control clips only with `controls` (they never count in Table 3)."""
    join, params = "", []
    bin_source = "s.wer_bin"
    if queue is not None:
        join = "JOIN rating_queue_clips q ON q.clip_id = r.clip_id JOIN rating_queues qq ON qq.id = q.queue_id AND qq.name = ?"
        params.append(queue)
        bin_source = "q.wer_bin"
    rows = conn.execute(
        f"""SELECT r.clip_id, r.annotator, r.rating, r.note, c.language, c.accent, c.voice, c.part, i.source_id,
                   {bin_source} AS wer_bin
            FROM ratings r {join}
            JOIN (SELECT clip_id, annotator, max(id) AS id FROM ratings WHERE undone_at IS NULL
                  GROUP BY clip_id, annotator) newest ON newest.id = r.id
            JOIN clips c ON c.id = r.clip_id LEFT JOIN items i ON i.id = c.item_id
            LEFT JOIN clip_screening s ON s.clip_id = r.clip_id
            {"" if controls else f"WHERE r.clip_id {NOT_A_CONTROL}"}
            ORDER BY r.clip_id, r.annotator""",
        params,
    )
    return [dict(row) for row in rows]


def ratings_for_reliability(conn: sqlite3.Connection, queue: str | None = None) -> list[dict]:
    """Every annotator's newest live rating per clip (of the queue's clips when `queue` names one), controls
    included, in the order they were made: (rating id, clip id, annotator, rating, seconds, language, and the
    control's kind and expected rating, NULL for an ordinary clip)."""
    join, params = "", []
    if queue is not None:
        join = "JOIN rating_queue_clips q ON q.clip_id = r.clip_id JOIN rating_queues qq ON qq.id = q.queue_id AND qq.name = ?"
        params.append(queue)
    rows = conn.execute(
        f"""SELECT r.id, r.clip_id, r.annotator, r.rating, r.seconds, c.language, k.kind AS control_kind,
                   k.expected AS control_expected
            FROM ratings r {join}
            JOIN (SELECT clip_id, annotator, max(id) AS id FROM ratings WHERE undone_at IS NULL
                  GROUP BY clip_id, annotator) newest ON newest.id = r.id
            JOIN clips c ON c.id = r.clip_id LEFT JOIN control_clips k ON k.clip_id = r.clip_id
            ORDER BY r.id""",
        params,
    )
    return [dict(row) for row in rows]


# --------------------------------------------------------------------------------------------------
# Annotation packs (core/qc/packs.py): what a pack carries out, and its ratings merged back


def pack_clip_rows(conn: sqlite3.Connection, queue_id: int) -> list[dict]:
    """A queue's clips in rating order with what a pack project needs to show and play them (the clip, its item's
    identity and question, its place in the queue) — nothing else of the project."""
    rows = conn.execute(
        """SELECT q.position, q.language AS queue_language, q.accent AS queue_accent, q.wer_bin, q.error_rate,
                  c.id, c.item_id, c.part, c.text, c.language, c.accent, c.voice, c.speaker_gender, c.backend,
                  c.model, c.cache_key, c.sha256, c.audio_format, c.duration_s, c.sample_rate, c.created_at,
                  i.source AS item_source, i.source_id AS item_source_id, i.language AS item_language,
                  i.subject AS item_subject, i.question AS item_question, i.created_at AS item_created_at
           FROM rating_queue_clips q JOIN clips c ON c.id = q.clip_id LEFT JOIN items i ON i.id = c.item_id
           WHERE q.queue_id = ? ORDER BY q.position""",
        (queue_id,),
    )
    return [dict(row) for row in rows]


def queue_row(conn: sqlite3.Connection, queue_id: int) -> dict:
    """A queue's own settings (strategy, seed, per_bin, created_at), copied into a pack. The sampling details
    (parameters_json: strata and their counts) stay home: beside the pack's clip count they would tell how many
    hidden control clips it holds."""
    row = conn.execute(
        "SELECT name, strategy, seed, per_bin, created_at FROM rating_queues WHERE id = ?", (queue_id,)
    ).fetchone()
    return dict(row) | {"parameters_json": "{}"}


def insert_pack_contents(conn: sqlite3.Connection, queue: dict, clips: list[dict]) -> None:
    """Fill an empty pack project with a pack's queue and clips, keeping the source project's item and clip ids
    (so a rating made in the pack names the same clip at home)."""
    items = {}
    for clip in clips:
        if clip["item_id"] is not None:
            items[clip["item_id"]] = clip
    conn.executemany(
        "INSERT INTO items(id, source, source_id, language, subject, question, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (item_id, c["item_source"], c["item_source_id"], c["item_language"], c["item_subject"],
             c["item_question"], c["item_created_at"])
            for item_id, c in items.items()
        ],
    )  # fmt: skip
    conn.executemany(
        """INSERT INTO clips(id, item_id, part, text, language, accent, voice, speaker_gender, backend, model,
                             cache_key, sha256, audio_format, duration_s, sample_rate, status, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'ok', ?)""",
        [
            (c["id"], c["item_id"], c["part"], c["text"], c["language"], c["accent"], c["voice"],
             c["speaker_gender"], c["backend"], c["model"], c["cache_key"], c["sha256"], c["audio_format"],
             c["duration_s"], c["sample_rate"], c["created_at"])
            for c in clips
        ],
    )  # fmt: skip
    insert_queue(
        conn,
        queue["name"],
        queue["strategy"],
        queue["seed"],
        queue["per_bin"],
        queue["parameters_json"],
        queue["created_at"],
        [(c["id"], c["queue_language"], c["queue_accent"], c["wer_bin"], c["error_rate"]) for c in clips],
    )


def assign_origin_uuids(conn: sqlite3.Connection, new_uuid) -> int:
    """Give every rating without one a uuid (`new_uuid(row)`, the row's id, clip_id and created_at), once: a pack's
    ratings keep the same identity however often they are written back. Returns how many were given one."""
    unsaved = "SELECT id, clip_id, created_at FROM ratings WHERE origin_uuid IS NULL ORDER BY id"
    rows = [dict(row) for row in conn.execute(unsaved)]
    conn.executemany("UPDATE ratings SET origin_uuid = ? WHERE id = ?", [(new_uuid(row), row["id"]) for row in rows])
    return len(rows)


def all_ratings_with_origin(conn: sqlite3.Connection) -> list[dict]:
    """Every rating (live and undone) in id order with its uuid and id: what a pack carries home."""
    rows = conn.execute(
        "SELECT id, origin_uuid, clip_id, annotator, rating, note, created_at, undone_at, undone_by, seconds "
        "FROM ratings ORDER BY id"
    )
    return [dict(row) for row in rows]


def update_rating_note_and_undo(conn: sqlite3.Connection, rating_id: int, rating: dict) -> None:
    """Give a pack folder's rating the note and undo state its copy in the pack file has (taken in)."""
    conn.execute(
        "UPDATE ratings SET note = ?, undone_at = ?, undone_by = ? WHERE id = ?",
        (rating.get("note"), rating.get("undone_at"), rating.get("undone_by"), rating_id),
    )


def delete_ratings_from(conn: sqlite3.Connection, rating_id: int) -> int:
    """Remove the ratings from this id on, to store them again in another order (a pack folder taking in ratings
    made elsewhere before them: `pack_folders.take_in_file_ratings`). Returns the highest id there was, which new
    ids are to stay above: an id held by a rating session elsewhere never names another rating."""
    top = conn.execute("SELECT coalesce(max(id), 0) FROM ratings").fetchone()[0]
    conn.execute("DELETE FROM ratings WHERE id >= ?", (rating_id,))
    return top


def rating_by_origin(conn: sqlite3.Connection, origin_uuid: str) -> dict | None:
    """The rating merged earlier from a pack under this uuid (id, what it says, its undo state), or None."""
    row = conn.execute(
        "SELECT id, clip_id, annotator, rating, created_at, undone_at, note FROM ratings WHERE origin_uuid = ?",
        (origin_uuid,),
    ).fetchone()
    return dict(row) if row else None


def live_home_rating_of(conn: sqlite3.Connection, clip_id: int, annotator: str, pack_uuids: list[str]) -> dict | None:
    """The annotator's newest live rating of a clip not merged from the given pack (rating, created_at), or None:
    what a pack rating conflicts with when they differ."""
    marks = ",".join("?" * len(pack_uuids))
    row = conn.execute(
        f"""SELECT rating, created_at FROM ratings WHERE clip_id = ? AND annotator = ? AND undone_at IS NULL
            AND (origin_uuid IS NULL OR origin_uuid NOT IN ({marks})) ORDER BY id DESC LIMIT 1""",
        (clip_id, annotator, *pack_uuids),
    ).fetchone()
    return dict(row) if row else None


def insert_merged_rating(
    conn: sqlite3.Connection, rating: dict, queue_id: int | None, rating_id: int | None = None
) -> int:
    """Append a rating made in a pack, with its uuid and its undo state as made there (under `rating_id` when
    given). Returns its id."""
    return conn.execute(
        """INSERT INTO ratings(id, clip_id, annotator, rating, note, created_at, queue_id, undone_at, undone_by,
                               origin_uuid, seconds)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            rating_id, rating["clip_id"], rating["annotator"], rating["rating"], rating.get("note"),
            rating["created_at"], queue_id, rating.get("undone_at"), rating.get("undone_by"), rating["origin_uuid"],
            rating.get("seconds"),
        ),
    ).lastrowid  # fmt: skip


def clip_ids_present(conn: sqlite3.Connection, clip_ids: Iterable[int]) -> set[int]:
    """Which of these clip ids exist in the project (a pack naming others is not this project's)."""
    wanted = sorted(set(clip_ids))
    found: set[int] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found.update(row[0] for row in conn.execute(f"SELECT id FROM clips WHERE id IN ({marks})", chunk))
    return found


def clip_voices(conn: sqlite3.Connection) -> dict[int, str | None]:
    """Each good clip's voice, so a rating queue can be sampled from one voice's clips."""
    rows = conn.execute(f"SELECT id, voice FROM clips WHERE status = 'ok' AND id {NOT_A_CONTROL}")
    return {row[0]: row[1] for row in rows}


# --------------------------------------------------------------------------------------------------
# Control clips and gold clips (core/qc/controls.py)


def clip_state(conn: sqlite3.Connection, clip_id: int) -> sqlite3.Row | None:
    """(status, item_id) of a clip, or None when there is none."""
    return conn.execute("SELECT status, item_id FROM clips WHERE id = ?", (clip_id,)).fetchone()


def is_control(conn: sqlite3.Connection, clip_id: int) -> bool:
    return conn.execute("SELECT 1 FROM control_clips WHERE clip_id = ?", (clip_id,)).fetchone() is not None


def insert_gold(conn: sqlite3.Connection, rows: list[tuple[int, str, str | None, str]]) -> int:
    """Mark clips gold, each (clip id, marked by, note, marked at); a clip already gold stays as it was. Returns
    how many were newly marked."""
    return conn.executemany(
        "INSERT OR IGNORE INTO gold_clips(clip_id, marked_by, note, marked_at) VALUES (?, ?, ?, ?)", rows
    ).rowcount


def delete_gold(conn: sqlite3.Connection, clip_ids: list[int]) -> int:
    marks = ",".join("?" * len(clip_ids))
    return conn.execute(f"DELETE FROM gold_clips WHERE clip_id IN ({marks})", clip_ids).rowcount


def gold_rows(conn: sqlite3.Connection) -> list[dict]:
    rows = conn.execute(
        "SELECT g.clip_id, c.language, c.part, c.text, g.marked_by, g.note, g.marked_at FROM gold_clips g "
        "JOIN clips c ON c.id = g.clip_id ORDER BY g.clip_id"
    )
    return [dict(row) for row in rows]


def gold_clip_ids(conn: sqlite3.Connection) -> list[int]:
    return [row[0] for row in conn.execute("SELECT clip_id FROM gold_clips ORDER BY clip_id")]


def agreed_correct_clip_ids(conn: sqlite3.Connection) -> list[int]:
    """Good item clips (not controls) two or more annotators rated Correct, newest live rating each, and nobody
    otherwise."""
    rows = conn.execute(
        f"""SELECT r.clip_id FROM ratings r
            JOIN (SELECT clip_id, annotator, max(id) AS id FROM ratings WHERE undone_at IS NULL
                  GROUP BY clip_id, annotator) newest ON newest.id = r.id
            JOIN clips c ON c.id = r.clip_id
            WHERE c.status = 'ok' AND c.item_id IS NOT NULL AND r.clip_id {NOT_A_CONTROL}
            GROUP BY r.clip_id HAVING count(*) >= 2 AND sum(r.rating = 'correct') = count(*) ORDER BY r.clip_id"""
    )
    return [row[0] for row in rows]


def control_rows(conn: sqlite3.Connection) -> list[tuple[int, str, str]]:
    """(clip id, kind, expected rating) of every control clip."""
    return [tuple(row) for row in conn.execute("SELECT clip_id, kind, expected FROM control_clips ORDER BY clip_id")]


def control_source_rows(conn: sqlite3.Connection, min_seconds: float) -> list[dict]:
    """Every good item clip with audio, not a control, of at least `min_seconds`: what controls are made from."""
    rows = conn.execute(
        f"""SELECT c.* FROM clips c
            WHERE c.status = 'ok' AND c.item_id IS NOT NULL AND c.sha256 IS NOT NULL AND c.id {NOT_A_CONTROL}
            AND coalesce(c.duration_s, 0) >= ? ORDER BY c.id""",
        (min_seconds,),
    )
    return [dict(row) for row in rows]


def clip_audio_hashes(conn: sqlite3.Connection) -> dict[int, str | None]:
    return dict(conn.execute("SELECT id, sha256 FROM clips").fetchall())


def insert_control(
    conn: sqlite3.Connection,
    clip: dict,
    kind: str,
    expected: str,
    source_clip_id: int,
    audio_clip_id: int,
    parameters_json: str,
    created_at: str,
    copy_transcripts: bool,
) -> int:
    """Store a control: an ordinary clips row (`clip`: its columns), its status in control_clips and, when its
    audio is the audio clip's unchanged, that clip's transcripts. Returns the clip's id."""
    columns = list(clip)
    clip_id = conn.execute(
        f"INSERT INTO clips({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        [clip[column] for column in columns],
    ).lastrowid
    conn.execute(
        "INSERT INTO control_clips(clip_id, kind, expected, source_clip_id, audio_clip_id, parameters_json, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (clip_id, kind, expected, source_clip_id, audio_clip_id, parameters_json, created_at),
    )
    if copy_transcripts:  # without their stored edit counts: made against the audio clip's text (controls are
        conn.execute(  # never screened; a count-less transcript is counted from its text if ever needed)
            "INSERT INTO transcripts(clip_id, asr, model, text, created_at) "
            "SELECT ?, asr, model, text, created_at FROM transcripts WHERE clip_id = ?",
            (clip_id, audio_clip_id),
        )
    return clip_id


def queue_control_count(conn: sqlite3.Connection, queue_id: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM rating_queue_clips q JOIN control_clips k ON k.clip_id = q.clip_id WHERE q.queue_id = ?",
        (queue_id,),
    ).fetchone()[0]
