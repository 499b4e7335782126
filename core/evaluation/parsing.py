"""Extracting the chosen option from a model's raw answer.

Rules, strongest first; the first tier that finds anything decides:
1. the last non-empty line names exactly one letter in an answer form ("Answer: [[C]]", "答案：C") — so a
   chain of thought that ends in an answer is read by its ending;
2. `[[X]]` anywhere;
3. answer phrases: "Answer: C", "The answer is (C)", "I choose C", Chinese 答案是C / 选C / 选项C, Korean
   정답은 C / 답: C / C번 / C입니다;
4. the whole reply is one letter, maybe decorated: "C", "(C)", "**C**", "C.", or it starts "C. text";
5. emphasised letters anywhere: "**C**", "(C)", "【C】";
6. an echoed option text instead of a letter (also what unlabelled presentations ask for);
7. a refusal or a neutral answer ("Cannot be determined", 无法确定, 알 수 없습니다).
Within a tier, several different letters make the answer ambiguous. Text is NFKC-normalised first, so
full-width letters and punctuation (Ｃ, （Ｃ）, 答案：Ｃ) read like ASCII. A letter beyond the options is a
failure, the neutral option's letter a neutral answer. Letters are presented letters; `map_to_original`
turns one into the original option through the stored permutation."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from spokenbench.core.items import LETTERS

PARSE_STATUSES = ("ok", "failed", "ambiguous", "refusal")

_NOT_LETTER_AFTER = r"(?![A-Za-z])"
_NOT_LETTER_BEFORE = r"(?<![A-Za-z])"
_DECOR = r"[\s\*_\(\[【「『\"'“‘]*"

_BRACKETED = re.compile(r"\[\[\s*([^\[\]\n]{1,200}?)\s*\]\]")
_ANSWER_PHRASES = re.compile(
    "(?:"
    + "|".join(
        [
            # English
            r"(?i:\b(?:final\s+|correct\s+|best\s+|right\s+)?answer(?:\s+is|\s+would\s+be|\s*[:：\-=])?)"
            + r"\s*(?i:option|choice|letter)?",
            r"(?i:\bthe\s+(?:correct\s+|best\s+|right\s+)?(?:option|choice)\s+is)",
            r"(?i:\bI\s+(?:would\s+)?(?:choose|pick|select|go\s+with))\s*(?i:option|choice)?",
            # Chinese
            r"(?:正确)?答案(?:应该)?(?:是|为|选)?\s*[:：]?\s*(?:选项)?",
            r"选(?:择)?(?:项)?",
            # Korean
            r"(?:정답|답)(?:은|는|이|:)?\s*[:：]?",
        ]
    )
    + ")"
    + _DECOR
    + _NOT_LETTER_BEFORE
    + r"([A-Z])"
    + _NOT_LETTER_AFTER
)
_ALTERNATIVE = re.compile(r"[\*\)\]】」』]*\s*(?:or|/|或者?|또는)\s*" + _DECOR + r"([A-Z])" + _NOT_LETTER_AFTER)
_KOREAN_SUFFIX = re.compile(_NOT_LETTER_BEFORE + r"([A-Z])\s*(?:번|입니다|이에요|예요)")
_LETTER_LIST = re.compile(
    r"^[\*\(\[]*([A-Z])[\*\)\]]*\s*(?:or|and|/|,|或者?|和|또는)\s*[\*\(\[]*([A-Z])[\*\)\]]*[\.。]?$"
)
_WHOLE = re.compile(r"^\(?([A-Z])\)?[\.\):]?$")
_LEADING = re.compile(r"^[\s\*_#>\"'“‘]*\(?([A-Z])(?:[\.\):]|\s*[-–—])\s+\S")
_EMPHASIS = re.compile(r"\*\*\s*\(?([A-Z])\)?\s*\*\*|" + _NOT_LETTER_BEFORE + r"\(([A-Z])\)|【([A-Z])】|「([A-Z])」")

_NEUTRAL_PHRASES = (
    "cannot be determined",
    "can't be determined",
    "can not be determined",
    "cannot determine",
    "can't determine",
    "unable to determine",
    "not possible to determine",
    "impossible to determine",
    "无法确定",
    "不能确定",
    "无法判断",
    "不能判断",
    "알 수 없",
    "판단할 수 없",
    "확인할 수 없",
)
_REFUSAL_PHRASES = (
    "i cannot answer",
    "i can't answer",
    "i can not answer",
    "i'm unable",
    "i am unable",
    "i cannot help",
    "i can't help",
    "i won't",
    "i will not",
    "i cannot choose",
    "i can't choose",
    "i don't know",
    "i do not know",
    "none of the options",
    "i'm sorry",
    "i am sorry",
    "as an ai",
    "无法回答",
    "不能回答",
    "我无法",
    "我不能",
    "抱歉",
    "对不起",
    "답변할 수 없",
    "답할 수 없",
    "대답할 수 없",
    "모르겠",
    "죄송",
)


@dataclass(frozen=True)
class ParsedAnswer:
    letter: str | None  # presented letter; None unless status is 'ok'
    status: str  # one of PARSE_STATUSES
    detail: str | None = None  # 'neutral', 'refusal', 'option text', 'several letters: A, C', ...


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    return text.replace("\u200b", "").replace("\ufeff", "")


def parse_answer(
    raw: str | None,
    letters: str = "ABCD",
    option_texts: dict[str, str] | None = None,
    neutral_letter: str | None = None,
    neutral_text: str | None = None,
) -> ParsedAnswer:
    """Parse one raw answer. `letters` are the presented letters of the real options; `option_texts` maps
    each presented letter to the option text the model saw or heard (for echoed answers)."""
    if raw is None or not raw.strip():
        return ParsedAnswer(None, "failed", "empty reply")
    text = normalize(raw).strip()
    for tier in (_final_line, _bracketed, _phrases, _whole_reply, _emphasis):
        found = tier(text)
        if found:
            return _decide(found, letters, neutral_letter)
    echoed = _echoed_option(text, option_texts or {}, neutral_letter, neutral_text)
    if echoed is not None:
        return echoed
    lowered = text.casefold()
    if any(phrase in lowered for phrase in _NEUTRAL_PHRASES):
        return ParsedAnswer(None, "refusal", "neutral")
    if any(phrase in lowered for phrase in _REFUSAL_PHRASES):
        return ParsedAnswer(None, "refusal", "refusal")
    return ParsedAnswer(None, "failed", "no answer found")


def map_to_original(letter: str | None, option_order: str) -> str | None:
    """The original option behind presented `letter` ('B' under 'DCBA' → 'C')."""
    if letter is None:
        return None
    index = LETTERS.index(letter)
    return option_order[index] if index < len(option_order) else None


# --------------------------------------------------------------------------------------------------


def _decide(found: list[str], letters: str, neutral_letter: str | None) -> ParsedAnswer:
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1:
        return ParsedAnswer(None, "ambiguous", f"several letters: {', '.join(distinct)}")
    letter = distinct[0]
    if neutral_letter and letter == neutral_letter:
        return ParsedAnswer(None, "refusal", "neutral")
    if letter not in letters:
        return ParsedAnswer(None, "failed", f"letter {letter} is not an option")
    return ParsedAnswer(letter, "ok")


def _answer_letters(text: str) -> list[str]:
    return _bracketed(text) + _phrases(text)


def _final_line(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return []  # a one-line reply is handled by the general tiers
    found = list(dict.fromkeys(_answer_letters(lines[-1])))
    return found if len(found) == 1 else []


def _bracketed(text: str) -> list[str]:
    return [m.upper() for m in (m.group(1) for m in _BRACKETED.finditer(text)) if len(m) == 1 and m.isalpha()]


def _phrases(text: str) -> list[str]:
    found = []
    for match in _ANSWER_PHRASES.finditer(text):
        found.append(match.group(1))
        alternative = _ALTERNATIVE.match(text, match.end())  # "Answer: A or C" names two letters
        if alternative:
            found.append(alternative.group(1))
    return found + [m.group(1) for m in _KOREAN_SUFFIX.finditer(text)]


def _whole_reply(text: str) -> list[str]:
    listed = _LETTER_LIST.match(text.strip())
    if listed:  # "A or B", "A/C": nothing but letters
        return [letter for letter in listed.groups() if letter]
    stripped = re.sub(r"[\s\*_#`\"'“”‘’]+", "", text)
    stripped = stripped.rstrip("。.!！")
    match = _WHOLE.match(stripped)
    if match:
        return [match.group(1)]
    first_line = text.splitlines()[0] if text else ""
    match = _LEADING.match(first_line)
    return [match.group(1)] if match else []


def _emphasis(text: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _EMPHASIS.finditer(text)]


def _squash(text: str) -> str:
    """Casefolded, without spaces and punctuation, so echoed text compares across formatting and scripts."""
    text = normalize(text).casefold()
    return "".join(ch for ch in text if ch.isalnum())


def _echoed_option(
    text: str, option_texts: dict[str, str], neutral_letter: str | None, neutral_text: str | None
) -> ParsedAnswer | None:
    bracketed = [m.group(1) for m in _BRACKETED.finditer(text)]
    candidate = bracketed[-1] if bracketed else re.sub(r"(?i)^\W*(?:final\s+)?answer\s*[:：\-]?\s*", "", text)
    target = _squash(candidate)
    if not target:
        return None
    choices = dict(option_texts)
    if neutral_letter and neutral_text:
        choices[neutral_letter] = neutral_text
    squashed = {letter: _squash(option) for letter, option in choices.items() if _squash(option)}
    exact = [letter for letter, option in squashed.items() if option == target]
    if len(exact) == 1:
        return _echo_result(exact[0], neutral_letter)
    contained = [letter for letter, option in squashed.items() if len(option) >= 2 and option in target]
    # "the sun" inside "the sun's corona": keep only options not contained in another matched option
    contained = [a for a in contained if not any(a != b and squashed[a] in squashed[b] for b in contained)]
    if len(contained) == 1:
        return _echo_result(contained[0], neutral_letter)
    if len(contained) > 1:
        return ParsedAnswer(None, "ambiguous", "several option texts: " + ", ".join(sorted(contained)))
    return None


def _echo_result(letter: str, neutral_letter: str | None) -> ParsedAnswer:
    if neutral_letter and letter == neutral_letter:
        return ParsedAnswer(None, "refusal", "neutral")
    return ParsedAnswer(letter, "ok", "option text")
