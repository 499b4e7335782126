"""Benchmark of the Results page's panels (core/results/) at BiasInEar's full size (not a test: pytest does not
collect it). Issue 11's target: panels for 100,800 responses ready ≤ 1 s after a run ends.

    /work/venv/bin/python tests/benchmarks/bench_panels.py [--repeats 7] [--resamples 1000] [--no-project]

100,800 responses = 400 questions × 28 configurations (language × accent × gender × order) × 9 models
(core/metrics/synthetic.py `biasinear_like`). Prints the median time of
  1. every panel from the response table (`compute_panels`: the engine, 95% intervals from 1,000 question-level
     bootstrap resamples, the rows behind every point, the published layer), in total and per panel;
  2. the same from a project folder holding those responses as nine finished runs (`project_panels`: listing the
     runs, reading every response through core's store functions, then 1.), cold;
  3. what the Results page does when a run ends: the same, with the page's cache holding the other eight runs'
     responses (a run's responses are re-read only when its summary changed), so only the ended run is read.
     The project is built once in a temp folder first (not timed).
Medians, because the machine is shared; each figure states how many runs it is the median of."""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.domain.items import Item, Option
from spokenbench.core.evaluation.store import ResponseRecord, create_run, mark_run, upsert_responses
from spokenbench.core.metrics.store import run_list
from spokenbench.core.metrics.synthetic import biasinear_like
from spokenbench.core.results.compute import ResponseCache, compute_panels, project_panels
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.core.store import Project, database
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.items import insert_items
from spokenbench.core.store.project import DATABASE_NAME

TARGET_S = 1.0
LANGUAGE_CODES = {"english": "en", "chinese": "zh", "korean": "ko"}
VOICES = {"female": "Zephyr", "male": "Orus"}


AUTOMATIC_GC = False  # --automatic-gc


def timed(function, repeats: int) -> tuple[float, list, float]:
    """Median wall time, every wall time, and the median CPU time of this process (all its threads): on a
    shared machine the wall time also counts other processes' turns, the CPU time does not. As in the app
    (app/qt_refcounts.py), Python's cyclic garbage collector does not run automatically: it collects between
    repeats, untimed, as the app does between Qt events."""
    times, cpu = [], []
    for _ in range(repeats):
        gc.collect()
        if not AUTOMATIC_GC:
            gc.disable()
        try:
            start, start_cpu = time.perf_counter(), time.process_time()
            function()
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        finally:
            gc.enable()
    return statistics.median(times), times, statistics.median(cpu)


def report_runs(label: str, repeats: int, runs: list) -> None:
    timings = pd.DataFrame(runs)
    print(f"\n{label}: median per part over {repeats} runs (s)")
    for column in timings.columns:
        name = column if column in PANEL_ORDER or column == "total" else f"({column})"
        print(f"  {name:<66} {timings[column].median():7.3f}")


