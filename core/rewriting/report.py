"""Table 9 of the BiasInEar paper: per language, the rewritten parts flagged by the diff check and the flagged
parts a reviewer confirmed as errors (decision edit or reject), each as a count and a percentage of the
language's checked parts. The unit is the item part (question or one option), which is what the paper counts:
its 2,000 per language are 400 questions × (1 question + 4 options)."""

from __future__ import annotations

from collections import Counter

from spokenbench.core.foundation.table_layout import language_sort_key, percent, table_language
from spokenbench.core.rewriting.store import languages_of_manual_items, newest_checked_rewrites

TABLE9_COLUMNS = ["language", "qc_stage", "n_questions", "pct_of_language"]
ERROR_DECISIONS = ("edit", "reject")


def rewrite_qc(conn) -> dict:
    """Table 9 rows plus the counts behind them (checked, awaiting review, accepted after review) per language."""
    checked, flagged, errors, pending, accepted = Counter(), Counter(), Counter(), Counter(), Counter()
    for row in newest_checked_rewrites(conn):
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
    manual = Counter(languages_of_manual_items(conn))
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
