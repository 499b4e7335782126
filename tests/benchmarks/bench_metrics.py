"""Benchmark of the metrics engine at BiasInEar's full size (not a test: pytest does not collect it).

    /work/venv/bin/python tests/benchmarks/bench_metrics.py [--repeats N] [--parts 1,2,3,4,5] [--baseline DIR]

100,800 responses (400 questions × 28 configurations × 9 models). Prints the median time of
  1. the full metric set in-process (validation, encoding, accuracy/entropy/APES/κ per factor, selection
     bias, voting, rankings, McNemar, JSON)                                       target ≤ 0.5 s
  2. the reference package's Evaluator (biasinear) on the same data, one run per model, and the ratio
                                                                                   target ≥ 10×
  3. the full metric set with 1,000 question-level bootstrap resamples           target ≤ 15 s
  4. whole processes: `spokenbench metrics FILE --bootstrap 0` against a script that reads the same rows
     (predictions already mapped to the original order) and runs the reference Evaluator per model
                                                                                   target ≥ 8× (issue 28)
     (also each side's CPU time, steadier than wall time on a shared machine, and the load average)
  5. whole processes: `spokenbench report FILE --bootstrap 0` against `spokenbench metrics` on the same file
                                                                                   target ≤ 2.5× (issue 28)
     (each tree first in every other round; also how much CPU other processes used during each round, and the
     ratio over the rounds no other process disturbed: on a shared host, the figure to compare)
     (also this tree's `report --figures png` in the same rounds: what the SVGs cost; not the default, so not the
     target's figure)
     (--profile: also where the report's time goes, in one process (no forked parts), imports included,
     for this tree and the baseline)
With --baseline DIR (an older tree as DIR/spokenbench/core, e.g. `git archive 562acf0 core | tar -x -C
DIR/spokenbench`), parts 4 and 5 also run that tree's commands, interleaved with this tree's, give old/new
ratios, and part 5 checks that both trees' reports hold the same files: the tables and index with the same bytes,
the figures identical in content (tests/figure_content.py: the same pixels; SVG numbers within 0.01), and their sizes.
Medians, because the machine is shared; each figure states how many runs it is the median of."""

from __future__ import annotations

import argparse
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.loading import read_responses_columns, read_responses_file
from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.synthetic import biasinear_like

FACTORS = ["language", "accent", "gender", "order"]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for figure_content.py
import host_cpu  # noqa: E402 - this folder, first on the path of a script run from it
from figure_content import report_figure_differences  # noqa: E402 - after the path it is found on


