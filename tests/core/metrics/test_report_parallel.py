"""`report` writes its tables and figures as separate parts in forked worker processes (issue 28): the files
must be the ones one process writes, and the tables the ones the code before that change wrote (their sha256
below were taken from commit 562acf0 on this table). Figures are compared between the two ways byte for byte,
not against pinned digests: their bytes depend on the installed matplotlib and FreeType, tables do not."""

from __future__ import annotations

import hashlib
import os
import threading
import time

import matplotlib
import numpy as np
import pytest
from figure_content import report_figure_differences
from metrics_helpers import random_design

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.metrics import figures
from spokenbench.core.metrics import report as report_module
from spokenbench.core.metrics.matplotlib_hooks import PINNED_MATPLOTLIB
from spokenbench.core.metrics.report import write_report

FACTORS = ["language", "accent", "gender", "order"]
TABLES_BEFORE_ISSUE_28 = {
    "README.md": "864574941f7b24d3",
    "accuracy_by_accent.csv": "f9bbe6574bd02c42",
    "accuracy_by_accent.md": "3020bafe4fa2948b",
    "accuracy_by_accent.tex": "01d35ebe7bcf8b90",
    "accuracy_by_factor_level.csv": "45e137e76c04b691",
    "accuracy_by_factor_level.md": "f79546c2d62529a2",
    "accuracy_by_factor_level.tex": "677e510c46fc6624",
    "accuracy_by_gender.csv": "14a4d9117c9685a2",
    "accuracy_by_gender.md": "60ef679eae9f96f8",
    "accuracy_by_gender.tex": "04bf860a7607d083",
    "accuracy_by_language.csv": "ffdd10929e1aac7f",
    "accuracy_by_language.md": "da4c69ac46381336",
    "accuracy_by_language.tex": "c4293c74d45e3f66",
    "accuracy_by_order.csv": "10c3100cf5d8d0aa",
    "accuracy_by_order.md": "552e4d09eacab391",
    "accuracy_by_order.tex": "702e47322dfff7b0",
    "apes_by_stratum.csv": "ffbd8ddada43dcd8",
    "apes_by_stratum.md": "b4c93f81b655738d",
    "apes_by_stratum.tex": "976b039e784d1412",
    "entropy_cs_ca.csv": "bb2b997a1373f461",
    "entropy_cs_ca.md": "f6b42d245e42c6d5",
    "entropy_cs_ca.tex": "bbf44b938cf3931b",
    "level_entropy_by_level.csv": "63cf54fffcf406b2",
    "level_entropy_by_level.md": "2d4192916f36da49",
    "level_entropy_by_level.tex": "2b45467538c4623c",
    "mcnemar_original_vs_reversed.csv": "4e6e4cb9a780cbac",
    "mcnemar_original_vs_reversed.md": "ba694a5dfdf72ab3",
    "mcnemar_original_vs_reversed.tex": "9a82a8c11a234908",
    "model_ranking.csv": "4c99c4d76211ac2e",
    "model_ranking.md": "68ac09cd35cb8d2e",
    "model_ranking.tex": "2977d1eaa52682a4",
    "per_question.csv": "4bec6fbbf0c1f793",
    "permutation_voting.csv": "12972e6876f4261a",
    "permutation_voting.md": "4d933993ed5ee35b",
    "permutation_voting.tex": "ed11cac4a6b56537",
    "ranking_kendall_tau.csv": "e17a07e3b3319b14",
    "ranking_kendall_tau.md": "b44a3e8a7de18b4f",
    "ranking_kendall_tau.tex": "c14c2e3eb3a2d109",
    "robustness_by_factor.csv": "fa22e2b0ac48aec0",
    "robustness_by_factor.md": "0629101828e97adf",
    "robustness_by_factor.tex": "1c676614f695947b",
    "selection_bias_by_position.csv": "ddb0f147155e66e4",
    "selection_bias_by_position.md": "5fa830079e85902a",
    "selection_bias_by_position.tex": "a6144f77b5015153",
    "summary.csv": "fb5ef1073c89e72d",
    "summary.md": "6686b2e64d4d9452",
    "summary.tex": "dfbb95d528ffb099",
}


def frame():
    table = random_design(np.random.default_rng(2), n_questions=6)
    table["cultural_label"] = np.where(table["question_id"].isin(["q0", "q1", "q2"]), "CS", "CA")
    return table


