"""`spokenbench demo DIR --report OUT` (issue 15 item 3): the demo's full report, headless and offline."""

import pytest


def test_demo_report_refuses_an_occupied_folder_before_building(cli, tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = cli("demo", tmp_path / "demo-project", "--report", out)
    assert result.code == 2
    assert "not empty" in result.err and str(out) in result.err
    assert not (tmp_path / "demo-project").exists()  # refused before the demo was built
    assert (out / "notes.txt").read_text() == "mine"


def test_demo_report_needs_its_own_folder(cli, tmp_path):
    result = cli("demo", tmp_path / "demo-project", "--report", tmp_path / "demo-project")
    assert result.code == 2 and "other than the demo project" in result.err


def _check_report(out, project):
    index = (out / "index.md").read_text(encoding="utf-8")
    assert (out / "mcq" / "README.md").exists() and (out / "gender-probe" / "README.md").exists()
    assert "(mcq/README.md)" in index and "(gender-probe/README.md)" in index
    figures = [line for line in index.splitlines() if line.startswith("![")]
    assert len(figures) >= 4
    for line in figures:
        assert (out / line.split("](")[1].rstrip(")")).is_file()
    assert "Which numbers are simulated and which are published" in index
    assert "Guided tour of the findings" in index and "simulated:male-leaning" in index
    assert (out / "published" / "biasinear" / "table10_models.csv").is_file()
    # the parts are what `spokenbench report` writes
    assert (out / "mcq" / "summary.csv").is_file() and (out / "gender-probe" / "gender_probe.csv").is_file()


@pytest.mark.slow
def test_demo_report_command_writes_the_full_report(cli, tmp_path):
    out = tmp_path / "report"
    result = cli("demo", tmp_path / "demo-project", "--report", out)
    assert result.code == 0, result.err
    assert "9 figures" in result.out and "index.md" in result.out  # 9 since the free-form figure (issue 25)
    table3 = (out / "gender-probe" / "paper_table03_speechlm_free_form.md").read_text(encoding="utf-8")
    assert "J_s" in table3 and "Δ_s" in table3 and "simulated:male-leaning" in table3
    _check_report(out, tmp_path / "demo-project")


@pytest.mark.slow
def test_demo_report_one_process_matches_two(built_demo, tmp_path):
    from spokenbench.core.demo.report import write_demo_report

    one = write_demo_report(built_demo, tmp_path / "one", parallel=False)
    two = write_demo_report(built_demo, tmp_path / "two", parallel=True)
    assert two.parallel and not one.parallel
    _check_report(tmp_path / "one", built_demo)
    for name in ("mcq", "gender-probe"):
        for path in one.parts[name].files:
            if path.suffix == ".csv":
                assert path.read_bytes() == (tmp_path / "two" / name / path.name).read_bytes(), path.name
