"""Benchmark (run by hand, prints its figures; not part of the test run): the Rating page on the demo project.

1. Next clip: a rating key (`1`) → the rating committed by the writer → the next clip read, decoded and its
   waveform computed on the read pool → drawn and its playback requested. Median / max over 30 ratings.
2. The UI event loop while a background job runs: a 5 ms QTimer probe measures the gaps between its ticks
   while a JobOp imports `--items` items and the rater keeps rating; prints the largest gap and the 99th
   percentile, for each of `--job-repeats` imports (each new to the project), `--demo-builds` demo builds and
   `--evaluations` simulated evaluation runs of 20,000 items, and their median. Every one of them runs in a job
   process, as in the app; with `--compare-threads` each also runs first on a thread of the app (as the app ran
   them before job processes), and the two largest gaps are compared.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_rating.py [--ratings 30] [--items 20000]
        [--job-repeats 3] [--demo-builds 0] [--evaluations 0] [--compare-threads] [--with-results-page]
        [--idle-during-job] [--not-as-the-app]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.py

from PySide6.QtCore import QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support import gmmlu_rows, run_event_loop_until, write_csv

from spokenbench.app.evaluate_page import RUN_CHANGES, EvaluationRunOp
from spokenbench.app.main import keep_the_ui_responsive
from spokenbench.app.main_window import build_demo_and_load, load_project_view
from spokenbench.app.operations import BackgroundOp, JobOp, OperationRunner, ProjectSession
from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points
from spokenbench.app.rating_page import RatingPage
from spokenbench.app.results_page import ResultsPage
from spokenbench.core.demo.project import build_demo
from spokenbench.core.evaluation.plans import PlanOptions
from spokenbench.core.evaluation.preparation import RunSettings
from spokenbench.core.evaluation.runner import evaluate
from spokenbench.core.importers import import_files
from spokenbench.core.jobs.host import job_call
from spokenbench.core.qc.queues import sample_for_rating
from spokenbench.core.store import opened

QUEUE = "bench"


class GapProbe:
    """A 5 ms timer; the largest gap between its ticks is how long the UI thread could not react."""

    def __init__(self):
        self.gaps: list[float] = []
        self.last: float | None = None
        self.timer = QTimer(interval=5)
        self.timer.timeout.connect(self.tick)

    def tick(self) -> None:
        now = time.perf_counter()
        if self.last is not None:
            self.gaps.append(now - self.last)
        self.last = now


def rate_once(app: QApplication, page: RatingPage) -> tuple[float, float]:
    """Press 1; return (seconds until the next clip was drawn, until its playback was requested)."""
    pressed = time.perf_counter()
    QTest.keyClick(page.view, "1")
    run_event_loop_until(lambda: not page.busy and page.shown_at is not None and page.shown_at > pressed)
    page.view.repaint()  # the paint itself counts
    drawn = time.perf_counter()
    return drawn - pressed, (page.play_requested_at or drawn) - pressed


def ms(seconds: float) -> str:
    return f"{1000 * seconds:6.1f} ms"


def main(
    ratings: int,
    items: int,
    rate_during_job: bool = True,
    as_the_app: bool = True,
    job_repeats: int = 3,
    evaluations: int = 0,
    demo_builds: int = 0,
    compare_threads: bool = False,
    with_results_page: bool = False,
) -> None:
    app = QApplication.instance() or QApplication([])
    if as_the_app:  # what spokenbench-studio does at start (app/main.py)
        collect_garbage_at_safe_points(app)
    folder = Path(tempfile.mkdtemp(prefix="bench-rating-"))
    path = build_demo(folder / "demo")
    with opened(path) as project:
        sample_for_rating(project, QUEUE, per_bin=40, seed=1)  # 120 clips: enough for both parts
    runner = OperationRunner()
    session = ProjectSession(path, runner)
    page = RatingPage(SimpleNamespace(annotator="bench"))
    page.resize(1100, 700)
    page.show()
    page.set_session(session)
    page.open_queue(QUEUE)
    run_event_loop_until(lambda: page.rating is not None and not page.busy)
    print(f"audio output: {'yes' if page.player else 'none (playback requested, not played)'}")

    drawn, playing = zip(*(rate_once(app, page) for _ in range(ratings)))
    print(f"next clip after a rating key, {ratings} ratings:")
    print(f"  drawn:             median {ms(statistics.median(drawn))}  max {ms(max(drawn))}")
    print(f"  drawn, each (ms): {' '.join(f'{1000 * d:.0f}' for d in drawn)}")
    print(f"  playing requested: median {ms(statistics.median(playing))}  max {ms(max(playing))}")

    results = None
    if with_results_page:  # the Results page open too, its panels computed: what a run's answers change
        results = ResultsPage()
        results.resize(1200, 800)
        results.show()
        results.set_session(session)
        run_event_loop_until(lambda: results.panels is not None, timeout_s=120)
    if as_the_app:
        keep_the_ui_responsive()  # gc.freeze of what is alive now, a 1 ms GIL switch interval
    largest: list[float] = []
    on_thread: list[float] = []  # --compare-threads: the same jobs on a thread of the app, as before job processes
    ways = (True, False) if compare_threads else (False,)

    def probe(make_job, description: str) -> None:
        for thread in ways:
            where = "on a thread of the app" if thread else "in a job process"
            gap = probe_one_job(page, make_job(thread), f"{description}, {where}", rate_during_job)
            (on_thread if thread else largest).append(gap)
            if results is not None:  # the panels recomputed and redrawn after the job, before the next one starts
                settled = time.perf_counter() + 4.0
                run_event_loop_until(lambda settled=settled: time.perf_counter() > settled)
        if compare_threads:
            print(f"  on a thread / in a job process: largest gap {on_thread[-1] / largest[-1]:.1f}x")

    for number in range(job_repeats):
        probe(lambda thread, number=number: import_job(session, folder / f"{number}-{thread}", items, thread),
              f"an import of {items:,} items")  # fmt: skip
    for number in range(demo_builds):
        probe(lambda thread, number=number: demo_build_job(session, folder / f"built-{number}-{thread}", thread),
              "a demo build (File → Build demo)")  # fmt: skip
    for listener in SIMULATED_LISTENERS[:evaluations]:
        probe(lambda thread, listener=listener: evaluation_job(session, listener, thread),
              f"a simulated evaluation of {EVALUATED_ITEMS:,} items ({listener})")  # fmt: skip
    if on_thread:
        print(f"largest UI-loop gap over {len(on_thread)} jobs on a thread of the app: median "
              f"{ms(statistics.median(on_thread))}, max {ms(max(on_thread))}")  # fmt: skip
    if len(largest) > 1:
        print(f"largest UI-loop gap over {len(largest)} jobs in job processes: median {ms(statistics.median(largest))}, "
              f"max {ms(max(largest))} (target <= 50 ms)")  # fmt: skip
    page.set_session(None)
    if results is not None:
        results.set_session(None)
    session.close()
    runner.shutdown()


SIMULATED_LISTENERS = ("simulated:steady", "simulated:order-sensitive", "simulated:accent-sensitive")
EVALUATED_ITEMS = 20_000  # the first items by id: the demo's and the first import's


def tagged_rows(items: int, tag: str) -> list[dict]:
    """`items` English Global-MMLU-Lite rows whose ids carry `tag`: new to the project in every import."""
    rows = gmmlu_rows(items)
    for row in rows:
        row["sample_id"] = f"{tag}/{row['sample_id']}"
    return rows


def import_job(session, folder: Path, items: int, on_thread: bool) -> JobOp:
    """The app's import (a JobCall: in a job process), or the same core call on a thread as the app made it before;
    of a table of its own in `folder`, new to the project."""
    folder.mkdir()
    table = write_csv(folder / "en.csv", tagged_rows(items, folder.name))
    if on_thread:
        work = lambda project, progress: import_files(project, [table], "gmmlu-lite", progress=progress)  # noqa: E731
    else:
        work = job_call(import_files, [table], "gmmlu-lite")
    return JobOp(session, work, kind="import", changes={"items"}, label=f"Importing {items} items")


def demo_build_job(session, target: Path, on_thread: bool) -> BackgroundOp:
    """What File → Build demo runs (the build in a job process, then the view read), or the build on the thread."""
    if on_thread:
        work = lambda progress: (build_demo(target, progress), load_project_view(target, progress))[1]  # noqa: E731
    else:
        work = lambda progress: build_demo_and_load(target, progress)  # noqa: E731
    return BackgroundOp(session.runner, work, label="Building the demo project")


def evaluation_job(session, listener: str, on_thread: bool) -> JobOp:
    """The Evaluate page's run (EvaluationRunOp: in a job process), or `evaluate` on a thread of the app."""
    settings = RunSettings(model=listener, concurrency=4, plan=PlanOptions(limit=EVALUATED_ITEMS))
    label = f"Evaluating {listener}"
    if not on_thread:
        return EvaluationRunOp(session, settings, label=label)
    work = lambda project, progress: evaluate(project, settings, progress)  # noqa: E731
    return JobOp(session, work, kind="evaluate", changes=RUN_CHANGES, tracked=False, label=label)