def digests(folder) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in sorted(folder.iterdir())}


@pytest.mark.slow
def test_forked_parts_write_the_files_one_process_writes(tmp_path, monkeypatch):
    drawn_by = tmp_path / "pids"
    save_figure = figures.save_figure

    def noting_the_process(*args):
        with drawn_by.open("a") as file:
            file.write(f"{os.getpid()}\n")
        return save_figure(*args)

    monkeypatch.setattr(figures, "save_figure", noting_the_process)
    here = write_report(frame(), tmp_path / "here", factors=FACTORS, n_resamples=100, workers=0)
    forked = write_report(frame(), tmp_path / "forked", factors=FACTORS, n_resamples=100, workers=2)
    assert [p.name for p in forked.files] == [p.name for p in here.files]
    assert forked.entries == here.entries and forked.skipped == here.skipped
    assert digests(tmp_path / "forked") == digests(tmp_path / "here")
    pids = drawn_by.read_text().split()
    assert pids[:5] == [str(os.getpid())] * 5 and str(os.getpid()) not in pids[5:]  # the second report forked
    assert sum(p.suffix == ".png" for p in forked.files) == 5  # every figure drawn, none skipped
    tables = {
        name: digest for name, digest in digests(tmp_path / "forked").items() if name[-4:] not in (".png", ".svg")
    }
    assert tables == TABLES_BEFORE_ISSUE_28


@pytest.mark.slow
def test_gender_probe_report_is_the_same_forked(tmp_path):
    from spokenbench.core.metrics.synthetic import gender_probe_like

    table = gender_probe_like(n_questions=9, seed=3)
    here = write_report(table, tmp_path / "here", kind="gender-probe", n_resamples=50, workers=0)
    forked = write_report(table, tmp_path / "forked", kind="gender-probe", n_resamples=50, workers=2)
    assert [p.name for p in forked.files] == [p.name for p in here.files]
    assert any(p.suffix == ".svg" for p in forked.files)
    assert digests(tmp_path / "forked") == digests(tmp_path / "here")


def _dying(*args):
    os._exit(3)  # as if killed: no result comes back


def _failing_warm_up():
    raise RuntimeError("no mathtext here")


def _own_children() -> set[str]:
    """This process's children now (a test compares with those it had before: a pytest worker may keep a child
    of an earlier test, such as a stub server, that is not the report's)."""
    return set(open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split())


@pytest.mark.slow
@pytest.mark.parametrize("failure", ["figure-process-dies", "warm-up-fails", "data-cannot-be-sent"])
def test_figures_are_drawn_here_when_the_figure_processes_give_nothing(tmp_path, monkeypatch, failure):
    before = _own_children()
    here = write_report(frame(), tmp_path / "here", factors=FACTORS, n_resamples=0, workers=0)
    drawn_by, save_figure = tmp_path / "pids", figures.save_figure

    def noting_the_process(*args):
        with drawn_by.open("a") as file:
            file.write(f"{os.getpid()}\n")
        return save_figure(*args)

    monkeypatch.setattr(figures, "save_figure", noting_the_process)
    if failure == "figure-process-dies":
        monkeypatch.setattr(report_module, "_draw_figures", _dying)
    elif failure == "warm-up-fails":  # in the first figure process, before it forks the others
        monkeypatch.setattr(figures, "warm_up", _failing_warm_up)
    else:  # a local function is not pickled: the figure process gets no data and ends
        parts_of = report_module._mcq_figure_parts
        monkeypatch.setattr(
            report_module, "_mcq_figure_parts", lambda analysis, **options: parts_of(analysis, **options)
        )
    again = write_report(frame(), tmp_path / "again", factors=FACTORS, n_resamples=0, workers=2)
    assert again.entries == here.entries and digests(tmp_path / "again") == digests(tmp_path / "here")
    assert sum(p.suffix == ".svg" for p in again.files) == 5 and not _own_children() - before
    assert drawn_by.read_text().split() == [str(os.getpid())] * 5  # all drawn here


