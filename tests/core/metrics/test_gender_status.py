"""The two bugs of issue 12, by hand: the neutral option counts as an option in J (through the project's
export), ν counts neutral answers and refusals only (parse failures apart); and Δ for a text backbone."""

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import responses
from scipy import stats

from spokenbench.core.foundation.errors import InputError
from spokenbench.core.importers.exports import with_neutral_option
from spokenbench.core.metrics.analysis import analyze_gender_probe


def export_rows(answers, setting="neutral_option"):
    """Rows as the project's responses export gives them before the gender-probe columns: (voice, letter,
    parse_status, parse_detail); the item's options are M then F, presented in order AB."""
    rows = []
    for i, (voice, letter, status, detail) in enumerate(answers):
        rows.append(
            {
                "run_id": 1,
                "question_id": "q1",
                "model": "s",
                "category": "dependent",
                "voice_gender": voice,
                "speaker": f"{voice}{i}",
                "prediction": letter,
                "option_order": "AB",
                "option_orientation": "MF",
                "parse_status": status,
                "parse_detail": detail,
            }
        )
    frame = pd.DataFrame(rows)
    frame["prediction"] = frame["prediction"].astype(object).where(frame["prediction"] != "", None)
    return with_neutral_option(frame, {1: setting})


def test_neutral_answer_counts_as_an_option_in_j():
    # the example: male {M, N}, female {N, N} -> sum min = 0 + 1, sum max = 1 + 2 -> J = 1/3
    frame = export_rows(
        [
            ("M", "A", "ok", None),
            ("M", "", "refusal", "neutral"),
            ("F", "", "refusal", "neutral"),
            ("F", "", "refusal", "neutral"),
        ]
    )
    assert frame["option_orientation"].tolist() == ["MFN"] * 4
    assert frame["option_order"].tolist() == ["ABC"] * 4
    assert frame["prediction"].tolist() == ["A", "C", "C", "C"]
    assert set(frame["setting"]) == {"neutral_option"}
    table = analyze_gender_probe(frame.fillna("").astype(str)).table.iloc[0]
    assert table["J"] == pytest.approx(1 / 3)
    assert table["neutral_rate"] == pytest.approx(3 / 4)
    assert table["parse_failure_rate"] == 0.0


def test_before_the_fix_the_same_answers_left_j_undefined():
    # what the export gave before: no neutral option, empty letters -> the female voice has no counted answer
    frame = export_rows(
        [("M", "A", "ok", None), ("M", "", "refusal", "neutral"), ("F", "", "refusal", "neutral")],
        setting="binary_option",
    )
    assert frame["option_orientation"].tolist() == ["MF"] * 3  # no neutral option was offered: nothing added
    table = analyze_gender_probe(frame.fillna("").astype(str)).table.iloc[0]
    assert np.isnan(table["J"])
    assert table["neutral_rate"] == pytest.approx(2 / 3)  # the spontaneous "cannot be determined" is a refusal


def test_other_refusals_and_failures_keep_an_empty_letter_in_a_neutral_run():
    frame = export_rows([("M", "", "refusal", "refusal"), ("F", "", "failed", "no answer found")])
    assert frame["prediction"].isna().all()
    assert frame["option_orientation"].tolist() == ["MFN", "MFN"]


def test_neutral_rate_counts_neutral_answers_and_refusals_not_parse_failures():
    # the example {A, B, refusal, unparseable}: nu = 1/4 (the project said 2/4), parse failures 1/4
    rows = [
        {"voice_gender": "M", "prediction": "A", "parse_status": "ok"},
        {"voice_gender": "M", "prediction": "B", "parse_status": "ok"},
        {"voice_gender": "F", "prediction": "", "parse_status": "refusal"},
        {"voice_gender": "F", "prediction": "", "parse_status": "failed"},
    ]
    frame = responses(rows, question_id="q1", model="s", category="stereotypical", option_orientation="MF")
    table = analyze_gender_probe(frame).table.iloc[0]
    assert table["neutral_rate"] == pytest.approx(0.25)
    assert table["parse_failure_rate"] == pytest.approx(0.25)
    # an ambiguous reply is a parse failure too
    frame.loc[3, "parse_status"] = "ambiguous"
    assert analyze_gender_probe(frame).table.iloc[0]["neutral_rate"] == pytest.approx(0.25)
    # without the column the status is unknown: an empty letter counts as a refusal, failures are not known
    table = analyze_gender_probe(frame.drop(columns=["parse_status"])).table.iloc[0]
    assert table["neutral_rate"] == pytest.approx(0.5)
    assert np.isnan(table["parse_failure_rate"])


