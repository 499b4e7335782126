"""Benchmark (run by hand, prints its figures; not part of the test run): the UI loop while the Results page
recomputes and redraws after a run finishes. Target: the largest gap <= 50 ms.

The page is shown on the demo project (a copy), its panels computed; then, `--trials` times, a run's row is
marked finished from another connection (as an evaluation in another process ends it), the page sees the change
through the project monitor, recomputes its panels and redraws the panel shown. A 5 ms QTimer probe records the
gaps between its ticks from the change until the new panels are shown and drawn (and 1 s after, so a redraw
queued for the event loop is counted); each trial prints its largest gap, its 99th percentile and how long the
new figures took, and the run prints their medians.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_results_page.py [--trials 5]
    # before and after, interleaved, one process per trial: the page of another tree (e.g. 562acf0's) first
    git archive 562acf0 core app widgets resources | tar -x -C /tmp/base-results/spokenbench   # + __init__.py
    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_results_page.py --compare /tmp/base-results --trials 5

With PYTHONPATH pointing at such a tree, its `spokenbench` package is imported instead of this one (the job
processes the new page starts inherit it)."""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.py

from support import run_event_loop_until

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TARGET_MS = 50
SETTLE_S = 1.0  # after the new panels are shown: a redraw queued for the event loop is counted too


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.0f} ms"


def demo_builder():
    """build_demo where this tree keeps it: core/demo/project.py, or core/demo.py in trees before issue 27's moves."""
    try:
        from spokenbench.core.demo.project import build_demo
    except ModuleNotFoundError:
        from spokenbench.core.demo import build_demo
    return build_demo


def run_trials(trials: int, demo: Path | None) -> list[dict]:
    """In this process: the page shown, its first panels computed, then `trials` runs finishing."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from spokenbench.app.main import keep_the_ui_responsive
    from spokenbench.app.operations import OperationRunner, ProjectSession
    from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points
    from spokenbench.app.results_page import ResultsPage
    from spokenbench.core.evaluation.store import mark_run
    from spokenbench.core.store import opened

    app = QApplication.instance() or QApplication([])
    collect_garbage_at_safe_points(app)  # as the app does: the collector runs between events, on the UI thread
    folder = Path(tempfile.mkdtemp(prefix="bench-results-"))
    path = folder / "demo"
    if demo is not None:
        shutil.copytree(demo, path)
    else:
        demo_builder()(path)

    def run_loop_until(done, timeout_s: float = 180.0) -> None:
        run_event_loop_until(done, timeout_s)

    runner = OperationRunner()
    session = ProjectSession(path, runner)
    page = ResultsPage(SimpleNamespace(play_file=lambda _path: None))
    page.resize(1200, 800)
    page.show()
    page.set_session(session)
    run_loop_until(lambda: page.panels is not None)
    page.show_panel("accuracy_by_level")
    run_loop_until(lambda: False, timeout_s=2.0)  # the first drawing done
    keep_the_ui_responsive()  # as the app does at start: gc.freeze, a 1 ms GIL switch interval

    def drawing() -> bool:
        canvas = page.view.canvas
        return bool(getattr(canvas, "busy", False))  # the old page draws on the UI thread: never busy

    def probed(work) -> list[float]:
        """The gaps between a 5 ms timer's ticks while `work()` runs the event loop."""
        gaps: list[float] = []
        last = [time.perf_counter()]

        def tick() -> None:
            now = time.perf_counter()
            gaps.append(now - last[0])
            last[0] = now

        probe = QTimer(interval=5)
        probe.timeout.connect(tick)
        probe.start()
        work()
        probe.stop()
        return sorted(gaps)

    def wait_s(seconds: float) -> None:
        until = time.perf_counter() + seconds
        run_loop_until(lambda: time.perf_counter() > until)

    results = []
    for _ in range(trials):
        idle = probed(lambda: wait_s(3.0))  # the machine's own noise: the same page doing nothing
        before = page.panels
        shown = []

        def a_run_finishes(before=before, shown=shown) -> None:
            changed = time.perf_counter()
            with opened(path) as project, project.transaction() as conn:  # another connection, as a run's process
                mark_run(conn, 2, "finished")
            run_loop_until(lambda: page.panels is not before and not drawing())
            shown.append(time.perf_counter() - changed)
            wait_s(SETTLE_S)

        gaps = probed(a_run_finishes)
        results.append(
            {
                "largest_gap_s": gaps[-1],
                "p99_gap_s": gaps[int(0.99 * (len(gaps) - 1))],
                "idle_largest_gap_s": idle[-1],
                "ticks": len(gaps),
                "new_figures_s": shown[0],
            }
        )
        print(
            f"  largest gap {ms(gaps[-1])}, 99th percentile {ms(results[-1]['p99_gap_s'])}, "
            f"new figures after {shown[0]:.1f} s; idle: largest gap {ms(idle[-1])}",
            file=sys.stderr,
        )
    page.set_session(None)
    session.close()
    runner.shutdown()
    shutil.rmtree(folder, ignore_errors=True)
    return results


