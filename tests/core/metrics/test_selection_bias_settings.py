"""Which rows each "Hearing the Order" setting uses, on hand-built tables (issue 13, item 1): a question whose
gold-at-p order is the identity stays in the gold-at-p setting through its original-order answer (the plan
asks that input once), and conditions are told apart by their full presentation, not option_order alone
(order-backward keeps option_order ABCD but is not the original order)."""

import numpy as np
import pytest
from metrics_helpers import responses
from scipy import stats

from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.selection_bias import compute_selection_bias, labels_backward, presentations


def gold_position_table(q1_gold_at_a_correct: bool = False):
    """Two questions, gold A, each asked in the original order and with the gold moved to every position (the
    gold-position plan). q1's gold-at-A order came out as ABCD, the original input, so the plan asked it once
    (as 'original'); q2's gold-at-A order is ACDB. Both originals are wrong, q2's gold-at-A answer is right,
    every other gold-at-p answer is right."""
    rows = [
        ("q1", "original", "ABCD", "A" if q1_gold_at_a_correct else "B"),
        ("q1", "BACD", "BACD", "B"),  # gold at B
        ("q1", "BCAD", "BCAD", "C"),  # gold at C
        ("q1", "BCDA", "BCDA", "D"),  # gold at D
        ("q2", "original", "ABCD", "B"),
        ("q2", "ACDB", "ACDB", "A"),  # gold at A
        ("q2", "CABD", "CABD", "B"),
        ("q2", "DCAB", "DCAB", "C"),
        ("q2", "BDCA", "BDCA", "D"),
    ]
    return responses(
        [{"question_id": q, "order": o, "option_order": oo, "prediction": p} for q, o, oo, p in rows],
        model="m",
        answer="A",
    )


def test_the_issues_two_question_example_keeps_both_questions_at_a():
    # Paper (Fig. 1): gold at A = {q1 in ABCD (wrong), q2 in ACDB (right)} -> 1/2; original = 0/2 -> Δ_A = +0.50.
    # Before the fix q1 was dropped from gold at A: Δ_A = 1/1 - 0 = +1.00.
    data = prepare_mcq(gold_position_table(), ["order"])
    bias = compute_selection_bias(data)
    row = bias.per_model.iloc[0]
    assert row["accuracy_original"] == 0.0
    assert row["delta_accuracy_gold_A"] == pytest.approx(0.5)
    for letter in "BCD":  # both questions right there: 2/2 - 0
        assert row[f"delta_accuracy_gold_{letter}"] == pytest.approx(1.0)
    shown = bias.presentation
    # exactly one row per question in each gold-at-p setting: q1's original row is reused at A
    in_setting = shown.gold_setting
    for p in range(4):
        rows = np.flatnonzero(in_setting & (data.gold_position == p))
        assert sorted(data.questions[q] for q in data.question[rows]) == ["q1", "q2"]
    reused = np.flatnonzero(shown.reused_original)
    assert [data.questions[q] for q in data.question[reused]] == ["q1"]
    assert bias.comparison_rows == "other orders (original reused at its gold position)"
    ranking = bias.ranking.set_index("setting")["accuracy"]
    assert ranking["gold_at_A"] == pytest.approx(0.5) and ranking["original"] == 0.0


def test_the_reused_answer_is_the_same_one_in_both_settings():
    # q1 right in ABCD now: original 1/2, gold at A 2/2 (q1's ABCD answer counts in both) -> Δ_A = +0.50
    bias = compute_selection_bias(prepare_mcq(gold_position_table(q1_gold_at_a_correct=True), ["order"]))
    row = bias.per_model.iloc[0]
    assert row["accuracy_original"] == pytest.approx(0.5)
    assert row["delta_accuracy_gold_A"] == pytest.approx(0.5)
    assert row["delta_accuracy_gold_B"] == pytest.approx(0.5)


def test_no_reuse_when_the_other_orders_already_cover_the_position():
    # original + reversed only: the reversed order covers one position of four, so the original answer is not
    # a gold-at-p input; gold at A stays undefined for gold-A questions (as before)
    rows = [
        {"question_id": "q1", "option_order": "ABCD", "prediction": "A"},
        {"question_id": "q1", "option_order": "DCBA", "prediction": "D"},
    ]
    bias = compute_selection_bias(prepare_mcq(responses(rows, model="m", answer="A"), []))
    assert not bias.presentation.reused_original.any()
    assert np.isnan(bias.per_model.iloc[0]["delta_accuracy_gold_A"])
    assert bias.comparison_rows == "other orders"


