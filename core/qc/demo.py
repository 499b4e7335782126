"""Quality-control content for the offline demo: a few LLM-style rewrites run through the real diff flagging
(some reviewed, a few left awaiting review, one planted error corrected by an edit), and a rating queue
sampled by language, accent and subject (the demo has no ASR transcripts, so no WER intervals)."""

from __future__ import annotations

from spokenbench.core.asr.screening import ensure_screening
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.qc.queues import sample_for_rating
from spokenbench.core.rewriting.flagging import FlagReport, flag_rewrites, review_rewrite
from spokenbench.core.rewriting.store import has_rewrites_from
from spokenbench.core.store import Project
from spokenbench.core.store.items import item_id_by_key
from spokenbench.core.store.rewrites import add_rewrite, latest_rewrites

DEMO_SOURCE = "demo"
DEMO_ORIGIN = "llm:demo-rewriter"
DEMO_REVIEWER = "demo-reviewer"
DEMO_QUEUE = "demo-qc"
DEMO_QUEUE_PER_LANGUAGE = 8
# Items whose hand-made rewrite the demo "LLM" repeats; English ones are then reviewed, the others left waiting.
DEMO_ITEMS = (
    ("demo/001", "en"),
    ("demo/002", "en"),
    ("demo/003", "en"),
    ("demo/001", "zh"),
    ("demo/002", "zh"),
    ("demo/001", "ko"),
    ("demo/002", "ko"),
)
# Planted mistakes of the kind the paper's reviewers found: (item, language, part) → what the "LLM" wrote.
PLANTED_ERRORS = {
    ("demo/003", "en", "option_B"): "eighty-nine grams per mole",  # digits swapped; the reviewer edits it back
    ("demo/001", "zh", "option_A"): "2和5",  # the minus sign lost; awaits review
    (
        "demo/001",
        "ko",
        "question",
    ): "x의 제곱 더하기 3x는 100이라는 방정식의 해는 무엇입니까?",  # 10 became 100; awaits review
}


def add_demo_qc(project: Project, progress: Progress | None = None) -> dict:
    """Add the demo's QC state. Takes well under a second; needs no network and no ASR; running it again
    changes nothing."""
    progress = progress or no_progress()
    flags = add_demo_reviews(project, progress)
    return add_demo_rating_queue(project, flags, progress)


def add_demo_reviews(project: Project, progress: Progress | None = None) -> FlagReport | None:
    """The demo "LLM"'s rewrites, diff-flagged, the English ones reviewed; None when they are there already (then
    nothing changes). Needs no clip, so the demo build adds them while its clips are synthesized."""
    progress = progress or no_progress()
    progress.report(0, 3, "demo rewrites")
    conn = project.conn
    if has_rewrites_from(conn, DEMO_ORIGIN):
        return None
    wanted = {}
    for source_id, language in DEMO_ITEMS:
        item_id = item_id_by_key(conn, DEMO_SOURCE, source_id, language)
        if item_id is not None:
            wanted[item_id] = (source_id, language)
    corrections = []
    with project.transaction() as tx:
        for item_id, (source_id, language) in wanted.items():
            current = latest_rewrites(tx, item_id)
            for part, row in sorted(current.items()):
                planted = PLANTED_ERRORS.get((source_id, language, part))
                add_rewrite(tx, item_id, part, planted or row["text"], DEMO_ORIGIN)
                if planted and language == "en":
                    corrections.append((item_id, part, row["text"]))
    progress.report(1, 3, "diff flagging")
    flags = flag_rewrites(project)
    for item_id, (_source_id, language) in wanted.items():
        if language != "en":
            continue
        for part, row in sorted(latest_rewrites(conn, item_id).items()):
            if row["status"] != "flagged":
                continue
            fix = next((text for i, p, text in corrections if i == item_id and p == part), None)
            if fix is not None:
                review_rewrite(
                    project, item_id, part, "edit", DEMO_REVIEWER, text=fix, note="digits swapped in the rewrite"
                )
            else:
                review_rewrite(project, item_id, part, "accept", DEMO_REVIEWER)
    return flags


