"""Table 9 of the BiasInEar paper: per language, the rewritten parts flagged by the diff check and the flagged
parts a reviewer confirmed as errors (decision edit or reject), each as a count and a percentage of the
language's checked parts. The unit is the item part (question or one option), which is what the paper counts:
its 2,000 per language are 400 questions × (1 question + 4 options)."""

from __future__ import annotations

from collections import Counter

from spokenbench.core.qc.layout import language_sort_key, percent, table_language

TABLE9_COLUMNS = ["language", "qc_stage", "n_questions", "pct_of_language"]
ERROR_DECISIONS = ("edit", "reject")


def rewrite_check_rows(conn) -> list[dict]:
    """The newest diff-checked version of every (item, part), with its language, flag and latest review decision."""
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


def rewrite_qc(conn) -> dict:
    """Table 9 rows plus the counts behind them (checked, awaiting review, accepted after review) per language."""
    checked, flagged, errors, pending, accepted = Counter(), Counter(), Counter(), Counter(), Counter()
    for row in rewrite_check_rows(conn):
        language = row["language"]
        checked[language] += 1
        if row["flagged"]:
            flagged[language] += 1
            if row["decision"] in ERROR_DECISIONS:
                errors[language] += 1
            elif row["decision"] is None:
                pending[language] += 1
            else:
                accepted[language] += 1
    table = []
    for language in sorted(checked, key=language_sort_key):
        for stage, counts in (("flagged", flagged), ("verified_error", errors)):
            table.append(
                {
                    "language": table_language(language),
                    "qc_stage": stage,
                    "n_questions": counts[language],
                    "pct_of_language": percent(counts[language], checked[language]),
                }
            )
    manual = Counter(
        row[0]
        for row in conn.execute(
            "SELECT i.language FROM rewrite_outcomes o JOIN items i ON i.id = o.item_id WHERE o.status = 'manual'"
        )
    )
    by_language = {
        language: {
            "parts_checked": checked[language],
            "flagged": flagged[language],
            "verified_errors": errors[language],
            "awaiting_review": pending[language],
            "accepted_after_review": accepted[language],
            "items_marked_manual": manual[language],
        }
        for language in sorted(set(checked) | set(manual), key=language_sort_key)
    }
    return {"table9": table, "by_language": by_language}
