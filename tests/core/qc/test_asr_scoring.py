"""Language-aware normalization and error rates on hand-computed cases, cross-checked against jiwer's own
functions and an independent edit distance."""

import jiwer
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spokenbench.core.asr.normalize import chinese_cardinal, english_cardinal, english_ordinal
from spokenbench.core.asr.scoring import NormalizedText, Scorer, count_errors, error_rate, wer_bin


@pytest.mark.parametrize(
    "reference, hypothesis, expected",
    [
        ("What is ninety-eight?", "what is 98", 0.0),  # number words, punctuation, case
        ("It costs eighty dollars.", "It costs $80.", 0.0),
        ("one hundred and five", "105", 0.0),
        ("twenty-five percent off on the fourth day", "25% off on the 4th day", 0.0),
        ("nine point eight meters per second", "9.8 meters per second", 0.0),
        ("two and negative five", "2 and -5", 0.0),
        ("one million people", "1,000,000 people", 0.0),
        ("The cell's ATP is made in the mitochondrion.", "The cells ATP is made in a mitochondria", 2 / 8),
        ("a b c d e", "a b c d", 1 / 5),  # one deletion
        ("a b c d e", "a x c y e z", 3 / 5),  # two substitutions and an insertion
        ("a b", "a b c d e", 3 / 2),  # insertions can take WER past 1
        ("Which gas do plants take in?", "", 1.0),  # nothing heard: every word deleted
    ],
)
def test_english_wer_on_hand_computed_cases(reference, hypothesis, expected):
    assert error_rate(reference, hypothesis, "en") == pytest.approx(expected)


@pytest.mark.slow
@pytest.mark.parametrize(
    "reference, hypothesis, expected",
    [
        ("韩国的国旗被称为空白。", "韩国国旗被称为空白", 1 / 10),  # one character missing, punctuation ignored
        ("1682年，路易十四", "一六八二年路易十四", 0.0),  # a year is read digit by digit
        ("9.8米每秒", "九点八米每秒", 0.0),
        ("降价百分之二十五", "降价25%", 0.0),
        ("两个氢分子", "2个氢分子", 0.0),
        ("负5", "-5", 0.0),
        ("需要105摩尔", "需要一百零五摩尔", 0.0),
        ("光合作用", "光和作用", 1 / 4),  # a homophone: one substitution in four characters
        ("哪种细胞器产生ATP", "哪种细胞器产生 atp", 0.0),  # Latin letters lower-cased, spaces dropped
    ],
)
def test_chinese_cer_on_hand_computed_cases(reference, hypothesis, expected):
    assert error_rate(reference, hypothesis, "zh") == pytest.approx(expected)
    assert error_rate(reference, hypothesis, "zh-CN") == pytest.approx(expected)


@pytest.mark.parametrize(
    "reference, hypothesis, wer, cer",
    [
        ("초속 9.8미터", "초속 9.8 미터", 2 / 2, 0.0),  # spacing differs: WER counts it, CER does not
        ("알칼리 금속", "알칼리금속", 2 / 2, 0.0),
        ("마이너스 2와 5", "-2와 5", 0.0, 0.0),
        ("25퍼센트 할인", "25% 할인", 0.0, 0.0),
        ("식물이 빛 에너지를 바꾼다.", "식물이 빛 에너지를 바꾼다", 0.0, 0.0),
        ("세포 호흡", "세포 호읍", 1 / 2, 1 / 4),
    ],
)
def test_korean_wer_on_spaces_and_cer(reference, hypothesis, wer, cer):
    assert error_rate(reference, hypothesis, "ko") == pytest.approx(wer)
    assert error_rate(reference, hypothesis, "ko", "cer") == pytest.approx(cer)


def test_korean_clip_score_keeps_both_minima():
    score = Scorer().score_clip("ko", "초속 9.8미터", [("a", "초속 9.8 미터"), ("b", "초속 9.8미타")])
    assert score.metric == "wer" and score.rate == pytest.approx(0.5) and score.best_asr == "b"
    assert score.cer == 0.0  # the minimum CER comes from the other system
    assert Scorer({"ko": "cer"}).score_clip("ko", "초속 9.8미터", [("a", "초속 9.8 미터")]).rate == 0.0


def test_two_asr_minimum_and_bins():
    scorer = Scorer()
    score = scorer.score_clip("en", "a b c d e", [("whisper", "a x c y e"), ("gemini", "a b c d")])
    assert (score.best_asr, score.errors, score.units, score.bin) == ("gemini", 1, 5, 1)
    assert dict(score.per_asr) == {"whisper": pytest.approx(0.4), "gemini": pytest.approx(0.2)}
    assert scorer.score_clip("en", "?!", [("a", "x"), ("b", "y")]) is None, "nothing to score against"


@pytest.mark.parametrize(
    "errors, units, expected",
    [
        (0, 5, 0),
        (1, 5, 1),
        (1, 100, 1),
        (2, 10, 1),
        (3, 10, 2),
        (3, 5, 2),
        (6, 10, 2),
        (7, 10, 3),
        (4, 5, 3),
        (9, 2, 3),
    ],
)
def test_bins_are_closed_on_the_right_exactly(errors, units, expected):
    assert wer_bin(errors, units) == expected


def test_number_readings():
    assert english_cardinal(1682) == "one thousand six hundred eighty two".split()
    assert english_cardinal(2_000_019) == "two million nineteen".split()
    assert (
        english_ordinal(21) == ["twenty", "first"]
        and english_ordinal(12) == ["twelfth"]
        and english_ordinal(40) == ["fortieth"]
    )
    assert [chinese_cardinal(n) for n in (10, 15, 20, 105, 110, 1005, 10005, 100000, 100000000)] == [
        "十",
        "十五",
        "二十",
        "一百零五",
        "一百一十",
        "一千零五",
        "一万零五",
        "十万",
        "一亿",
    ]


@pytest.mark.parametrize(
    "reference, hypothesis",
    [
        ("the quick brown fox", "the quick brown box jumps"),
        ("a b c", "c b a"),
        ("one two three four", "one three four"),
        ("alpha beta", "gamma delta epsilon"),
    ],
)
def test_wer_agrees_with_jiwer_when_normalization_changes_nothing(reference, hypothesis):
    assert error_rate(reference, hypothesis, "en") == pytest.approx(jiwer.wer(reference, hypothesis))


@pytest.mark.parametrize(
    "reference, hypothesis", [("光合作用", "光和作用"), ("细胞呼吸作用", "细胞呼作用用"), ("硫酸", "硫酸钠")]
)
def test_cer_agrees_with_jiwer(reference, hypothesis):
    assert error_rate(reference, hypothesis, "zh") == pytest.approx(jiwer.cer(reference, hypothesis))


def _levenshtein(a, b) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from("abcde"), min_size=1, max_size=12), st.lists(st.sampled_from("abcdef"), max_size=12))
def test_error_counts_equal_an_independent_edit_distance(reference, hypothesis):
    ref = NormalizedText(tuple(reference), "".join(reference))
    hyp = NormalizedText(tuple(hypothesis), "".join(hypothesis))
    assert count_errors(ref, hyp, "wer").errors == _levenshtein(reference, hypothesis)
    assert count_errors(ref, hyp, "cer").errors == _levenshtein("".join(reference), "".join(hypothesis))
    assert count_errors(ref, hyp, "wer").units == len(reference)
