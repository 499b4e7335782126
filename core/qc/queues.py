"""Named rating queues: the stratified sample a rater works through (the app's rating session opens one by
name), and ratings committed one at a time. Creating a queue that already exists with the same sample is a
no-op, so `spokenbench sample` can simply be rerun."""

from __future__ import annotations

import json
from dataclasses import dataclass

from spokenbench.core.asr.screening import ScreeningSettings, ensure_screening
from spokenbench.core.audio.store import clip_exists
from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.qc import store
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
    metric: str | None = None  # 'wer' or 'cer', as screened


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
        existing = store.queue_id_by_name(conn, name)
        if existing is not None:
            if store.queue_clip_ids(conn, existing) == clip_ids and not replace:
                return existing, False
            if not replace:
                raise SpokenBenchError(
                    f"a rating queue named '{name}' already exists with a different sample; choose another --name, "
                    "or --replace it (its ratings are kept, no longer tied to the queue)"
                )
            store.delete_queue(conn, existing)
        queue_id = store.insert_queue(
            conn,
            name,
            result.strategy,
            seed,
            per_bin,
            json.dumps(parameters, ensure_ascii=False),
            utc_now(),
            [(r.clip_id, r.language, r.accent, r.wer_bin, r.error_rate) for r in result.selected],
        )
    return queue_id, True


def _queue_id(conn, name: str) -> int:
    queue_id = store.queue_id_by_name(conn, name)
    if queue_id is None:
        known = store.queue_names(conn)
        raise SpokenBenchError(
            f"no rating queue named '{name}'"
            + (f"; queues: {', '.join(known)}" if known else "; create one with `spokenbench sample`")
        )
    return queue_id


def list_queues(conn) -> list[dict]:
    return store.queue_overviews(conn)


def queue_clips(conn, name: str) -> list[QueueClip]:
    return [QueueClip(*row) for row in store.queue_clip_rows(conn, _queue_id(conn, name))]


def next_unrated(conn, name: str, annotator: str) -> QueueClip | None:
    """The first clip of the queue this annotator has no live rating for (any earlier rating of the clip counts;
    an undone one does not)."""
    rated = store.clips_rated_by(conn, annotator)
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
        if not clip_exists(conn, clip_id):
            raise SpokenBenchError(f"no clip {clip_id} in this project")
        if queue_id is not None and not store.queue_has_clip(conn, queue_id, clip_id):
            raise SpokenBenchError(f"clip {clip_id} is not in rating queue '{queue}'")
        return store.insert_rating(conn, clip_id, annotator, rating, note, utc_now(), queue_id)


@dataclass(frozen=True)
class UndoneRating:
    rating_id: int
    clip_id: int
    restored: tuple[int, str, str | None] | None  # the clip's earlier live rating that counts again, if any


def undo_last_rating(project: Project, annotator: str, queue: str) -> UndoneRating | None:
    """Mark the annotator's most recent live rating in the queue undone, in its own transaction (the row is kept);
    None when there is nothing left to undo. Each call takes back one more, newest first."""
    with project.transaction() as conn:
        last = store.last_live_rating_in_queue(conn, annotator, _queue_id(conn, queue))
        if last is None:
            return None
        rating_id, clip_id = last
        store.mark_rating_undone(conn, rating_id, utc_now(), annotator)
        restored = store.live_ratings_by(conn, annotator).get(clip_id)
    return UndoneRating(rating_id, clip_id, restored)


def note_rating(project: Project, rating_id: int, note: str | None) -> None:
    """Attach a note to a stored rating in its own transaction, without changing the verdict."""
    with project.transaction() as conn:
        if not store.set_rating_note(conn, rating_id, (note or "").strip() or None):
            raise SpokenBenchError(f"rating {rating_id} no longer counts (it was undone); nothing to note")
