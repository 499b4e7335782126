"""Screening's shortcuts (issue 28) give exactly what they replace: the number readers ported from num2words and
cn2an (whose imports cost more than screening itself) read every number as the libraries do, and the full-width
shortcut before NFKC gives NFKC's string."""

import random

import pytest

from spokenbench.core.asr.normalize import _words, chinese_cardinal, english_cardinal, english_ordinal


def _numbers_with_zeros(rng: random.Random, count: int) -> list[int]:
    """Numbers of 1–16 digits, zeros frequent: the readings' special cases are runs of zeros (10005, 100000001)."""
    numbers = []
    for _ in range(count):
        length = rng.randint(1, 16)
        digits = [rng.choice("123456789")] + [rng.choice("0000123456789") for _ in range(length - 1)]
        numbers.append(int("".join(digits)))
    return numbers


@pytest.mark.slow
def test_chinese_cardinal_reads_as_cn2an():
    import cn2an

    rng = random.Random(28)
    numbers = [*range(20_000), *(10**k for k in range(16)), *(10**k + 1 for k in range(16))]
    numbers += [10**16 - 1, 100_010_001, 110_000_000, 10_010, 1_000_000_000_001, *_numbers_with_zeros(rng, 5000)]
    differing = [
        (n, chinese_cardinal(n), cn2an.an2cn(str(n))) for n in numbers if chinese_cardinal(n) != cn2an.an2cn(str(n))
    ]
    assert differing == []


def test_chinese_cardinal_special_cases():
    """Zeros inside and at the ends of groups, the leading 一十 dropped, 16 digits and beyond (digit by digit)."""
    assert [chinese_cardinal(n) for n in (0, 10, 11, 100, 101, 110, 1001, 10010, 100_000_001, 110_000_000)] == [
        "零", "十", "十一", "一百", "一百零一", "一百一十", "一千零一", "一万零一十", "一亿零一", "一亿一千万",
    ]  # fmt: skip
    assert chinese_cardinal(10**15) == "一千万亿"
    assert chinese_cardinal(10**16) == "一" + "零" * 16
    assert chinese_cardinal(-105) == "负一百零五"


@pytest.mark.slow
def test_english_readings_are_num2words():
    from num2words import num2words

    rng = random.Random(28)
    numbers = [*range(20_000), *(10**k for k in range(15)), *(10**k + 1 for k in range(15)), 10**15 - 1]
    numbers += [n for n in _numbers_with_zeros(rng, 5000) if n < 10**15]
    differing = [n for n in numbers if english_cardinal(n) != _words(num2words(n))]
    differing += [n for n in numbers if english_ordinal(n) != _words(num2words(n, to="ordinal"))]
    assert differing == []


def test_english_readings_special_cases():
    assert " ".join(english_cardinal(1_000_105)) == "one million one hundred five"
    assert [english_ordinal(n)[-1] for n in (0, 1, 2, 3, 5, 8, 9, 12, 20, 40, 100, 1000)] == [
        "zeroth", "first", "second", "third", "fifth", "eighth", "ninth", "twelfth", "twentieth", "fortieth",
        "hundredth", "thousandth",
    ]  # fmt: skip
    assert english_cardinal(10**15) == ["one"] + ["zero"] * 15  # digit by digit from a quadrillion on
    assert english_ordinal(10**15) == ["one", "quadrillionth"]  # num2words' own reading there


def test_fast_nfkc_is_nfkc():
    """The full-width shortcut gives NFKC's string exactly, also next to combining marks and other compatibility
    characters (ﬁ, ①, ㎏, half-width katakana)."""
    import unicodedata

    from spokenbench.core.asr.normalize import _nfkc

    pieces = [
        "？",
        "，",
        "Ａ",
        "ｚ",
        "１",
        "\u3000",
        "\u0301",
        "\u0308",
        "\u3099",
        "ﬁ",
        "①",
        "㎏",
        "ｶ",
        "ﾞ",
        "的",
        "a",
        " ",
    ]
    pieces += [chr(code) for code in range(0xFF01, 0xFF5F)]
    rng = random.Random(28)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(3000)]
    assert [t for t in texts if _nfkc(t) != unicodedata.normalize("NFKC", t)] == []