def test_a_bad_input_ends_the_figure_process_started_for_it(tmp_path):
    source = tmp_path / "responses.csv"
    source.write_text("question_id,model\nq1,m1\n")
    before = _own_children()
    with pytest.raises(SpokenBenchError, match="answer"):
        write_report(source, tmp_path / "out", factors=FACTORS, n_resamples=0, workers=2)
    assert not _own_children() - before


def test_a_figure_process_that_missed_its_stop_still_ends_when_the_report_fails(tmp_path, monkeypatch):
    """The report is told it has a bad input at once and stops its figure process while that one still imports
    matplotlib; a library there that swallowed the SystemExit of its SIGTERM (as one did on a loaded CI machine)
    left it waiting for the figures' data forever, and the report with it, in `join`. Now the data's pipe is
    closed first: it gets nothing, and ends."""

    def an_import_that_swallows_the_stop():
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            try:
                time.sleep(0.05)
            except BaseException:  # noqa: BLE001 - what the library did
                pass

    monkeypatch.setattr(report_module.matplotlib_hooks, "import_to_draw", an_import_that_swallows_the_stop)
    source = tmp_path / "responses.csv"
    source.write_text("question_id,model\nq1,m1\n")
    before = _own_children()
    raised = []

    def report() -> None:
        try:
            write_report(source, tmp_path / "out", factors=FACTORS, n_resamples=0, workers=2)
        except SpokenBenchError as error:
            raised.append(error)

    reporting = threading.Thread(target=report, daemon=True)  # a hang fails the test instead of holding the run
    reporting.start()
    reporting.join(30)
    assert not reporting.is_alive(), "the report still waits for its figure process"
    assert raised and "answer" in str(raised[0])
    assert not _own_children() - before


@pytest.mark.slow
def test_a_part_that_fails_in_a_worker_fails_the_report_with_its_own_error(tmp_path):
    out = tmp_path / "out"
    (out / "fig_ranking_changes.png").mkdir(parents=True)  # a folder where the figure's file goes
    with pytest.raises(IsADirectoryError, match="fig_ranking_changes.png"):
        write_report(frame(), out, factors=FACTORS, n_resamples=0, workers=2)


def test_no_fork_by_default_while_another_thread_runs_or_with_one_part():
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert report_module._worker_count(6, None) == 0
        assert report_module._worker_count(6, 2) == 2  # asked for explicitly
    finally:
        release.set()
        thread.join()
    assert report_module._worker_count(1, None) == 0
    assert report_module._worker_count(6, 0) == 0


def test_no_fork_off_linux(monkeypatch):
    """macOS: a fork after numpy's Accelerate can crash the child, so parts stay here and workers are spawned."""
    from spokenbench.core.foundation import child_process

    monkeypatch.setattr(child_process, "usable_cores", lambda: 2)
    monkeypatch.setattr(child_process.threading, "active_count", lambda: 1)  # as in the CLI (pytest-xdist: 2+)
    assert child_process.child_start_method() == "fork" and report_module._worker_count(6, None) == 2
    monkeypatch.setattr(child_process.sys, "platform", "darwin")
    assert child_process.child_start_method() == "spawn" and report_module._worker_count(6, None) == 0


def _saved_the_plain_way(fig, folder, stem):
    """What `save_figure` did before issue 28: matplotlib's own savefig, PNG then SVG, on the same figure."""
    with figures.figure_style():
        fig.savefig(folder / f"{stem}.png", format="png", metadata={"Software": None})
        fig.savefig(folder / f"{stem}.svg", format="svg", metadata={"Date": None})


