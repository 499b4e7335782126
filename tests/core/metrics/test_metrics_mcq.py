"""Hand-computed cases for the BiasInEar metrics: accuracy, question entropy, level entropy, APES,
Fleiss' κ (with its modal-cell rule and the nested-factor rule) and the parse-failure policy."""

import math

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import crossed_design, responses

from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.mcq import accuracy_by, accuracy_cross_table, compute_mcq_metrics, model_summary
from spokenbench.core.metrics.responses import prepare_mcq


def summary_of(frame, factors=None, **kwargs):
    data = prepare_mcq(frame, factors)
    metrics = compute_mcq_metrics(data, **kwargs)
    return data, metrics, model_summary(metrics).set_index("model")


def test_accuracy_maps_predictions_through_option_order():
    frame = responses(
        [
            {"prediction": "A", "option_order": "ABCD"},  # chose A, gold A: correct
            {"prediction": "D", "option_order": "DCBA"},  # presented D = original A: correct
            {"prediction": "A", "option_order": "DCBA"},  # presented A = original D: wrong
            {"prediction": "", "option_order": "ABCD"},  # parse failure: wrong
        ],
        question_id="q1",
        model="m",
        answer="A",
    )
    data, _, summary = summary_of(frame, [])
    assert list(data.chosen) == [0, 0, 3, -1]
    assert list(data.gold_position) == [0, 3, 3, 0]
    assert summary.loc["m", "accuracy"] == pytest.approx(0.5)
    assert summary.loc["m", "parse_failure_rate"] == pytest.approx(0.25)


def test_question_entropy_uses_chosen_options_with_base_number_of_options():
    # chosen A, A, B, C -> p = (1/2, 1/4, 1/4): H = 1/2 * 1/2 + 2 * 1/4 * 1 = 0.75 in base 4
    frame = responses([{"prediction": p} for p in "AABC"], question_id="q1", model="m", answer="A")
    _, metrics, summary = summary_of(frame, [])
    assert metrics.entropy[0] == pytest.approx(0.75)
    assert summary.loc["m", "entropy_mean"] == pytest.approx(0.75)


def test_entropy_base_follows_the_number_of_options_in_option_order():
    # three options, answers A and B once each: H = log3(2)
    frame = responses(
        [{"prediction": "A", "option_order": "ABC"}, {"prediction": "B", "option_order": "ABC"}],
        question_id="q1",
        model="m",
        answer="A",
    )
    _, metrics, _ = summary_of(frame, [])
    assert metrics.entropy[0] == pytest.approx(math.log(2, 3))


def test_parse_failures_are_left_out_of_entropy_unless_counted_as_a_category():
    frame = responses([{"prediction": p} for p in ["A", "A", "", ""]], question_id="q1", model="m", answer="A")
    _, metrics, _ = summary_of(frame, [])
    assert metrics.entropy[0] == pytest.approx(0.0)
    _, counted, _ = summary_of(frame, [], failures_as_category=True)
    assert counted.entropy[0] == pytest.approx(math.log(2) / math.log(5))  # half A, half failure, base 4+1


def test_entropy_median_and_iqr_per_model():
    rows = []
    for q, answers in enumerate(["AAAA", "AABB", "ABCD", "AAAB", "AABC"]):
        rows += [{"question_id": f"q{q}", "prediction": p} for p in answers]
    _, metrics, summary = summary_of(responses(rows, model="m", answer="A"), [])
    values = metrics.entropy
    assert summary.loc["m", "entropy_median"] == pytest.approx(np.median(values))
    assert summary.loc["m", "entropy_iqr"] == pytest.approx(np.percentile(values, 75) - np.percentile(values, 25))


