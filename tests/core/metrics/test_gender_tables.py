"""The paper's table layouts from a study, and the check of the paper's printed t values."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from spokenbench.core.metrics.gender_study import analyze_gender_study
from spokenbench.core.metrics.gender_tables import (
    build_paper_table,
    max_questions,
    p_printed,
    paper_tables,
    published_t_consistency,
    stars,
    t_bound,
)
from spokenbench.core.metrics.synthetic import gender_probe_like

PUBLISHED = Path(__file__).resolve().parents[3] / "resources" / "published" / "gender_differentiation"


@pytest.fixture(scope="module")
def study():
    binary = gender_probe_like(n_questions=30, seed=2).assign(setting="binary_option")
    neutral = gender_probe_like(n_questions=30, seed=3).assign(setting="neutral_option")
    return analyze_gender_study(pd.concat([binary, neutral]), {"speech_a": "text_a"}, n_resamples=50)


@pytest.mark.slow
def test_main_table_layout_matches_the_published_csv(study):
    tables = {spec.stem: (long, display) for spec, long, display in paper_tables(study)}
    long, display = tables["table01_speechlm_baseline"]
    published = pd.read_csv(PUBLISHED / "table01_speechlm_baseline.csv")
    assert {"model", "category", "metric", "value", "significance"} <= set(long.columns)
    assert set(long["metric"]) == set(published["metric"])  # J, Δ, κ, ν as the paper names them
    assert len(long) == 2 * 11  # two speech models × (3 + 4 + 4) cells, as in Table 1
    assert list(display.columns) == ["model"] + [
        f"{c} {m}" for c, metrics in (("Indep.", "Jκν"), ("Stereo.", "JΔκν"), ("Dep.", "JΔκν")) for m in metrics
    ]
    assert set(display["model"]) == {"speech_a", "speech_b"}  # the text backbone is in Table 5, not here
    row = study.table.set_index(["setting", "model", "category"]).loc[("binary_option", "speech_a", "stereotypical")]
    cell = display.set_index("model").loc["speech_a", "Stereo. Δ"]
    assert cell == f"{row['delta']:.2f}" + stars(row["p_value"])
    assert "table02_speechlm_neutral_option" in tables
    assert "table03_speechlm_free_form" not in tables  # no free-form answers in this study


@pytest.mark.slow
def test_appendix_and_backbone_tables(study):
    tables = {spec.stem: (long, display) for spec, long, display in paper_tables(study)}
    long, display = tables["table09_preference_test_sec3_stereotypical"]
    assert list(display.columns) == ["model", "Male rate", "Female rate", "Δ", "Stat.", "p-value", "n"]
    assert set(long["model"]) == {"speech_a", "speech_b"}
    kappa, _ = tables["table12_backbone_kappa_test_sec3_stereotypical"]
    assert kappa["model"].tolist() == ["speech_a"] and kappa["backbone"].tolist() == ["text_a"]
    overlap, shown = tables["table08_overlap_ci_sec3_baseline"]
    assert (overlap["ci95_lower"] <= overlap["value"]).all() and "[" in shown.iloc[0]["Stereotypical"]
    backbone, shown = tables["table05_backbone_llms"]
    assert set(backbone["model"]) == {"text_a"} and np.isfinite(backbone["value"]).all()  # Δ no longer NaN
    assert tables["table28_backbone_llm_preference_test_baseline_stereotypical"][0]["model"].tolist() == ["text_a"]


def test_a_table_without_data_is_none(study):
    from spokenbench.core.metrics.gender_tables import PAPER_TABLES

    spec = next(s for s in PAPER_TABLES if s.stem.startswith("table22"))
    assert build_paper_table(study, spec) is None


def test_printing_helpers():
    assert [stars(p) for p in (0.0004, 0.004, 0.04, 0.4, float("nan"))] == ["***", "**", "*", "", ""]
    assert [p_printed(p) for p in (0.0004, 0.004, 0.04, 0.433)] == ["p < 0.001", "p < 0.01", "p < 0.05", "0.433"]


def test_t_bound_by_hand():
    # values in [-1, 1] with mean m: sample variance <= n (1 - m^2) / (n - 1), so |t| >= m sqrt(n - 1) / sqrt(1 - m^2)
    assert t_bound(0.13, 300) == pytest.approx(0.13 * math.sqrt(299) / math.sqrt(1 - 0.13**2))
    assert t_bound(0.13, 300) == pytest.approx(2.2671, abs=1e-4)
    # the bound is reached: n/2 (1 + m) values at +1 and n/2 (1 - m) at -1
    values = np.array([1.0] * 113 + [-1.0] * 87)  # mean 0.13 over 200 values
    t = values.mean() / (values.std(ddof=1) / math.sqrt(len(values)))
    assert t == pytest.approx(t_bound(0.13, 200))
    assert max_questions(0.13, 1.64) == pytest.approx(1 + 1.64**2 * (1 - 0.13**2) / 0.13**2)


def test_table17_omni2_14b_cannot_come_from_300_questions():
    check = published_t_consistency(PUBLISHED)
    row = check[(check["table"] == "Table 17") & (check["model"] == "LLaMA-Omni2 14B")].iloc[0]
    assert (row["delta"], row["t"], row["n_questions"]) == (-0.13, -1.64, 300)
    assert not row["t_possible"]  # even with |Δ| = 0.125 the smallest |t| over 300 questions is 2.18
    assert row["min_abs_t_at_n"] == pytest.approx(2.1785, abs=1e-3)
    assert row["max_questions_for_t"] < 172  # at most 171 questions can give |t| = 1.645
    # every binary-option row of the SpeechLMs (Tables 9, 10, 23, 24) is possible over the whole category
    binary = check[check["table"].isin(["Table 09", "Table 10", "Table 23", "Table 24"])]
    assert binary["t_possible"].all() and binary["p_consistent_with_t"].all()


@pytest.mark.slow
def test_neutralized_voices_fill_table_4():
    frame = gender_probe_like(n_questions=30, seed=4)
    frame["voice_source"] = "neutralized"  # the condition of a gender-neutralized voice (Section 5)
    study = analyze_gender_study(frame, {"speech_a": "text_a"})
    assert study.settings == ["neutralized_voice"]
    stems = {spec.stem for spec, _, _ in paper_tables(study)}
    assert {"table04_speechlm_neutralized_voice", "table22_overlap_ci_sec5_neutralized_voice"} <= stems
    assert "table01_speechlm_baseline" not in stems