@pytest.mark.slow
@pytest.mark.parametrize("n_resamples", [0, 60])
def test_saving_with_one_layout_pass_writes_the_figures_of_plain_savefig(tmp_path, monkeypatch, n_resamples):
    from matplotlib.figure import Figure

    from spokenbench.core.metrics.analysis import analyze_mcq
    from spokenbench.core.metrics.gender_study import analyze_gender_study
    from spokenbench.core.metrics.synthetic import gender_probe_like

    analysis = analyze_mcq(frame(), FACTORS, n_resamples=n_resamples)
    study = analyze_gender_study(gender_probe_like(n_questions=9, seed=3), {}, n_resamples=n_resamples)
    builders = {stem: lambda build=build: build(analysis) for stem, build in figures.MCQ_FIGURES.items()}
    builders |= {
        f"gender_{setting}": lambda setting=setting: figures.gender_probe_panel(study.for_setting(setting))
        for setting in study.settings
    }
    plain, once = tmp_path / "plain", tmp_path / "once"
    plain.mkdir()
    once.mkdir()
    for stem, build in builders.items():
        _saved_the_plain_way(build(), plain, stem)
    draws = []
    real_draw = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda fig, renderer: draws.append(1) or real_draw(fig, renderer))
    for stem, build in builders.items():
        figures.save_figure(build(), once, stem)
    assert len(builders) == 6  # five multiple-choice figures and a gender-probe panel
    svgs = {name: digest for name, digest in digests(once).items() if name.endswith(".svg")}
    assert len(svgs) == 6 and svgs.items() <= digests(plain).items()  # the SVGs' bytes too
    assert report_figure_differences(once, plain) == []  # the PNGs: the same pixels, at another zlib level
    assert len(draws) == 2 * len(builders)  # one draw per file: matplotlib's own dry pass drew each twice


def test_figures_are_taken_largest_first_by_whichever_process_is_free(tmp_path):
    stems = list(report_module.MCQ_FIGURE_NOTES)  # the five figures, in the report's order; part 0 is the tables
    order = report_module._largest_first(stems)
    cost = [report_module.MEASURED_FIGURE_SECONDS[stems[i - 1]] for i in order]
    assert sorted(order) == [1, 2, 3, 4, 5] and cost == sorted(cost, reverse=True)
    assert report_module._largest_first(["fig_gender_probe_a", "fig_gender_probe_b"]) == [1, 2]  # unmeasured: as listed

    def noting(i):
        return lambda part: (tmp_path / f"{i}.{os.getpid()}").touch()

    parts = [noting(i) for i in range(6)]
    with report_module._queue_of_parts([3, 4, 5]) as queue:
        taken = report_module._write_parts_in_child({1: parts[1]}, tmp_path, "mcq", queue, parts)
        assert report_module._write_parts_in_child({2: parts[2]}, tmp_path, "mcq", queue, parts) == {2: taken[1]}
    assert list(taken) == [1, 3, 4, 5]  # its own part, then every one left in the queue, in its order


@pytest.mark.slow
def test_the_last_tables_are_written_once_a_figure_process_is_free(tmp_path, monkeypatch):
    """The selection-bias and per-question tables wait until a figure process has no figure left (issue 28,
    round 9: then they use the core it leaves idle); the files are those one process writes."""
    here = write_report(frame(), tmp_path / "here", factors=FACTORS, n_resamples=0, workers=0)
    log, save_figure, write_table = tmp_path / "log", figures.save_figure, report_module.write_table

    def noting(what: str) -> None:
        with log.open("a") as file:
            file.write(f"{what} {os.getpid()} {time.monotonic()}\n")

    def noting_the_figure(*args):
        paths = save_figure(*args)
        noting("figure")
        return paths

    def noting_the_table(frame, out_dir, stem, **options):
        noting(stem)
        return write_table(frame, out_dir, stem, **options)

    monkeypatch.setattr(figures, "save_figure", noting_the_figure)
    monkeypatch.setattr(report_module, "write_table", noting_the_table)
    again = write_report(frame(), tmp_path / "again", factors=FACTORS, n_resamples=0, workers=2)
    assert again.entries == here.entries and digests(tmp_path / "again") == digests(tmp_path / "here")
    noted = [line.split() for line in log.read_text().splitlines()]
    last_figure = {}  # per figure process, when it saved its last figure
    for what, pid, when in noted:
        if what == "figure":
            last_figure[pid] = max(float(when), last_figure.get(pid, 0.0))
    tables = {what: float(when) for what, pid, when in noted if what != "figure"}
    assert len(last_figure) == 2 and str(os.getpid()) not in last_figure
    assert tables["selection_bias_by_position"] > min(last_figure.values())  # and after it the rest, in order
    assert tables["per_question"] > tables["selection_bias_by_position"] > tables["apes_by_stratum"]


