"""Hand-computed cases for the "Hearing the Order" metrics: accuracy by gold position, Δ accuracy, RSD,
CKLD, predicted positions, permutation voting, rankings with Kendall's τ, and the McNemar test."""

import math

import numpy as np
import pytest
from metrics_helpers import responses
from scipy import stats

from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.selection_bias import ckld_from_counts, compute_selection_bias, rsd_from_counts

ROTATIONS = ["ABCD", "BCDA", "CDAB", "DABC"]


def test_rsd_by_hand():
    # s = (1, .5, .5, 0): mean .5, population sd sqrt(.125) -> RSD = sqrt(.125) / .5
    assert rsd_from_counts(np.array([2, 1, 1, 0]), np.array([2, 2, 2, 2])) == pytest.approx(math.sqrt(0.125) / 0.5)
    # a position that is never gold is left out: s = (1, 0) over two positions -> sd .5, mean .5
    assert rsd_from_counts(np.array([1, 0, 0, 0]), np.array([1, 1, 0, 0])) == pytest.approx(1.0)
    assert np.isnan(rsd_from_counts(np.zeros(4), np.ones(4)))  # mean accuracy 0


def test_ckld_by_hand():
    # p = (1/2, 1/2, 0, 0), q uniform: CKLD = 2 * 1/2 * ln(2) = ln 2
    assert ckld_from_counts(np.array([5, 5, 0, 0]), np.array([1, 1, 1, 1])) == pytest.approx(math.log(2))
    assert ckld_from_counts(np.array([1, 1, 1, 1]), np.array([3, 3, 3, 3])) == pytest.approx(0.0)
    assert np.isinf(ckld_from_counts(np.array([1, 1, 0, 0]), np.array([1, 0, 1, 1])))


def test_position_metrics_use_presented_letters():
    # gold is original A; presented at A (identity) and at D (reversed). The model always says presented "A".
    frame = responses(
        [
            {"question_id": "q1", "option_order": "ABCD", "prediction": "A"},
            {"question_id": "q1", "option_order": "DCBA", "prediction": "A"},
            {"question_id": "q2", "option_order": "ABCD", "prediction": "A"},
            {"question_id": "q2", "option_order": "DCBA", "prediction": "A"},
        ],
        model="m",
        answer="A",
    )
    bias = compute_selection_bias(prepare_mcq(frame, []))
    row = bias.per_model.iloc[0]
    assert row["accuracy_gold_A"] == 1.0 and row["accuracy_gold_D"] == 0.0
    assert np.isnan(row["accuracy_gold_B"])
    assert row["predicted_share_A"] == 1.0
    assert row["gold_share_A"] == 0.5 and row["gold_share_D"] == 0.5
    assert row["rsd"] == pytest.approx(1.0)  # s = (1, 0) over the two gold positions
    assert row["ckld"] == pytest.approx(math.log(2))  # p = (1, 0, 0, 0), q = (1/2, 0, 0, 1/2)
    # Δ: permuted rows with gold at D (accuracy 0) against the original rows (accuracy 1)
    assert row["accuracy_original"] == 1.0
    assert row["delta_accuracy_gold_D"] == -1.0
    assert np.isnan(row["delta_accuracy_gold_A"])  # no permuted row puts the gold at A


def test_cyclic_and_full_majority_vote():
    # q1 (gold A) under the 4 rotations: chosen originals A, A, B, C -> vote A (correct)
    # q2 (gold A): A, A, B, B -> tie A/B counts half -> accuracy 1/2
    rows = []
    for q, chosen in (("q1", "AABC"), ("q2", "AABB")):
        for order, original in zip(ROTATIONS, chosen):
            rows.append({"question_id": q, "option_order": order, "prediction": "ABCD"[order.index(original)]})
    rows.append({"question_id": "q2", "option_order": "DCBA", "prediction": "D"})  # not a rotation: full vote only
    bias = compute_selection_bias(prepare_mcq(responses(rows, model="m", answer="A"), []))
    voting = bias.voting.set_index("permutation")
    assert voting.loc["cyclic", "accuracy"] == pytest.approx((1 + 0.5) / 2)
    assert voting.loc["cyclic", "complete_units"] == 2
    # full: q2 adds an A (presented D of DCBA = original A): A,A,A,B,B -> A wins
    assert voting.loc["full", "accuracy"] == pytest.approx(1.0)
    assert voting.loc["full", "complete_units"] == 0  # 24 orders needed
    assert voting.loc["original", "accuracy"] == pytest.approx(1.0)  # both questions right in ABCD


def test_ranking_and_kendall_tau():
    rows = []
    # three models; original accuracies 1.0, 0.5, 0.0 (gold A at A); reversed rows (gold at D): 0, 0.5, 1
    for model, orig, rev in (("good", "AA", "AA"), ("mid", "AB", "DA"), ("bad", "BB", "DD")):
        for q in range(2):
            rows.append({"model": model, "question_id": f"q{q}", "option_order": "ABCD", "prediction": orig[q]})
            rows.append({"model": model, "question_id": f"q{q}", "option_order": "DCBA", "prediction": rev[q]})
    bias = compute_selection_bias(prepare_mcq(responses(rows, answer="A"), []))
    ranking = bias.ranking.set_index(["setting", "model"])["rank"]
    assert ranking[("original", "good")] == 1 and ranking[("original", "bad")] == 3
    assert ranking[("gold_at_D", "good")] == 3 and ranking[("gold_at_D", "bad")] == 1
    tau = bias.kendall_tau.set_index("setting")
    expected = stats.kendalltau([1.0, 0.5, 0.0], [0.0, 0.5, 1.0])
    assert tau.loc["gold_at_D", "kendall_tau"] == pytest.approx(expected.statistic) == pytest.approx(-1.0)


def test_mcnemar_pairs_original_with_reversed_answers():
    rows = []
    # three pairs correct only in the original order, none only in the reversed, one both
    for q, (orig, rev) in enumerate([("A", "A"), ("A", "A"), ("A", "A"), ("A", "D")]):
        rows.append({"question_id": f"q{q}", "option_order": "ABCD", "prediction": orig, "voice": "x"})
        rows.append({"question_id": f"q{q}", "option_order": "DCBA", "prediction": rev, "voice": "x"})
    frame = responses(rows, model="m", answer="A")
    result = compute_selection_bias(prepare_mcq(frame, ["voice"])).mcnemar.iloc[0]
    assert (result["n_pairs"], result["original_only_correct"], result["reversed_only_correct"]) == (4, 3, 0)
    assert result["p_value"] == pytest.approx(stats.binomtest(3, 3, 0.5).pvalue) == pytest.approx(0.25)


def test_mcnemar_keeps_other_factors_apart():
    # the pair key includes every factor that the option order does not fix
    rows = []
    for gender, orig, rev in (("f", "A", "D"), ("m", "B", "D")):  # presented D of DCBA = original A
        rows.append(
            {"question_id": "q1", "gender": gender, "order": "original", "option_order": "ABCD", "prediction": orig}
        )
        rows.append(
            {"question_id": "q1", "gender": gender, "order": "reversed", "option_order": "DCBA", "prediction": rev}
        )
    data = prepare_mcq(responses(rows, model="m", answer="A"), ["gender", "order"])
    assert data.factors_determined_by_order() == ["order"]
    result = compute_selection_bias(data).mcnemar.iloc[0]
    assert (result["n_pairs"], result["original_only_correct"], result["reversed_only_correct"]) == (2, 0, 1)
