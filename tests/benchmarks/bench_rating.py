"""Benchmark (run by hand, prints its figures; not part of the test run): the Rating page on the demo project.

1. Next clip: a rating key (`1`) → the rating committed by the writer → the next clip read, decoded and its
   waveform computed on the read pool → drawn and its playback requested. Median / max over 30 ratings.
2. The UI event loop while a background job runs: a 5 ms QTimer probe measures the gaps between its ticks
   while a JobOp imports `--items` items and the rater keeps rating; prints the largest gap and the 99th
   percentile, for each of `--job-repeats` imports (en, zh, ko: each new to the project), `--demo-builds`
   demo builds and `--evaluations` simulated evaluation runs of the demo, and their median. Every one of them
   runs in a job process, as in the app.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_rating.py [--ratings 30] [--items 20000]
        [--job-repeats 3] [--demo-builds 0] [--evaluations 0] [--idle-during-job] [--not-as-the-app]
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

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support import gmmlu_rows, write_csv

from spokenbench.app.evaluate_page import EvaluationRunOp
from spokenbench.app.main import keep_the_ui_responsive
from spokenbench.app.main_window import build_demo_and_load
from spokenbench.app.operations import BackgroundOp, JobOp, OperationRunner, ProjectSession
from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points
from spokenbench.app.rating_page import RatingPage
from spokenbench.core.demo import build_demo
from spokenbench.core.evaluation.preparation import RunSettings
from spokenbench.core.importers import import_files
from spokenbench.core.job_host import job_call
from spokenbench.core.qc.queues import sample_for_rating
from spokenbench.core.store import opened

QUEUE = "bench"


def run_event_loop_until(done, timeout_s: float = 30.0) -> None:
    loop = QEventLoop()
    check = QTimer(interval=1)
    deadline = time.perf_counter() + timeout_s
    check.timeout.connect(lambda: (done() or time.perf_counter() > deadline) and loop.quit())
    check.start()
    loop.exec()
    check.stop()


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

    if as_the_app:
        keep_the_ui_responsive()  # gc.freeze of what is alive now, a 1 ms GIL switch interval
    largest: list[float] = []
    for language in JOB_LANGUAGES[:job_repeats]:
        largest.append(probe_one_import(page, session, folder, language, items, rate_during_job))
    for number in range(demo_builds):
        job = BackgroundOp(
            session.runner,
            lambda progress, number=number: build_demo_and_load(folder / f"built-{number}", progress),
            label="Building the demo project",
        )
        largest.append(probe_one_job(page, job, "a demo build (as File → Build demo does)", rate_during_job))
    for listener in SIMULATED_LISTENERS[:evaluations]:
        job = EvaluationRunOp(session, RunSettings(model=listener, concurrency=4), label=f"Evaluating {listener}")
        largest.append(
            probe_one_job(page, job, f"a simulated evaluation ({listener}, EvaluationRunOp)", rate_during_job)
        )
    if len(largest) > 1:
        print(f"largest UI-loop gap over {len(largest)} jobs: median {ms(statistics.median(largest))}, "
              f"max {ms(max(largest))} (target <= 50 ms)")  # fmt: skip
    page.set_session(None)
    session.close()
    runner.shutdown()


JOB_LANGUAGES = ("en", "zh", "ko")  # one file per repeat: a language's items are new to the project each time


SIMULATED_LISTENERS = ("simulated:steady", "simulated:order-sensitive", "simulated:accent-sensitive")


def probe_one_import(page: RatingPage, session, folder: Path, language: str, items: int, rate_during_job: bool):
    """Import `items` items as the app does — a JobOp in a job process — while the probe ticks (and the rater
    rates); print and return the largest gap between the probe's ticks."""
    table = write_csv(folder / f"{language}.csv", gmmlu_rows(items))
    job = JobOp(
        session,
        job_call(import_files, [table], "gmmlu-lite"),
        kind="import",
        changes={"items"},
        label=f"Importing {items} items",
    )
    return probe_one_job(page, job, f"a background import of {items:,} {language} items (JobOp)", rate_during_job)


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
    parser.add_argument("--job-repeats", type=int, choices=(1, 2, 3), default=3, help="imports probed, one a language")
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
    )
