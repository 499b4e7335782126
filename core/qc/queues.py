"""Named rating queues: the stratified sample a rater works through (the app's rating session opens one by
name), and ratings committed one at a time. Creating a queue that already exists with the same sample is a
no-op, so `spokenbench sample` can simply be rerun."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from spokenbench.core.asr.screening import ScreeningSettings, ensure_screening
from spokenbench.core.audio.store import clip_exists
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc import store
from spokenbench.core.qc.controls import (
    control_clips,
    insert_controls,
    mix_in,
    plan_controls,
    render_controls,
)
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
    controls: int = 0  # hidden control clips mixed in


def sample_for_rating(
    project: Project,
    name: str,
    per_bin: int = DEFAULT_PER_BIN,
    seed: int = 0,
    replace: bool = False,
    screening: ScreeningSettings | None = None,
    controls: int = 0,
) -> SampleOutcome:
    """Screen (if transcripts changed since the last screening), sample per Appendix B.4, mix in `controls`
    hidden control clips (core/qc/controls.py) and store as queue `name`."""
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
    queue_id, created = create_queue(project, name, result, seed, per_bin, parameters, replace, controls)
    return SampleOutcome(queue_id, name, created, result, screened, controls)


def create_queue(
    project: Project,
    name: str,
    result: SampleResult,
    seed: int,
    per_bin: int,
    parameters: dict,
    replace: bool = False,
    controls: int = 0,
) -> tuple[int, bool]:
    """Store the sample as queue `name` with `controls` control clips mixed in (their audio is rendered before
    the queue's one transaction; the rows, controls included, are stored whole or not at all). An existing queue
    with the same sample and number of controls is kept as it is. How many controls a queue has is kept out of
    `parameters` (a pack copies them)."""
    clip_ids = [r.clip_id for r in result.selected]
    found = _existing_queue(project.conn, name, clip_ids, controls, replace)
    if found is not None:
        return found, False
    rendered = []
    if controls:
        planned = plan_controls(project.conn, result, controls, seed)
        rendered = render_controls(project, planned, seed, name)
    with project.transaction() as conn:
        existing = _existing_queue(conn, name, clip_ids, controls, replace)
        if existing is not None:
            return existing, False
        if replace and (old := store.queue_id_by_name(conn, name)) is not None:
            store.delete_queue(conn, old)
        sampled = [(r.clip_id, r.language, r.accent, r.wer_bin, r.error_rate) for r in result.selected]
        control_rows = insert_controls(conn, rendered)
        queue_id = store.insert_queue(
            conn,
            name,
            result.strategy,
            seed,
            per_bin,
            json.dumps(parameters, ensure_ascii=False),
            utc_now(),
            mix_in(sampled, control_rows, seed),
        )
    return queue_id, True


def _existing_queue(conn, name: str, clip_ids: list[int], controls: int, replace: bool) -> int | None:
    """The queue's id when it already holds this sample and this many controls (a rerun: nothing to do); an error
    when it holds another and `replace` was not asked; None when a new queue is to be made."""
    existing = store.queue_id_by_name(conn, name)
    if existing is None:
        return None
    known_controls = control_clips(conn)
    stored = [clip_id for clip_id in store.queue_clip_ids(conn, existing) if clip_id not in known_controls]
    if stored == clip_ids and store.queue_control_count(conn, existing) == controls and not replace:
        return existing
    if not replace:
        raise SpokenBenchError(
            f"a rating queue named '{name}' already exists with a different sample; choose another --name, "
            "or --replace it (its ratings are kept, no longer tied to the queue)"
        )
    return None


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


MAX_RATING_SECONDS = 86_400.0  # a day: longer is a clock error, not time spent listening
MAX_NOTE_CHARS = 2000


def checked_rating(rating, annotator, note=None, seconds=None) -> tuple[str, str, str | None, float | None]:
    """(rating, annotator, note, seconds) cleaned, or a SpokenBenchError saying which is wrong: the one check
    every way of rating (the screen, `spokenbench rate`, a --from file) goes through."""
    rating = (rating if isinstance(rating, str) else "").strip().lower()
    if rating not in RATINGS:
        raise SpokenBenchError(f"rating must be one of {', '.join(RATINGS)}, not '{rating}'")
    annotator = (annotator if isinstance(annotator, str) else "").strip()
    if not annotator:
        raise SpokenBenchError("a rating needs the annotator's name")
    if note is not None and not isinstance(note, str):
        raise SpokenBenchError(f"a note must be text, not {note!r}")
    note = (note or "").strip() or None
    if note is not None and len(note) > MAX_NOTE_CHARS:
        raise SpokenBenchError(f"a note is at most {MAX_NOTE_CHARS:,} characters (this one has {len(note):,})")
    if seconds is not None:
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
            raise SpokenBenchError(f"seconds must be a number, not {seconds!r}")
        if not 0 <= seconds <= MAX_RATING_SECONDS:
            raise SpokenBenchError(f"seconds must be between 0 and {MAX_RATING_SECONDS:,.0f}, not {seconds}")
        seconds = round(float(seconds), 3)
    return rating, annotator, note, seconds


def rate_clip(
    project: Project,
    clip_id: int,
    annotator: str,
    rating: str,
    note: str | None = None,
    queue: str | None = None,
    seconds: float | None = None,
) -> int:
    """Store one rating in its own transaction; returns its id. A later rating by the same annotator supersedes
    an earlier one in every report."""
    rating, annotator, note, seconds = checked_rating(rating, annotator, note, seconds)
    with project.transaction() as conn:
        queue_id = _queue_id(conn, queue) if queue else None
        _check_clip(conn, clip_id, queue_id, queue)
        return store.insert_rating(conn, clip_id, annotator, rating, note, utc_now(), queue_id, seconds)


def _check_clip(conn, clip_id: int, queue_id: int | None, queue: str | None) -> None:
    if not clip_exists(conn, clip_id):
        raise SpokenBenchError(f"no clip {clip_id} in this project")
    if queue_id is not None and not store.queue_has_clip(conn, queue_id, clip_id):
        raise SpokenBenchError(f"clip {clip_id} is not in rating queue '{queue}'")


@dataclass(frozen=True)
class RatingRow:
    """One rating of a scripted session (`spokenbench rate --from`), with where it came from for messages."""

    clip_id: int
    rating: str
    note: str | None = None
    seconds: float | None = None
    where: str = ""


def rate_clips(project: Project, queue: str, annotator: str, rows: list[RatingRow]) -> list[int]:
    """Store several ratings of one queue in one transaction, in order: every row is checked first and any
    problem (named by its `where`) stores none of them. Returns the new ratings' ids."""
    if not rows:
        raise SpokenBenchError("no ratings to store")
    annotator = checked_rating(RATINGS[0], annotator)[1]
    problems, cleaned = [], []
    with project.transaction() as conn:
        queue_id = _queue_id(conn, queue)
        for row in rows:
            try:
                rating, _, note, seconds = checked_rating(row.rating, annotator, row.note, row.seconds)
                _check_clip(conn, row.clip_id, queue_id, queue)
            except SpokenBenchError as error:
                problems.append(f"{row.where}: {error}" if row.where else str(error))
                continue
            cleaned.append((row.clip_id, rating, note, seconds))
        if problems and len(rows) == 1 and not rows[0].where:
            raise SpokenBenchError(problems[0])
        if problems:
            shown = problems[:20] + ([f"... and {len(problems) - 20} more"] if len(problems) > 20 else [])
            raise SpokenBenchError("nothing was stored:\n" + "\n".join(shown))
        now = utc_now()
        return [
            store.insert_rating(conn, clip_id, annotator, rating, note, now, queue_id, seconds)
            for clip_id, rating, note, seconds in cleaned
        ]


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