def add_demo_rating_queue(project: Project, flags: FlagReport | None, progress: Progress | None = None) -> dict:
    """The simulated transcripts, their screening, the rating queue and its ratings, which need the clips; with
    `flags` None (the demo's QC there already) only the queue is looked up. Returns add_demo_qc's summary."""
    progress = progress or no_progress()
    if flags is None:
        outcome = sample_for_rating(
            project, DEMO_QUEUE, per_bin=DEMO_QUEUE_PER_LANGUAGE, seed=0
        )  # already there: a no-op
        progress.report(3, 3, "demo QC ready")
        return {
            "rewrites_checked": 0,
            "flagged": 0,
            "queue": DEMO_QUEUE,
            "queue_clips": len(outcome.result.selected),
            "strategy": outcome.result.strategy,
        }
    progress.report(2, 3, "rating queue")
    add_simulated_transcripts(project)
    ensure_screening(project)
    outcome = sample_for_rating(project, DEMO_QUEUE, per_bin=DEMO_QUEUE_PER_LANGUAGE, seed=0)
    add_demo_ratings(project)
    progress.report(3, 3, "demo QC ready")
    return {
        "rewrites_checked": flags.checked,
        "flagged": flags.flagged,
        "queue": DEMO_QUEUE,
        "queue_clips": len(outcome.result.selected),
        "strategy": outcome.result.strategy,
    }


# No ASR hears the demo's clips offline (unless a local model is installed, see docs/qc.md): two *simulated* ASR
# systems, so named wherever they appear, copy each clip's text with a few deterministic errors, so the two-ASR
# screening, its WER bins and the stratified queue have something to show. They are not evidence of any TTS error.
SIMULATED_ASR = ("simulated-asr-a", "simulated-asr-b")
SIMULATED_ASR_MODEL = "simulated (no audio heard)"
DEMO_ANNOTATORS = ("demo-annotator-1", "demo-annotator-2")


def _misheard(text: str, clip_id: int, system: int) -> str:
    """The clip's text with a system's deterministic errors: most clips heard right, some with a word (or, in
    unspaced scripts, a character) dropped or replaced, a few cut short."""
    units = text.split() if " " in text.strip() else list(text)
    joiner = " " if " " in text.strip() else ""
    if not units:
        return text
    if clip_id % 23 == system:  # cut short: lands in the highest bins
        return joiner.join(units[: max(1, len(units) // 2)])
    if clip_id % (5 + 2 * system) == 0:
        return joiner.join(units[:-1] or units)
    if clip_id % (11 + system) == 0:
        return joiner.join(["uh", *units[1:]] if joiner else ["呃", *units[1:]])
    return text


def add_simulated_transcripts(project: Project) -> None:
    """The two simulated ASR systems' transcripts of every screenable clip (once)."""
    from spokenbench.core.asr.store import asr_systems_with_transcripts, screenable_clips, store_transcripts

    if set(SIMULATED_ASR) <= asr_systems_with_transcripts(project.conn):
        return
    clips = screenable_clips(project.conn)
    with project.transaction() as conn:
        for system, asr in enumerate(SIMULATED_ASR):
            rows = [
                (clip_id, SIMULATED_ASR_MODEL, _misheard(text, clip_id, system))
                for clip_id, (_lang, text) in clips.items()
            ]
            store_transcripts(conn, asr, rows)


def add_demo_ratings(project: Project) -> None:
    """Ratings from two demo annotators on the queue's first clips (the second on fewer, overlapping the first),
    so the QC dashboard has agreement and results to show; the rest of the queue is left to rate."""
    from spokenbench.core.qc.store import clips_rated_by, insert_rating, queue_clip_ids, queue_id_by_name
    from spokenbench.core.store.database import utc_now

    queue_id = queue_id_by_name(project.conn, DEMO_QUEUE)
    if queue_id is None or clips_rated_by(project.conn, DEMO_ANNOTATORS[0]):
        return
    clips = queue_clip_ids(project.conn, queue_id)
    with project.transaction() as conn:
        for annotator, count in zip(DEMO_ANNOTATORS, (8, 6)):
            for index, clip_id in enumerate(clips[:count]):
                rating = "incorrect" if index == 3 else "acceptable" if (index + len(annotator)) % 4 == 0 else "correct"
                if annotator == DEMO_ANNOTATORS[1] and index == 2:
                    rating = "acceptable"  # one disagreement for the dashboard's list
                insert_rating(conn, clip_id, annotator, rating, None, utc_now(), queue_id)
