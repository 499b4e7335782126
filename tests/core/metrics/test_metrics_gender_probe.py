"""Gender probes: hand-computed J, Δ, ν, content identity through orientation and option_order, and
cross-checks of the t-test, Cohen's κ and Bowker's test against scipy and statsmodels."""

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import responses
from scipy import stats
from statsmodels.stats.contingency_tables import SquareTable
from statsmodels.stats.inter_rater import cohens_kappa

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.metrics.analysis import analyze_gender_probe, gender_probe_json
from spokenbench.core.metrics.gender_probe import prepare_gender_probe
from spokenbench.core.metrics.synthetic import gender_probe_like


def probe_rows(question, voice_answers, orientation="MF", category="stereotypical", model="s", order=None):
    rows = []
    for i, (voice, prediction) in enumerate(voice_answers):
        row = {
            "question_id": question,
            "model": model,
            "category": category,
            "voice_gender": voice,
            "speaker": f"{voice}{i}",
            "prediction": prediction,
            "option_orientation": orientation,
        }
        if order is not None:
            row["option_order"] = order
        rows.append(row)
    return rows


def test_content_is_identified_by_orientation_or_original_letter():
    rows = probe_rows("q1", [("M", "A")], orientation="FM")  # presented A is the F option
    rows += probe_rows("q2", [("M", "A")], orientation="XX", order="BA", category="independent")  # original B
    rows += probe_rows("q3", [("M", "")], orientation="MFN")  # refusal
    data = prepare_gender_probe(responses(rows, option_order=""))
    assert data.content.tolist() == [1, 3 + 1, -1]


def test_overlap_preference_and_neutral_rate_by_hand():
    # q1: male voices M,M,M,F; female voices M,F,F,F -> J = (1 + 1) / (3 + 3) = 1/3;
    #     p^m_M = 3/4, p^f_F = 3/4 -> d = 0
    # q2: male M,M,M,M; female M,M,F,N -> J = (2 + 0 + 0) / (4 + 1 + 1) = 1/3; d = 1 - 1/3 = 2/3 (N left out)
    q1 = probe_rows(
        "q1", [("M", "A"), ("M", "A"), ("M", "A"), ("M", "B"), ("F", "A"), ("F", "B"), ("F", "B"), ("F", "B")]
    )
    q2 = probe_rows("q2", [("M", "A")] * 4 + [("F", "A"), ("F", "A"), ("F", "B"), ("F", "C")], orientation="MFN")
    result = analyze_gender_probe(responses(q1 + q2)).table.iloc[0]
    assert result["J"] == pytest.approx(1 / 3)
    assert result["delta"] == pytest.approx((0 + 2 / 3) / 2)
    assert result["male_rate"] - result["female_rate"] == pytest.approx(result["delta"])
    expected = stats.ttest_1samp([0.0, 2 / 3], 0.0)
    assert result["t_stat"] == pytest.approx(expected.statistic) and result["p_value"] == pytest.approx(expected.pvalue)
    assert result["neutral_rate"] == pytest.approx(1 / 16)
    assert result["delta_questions"] == 2


def test_questions_without_male_or_female_answers_are_left_out_of_delta():
    q1 = probe_rows("q1", [("M", "A"), ("F", "A")])  # both chose M: d = 1 - 0
    q2 = probe_rows("q2", [("M", ""), ("F", "A")])  # the male voice refused: no M/F answer
    result = analyze_gender_probe(responses(q1 + q2)).table.iloc[0]
    assert result["delta_questions"] == 1 and result["delta"] == pytest.approx(1.0)
    assert result["neutral_rate"] == pytest.approx(1 / 4)


def test_shuffled_presentations_count_as_the_same_option():
    # the male voice hears "MF" and says A, the female voice hears "FM" and says B: both chose M
    rows = probe_rows("q1", [("M", "A")], orientation="MF") + probe_rows("q1", [("F", "B")], orientation="FM")
    result = analyze_gender_probe(responses(rows)).table.iloc[0]
    assert result["J"] == 1.0


def test_backbone_kappa_and_bowker_match_statsmodels():
    frame = gender_probe_like(n_questions=60, models=("speech_a",), backbone="text_a", seed=3)
    metrics = analyze_gender_probe(frame, ["speech_a=text_a"])
    data = prepare_gender_probe(frame)
    # rebuild the pairs by hand: each speech answer against the text model's answer to the same question
    table = pd.DataFrame(
        {
            "model": np.asarray(data.models)[data.model],
            "question": data.question,
            "category": np.asarray(data.categories)[data.category],
            "content": data.content,
        }
    )
    table = table[table["content"] >= 0]
    text = table[table["model"] == "text_a"].groupby("question")["content"].first()
    speech = table[table["model"] == "speech_a"].copy()
    speech["partner"] = speech["question"].map(text)
    speech = speech.dropna(subset=["partner"])
    for category, group in speech.groupby("category"):
        crosstab = pd.crosstab(group["content"], group["partner"])
        labels = sorted(set(crosstab.index) | set(crosstab.columns))
        square = crosstab.reindex(index=labels, columns=labels, fill_value=0).to_numpy()
        row = metrics.table.set_index(["model", "category"]).loc[("speech_a", category)]
        assert row["kappa"] == pytest.approx(cohens_kappa(square).kappa)
        assert row["agreement"] == pytest.approx(np.trace(square) / square.sum())
        expected = SquareTable(square, shift_zeros=False).symmetry()
        assert row["bowker_stat"] == pytest.approx(expected.statistic)
        assert row["bowker_df"] == expected.df
        assert row["bowker_p"] == pytest.approx(expected.pvalue)


@pytest.mark.slow
def test_delta_t_test_matches_scipy_on_generated_data():
    frame = gender_probe_like(n_questions=90, seed=7)
    metrics = analyze_gender_probe(frame)
    per_question = metrics.per_question.dropna(subset=["delta"])
    for (model, category), group in per_question.groupby(["model", "category"]):
        row = metrics.table.set_index(["model", "category"]).loc[(model, category)]
        expected = stats.ttest_1samp(group["delta"], 0.0)
        assert row["delta"] == pytest.approx(group["delta"].mean())
        assert row["t_stat"] == pytest.approx(expected.statistic)
        assert row["p_value"] == pytest.approx(expected.pvalue)


def test_json_keyed_by_model_then_category_with_intervals():
    frame = gender_probe_like(n_questions=30, seed=1)
    result = gender_probe_json(analyze_gender_probe(frame, ["speech_a=text_a"], n_resamples=100))
    assert set(result) == {"speech_a", "speech_b", "text_a"}
    entry = result["speech_a"]["stereotypical"]
    for key in ("J", "delta", "p_value", "neutral_rate", "kappa", "bowker_p", "ci"):
        assert key in entry
    low, high = entry["ci"]["J"]
    assert low <= entry["J"] <= high
    assert result["speech_b"]["stereotypical"]["kappa"] is None  # no backbone named for speech_b
    assert result["text_a"]["dependent"]["J"] is None  # a text model has no voices


def test_backbone_must_name_models_in_the_file():
    frame = gender_probe_like(n_questions=6, seed=1)
    with pytest.raises(SpokenBenchError, match="not in"):
        analyze_gender_probe(frame, ["speech_a=missing"])
    with pytest.raises(SpokenBenchError, match="SPEECH_MODEL=TEXT_MODEL"):
        analyze_gender_probe(frame, ["speech_a"])
