"""Cross-checks on generated data against independent implementations: statsmodels' fleiss_kappa, the
reference package `biasinear` (its Evaluator, on the same inputs), and the published table layouts."""

import csv

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import crossed_design, random_design
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.mcq import accuracy_cross_table, compute_mcq_metrics, model_summary
from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.results.published import published_dir

REFERENCE = published_dir("biasinear")  # the papers' tables, bundled in resources/published/


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_per_question_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    skew = rng.dirichlet(np.ones(4), size=12)
    answers = {}

    def answer(q, lv):
        key = (q, lv["take"], lv["voice"])
        if key not in answers:
            answers[key] = "ABCD"[rng.choice(4, p=skew[int(q[1:])])]
        return answers[key]

    frame = crossed_design([f"q{i:02d}" for i in range(12)], {"take": list("1234"), "voice": list("xyz")}, answer)
    metrics = compute_mcq_metrics(prepare_mcq(frame, ["take", "voice"]))
    for i, q in enumerate(sorted(frame["question_id"].unique())):
        sub = frame[frame["question_id"] == q]
        table = pd.crosstab(sub["take"], sub["prediction"]).reindex(columns=list("ABCD"), fill_value=0).to_numpy()
        with np.errstate(all="ignore"):
            expected = statsmodels_fleiss_kappa(table)
        ours = metrics.factors["voice"].kappa[i]
        if np.isfinite(expected):
            assert ours == pytest.approx(expected)
        else:
            assert np.isnan(ours)


def _evaluator_inputs(frame: pd.DataFrame, data, rows: np.ndarray, factors):
    chosen = np.where(data.chosen >= 0, np.array(list("ABCDEFGH"))[np.maximum(data.chosen, 0)], "")
    return (
        list(chosen[rows]),
        list(frame["answer"].to_numpy()[rows]),
        list(frame["question_id"].to_numpy()[rows]),
        {f: list(frame[f].to_numpy()[rows]) for f in factors},
    )


@pytest.mark.parametrize("seed", range(3))
def test_matches_the_reference_package_evaluator(seed):
    biasinear = pytest.importorskip(
        "biasinear", reason="the reference package biasinear is not installed (pip install -e '.[test]' installs it)"
    )
    frame = random_design(np.random.default_rng(seed), n_questions=8)
    factors = ["language", "accent", "gender", "order"]
    data = prepare_mcq(frame, factors)
    summary = model_summary(compute_mcq_metrics(data)).set_index("model")
    for model in data.models:
        rows = (frame["model"] == model).to_numpy()
        valid = rows & (data.chosen >= 0)
        # accuracy: every row (failures are wrong); entropy, APES, κ: failures left out, as our default
        accuracy = biasinear.Evaluator(*_evaluator_inputs(frame, data, rows, factors)).run()["accuracy"]
        result = biasinear.Evaluator(*_evaluator_inputs(frame, data, valid, factors)).run()
        assert summary.loc[model, "accuracy"] == pytest.approx(accuracy)
        assert summary.loc[model, "entropy_mean"] == pytest.approx(result["entropy"]["mean"])
        for f in factors:
            assert summary.loc[model, f"apes[{f}]"] == pytest.approx(result["apes"][f])
        for f in ("accent", "gender", "order"):
            assert summary.loc[model, f"kappa[{f}]"] == pytest.approx(result["fleiss_kappa"][f])
        # language: the reference keys items by accent too, so every item has one rating and κ is undefined;
        # ours leaves the nested accent out, which is the reference's number without the accent variable
        assert np.isnan(result["fleiss_kappa"]["language"])
        without_accent = biasinear.Evaluator(
            *_evaluator_inputs(frame, data, valid, ["language", "gender", "order"])
        ).run()
        assert summary.loc[model, "kappa[language]"] == pytest.approx(without_accent["fleiss_kappa"]["language"])


def test_matches_the_reference_package_when_failures_count_as_a_category():
    biasinear = pytest.importorskip("biasinear", reason="the reference package biasinear is not installed")
    frame = random_design(np.random.default_rng(11), n_questions=6, nested=False, failure_rate=0.0)
    factors = ["language", "gender", "order"]
    data = prepare_mcq(frame, factors)
    summary = model_summary(compute_mcq_metrics(data)).set_index("model")
    for model in data.models:
        rows = (frame["model"] == model).to_numpy()
        result = biasinear.Evaluator(*_evaluator_inputs(frame, data, rows, factors)).run()
        for f in factors:
            assert summary.loc[model, f"kappa[{f}]"] == pytest.approx(result["fleiss_kappa"][f])
            assert summary.loc[model, f"apes[{f}]"] == pytest.approx(result["apes"][f])


