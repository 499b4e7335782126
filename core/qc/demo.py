"""Quality-control content for the offline demo: a few LLM-style rewrites run through the real diff flagging
(some reviewed, a few left awaiting review, one planted error corrected by an edit), and a rating queue
sampled by language, accent and subject (the demo has no ASR transcripts, so no WER intervals)."""

from __future__ import annotations

from spokenbench.core.progress import Progress, no_progress
from spokenbench.core.qc.queues import sample_for_rating
from spokenbench.core.rewriting.flagging import flag_rewrites, review_rewrite
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
    progress.report(0, 3, "demo rewrites")
    conn = project.conn
    if has_rewrites_from(conn, DEMO_ORIGIN):
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
    progress.report(2, 3, "rating queue")
    outcome = sample_for_rating(project, DEMO_QUEUE, per_bin=DEMO_QUEUE_PER_LANGUAGE, seed=0)
    progress.report(3, 3, "demo QC ready")
    return {
        "rewrites_checked": flags.checked,
        "flagged": flags.flagged,
        "queue": DEMO_QUEUE,
        "queue_clips": len(outcome.result.selected),
        "strategy": outcome.result.strategy,
    }
