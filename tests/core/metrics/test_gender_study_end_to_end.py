"""The gender study end to end, offline: the demo's 12 gender probes imported into a new project, run by the
simulated listeners (a male-leaning and a balanced speech listener, a text backbone) under the paper's three
prompts, the backbone pairs declared once, and `spokenbench report DIR --kind gender-probe` writing the paper's
tables without a --backbone flag."""

import importlib.resources

import numpy as np
import pandas as pd
import pytest

from spokenbench.core.cli.main import main
from spokenbench.core.demo.project import run_simulated_gender_study
from spokenbench.core.importers import import_files
from spokenbench.core.importers.exports import responses_frame
from spokenbench.core.metrics.gender_study import analyze_gender_study, project_study_frame
from spokenbench.core.store import Project


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    path = tmp_path_factory.mktemp("gender") / "study"
    resource = importlib.resources.files("spokenbench.resources") / "demo" / "demo_gender_probes.jsonl"
    with importlib.resources.as_file(resource) as probes, Project.create(path) as project:
        assert import_files(project, [probes], "gender-probe") is not None
        summaries = run_simulated_gender_study(project)
    assert len(summaries) == 9 and all(s.status == "finished" for s in summaries)
    return path


@pytest.mark.slow
def test_the_export_carries_the_neutral_option_and_the_parse_status(project):
    with Project.open(project) as opened:
        frame = responses_frame(opened.conn)
    assert len(frame) == 12 * 6 * 2 * 3 + 12 * 3  # 12 probes × 6 voices × 2 listeners × 3 prompts, + backbone
    neutral = frame[frame["setting"] == "neutral_option"]
    assert (neutral["option_orientation"].str[-1] == "N").all()
    chose = neutral[neutral["parse_detail"] == "neutral"]
    assert len(chose) > 0
    letters = [order[-1] for order in chose["option_order"]]  # the neutral option is the last presented one
    assert chose["prediction"].tolist() == letters
    binary = frame[frame["setting"] == "binary_option"]
    assert not (binary["option_orientation"].str.len() > binary["option_order"].str.len()).any()


@pytest.mark.slow
def test_report_from_the_project_pairs_the_declared_backbones(project, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["backbone", str(project)]) == 0
    assert "simulated:steady" in capsys.readouterr().out
    assert main(["report", str(project), "--kind", "gender-probe", "--out", str(out), "--bootstrap", "100"]) == 0
    for stem in (
        "gender_probe",
        "paper_table01_speechlm_baseline",
        "paper_table02_speechlm_neutral_option",
        "paper_table03_speechlm_free_form",
        "paper_table05_backbone_llms",
        "paper_table09_preference_test_sec3_stereotypical",
        "paper_table12_backbone_kappa_test_sec3_stereotypical",
        "paper_table14_overlap_ci_sec4_neutral_option",
        "paper_table18_preference_test_sec4_free_form_dependent_delta_s",
        "paper_table32_backbone_llm_preference_test_free_form_dependent",
    ):
        assert (out / f"{stem}.csv").exists(), stem
    assert (out / "paper_table01_speechlm_baseline.md").exists()
    index = (out / "README.md").read_text(encoding="utf-8")
    assert "paper_table04_speechlm_neutralized_voice: no speech-model runs" in index  # no such runs: said why

    table = pd.read_csv(out / "gender_probe.csv")
    stereo = table[(table["category"] == "stereotypical") & (table["setting"] == "binary_option")].set_index("model")
    assert stereo.loc["simulated:male-leaning", "delta"] > stereo.loc["simulated:gender-balanced", "delta"]
    assert stereo.loc["simulated:male-leaning", "backbone"] == "simulated:steady"  # paired without a flag
    assert np.isfinite(stereo.loc["simulated:male-leaning", "kappa"])
    assert np.isfinite(stereo.loc["simulated:steady", "delta"])  # Δ for the backbone LLM (Table 5 was NaN)
    free = table[(table["setting"] == "free_form") & (table["category"] == "dependent")].set_index("model")
    assert free["unclassified_rate"].notna().all()
    table5 = pd.read_csv(out / "paper_table05_backbone_llms.csv")
    assert set(table5["model"]) == {"simulated:steady"} and table5["value"].notna().all()


