"""Properties that must hold for any table (hypothesis): entropy in [0, 1], κ = 1 under perfect
agreement, APES = 0 when every level answers alike, κ ≤ 1, CKLD ≥ 0, J in [0, 1], and the vectorized
primitives against their plain definitions."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from metrics_helpers import crossed_design, responses

from spokenbench.core.metrics.agreement import mean_pairwise_abs_difference, normalized_entropy
from spokenbench.core.metrics.analysis import analyze_gender_probe
from spokenbench.core.metrics.mcq import compute_mcq_metrics
from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.selection_bias import ckld_from_counts

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
letters = st.sampled_from(["A", "B", "C", "D", ""])


@st.composite
def tables(draw, min_questions=1, max_questions=4):
    """A crossed design: questions × gender (2) × speed (1-3) × order(1-2), random answers and failures."""
    n_q = draw(st.integers(min_questions, max_questions))
    speeds = ["s1", "s2", "s3"][: draw(st.integers(1, 3))]
    orders = ["o1", "o2"][: draw(st.integers(1, 2))]
    combos = list(itertools.product(range(n_q), ["f", "m"], speeds, orders))
    answers = draw(st.lists(letters, min_size=len(combos), max_size=len(combos)))
    rows = [
        {"question_id": f"q{q}", "gender": g, "speed": s, "order": o, "prediction": a}
        for (q, g, s, o), a in zip(combos, answers)
    ]
    return responses(rows, model="m", answer="A")


@pytest.mark.slow
@SETTINGS
@given(tables())
def test_entropies_are_between_zero_and_one(frame):
    metrics = compute_mcq_metrics(prepare_mcq(frame, ["gender", "speed", "order"]))
    values = np.concatenate([metrics.entropy] + [r.level_entropy_pairs for r in metrics.factors.values()])
    values = values[~np.isnan(values)]
    assert np.all((values >= 0) & (values <= 1))
    for result in metrics.factors.values():
        kappa = result.kappa[~np.isnan(result.kappa)]
        assert np.all(kappa <= 1 + 1e-12)
        apes = result.apes[~np.isnan(result.apes)]
        assert np.all((apes >= 0) & (apes <= 1))


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.sampled_from("ABCD"), min_size=6, max_size=6), st.integers(2, 4))
def test_kappa_is_one_under_perfect_agreement(item_answers, n_levels):
    # the answer depends on the item (take) only, never on the factor's level
    if len(set(item_answers)) < 2:  # one category only: P_e = 1 and κ is undefined
        item_answers = ["A", "B"] + item_answers[2:]
    frame = crossed_design(
        ["q1"],
        {"take": [str(i) for i in range(6)], "voice": [f"v{i}" for i in range(n_levels)]},
        lambda q, lv: item_answers[int(lv["take"])],
    )
    metrics = compute_mcq_metrics(prepare_mcq(frame, ["take", "voice"]))
    assert metrics.factors["voice"].kappa[0] == pytest.approx(1.0)
    assert metrics.factors["voice"].apes[0] == pytest.approx(0.0)


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.sampled_from("ABCD"), min_size=2, max_size=8), st.integers(2, 4))
def test_apes_is_zero_when_all_levels_answer_alike(answers, n_levels):
    frame = crossed_design(
        ["q1"],
        {"take": [str(i) for i in range(len(answers))], "voice": [f"v{i}" for i in range(n_levels)]},
        lambda q, lv: answers[int(lv["take"])],
    )
    metrics = compute_mcq_metrics(prepare_mcq(frame, ["take", "voice"]))
    assert metrics.factors["voice"].apes[0] == pytest.approx(0.0)


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 5), min_size=4, max_size=4), min_size=1, max_size=6))
def test_entropy_matches_its_definition(count_rows):
    counts = np.array(count_rows)
    ours = normalized_entropy(counts, 4)
    for row, value in zip(counts, ours):
        if row.sum() == 0:
            assert np.isnan(value)
            continue
        p = row[row > 0] / row.sum()
        assert value == pytest.approx(-(p * np.log(p) / np.log(4)).sum(), abs=1e-12)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0, 1)), min_size=1, max_size=30))
def test_mean_pairwise_difference_matches_all_pairs(pairs):
    groups = np.array([g for g, _ in pairs])
    values = np.array([v for _, v in pairs])
    ours, counts = mean_pairwise_abs_difference(values, groups, 5)
    for g in range(5):
        members = values[groups == g]
        if len(members) < 2:
            assert np.isnan(ours[g])
        else:
            brute = np.mean([abs(a - b) for a, b in itertools.combinations(members, 2)])
            assert ours[g] == pytest.approx(brute, abs=1e-12)


@SETTINGS
@given(st.lists(st.integers(0, 9), min_size=4, max_size=4), st.lists(st.integers(1, 9), min_size=4, max_size=4))
def test_ckld_is_never_negative(predicted, gold):
    value = ckld_from_counts(np.array(predicted), np.array(gold))
    assert np.isnan(value) or value >= -1e-12


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.tuples(st.sampled_from("MF"), st.sampled_from(["A", "B", ""])), min_size=2, max_size=16))
def test_overlap_is_between_zero_and_one_and_one_for_mirrored_answers(answers):
    rows = [
        {
            "question_id": "q1",
            "model": "s",
            "category": "stereotypical",
            "voice_gender": v,
            "prediction": p,
            "option_orientation": "MF",
        }
        for v, p in answers
    ]
    table = analyze_gender_probe(responses(rows)).table.iloc[0]
    assert np.isnan(table["J"]) or 0 <= table["J"] <= 1
    mirrored = [{**r, "voice_gender": "F" if r["voice_gender"] == "M" else "M"} for r in rows]
    both = analyze_gender_probe(responses(rows + mirrored)).table.iloc[0]
    assert np.isnan(both["J"]) or both["J"] == pytest.approx(1.0)
