"""Benchmark (run by hand, prints its figures; not part of the test run): how long a rating saved from the app
takes while an import of 20,000 items runs in the same app — the Studio foundation's "done when". Ratings go
through the app's real path (a `WriteOp` submitted on the UI thread, committed by the project's writer thread,
its success delivered back to the UI thread); the import is a `JobOp` in a job process, as in the app. Also
prints the import's duration and, from a second import of the same rows in this process, each write transaction
the import's copy holds the lock for and the copy's total time.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_studio.py [--items 20000] [--interval-ms 20]
        [--single-transaction]   # for comparison: the old import, writing everything inside one transaction
        [--repeats 3 --compare-back-off]   # issue 28: each import run twice, the writer polling for the lock
                                             # (now) and in SQLite's back-off (before), interleaved; medians
        [--repeats 3 --baseline /tmp/base-importlock]   # issue 28: this tree against an older tree (PYTHONPATH,
                                             # e.g. `git archive cb542b5 core app widgets resources` into
                                             # DIR/spokenbench: the app's code and its core from the same tree;
                                             # with core alone, this tree's app runs on the old core, which may
                                             # lack what it imports), interleaved

Target (issue 28): no rating waits more than 50 ms during an import.
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.py

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication
from support import gmmlu_rows, write_csv

import spokenbench.core.importers as importers
import spokenbench.core.store.items as store_items
from spokenbench.app.operations import JobOp, OperationRunner, ProjectSession, WriteOp
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.jobs.host import job_call
from spokenbench.core.qc.queues import rate_clip
from spokenbench.core.store import Project, database
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.items import insert_items, record_import

CLIPS = 50


def build_project(folder: Path) -> tuple[Path, list[int]]:
    """A project with a few items and clips to rate (clip rows only: rating needs no audio)."""
    path = folder / "project"
    table = write_csv(folder / "seed.csv", gmmlu_rows(10))
    with Project.create(path) as project:
        import_files(project, [table], "mcq", ImportOptions(source="seed", language="en",
                     mapping={"id": "sample_id", "options": "option_a,option_b,option_c,option_d"}))  # fmt: skip
        with project.transaction() as conn:
            item_id = conn.execute("SELECT min(id) FROM items").fetchone()[0]
            for n in range(CLIPS):
                conn.execute(
                    "INSERT INTO clips(item_id, part, text, language, backend, cache_key, created_at) "
                    "VALUES (?, 'question', 'q', 'en', 'bench', ?, ?)",
                    (item_id, f"bench-{n}", utc_now()),
                )
        clip_ids = [row[0] for row in project.conn.execute("SELECT id FROM clips ORDER BY id")]
    return path, clip_ids


def single_transaction_write(project, to_write, format_name, progress):
    """The import's write phase before staging: every row inside one transaction (for --single-transaction)."""
    total, written, results = sum(len(items) for _, _, items, _ in to_write), 0, []
    with project.transaction() as conn:
        for file, digest, items, skipped in to_write:
            import_id = record_import(conn, file, format_name, digest, len(items))
            for start in range(0, len(items), 1000):
                insert_items(conn, items[start : start + 1000], import_id)
                written += len(items[start : start + 1000])
                progress.report(written, total, f"writing {Path(file).name}")
            results.append(importers.ImportedFile(file, len(items), skipped, sorted({i.language for i in items})))
    return results


class RatingProbe:
    """Saves a rating every `interval_ms` (one in flight at a time) and records each one's latency."""

    def __init__(self, session: ProjectSession, clip_ids: list[int], interval_ms: int):
        self.session, self.clip_ids = session, clip_ids
        self.latencies: list[tuple[float, float]] = []  # (submitted at, seconds)
        self.in_flight = False
        self.timer = QTimer(interval=interval_ms)
        self.timer.timeout.connect(self.rate)

    def rate(self) -> None:
        if self.in_flight:
            return
        self.in_flight = True
        clip_id = self.clip_ids[len(self.latencies) % len(self.clip_ids)]
        submitted = time.perf_counter()

        def saved(rating_id) -> None:
            self.latencies.append((submitted, time.perf_counter() - submitted))
            self.in_flight = False

        WriteOp(
            self.session,
            lambda project: rate_clip(project, clip_id, "bench", "correct"),
            changes={"ratings"},
            label="rating",
        ).success(saved).run()