def median_time(function, repeats: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def reference_inputs(frame, factors):
    """The Evaluator takes letters in the original option order: map predictions through option_order
    first (outside the timing; the Evaluator itself has no notion of option order)."""
    data = prepare_mcq(frame, factors)
    chosen = np.where(data.chosen >= 0, np.array(list("ABCD"))[np.maximum(data.chosen, 0)], "")
    inputs = []
    for model in data.models:
        rows = (frame["model"] == model).to_numpy()
        inputs.append(
            (
                list(chosen[rows]),
                list(frame["answer"].to_numpy()[rows]),
                list(frame["question_id"].to_numpy()[rows]),
                {f: list(frame[f].to_numpy()[rows]) for f in factors},
            )
        )
    return inputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="runs per in-process figure (default 7)")
    parser.add_argument("--reference-repeats", type=int, default=3, help="runs of the reference Evaluator (default 3)")
    parser.add_argument(
        "--parts",
        type=lambda text: {int(p) for p in text.split(",") if p.strip()},
        default={1, 2, 3, 4, 5},
        help="which figures to measure, e.g. --parts 4 for the whole-process ratio alone (default 1,2,3,4,5)",
    )
    parser.add_argument("--baseline", help="a folder holding an older tree as spokenbench/core (parts 4 and 5)")
    parser.add_argument(
        "--profile", type=int, metavar="N", default=0, help="part 5: print the report's N costliest calls (cProfile)"
    )
    args = parser.parse_args()

    frame = biasinear_like(n_questions=400, n_models=9, seed=0)
    print(
        f"data: {len(frame):,} responses, {frame['question_id'].nunique()} questions, "
        f"{frame['model'].nunique()} models, factors {', '.join(FACTORS)}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "responses.csv"
        frame.to_csv(path, index=False)
        load, _ = median_time(lambda: read_responses_file(path), 3)
        columns, _ = median_time(lambda: read_responses_columns(path), 3)
        print(
            f"reading the CSV ({path.stat().st_size / 1e6:.1f} MB): median {load:.3f} s of 3 as a DataFrame, "
            f"{columns:.3f} s as text columns (what `spokenbench metrics` reads; not part of the figures below)"
        )

    if args.parts & {1, 2}:
        analyze_mcq(frame, FACTORS).to_json()  # warm-up: imports, caches
        ours, ours_all = median_time(lambda: analyze_mcq(frame, FACTORS).to_json(), args.repeats)
        print(
            f"1. full metric set in-process: median {ours:.3f} s of {args.repeats} "
            f"(min {min(ours_all):.3f}, max {max(ours_all):.3f}); target ≤ 0.5 s: {'met' if ours <= 0.5 else 'MISSED'}"
        )

    try:
        from biasinear import Evaluator
    except ImportError:
        print("2./4. reference package biasinear not installed (pip install biasinear): ratios not measured")
        Evaluator = None
    if Evaluator is not None and 2 in args.parts:
        inputs = reference_inputs(frame, FACTORS)
        reference, ref_all = median_time(lambda: [Evaluator(*i).run() for i in inputs], args.reference_repeats)
        ratio = reference / ours
        print(
            f"2. reference Evaluator (biasinear) on the same data, 9 models: median {reference:.3f} s of "
            f"{args.reference_repeats} (min {min(ref_all):.3f}); ours is {ratio:.1f}× faster; "
            f"target ≥ 10×: {'met' if ratio >= 10 else 'MISSED'}"
        )

    if args.parts & {4, 5}:
        compiled_trees(args.baseline)
    if Evaluator is not None and 4 in args.parts:
        whole_process(frame, args.reference_repeats, args.baseline)
        import_cpu(max(5, args.repeats), args.baseline)
    if 5 in args.parts:
        report_vs_metrics(frame, max(3, args.reference_repeats), args.baseline)
        if args.profile:
            profile_report(frame, args.profile, args.baseline)
            report_timeline(frame, args.baseline)

    if 3 in args.parts:
        boot, boot_all = median_time(
            lambda: analyze_mcq(frame, FACTORS, n_resamples=1000).to_json(), max(3, args.repeats // 2)
        )
        print(
            f"3. full metric set with 1,000 bootstrap resamples: median {boot:.3f} s of {len(boot_all)} "
            f"(max {max(boot_all):.3f}); target ≤ 15 s: {'met' if boot <= 15 else 'MISSED'}"
        )
    return 0


def compiled_trees(baseline: str | None) -> None:
    """Bytecode for this tree's and the baseline's modules, as an installed package has: with
    PYTHONDONTWRITEBYTECODE set (this environment), a tree without it compiles every module on every run
    (a baseline from `git archive` has none: ~0.05 s more CPU in each `metrics`, more in `report`)."""
    import compileall

    import spokenbench.core

    for tree in [
        Path(spokenbench.core.__file__).parent,
        *([Path(baseline) / "spokenbench" / "core"] if baseline else []),
    ]:
        compileall.compile_dir(tree, quiet=1)
    print("bytecode compiled for this tree" + (" and the baseline" if baseline else "") + " (as installed)")


REFERENCE_SCRIPT = """
import sys
import pandas as pd
from biasinear import Evaluator

frame = pd.read_csv(sys.argv[1], dtype=str, keep_default_na=False)
factors = sys.argv[2].split(",")
for model, rows in frame.groupby("model", sort=False):
    Evaluator(list(rows["mapped"]), list(rows["answer"]), list(rows["question_id"]),
              {f: list(rows[f]) for f in factors}).run()
"""


def whole_process(frame, repeats: int, baseline: str | None = None) -> None:
    """Part 4: each side as a fresh process, reading its CSV, as a user runs it."""
    import shutil

    spokenbench = shutil.which("spokenbench")
    if spokenbench is None:
        print("4. `spokenbench` is not on PATH (pip install -e .): whole-process ratio not measured")
        return
    mapped = frame.copy()
    mapped["mapped"] = [choice for inputs in reference_inputs(frame, FACTORS) for choice in inputs[0]]
    order = np.concatenate([np.flatnonzero((frame["model"] == m).to_numpy()) for m in frame["model"].unique()])
    mapped = mapped.iloc[order].reset_index(drop=True)  # rows grouped by model, as reference_inputs lists them
    with tempfile.TemporaryDirectory() as tmp:
        ours_file, theirs_file = Path(tmp) / "responses.csv", Path(tmp) / "mapped.csv"
        frame.to_csv(ours_file, index=False)
        mapped.to_csv(theirs_file, index=False)
        ours_cmd = [
            spokenbench,
            "metrics",
            str(ours_file),
            "--factors",
            ",".join(FACTORS),
            "--bootstrap",
            "0",
            "--json",
        ]
        theirs_cmd = [sys.executable, "-c", REFERENCE_SCRIPT, str(theirs_file), ",".join(FACTORS)]
        commands = {"ours": (ours_cmd, None), "reference": (theirs_cmd, None)}
        if baseline:
            commands["baseline"] = (ours_cmd, baseline)
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}
        load_before = os.getloadavg()[0]
        for _ in range(repeats):  # interleaved: machine noise hits both alike
            for name, (command, tree) in commands.items():
                wall, used, _ = _timed(command, tree)
                times[name].append(wall)
                cpu[name].append(used)
        load_after = os.getloadavg()[0]
    ours, theirs = statistics.median(times["ours"]), statistics.median(times["reference"])
    print(
        f"4. whole processes, median of {repeats}: spokenbench metrics {ours:.2f} s, reference script {theirs:.2f} s; "
        f"ours is {theirs / ours:.1f}× faster; target ≥ 8×: {'met' if theirs / ours >= 8 else 'MISSED'}"
    )
    ours_cpu, theirs_cpu = statistics.median(cpu["ours"]), statistics.median(cpu["reference"])
    print(
        f"   CPU time (user + system), median of {repeats}: spokenbench metrics {ours_cpu:.2f} s, reference script "
        f"{theirs_cpu:.2f} s ({theirs_cpu / ours_cpu:.1f}×); load average {load_before:.1f} before, "
        f"{load_after:.1f} after ({os.cpu_count()} cores: a load above that stretches wall times)"
    )
    if baseline:
        old, old_cpu = statistics.median(times["baseline"]), statistics.median(cpu["baseline"])
        print(
            f"   baseline tree ({baseline}): metrics {old:.2f} s wall, {old_cpu:.2f} s CPU; the reference is "
            f"{theirs / old:.1f}× its wall time ({theirs_cpu / old_cpu:.1f}× CPU); this tree is {old / ours:.2f}× "
            f"faster in wall time, {old_cpu / ours_cpu:.2f}× in CPU"
        )


IMPORTS_OF_METRICS = (
    "import time, sys; import spokenbench.core.cli.main, spokenbench.core.cli.metrics_commands, "
    "spokenbench.core.cli.output, spokenbench.core.metrics.analysis, spokenbench.core.metrics.loading, pyarrow.csv; "
    "print(time.process_time(), 'scipy.special' in sys.modules)"
)


def import_cpu(repeats: int, baseline: str | None) -> None:
    """Part 4's import share: CPU of a process that starts and imports what `metrics` imports, nothing else."""
    trees = {"this tree": None} | ({"baseline": baseline} if baseline else {})
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    special = {}
    for _ in range(repeats):
        for name, tree in trees.items():
            env = dict(os.environ)
            if tree:
                env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
            done = subprocess.run(
                [sys.executable, "-c", IMPORTS_OF_METRICS], capture_output=True, text=True, env=env, check=True
            )
            seconds, special[name] = done.stdout.split()
            cpu[name].append(float(seconds))
    print(
        f"   startup + imports of `metrics`, CPU median of {repeats}: "
        + "; ".join(f"{name} {statistics.median(cpu[name]):.3f} s (scipy.special: {special[name]})" for name in trees)
    )


PNG_ONLY = "report --figures png"


def report_vs_metrics(frame, repeats: int, baseline: str | None) -> None:
    """Part 5: `report` and `metrics` as whole processes on the same file, both without bootstrap (the
    figures, tables and README against the numbers alone), interleaved, for this tree and the baseline."""
    import filecmp
    import shutil

    spokenbench = shutil.which("spokenbench")
    if spokenbench is None:
        print("5. `spokenbench` is not on PATH (pip install -e .): report/metrics ratio not measured")
        return
    trees = {"this tree": None} | ({"baseline": baseline} if baseline else {})
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "responses.csv"
        frame.to_csv(source, index=False)
        common = [str(source), "--factors", ",".join(FACTORS), "--bootstrap", "0"]
        wall: dict[tuple[str, str], list[float]] = {}
        cpu: dict[tuple[str, str], list[float]] = {}
        others: list[float] = []  # per round: the most CPU other processes used during one of its runs
        load_before = os.getloadavg()[0]
        for round_number in range(repeats):
            others.append(0.0)
            in_turn = list(trees.items())  # each tree first in every other round: neither always runs first
            for tree_name, tree in in_turn if round_number % 2 == 0 else in_turn[::-1]:
                out = Path(tmp) / tree_name.replace(" ", "_")
                shutil.rmtree(out, ignore_errors=True)
                commands = {
                    "metrics": [spokenbench, "metrics", *common, "--json"],
                    "report": [spokenbench, "report", *common, "--out", str(out)],
                }
                if tree_name == "this tree":  # not the default, so not the target's figure: what SVGs cost
                    commands[PNG_ONLY] = [spokenbench, "report", *common, "--out", f"{out}-png", "--figures", "png"]
                for command_name, command in commands.items():
                    seconds, used, by_others = _timed(command, tree)
                    wall.setdefault((tree_name, command_name), []).append(seconds)
                    cpu.setdefault((tree_name, command_name), []).append(used)
                    others[-1] = max(others[-1], by_others)
        load_after = os.getloadavg()[0]
        same = None
        if baseline:
            new, old = Path(tmp) / "this_tree", Path(tmp) / "baseline"
            names = sorted(p.name for p in new.iterdir())
            listed_alike = names == sorted(p.name for p in old.iterdir())
            tables = [name for name in names if not name.endswith((".png", ".svg"))]
            _, differing, errors = filecmp.cmpfiles(new, old, tables, shallow=False)
            figures_differing = report_figure_differences(new, old)  # identical in content (tests/figure_content.py)
            _, figures_bytes_differing, _ = filecmp.cmpfiles(new, old, sorted(set(names) - set(tables)), shallow=False)
            same = (
                listed_alike and not differing and not errors and not figures_differing,
                (len(names), len(tables), len(names) - len(tables), len(figures_bytes_differing)),
                differing + errors + figures_differing,
            )
            sizes = {
                suffix: (
                    sum(f.stat().st_size for f in old.glob(f"*{suffix}")),
                    sum(f.stat().st_size for f in new.glob(f"*{suffix}")),
                )
                for suffix in (".png", ".svg")
            }
    print(f"5. report vs metrics, whole processes on the same file, median of {repeats} (interleaved):")
    for tree_name in trees:
        med = {c: statistics.median(wall[(tree_name, c)]) for c in ("metrics", "report")}
        med_cpu = {c: statistics.median(cpu[(tree_name, c)]) for c in ("metrics", "report")}
        ratio = med["report"] / med["metrics"]
        print(
            f"   {tree_name:<9}: metrics {med['metrics']:.2f} s, report {med['report']:.2f} s wall = {ratio:.2f}× "
            f"(CPU {med_cpu['metrics']:.2f} s, {med_cpu['report']:.2f} s = {med_cpu['report'] / med_cpu['metrics']:.2f}×)"
            f"; target ≤ 2.5×: {'met' if ratio <= 2.5 else 'MISSED'}"
        )
    png_only = statistics.median(wall[("this tree", PNG_ONLY)])
    print(
        f"   this tree, `{PNG_ONLY}` (SVGs only on request: not the default, so not the target): {png_only:.2f} s "
        f"= {png_only / statistics.median(wall[('this tree', 'metrics')]):.2f}× metrics"
    )
    if baseline:
        for command_name in ("metrics", "report"):
            old = statistics.median(wall[("baseline", command_name)])
            new = statistics.median(wall[("this tree", command_name)])
            old_cpu = statistics.median(cpu[("baseline", command_name)])
            new_cpu = statistics.median(cpu[("this tree", command_name)])
            print(
                f"   {command_name}: baseline / this tree {old / new:.2f}× wall, {old_cpu / new_cpu:.2f}× CPU "
                f"(CPU includes the report's worker processes)"
            )
        identical, (count, n_tables, n_figures, figures_bytes_differing), differing = same
        print(
            f"   report files of both trees: {count} files, "
            + (
                f"the same: {n_tables} tables and index byte-identical, {n_figures} figures identical in content "
                f"({figures_bytes_differing} of them with other bytes)"
                if identical
                else f"DIFFERENT: {'; '.join(differing) or 'file lists differ'}"
            )
        )
        print(
            "   figure files' sizes, baseline → this tree: "
            + ", ".join(
                f"{suffix[1:].upper()} {old:,} → {new:,} B ({new / old:.2f}×)" for suffix, (old, new) in sizes.items()
            )
        )
    print(f"   load average {load_before:.1f} before, {load_after:.1f} after ({os.cpu_count()} cores)")
    if math.isnan(_host_busy_cpu()):  # not Linux: no way to tell
        return
    calm = [i for i, used in enumerate(others) if used < UNDISTURBED_CPU]
    print(
        f"   other processes' CPU during a round's runs: median of the largest {statistics.median(others):.2f} s; "
        f"{len(calm)} of {repeats} rounds undisturbed (under {UNDISTURBED_CPU} s in each run)"
        + "".join(
            f"; {tree_name} there: report/metrics "
            + f"{statistics.median(wall[(tree_name, 'report')][i] / wall[(tree_name, 'metrics')][i] for i in calm):.2f}×"
            for tree_name in trees
            if calm
        )
    )


UNDISTURBED_CPU = 0.1  # seconds of other processes' CPU during a run, below which it ran alone (a shared host)

PROFILED_REPORT = """
import cProfile, pstats, sys, time
start = time.process_time()
profile = cProfile.Profile()
profile.enable()
from spokenbench.core.metrics.report import write_report
write_report(sys.argv[1], sys.argv[2], factors=sys.argv[3].split(","), n_resamples=0, workers=0)
profile.disable()
print(f"CPU {time.process_time() - start:.2f} s under the profiler")
pstats.Stats(profile).strip_dirs().sort_stats("cumulative").print_stats(int(sys.argv[4]))
"""


def profile_report(frame, lines: int, baseline: str | None) -> None:
    """Part 5's profile: the whole report (imports, metrics, tables, figures) in one process, per tree."""
    for tree_name, env, folder in _each_tree(frame, baseline):
        out = folder / tree_name.replace(" ", "_")
        command = [sys.executable, "-c", PROFILED_REPORT, str(folder / "responses.csv"), str(out), ",".join(FACTORS)]
        done = subprocess.run([*command, str(lines)], capture_output=True, text=True, env=env, check=True)
        print(f"   profile of the report in one process, {tree_name}:")
        print("\n".join("     " + line for line in done.stdout.splitlines() if line.strip()))


def _each_tree(frame, baseline: str | None):
    """(name, environment, a temporary folder holding `frame` as responses.csv) for this tree, then the baseline."""
    trees = {"this tree": None} | ({"baseline": baseline} if baseline else {})
    with tempfile.TemporaryDirectory() as tmp:
        frame.to_csv(Path(tmp) / "responses.csv", index=False)
        for tree_name, tree in trees.items():
            env = dict(os.environ)
            if tree:
                env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
            yield tree_name, env, Path(tmp)


TIMED_REPORT = r"""
import inspect, os, sys, time
def now():  # time.perf_counter is CLOCK_MONOTONIC: one clock for this process and the ones it forks
    return time.perf_counter(), time.process_time()

started = now()
log = open(sys.argv[3], "a")

def note(what, since):
    (wall, cpu), end = since, now()
    log.write(f"{os.getpid()}\t{wall - started[0]:.3f}\t{end[0] - started[0]:.3f}\t{end[1] - cpu:.3f}\t{what}\n")
    log.flush()

from spokenbench.core.metrics import report
note("imports", started)
analyze_mcq, mcq_tables, figure_part = report.analyze_mcq, report._mcq_tables, report._figure_part
read_columns = report.read_responses_columns

def timed_reading(*args, **kwargs):
    begun = now()
    result = read_columns(*args, **kwargs)
    note("read the CSV", begun)
    return result

def timed_analysis(*args, **kwargs):
    begun = now()
    result = analyze_mcq(*args, **kwargs)
    note("metrics", begun)
    return result

tables_need_pandas = "import pandas" in inspect.getsource(mcq_tables)  # before round 4 they did

def timed_tables(analysis, part, *before_the_last):  # since round 9 the report waits before the last tables
    if tables_need_pandas:
        begun = now()
        import pandas
        note("import pandas", begun)
    begun = now()
    mcq_tables(analysis, part, *before_the_last)
    note("tables", begun)

first_figure = []
early_figures = hasattr(report, "_draw_figures")  # since round 4: matplotlib imported as the report starts

if early_figures:
    draw_figures = report._draw_figures

    def timed_draw_figures(*args):
        begun = now()
        if hasattr(report, "matplotlib_hooks"):  # round 6: the figure processes' import, without docstrings
            report.matplotlib_hooks.import_to_draw()
        import spokenbench.core.metrics.figures
        note("import matplotlib", begun)
        return draw_figures(*args)

    report._draw_figures = timed_draw_figures

def timed_figure(stem, build, note_text, *formats):  # formats: since round 17 (`report --figures`)
    if not first_figure and not early_figures:  # the figures module (matplotlib) was imported just before
        first_figure.append(stem)
        note("import matplotlib", analysis_done[0])
    write = figure_part(stem, build, note_text, *formats)
    def timed(part):
        begun = now()
        write(part)
        note(stem.removeprefix("fig_"), begun)
    return timed

analysis_done = []
def timed_analysis_noting_end(*args, **kwargs):
    result = timed_analysis(*args, **kwargs)
    analysis_done.append(now())
    return result

report.analyze_mcq, report._mcq_tables, report._figure_part = timed_analysis_noting_end, timed_tables, timed_figure
report.read_responses_columns = timed_reading
report.write_report(sys.argv[1], sys.argv[2], factors=["language", "accent", "gender", "order"], n_resamples=0)
note("the whole report (this process)", started)
"""


def report_timeline(frame, baseline: str | None, width: int = 60) -> None:
    """Part 5's timeline: which process does what when, in one `write_report` run with its default processes
    (forked parts where a second core is usable), per tree; and how many cores were busy on average."""
    for tree_name, env, folder in _each_tree(frame, baseline):
        log = folder / f"timeline-{tree_name.replace(' ', '_')}.tsv"
        out = folder / tree_name.replace(" ", "_")
        load = os.getloadavg()[0]
        source = folder / "responses.csv"
        subprocess.run([sys.executable, "-c", TIMED_REPORT, str(source), str(out), str(log)], check=True, env=env)
        rows = [line.split("\t") for line in log.read_text().splitlines()]
        spans = [(int(pid), float(start), float(end), float(cpu), what) for pid, start, end, cpu, what in rows]
        total = max(end for _, _, end, _, _ in spans)
        parent = next(pid for pid, *_, what in spans if what == "imports")
        spans = [span for span in spans if span[-1] != "the whole report (this process)"]
        cpu = sum(span[3] for span in spans)  # a process's spans do not overlap
        print(
            f"   timeline of one report, {tree_name} (load {load:.1f}; seconds from the start; # = in a part): "
            f"the parts' CPU {cpu:.2f} s in {total:.2f} s = {cpu / total:.2f} cores busy on average"
        )
        names = {parent: "parent"} | {
            pid: f"child {i}" for i, pid in enumerate(dict.fromkeys(span[0] for span in spans if span[0] != parent), 1)
        }
        for pid, start, end, used, what in spans:
            first, last = (
                round(start / total * width),
                max(round(end / total * width), round(start / total * width) + 1),
            )
            bar = " " * first + "#" * (last - first) + " " * (width - last)
            print(f"     {names[pid]:<8}|{bar}| {start:5.2f}-{end:5.2f} (CPU {used:.2f}) {what}")


def _timed(command: list[str], tree: str | None) -> tuple[float, float, float]:
    """Wall and CPU seconds (user + system, children included) of one run, and the CPU seconds other processes
    used meanwhile (NaN where /proc/stat is missing); `tree` goes first on PYTHONPATH."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    used, busy = _children_cpu(), _host_busy_cpu()
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    seconds, used = time.perf_counter() - start, _children_cpu() - used
    return seconds, used, _host_busy_cpu() - busy - used


def _host_busy_cpu() -> float:
    """CPU seconds every process on the host has used since boot (`host_cpu`), NaN off Linux."""
    ticks = host_cpu.host_ticks()
    return float("nan") if ticks is None else host_cpu.host_busy_seconds(ticks)


def _children_cpu() -> float:
    """CPU seconds (user + system) used so far by finished child processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    sys.exit(main())
