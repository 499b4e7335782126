"""Language-aware text normalization for ASR screening. The same function is applied to the reference (the
text the clip was synthesized from) and to each transcript, so every choice here is symmetric: it can only
remove differences that do not change what was said (case, punctuation, digits versus number words), never
add one. docs/qc.md lists the choices per language and what is deliberately left alone.

Numbers are read as maintained libraries read them: roman checks Roman numerals; num2words' English reading and
cn2an's Chinese one are ported (`english_cardinal`, `chinese_cardinal`: importing them costs more than screening
a corpus), and tests compare the ports with the libraries.

- English: NFKC, lower case, numbers as words (98 → ninety eight, 9.8 → nine point eight, 4th → fourth,
  25% → twenty five percent, $80 → eighty dollars, -5 → negative five), a Roman numeral after a capitalized name
  as its ordinal and "the" between such a name and an ordinal dropped (Louis XIV, Louis the Fourteenth and Louis
  the 14th all read "louis fourteenth"), hyphens split words, apostrophes dropped, other punctuation removed,
  "and" inside a number ("one hundred and five") dropped; WER on words.
- Chinese: NFKC, lower case, Arabic numbers and Roman numerals read as Chinese numerals (25 → 二十五, 9.8 → 九点八,
  25% → 百分之二十五, 路易XIV → 路易十四, years digit by digit: 1682年 → 一六八二年), 两 → 二, punctuation and all
  spaces removed; CER.
- Korean: NFKC, lower case, decimal point → 점, % → 퍼센트, leading minus → 마이너스, thousands separators
  dropped, Roman numerals as digits (엘리자베스 II세 → 2세), punctuation removed; WER on spaces (eojeol) and CER
  with spaces removed. Digits stay digits: Korean reads them natively or Sino-Korean depending on the counter, so
  no reading is imposed.
- Other languages: NFKC, case folding, every script's decimal digits as ASCII digits (١٢ → 12, १२ → 12), Arabic
  and Hebrew optional vowel marks and cantillation and the tatweel removed, punctuation removed — combining marks
  (the vowel signs and viramas of Devanagari, Bengali, Tamil, Thai …) stay in their words; CER for languages
  written without spaces (ja, th, lo, km, my), WER otherwise.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import NamedTuple

# The version of these rules. Screening stores each transcript's edit counts when the transcript is stored
# (core/asr/store.py) and trusts them only while they were made with this version: bump it whenever a change here
# can change any text's words or characters, or stored counts made by the old rules are used as if current.
# tests/core/qc/test_transcript_counts.py pins the fuzzed corpus's digest per version, so a rule changed without
# a bump fails there.
NORMALIZER_VERSION = 2  # 2: combining marks kept in words; other scripts' digits, Arabic/Hebrew optional marks

CHARACTER_LANGUAGES = frozenset({"zh", "ja", "th", "lo", "km", "my", "yue", "wuu"})
BOTH_METRIC_LANGUAGES = frozenset({"ko"})  # WER on spaces and CER


@functools.lru_cache(maxsize=1024)
def base_language(language: str) -> str:
    """'zh-CN' → 'zh', 'en_US' → 'en', 'cmn' → 'zh'. Cached: every normalized text asks."""
    code = re.split(r"[-_]", language.strip().lower())[0]
    return {"cmn": "zh", "kor": "ko", "eng": "en", "zho": "zh", "chi": "zh"}.get(code, code)


def primary_metric(language: str) -> str:
    """The error rate a language is binned by by default: CER where words are not separated by spaces."""
    return "cer" if base_language(language) in CHARACTER_LANGUAGES else "wer"


def error_rate_name(language: str, metric: str | None = None) -> str:
    """'CER' or 'WER' as every page labels a clip's error rate: the metric it was screened with, else the
    language's own (CER for Chinese, Japanese, Thai …), so one clip never reads WER on one page, CER on another."""
    return (metric or primary_metric(language)).upper()


class NormalizedText(NamedTuple):
    """A named tuple, not a dataclass: screening builds one per distinct text, and a frozen dataclass takes five
    times as long to build. Built here as `_new(NormalizedText, (words, characters))`, the same object without
    the named tuple's Python-level __new__ (half the time)."""

    words: tuple[str, ...]  # tokens for WER
    characters: str  # the same text without any whitespace, for CER


_new = tuple.__new__


