"""The report's files: deterministic figures (the same bytes from any caller), readable tables in three
formats, and no GUI toolkit or pyplot state involved."""

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import random_design

from spokenbench.core.metrics import figures
from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.report import write_report
from spokenbench.core.metrics.table_formats import to_latex, to_markdown

FACTORS = ["language", "accent", "gender", "order"]


@pytest.mark.slow
def test_reports_are_reproducible_byte_for_byte(tmp_path):
    frame = random_design(np.random.default_rng(2), n_questions=6)
    frame["cultural_label"] = np.where(frame["question_id"].isin(["q0", "q1", "q2"]), "CS", "CA")
    first = write_report(frame, tmp_path / "a", factors=FACTORS, n_resamples=100)
    second = write_report(frame, tmp_path / "b", factors=FACTORS, n_resamples=100)
    names = sorted(p.name for p in first.files)
    assert names == sorted(p.name for p in second.files)
    assert "fig_entropy_cs_ca.svg" in names and not first.skipped
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.slow
def test_figures_built_in_process_equal_the_report_files(tmp_path):
    """What the app draws (the Figure objects) is what the CLI writes."""
    frame = random_design(np.random.default_rng(3), n_questions=5)
    write_report(frame, tmp_path / "r", factors=FACTORS, n_resamples=0)
    analysis = analyze_mcq(frame, FACTORS)
    built = figures.mcq_figures(analysis)["fig_kappa_vs_apes"]
    figures.save_figure(built, tmp_path, "again")
    assert (tmp_path / "again.svg").read_bytes() == (tmp_path / "r" / "fig_kappa_vs_apes.svg").read_bytes()


@pytest.mark.slow
def test_figures_are_labelled():
    analysis = analyze_mcq(random_design(np.random.default_rng(4), n_questions=5), FACTORS)
    for name, fig in figures.mcq_figures(analysis).items():
        if fig is None:
            continue
        for ax in fig.axes:
            assert ax.get_xlabel() and ax.get_ylabel(), name
        assert any(ax.get_legend() is not None for ax in fig.axes) or name == "fig_entropy_distribution", name


@pytest.mark.slow
def test_report_needs_no_pyplot_and_no_qt(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(__file__.rsplit("/", 1)[0])!r})
        import numpy as np
        from metrics_helpers import random_design
        from spokenbench.core.metrics.report import write_report
        write_report(random_design(np.random.default_rng(0), n_questions=3), {str(tmp_path / "r")!r}, n_resamples=10)
        loaded = [m for m in sys.modules if m.startswith(("matplotlib.pyplot", "PySide6", "PyQt"))]
        print(loaded)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_markdown_and_latex_tables():
    frame = pd.DataFrame({"model": ["a_b", "c|d"], "accuracy": [0.5, np.nan], "n": [3, 4]})
    markdown = to_markdown(frame)
    assert markdown.splitlines()[1] == "|:---|---:|---:|"
    assert "| c\\|d |  | 4 |" in markdown and "| a_b | 0.500 | 3 |" in markdown
    latex = to_latex(frame, caption="50% of runs", label="tab:x")
    assert r"a\_b & 0.500 & 3 \\" in latex and r"c|d & -- & 4 \\" in latex and r"50\% of runs" in latex


def test_plain_columns_and_their_dataframe_give_the_same_markdown_and_latex(tmp_path):
    """Plain columns are formatted a column at a time from Python values, once for both files (issue 28, round 7):
    the text a DataFrame of the same values gets cell by cell, numpy scalars in object columns included."""
    from spokenbench.core.metrics.table_formats import column_table, write_table

    values = {
        "model": ["a_b", "c|d", "e&f~^", "g"],
        "mixed": np.array([np.float64(0.25), None, np.int64(3), "x"], dtype=object),
        "accuracy": [0.5, np.nan, 1e-5, -np.inf],
        "n": [3, 4, 0, -2],
        "flag": [True, False, True, False],
    }
    columns, frame = column_table(values), pd.DataFrame(values)
    written = write_table(columns, tmp_path, "t", caption="50% & more", formats=("md", "tex"))
    assert [p.name for p in written] == ["t.md", "t.tex"]
    assert (
        (tmp_path / "t.md").read_text()
        == "**50% & more**\n\n" + to_markdown(frame)
        == "**50% & more**\n\n" + (to_markdown(columns))
    )
    assert (
        (tmp_path / "t.tex").read_text()
        == to_latex(frame, "50% & more", "tab:t")
        == to_latex(columns, "50% & more", "tab:t")
    )
    assert r"e\&f\textasciitilde{}\textasciicircum{} & " in to_latex(columns) and "| 1.00e-05 |" in to_markdown(columns)
