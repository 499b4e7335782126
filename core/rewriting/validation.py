"""Checking an LLM's rewrite before it is stored: JSON with a question and exactly as many options as the item,
none empty, none merged into another, and written in a script plausible for the item's language. A failed
check is a sentence the retry prompt hands back to the model."""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass

from spokenbench.core.domain.items import Item

# The script(s) a language is written in; Latin is tolerated everywhere for abbreviations (ATP, DNA, x).
EXPECTED_SCRIPTS = {
    "en": {"latin"},
    "fr": {"latin"},
    "de": {"latin"},
    "es": {"latin"},
    "it": {"latin"},
    "pt": {"latin"},
    "nl": {"latin"},
    "sv": {"latin"},
    "id": {"latin"},
    "vi": {"latin"},
    "tr": {"latin"},
    "pl": {"latin"},
    "zh": {"han"},
    "ja": {"han", "kana"},
    "ko": {"hangul"},
    "ru": {"cyrillic"},
    "uk": {"cyrillic"},
    "el": {"greek"},
    "ar": {"arabic"},
    "fa": {"arabic"},
    "he": {"hebrew"},
    "hi": {"devanagari"},
    "bn": {"bengali"},
    "th": {"thai"},
}
MIN_SCRIPT_SHARE = 0.5
_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?|\n?\s*```\s*$")


def script_of(char: str) -> str | None:
    """The writing system of a letter, or None for digits, punctuation, symbols and spaces."""
    if not char.isalpha():
        return None
    code = ord(char)
    if code < 0x250 or 0x1E00 <= code <= 0x1EFF or 0xFF21 <= code <= 0xFF5A:
        return "latin"
    if 0xAC00 <= code <= 0xD7AF or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return "hangul"
    if 0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x2FFFF:
        return "han"
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF:
        return "kana"
    if 0x0370 <= code <= 0x03FF:
        return "greek"
    if 0x0400 <= code <= 0x04FF:
        return "cyrillic"
    name = unicodedata.name(char, "")
    for script in ("ARABIC", "HEBREW", "DEVANAGARI", "BENGALI", "THAI"):
        if name.startswith(script):
            return script.lower()
    return name.split(" ")[0].lower() if name else "other"


def script_counts(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for char in text:
        script = script_of(char)
        if script:
            counts[script] = counts.get(script, 0) + 1
    return counts


def _share(counts: dict[str, int], scripts: set[str]) -> float:
    total = sum(counts.values())
    return sum(counts.get(s, 0) for s in scripts) / total if total else 1.0


def script_problem(language: str, original: str, rewritten: str, what: str) -> str | None:
    """Why `rewritten` is not plausible as `language`, or None. Two checks: no letters of a script foreign to the
    language that the original did not already contain, and a text mostly in the language's script stays so."""
    expected = EXPECTED_SCRIPTS.get(language.split("-")[0].lower())
    if expected is None:
        return None  # a language we hold no script for: nothing to check against
    before, after = script_counts(original), script_counts(rewritten)
    foreign = sorted(set(after) - expected - {"latin"} - set(before))
    if foreign:
        return f"{what} contains {', '.join(foreign)} letters, which do not belong in {language} text"
    if _share(before, expected) >= MIN_SCRIPT_SHARE > _share(after, expected):
        return f"{what} is not written in {language} (only {_share(after, expected):.0%} of its letters are {'/'.join(sorted(expected))})"
    return None


@dataclass(frozen=True)
class RewriteAnswer:
    question: str
    options: tuple[str, ...]


class InvalidAnswer(ValueError):
    """The answer cannot be used; the message says why, in words the model can act on."""


def extract_json_object(raw: str):
    """The JSON object in a reply, tolerating a code fence or a sentence around it."""
    text = _FENCE.sub("", raw.strip())
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end <= start:
        raise InvalidAnswer("the reply is not JSON (no JSON object found)")
    try:
        return json.loads(text[start : end + 1])
    except json.JSONDecodeError as error:
        raise InvalidAnswer(f"the reply is not valid JSON ({error.msg} at character {error.pos})") from None
    except (ValueError, RecursionError) as error:  # a number of more than 4,300 digits, or nesting too deep
        raise InvalidAnswer(f"the reply is not usable JSON ({type(error).__name__}: {str(error)[:80]})") from None


def validate_answer(raw: str | None, item: Item) -> RewriteAnswer:
    """Parse and check one reply for `item`; raises InvalidAnswer."""
    if not raw or not raw.strip():
        raise InvalidAnswer("the reply is empty")
    data = extract_json_object(raw)
    if not isinstance(data, dict):
        raise InvalidAnswer("the reply is JSON but not an object with 'question' and 'options'")
    question, options = data.get("question"), data.get("options")
    if not isinstance(question, str):
        raise InvalidAnswer("the JSON has no 'question' string")
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise InvalidAnswer("the JSON has no 'options' list of strings")
    expected = len(item.options)
    if len(options) != expected:
        raise InvalidAnswer(f"expected {expected} options, got {len(options)}")
    if not question.strip():
        raise InvalidAnswer("the question is empty")
    for option, text in zip(item.options, options):
        if not text.strip():
            raise InvalidAnswer(f"option {option.letter} is empty")
    normalized = [" ".join(o.split()).lower() for o in options]
    for i in range(expected):
        for j in range(i + 1, expected):
            original_same = (
                " ".join(item.options[i].text.split()).lower() == " ".join(item.options[j].text.split()).lower()
            )
            if normalized[i] == normalized[j] and not original_same:
                raise InvalidAnswer(f"options {item.options[i].letter} and {item.options[j].letter} became identical")
    problem = script_problem(item.language, item.question, question, "the question")
    for option, text in zip(item.options, options):
        problem = problem or script_problem(item.language, option.text, text, f"option {option.letter}")
    if problem:
        raise InvalidAnswer(problem)
    return RewriteAnswer(question.strip(), tuple(o.strip() for o in options))