# --------------------------------------------------------------------------------------------------
# Shared pieces

_APOSTROPHES = re.compile(r"['’ʼ`´]")
_SPACES = re.compile(r"\s+")
_MINUS = re.compile(r"(?:^|(?<=[\s(\[{=:,;]))[-–](?=\d)")  # a sign, not a hyphen or a subtraction
_THOUSANDS = re.compile(r"(?<![\d,])(\d{1,3}(?:,\d{3})+)(?!\d)")
# Presence tests, one regex search each instead of a Python loop over the characters. Every number rule below
# matches \d only, so a text without one is left alone by them (Korean's % rule is the exception: see there).
_DECIMAL_DIGIT = re.compile(r"\d")
_ROMAN_LETTER = re.compile("[IVXLC]")


# The full-width forms of ASCII (？，１２) and the ideographic space, mapped as NFKC maps them. Chinese text is
# full of them, and one sends unicodedata's NFKC down its slow path over the whole text (8 µs for 30 characters);
# mapped first, the rest of the text usually passes NFKC's quick check untouched.
_FULL_WIDTH = re.compile("[\uff01-\uff5e\u3000]")
_HALF_WIDTH = {chr(code): chr(code - 0xFEE0) for code in range(0xFF01, 0xFF5F)} | {"\u3000": " "}


def _nfkc(text: str) -> str:
    """unicodedata.normalize("NFKC", text), the same string, faster on text with full-width forms."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", _FULL_WIDTH.sub(lambda m: _HALF_WIDTH[m.group()], text))


def _prepare(text: str) -> str:
    return _lowered(_nfkc(text))


def _lowered(text: str) -> str:
    """_prepare after NFKC: lower case, one minus sign, no thousands separators. Lower case of the capital İ
    (Turkish, and İstanbul in any language) is i and a combining dot above: the dot dropped, as Turkish writes it,
    so İstanbul and Istanbul read the same."""
    text = text.lower() if text.isascii() else text.lower().replace("−", "-").replace("i\u0307", "i")
    if "," not in text:  # the thousands separator
        return text
    return _THOUSANDS.sub(lambda m: m.group(1).replace(",", ""), text)


# _finish on an ASCII text in one str.translate pass: apostrophes dropped, every other character but a letter or a
# digit (\w without _) made a space.
_ASCII_FINISH = str.maketrans(
    {**{chr(code): " " for code in range(128) if not chr(code).isalnum()}, "'": None, "`": None}
)


def _finish(text: str) -> NormalizedText:
    if text.isascii():
        words = tuple(text.translate(_ASCII_FINISH).split())
        return _new(NormalizedText, (words, "".join(words)))
    words = tuple(text.split())
    characters = "".join(words)
    # only letters and digits between the spaces (\w is isalnum or _) and no ʼ (a letter _APOSTROPHES drops):
    # nothing to remove
    if characters.isalnum() and "ʼ" not in characters:
        return _new(NormalizedText, (words, characters))
    words = tuple(_without_non_word(_APOSTROPHES.sub("", text)).split())
    return _new(NormalizedText, (words, "".join(words)))


# Unicode's combining marks (categories Mn, Mc, Me) of the Basic Multilingual Plane: the vowel signs and viramas
# of Devanagari, Bengali, Tamil, Thai … are part of a word's spelling, not punctuation. Marks above U+FFFF (historic
# scripts: Brahmi, Kaithi …) stay non-word characters: with their ~70 ranges in the class, Python's regex engine
# tested each range for every character, and Korean screening took twice as long.
_MARK_SPAN = range(0x300, 0x10000)


def _mark_ranges() -> list[tuple[int, int]]:
    """The combining marks of _MARK_SPAN as (first, last) code point runs."""
    ranges: list[tuple[int, int]] = []
    start = None
    for code in _MARK_SPAN:
        if unicodedata.category(chr(code))[0] == "M":
            start = code if start is None else start
        elif start is not None:
            ranges.append((start, code - 1))
            start = None
    return ranges  # U+FFFF is no mark: the last run is closed


_NON_WORD = re.compile(r"[^\w]|_")  # punctuation, symbols, whitespace and _, for text without a combining mark


class _MarkPatterns(NamedTuple):
    any_mark: re.Pattern  # whether a text has a combining mark at all (most Korean or Latin text has none)
    non_word: re.Pattern  # as _NON_WORD, but a combining mark is part of its word
    stray: re.Pattern  # a mark with no letter before it (NFKC makes ´ a space and a combining acute): a symbol


@functools.cache
def _mark_patterns() -> _MarkPatterns:
    """Built on first use: Unicode's marks are scanned once (~20 ms), not at import."""
    marks = "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in _mark_ranges())
    return _MarkPatterns(
        re.compile(f"[{marks}]"),
        re.compile(f"[^\\w{marks}]|_"),
        re.compile(f"(?:^|(?<=[^\\w{marks}])|(?<=_))[{marks}]+"),
    )


