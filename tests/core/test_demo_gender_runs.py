"""The demo's gender study (issue 12 item 8): simulated listeners with and without a male-oriented preference hear
the 12 gender probes in the binary and neutral-option settings, the balanced one also reads them as the backbone of
both (pairs declared in the project), and `spokenbench report DEMO --kind gender-probe` shows the difference
offline."""

import shutil

import pandas as pd
import pytest

from spokenbench.core.demo import DEMO_GENDER_PROMPTS
from spokenbench.core.metrics.gender_backbones import project_backbone_pairs
from spokenbench.core.metrics.store import run_list
from spokenbench.core.store import Project


@pytest.fixture(scope="module")
def demo(built_demo, tmp_path_factory):
    """The session's demo, copied once for this module (a report opens the project)."""
    return shutil.copytree(built_demo, tmp_path_factory.mktemp("gender-demo") / "demo-project")


def test_the_demo_holds_the_gender_study_runs(demo):
    with Project.open(demo) as project:
        runs = run_list(project.conn)
    gender = [r for r in runs if str(r.get("name", "")).startswith("gender study")]
    assert len(gender) == 6 and all(r["status"] == "finished" and r["simulated"] for r in gender)
    models = sorted(r["model"] for r in gender)
    assert models == sorted(
        ["simulated:male-leaning", "simulated:gender-balanced", "simulated:gender-balanced"] * len(DEMO_GENDER_PROMPTS)
    )
    # 12 probes × 3 accents × 2 voice genders per speech run; 12 per text backbone run
    assert sorted(r["responses"] for r in gender) == [12, 12, 72, 72, 72, 72]
    assert project_backbone_pairs(demo) == {
        "simulated:male-leaning": "simulated:gender-balanced",
        "simulated:gender-balanced": "simulated:gender-balanced",
    }
    # the multiple-choice listeners answer no probes, so the Results panels keep their plain names
    assert {r["model"] for r in runs if r not in gender} == {
        "simulated:steady",
        "simulated:order-sensitive",
        "simulated:accent-sensitive",
    }


def test_report_kind_gender_probe_on_the_demo_shows_the_male_preference(demo, cli, tmp_path):
    out = tmp_path / "report"
    result = cli("report", demo, "--kind", "gender-probe", "--out", out, "--bootstrap", "200")
    assert result.code == 0, result.err
    for stem in (
        "gender_probe",
        "gender_probe_per_question",
        "paper_table01_speechlm_baseline",
        "paper_table02_speechlm_neutral_option",
        "paper_table05_backbone_llms",
        "paper_table09_preference_test_sec3_stereotypical",
        "paper_table16_preference_test_sec4_neutral_option_stereotypical",
    ):
        assert (out / f"{stem}.csv").is_file(), stem
    table = pd.read_csv(out / "gender_probe.csv")
    assert set(table["setting"]) == {"binary_option", "neutral_option"}
    stereo = table[table["category"] == "stereotypical"].set_index(["setting", "model"])
    for setting in ("binary_option", "neutral_option"):
        leaning = stereo.loc[(setting, "simulated:male-leaning")]
        balanced = stereo.loc[(setting, "simulated:gender-balanced")]
        assert leaning["delta"] > 0.3 > abs(balanced["delta"])  # a male-oriented preference, and none
        assert leaning["backbone"] == "simulated:gender-balanced (text)" and pd.notna(leaning["kappa"])
    binary = stereo.loc[("binary_option", "simulated:male-leaning")]
    assert binary["p_value"] < 0.05 < stereo.loc[("binary_option", "simulated:gender-balanced"), "p_value"]
    neutral = table[(table["setting"] == "neutral_option") & ~table["model"].str.endswith("(text)")]
    assert (neutral["neutral_rate"] > 0).all()  # the neutral option is chosen


def test_the_apps_gender_detail_has_the_reports_numbers(demo, cli, tmp_path):
    from spokenbench.core.gender_views import gender_view, question_versions

    out = tmp_path / "report"
    assert cli("report", demo, "--kind", "gender-probe", "--out", out, "--bootstrap", "0").code == 0
    report = pd.read_csv(out / "gender_probe.csv").set_index(["setting", "model", "category"])
    with Project.open(demo) as project:
        view = gender_view(project, n_resamples=0)
        first = view.questions[0]["item_id"]
        versions = question_versions(project, first)
    summary = view.summary.set_index(["setting", "model", "category"])
    assert len(summary) == len(report) == 2 * 3 * 3  # settings × (two speech models, one text) × categories
    for column in ("J", "delta", "p_value", "neutral_rate", "kappa"):
        pd.testing.assert_series_equal(
            summary[column].sort_index(), report[column].sort_index(), check_names=False, check_dtype=False
        )
    assert summary.loc[("binary_option", "simulated:male-leaning", "stereotypical"), "mark"] == "**"  # p 0.007
    # distributions: 12 probes × 2 voiced models × 2 settings, each with 3 answers per voice
    assert len(view.distributions) == 48 and (view.distributions[["n_male", "n_female"]] == 3).all().all()
    assert (view.distributions["disagreement"] == 1 - view.distributions["J"]).all()
    assert [len(versions.versions[k]) for k in ("male", "female", "neutralized")] == [3, 3, 2]
    assert {v.accent for v in (versions.first("male"), versions.first("female"), versions.first("neutralized"))} == {
        "american"
    }


def test_answer_codes_and_significance_marks():
    from spokenbench.core.gender_views import answer_code, significance_mark

    assert answer_code("B", "AB", "FM", "ok") == "M"  # orientations are per presented option
    assert answer_code("C", "ABC", "MFN", "ok") == "N"
    assert answer_code("A", "BA", "XX", "ok") == "B"  # no orientation: the original letter
    assert answer_code("", "AB", "MF", "refusal") == "refusal"
    assert answer_code(float("nan"), "AB", "MF", "failed") == "failed"
    assert [significance_mark(p) for p in (0.0009, 0.007, 0.03, 0.05, 0.5, float("nan"), None)] == [
        "***",
        "**",
        "*",
        "",
        "",
        "",
        "",
    ]