def run_event_loop_until(done) -> None:
    """Run the UI thread's event loop (idle between events, as in the app) until `done()` holds."""
    loop = QEventLoop()
    check = QTimer(interval=5)
    check.timeout.connect(lambda: done() and loop.quit())
    check.start()
    loop.exec()
    check.stop()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def lock_holds(items: int) -> dict:
    """The same import in this process (where its functions can be timed), without ratings: how long each write
    transaction of its copy holds the lock, and the copy's total time (wall and CPU)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-studio-holds-"))
    table = write_csv(folder / "en.csv", gmmlu_rows(items))
    holds: list[float] = []
    copying = []
    real_transaction, real_copy = store_items.transaction, importers.copy_staged_import

    @contextlib.contextmanager
    def timed_transaction(conn):
        with real_transaction(conn):
            started = time.perf_counter()  # the lock is held from here (BEGIN IMMEDIATE succeeded) …
            yield conn
        if copying:
            holds.append(time.perf_counter() - started)  # … to here (COMMIT returned)

    def timed_copy(conn, staging):
        copying.append((time.perf_counter(), time.process_time()))
        try:
            return real_copy(conn, staging)
        finally:
            copying.append((time.perf_counter(), time.process_time()))

    store_items.transaction, importers.copy_staged_import = timed_transaction, timed_copy
    try:
        with Project.create(folder / "project") as project:
            import_files(project, [table], "gmmlu-lite")
    finally:
        store_items.transaction, importers.copy_staged_import = real_transaction, real_copy
    (wall_0, cpu_0), (wall_1, cpu_1) = copying
    return {"holds": holds, "copy_s": wall_1 - wall_0, "copy_cpu_s": cpu_1 - cpu_0}


class TransactionTimes:
    """Each write transaction of this process (the ratings: the import runs in a job process) in three parts:
    waiting for the write lock (BEGIN IMMEDIATE), the statements, and the COMMIT (its fsync)."""

    def __init__(self):
        self.records: list[tuple[float, float, float, float]] = []  # (started at, lock wait, body, commit)
        self.real_transaction = database.transaction

    @contextlib.contextmanager
    def timed(self, conn):
        started = time.perf_counter()
        database._execute_while_busy(conn, "BEGIN IMMEDIATE")
        locked = time.perf_counter()
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        body_done = time.perf_counter()
        conn.execute("COMMIT")
        self.records.append((started, locked - started, body_done - locked, time.perf_counter() - body_done))

    def __enter__(self):
        database.transaction = self.timed
        return self

    def __exit__(self, *exc):
        database.transaction = self.real_transaction

    def within(self, start: float, seconds: float) -> tuple[float, float, float] | None:
        """The parts of the transaction that started within a rating's [submitted, answered] window."""
        for started, *parts in self.records:
            if start <= started <= start + seconds:
                return tuple(parts)
        return None