def _read_reference(name: str) -> list[dict]:
    if not (REFERENCE / name).exists():
        raise FileNotFoundError(f"reference table {name} is missing from {REFERENCE}")
    with open(REFERENCE / name, encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _frame_reproducing_table6(rows: list[dict]) -> pd.DataFrame:
    """400 questions per configuration; in each, the first k questions are right (k = accuracy × 4)."""
    records = []
    for row in rows:
        correct = round(float(row["accuracy_pct"]) * 4)
        reversed_ = row["option_order"] == "reversed"
        for q in range(400):
            gold = "ABCD"[q % 4]
            original = gold if q < correct else "ABCD"[(q + 1) % 4]
            presented = "ABCD"[3 - "ABCD".index(original)] if reversed_ else original
            records.append(
                {
                    "question_id": f"q{q:03d}",
                    "model": row["model"],
                    "answer": gold,
                    "prediction": presented,
                    "option_order": "DCBA" if reversed_ else "ABCD",
                    "language": row["language"],
                    "accent": row["accent"],
                    "gender": row["gender"],
                    "option_order_level": row["option_order"],
                }
            )
    frame = pd.DataFrame(records).astype(str)
    return frame.rename(columns={"option_order_level": "order"})


def test_cross_tables_reproduce_the_published_layout_and_values():
    table6 = _read_reference("table06_accuracy_order_gemini25flash.csv")
    frame = _frame_reproducing_table6(table6)
    data = prepare_mcq(frame, ["language", "accent", "gender", "order"])

    ours = accuracy_cross_table(data, "order").rename(columns={"order": "option_order"})
    ref = pd.DataFrame(table6)
    key = ["model", "language", "accent", "gender", "option_order"]
    # same rows, same key columns, same order of key columns as the published CSV
    assert [c for c in ours.columns if c in ref.columns] == [c for c in ref.columns if c in ours.columns]
    merged = ref.merge(ours, on=key, how="outer", validate="one_to_one", indicator=True)
    assert (merged["_merge"] == "both").all() and len(merged) == 28
    assert np.allclose(merged["accuracy_pct_x"].astype(float), merged["accuracy_pct_y"])
    assert np.allclose(merged["delta_orig_minus_rev_pct"].astype(float), merged["delta_original_minus_reversed_pct"])

    gender = accuracy_cross_table(data, "gender").rename(columns={"order": "option_order"})
    ref18 = pd.DataFrame(_read_reference("table18_accuracy_gender.csv"))
    merged = ref18.merge(gender, on=key, how="inner", suffixes=("_ref", "_ours"))
    assert len(merged) == 28  # Table 18's Δ is female − male: sorted levels give the same direction and name
    assert np.allclose(
        merged["delta_female_minus_male_pct_ref"].astype(float), merged["delta_female_minus_male_pct_ours"]
    )
    assert np.allclose(merged["accuracy_pct_ref"].astype(float), merged["accuracy_pct_ours"])

    language = accuracy_cross_table(data, "language").rename(columns={"order": "option_order"})
    assert "accent" not in language.columns  # accent is nested in language: averaged over, as in Table 20
    ref20 = pd.DataFrame(_read_reference("table20_accuracy_language.csv"))
    merged = ref20.merge(language, on=["model", "option_order", "gender", "language"], how="inner")
    assert len(merged) == 12
    assert np.allclose(merged["accuracy_pct_x"].astype(float), merged["accuracy_pct_y"], atol=0.005 + 1e-9)


def test_full_analysis_runs_on_reference_shaped_data():
    frame = _frame_reproducing_table6(_read_reference("table06_accuracy_order_gemini25flash.csv"))
    result = analyze_mcq(frame, ["language", "accent", "gender", "order"]).to_json()["Gemini 2.5 Flash"]
    expected = (
        np.mean([float(r["accuracy_pct"]) for r in _read_reference("table06_accuracy_order_gemini25flash.csv")]) / 100
    )
    assert result["accuracy"] == pytest.approx(expected)
    assert result["n"] == 11200