def probe_one_job(page: RatingPage, job, description: str, rate_during_job: bool) -> float:
    probe = GapProbe()
    ended: list[float] = []
    job.finished.connect(lambda: ended.append(time.perf_counter()))
    started = time.perf_counter()
    job.run()
    probe.timer.start()
    during: list[float] = []
    while not ended:
        if page.rating.current is None or not rate_during_job:
            run_event_loop_until(lambda: bool(ended), timeout_s=1800)
            break
        during.append(rate_once(QApplication.instance(), page)[0])
    probe.timer.stop()
    if job.status != "succeeded":
        raise SystemExit(f"{description} did not succeed: {job.status} {job.error}")
    gaps = sorted(probe.gaps)
    print(f"UI event loop during {description} ({ended[0] - started:.1f} s), load {os.getloadavg()[0]:.1f}:")
    print(f"  timer probe (5 ms): {len(gaps)} ticks, max gap {ms(gaps[-1])}, "
          f"99th percentile {ms(gaps[int(0.99 * (len(gaps) - 1))])}, median {ms(statistics.median(gaps))}")  # fmt: skip
    if during:
        print(f"  {len(during)} ratings meanwhile: median {ms(statistics.median(during))}  max {ms(max(during))}")
    return gaps[-1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ratings", type=int, default=30)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--job-repeats", type=int, choices=(0, 1, 2, 3), default=3, help="imports probed")
    parser.add_argument(
        "--evaluations",
        type=int,
        choices=(0, 1, 2, 3),
        default=0,
        help="also probe this many simulated evaluation runs of the demo (on a thread: they mostly wait)",
    )
    parser.add_argument(
        "--demo-builds", type=int, default=0, help="also probe this many demo builds (File → Build demo)"
    )
    parser.add_argument(
        "--compare-threads",
        action="store_true",
        help="run each job on a thread of the app too (as before job processes), side by side",
    )
    parser.add_argument("--with-results-page", action="store_true", help="keep the Results page open and shown as well")
    parser.add_argument("--idle-during-job", action="store_true", help="probe the loop without rating meanwhile")
    parser.add_argument(
        "--not-as-the-app",
        action="store_true",
        help="leave out what the app does at start (garbage collection at safe points, gc.freeze, 1 ms switch "
        "interval), for comparison",
    )
    args = parser.parse_args()
    main(
        args.ratings,
        args.items,
        not args.idle_during_job,
        not args.not_as_the_app,
        args.job_repeats,
        args.evaluations,
        args.demo_builds,
        args.compare_threads,
        args.with_results_page,
    )