def _without_non_word(text: str) -> str:
    """Punctuation, symbols, whitespace and _ made spaces, never a combining mark on a letter: splitting a word at
    its vowel signs shatters Hindi, Bengali, Tamil or Thai into bare consonants and counts WER over the fragments
    (Whisper's BasicTextNormalizer does, a known pitfall: Manohar et al., EMNLP 2024, "What is lost in
    Normalization?")."""
    patterns = _mark_patterns()
    if patterns.any_mark.search(text) is None:
        return _NON_WORD.sub(" ", text)
    return patterns.non_word.sub(" ", patterns.stray.sub(" ", text))


# Arabic and Hebrew vowel points and cantillation (harakat, shadda, sukun, niqqud …) are optional in writing: a
# transcript rarely has them where a vowelled reference does. Deleted, with the Arabic tatweel (a stretching
# stroke), in every language written in these scripts.
_OPTIONAL_MARK_BLOCKS = (
    range(0x0591, 0x05C8),  # Hebrew points and cantillation
    range(0x0610, 0x061B),  # Arabic honorific and Quranic signs
    range(0x064B, 0x0660),  # harakat, tanwin, shadda, sukun …
    range(0x0670, 0x0671),  # the superscript alef (هٰذا)
    range(0x06D6, 0x06EE),  # Quranic annotation marks
    range(0x08D3, 0x0900),  # Arabic Extended-A marks
)
# Arabic's own decimal and thousands separators, as the digits they stand between are folded
_ARABIC_SEPARATORS = {0x066B: ord("."), 0x066C: ord(",")}
_TATWEEL = 0x0640


@functools.cache
def _script_folding() -> dict[int, int | None]:
    """A str.translate table: every decimal digit of another script (Arabic-Indic ١٢, Persian ۱۲, Devanagari १२ …)
    made its ASCII digit, as the same number (Arabic's ٫ and ٬ the separators . and ,); Arabic and Hebrew optional
    marks and the tatweel deleted."""
    table: dict[int, int | None] = {}
    for code in range(0x80, 0x20000):
        character = chr(code)
        if unicodedata.category(character) == "Nd":
            table[code] = ord(str(unicodedata.decimal(character)))
    for block in _OPTIONAL_MARK_BLOCKS:
        table.update({code: None for code in block if unicodedata.category(chr(code)) == "Mn"})
    table[_TATWEEL] = None
    return table | _ARABIC_SEPARATORS


# --------------------------------------------------------------------------------------------------
# English

_SCALES = ("thousand", "million", "billion", "trillion", "quadrillion")
_CURRENCY = {"$": "dollars", "€": "euros", "£": "pounds", "¥": "yen", "₩": "won"}
_DIGIT_WORDS = "zero one two three four five six seven eight nine".split()


_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen"
).split()
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_GROUPS = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))
_ORDINAL_WORDS = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth",
    "twelve": "twelfth",
}  # fmt: skip
# num2words reads these numbers the same way; its import loads every language it knows (0.05-0.1 s, a sixth of
# screening 44,800 clips), so below a quadrillion the reading is ported here and a test compares the two.
_PORTED_BELOW = 10**15


def _words(reading: str) -> list[str]:
    """num2words' reading as plain words: hyphens and commas gone, the British 'and' dropped."""
    return [w for w in reading.replace("-", " ").replace(",", " ").split() if w != "and"]