def test_cyclic_rotations_put_every_question_at_every_position_once():
    # the four rotations of a gold-A question put the gold at A (identity), D, C, B: the identity is the
    # gold-at-A input. Answers right in ABCD and BCDA only: gold at A 1/1, gold at D 1/1, B and C 0/1.
    rotations = {"ABCD": "A", "BCDA": "D", "CDAB": "A", "DABC": "A"}  # presented letter given
    rows = [{"question_id": "q1", "option_order": o, "prediction": p} for o, p in rotations.items()]
    data = prepare_mcq(responses(rows, model="m", answer="A"), [])
    bias = compute_selection_bias(data)
    assert bias.presentation.gold_setting.all()
    row = bias.per_model.iloc[0]
    assert row["accuracy_original"] == 1.0
    assert [row[f"delta_accuracy_gold_{p}"] for p in "ABCD"] == [0.0, -1.0, -1.0, 0.0]


# -- the full presentation: order-backward is not the original order ----------------------------------------

BIASINEAR_ORDERS = {"original": "ABCD", "reversed": "DCBA", "order-backward": "ABCD", "token-backward": "DCBA"}


def four_orders_table():
    """4 questions (gold A) × BiasInEar's four orders. Right in the original and order-backward orders; in the
    reversed order only q0 is right; token-backward always wrong (original B chosen)."""
    rows = []
    for q in range(4):
        for name, option_order in BIASINEAR_ORDERS.items():
            right = name in ("original", "order-backward") or (name == "reversed" and q == 0)
            chosen = "A" if right else "B"
            rows.append(
                {
                    "question_id": f"q{q}",
                    "order": name,
                    "option_order": option_order,
                    "prediction": "ABCD"[option_order.index(chosen)],
                }
            )
    return responses(rows, model="m", answer="A")


def test_order_backward_is_not_an_original_order_row():
    data = prepare_mcq(four_orders_table(), ["order"])
    shown = presentations(data)
    assert shown.order_factors == ["order"]  # the order is part of the presentation, not of the vote unit
    assert int(shown.original.sum()) == 4  # was 8: the order-backward rows pooled into 'original'
    assert int(shown.reversed.sum()) == 4  # token-backward (DCBA, labels read D→A) is not the exact reversal
    bias = compute_selection_bias(data)
    voting = bias.voting.set_index("permutation")
    assert voting.loc["original", "n"] == 4 and voting.loc["original", "accuracy"] == 1.0
    # McNemar: 4 pairs (was 0: the unit key held the order level, so no original met its reversal);
    # b = 3 (q1-q3 right only in the original order), c = 0, exact p = 2 * 0.5**3 = 0.25
    result = bias.mcnemar.iloc[0]
    assert (result["n_pairs"], result["original_only_correct"], result["reversed_only_correct"]) == (4, 3, 0)
    assert result["p_value"] == pytest.approx(stats.binomtest(3, 3, 0.5).pvalue) == pytest.approx(0.25)
    # gold at A: the order-backward rows (gold at letter A), all right -> Δ_A = 1 - 1 = 0 (was undefined);
    # gold at D: reversed 1/4 + token-backward 0/4 = 1/8 -> Δ_D = 1/8 - 1
    row = bias.per_model.iloc[0]
    assert row["delta_accuracy_gold_A"] == 0.0
    assert row["delta_accuracy_gold_D"] == pytest.approx(1 / 8 - 1)
    # cyclic vote: only the original order is a rotation read in letter order -> 4 units, all right
    assert voting.loc["cyclic", "n"] == 4 and voting.loc["cyclic", "accuracy"] == 1.0
    # full vote per question over the four orders: q0 A,A,A,B -> A; q1-q3 A,B,A,B -> tie (1/2) -> 2.5 / 4
    assert voting.loc["full", "accuracy"] == pytest.approx(2.5 / 4)


def test_without_an_order_column_option_order_is_all_there_is():
    # the same table with the order column left out: order-backward cannot be told from the original
    data = prepare_mcq(four_orders_table(), [])
    assert int(presentations(data).original.sum()) == 8


@pytest.mark.parametrize("spelling", ["order-backward", "Order Backward", "order_backward", "TOKEN-BACKWARD"])
def test_backward_orders_are_recognised_in_common_spellings(spelling):
    rows = [
        {"question_id": "q1", "order": "original", "option_order": "ABCD", "prediction": "A"},
        {"question_id": "q1", "order": spelling, "option_order": "ABCD", "prediction": "A"},
    ]
    data = prepare_mcq(responses(rows, model="m", answer="A"), ["order"])
    assert labels_backward(data).tolist() == [False, True]
