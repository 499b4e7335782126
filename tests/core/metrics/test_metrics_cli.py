"""`spokenbench metrics` and `spokenbench report` as users and scripts run them: exit codes, the --json
contract, clear errors without tracebacks, and one run of the real console script."""

import json

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import random_design
from support import run_console_script

from spokenbench.core.metrics.synthetic import gender_probe_like


@pytest.fixture
def mcq_file(tmp_path):
    path = tmp_path / "responses.csv"
    random_design(np.random.default_rng(0), n_questions=8).to_csv(path, index=False)
    return path


@pytest.fixture
def probe_file(tmp_path):
    path = tmp_path / "probes.jsonl"
    gender_probe_like(n_questions=24, seed=2).to_json(path, orient="records", lines=True)
    return path


@pytest.mark.slow
def test_metrics_json_is_keyed_by_model(cli, mcq_file):
    result = cli("metrics", mcq_file, "--factors", "language,accent,gender,order", "--bootstrap", "200", "--json")
    assert result.code == 0, result.err
    data = result.json()
    assert list(data) == ["m1", "m2"]
    entry = data["m1"]
    assert entry["n"] == 8 * 5 * 2 * 2
    assert set(entry["apes"]) == set(entry["fleiss_kappa"]) == {"language", "accent", "gender", "order"}
    for key in ("accuracy", "entropy_mean", "rsd", "ckld", "parse_failure_rate"):
        assert isinstance(entry[key], float)
    assert entry["ci"]["resamples"] == 200 and len(entry["ci"]["accuracy"]) == 2
    assert set(entry["ci"]["fleiss_kappa"]) == {"language", "accent", "gender", "order"}


def test_metrics_default_factors_and_no_bootstrap(cli, mcq_file):
    result = cli("metrics", mcq_file, "--bootstrap", "0", "--json")
    assert result.code == 0, result.err
    entry = result.json()["m2"]
    assert "ci" not in entry
    assert set(entry["apes"]) == {"language", "accent", "gender", "order"}  # every other column with few levels


@pytest.mark.slow
def test_metrics_text_output(cli, mcq_file):
    result = cli("metrics", mcq_file, "--factors", "gender,order", "--bootstrap", "50")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].split() == ["model", "n", "accuracy", "entropy_mean", "rsd", "ckld", "parse_failures"]
    assert any(line.startswith("m1") and "[" in line for line in lines)  # accuracy with its interval
    assert any(line.split()[:2] == ["m2", "order"] for line in lines)


def test_gender_probe_json_keyed_by_model_then_category(cli, probe_file):
    result = cli(
        "metrics",
        probe_file,
        "--kind",
        "gender-probe",
        "--backbone",
        "speech_a=text_a",
        "--backbone",
        "speech_b=text_a",
        "--bootstrap",
        "100",
        "--json",
    )
    assert result.code == 0, result.err
    data = result.json()
    assert set(data) == {"speech_a", "speech_b", "text_a"}
    assert set(data["speech_a"]) == {"independent", "stereotypical", "dependent"}
    entry = data["speech_b"]["dependent"]
    assert {"J", "delta", "p_value", "neutral_rate", "kappa", "bowker_p"} <= set(entry)
    assert entry["backbone"] == "text_a" and isinstance(entry["kappa"], float)