@pytest.mark.slow
def test_level_entropy_and_apes_by_hand():
    # levels: x answers AAAA (H=0), y answers AABB (H=0.5), z answers ABCD (H=1)
    answers = {"x": "AAAA", "y": "AABB", "z": "ABCD"}
    frame = crossed_design(
        ["q1"],
        {"speed": ["x", "y", "z"], "take": ["1", "2", "3", "4"]},
        lambda q, lv: answers[lv["speed"]][int(lv["take"]) - 1],
    )
    _, metrics, summary = summary_of(frame, ["speed", "take"])
    assert summary.loc["m1", "level_entropy[speed]"] == pytest.approx(0.5)
    assert summary.loc["m1", "apes[speed]"] == pytest.approx((0.5 + 1.0 + 0.5) / 3)


def test_apes_is_undefined_with_a_single_level_answered():
    frame = crossed_design(["q1"], {"gender": ["f", "m"]}, lambda q, lv: "A" if lv["gender"] == "f" else "")
    _, metrics, _ = summary_of(frame, ["gender"])
    assert np.isnan(metrics.factors["gender"].apes[0])


def test_fleiss_kappa_by_hand():
    # items (take 1, take 2), ratings over gender f/m/x: item 1 = A,A,A; item 2 = A,B,B
    # P1 = 1, P2 = 1/3, P̄ = 2/3; p = (4/6, 2/6), Pe = 5/9; κ = (2/3 - 5/9) / (4/9) = 1/4
    answers = {("1", "f"): "A", ("1", "m"): "A", ("1", "x"): "A", ("2", "f"): "A", ("2", "m"): "B", ("2", "x"): "B"}
    frame = crossed_design(
        ["q1"], {"take": ["1", "2"], "gender": ["f", "m", "x"]}, lambda q, lv: answers[(lv["take"], lv["gender"])]
    )
    _, metrics, summary = summary_of(frame, ["take", "gender"])
    assert summary.loc["m1", "kappa[gender]"] == pytest.approx(0.25)
    assert metrics.factors["gender"].kappa_items[0] == 2


def test_fleiss_kappa_weights_items_by_their_number_of_ratings():
    # item 1 has 3 ratings A,A,B (P1 = 1/3), item 2 has 2 ratings B,B (P2 = 1)
    # P̄ = (3 * 1/3 + 2 * 1) / 5 = 3/5; p = (2/5, 3/5), Pe = 13/25; κ = (15/25 - 13/25) / (12/25) = 1/6
    rows = [{"take": "1", "gender": g, "prediction": p} for g, p in zip("fmx", "AAB")]
    rows += [{"take": "2", "gender": g, "prediction": p} for g, p in zip("fm", "BB")]
    frame = responses(rows, question_id="q1", model="m1", answer="A")
    _, _, summary = summary_of(frame, ["take", "gender"])
    assert summary.loc["m1", "kappa[gender]"] == pytest.approx(1 / 6)


def test_a_cell_with_several_answers_uses_its_modal_answer_ties_alphabetical():
    # cell (take 1, f) holds B and A: tie -> A; so item 1 = (A from f, A from m) agrees
    rows = [
        {"take": "1", "gender": "f", "prediction": "B"},
        {"take": "1", "gender": "f", "prediction": "A"},
        {"take": "1", "gender": "m", "prediction": "A"},
        {"take": "2", "gender": "f", "prediction": "C"},
        {"take": "2", "gender": "m", "prediction": "C"},
    ]
    _, _, summary = summary_of(responses(rows, question_id="q1", model="m1", answer="A"), ["take", "gender"])
    assert summary.loc["m1", "kappa[gender]"] == pytest.approx(1.0)


def test_items_with_fewer_than_two_ratings_are_dropped_and_undefined_kappa_is_counted():
    rows = [
        {"take": "1", "gender": "f", "prediction": "A"},
        {"take": "1", "gender": "m", "prediction": "B"},
        {"take": "2", "gender": "f", "prediction": "C"},
    ]  # item 2 has one rating
    rows2 = [{"question_id": "q2", "take": t, "gender": g, "prediction": "A"} for t in "12" for g in "fm"]  # Pe = 1
    frame = responses(rows + rows2, question_id="q1", model="m1", answer="A")
    _, metrics, summary = summary_of(frame, ["take", "gender"])
    assert metrics.factors["gender"].kappa_items.tolist() == [1, 2]
    assert np.isnan(metrics.factors["gender"].kappa[1])  # everyone answered A: P_e = 1
    assert summary.loc["m1", "kappa_defined[gender]"] == 1
    assert summary.loc["m1", "kappa_undefined[gender]"] == 1
    # q1: one item (A, B): P̄ = 0, Pe = 1/2 -> κ = -1; the mean skips the undefined question
    assert summary.loc["m1", "kappa[gender]"] == pytest.approx(-1.0)