def run(items: int, interval_ms: int, single_transaction: bool, idle_s: float = 1.0) -> dict:
    """One import with ratings meanwhile; prints its figures and returns them (waits in seconds)."""
    _app = QApplication.instance() or QApplication([])  # kept referenced for the run
    folder = Path(tempfile.mkdtemp(prefix="bench-studio-"))
    path, clip_ids = build_project(folder)
    table = write_csv(folder / "en.csv", gmmlu_rows(items))
    if single_transaction:
        importers._write = single_transaction_write

    runner = OperationRunner()
    session = ProjectSession(path, runner)
    probe = RatingProbe(session, clip_ids, interval_ms)

    # idle baseline: ratings with nothing else running
    transactions = TransactionTimes().__enter__()
    probe.timer.start()
    idle_until = time.perf_counter() + idle_s
    run_event_loop_until(lambda: time.perf_counter() >= idle_until)
    probe.timer.stop()
    run_event_loop_until(lambda: not probe.in_flight)
    idle = [latency for _, latency in probe.latencies]
    probe.latencies.clear()

    window: list[float] = []
    importing = JobOp(
        session,
        # as the app imports (in a job process); the old import is patched in here, so it runs on a thread
        (lambda project, progress: import_files(project, [table], "gmmlu-lite", progress=progress))
        if single_transaction
        else job_call(import_files, [table], "gmmlu-lite"),
        kind="import",
        changes={"items"},
        label=f"Importing {items} items",
    )
    importing.finished.connect(lambda: window.append(time.perf_counter()))
    window.append(time.perf_counter())
    try:
        importing.run()
        probe.timer.start()
        run_event_loop_until(lambda: len(window) == 2)
        probe.timer.stop()
        run_event_loop_until(lambda: not probe.in_flight)
    finally:
        transactions.__exit__()
    if importing.status != "succeeded":
        raise SystemExit(f"the import did not succeed: {importing.status} {importing.error}")
    started, ended = window
    duration = ended - started
    during = [latency for at, latency in probe.latencies if started <= at <= ended]
    session.close()
    runner.shutdown()

    def ms(seconds: float) -> str:
        return f"{1000 * seconds:7.1f} ms"

    mode = "single transaction (old)" if single_transaction else "staged, then copied"
    print(f"import of {items:,} items, write phase: {mode}")
    print(f"  import duration (job start → done on the UI thread): {ms(duration)}")
    print(f"  ratings while idle:   n={len(idle):3d}  median {ms(statistics.median(idle))}  max {ms(max(idle))}")
    idle_commits = [commit for at, _, _, commit in transactions.records if at < started]
    print(f"  their COMMITs:  p95 {ms(percentile(idle_commits, 0.95))}  max {ms(max(idle_commits))}  "
          "(a rating's own fsync, with no import running)")  # fmt: skip
    figures = {
        "duration_s": duration,
        "n": len(during),
        "max": float("nan"),
        "p95": float("nan"),
        "median": float("nan"),
        "idle_commit_max": max(idle_commits),
        "idle_commit_p95": percentile(idle_commits, 0.95),
    }
    if during:
        figures.update(max=max(during), p95=percentile(during, 0.95), median=statistics.median(during))
        print(f"  ratings during import: n={len(during):3d}  median {ms(figures['median'])}  p95 {ms(figures['p95'])}  "
              f"max {ms(figures['max'])}")  # fmt: skip
        print(f"  max rating latency / import duration: {figures['max'] / duration:.3f}")
        worst_at, worst = max(((at, latency) for at, latency in probe.latencies if started <= at <= ended),
                              key=lambda pair: pair[1])  # fmt: skip
        parts = transactions.within(worst_at, worst)
        if parts:
            figures.update(worst_lock_wait=parts[0], worst_commit=parts[2])
            print(f"  the longest rating: {ms(parts[0])} waiting for the lock, {ms(parts[1])} its statements, "
                  f"{ms(parts[2])} its COMMIT, {ms(worst - sum(parts))} the rest (threads, event loop)")  # fmt: skip
        waits = [wait for at, wait, _, _ in transactions.records if started <= at <= ended]
        commits = [commit for at, _, _, commit in transactions.records if started <= at <= ended]
        figures.update(max_lock_wait=max(waits), max_commit=max(commits), commit_p95=percentile(commits, 0.95))
        print(f"  ratings' waits for the lock: max {ms(max(waits))}, p95 {ms(percentile(waits, 0.95))}; "
              f"their COMMITs: max {ms(max(commits))}, p95 {ms(percentile(commits, 0.95))}")  # fmt: skip
    else:
        print("  no rating completed during the import")
    if not single_transaction:
        held = lock_holds(items)
        figures.update(held)
        print(f"  the copy (same import in this process): {ms(held['copy_s'])} wall, {ms(held['copy_cpu_s'])} CPU, "
              f"{len(held['holds'])} write transactions holding the lock: longest {ms(max(held['holds']))}, "
              f"median {ms(statistics.median(held['holds']))}, sum {ms(sum(held['holds']))}")  # fmt: skip
    return figures