@pytest.mark.slow
def test_the_last_tables_do_not_wait_with_fewer_figures_than_processes(tmp_path, monkeypatch):
    """One figure for two processes: a core has no figure process from the start, so the last tables do not
    wait for the figure."""
    log, save_figure, write_table = tmp_path / "log", figures.save_figure, report_module.write_table

    def slow_figure(*args):
        paths = save_figure(*args)
        time.sleep(1)  # longer than all the tables
        with log.open("a") as file:
            file.write(f"figure {time.monotonic()}\n")
        return paths

    def noting_the_table(frame, out_dir, stem, **options):
        with log.open("a") as file:
            file.write(f"{stem} {time.monotonic()}\n")
        return write_table(frame, out_dir, stem, **options)

    monkeypatch.setattr(figures, "save_figure", slow_figure)
    monkeypatch.setattr(report_module, "write_table", noting_the_table)
    monkeypatch.setattr(figures, "MCQ_FIGURES", {"fig_ranking_changes": figures.ranking_changes})
    written = write_report(frame(), tmp_path / "out", factors=FACTORS, n_resamples=0, workers=2)
    noted = dict(line.split() for line in log.read_text().splitlines())
    assert sum(p.suffix == ".svg" for p in written.files) == 1
    assert float(noted["per_question"]) < float(noted["figure"])


def _sleeping(*args):
    time.sleep(30)


@pytest.mark.parametrize("figure_process", ["none", "dies", "is-cancelled"])
def test_waiting_for_a_free_figure_process_ends(tmp_path, monkeypatch, figure_process):
    """No figure processes: no wait; every one ended without saying it is free (died, or got no data): the wait
    ends; a cancel while it waits is raised, and the figure processes are ended."""
    before = _own_children()
    monkeypatch.setattr(report_module, "_draw_figures", _dying if figure_process == "dies" else _sleeping)
    checks = []

    def check():
        checks.append(1)
        if figure_process == "is-cancelled" and len(checks) > 2:
            raise KeyboardInterrupt

    with report_module._FigureProcesses(tmp_path, 0 if figure_process == "none" else 2) as drawing:
        if figure_process == "is-cancelled":
            with pytest.raises(KeyboardInterrupt):
                drawing.wait_until_one_is_free(check)
        else:
            drawing.wait_until_one_is_free(check)
    assert (checks == []) == (figure_process == "none") and not _own_children() - before


WHICH_PROCESS_LOADS_WHAT = """
import json, os, sys
from pathlib import Path
from spokenbench.core.metrics import report

out = Path(sys.argv[2])
tables, figure_part, analyze = report._mcq_tables, report._figure_part, report.analyze_mcq

def noting_analysis(*args, **kwargs):
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    (out.parent / "analysis.json").write_text(json.dumps({"children": children}))
    return analyze(*args, **kwargs)

def noting_tables(analysis, part, *before_the_last):
    seen = {"pid": os.getpid(), "loaded": sorted(m for m in ("matplotlib", "pandas") if m in sys.modules)}
    (out.parent / "tables.json").write_text(json.dumps(seen))
    return tables(analysis, part, *before_the_last)

def noting_figure(stem, build, note, *formats):
    write = figure_part(stem, build, note, *formats)
    def noted(part):
        from matplotlib.mathtext import MathTextParser

        parser_before = MathTextParser._parser is not None  # built before the figure, by figures.warm_up
        write(part)
        from matplotlib.lines import Line2D

        listed = "Properties:" in (Line2D.set.__doc__ or "")  # matplotlib.artist.kwdoc's listing
        signed = "__signature__" in vars(Line2D.set)  # the signature built from the setters
        seen = {"pid": os.getpid(), "pandas": "pandas" in sys.modules, "property_listings": listed, "signed": signed}
        seen["mathtext_parser_before"] = parser_before
        (out.parent / f"{stem}.json").write_text(json.dumps(seen))
    return noted

report._mcq_tables, report._figure_part, report.analyze_mcq = noting_tables, noting_figure, noting_analysis
report.write_report(sys.argv[1], out, factors=["language", "accent", "gender", "order"], n_resamples=0, workers=2)
print(json.dumps({"pid": os.getpid(), "pandas": "pandas" in sys.modules}))
"""


