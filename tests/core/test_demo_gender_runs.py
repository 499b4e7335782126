"""The demo's gender study (issue 12 item 8): simulated listeners with and without a male-oriented preference hear
the 12 gender probes in the binary, neutral-option and free-form settings (issue 25: free form added, every probe
with the paper's two options), the balanced one also reads them as the backbone of both (pairs declared in the
project), and `spokenbench report DEMO --kind gender-probe` shows the difference offline."""

import json

import pandas as pd
import pytest
from demo_copies import linked_copy

from spokenbench.core.demo.project import DEMO_GENDER_PROMPTS, DEMO_NEUTRALIZED_PROMPTS, demo_file

with demo_file("demo_gender_probes.jsonl") as _path:
    DEMO_PROBES = _path.read_text(encoding="utf-8")
from spokenbench.core.metrics.gender_backbones import project_backbone_pairs
from spokenbench.core.metrics.store import run_list
from spokenbench.core.store import Project


@pytest.fixture(scope="module")
def demo(built_demo, tmp_path_factory):
    """The session's demo, copied once for this module (a report opens the project)."""
    return linked_copy(built_demo, tmp_path_factory.mktemp("gender-demo") / "demo-project")


@pytest.mark.slow
def test_the_demo_holds_the_gender_study_runs(demo):
    with Project.open(demo) as project:
        runs = run_list(project.conn)
    gender = [r for r in runs if str(r.get("name", "")).startswith("gender study")]
    assert len(gender) == 11 and all(r["status"] == "finished" and r["simulated"] for r in gender)
    models = sorted(r["model"] for r in gender)
    assert models == sorted(
        ["simulated:male-leaning", "simulated:gender-balanced", "simulated:gender-balanced"] * len(DEMO_GENDER_PROMPTS)
        + ["simulated:male-leaning", "simulated:gender-balanced"] * len(DEMO_NEUTRALIZED_PROMPTS)
    )
    # 12 probes × 3 accents × 2 voice genders per speech run; 12 per text backbone run; 12 probes × the neutralized
    # approximation of one male and one female voice per neutralized-voice run
    assert sorted(r["responses"] for r in gender) == [12, 12, 12, 24, 24, 72, 72, 72, 72, 72, 72]
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


@pytest.mark.slow
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
    assert set(table["setting"]) == {"binary_option", "neutral_option", "free_form", "neutralized_voice"}
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
    probes = [json.loads(line) for line in DEMO_PROBES.splitlines() if line.strip()]
    assert all(len(probe["options"]) == 2 for probe in probes)  # as in the paper: the prompt adds the neutral one


@pytest.mark.slow
def test_the_free_form_runs_give_j_s_delta_s_and_s(demo, cli, tmp_path):
    """Issue 25: J_s, Δ_s and s in the demo — simulated free answers (an option's words), labelled simulated."""
    out = tmp_path / "report"
    assert cli("report", demo, "--kind", "gender-probe", "--out", out, "--bootstrap", "0").code == 0
    table = pd.read_csv(out / "gender_probe.csv")
    free = table[(table["setting"] == "free_form") & ~table["model"].str.endswith("(text)")]
    assert len(free) == 2 * 3 and free["J_s"].between(0, 1).all() and free["s"].between(0, 1).all()
    dependent = free[free["category"] == "dependent"].set_index("model")
    assert dependent["delta_s"].notna().all() and (dependent["classified_rate"] > 0.5).all()
    assert dependent.loc["simulated:male-leaning", "delta_s"] > dependent.loc["simulated:gender-balanced", "delta_s"]
    table3 = pd.read_csv(out / "paper_table03_speechlm_free_form.csv")
    assert {"response_overlap_js", "backbone_influence_s", "gender_preference_delta_s"} <= set(table3["metric"])
    assert set(table3["model"]) == {"simulated:male-leaning", "simulated:gender-balanced"}