def test_gender_probe_kind_is_detected(cli, probe_file):
    result = cli("metrics", probe_file, "--bootstrap", "0")
    assert result.code == 0, result.err
    assert result.out.split()[:4] == ["model", "category", "n", "J"]


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda f: f.drop(columns=["answer"]), "column 'answer': required column is missing"),
        (
            lambda f: f.assign(prediction=["E"] + list(f["prediction"][1:])),
            "row 1, column 'prediction': letter outside",
        ),
        (lambda f: f.assign(answer=["D"] + list(f["answer"][1:])), "has different gold answers"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(cli, tmp_path, mutate, expected):
    frame = mutate(random_design(np.random.default_rng(0), n_questions=2))
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    result = cli("metrics", path, "--json")
    assert result.code == 2
    assert result.err.startswith("error: ") and expected in result.err
    assert "Traceback" not in result.err and result.out == ""


def test_unknown_factor_empty_file_and_wrong_options(cli, mcq_file, tmp_path):
    result = cli("metrics", mcq_file, "--factors", "gender,dialect")
    assert result.code == 2 and "column 'dialect': unknown factor" in result.err
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    result = cli("metrics", empty)
    assert result.code == 2 and "the file is empty" in result.err
    result = cli("metrics", mcq_file, "--backbone", "m1=m2")
    assert result.code == 2 and "--backbone applies to --kind gender-probe only" in result.err
    with pytest.raises(SystemExit) as caught:
        cli("metrics", mcq_file, "--bootstrap", "-1")
    assert caught.value.code == 2


@pytest.mark.slow
def test_report_writes_tables_and_figures(cli, mcq_file, tmp_path):
    out = tmp_path / "report"
    result = cli("report", mcq_file, "--out", out, "--factors", "language,accent,gender,order", "--bootstrap", "100")
    assert result.code == 0, result.err
    assert f"to {out}" in result.out
    for stem in ("summary", "robustness_by_factor", "accuracy_by_order", "permutation_voting", "model_ranking"):
        for suffix in (".csv", ".md", ".tex"):
            assert (out / f"{stem}{suffix}").is_file(), stem + suffix
    for stem in (
        "fig_entropy_distribution",
        "fig_kappa_vs_apes",
        "fig_accuracy_change_by_gold_position",
        "fig_ranking_changes",
    ):
        assert (out / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert "<svg" in (out / f"{stem}.svg").read_text()
    assert "skipped fig_entropy_cs_ca" in result.out  # the design has no cultural_label
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["model"]) == ["m1", "m2"] and "accuracy_ci_low" in summary.columns


@pytest.mark.slow
def test_report_of_gender_probes(cli, probe_file, tmp_path):
    out = tmp_path / "gp"
    result = cli("report", probe_file, "--out", out, "--backbone", "speech_a=text_a", "--bootstrap", "50")
    assert result.code == 0, result.err
    assert (out / "gender_probe.csv").is_file() and (out / "fig_gender_probe.svg").is_file()


def _project_with_responses(path):
    """A project with a few items and one stored run, written the way the runner stores answers (the
    schema's responses table), since this test must not depend on the runner."""
    from spokenbench.core.domain.items import Item, Option
    from spokenbench.core.store import Project
    from spokenbench.core.store.items import insert_items

    options = tuple(Option(letter, f"option {letter}") for letter in "ABCD")
    items = [
        Item(
            source="t",
            source_id=f"s{n}",
            language=language,
            question=f"question {n}?",
            options=options,
            answer="ABCD"[n % 4],
            cultural_label="CS" if n % 2 else "CA",
        )
        for n in range(6)
        for language in ("en", "zh")
    ]
    with Project.create(path) as project, project.transaction() as conn:
        ids = insert_items(conn, items)
        run = conn.execute(
            "INSERT INTO runs(name, model, mode, prompt, created_at) VALUES "
            "('r1', 'model-x', 'audio', 'standard', '2026-01-01')"
        ).lastrowid
        for n, (item_id, item) in enumerate(zip(ids, items)):
            for gender in ("female", "male"):
                for order, perm in (("original", "ABCD"), ("reversed", "DCBA")):
                    key = json.dumps({"gender": gender, "order": order}, sort_keys=True)
                    letter = "ABCD"[perm.index(item.answer)] if n % 3 else "A"
                    conn.execute(
                        "INSERT INTO responses(run_id, item_id, condition_key, option_order, parsed_letter, "
                        "parse_status, created_at) VALUES (?, ?, ?, ?, ?, 'ok', '2026-01-01')",
                        (run, item_id, key, perm, letter),
                    )


@pytest.mark.slow
def test_report_of_a_project_folder(cli, tmp_path):
    project = tmp_path / "proj"
    _project_with_responses(project)
    out = tmp_path / "project-report"
    result = cli("report", project, "--out", out, "--bootstrap", "0")
    assert result.code == 0, result.err
    summary = pd.read_csv(out / "summary.csv")
    assert list(summary["model"]) == ["model-x"]
    factors = set(pd.read_csv(out / "robustness_by_factor.csv")["factor"])
    assert {"gender", "order", "language"} <= factors


def test_report_of_a_folder_that_is_not_a_project(cli, tmp_path):
    (tmp_path / "plain").mkdir()
    result = cli("report", tmp_path / "plain", "--out", tmp_path / "out")
    assert result.code == 2 and "not a SpokenBench project" in result.err


@pytest.mark.slow
def test_the_installed_console_script(mcq_file, tmp_path):
    result = run_console_script("metrics", mcq_file, "--factors", "gender,order", "--bootstrap", "0", "--json")
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)) == {"m1", "m2"}
    bad = run_console_script("metrics", tmp_path / "missing.csv")
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_report_of_a_projects_gender_probes(cli, demo_copy, tmp_path):
    """Gender-probe answers stored in a project carry voice_gender and option_orientation through the export,
    so `report PROJECT --kind gender-probe` reports them; the multiple-choice report leaves them out."""
    run = cli(
        "evaluate",
        demo_copy,
        "--model",
        "simulated:steady",
        "--mode",
        "audio",
        "--prompt",
        "standard",
        "--kind",
        "gender-probe",
    )
    assert run.code == 0, run.err
    result = cli("report", demo_copy, "--out", tmp_path / "gp", "--kind", "gender-probe", "--bootstrap", "0")
    assert result.code == 0, result.err
    table = pd.read_csv(tmp_path / "gp" / "gender_probe.csv")
    assert set(table["category"]) == {"independent", "stereotypical", "dependent"}
    assert (tmp_path / "gp" / "fig_gender_probe_binary_option.png").is_file()  # one figure per answer setting
    mcq = cli("report", demo_copy, "--out", tmp_path / "mcq", "--bootstrap", "0")
    assert mcq.code == 0 and (tmp_path / "mcq" / "accuracy_by_factor_level.csv").is_file()


@pytest.mark.slow
def test_report_of_a_project_without_gender_probe_answers(cli, demo_copy, tmp_path):
    from spokenbench.core.store import opened

    with opened(demo_copy) as project, project.transaction() as conn:  # the demo's gender-study runs removed
        conn.execute(
            "DELETE FROM runs WHERE id IN (SELECT r.run_id FROM responses r JOIN items i ON i.id = r.item_id "
            "WHERE i.kind = 'gender-probe')"
        )
    result = cli("report", demo_copy, "--out", tmp_path / "gp", "--kind", "gender-probe")
    assert result.code == 2 and "no gender-probe responses" in result.err
