"""Numbers, ordinals and Roman numerals that the reference spells out and an ASR writes as digits or numerals
(issue 13 item 5b): both sides read the same after normalization (num2words, cn2an, roman), and texts without
numbers score exactly as before."""

import jiwer
import pytest

from spokenbench.core.asr.normalize import chinese_cardinal, english_cardinal, english_ordinal, normalize
from spokenbench.core.asr.scoring import error_rate


@pytest.mark.parametrize(
    "reference, transcript",
    [
        ("Louis the Fourteenth built Versailles.", "Louis XIV built Versailles."),
        ("Louis the Fourteenth built Versailles.", "Louis the 14th built Versailles."),
        ("Henry the Eighth had six wives.", "Henry VIII had six wives."),
        ("Queen Elizabeth the Second", "Queen Elizabeth II"),
        ("What is three x plus two?", "What is 3x plus 2?"),
        ("x squared plus three x equals ten", "x squared plus 3x equals 10"),
        ("the fourth Thursday of November", "the 4th Thursday of November"),
        ("one hundred and five grams", "105 grams"),
        ("two million and nineteen", "2,000,019"),
        ("twenty-first century", "21st century"),
        ("nine point eight meters per second squared", "9.8 meters per second squared"),
    ],
)
def test_english_spelled_numbers_equal_digits_and_roman_numerals(reference, transcript):
    assert error_rate(reference, transcript, "en") == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(
    "reference, transcript",
    [
        ("路易十四建造了凡尔赛宫", "路易XIV建造了凡尔赛宫"),
        ("路易十四建造了凡尔赛宫", "路易14建造了凡尔赛宫"),
        ("需要一百零五克", "需要105克"),
        ("一六八二年", "1682年"),
        ("百分之二十五", "25%"),
        ("负五", "-5"),
    ],
)
def test_chinese_numbers_and_roman_numerals(reference, transcript):
    assert error_rate(reference, transcript, "zh") == 0.0


@pytest.mark.parametrize(
    "reference, transcript",
    [
        ("엘리자베스 2세", "엘리자베스 II세"),
        ("루이 14세가 베르사유 궁전을 지었다", "루이 XIV세가 베르사유 궁전을 지었다"),
        ("마이너스 5", "-5"),
        ("25퍼센트", "25%"),
    ],
)
def test_korean_numbers_and_roman_numerals(reference, transcript):
    assert error_rate(reference, transcript, "ko") == 0.0
    assert error_rate(reference, transcript, "ko", "cer") == 0.0


def test_a_wrong_number_is_still_an_error():
    assert error_rate("Louis the Fourteenth", "Louis XV", "en") == pytest.approx(1 / 2)  # louis fourteenth / fifteenth
    assert error_rate("路易十四", "路易XV", "zh") == pytest.approx(1 / 4)  # 十四 / 十五: one character
    assert error_rate("엘리자베스 2세", "엘리자베스 III세", "ko") == pytest.approx(1 / 2)


@pytest.mark.parametrize(
    "text",
    [
        "I saw it",  # the pronoun
        "vitamin C and vitamin D",  # letters that are not numerals here
        "Washington DC",
        "an IV drip",  # lower-case word before: an abbreviation, not a regnal number
        "MIX the solution",
    ],
)
def test_letters_that_are_not_numerals_stay_letters(text):
    assert normalize(text, "en").words == tuple(text.lower().split())


def test_chinese_and_korean_letters_that_are_not_numerals_stay_letters():
    assert normalize("X射线和维生素C", "zh").characters == "x射线和维生素c"
    assert normalize("DNA와 X선", "ko").words == ("dna와", "x선")


@pytest.mark.parametrize(
    "reference, transcript",
    [
        ("the quick brown fox", "the quick brown box jumps"),
        ("Which gas do plants take in during photosynthesis?", "which gas do plant take in during photo synthesis"),
        ("The Treaty of Versailles ended the war", "The treaty of Versailles ended a war"),
        ("In the United States", "In the United States of America"),
    ],
)
def test_texts_without_numbers_score_as_jiwer_does(reference, transcript):
    punctuation = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.ReduceToListOfListOfWords()])
    expected = jiwer.wer(reference, transcript, reference_transform=punctuation, hypothesis_transform=punctuation)
    assert error_rate(reference, transcript, "en") == pytest.approx(expected)


def test_number_readers_come_from_the_libraries():
    from num2words import num2words

    assert english_cardinal(1682) == num2words(1682).replace(",", "").replace("-", " ").replace(" and", "").split()
    assert english_ordinal(14) == ["fourteenth"] and english_ordinal(21) == ["twenty", "first"]
    assert english_cardinal(-5) == ["negative", "five"]
    assert [chinese_cardinal(n) for n in (14, 105, 1682, -5)] == ["十四", "一百零五", "一千六百八十二", "负五"]