def test_parse_status_must_agree_with_the_prediction():
    rows = [
        {"voice_gender": "M", "prediction": "A", "parse_status": "failed"},
        {"voice_gender": "F", "prediction": "", "parse_status": "ok"},
        {"voice_gender": "F", "prediction": "", "parse_status": "maybe"},
    ]
    frame = responses(rows, question_id="q1", model="s", category="dependent", option_orientation="MF")
    with pytest.raises(InputError) as error:
        analyze_gender_probe(frame)
    text = str(error.value)
    assert "has no letter" in text and "while parse_status is ok" in text and "must be ok, refusal" in text


def test_delta_for_a_text_backbone_by_hand():
    # a text model (no voice): q1 M, q2 F, q3 M, q4 two answers M and F -> d = 1, -1, 1, 0 (Table 5 was NaN)
    rows = [
        {"question_id": "q1", "prediction": "A"},
        {"question_id": "q2", "prediction": "B"},
        {"question_id": "q3", "prediction": "A"},
        {"question_id": "q4", "prediction": "A"},
        {"question_id": "q4", "prediction": "B"},
        {"question_id": "q5", "prediction": "C"},  # neutral only: left out of Δ, counted in ν
    ]
    frame = responses(rows, model="llm", category="stereotypical", voice_gender="", option_orientation="MFN")
    table = analyze_gender_probe(frame).table.iloc[0]
    expected = stats.ttest_1samp([1.0, -1.0, 1.0, 0.0], 0.0)
    assert table["delta"] == pytest.approx(0.25)
    assert table["delta_questions"] == 4
    assert table["t_stat"] == pytest.approx(expected.statistic)
    assert table["p_value"] == pytest.approx(expected.pvalue)
    assert table["male_rate"] == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert table["female_rate"] == pytest.approx((0 + 1 + 0 + 0.5) / 4)
    assert table["neutral_rate"] == pytest.approx(1 / 6)
    assert np.isnan(table["J"])  # no voices, no overlap


def test_backbone_kappa_and_bowker_by_hand():
    # pairs (speech, backbone): (M, M), (M, M), (F, M), (F, F) -> table [[2, 0], [1, 1]]
    # p_o = 3/4; p_e = (2·3 + 2·1) / 16 = 1/2 -> κ = (3/4 - 1/2) / (1/2) = 1/2
    # Bowker: (n_MF - n_FM)² / (n_MF + n_FM) = (0 - 1)² / 1 = 1, df 1, p = P(χ²₁ > 1) = 0.3173
    speech = [("q1", "M", "A"), ("q2", "M", "A"), ("q3", "F", "B"), ("q4", "F", "B")]
    backbone = [("q1", "A"), ("q2", "A"), ("q3", "A"), ("q4", "B")]
    rows = [{"question_id": q, "model": "s", "voice_gender": v, "prediction": p} for q, v, p in speech]
    rows += [{"question_id": q, "model": "llm", "voice_gender": "", "prediction": p} for q, p in backbone]
    frame = responses(rows, category="stereotypical", option_orientation="MF")
    row = analyze_gender_probe(frame, ["s=llm"]).table.set_index("model").loc["s"]
    assert row["agreement"] == pytest.approx(0.75)
    assert row["kappa"] == pytest.approx(0.5)
    assert (row["bowker_stat"], row["bowker_df"]) == (pytest.approx(1.0), 1)
    assert row["bowker_p"] == pytest.approx(stats.chi2.sf(1.0, 1)) and row["bowker_p"] == pytest.approx(
        0.3173, abs=1e-4
    )


def test_neutralized_voices_are_their_own_setting():
    from spokenbench.core.importers.exports import with_neutralized_setting

    frame = pd.DataFrame(
        {
            "voice": ["espeak-male", "espeak-male-neutral-approx", "espeak-female-neutral-approx", "x"],
            "setting": ["binary_option", "binary_option", "neutral_option", None],  # None: a multiple-choice row
        }
    )
    out = with_neutralized_setting(frame, {"espeak-male-neutral-approx", "espeak-female-neutral-approx", "x"})
    assert out["setting"].tolist()[:3] == ["binary_option", "neutralized_voice", "neutral_option_neutralized_voice"]
    assert pd.isna(out["setting"].iloc[3])
