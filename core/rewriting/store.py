"""The SQL of the rewriting workflow: diff checks of rewrites (rewrite_checks), review decisions
(rewrite_reviews) and the status they give a rewrite version, the LLM rewriting's outcome per item
(rewrite_outcomes) and its cache of answers (rewrite_requests).

Storing and reading the versioned rewrite texts themselves — what synthesis and evaluation read too — stays in
the generic project store, core/store/rewrites.py (add_rewrite, latest_rewrites). The rewriting prompt a project
overrides lives in project_meta (core/store/meta.py). Functions take an open connection; those that write leave
the transaction to the caller."""

from __future__ import annotations

import sqlite3

from spokenbench.core.store.database import utc_now

# --------------------------------------------------------------------------------------------------
# Rewrite versions as the review workflow sees them


def has_rewrites_from(conn: sqlite3.Connection, origin: str) -> bool:
    """Whether any rewrite came from `origin` (e.g. 'llm:<model>'): tells whether a step already ran."""
    return conn.execute("SELECT 1 FROM rewrites WHERE origin = ? LIMIT 1", (origin,)).fetchone() is not None


def pending_newest_rewrites(conn: sqlite3.Connection) -> list[dict]:
    """[{id, item_id, part, text}] of every part whose newest rewrite is still pending, by item and part: what
    the diff check has yet to look at (older versions no longer matter)."""
    rows = conn.execute(
        """SELECT r.id, r.item_id, r.part, r.text FROM rewrites r
           JOIN (SELECT item_id, part, max(version) AS v FROM rewrites GROUP BY item_id, part) m
             ON m.item_id = r.item_id AND m.part = r.part AND m.v = r.version
           WHERE r.status = 'pending' ORDER BY r.item_id, r.part"""
    )
    return [dict(row) for row in rows]


def newest_rewrite_status(conn: sqlite3.Connection, item_id: int, part: str) -> dict | None:
    """{id, status} of a part's newest rewrite version, which is the one a review decides on; None when the part
    has no rewrite."""
    row = conn.execute(
        "SELECT id, status FROM rewrites WHERE item_id = ? AND part = ? ORDER BY version DESC LIMIT 1",
        (item_id, part),
    ).fetchone()
    return dict(row) if row is not None else None


def parts_awaiting_review(conn: sqlite3.Connection, item_id: int) -> list[str]:
    """The item's parts whose newest rewrite is flagged, by part name: what an item-wide decision applies to."""
    rows = conn.execute(
        """SELECT r.part FROM rewrites r JOIN (SELECT part, max(version) AS v FROM rewrites WHERE item_id = ? GROUP BY part) m
           ON m.part = r.part AND m.v = r.version WHERE r.item_id = ? AND r.status = 'flagged' ORDER BY r.part""",
        (item_id, item_id),
    )
    return [row[0] for row in rows]


def mark_rewrite_flagged(conn: sqlite3.Connection, rewrite_id: int) -> None:
    """The diff check found a difference: the version waits for a person's review."""
    conn.execute("UPDATE rewrites SET status = 'flagged' WHERE id = ?", (rewrite_id,))


def mark_rewrite_reviewed(
    conn: sqlite3.Connection, rewrite_id: int, status: str, reviewer: str, reviewed_at: str
) -> None:
    """Settle a version as 'accepted' or 'rejected', recording who decided (a person, or 'auto:diff') and when."""
    conn.execute(
        "UPDATE rewrites SET status = ?, reviewer = ?, reviewed_at = ? WHERE id = ?",
        (status, reviewer, reviewed_at, rewrite_id),
    )


# --------------------------------------------------------------------------------------------------
# Diff checks and review decisions


def save_rewrite_check(
    conn: sqlite3.Connection,
    rewrite_id: int,
    flagged: bool,
    original_normalized: str,
    rewrite_normalized: str,
    diff_json: str,
    checked_at: str,
) -> None:
    """Store the diff check of one rewrite version, replacing an earlier check of it (a version is checked once
    in practice, but a rerun must not fail on it)."""
    conn.execute(
        "INSERT INTO rewrite_checks(rewrite_id, flagged, original_normalized, rewrite_normalized, diff_json, "
        "checked_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(rewrite_id) DO UPDATE SET flagged = excluded.flagged, "
        "original_normalized = excluded.original_normalized, rewrite_normalized = excluded.rewrite_normalized, "
        "diff_json = excluded.diff_json, checked_at = excluded.checked_at",
        (rewrite_id, int(flagged), original_normalized, rewrite_normalized, diff_json, checked_at),
    )