def summary(name: str, results: list[dict]) -> float:
    largest = [r["largest_gap_s"] for r in results]
    p99 = [r["p99_gap_s"] for r in results]
    shown = [r["new_figures_s"] for r in results]
    idle = [r["idle_largest_gap_s"] for r in results]
    print(
        f"{name}: largest UI-loop gap median {ms(statistics.median(largest))} (max {ms(max(largest))}), "
        f"99th percentile median {ms(statistics.median(p99))}, new figures after median "
        f"{statistics.median(shown):.1f} s, over {len(results)} trials (target: largest gap <= {TARGET_MS} ms); "
        f"the same page idle: largest gap median {ms(statistics.median(idle))}"
    )
    return statistics.median(largest)


def compare(old_tree: Path, trials: int, demos: dict[str, Path]) -> None:
    """One process per trial, old and new alternately, so the machine's load falls on both alike."""
    found: dict[str, list[dict]] = {"old": [], "new": []}
    for number in range(trials):
        for name in ("old", "new"):
            env = dict(os.environ)
            if name == "old":
                env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(old_tree), env.get("PYTHONPATH")]))
            command = [sys.executable, __file__, "--trials", "1", "--json", "--demo", str(demos[name])]
            output = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
            result = json.loads(output.strip().splitlines()[-1])[0]
            found[name].append(result)
            print(f"trial {number + 1} {name}: largest gap {ms(result['largest_gap_s'])}, "
                  f"new figures after {result['new_figures_s']:.1f} s, idle {ms(result['idle_largest_gap_s'])}")  # fmt: skip
    old = summary(f"old ({old_tree})", found["old"])
    new = summary("new (this tree)", found["new"])
    print(f"old / new largest gap: {old / new:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--demo", type=Path, help="a built demo project to copy (default: build one)")
    parser.add_argument("--compare", type=Path, metavar="OLD_TREE", help="a tree with spokenbench/ to run first")
    parser.add_argument("--json", action="store_true", help="print the trials as one JSON line (for --compare)")
    parser.add_argument("--build-demo", type=Path, metavar="DIR", help="only build the demo there (for --compare)")
    args = parser.parse_args()
    if args.compare:
        # each tree opens a demo it built: a newer schema (migration 13 came with issue 28) is refused by older code
        demos = {}
        for name, python_path in (("old", str(args.compare)), ("new", None)):
            demos[name] = Path(tempfile.mkdtemp(prefix=f"bench-results-demo-{name}-")) / "demo"
            env = dict(os.environ) | ({"PYTHONPATH": python_path} if python_path else {})
            build = [sys.executable, __file__, "--build-demo", str(demos[name])]
            subprocess.run(build, env=env, check=True, capture_output=True)
        compare(args.compare, args.trials, demos)
        return
    if args.build_demo:
        demo_builder()(args.build_demo)
        return
    results = run_trials(args.trials, args.demo)
    if args.json:
        print(json.dumps(results))
    else:
        summary("this tree", results)


if __name__ == "__main__":
    main()
