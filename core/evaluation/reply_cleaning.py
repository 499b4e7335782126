"""Cleaning a reply before parsing.py's rules read it: NFKC, zero-width characters, `<think>` blocks,
`<answer>` tags, LaTeX, JSON answer fields, markdown decoration, and option letters of other scripts written
as A–E."""

from __future__ import annotations

import re
import unicodedata

from spokenbench.core.domain.items import LETTERS
from spokenbench.core.evaluation.answer_patterns import (
    _MARKDOWN_EMPHASIS,
    _MARKDOWN_LINE_MARKERS,
)
from spokenbench.core.evaluation.answer_words import (
    ANSWER_WORDS,
    HOMOGLYPHS,
    NATIVE_LETTERS,
)


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return text.replace("\u200b", "").replace("\ufeff", "")


_THINK = re.compile(r"(?is)<think>.*?</think>")
_ANSWER_TAG = re.compile(r"(?is)<answer>\s*(.*?)\s*</answer>")
_LATEX = (
    (re.compile(r"\\(?:textbf|mathbf|bm|boldsymbol)\s*\{([^{}]*)\}"), r"**\1**"),
    (re.compile(r"\\(?:text|mathrm|textrm|mathit|textit|emph|operatorname|mbox)\s*\{([^{}]*)\}"), r"\1"),
    (re.compile(r"\\(?:boxed|fbox)\s*\{([^{}]*)\}"), r"[[\1]]"),
)
_MATH_DELIMITERS = re.compile(r"\\[\[\]\(\)]|\$")
# a structured reply's answer field: {"answer": "D"}, {'final_answer': '(B)'}, "answer": "C) Paris"
_JSON_ANSWER = re.compile(
    r"[\"'](?i:final[_ ]?answer|correct[_ ]?answer|answer|choice|option|selected[_ ]?option|selection|letter"
    r"|prediction|respuesta|antwort|réponse|resposta|risposta|الإجابة)[\"']\s*:\s*[\"']\s*\(?([A-Za-z])[\)\.:]?"
    r"((?:\s+[^\"'\n{}]*)?)[\"']"
)
_NATIVE_TO_LATIN = {
    native: latin for script in NATIVE_LETTERS.values() for latin, native in zip(LETTERS, script) if native != "В"
}
_NATIVE_LOWER = {native.lower(): latin for native, latin in _NATIVE_TO_LATIN.items() if native.lower() != native}
_NATIVE_LETTER = re.compile(
    "|".join(
        re.escape(letter)
        for letter in sorted([*_NATIVE_TO_LATIN, *_NATIVE_LOWER, "В", "в", *HOMOGLYPHS], key=len, reverse=True)
    )
)
# words after which a native letter followed by a word is still an option letter ("الإجابة هي ب لأن …")
_LEAD_WORDS = frozenset(
    unicodedata.normalize("NFKC", word).lower()
    for words in ANSWER_WORDS.values()
    for word in words.answer + words.copula + words.option + words.correct + words.final
)
_WORD_BEFORE = re.compile(r"(\w+)\s*$")
_CYRILLIC_ORDER = frozenset("БГД")


def _is_word_char(char: str) -> bool:
    return bool(char) and unicodedata.category(char)[0] in "LMN"


def _native_readings(text: str) -> list[str]:
    """The reply with option letters of other scripts (ج, Б, Γ, ב, ख, ሐ …) written as A–E; two readings when
    it has a lone Cyrillic В (B by shape, C by the alphabet) and no other Cyrillic letter says which."""
    if text.isascii():
        return [text]
    found: list[tuple[int, int, str]] = []
    order = False  # a lone Б, Г or Д: the reply letters by the Cyrillic alphabet, so В is C
    for match in _NATIVE_LETTER.finditer(text):
        start, end, letter = match.start(), match.end(), match.group(0)
        before, after = text[start - 1 : start], text[end : end + 1]
        if _is_word_char(before) or _is_word_char(after) or after == "\u0640":
            continue  # part of a word
        order = order or letter in _CYRILLIC_ORDER
        if letter in _NATIVE_LOWER or letter == "в":
            if after != ")":
                continue  # a lower-case letter only as a label: "в)", "(β)"
        elif re.match(r"\s+\w", text[end : end + 3]) and not _leads(text[:start]):
            continue  # "В этом случае": a word, not a letter
        found.append((start, end, letter))
    if not found:
        return [text]
    vees = [latin for latin in ("C",) if order] or (["B", "C"] if any(f[2] in "Вв" for f in found) else ["C"])
    readings = []
    for vee in vees:
        pieces, position = [], 0
        for start, end, letter in found:
            upper = letter.upper() if letter in "вВ" else letter
            latin = vee if upper == "В" else _NATIVE_TO_LATIN.get(letter) or _NATIVE_LOWER.get(letter)
            latin = latin or HOMOGLYPHS[letter]
            pieces += [text[position:start], latin]
            position = end
        readings.append("".join(pieces) + text[position:])
    return readings


def _leads(before: str) -> bool:
    """Whether the text before a letter ends in a colon, a bracket or an answer word ('هي', 'گزینه')."""
    stripped = before.rstrip()
    if stripped[-1:] in (":", "(", "-", "–", "—"):
        return True
    word = _WORD_BEFORE.search(stripped)
    return bool(word) and word.group(1).lower() in _LEAD_WORDS


# Circled numbers (① ② ③ ④, and the negative ❶ ❷ ❸ ❹) label options in Korean, Japanese and Chinese tests: a
# reply "정답은 ②입니다" names the second option. Read before NFKC, which would make ② a plain 2.
_CIRCLED_NUMBERS = {
    start + offset: f"({letter})" for start in (0x2460, 0x2776) for offset, letter in enumerate(LETTERS[:10])
}


def _clean(raw: str) -> str:
    text = normalize(raw.translate(_CIRCLED_NUMBERS))
    if '"' in text or "'" in text:
        text = _JSON_ANSWER.sub(r"\nFinal answer: \1\2\n", text)
    if "<" in text:
        text = _ANSWER_TAG.sub(r"[[\1]]", _THINK.sub("\n", text))
    if "\\" in text:
        for _ in range(3):  # nested \boxed{\text{C}}
            for pattern, replacement in _LATEX:
                text = pattern.sub(replacement, text)
    if "\\" in text or "$" in text:
        text = _MATH_DELIMITERS.sub(" ", text)
    return text.strip()


def _plain(text: str) -> str:
    """Markdown decoration removed (same line structure), for the statement rules."""
    if "*" in text or "_" in text or "`" in text:
        text = _MARKDOWN_EMPHASIS.sub("", text)
    if "#" in text or ">" in text:
        text = _MARKDOWN_LINE_MARKERS.sub("", text)
    return text