def _below_thousand(n: int) -> list[str]:
    words = [_ONES[n // 100], "hundred"] if n >= 100 else []
    n %= 100
    if n >= 20:
        words.append(_TENS[n // 10])
        n %= 10
    if n:
        words.append(_ONES[n])
    return words


def english_cardinal(n: int) -> list[str]:
    """Cardinal number words without 'and' or hyphens, as num2words reads them: 1682 → one thousand six hundred
    eighty two. From a quadrillion on, digit by digit."""
    if n < 0:
        return ["negative", *english_cardinal(-n)]
    if n >= _PORTED_BELOW:
        return [_DIGIT_WORDS[int(d)] for d in str(n)]
    return list(_cardinal_reading(n))


@functools.lru_cache(maxsize=8192)
def _cardinal_reading(n: int) -> tuple[str, ...]:
    """Kept: a corpus repeats its numbers."""
    if n == 0:
        return ("zero",)
    words = []
    for size, name in _GROUPS:
        if n >= size:
            words += [*_below_thousand(n // size), name]
            n %= size
    return (*words, *_below_thousand(n))


def english_ordinal(n: int) -> list[str]:
    """Ordinal number words, as num2words reads them: 21 → twenty first, 12 → twelfth, 40 → fortieth."""
    if n >= _PORTED_BELOW or n < 0:
        return list(_num2words_ordinal(n))
    words = english_cardinal(n)
    last = words[-1]
    words[-1] = _ORDINAL_WORDS.get(last) or (last[:-1] + "ieth" if last.endswith("y") else last + "th")
    return words


@functools.lru_cache(maxsize=1024)
def _num2words_ordinal(n: int) -> tuple[str, ...]:
    """num2words' own reading, for the ordinals beyond the port (a quadrillionth and up)."""
    from num2words import num2words

    return tuple(_words(num2words(n, to="ordinal")))


@functools.cache
def _english_number_words() -> frozenset[str]:
    return frozenset({w for n in range(100) for w in english_cardinal(n)} | {"hundred", *_SCALES})


@functools.cache
def _english_ordinal_words() -> frozenset[str]:
    return frozenset(english_ordinal(n)[-1] for n in range(1, 100))


def __getattr__(name: str):
    if name == "ENGLISH_NUMBER_WORDS":  # built on first use, not at import
        return _english_number_words()
    raise AttributeError(name)


# Roman numerals (checked by the `roman` library). Only upper-case numerals of I, V, X, L and C are read, never
# a lone I (the pronoun), C or L (vitamin C, size L), and never D or M (DC, MD are abbreviations).
_ROMAN = r"(?:[IVXLC]{2,}|[VX])"
# "Louis XIV", "Henry the Eighth", "Louis the 14th": after a capitalized name, a numeral is the regnal ordinal and
# the spoken "the" before it is dropped on both sides, so all three read "louis fourteenth".
_EN_REGNAL = re.compile(r"\b([A-Z][a-z]+)\s+(?:the\s+)?(" + _ROMAN + r")\b")
_EN_NAME_THE_ORDINAL = re.compile(r"\b([A-Z][a-z]+)\s+the\s+(?=(\d+(?:st|nd|rd|th)|[A-Za-z]+)\b)")


@functools.lru_cache(maxsize=1024)
def _roman_value(numeral: str) -> int | None:
    import roman

    try:
        return roman.fromRoman(numeral)
    except roman.RomanError:
        return None


def _english_regnal(text: str) -> str:
    def numeral(match: re.Match) -> str:
        value = _roman_value(match.group(2))
        return match.group(0) if value is None else f"{match.group(1)} {' '.join(english_ordinal(value))}"

    def the(match: re.Match) -> str:
        following = match.group(2).lower()
        ordinal = following[-2:] in ("st", "nd", "rd", "th") and following[:-2].isdigit()
        return f"{match.group(1)} " if ordinal or following in _english_ordinal_words() else match.group(0)

    if "the" in text:
        text = _EN_NAME_THE_ORDINAL.sub(the, text)
    return _EN_REGNAL.sub(numeral, text)


def _english_number(integer: str, fraction: str | None) -> str:
    words = english_cardinal(int(integer)) if len(integer) <= 15 else [_DIGIT_WORDS[int(d)] for d in integer]
    if fraction:
        words += ["point", *(_DIGIT_WORDS[int(d)] for d in fraction)]
    return " ".join(words)


_EN_CURRENCY = re.compile(r"([$€£¥₩])\s?(\d+(?:\.\d+)?)")
_EN_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?%")
_EN_ORDINAL = re.compile(r"(\d+)(st|nd|rd|th)\b")
_EN_NUMBER = re.compile(r"(\d+)(?:\.(\d+))?")


# Either rule of _english_regnal needs a capitalized word, spaces, then "the" or a Roman numeral's letter: a text
# without that is left alone by both, and most texts have a capital and one of I, V, X, L, C somewhere.
_EN_REGNAL_HINT = re.compile(r"[A-Z][a-z]+\s+(?:the\s|[IVXLC])")


def normalize_english(text: str) -> NormalizedText:
    # An ASCII text without a digit and without what _EN_REGNAL_HINT looks for — most English — is only lowered,
    # its apostrophes dropped and its punctuation removed. The hint needs a capital: a text without one (most
    # transcripts) skips that search.
    if text.isascii() and not _DECIMAL_DIGIT.search(text) and (text.islower() or not _EN_REGNAL_HINT.search(text)):
        words = tuple(text.lower().translate(_ASCII_FINISH).split())
        normalized = _new(NormalizedText, (words, "".join(words)))
        return _without_and_in_numbers(normalized) if "and" in words else normalized
    if " the " in text or _ROMAN_LETTER.search(text):
        text = _nfkc(text)
        if _EN_REGNAL_HINT.search(text):
            text = _english_regnal(text)
    text = _prepare(text)
    if _DECIMAL_DIGIT.search(text):
        if "-" in text or "–" in text:  # each rule only where its sign is: a scan of the text costs less than a sub
            text = _MINUS.sub(" negative ", text)
        if "$" in text or "€" in text or "£" in text or "¥" in text or "₩" in text:
            text = _EN_CURRENCY.sub(lambda m: f" {m.group(2)} {_CURRENCY[m.group(1)]} ", text)
        if "%" in text:
            text = _EN_PERCENT.sub(r" \1 percent ", text)
        text = _EN_ORDINAL.sub(lambda m: " " + " ".join(english_ordinal(int(m.group(1)))) + " ", text)
        text = _EN_NUMBER.sub(lambda m: f" {_english_number(m.group(1), m.group(2))} ", text)
    normalized = _finish(text)
    return _without_and_in_numbers(normalized) if "and" in normalized.words else normalized


def _without_and_in_numbers(normalized: NormalizedText) -> NormalizedText:
    """'one hundred and five' as 'one hundred five': the 'and' inside a number dropped."""
    words = normalized.words
    number_words = _english_number_words()
    kept = [
        word
        for i, word in enumerate(words)
        if not (
            word == "and"
            and 0 < i < len(words) - 1
            and words[i - 1] in ("hundred", *_SCALES)
            and words[i + 1] in number_words
        )
    ]
    return _new(NormalizedText, (tuple(kept), "".join(kept)))


# --------------------------------------------------------------------------------------------------
# Chinese

_ZH_DIGITS = "零一二三四五六七八九"
_ZH_PLACES = ("", "十", "百", "千", "万", "十", "百", "千", "亿", "十", "百", "千", "万", "十", "百", "千")
_ZH_ZERO_BEFORE_THOUSANDS = re.compile(r"([万亿])零([一二三四五六七八九][千])")


@functools.lru_cache(maxsize=8192)
def chinese_cardinal(n: int) -> str:
    """Chinese numerals as read aloud, cn2an's `an2cn` reading step for step: 10 → 十, 105 → 一百零五,
    1682 → 一千六百八十二, 10005 → 一万零五. Beyond its 16 digits, digit by digit. Ported, not imported: importing
    cn2an compiles a regex of China's city names (0.2–0.4 s, more than screening 44,800 clips); a test compares
    the two readings over every number below 20,000 and thousands of longer ones."""
    if n < 0:
        return "负" + chinese_cardinal(-n)
    if n >= 10**16:
        return "".join(_ZH_DIGITS[int(d)] for d in str(n))
    digits = str(n)
    reading = ""
    for i, digit in enumerate(digits):
        place = len(digits) - i - 1
        if digit != "0":
            reading += _ZH_DIGITS[int(digit)] + _ZH_PLACES[place]
        else:
            if not place % 4:
                reading += "零" + _ZH_PLACES[place]
            if i > 0 and reading[-1] != "零":
                reading += "零"
    reading = (
        reading.replace("零零", "零").replace("零万", "万").replace("零亿", "亿").replace("亿万", "亿").strip("零")
    )
    reading = _ZH_ZERO_BEFORE_THOUSANDS.sub(r"\1\2", reading)
    if reading.startswith("一十"):
        reading = reading[1:]
    return reading or "零"


def _chinese_number(integer: str, fraction: str | None) -> str:
    text = chinese_cardinal(int(integer)) if len(integer) <= 16 else "".join(_ZH_DIGITS[int(d)] for d in integer)
    if fraction:
        text += "点" + "".join(_ZH_DIGITS[int(d)] for d in fraction)
    return text


_ZH_YEAR = re.compile(r"(?<!\d)(\d{4})(?=\s*年)")
# An upper-case Roman numeral of two letters or more standing apart from other Latin letters (路易XIV) is read as
# the cardinal (路易十四); a lone V or X only right after a Chinese character (X射线 stays).
_ZH_ROMAN = re.compile(r"(?<![A-Za-z])([IVXLC]{2,})(?![A-Za-z])|(?<=[\u4e00-\u9fff])([VX])(?![A-Za-z])")
_ZH_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s?%")
_ZH_NUMBER = re.compile(r"(\d+)(?:\.(\d+))?")


def _roman_to(convert, pattern: re.Pattern, text: str) -> str:
    def replace(match: re.Match) -> str:
        numeral = match.group(1) or match.group(2)
        value = _roman_value(numeral)
        return match.group(0) if value is None else convert(value)

    return pattern.sub(replace, text)


# What _finish keeps of a text, as one pass for the languages compared by characters: the word characters but _
# and the apostrophe ʼ (a letter to \w). Whitespace goes too: no \w character is whitespace.
_NOT_A_CHARACTER_UNIT = re.compile(r"[^\w]|[_ʼ]")


def normalize_chinese(text: str) -> NormalizedText:
    text = _nfkc(text)
    if _ROMAN_LETTER.search(text):
        text = _nfkc(_roman_to(chinese_cardinal, _ZH_ROMAN, text))
    text = _lowered(text)
    if _DECIMAL_DIGIT.search(text):
        text = _MINUS.sub("负", text)
        text = _ZH_YEAR.sub(lambda m: "".join(_ZH_DIGITS[int(d)] for d in m.group(1)), text)
        text = _ZH_PERCENT.sub(lambda m: "百分之" + m.group(1), text)
        text = _ZH_NUMBER.sub(lambda m: _chinese_number(m.group(1), m.group(2)), text)
    text = text.replace("两", "二")
    # only letters and digits (\w is isalnum or _): nothing to remove, unless the apostrophe letter ʼ
    characters = text if text.isalnum() and "ʼ" not in text else _NOT_A_CHARACTER_UNIT.sub("", text)
    return _new(NormalizedText, (tuple(characters), characters))


# --------------------------------------------------------------------------------------------------
# Korean and everything else

_KO_DECIMAL = re.compile(r"(?<=\d)\.(?=\d)")
_DIGIT_SEPARATOR = re.compile(r"(?<=\d)[.,](?=\d)")


# An upper-case Roman numeral of two letters or more standing apart from other Latin letters, or a lone V or X
# before the regnal counter 세, becomes digits, as Korean writes regnal numbers (엘리자베스 II세 → 2세); digits are
# not read aloud (see the module's notes).
_KO_ROMAN = re.compile(r"(?<![A-Za-z])([IVXLC]{2,})(?![A-Za-z])|(?<![A-Za-z])([VX])(?=세)")


def normalize_korean(text: str) -> NormalizedText:
    text = _nfkc(text)
    if _ROMAN_LETTER.search(text):
        text = _nfkc(_roman_to(str, _KO_ROMAN, text))
    text = _lowered(text)
    # % becomes 퍼센트 next to any digit character (str.isdigit: also ① or ❶, which \d does not match)
    if _DECIMAL_DIGIT.search(text) or ("%" in text and any(c.isdigit() for c in text)):
        text = _MINUS.sub("마이너스 ", text)
        text = _KO_DECIMAL.sub("점", text)
        text = text.replace("%", "퍼센트")
    return _finish(text)


def normalize_generic(text: str) -> NormalizedText:
    text = _prepare(text).casefold()
    if not text.isascii():
        text = text.translate(_script_folding())
    return _finish(_DIGIT_SEPARATOR.sub("", text))


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
        return _new(NormalizedText, (tuple(normalized.characters), normalized.characters))
    return normalized