@pytest.mark.slow
def test_report_table_4_shows_the_neutralized_voices(demo, cli, tmp_path):
    """The paper's Section 5 in the demo: the speech listeners answer the neutralized question clips; Table 4 has
    the layout of Table 1 (J, κ, ν; J, Δ, κ, ν), J and Δ by the gender of the voice each clip was made from, κ
    against the backbone's binary answers (it reads the same text)."""
    out = tmp_path / "report"
    assert cli("report", demo, "--kind", "gender-probe", "--out", out, "--bootstrap", "0").code == 0
    for stem in ("paper_table04_speechlm_neutralized_voice", "paper_table22_overlap_ci_sec5_neutralized_voice"):
        assert (out / f"{stem}.csv").is_file() and (out / f"{stem}.md").is_file(), stem
    table4 = pd.read_csv(out / "paper_table04_speechlm_neutralized_voice.csv")
    assert set(table4["model"]) == {"simulated:male-leaning", "simulated:gender-balanced"}  # no text model
    metrics = table4.groupby("category")["metric"].apply(set).to_dict()
    assert metrics["independent"] == {"response_overlap_j", "backbone_influence_kappa", "neutral_response_rate_nu"}
    assert metrics["stereotypical"] == metrics["independent"] | {"gender_preference_delta"}
    values = table4.set_index(["model", "category", "metric"])["value"]
    assert values.loc[("simulated:male-leaning", "stereotypical", "gender_preference_delta")] > 0.3  # it persists
    assert values.xs("backbone_influence_kappa", level="metric").notna().all()
    summary = pd.read_csv(out / "gender_probe.csv")
    neutralized = summary[summary["setting"] == "neutralized_voice"]
    assert (neutralized["backbone"] == "simulated:gender-balanced (text)").all()
    assert (neutralized["n"] == 8).all()  # 4 probes per category × one clip from a male and one from a female voice


@pytest.mark.slow
def test_the_apps_gender_detail_has_the_reports_numbers(demo, cli, tmp_path):
    from spokenbench.core.results.gender_views import gender_view, question_versions

    out = tmp_path / "report"
    assert cli("report", demo, "--kind", "gender-probe", "--out", out, "--bootstrap", "0").code == 0
    report = pd.read_csv(out / "gender_probe.csv").set_index(["setting", "model", "category"])
    with Project.open(demo) as project:
        view = gender_view(project, n_resamples=0)
        first = view.questions[0]["item_id"]
        versions = question_versions(project, first)
    summary = view.summary.set_index(["setting", "model", "category"])
    # settings × (two speech models, one text) × categories, and the neutralized voices' two speech models
    assert len(summary) == len(report) == 3 * 3 * 3 + 2 * 3
    for column in ("J", "delta", "p_value", "neutral_rate", "kappa"):
        pd.testing.assert_series_equal(
            summary[column].sort_index(), report[column].sort_index(), check_names=False, check_dtype=False
        )
    # p 0.014 (0.007 while two probes carried a third, neutral option under the binary prompt)
    assert summary.loc[("binary_option", "simulated:male-leaning", "stereotypical"), "mark"] == "*"
    # distributions: 12 probes × 2 voiced models × 3 settings, each with 3 answers per voice, and the neutralized
    # voices' one answer per source gender
    assert len(view.distributions) == 72 + 24
    plain = view.distributions[view.distributions["setting"] != "neutralized_voice"]
    neutralized = view.distributions[view.distributions["setting"] == "neutralized_voice"]
    assert (plain[["n_male", "n_female"]] == 3).all().all() and (neutralized[["n_male", "n_female"]] == 1).all().all()
    pd.testing.assert_series_equal(view.distributions["disagreement"], 1 - view.distributions["J"], check_names=False)
    assert [len(versions.versions[k]) for k in ("male", "female", "neutralized")] == [3, 3, 2]
    assert {v.accent for v in (versions.first("male"), versions.first("female"), versions.first("neutralized"))} == {
        "american"
    }


def test_answer_codes_and_significance_marks():
    from spokenbench.core.results.gender_views import answer_code, significance_mark

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
