"""The permutation vote's tie rule (issue 13, item 2), on hand-built ties: fractional credit (the default, 1/t
each), the tied option listed first in the original order, or one tied option drawn at random with a seed;
selectable from the API, `spokenbench metrics` and `report`, and stated in the table's notes."""

import numpy as np
import pytest
from metrics_helpers import responses

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.selection_bias import compute_selection_bias, tie_draws, vote_shares

ROTATIONS = ["ABCD", "BCDA", "CDAB", "DABC"]


def test_vote_shares_by_hand():
    counts = np.array(
        [
            [2, 2, 0, 0],  # A/B tie
            [3, 1, 0, 0],  # A wins
            [0, 0, 0, 0],  # every answer failed
            [1, 1, 1, 0],  # three-way tie A/B/C
            [0, 2, 0, 2],  # B/D tie
        ]
    )
    fractional = vote_shares(counts, "fractional")
    np.testing.assert_allclose(
        fractional, [[0.5, 0.5, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0], [0, 0.5, 0, 0.5]]
    )
    first = vote_shares(counts, "first")
    assert first.tolist() == [[1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]]
    # random: tied option number floor(u * t) in original order. u = .75, t = 2 -> 1 (B); u = .5, t = 3 -> 1 (B);
    # u = .49, t = 2 -> 0 (B of B/D); a unit without a tie or without answers ignores its draw
    draws = np.array([0.75, 0.2, 0.9, 0.5, 0.49])
    drawn = vote_shares(counts, "random", draws)
    assert drawn.tolist() == [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]]
    # each rule gives every unit with an answer exactly one vote
    for shares in (fractional, first, drawn):
        assert shares.sum(axis=1).tolist() == pytest.approx([1, 1, 0, 1, 1])


def tied_table():
    """Three questions under the four rotations. q1 (gold A): chosen A, A, B, C -> A wins. q2 (gold A) and
    q3 (gold B): chosen A, A, B, B -> a tie between A and B."""
    rows = []
    for q, gold, chosen in (("q1", "A", "AABC"), ("q2", "A", "AABB"), ("q3", "B", "AABB")):
        for order, original in zip(ROTATIONS, chosen):
            rows.append(
                {"question_id": q, "answer": gold, "option_order": order, "prediction": "ABCD"[order.index(original)]}
            )
    return responses(rows, model="m")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rule", "seed", "expected"),
    [
        # q1 right; q2 and q3 half each: (1 + 1/2 + 1/2) / 3
        ("fractional", 0, 2 / 3),
        # A is listed first: q2 right (gold A), q3 wrong (gold B): (1 + 1 + 0) / 3
        ("first", 0, 2 / 3),
        # seed 1 draws (.512, .950, .144) for units q1, q2, q3: q2 -> floor(.950 * 2) = 1 = B (wrong),
        # q3 -> floor(.144 * 2) = 0 = A (wrong): 1/3
        ("random", 1, 1 / 3),
        # seed 2 draws (.262, .298, .814): q2 -> 0 = A (right), q3 -> 1 = B (right): 3/3
        ("random", 2, 1.0),
    ],
)
def test_each_tie_rule_on_a_hand_built_tie(rule, seed, expected):
    bias = compute_selection_bias(prepare_mcq(tied_table(), []), rule, seed)
    voting = bias.voting.set_index("permutation")
    assert voting.loc["cyclic", "accuracy"] == pytest.approx(expected)
    assert voting.loc["full", "accuracy"] == pytest.approx(expected)  # only rotations were shown
    assert voting.loc["cyclic", "tied_units"] == 2 and voting.loc["cyclic", "tie_rule"] == rule
    assert voting.loc["original", "tie_rule"] == ""


def test_the_random_draws_are_the_seeds_in_unit_order():
    assert tie_draws(3, 1).tolist() == pytest.approx([0.51182162, 0.9504637, 0.14415961])
    assert tie_draws(3, 2).tolist() == pytest.approx([0.26161213, 0.29849114, 0.81422574])