def compare_back_off(items: int, interval_ms: int, repeats: int) -> None:
    """The writer polling for the write lock (now) against SQLite's back-off (before), interleaved."""
    polling = database.poll_for_the_write_lock
    worst: dict[str, list[float]] = {"polling (now)": [], "back-off (before)": []}
    for _ in range(repeats):
        for name in worst:
            database.poll_for_the_write_lock = polling if name.startswith("polling") else (lambda conn: None)
            print(f"-- writer: {name}")
            worst[name].append(run(items, interval_ms, False)["max"])
    database.poll_for_the_write_lock = polling
    for name, values in worst.items():
        print(f"longest rating wait during an import, writer {name}: median {1000 * statistics.median(values):.1f} ms "
              f"of {', '.join(f'{1000 * v:.0f}' for v in values)} ms (target <= 50 ms)")  # fmt: skip


def compare_baseline(baseline: str, items: int, interval_ms: int, repeats: int, idle_s: float) -> None:
    """This tree against an older core, each run in its own process (PYTHONPATH selects the older core for the
    process and its job process), interleaved; medians of each figure."""
    runs: dict[str, list[dict]] = {"baseline": [], "this tree": []}
    for _ in range(repeats):
        for name in runs:
            env = dict(os.environ)
            if name == "baseline":
                env["PYTHONPATH"] = baseline + os.pathsep + env.get("PYTHONPATH", "")
            print(f"-- {name}  (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())})", flush=True)
            command = [sys.executable, __file__, "--items", str(items), "--interval-ms", str(interval_ms), "--json",
                       "--idle-s", str(idle_s)]  # fmt: skip
            output = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            print("\n".join(output.splitlines()[:-1]))
            runs[name].append(json.loads(output.splitlines()[-1]))
    print(f"\nmedians of {repeats} interleaved runs, {items:,} items (load average now "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}):")  # fmt: skip
    for name, figures in runs.items():

        def median(key: str, figures=figures) -> float:
            return 1000 * statistics.median(f[key] for f in figures)

        longest_hold = 1000 * statistics.median(max(f["holds"]) for f in figures)
        print(f"  {name:9s}: a rating's wait for the lock: max {median('max_lock_wait'):6.1f} ms; its COMMIT: max "
              f"{median('max_commit'):6.1f} ms, p95 {median('commit_p95'):5.1f} ms during the import, max "
              f"{median('idle_commit_max'):6.1f} ms, p95 {median('idle_commit_p95'):5.1f} ms before it")  # fmt: skip
        worst = ", ".join(f"{1000 * f['max']:.0f}" for f in figures)
        print(f"  {name:9s}: rating wait max {median('max'):6.1f} ms (runs: "
              f"{worst}), p95 {median('p95'):6.1f} ms, "
              f"median {median('median'):5.1f} ms; longest lock hold {longest_hold:6.1f} ms in "
              f"{statistics.median(len(f['holds']) for f in figures):.0f} transactions; copy {median('copy_s'):6.1f} ms "
              f"wall, {median('copy_cpu_s'):6.1f} ms CPU; import {median('duration_s'):6.0f} ms")  # fmt: skip
    print("target (issue 28): no rating waits more than 50 ms during an import")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--interval-ms", type=int, default=20)
    parser.add_argument("--single-transaction", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="with --compare-back-off: imports per writer")
    parser.add_argument("--compare-back-off", action="store_true")
    parser.add_argument(
        "--baseline", help="an older tree holding spokenbench/core, app, widgets and resources, compared interleaved"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on the last line")
    parser.add_argument("--idle-s", type=float, default=1.0, help="seconds of ratings before the import")
    args = parser.parse_args()
    if args.baseline:
        compare_baseline(args.baseline, args.items, args.interval_ms, args.repeats, args.idle_s)
    elif args.json:
        print(json.dumps(run(args.items, args.interval_ms, False, args.idle_s)))
    elif args.compare_back_off:
        compare_back_off(args.items, args.interval_ms, args.repeats)
    else:
        run(args.items, args.interval_ms, args.single_transaction, args.idle_s)
