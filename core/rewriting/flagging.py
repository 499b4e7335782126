"""Diff-based flagging of rewrites (BiasInEar Section 2.2) and the review decisions on them.

Both texts are normalized exactly as the paper says — whitespace removed, lower-cased — and compared; any
difference flags the rewrite, with a character-level diff for the reviewer. Rewriting is *meant* to change
math, units and symbols, so a flag means "a person should look", not "wrong": the paper flagged about a
quarter of its parts and confirmed 1-5 % as errors (Table 9). An unflagged rewrite says the same as the
original and is accepted automatically (reviewer 'auto:diff'); a flagged one waits for a review:
accept, edit (a corrected version is stored; the flagged one counts as a verified error) or reject (the
original text is used; also a verified error)."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from spokenbench.core.domain.items import option_part
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.rewriting import store
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.items import item_part_text, option_letters
from spokenbench.core.store.rewrites import add_rewrite

AUTO_REVIEWER = "auto:diff"
DECISIONS = ("accept", "edit", "reject")
CONTEXT_CHARS = 8


def normalize_for_diff(text: str) -> str:
    """The paper's normalization: every whitespace character removed, lower case."""
    return "".join(text.split()).lower()


def char_diff(original: str, rewritten: str) -> list[dict]:
    """Character-level differences between two normalized texts: [{op, original, rewrite, at}], where `at` is
    the position in the original."""
    matcher = difflib.SequenceMatcher(None, original, rewritten, autojunk=False)
    return [
        {"op": tag, "original": original[i1:i2], "rewrite": rewritten[j1:j2], "at": i1}
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def inline_diff(original: str, rewritten: str, context: int = CONTEXT_CHARS) -> str:
    """One line a reviewer can read: unchanged stretches shortened, changes as [-old-]{+new+}."""
    matcher = difflib.SequenceMatcher(None, original, rewritten, autojunk=False)
    pieces = []
    opcodes = matcher.get_opcodes()
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            chunk = original[i1:i2]
            first, last = index == 0, index == len(opcodes) - 1
            keep_head = 0 if first else context
            keep_tail = 0 if last else context
            if len(chunk) > keep_head + keep_tail + 1:
                chunk = chunk[:keep_head] + "…" + (chunk[len(chunk) - keep_tail :] if keep_tail else "")
            pieces.append(chunk)
        else:
            if i2 > i1:
                pieces.append(f"[-{original[i1:i2]}-]")
            if j2 > j1:
                pieces.append(f"{{+{rewritten[j1:j2]}+}}")
    return "".join(pieces)


def original_text(conn, item_id: int, part: str) -> str:
    text = item_part_text(conn, item_id, part)
    if text is None:
        raise SpokenBenchError(f"item {item_id} has no part '{part}'")
    return text


@dataclass
class FlagReport:
    checked: int = 0
    flagged: int = 0
    accepted_unchanged: int = 0


def flag_rewrites(project: Project, progress: Progress | None = None) -> FlagReport:
    """Check every part whose newest rewrite is still pending: flag it when its normalized text differs from the
    normalized original, accept it automatically otherwise. One transaction per item; rerunning only sees parts
    still pending, so an interrupted run simply continues."""
    progress = progress or no_progress()
    conn = project.conn
    rows = store.pending_newest_rewrites(conn)
    by_item: dict[int, list] = {}
    for row in rows:
        by_item.setdefault(row["item_id"], []).append(row)
    report = FlagReport()
    for done, (item_id, parts) in enumerate(by_item.items(), start=1):
        progress.check_cancelled()
        now = utc_now()
        with project.transaction() as tx:
            for row in parts:
                original = normalize_for_diff(original_text(tx, item_id, row["part"]))
                rewritten = normalize_for_diff(row["text"])
                flagged = original != rewritten
                store.save_rewrite_check(
                    tx,
                    row["id"],
                    flagged,
                    original,
                    rewritten,
                    json.dumps(char_diff(original, rewritten), ensure_ascii=False),
                    now,
                )
                if flagged:
                    store.mark_rewrite_flagged(tx, row["id"])
                    report.flagged += 1
                else:
                    store.mark_rewrite_reviewed(tx, row["id"], "accepted", AUTO_REVIEWER, now)
                    report.accepted_unchanged += 1
                report.checked += 1
        progress.report(done, len(by_item), f"item {item_id}")
    return report


@dataclass(frozen=True)
class FlaggedRewrite:
    rewrite_id: int
    item_id: int
    source_id: str
    language: str
    part: str
    original: str
    rewrite: str
    diff: str  # inline, on the normalized texts
    status: str  # 'flagged' while awaiting review; else the decision's status

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def flagged_rewrites(conn, pending_only: bool = True, language: str | None = None) -> list[FlaggedRewrite]:
    """Flagged parts (by default those still awaiting review), with their diffs, in item order."""
    rows = store.flagged_check_rows(conn, pending_only, language)
    return [
        FlaggedRewrite(
            row["id"],
            row["item_id"],
            row["source_id"],
            row["language"],
            row["part"],
            original_text(conn, row["item_id"], row["part"]),
            row["text"],
            inline_diff(row["original_normalized"], row["rewrite_normalized"]),
            row["status"],
        )
        for row in rows
    ]


def review_rewrite(
    project: Project,
    item_id: int,
    part: str,
    decision: str,
    reviewer: str,
    text: str | None = None,
    note: str | None = None,
) -> int | None:
    """Record one review decision on the newest rewrite of a part, in one transaction, with reviewer and time.
    accept: that version becomes 'accepted'; reject: it becomes 'rejected' (speech uses the original text);
    edit: `text` is stored as a new version with status 'edited' (also for a part with no rewrite yet, e.g. an
    item marked for manual rewriting). Returns the id of the version now in force (None after a reject)."""
    if decision not in DECISIONS:
        raise SpokenBenchError(f"unknown review decision '{decision}'; use one of {', '.join(DECISIONS)}")
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise SpokenBenchError("a review needs the reviewer's name")
    if decision == "edit" and not (text or "").strip():
        raise SpokenBenchError("an edit needs the corrected text")
    if decision != "edit" and text is not None:
        raise SpokenBenchError("only an edit takes a text")
    with project.transaction() as conn:
        original_text(conn, item_id, part)  # the part must exist
        latest = store.newest_rewrite_status(conn, item_id, part)
        if latest is None and decision != "edit":
            raise SpokenBenchError(f"item {item_id} {part} has no rewrite to {decision}; give the text with an edit")
        now = utc_now()
        in_force, edited = None, None
        if decision == "accept":
            store.mark_rewrite_reviewed(conn, latest["id"], "accepted", reviewer, now)
            in_force = latest["id"]
        elif decision == "reject":
            store.mark_rewrite_reviewed(conn, latest["id"], "rejected", reviewer, now)
        else:
            edited = in_force = add_rewrite(conn, item_id, part, text.strip(), "manual", "edited", reviewer)
        store.record_review(
            conn, item_id, part, latest["id"] if latest is not None else None, decision, edited, reviewer, note, now
        )
    return in_force


def review_item(project: Project, item_id: int, decision: str, reviewer: str, note: str | None = None) -> int:
    """Accept or reject every part of an item that awaits review. Returns how many parts were decided."""
    if decision == "edit":
        raise SpokenBenchError("an edit is per part: give the part and its corrected text")
    parts = store.parts_awaiting_review(project.conn, item_id)
    for part in parts:
        review_rewrite(project, item_id, part, decision, reviewer, note=note)
    return len(parts)


def item_parts_of(conn, item_id: int) -> list[str]:
    return ["question", *(option_part(letter) for letter in option_letters(conn, item_id))]


@dataclass(frozen=True)
class UndoneReview:
    review_id: int
    item_id: int
    part: str
    decision: str  # the decision that was undone
    reopened_rewrite_id: int | None  # the new flagged version; None for a hand-written part (its edit is rejected)


def undo_last_review(project: Project, reviewer: str) -> UndoneReview | None:
    """Undo the reviewer's newest decision still in force, keeping every row: the reviewed text is appended as a
    new version, flagged again with a copy of its diff check, so the part waits for review once more and Table 9
    counts it undecided. A hand-written part with no earlier rewrite has its edit rejected instead (speech falls
    back to the original). Returns what was undone, or None when nothing is left to undo."""
    reviewer = (reviewer or "").strip()
    if not reviewer:
        raise SpokenBenchError("undoing a review needs the reviewer's name")
    with project.transaction() as conn:
        review = store.last_undoable_review(conn, reviewer)
        if review is None:
            return None
        now = utc_now()
        reopened = None
        if review["rewrite_id"] is None:
            store.mark_rewrite_reviewed(conn, review["edited_rewrite_id"], "rejected", reviewer, now)
        else:
            check = store.rewrite_check_of(conn, review["rewrite_id"])
            origin = f"undo:review:{review['id']}"
            reopened = add_rewrite(conn, review["item_id"], review["part"], check["text"], origin, "flagged")
            if check["diff_json"] is not None:
                store.save_rewrite_check(
                    conn,
                    reopened,
                    bool(check["flagged"]),
                    check["original_normalized"],
                    check["rewrite_normalized"],
                    check["diff_json"],
                    now,
                )
    return UndoneReview(review["id"], review["item_id"], review["part"], review["decision"], reopened)