def test_nested_factor_does_not_make_the_outer_factor_undefined():
    # accent is nested in language: language κ must leave accent out of its items (else 1 rating per item)
    factors = {"accent": ["us", "uk", "bj"], "gender": ["f", "m"]}
    language = {"us": "en", "uk": "en", "bj": "zh"}
    frame = crossed_design(
        ["q1", "q2"],
        factors,
        lambda q, lv: ("A" if lv["gender"] == "f" else "B") if language[lv["accent"]] == "en" else "C",
    )
    frame["language"] = frame["accent"].map(language)
    data, metrics, summary = summary_of(frame, ["language", "accent", "gender"])
    assert metrics.factors["language"].kappa_item_factors == ["gender"]
    assert metrics.factors["accent"].kappa_item_factors == ["language", "gender"]  # within a language
    assert not np.isnan(summary.loc["m1", "kappa[language]"])
    # language items: f -> (en: modal of A,A = A; zh: C), m -> (en: B; zh: C); n_ij rows (1,0,1), (0,1,1)
    # P̄ = 0; p = (1/4, 1/4, 1/2); Pe = 3/8; κ = -3/5
    assert summary.loc["m1", "kappa[language]"] == pytest.approx(-0.6)
    across = compute_mcq_metrics(data, kappa_nesting="across")
    assert across.factors["accent"].kappa_item_factors == ["gender"]


def test_accuracy_by_factor_level_and_cross_table_with_delta():
    def answer(q, lv):
        return "A" if (lv["order"] == "original" or q == "q1") else "B"

    frame = crossed_design(["q1", "q2"], {"gender": ["female", "male"], "order": ["original", "reversed"]}, answer)
    data = prepare_mcq(frame, ["gender", "order"])
    levels = accuracy_by(data, ["order"]).set_index("order")["accuracy"]
    assert levels["original"] == 1.0 and levels["reversed"] == 0.5
    table = accuracy_cross_table(data, "order")
    assert list(table.columns) == ["model", "gender", "order", "n", "accuracy_pct", "delta_original_minus_reversed_pct"]
    assert table["accuracy_pct"].tolist() == [100.0, 50.0, 100.0, 50.0]
    assert table["delta_original_minus_reversed_pct"].tolist() == [50.0] * 4


def test_json_layout_keyed_by_model():
    frame = pd.concat(
        [
            crossed_design(["q1", "q2"], {"gender": ["f", "m"]}, lambda q, lv: "A", model="m1"),
            crossed_design(["q1", "q2"], {"gender": ["f", "m"]}, lambda q, lv: "B", model="m2"),
        ],
        ignore_index=True,
    )
    result = analyze_mcq(frame, ["gender"], n_resamples=50).to_json()
    assert list(result) == ["m1", "m2"]
    entry = result["m1"]
    for key in ("n", "accuracy", "entropy_mean", "apes", "fleiss_kappa", "rsd", "ckld", "parse_failure_rate", "ci"):
        assert key in entry
    assert entry["n"] == 4 and entry["accuracy"] == 1.0 and result["m2"]["accuracy"] == 0.0
    assert set(entry["apes"]) == {"gender"} and entry["fleiss_kappa"] == {"gender": None}  # P_e = 1: undefined
    assert entry["ci"]["accuracy"] == [1.0, 1.0]
    assert entry["fleiss_kappa_questions"]["gender"]["undefined"] == 2
