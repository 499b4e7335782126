"""Language-aware text normalization for ASR screening. The same function is applied to the reference (the
text the clip was synthesized from) and to each transcript, so every choice here is symmetric: it can only
remove differences that do not change what was said (case, punctuation, digits versus number words), never
add one. docs/qc.md lists the choices per language and what is deliberately left alone.

- English: NFKC, lower case, numbers as words (98 → ninety eight, 9.8 → nine point eight, 4th → fourth,
  25% → twenty five percent, $80 → eighty dollars, -5 → negative five), hyphens split words, apostrophes
  dropped, other punctuation removed, "and" inside a number ("one hundred and five") dropped; WER on words.
- Chinese: NFKC, lower case, Arabic numbers read as Chinese numerals (25 → 二十五, 9.8 → 九点八, 25% → 百分之
  二十五, years digit by digit: 1682年 → 一六八二年), 两 → 二, punctuation and all spaces removed; CER.
- Korean: NFKC, lower case, decimal point → 점, % → 퍼센트, leading minus → 마이너스, thousands separators
  dropped, punctuation removed; WER on spaces (eojeol) and CER with spaces removed. Digits stay digits:
  Korean reads them natively or Sino-Korean depending on the counter, so no reading is imposed.
- Other languages: NFKC, case folding, punctuation removed; CER for languages written without spaces
  (ja, th, lo, km, my), WER otherwise.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

CHARACTER_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "yue", "wuu"})
BOTH_METRIC_LANGUAGES = frozenset({"ko"})  # WER on spaces and CER


def base_language(language: str) -> str:
    """'zh-CN' → 'zh', 'en_US' → 'en', 'cmn' → 'zh'."""
    code = re.split(r"[-_]", language.strip().lower())[0]
    return {"cmn": "zh", "kor": "ko", "eng": "en", "zho": "zh", "chi": "zh"}.get(code, code)


def primary_metric(language: str) -> str:
    """The error rate a language is binned by by default: CER where words are not separated by spaces."""
    return "cer" if base_language(language) in CHARACTER_LANGUAGES else "wer"


@dataclass(frozen=True)
class NormalizedText:
    words: tuple[str, ...]  # tokens for WER
    characters: str  # the same text without any whitespace, for CER


# --------------------------------------------------------------------------------------------------
# Shared pieces

_APOSTROPHES = re.compile(r"['’ʼ`´]")
_NON_WORD = re.compile(r"[^\w]|_", re.UNICODE)  # punctuation, symbols and whitespace → space
_SPACES = re.compile(r"\s+")
_MINUS = re.compile(r"(?:^|(?<=[\s(\[{=:,;]))[-–](?=\d)")  # a sign, not a hyphen or a subtraction
_THOUSANDS = re.compile(r"(?<![\d,])(\d{1,3}(?:,\d{3})+)(?!\d)")


def _prepare(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("−", "-")
    return _THOUSANDS.sub(lambda m: m.group(1).replace(",", ""), text)


def _finish(text: str) -> NormalizedText:
    text = _APOSTROPHES.sub("", text)
    words = tuple(_NON_WORD.sub(" ", text).split())
    return NormalizedText(words, "".join(words))


# --------------------------------------------------------------------------------------------------
# English

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen"
).split()
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (10**3, "thousand"))
_ORDINAL_IRREGULAR = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}
_CURRENCY = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yen", "₩": "won"}
ENGLISH_NUMBER_WORDS = frozenset(_ONES + [t for t in _TENS if t] + ["hundred"] + [name for _, name in _SCALES])


def english_cardinal(n: int) -> list[str]:
    """Cardinal number words without 'and' or hyphens: 1682 → one thousand six hundred eighty two."""
    if n < 0:
        return ["negative", *english_cardinal(-n)]
    if n < 20:
        return [_ONES[n]]
    if n < 100:
        tens, ones = divmod(n, 10)
        return [_TENS[tens]] + ([_ONES[ones]] if ones else [])
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        return [_ONES[hundreds], "hundred"] + (english_cardinal(rest) if rest else [])
    if n >= 10**15:
        return [_ONES[int(d)] for d in str(n)]
    for value, name in _SCALES:
        if n >= value:
            high, rest = divmod(n, value)
            return english_cardinal(high) + [name] + (english_cardinal(rest) if rest else [])
    raise AssertionError(n)  # unreachable


def english_ordinal(n: int) -> list[str]:
    words = english_cardinal(n)
    last = words[-1]
    if last in _ORDINAL_IRREGULAR:
        words[-1] = _ORDINAL_IRREGULAR[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return words


def _english_number(integer: str, fraction: str | None) -> str:
    words = english_cardinal(int(integer)) if len(integer) <= 15 else [_ONES[int(d)] for d in integer]
    if fraction:
        words += ["point", *(_ONES[int(d)] for d in fraction)]
    return " ".join(words)


_EN_CURRENCY = re.compile(r"([$€£¥₩])\s?(\d+(?:\.\d+)?)")
_EN_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?%")
_EN_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)\b")
_EN_NUMBER = re.compile(r"(\d+)(?:\.(\d+))?")


def normalize_english(text: str) -> NormalizedText:
    text = _prepare(text)
    if any(c.isdigit() for c in text):
        text = _MINUS.sub(" negative ", text)
        text = _EN_CURRENCY.sub(lambda m: f" {m.group(2)} {_CURRENCY[m.group(1)]} ", text)
        text = _EN_PERCENT.sub(r" \1 percent ", text)
        text = _EN_ORDINAL.sub(lambda m: " " + " ".join(english_ordinal(int(m.group(1)))) + " ", text)
        text = _EN_NUMBER.sub(lambda m: f" {_english_number(m.group(1), m.group(2))} ", text)
    normalized = _finish(text)
    if "and" in normalized.words:
        words = normalized.words
        kept = [
            word
            for i, word in enumerate(words)
            if not (
                word == "and"
                and 0 < i < len(words) - 1
                and words[i - 1] in ("hundred", "thousand", "million", "billion", "trillion")
                and words[i + 1] in ENGLISH_NUMBER_WORDS
            )
        ]
        normalized = NormalizedText(tuple(kept), "".join(kept))
    return normalized


# --------------------------------------------------------------------------------------------------
# Chinese

_ZH_DIGITS = "零一二三四五六七八九"
_ZH_GROUPS = ("", "万", "亿", "万亿")


def _chinese_below_10000(n: int) -> str:
    text, pending_zero = "", False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit == 0:
            pending_zero = bool(text)
        else:
            if pending_zero:
                text += "零"
                pending_zero = False
            text += _ZH_DIGITS[digit] + unit
    return text


def chinese_cardinal(n: int) -> str:
    """Chinese numerals as read aloud: 10 → 十, 105 → 一百零五, 1682 → 一千六百八十二, 10005 → 一万零五."""
    if n < 0:
        return "负" + chinese_cardinal(-n)
    if n == 0:
        return "零"
    groups = []
    while n:
        groups.append(n % 10_000)
        n //= 10_000
    if len(groups) > len(_ZH_GROUPS):
        return "".join(_ZH_DIGITS[int(d)] for d in "".join(str(g) for g in groups[::-1]))
    text, pending_zero = "", False
    for index in range(len(groups) - 1, -1, -1):
        group = groups[index]
        if group == 0:
            pending_zero = bool(text)
            continue
        if text and (pending_zero or group < 1000):
            text += "零"
        text += _chinese_below_10000(group) + _ZH_GROUPS[index]
        pending_zero = False
    return text[1:] if text.startswith("一十") else text


def _chinese_number(integer: str, fraction: str | None) -> str:
    text = chinese_cardinal(int(integer)) if len(integer) <= 16 else "".join(_ZH_DIGITS[int(d)] for d in integer)
    if fraction:
        text += "点" + "".join(_ZH_DIGITS[int(d)] for d in fraction)
    return text


_ZH_YEAR = re.compile(r"(?<!\d)(\d{4})(?=\s*年)")
_ZH_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?%")
_ZH_NUMBER = re.compile(r"(\d+)(?:\.(\d+))?")


def normalize_chinese(text: str) -> NormalizedText:
    text = _prepare(text)
    if any(c.isdigit() for c in text):
        text = _MINUS.sub("负", text)
        text = _ZH_YEAR.sub(lambda m: "".join(_ZH_DIGITS[int(d)] for d in m.group(1)), text)
        text = _ZH_PERCENT.sub(lambda m: "百分之" + m.group(1), text)
        text = _ZH_NUMBER.sub(lambda m: _chinese_number(m.group(1), m.group(2)), text)
    text = text.replace("两", "二")
    normalized = _finish(text)
    return NormalizedText(tuple(normalized.characters), normalized.characters)


# --------------------------------------------------------------------------------------------------
# Korean and everything else

_KO_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_DIGIT_SEPARATOR = re.compile(r"(?<=\d)[.,](?=\d)")


def normalize_korean(text: str) -> NormalizedText:
    text = _prepare(text)
    if any(c.isdigit() for c in text):
        text = _MINUS.sub("마이너스 ", text)
        text = _KO_DECIMAL.sub("점", text)
        text = text.replace("%", "퍼센트")
    return _finish(text)


def normalize_generic(text: str) -> NormalizedText:
    text = _DIGIT_SEPARATOR.sub("", _prepare(text).casefold())
    return _finish(text)


def normalize(text: str, language: str) -> NormalizedText:
    """Normalize `text` for comparing speech in `language` (a code such as 'en', 'zh-CN', 'ko')."""
    code = base_language(language)
    if code == "en":
        return normalize_english(text)
    if code == "zh":
        return normalize_chinese(text)
    if code == "ko":
        return normalize_korean(text)
    normalized = normalize_generic(text)
    if code in CHARACTER_LANGUAGES:
        return NormalizedText(tuple(normalized.characters), normalized.characters)
    return normalized