@pytest.mark.slow
def test_nu_counts_neutral_answers_and_refusals_only(project):
    frame, pairs = project_study_frame(project)
    assert pairs == {"simulated:male-leaning": "simulated:steady", "simulated:gender-balanced": "simulated:steady"}
    study = analyze_gender_study(frame, pairs)
    rows = frame[(frame["setting"] == "neutral_option") & (frame["model"] == "simulated:male-leaning")]
    for category, group in rows.groupby("category"):
        orientation_of_answer = [
            o[order.index(p)] if isinstance(p, str) and p else ""
            for o, order, p in zip(group["option_orientation"], group["option_order"], group["prediction"])
        ]
        neutral = sum(o == "N" for o in orientation_of_answer) + (group["parse_status"] == "refusal").sum()
        neutral -= ((group["parse_status"] == "refusal") & (group["parse_detail"] == "neutral")).sum()  # counted once
        failures = group["parse_status"].isin(["failed", "ambiguous"]).sum()
        row = study.table.set_index(["setting", "model", "category"]).loc[
            ("neutral_option", "simulated:male-leaning", category)
        ]
        assert row["neutral_rate"] == pytest.approx(neutral / len(group))
        assert row["parse_failure_rate"] == pytest.approx(failures / len(group))


def test_the_paper_prompts_are_accepted_by_evaluate(project, capsys):
    argv = ["evaluate", str(project), "--model", "simulated:male-leaning", "--mode", "audio+text-options"]
    assert main([*argv, "--prompt", "gender-paper-open", "--kind", "gender-probe", "--dry-run"]) == 0
    with pytest.raises(SystemExit) as exited:  # argparse: an unknown prompt exits 2 naming the choices
        main([*argv, "--prompt", "gender-papers", "--kind", "gender-probe", "--dry-run"])
    assert exited.value.code == 2
    assert "gender-paper-neutral" in capsys.readouterr().err


@pytest.mark.slow
def test_a_model_run_with_voices_and_as_text_is_paired_with_itself(tmp_path):
    resource = importlib.resources.files("spokenbench.resources") / "demo" / "demo_gender_probes.jsonl"
    path = tmp_path / "same"
    with importlib.resources.as_file(resource) as probes, Project.create(path) as project:
        import_files(project, [probes], "gender-probe")
        run_simulated_gender_study(project, ("steady",), "steady", ("gender-paper",))
    frame, pairs = project_study_frame(path)
    assert set(frame["model"]) == {"simulated:steady", "simulated:steady (text)"}
    assert pairs == {"simulated:steady": "simulated:steady (text)"}
    study = analyze_gender_study(frame, pairs)
    paired = study.table[study.table["model"] == "simulated:steady"]
    assert (paired["backbone"] == "simulated:steady (text)").all() and paired["agreement"].notna().all()


@pytest.mark.slow
def test_metrics_on_the_exported_responses_file(project, tmp_path, capsys):
    import json

    exported = tmp_path / "responses.csv"
    assert main(["export", str(project), "--what", "responses", "--kind", "gender", "--out", str(exported)]) == 0
    capsys.readouterr()
    argv = ["metrics", str(exported), "--kind", "gender-probe", "--bootstrap", "0", "--json"]
    assert main([*argv, "--backbone", "simulated:male-leaning=simulated:steady"]) == 2  # several settings
    assert "--setting" in capsys.readouterr().err
    assert main([*argv, "--setting", "neutral_option", "--backbone", "simulated:male-leaning=simulated:steady"]) == 0
    result = json.loads(capsys.readouterr().out)
    entry = result["simulated:male-leaning"]["stereotypical"]
    assert entry["setting"] == "neutral_option" and entry["backbone"] == "simulated:steady"
    assert entry["parse_failure_rate"] is not None and entry["kappa"] is not None
    assert main([*argv, "--setting", "all"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"binary_option", "neutral_option", "free_form"}