@pytest.mark.slow
def test_the_figures_process_starts_before_the_metrics_and_neither_side_loads_pandas(tmp_path):
    """The first figure process is forked as the report starts, so it imports matplotlib while this process
    computes the metrics; it forks the second (they share the import). This process writes the tables without
    matplotlib or pandas (issue 28, round 4), and the figures' processes never load pandas either, nor write the
    artists' property listings and `set` signatures (round 6): the figures are those drawn in one process, with them.
    The first builds the mathtext parser before it forks the second, which inherits it (round 7)."""
    import json
    import subprocess
    import sys

    source = tmp_path / "responses.csv"
    frame().to_csv(source, index=False)
    done = subprocess.run(
        [sys.executable, "-c", WHICH_PROCESS_LOADS_WHAT, str(source), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    parent = json.loads(done.stdout)
    tables = json.loads((tmp_path / "tables.json").read_text())
    drawn = [json.loads((tmp_path / f"{stem}.json").read_text()) for stem in report_module.MCQ_FIGURE_NOTES]
    running_during_the_metrics = json.loads((tmp_path / "analysis.json").read_text())["children"]
    assert tables["loaded"] == [] and tables["pid"] == parent["pid"]
    assert not parent["pandas"] and not any(figure["pandas"] for figure in drawn)
    assert not any(figure["property_listings"] for figure in drawn)
    assert all(figure["mathtext_parser_before"] for figure in drawn)  # each process's first figure too
    assert not any(figure["signed"] for figure in drawn) or matplotlib.__version__ != PINNED_MATPLOTLIB
    figure_pids = {figure["pid"] for figure in drawn}
    assert len(figure_pids) == 2 and parent["pid"] not in figure_pids
    assert len(running_during_the_metrics) == 1 and int(running_during_the_metrics[0]) in figure_pids
    here = write_report(source, tmp_path / "here", factors=FACTORS, n_resamples=0, workers=0)
    assert digests(tmp_path / "out") == digests(here.out_dir)
    from matplotlib.lines import Line2D

    assert "Properties:" in Line2D.set.__doc__ and "__signature__" in vars(Line2D.set)  # drawn here with them


@pytest.mark.slow
def test_ctrl_c_during_a_report_ends_every_process_quietly(tmp_path):
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from support import as_from_a_terminal

    from spokenbench.core.metrics.synthetic import biasinear_like

    source = tmp_path / "responses.csv"
    biasinear_like(n_questions=100, n_models=9, seed=0).to_csv(source, index=False)
    command = [
        str(Path(sys.executable).with_name("spokenbench")),
        "report",
        str(source),
        "--out",
        str(tmp_path / "out"),
    ]
    command += ["--bootstrap", "0"]
    run = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=as_from_a_terminal
    )
    deadline = time.monotonic() + 60
    while not _children_of(run.pid) and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _children_of(run.pid), "the report forked no process to interrupt"
    os.killpg(run.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    _, errors = run.communicate(timeout=30)
    assert run.returncode == 130 and "interrupted" in errors and "Traceback" not in errors, errors
    assert not _in_group(run.pid)


def _children_of(pid: int) -> list[int]:
    from pathlib import Path

    return [int(task) for task in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _in_group(group: int) -> list[int]:
    """Processes still in the process group (a stray forked one would have been handed to init)."""
    from pathlib import Path

    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            alive.append(int(stat.parent.name))
    return alive


def test_the_figures_get_the_analysis_without_its_row_arrays():
    """The figure processes are sent what the figures draw from: per group and per model (the figures the view
    draws are pinned against 8470bfa's in test_report_figures_content.py)."""
    import pickle

    from spokenbench.core.metrics.analysis import analyze_mcq

    analysis = analyze_mcq(frame(), FACTORS)
    view = report_module._figures_view(analysis)
    assert view.data.n_rows == 0 and not any(len(codes) for codes in view.data.factor_codes.values())
    arrays = {name: value for name, value in vars(view.data).items() if isinstance(value, np.ndarray)}
    assert {name: len(value) for name, value in arrays.items() if len(value)} == {  # every row array emptied
        name: analysis.data.n_groups
        for name in ("group_model", "group_question", "group_n_options", "group_cultural_label")
    }
    assert view.metrics.data is view.data and view.selection.presentation is None
    assert view.data.group_model is analysis.data.group_model and view.data.models == analysis.data.models
    assert view.metrics.entropy is analysis.metrics.entropy and view.summary_columns is analysis.summary_columns
    assert analysis.data.n_rows == len(frame()) and analysis.selection.presentation is not None  # left as it was
    assert len(pickle.dumps(view)) < len(pickle.dumps(analysis)) / 2
