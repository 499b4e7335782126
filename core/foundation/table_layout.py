"""How the QC tables name and order languages: as the BiasInEar tables do (english, chinese, korean, in that
order), other language codes after them as they are."""

from __future__ import annotations

# Table 2's layouts: "default" adds a "likely ASR hallucination" row when a clip's every transcript is one;
# "paper" is exactly the paper's four WER intervals per language, such a clip counted where its WER puts it
TABLE2_LAYOUTS = ("default", "paper")

LANGUAGE_ORDER = ("en", "zh", "ko")
TABLE_LANGUAGE_NAMES = {"en": "english", "zh": "chinese", "ko": "korean"}


def table_language(code: str) -> str:
    return TABLE_LANGUAGE_NAMES.get(code, code)


def language_sort_key(code: str) -> tuple:
    return (LANGUAGE_ORDER.index(code) if code in LANGUAGE_ORDER else len(LANGUAGE_ORDER), code)


def percent(count: int, total: int) -> float:
    """A percentage rounded to two decimals, as the paper prints them."""
    return round(100.0 * count / total, 2) if total else 0.0
