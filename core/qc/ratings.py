"""Rating results: Table 3's layout (Correct / Acceptable / Incorrect per language), the same per WER interval,
and — with several annotators — their agreement (Fleiss' κ over all, Cohen's κ per pair) and the clips they
disagree on.

Each annotator's newest rating of a clip counts. A clip rated by several annotators is counted once in the
tables, under its consensus: the majority rating, a tie going to the more severe rating (incorrect before
acceptable before correct), so a disagreement never makes a clip look better than one rater heard it."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import numpy as np

from spokenbench.core.asr.scoring import bin_label
from spokenbench.core.foundation.table_layout import language_sort_key, percent, table_language
from spokenbench.core.metrics.agreement import cohen_kappa_from_tables, fleiss_kappa_by_group
from spokenbench.core.qc.store import newest_ratings

TABLE3_ORDER = ("incorrect", "acceptable", "correct")  # as the paper's Table 3 lists them
SEVERITY = {rating: index for index, rating in enumerate(TABLE3_ORDER)}
TABLE3_COLUMNS = ["language", "rating", "n_clips", "pct_of_language"]
TABLE3_BY_BIN_COLUMNS = [
    "wer_interval_order",
    "wer_interval",
    "language",
    "rating",
    "n_clips",
    "pct_of_language_interval",
]


def consensus(ratings: list[str]) -> str:
    counts = Counter(ratings)
    top = max(counts.values())
    return min((r for r, n in counts.items() if n == top), key=SEVERITY.__getitem__)


def rating_results(conn, queue: str | None = None, exclude_annotators: tuple[str, ...] = ()) -> dict:
    """Table 3 and the rest from every annotator's ratings but those of `exclude_annotators`; control clips
    never count."""
    rows = [row for row in newest_ratings(conn, queue) if row["annotator"] not in exclude_annotators]
    by_clip: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        by_clip[row["clip_id"]].append(row)
    per_language: dict[str, Counter] = defaultdict(Counter)
    per_bin: dict[tuple, Counter] = defaultdict(Counter)
    for clip_rows in by_clip.values():
        first = clip_rows[0]
        verdict = consensus([r["rating"] for r in clip_rows])
        per_language[first["language"]][verdict] += 1
        per_bin[(first["wer_bin"], first["language"])][verdict] += 1
    table3 = []
    for language in sorted(per_language, key=language_sort_key):
        total = sum(per_language[language].values())
        for rating in TABLE3_ORDER:
            n = per_language[language][rating]
            table3.append(
                {
                    "language": table_language(language),
                    "rating": rating,
                    "n_clips": n,
                    "pct_of_language": percent(n, total),
                }
            )
    by_bin = []
    bins_seen = sorted({b for b, _ in per_bin}, key=lambda b: -1 if b is None else b)
    for wer_bin in bins_seen:
        for language in sorted({lang for b, lang in per_bin if b == wer_bin}, key=language_sort_key):
            counts = per_bin[(wer_bin, language)]
            total = sum(counts.values())
            for rating in TABLE3_ORDER:
                by_bin.append(
                    {
                        "wer_interval_order": None if wer_bin is None else wer_bin + 1,
                        "wer_interval": bin_label(wer_bin),
                        "language": table_language(language),
                        "rating": rating,
                        "n_clips": counts[rating],
                        "pct_of_language_interval": percent(counts[rating], total),
                    }
                )
    return {
        "rated_clips": len(by_clip),
        "ratings": len(rows),
        "annotators": sorted({r["annotator"] for r in rows}),
        "table3": table3,
        "table3_by_wer_interval": by_bin,
        "agreement": agreement(by_clip),
        "disagreements": disagreements(by_clip),
    }


def _none_if_nan(value: float) -> float | None:
    return None if value is None or np.isnan(value) else round(float(value), 4)


def agreement(by_clip: dict[int, list[dict]]) -> dict:
    """Fleiss' κ over every clip rated by two or more annotators (overall and per language) and Cohen's κ for
    each pair of annotators on the clips both rated."""
    annotators = sorted({r["annotator"] for rows in by_clip.values() for r in rows})
    shared = {clip: rows for clip, rows in by_clip.items() if len(rows) >= 2}
    result = {
        "annotators": annotators,
        "clips_rated_by_several": len(shared),
        "fleiss_kappa": None,
        "fleiss_kappa_by_language": {},
        "clips_rated_by_several_by_language": {},
        "pairs": [],
    }
    if not shared:
        return result
    languages = sorted({rows[0]["language"] for rows in shared.values()}, key=language_sort_key)
    counts = np.zeros((len(shared), len(TABLE3_ORDER)))
    group = np.zeros(len(shared), dtype=np.int64)
    for index, rows in enumerate(shared.values()):
        for row in rows:
            counts[index, SEVERITY[row["rating"]]] += 1
        group[index] = languages.index(rows[0]["language"])
    overall, _ = fleiss_kappa_by_group(np.zeros(len(shared), dtype=np.int64), counts, 1)
    by_language, _ = fleiss_kappa_by_group(group, counts, len(languages))
    result["fleiss_kappa"] = _none_if_nan(overall[0])
    result["fleiss_kappa_by_language"] = {
        table_language(lang): _none_if_nan(k) for lang, k in zip(languages, by_language)
    }
    result["clips_rated_by_several_by_language"] = {
        table_language(lang): int(n) for lang, n in zip(languages, np.bincount(group, minlength=len(languages)))
    }
    for a, b in itertools.combinations(annotators, 2):
        table = np.zeros((len(TABLE3_ORDER), len(TABLE3_ORDER)))
        for rows in shared.values():
            given = {r["annotator"]: r["rating"] for r in rows}
            if a in given and b in given:
                table[SEVERITY[given[a]], SEVERITY[given[b]]] += 1
        if table.sum():
            kappa, raw = cohen_kappa_from_tables(table)
            result["pairs"].append(
                {
                    "annotators": [a, b],
                    "shared_clips": int(table.sum()),
                    "cohen_kappa": _none_if_nan(float(kappa)),
                    "raw_agreement": _none_if_nan(float(raw)),
                }
            )
    return result


def disagreements(by_clip: dict[int, list[dict]]) -> list[dict]:
    """Clips whose annotators gave different ratings, with every rating and note."""
    listed = []
    for clip_id, rows in sorted(by_clip.items()):
        if len({r["rating"] for r in rows}) > 1:
            first = rows[0]
            listed.append(
                {
                    "clip_id": clip_id,
                    "item": first["source_id"],
                    "language": first["language"],
                    "accent": first["accent"],
                    "voice": first["voice"],
                    "part": first["part"],
                    "wer_interval": bin_label(first["wer_bin"]),
                    "ratings": {r["annotator"]: r["rating"] for r in rows},
                    "notes": {r["annotator"]: r["note"] for r in rows if r["note"]},
                }
            )
    return listed