def test_first_listed_breaks_toward_the_original_first_option():
    # the tied option listed first in the ORIGINAL order, whatever position it was presented at: CKLD after
    # voting counts the voted original options (q1 A, q2 A, q3 A) against gold (A, A, B)
    bias = compute_selection_bias(prepare_mcq(tied_table(), []), "first")
    cyclic = bias.voting.set_index("permutation").loc["cyclic"]
    expected_ckld = 1.0 * np.log(1.0 / (2 / 3))  # p = (1, 0, 0, 0), q = (2/3, 1/3, 0, 0)
    assert cyclic["ckld"] == pytest.approx(expected_ckld)


def test_random_ties_average_to_the_fractional_credit():
    # 400 questions, each an A/B tie with gold A: fractional credit is exactly 1/2; random draws land near it
    rows = []
    for q in range(400):
        for order, original in zip(ROTATIONS, "AABB"):
            rows.append(
                {"question_id": f"q{q:03d}", "option_order": order, "prediction": "ABCD"[order.index(original)]}
            )
    data = prepare_mcq(responses(rows, model="m", answer="A"), [])
    fractional = compute_selection_bias(data).voting.set_index("permutation").loc["cyclic", "accuracy"]
    assert fractional == 0.5
    drawn = [
        compute_selection_bias(data, "random", s).voting.set_index("permutation").loc["cyclic", "accuracy"]
        for s in (5, 6)
    ]
    assert all(abs(a - 0.5) < 0.1 for a in drawn) and drawn[0] != drawn[1]
    again = compute_selection_bias(data, "random", 5).voting.set_index("permutation").loc["cyclic", "accuracy"]
    assert again == drawn[0]


@pytest.mark.slow
def test_the_default_is_fractional_and_a_bad_rule_is_refused():
    analysis = analyze_mcq(tied_table(), [])
    assert analysis.selection.vote_ties == "fractional"
    assert "fractional credit" in analysis.selection.vote_tie_note
    vote = analysis.to_json()["m"]["permutation_vote"]
    assert vote["cyclic"]["tie_rule"] == "fractional" and vote["cyclic"]["tied_units"] == 2
    assert "tie_rule" not in vote["original"]
    drawn = analyze_mcq(tied_table(), [], vote_ties="random", seed=2).to_json()["m"]["permutation_vote"]["cyclic"]
    assert (drawn["tie_rule"], drawn["tie_seed"], drawn["accuracy"]) == ("random", 2, 1.0)
    with pytest.raises(SpokenBenchError, match="fractional, first, random"):
        analyze_mcq(tied_table(), [], vote_ties="coin")


# -- the command line ------------------------------------------------------------------------------------------


@pytest.fixture
def tied_file(tmp_path):
    path = tmp_path / "tied.csv"
    tied_table().to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_metrics_vote_ties_option(cli, tied_file):
    result = cli("metrics", tied_file, "--bootstrap", "0", "--vote-ties", "first", "--json")
    assert result.code == 0, result.err
    cyclic = result.json()["m"]["permutation_vote"]["cyclic"]
    assert cyclic["tie_rule"] == "first" and cyclic["accuracy"] == pytest.approx(2 / 3)
    result = cli("metrics", tied_file, "--bootstrap", "0", "--vote-ties", "random", "--seed", "1", "--json")
    assert result.json()["m"]["permutation_vote"]["cyclic"]["accuracy"] == pytest.approx(1 / 3)
    text = cli("metrics", tied_file, "--bootstrap", "0")
    assert text.code == 0, text.err
    assert "a t-way tie counts 1/t for each tied option (fractional credit, the default)" in text.out
    with pytest.raises(SystemExit) as caught:  # argparse refuses it with its usage message
        cli("metrics", tied_file, "--vote-ties", "coin")
    assert caught.value.code == 2


@pytest.mark.slow
def test_report_states_the_tie_rule_in_the_voting_table(cli, tied_file, tmp_path):
    out = tmp_path / "report"
    result = cli("report", tied_file, "--out", out, "--bootstrap", "0", "--vote-ties", "random", "--seed", "2")
    assert result.code == 0, result.err
    assert "one tied option drawn uniformly at random (seed 2)" in (out / "permutation_voting.md").read_text()
    assert "ties in a vote" in (out / "README.md").read_text()
    table = (out / "permutation_voting.csv").read_text()
    assert "tie_rule" in table and "random" in table
