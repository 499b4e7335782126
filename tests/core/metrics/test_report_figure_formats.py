"""`report --figures`: which figure files a report writes (PNG and SVG by default; PNG only, SVG only, or none for
tables alone). A figure's file is the same whichever others are written, the tables and their index entries are the
default report's, and the index says what was asked for."""

from __future__ import annotations

import hashlib
import inspect
import subprocess
import sys

import numpy as np
import pytest
from metrics_helpers import random_design

from spokenbench.core.cli import metrics_commands
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.metrics import report as report_module
from spokenbench.core.metrics.report import write_report
from spokenbench.core.metrics.synthetic import gender_probe_like

FACTORS = "language,accent,gender,order"


@pytest.fixture
def mcq_file(tmp_path):
    path = tmp_path / "responses.csv"
    table = random_design(np.random.default_rng(2), n_questions=6)
    table["cultural_label"] = np.where(table["question_id"].isin(["q0", "q1", "q2"]), "CS", "CA")
    table.to_csv(path, index=False)
    return path


def digests(folder) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def index_without_figures(folder) -> list[str]:
    """The index's lines other than the figures' entries and the line saying which were asked for."""
    lines = (folder / "README.md").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if not line.startswith(("- `fig_", "- figures: "))]


def test_the_cli_and_save_figure_name_the_same_default_formats_as_the_report():
    """Three spellings of one default: the CLI's (its --help imports no metrics), the report's, save_figure's."""
    from spokenbench.core.metrics import figures

    save_figure_default = inspect.signature(figures.save_figure).parameters["formats"].default
    assert metrics_commands.FIGURE_FORMATS == report_module.FIGURE_FORMATS == save_figure_default


def test_none_writes_the_tables_alone_and_says_so(cli, mcq_file, tmp_path):
    out = tmp_path / "tables"
    result = cli("report", mcq_file, "--out", out, "--factors", FACTORS, "--bootstrap", "0", "--figures", "none")
    assert result.code == 0, result.err
    names = set(digests(out))
    assert names and not {n for n in names if n.endswith((".png", ".svg"))}
    assert "summary.csv" in names and "apes_by_stratum.tex" in names
    index = (out / "README.md").read_text(encoding="utf-8")
    assert "- figures: none (as asked for)" in index and "`fig_" not in index
    assert "skipped fig_" not in result.out  # nothing to draw was asked for, so nothing was skipped


def test_tables_alone_import_no_matplotlib_and_start_no_process(mcq_file, tmp_path):
    """Without figures the report forks no figure process (asked for two), and imports no matplotlib (asked to
    draw in this process)."""
    script = f"""
import sys
from spokenbench.core.metrics import report
started, start = [], report._FigureProcesses.__init__
def noting(self, out_dir, processes, formats):
    started.append(processes)
    start(self, out_dir, processes, formats)
report._FigureProcesses.__init__ = noting
for workers in (2, 0):
    report.write_report({str(mcq_file)!r}, {str(tmp_path / "out")!r}, n_resamples=0, figure_formats=(), workers=workers)
print("matplotlib" in sys.modules, started)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False [0, 0]"


@pytest.mark.parametrize("value", ["jpeg", "png,pdf", ",", ""])
def test_an_unknown_format_is_refused_before_anything_runs(cli, mcq_file, tmp_path, value, capsys):
    out = tmp_path / "never"
    with pytest.raises(SystemExit) as caught:
        cli("report", mcq_file, "--out", out, "--figures", value)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--figures" in err and "give png, svg, png,svg or none" in err and "Traceback" not in err
    assert not out.exists()


def test_the_library_refuses_an_unknown_format(tmp_path):
    with pytest.raises(SpokenBenchError, match="no figure format 'pdf'"):
        write_report(tmp_path / "absent.csv", tmp_path / "out", figure_formats=("png", "pdf"))
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mcq", "gender-probe"])
def test_each_choice_writes_the_default_reports_files_of_its_formats(cli, mcq_file, tmp_path, kind):
    if kind == "mcq":
        source, options = mcq_file, ["--factors", FACTORS]
    else:
        source = tmp_path / "probes.jsonl"
        gender_probe_like(n_questions=12, seed=2).to_json(source, orient="records", lines=True)
        options = ["--backbone", "speech_a=text_a"]
    written = {}
    for choice in ("png,svg", "svg", "png", "none", "SVG, PNG"):
        out = tmp_path / choice.replace(",", "+").replace(" ", "")
        result = cli("report", source, "--out", out, *options, "--bootstrap", "20", "--figures", choice)
        assert result.code == 0, result.err
        written[choice] = digests(out)
    default = written["png,svg"]
    assert sum(name.endswith(".svg") for name in default) == sum(name.endswith(".png") for name in default) > 0
    for choice, suffixes in {"svg": (".svg",), "png": (".png",), "none": ()}.items():
        expected = {n: d for n, d in default.items() if not n.endswith((".png", ".svg")) or n.endswith(suffixes)}
        del expected["README.md"]
        assert {n: d for n, d in written[choice].items() if n != "README.md"} == expected, choice
        assert index_without_figures(tmp_path / choice) == index_without_figures(tmp_path / "png+svg")
    assert written["SVG, PNG"] == default  # any order and case: the default report, index included
    svg_index = (tmp_path / "svg" / "README.md").read_text(encoding="utf-8")
    assert "- figures: SVG only (as asked for)" in svg_index and "(SVG)" in svg_index and "(PNG, SVG)" not in svg_index
    assert "- figures:" not in (tmp_path / "png+svg" / "README.md").read_text(encoding="utf-8")