def flagged_check_rows(conn: sqlite3.Connection, pending_only: bool = True, language: str | None = None) -> list[dict]:
    """Flagged rewrite versions with their item and normalized texts, by language, item, part and version: with
    `pending_only`, only parts whose newest version is flagged and undecided (what still needs a reviewer)."""
    where = ["c.flagged = 1"]
    params: list = []
    if pending_only:
        where.append(
            "r.status = 'flagged' AND r.version = (SELECT max(version) FROM rewrites x WHERE x.item_id = r.item_id AND x.part = r.part)"
        )
    if language:
        where.append("i.language = ?")
        params.append(language)
    rows = conn.execute(
        f"""SELECT r.id, r.item_id, i.source_id, i.language, r.part, r.text, r.status, c.original_normalized,
                   c.rewrite_normalized
            FROM rewrite_checks c JOIN rewrites r ON r.id = c.rewrite_id JOIN items i ON i.id = r.item_id
            WHERE {" AND ".join(where)} ORDER BY i.language, r.item_id, r.part, r.version""",
        params,
    )
    return [dict(row) for row in rows]


def record_review(
    conn: sqlite3.Connection,
    item_id: int,
    part: str,
    rewrite_id: int | None,
    decision: str,
    edited_rewrite_id: int | None,
    reviewer: str,
    note: str | None,
    created_at: str,
) -> None:
    """Append one review decision (decisions are never overwritten: the newest per version counts). rewrite_id
    is None for a hand-written rewrite of a part that had none; an edit names the version it created."""
    conn.execute(
        "INSERT INTO rewrite_reviews(item_id, part, rewrite_id, decision, edited_rewrite_id, reviewer, note, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (item_id, part, rewrite_id, decision, edited_rewrite_id, reviewer, note, created_at),
    )


def newest_checked_rewrites(conn: sqlite3.Connection) -> list[dict]:
    """[{language, rewrite_id, flagged, decision}] for the newest diff-checked version of every (item, part), with
    its latest review decision (None while undecided): what Table 9 counts."""
    rows = conn.execute(
        """WITH latest AS (
               SELECT r.item_id, r.part, max(r.version) AS v FROM rewrites r
               JOIN rewrite_checks c ON c.rewrite_id = r.id GROUP BY r.item_id, r.part)
           SELECT i.language, r.id AS rewrite_id, c.flagged,
                  (SELECT decision FROM rewrite_reviews v WHERE v.rewrite_id = r.id ORDER BY v.id DESC LIMIT 1) AS decision
           FROM latest l JOIN rewrites r ON r.item_id = l.item_id AND r.part = l.part AND r.version = l.v
           JOIN rewrite_checks c ON c.rewrite_id = r.id JOIN items i ON i.id = r.item_id"""
    )
    return [dict(row) for row in rows]


# --------------------------------------------------------------------------------------------------
# LLM rewriting outcomes


def languages_of_manual_items(conn: sqlite3.Connection) -> list[str]:
    """The language of every item the LLM rewriting gave up on (one entry per item): they need a person."""
    rows = conn.execute(
        "SELECT i.language FROM rewrite_outcomes o JOIN items i ON i.id = o.item_id WHERE o.status = 'manual'"
    )
    return [row[0] for row in rows]


# --------------------------------------------------------------------------------------------------
# LLM rewriting jobs: the answer cache and each item's outcome


def items_with_rewrites(conn: sqlite3.Connection) -> set[int]:
    return {row[0] for row in conn.execute("SELECT DISTINCT item_id FROM rewrites")}


def items_marked_manual(conn: sqlite3.Connection) -> set[int]:
    return {row[0] for row in conn.execute("SELECT item_id FROM rewrite_outcomes WHERE status = 'manual'")}


