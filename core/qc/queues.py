"""Named rating queues: the stratified sample a rater works through (the app's rating session opens one by
name), and ratings committed one at a time. Creating a queue that already exists with the same sample is a
no-op, so `spokenbench sample` can simply be rerun."""

from __future__ import annotations

import json
from dataclasses import dataclass

from spokenbench.core.asr.screening import ScreeningSettings, ensure_screening
from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.qc.sampling import DEFAULT_PER_BIN, SampleResult, load_clip_records, stratified_sample
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now

RATINGS = ("correct", "acceptable", "incorrect")


@dataclass(frozen=True)
class QueueClip:
    position: int
    clip_id: int
    language: str
    accent: str | None
    voice: str | None
    part: str
    text: str  # what the clip should say
    item: str  # the item's source id
    sha256: str
    audio_format: str
    wer_bin: int | None
    error_rate: float | None


@dataclass
class SampleOutcome:
    queue_id: int
    name: str
    created: bool  # False: an identical queue already existed
    result: SampleResult
    screened_clips: int


def sample_for_rating(
    project: Project,
    name: str,
    per_bin: int = DEFAULT_PER_BIN,
    seed: int = 0,
    replace: bool = False,
    screening: ScreeningSettings | None = None,
) -> SampleOutcome:
    """Screen (if transcripts changed since the last screening), sample per Appendix B.4, store as queue `name`."""
    name = (name or "").strip()
    if not name:
        raise SpokenBenchError("a rating queue needs a name (--name)")
    screened = ensure_screening(project, screening)
    records = load_clip_records(project.conn)
    if not records:
        raise SpokenBenchError("the project has no synthesized clips to sample; run `spokenbench synthesize` first")
    result = stratified_sample(records, per_bin, seed)
    parameters = {
        "per_bin": per_bin,
        "seed": seed,
        "strategy": result.strategy,
        "strata": [s.as_dict() for s in result.strata],
        "note": result.note,
    }
    queue_id, created = create_queue(project, name, result, seed, per_bin, parameters, replace)
    return SampleOutcome(queue_id, name, created, result, screened)


def create_queue(
    project: Project, name: str, result: SampleResult, seed: int, per_bin: int, parameters: dict, replace: bool = False
) -> tuple[int, bool]:
    clip_ids = [r.clip_id for r in result.selected]
    with project.transaction() as conn:
        existing = conn.execute("SELECT id FROM rating_queues WHERE name = ?", (name,)).fetchone()
        if existing is not None:
            stored = [
                r[0]
                for r in conn.execute(
                    "SELECT clip_id FROM rating_queue_clips WHERE queue_id = ? ORDER BY position", (existing[0],)
                )
            ]
            if stored == clip_ids and not replace:
                return existing[0], False
            if not replace:
                raise SpokenBenchError(
                    f"a rating queue named '{name}' already exists with a different sample; choose another --name, "
                    "or --replace it (its ratings are kept, no longer tied to the queue)"
                )
            conn.execute("DELETE FROM rating_queues WHERE id = ?", (existing[0],))
        cursor = conn.execute(
            "INSERT INTO rating_queues(name, strategy, seed, per_bin, parameters_json, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (name, result.strategy, seed, per_bin, json.dumps(parameters, ensure_ascii=False), utc_now()),
        )
        queue_id = cursor.lastrowid
        conn.executemany(
            "INSERT INTO rating_queue_clips(queue_id, position, clip_id, language, accent, wer_bin, error_rate) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (queue_id, position, r.clip_id, r.language, r.accent, r.wer_bin, r.error_rate)
                for position, r in enumerate(result.selected, start=1)
            ],
        )
    return queue_id, True


def _queue_id(conn, name: str) -> int:
    row = conn.execute("SELECT id FROM rating_queues WHERE name = ?", (name,)).fetchone()
    if row is None:
        known = [r[0] for r in conn.execute("SELECT name FROM rating_queues ORDER BY name")]
        raise SpokenBenchError(
            f"no rating queue named '{name}'"
            + (f"; queues: {', '.join(known)}" if known else "; create one with `spokenbench sample`")
        )
    return row[0]


def list_queues(conn) -> list[dict]:
    queues = []
    for row in conn.execute("SELECT id, name, strategy, seed, per_bin, created_at FROM rating_queues ORDER BY id"):
        size = conn.execute("SELECT count(*) FROM rating_queue_clips WHERE queue_id = ?", (row["id"],)).fetchone()[0]
        by_annotator = dict(
            conn.execute(
                "SELECT annotator, count(DISTINCT r.clip_id) FROM ratings r JOIN rating_queue_clips q ON q.clip_id = r.clip_id "
                "AND q.queue_id = ? GROUP BY annotator ORDER BY annotator",
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


def queue_clips(conn, name: str) -> list[QueueClip]:
    queue_id = _queue_id(conn, name)
    rows = conn.execute(
        """SELECT q.position, q.clip_id, q.language, q.accent, c.voice, c.part, c.text, i.source_id, c.sha256,
                  c.audio_format, q.wer_bin, q.error_rate
           FROM rating_queue_clips q JOIN clips c ON c.id = q.clip_id JOIN items i ON i.id = c.item_id
           WHERE q.queue_id = ? ORDER BY q.position""",
        (queue_id,),
    )
    return [QueueClip(*row) for row in rows]


def next_unrated(conn, name: str, annotator: str) -> QueueClip | None:
    """The first clip of the queue this annotator has not rated yet (any earlier rating of the clip counts)."""
    rated = {r[0] for r in conn.execute("SELECT DISTINCT clip_id FROM ratings WHERE annotator = ?", (annotator,))}
    return next((clip for clip in queue_clips(conn, name) if clip.clip_id not in rated), None)


def rate_clip(
    project: Project, clip_id: int, annotator: str, rating: str, note: str | None = None, queue: str | None = None
) -> int:
    """Store one rating in its own transaction; returns its id. A later rating by the same annotator supersedes
    an earlier one in every report."""
    rating = (rating or "").strip().lower()
    if rating not in RATINGS:
        raise SpokenBenchError(f"rating must be one of {', '.join(RATINGS)}, not '{rating}'")
    annotator = (annotator or "").strip()
    if not annotator:
        raise SpokenBenchError("a rating needs the annotator's name")
    with project.transaction() as conn:
        queue_id = _queue_id(conn, queue) if queue else None
        if conn.execute("SELECT 1 FROM clips WHERE id = ?", (clip_id,)).fetchone() is None:
            raise SpokenBenchError(f"no clip {clip_id} in this project")
        if (
            queue_id is not None
            and conn.execute(
                "SELECT 1 FROM rating_queue_clips WHERE queue_id = ? AND clip_id = ?", (queue_id, clip_id)
            ).fetchone()
            is None
        ):
            raise SpokenBenchError(f"clip {clip_id} is not in rating queue '{queue}'")
        cursor = conn.execute(
            "INSERT INTO ratings(clip_id, annotator, rating, note, created_at, queue_id) VALUES (?, ?, ?, ?, ?, ?)",
            (clip_id, annotator, rating, note, utc_now(), queue_id),
        )
    return cursor.lastrowid