def build_project(folder: Path, frame: pd.DataFrame) -> Path:
    """A project with the synthetic table stored as nine finished runs of mode 'simulated' (one per model)."""
    path = folder / "bench-project"
    with Project.create(path) as project:
        questions = frame.drop_duplicates(["question_id", "language"])
        items = [
            Item(
                source="bench",
                source_id=row.question_id,
                language=LANGUAGE_CODES[row.language],
                question=f"Synthetic question {row.question_id}?",
                options=tuple(Option(letter, f"option {letter}") for letter in "ABCD"),
                answer=row.answer,
                subject=row.subject,
                cultural_label=row.cultural_label,
            )
            for row in questions.itertuples()
        ]
        with project.transaction() as conn:
            ids = insert_items(conn, items)
        item_id = {(i.source_id, i.language): n for i, n in zip(items, ids)}
        now = utc_now()
        for model, rows in frame.groupby("model", sort=True):
            with project.transaction() as conn:
                run = create_run(
                    conn, f"bench {model}", model, "simulated", "simulated", "standard", "", {}, len(rows), None
                )
                records = []
                for row in rows.itertuples():
                    language = LANGUAGE_CODES[row.language]
                    condition = Condition(
                        language=language,
                        accent=row.accent,
                        voice=VOICES[row.gender],
                        gender=row.gender,
                        order=row.order,
                    )
                    presented = row.option_order
                    mapped = presented["ABCD".index(row.prediction)] if row.prediction else None
                    records.append(
                        ResponseRecord(
                            run_id=run,
                            item_id=item_id[(row.question_id, language)],
                            condition_key=condition.key(),
                            option_order=presented,
                            created_at=now,
                            raw_text=f"Answer: [[{row.prediction}]]" if row.prediction else "I cannot tell.",
                            parsed_letter=row.prediction or None,
                            parse_status="ok" if row.prediction else "failed",
                            mapped_option=mapped,
                        )
                    )
                upsert_responses(conn, records)
                mark_run(conn, run, "finished")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="runs per figure (default 7)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--no-project", action="store_true", help="skip the project-folder figures")
    parser.add_argument(
        "--automatic-gc",
        action="store_true",
        help="let Python's garbage collector run during the timings (the app does not)",
    )
    args = parser.parse_args()
    global AUTOMATIC_GC
    AUTOMATIC_GC = args.automatic_gc

    frame = biasinear_like(n_questions=400, n_models=9, seed=0)
    print(
        f"data: {len(frame):,} responses, {frame['question_id'].nunique()} questions, {frame['model'].nunique()} "
        f"models; {args.resamples} bootstrap resamples; target ≤ {TARGET_S:.1f} s; garbage collector "
        f"{'automatic' if AUTOMATIC_GC else 'between repeats only, as in the app'}"
    )
    compute_panels(frame, n_resamples=args.resamples)  # warm-up: imports, the published tables' cache
    runs = []  # keeps each result's timings only: a result is dropped before the next repeat, as the page does
    median, times, cpu = timed(
        lambda: runs.append(compute_panels(frame, n_resamples=args.resamples).timings), args.repeats
    )
    print(
        f"1. all panels from the response table: median {median:.3f} s of {args.repeats} "
        f"(min {min(times):.3f}, max {max(times):.3f}; CPU {cpu:.3f} s)  {'OK' if median <= TARGET_S else 'OVER TARGET'}"
    )
    report_runs("1.", args.repeats, runs)
    worst = median
    if not args.no_project:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            path = build_project(Path(tmp), frame)
            print(
                f"\nbuilt a project with 9 finished simulated runs in {time.perf_counter() - start:.1f} s (not timed)"
            )

            def from_project(cache=None):
                """What the page's QueryOp does: a read-only connection of its own, list the runs, the panels."""
                start = time.perf_counter()
                project = Project(path, database.connect(path / DATABASE_NAME, read_only=True), read_only=True)
                try:
                    runs = run_list(project.conn)
                    listed = time.perf_counter() - start
                    result = project_panels(project, runs=runs, cache=cache, n_resamples=args.resamples)
                finally:
                    project.close()
                result.timings = {"connecting and listing the runs": listed, **result.timings}
                return result

            checked = from_project()
            assert len(checked.responses) == len(frame), len(checked.responses)
            runs = []
            median, times, cpu = timed(lambda: runs.append(from_project().timings), args.repeats)
            print(
                f"2. cold: all panels from the project folder (connect, list runs, read all 100,800 responses, compute): "
                f"median {median:.3f} s of {args.repeats} (min {min(times):.3f}, max {max(times):.3f}; CPU {cpu:.3f} s)"
            )
            report_runs("2.", args.repeats, runs)

            # The Results page keeps each run's responses while the run's summary is unchanged; when a run ends,
            # only that run is read again. Each repeat starts from a cache holding the other eight runs.
            warm = ResponseCache()
            from_project(warm)
            last = max(r["id"] for r in checked.runs)
            runs = []
            median, times, cpu = timed(
                lambda: runs.append(from_project(warm.copy_without([last])).timings), args.repeats
            )
            print(
                f"3. after a run ends (the page's refresh: connect, list runs, read the ended run's 11,200 responses, "
                f"reuse the other eight runs', compute): median {median:.3f} s of {args.repeats} "
                f"(min {min(times):.3f}, max {max(times):.3f}; CPU {cpu:.3f} s)  "
                f"{'OK' if median <= TARGET_S else 'OVER TARGET'}"
            )
            report_runs("3.", args.repeats, runs)
            worst = max(worst, median)
    return 0 if worst <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