def cached_rewrite_answer(conn: sqlite3.Connection, request_sha256: str) -> str | None:
    """The raw answer already received for this exact request: a rerun never asks twice."""
    row = conn.execute("SELECT raw_text FROM rewrite_requests WHERE request_sha256 = ?", (request_sha256,)).fetchone()
    return None if row is None else row[0]


def cached_rewrite_answers(conn: sqlite3.Connection) -> dict[str, str]:
    """Every cached raw answer by request hash (loaded once per job)."""
    return {row[0]: row[1] for row in conn.execute("SELECT request_sha256, raw_text FROM rewrite_requests")}


def store_rewrite_answer(
    conn: sqlite3.Connection, request_sha256: str, item_id: int, model: str, attempt: int, raw: str, usage: dict
) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO rewrite_requests(request_sha256, item_id, model, attempt, raw_text, input_tokens, "
        "output_tokens, latency_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            request_sha256,
            item_id,
            model,
            attempt,
            raw,
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            usage.get("latency_ms"),
            utc_now(),
        ),
    )


def store_rewrite_outcome(
    conn: sqlite3.Connection, item_id: int, status: str, model: str, attempts: int, problem: str | None
) -> None:
    """An item's rewriting outcome: 'done', 'manual' (no usable answer) or 'failed' (requests failed)."""
    conn.execute(
        "INSERT INTO rewrite_outcomes(item_id, status, model, attempts, problem, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(item_id) DO UPDATE SET status = excluded.status, model = excluded.model, "
        "attempts = excluded.attempts, problem = excluded.problem, updated_at = excluded.updated_at",
        (item_id, status, model, attempts, problem, utc_now()),
    )


def manual_rewrite_items(conn: sqlite3.Connection) -> list[dict]:
    rows = conn.execute(
        "SELECT o.item_id, i.source_id, i.language, o.attempts, o.problem FROM rewrite_outcomes o "
        "JOIN items i ON i.id = o.item_id WHERE o.status = 'manual' ORDER BY i.language, o.item_id"
    )
    return [dict(row) for row in rows]


def items_with_outcome_since(conn: sqlite3.Connection, item_ids: list[int], since: str) -> set[int]:
    """Items whose rewriting ended (done, manual or failed) after `since`: another process finished them."""
    done = set()
    for start in range(0, len(item_ids), 500):
        batch = item_ids[start : start + 500]
        rows = conn.execute(
            f"SELECT item_id FROM rewrite_outcomes WHERE updated_at >= ? AND item_id IN ({','.join('?' * len(batch))})",
            [since, *batch],
        )
        done.update(row[0] for row in rows)
    return done


# --------------------------------------------------------------------------------------------------
# Undoing a review: a new version, never a deletion


def last_undoable_review(conn: sqlite3.Connection, reviewer: str) -> dict | None:
    """The reviewer's newest decision that is still in force: the version it settled (or the edit it created) is
    still the part's newest version and still has the status the decision gave it. An undone decision no longer
    is (the undo appended a newer version), so repeated undos walk back through the reviewer's decisions."""
    row = conn.execute(
        """SELECT v.id, v.item_id, v.part, v.rewrite_id, v.decision, v.edited_rewrite_id
           FROM rewrite_reviews v
           JOIN rewrites r ON r.id = coalesce(v.edited_rewrite_id, v.rewrite_id)
           WHERE v.reviewer = ?
             AND r.version = (SELECT max(version) FROM rewrites x WHERE x.item_id = r.item_id AND x.part = r.part)
             AND r.status = CASE v.decision WHEN 'accept' THEN 'accepted' WHEN 'reject' THEN 'rejected' ELSE 'edited' END
           ORDER BY v.id DESC LIMIT 1""",
        (reviewer,),
    ).fetchone()
    return dict(row) if row is not None else None


def rewrite_check_of(conn: sqlite3.Connection, rewrite_id: int) -> dict | None:
    """A version's text with its diff check (None when it has none): what reopening it copies."""
    row = conn.execute(
        """SELECT r.text, c.flagged, c.original_normalized, c.rewrite_normalized, c.diff_json
           FROM rewrites r LEFT JOIN rewrite_checks c ON c.rewrite_id = r.id WHERE r.id = ?""",
        (rewrite_id,),
    ).fetchone()
    return dict(row) if row is not None else None
