"""`report`: every table (CSV, Markdown, LaTeX) and figure (PNG, SVG) for a responses table, in one folder,
with an index (README.md) saying what each file holds and what was skipped and why."""

from __future__ import annotations

import contextlib
import functools
import mmap
import multiprocessing
import os
import pickle
import select
import shutil
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from spokenbench.core.foundation.child_process import ChildCallFailed, ChildCalls, child_start_method
from spokenbench.core.foundation.collection import automatic_collection_paused
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.file_system import folder_lock
from spokenbench.core.foundation.processes import left_behind, owner_tag, usable_cores
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.metrics import matplotlib_hooks, mcq
from spokenbench.core.metrics.analysis import McqAnalysis, analyze_mcq, check_kind
from spokenbench.core.metrics.bootstrap import DEFAULT_SEED
from spokenbench.core.metrics.encoding import combine, representative_row
from spokenbench.core.metrics.loading import load_responses, read_responses_columns
from spokenbench.core.metrics.table_formats import ColumnTable, column_array, column_table, write_table

if TYPE_CHECKING:  # a multiple-choice report imports no pandas; a gender study's, only where it writes tables
    import pandas as pd

DEFAULT_REPORT_RESAMPLES = 1000
STAGING_PREFIX = ".report."  # + owner_tag() + ".<random>.part": where a report is written before it is published
FIGURE_FORMATS = ("png", "svg")  # each figure's files, by default; `report --figures` writes fewer


@dataclass
class Report:
    out_dir: Path
    kind: str
    files: list[Path] = field(default_factory=list)
    entries: list[tuple[str, str]] = field(default_factory=list)  # (file stem, description)
    skipped: list[str] = field(default_factory=list)


@automatic_collection_paused()  # issue 28: its passes were ~6% of a report's CPU, and more in forked parts
def write_report(
    source: str | Path | pd.DataFrame,
    out_dir: str | Path,
    *,
    kind: str | None = None,
    factors: list[str] | None = None,
    backbones: list[str] | dict[str, str] | None = None,
    n_resamples: int = DEFAULT_REPORT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    failures_as_category: bool = False,
    vote_ties: str = "fractional",
    progress: Progress | None = None,
    workers: int | None = None,
    figure_formats: tuple[str, ...] = FIGURE_FORMATS,
) -> Report:
    """Compute everything for `source` (a responses file, a project folder, or a table) and write it to
    `out_dir` (created if needed; files of the same names are replaced). `workers`: processes to draw the
    figures in, while this one writes the tables (None: `_worker_count` decides; 0: all in this one); the files
    are the same. `figure_formats`: which of FIGURE_FORMATS to write each figure in (none: no figures, and
    matplotlib is not imported); a figure's file is the same whichever others are written.

    The files are written into a staging folder inside `out_dir` and moved into place only once all are written,
    the index last: a report that fails, is cancelled or killed leaves the folder's earlier report as it was (a
    killed one's staging folder is removed by the next report there), and two reports into one folder are
    published one after the other, never mixed."""
    progress = progress or no_progress()
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise SpokenBenchError(f"{out_dir} exists and is not a folder")
    unknown = [f for f in figure_formats if f not in FIGURE_FORMATS]
    if unknown:
        raise SpokenBenchError(f"no figure format {unknown[0]!r}: figures are written as {' or '.join(FIGURE_FORMATS)}")
    figure_formats = tuple(f for f in FIGURE_FORMATS if f in figure_formats)  # one order, each once
    processes = _worker_count(MANY_PARTS, workers) if figure_formats else 0
    staging = out_dir / f"{STAGING_PREFIX}{owner_tag()}.{os.urandom(4).hex()}.part"  # one per report
    try:
        with _FigureProcesses(staging, processes, figure_formats) as drawing:  # importing matplotlib already
            report = _computed_and_written(
                source,
                staging,
                drawing,
                kind,
                factors,
                backbones,
                n_resamples,
                seed,
                failures_as_category,
                vote_ties,
                progress,
            )
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # once its figure processes have ended
        raise
    return _published(report, out_dir)


def _published(report: Report, out_dir: Path) -> Report:
    """Move the staged files into `out_dir` in the report's order, holding a lock on the folder so that a second
    report into it publishes after this one rather than between its files (on this machine: a network file
    system may not share the lock, or have none, and then the moves go on without it). The earlier index goes
    first and the new one comes last, so a folder whose publishing was cut short has no index that describes
    the wrong files; what could not be published is removed with the staging folder."""
    published = []
    try:
        with folder_lock(out_dir):
            index = out_dir / "README.md"
            if index.is_file() and not index.is_symlink():
                index.unlink()
            for path in report.files:
                target = out_dir / path.relative_to(report.out_dir)
                os.replace(path, target)
                published.append(target)
    finally:
        shutil.rmtree(report.out_dir, ignore_errors=True)  # empty, unless publishing stopped or a figure died
    return replace(report, out_dir=out_dir, files=published)


def _stage(staging: Path) -> None:
    """Make the staging folder (and the output folder it is in), removing those reports killed while writing
    there left behind (another machine's after a day)."""
    out_dir = staging.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    for entry in out_dir.iterdir():
        name = entry.name
        if name.startswith(STAGING_PREFIX) and name.endswith(".part") and entry.is_dir() and not entry.is_symlink():
            with contextlib.suppress(OSError):  # gone meanwhile: another report removed it
                if left_behind(entry, name[len(STAGING_PREFIX) :]):
                    shutil.rmtree(entry, ignore_errors=True)
    staging.mkdir()


def _computed_and_written(
    source, staging, drawing, kind, factors, backbones, n_resamples, seed, failures_as_category, vote_ties, progress
) -> Report:
    """`write_report`'s work, while `drawing` (its figure processes, if any) imports matplotlib."""
    from_path = isinstance(source, (str, os.PathLike))  # else a DataFrame
    project_pairs: dict[str, str] = {}
    if kind == "gender-probe" and from_path and Path(source).is_dir():
        from spokenbench.core.metrics.gender_study import project_study_frame

        frame, project_pairs = project_study_frame(source)  # with raw answers, option texts and declared pairs
    elif not from_path:
        frame = source
    elif Path(source).is_dir():
        frame = load_responses(source, kind)
    else:  # text columns, as `metrics` reads them: the multiple-choice engine takes them without a DataFrame
        frame = read_responses_columns(source)
    name = str(source) if from_path else "<table>"
    kind = check_kind(kind, frame)
    _stage(staging)
    report = Report(out_dir=staging, kind=kind)
    progress.report(0, None, "computing metrics")
    if kind == "mcq":
        analysis = analyze_mcq(
            frame,
            factors,
            source=name,
            failures_as_category=failures_as_category,
            n_resamples=n_resamples,
            seed=seed,
            vote_ties=vote_ties,
            progress=progress,
        )
        progress.check_cancelled()
        _write_parts(
            lambda part: _mcq_tables(analysis, part, lambda: drawing.wait_until_one_is_free(progress.check_cancelled)),
            functools.partial(_mcq_figure_parts, formats=drawing.formats),
            _figures_view(analysis),
            report,
            progress,
            drawing,
        )
    else:
        from spokenbench.core.foundation.tables import TextColumns
        from spokenbench.core.metrics.gender_probe import parse_backbones
        from spokenbench.core.metrics.gender_study import analyze_gender_study

        flags = backbones if isinstance(backbones, dict) else parse_backbones(backbones)
        study = analyze_gender_study(
            frame.to_frame() if isinstance(frame, TextColumns) else frame,
            flags or project_pairs,
            source=name,
            failures_as_category=failures_as_category,
            n_resamples=n_resamples,
            seed=seed,
            require_backbones=bool(flags),
            progress=progress,
        )
        progress.check_cancelled()
        _write_parts(
            lambda part: _gender_study_tables(study, part),
            functools.partial(_gender_figure_parts, formats=drawing.formats),
            study,
            report,
            progress,
            drawing,
        )
    _write_index(report, name, n_resamples, seed, drawing.formats)
    progress.report(1, 1, "report written")
    return report


def _figures_view(analysis: McqAnalysis) -> McqAnalysis:
    """What the figures draw from (per group and per model): `analysis` without its per-row arrays, 2 MB to send
    to the figure processes instead of 17 MB on 100,800 rows (issue 28, round 5: ~0.05 s of CPU to pickle and
    read back, half of it before the first figure starts)."""
    data = analysis.data.without_rows()
    return replace(
        analysis,
        data=data,
        metrics=replace(analysis.metrics, data=data),
        selection=replace(analysis.selection, presentation=None),  # per row too; no figure reads it
    )


def _mcq_figure_parts(analysis: McqAnalysis, formats: tuple[str, ...]) -> dict[str, Callable[[Report], None]]:
    """The multiple-choice figures, one part each, by file stem (none without `formats`)."""
    if not formats:
        return {}
    from spokenbench.core.metrics import figures

    return {
        stem: _figure_part(stem, lambda build=build: build(analysis), MCQ_FIGURE_NOTES.get(stem, ""), formats)
        for stem, build in figures.MCQ_FIGURES.items()
    }


def _gender_figure_parts(study, formats: tuple[str, ...]) -> dict[str, Callable[[Report], None]]:
    """A gender study's figures: one panel per answer setting, by file stem (none without `formats`)."""
    if not formats:
        return {}
    from spokenbench.core.metrics import figures
    from spokenbench.core.metrics.gender_study import SETTING_NAMES

    single = len(study.settings) == 1
    stems = {setting: "fig_gender_probe" + ("" if single else f"_{setting}") for setting in study.settings}
    return {
        stems[setting]: _figure_part(
            stems[setting],
            lambda setting=setting: figures.gender_probe_panel(study.for_setting(setting)),
            f"J, Δ and ν per model and category with 95% bootstrap intervals ({SETTING_NAMES.get(setting, setting)})",
            formats,
        )
        for setting in study.settings
    }


MCQ_FIGURE_NOTES = {
    "fig_entropy_distribution": "distribution of question entropy per model (BiasInEar Fig. 2)",
    "fig_entropy_cs_ca": "entropy of culturally sensitive vs agnostic questions (BiasInEar Fig. 3)",
    "fig_kappa_vs_apes": "Fleiss' κ against APES per model and factor (BiasInEar Figs. 4-5)",
    "fig_accuracy_change_by_gold_position": "accuracy change by gold position (Hearing the Order Fig. 1)",
    "fig_ranking_changes": "model ranks across settings (Hearing the Order Fig. 3)",
}
MCQ_FIGURE_SKIP_REASONS = {
    "fig_entropy_cs_ca": "no cultural_label column with both CS and CA questions",
    "fig_kappa_vs_apes": "no factor columns",
    "fig_accuracy_change_by_gold_position": "no rows in the original option order to compare against",
    "fig_ranking_changes": "fewer than two models",
    "fig_entropy_distribution": "no question has a counted answer",
}


def _add(
    report: Report,
    frame: pd.DataFrame | ColumnTable,
    stem: str,
    description: str,
    display: pd.DataFrame | ColumnTable | None = None,
    csv_only: bool = False,
) -> None:
    report.files += write_table(
        frame,
        report.out_dir,
        stem,
        caption=description,
        display=display,
        formats=("csv",) if csv_only else ("csv", "md", "tex"),
    )
    report.entries.append((stem, description + (" (CSV only)" if csv_only else "")))


def _figure_part(stem: str, build: Callable, note: str, formats: tuple[str, ...]) -> Callable[[Report], None]:
    """One figure built and saved in `formats` (`figures.save_figure`), or the reason it was skipped."""
    from spokenbench.core.metrics import figures

    def write(part: Report) -> None:
        fig = build()
        if fig is None:
            part.skipped.append(f"{stem}: {MCQ_FIGURE_SKIP_REASONS.get(stem, 'nothing to draw')}")
            return
        part.files += figures.save_figure(fig, part.out_dir, stem, formats)
        part.entries.append((stem, f"{note} ({', '.join(f.upper() for f in formats)})"))

    return write


# CPU seconds of each part on the benchmark's 100,800 rows (tests/benchmarks/bench_metrics.py, issue 28), to share
# the figures out between processes largest first; others (gender probes) count as an average figure. Round 7:
# medians of 15 processes, each drawing all five after `figures.warm_up` in a rotated order (load ~0.9).
MEASURED_FIGURE_SECONDS = {
    "fig_entropy_cs_ca": 0.25,
    "fig_kappa_vs_apes": 0.24,
    "fig_accuracy_change_by_gold_position": 0.20,
    "fig_entropy_distribution": 0.19,
    "fig_ranking_changes": 0.18,
}


def _write_parts(
    tables: Callable[[Report], None],
    figure_parts_of: Callable[[object], dict[str, Callable[[Report], None]]],
    data: object,
    report: Report,
    progress: Progress,
    drawing: _FigureProcesses,
) -> None:
    """Write the tables here and the figures (`figure_parts_of(data)`) in `drawing`'s processes, which imported
    matplotlib while this one read and computed; gather their files, index entries and notes in the parts' order
    (tables first), so the result does not depend on which process finished first. Figures not drawn in another
    process (none started, one failed or died) are drawn here, where a part's own error is raised again."""
    done: dict[int, Report] = {}
    drawing.send(figure_parts_of, data, report.kind)

    def write_here(parts: dict[int, Callable[[Report], None]], total: int | None) -> None:
        for i, write in parts.items():
            if i not in done:
                progress.check_cancelled()
                done[i] = Report(out_dir=report.out_dir, kind=report.kind)
                write(done[i])
                progress.report(len(done), total, "writing tables and figures")

    write_here({0: tables}, None)  # how many figures there are is known later
    done |= drawing.written(progress.check_cancelled)
    figure_parts = [] if drawing.n_figures == len(done) - 1 else list(figure_parts_of(data).values())
    write_here(dict(enumerate(figure_parts, 1)), 1 + len(figure_parts))
    for i in sorted(done):
        report.files += done[i].files
        report.entries += done[i].entries
        report.skipped += done[i].skipped


MANY_PARTS = 1 << 16  # figures to draw, as far as the number of processes to start before they are known goes


class _FigureProcesses:
    """Processes that draw a report's figures: the first is forked as the report starts and imports matplotlib
    (0.5 s of CPU) while this process reads the responses and computes the metrics (issue 28); it then gets the
    figures' data (`send`), forks the others, which share that import and data, and draws with them, each taking
    the next largest figure whenever it is free. None with `processes` 0. As a context manager: leaving it ends
    every one still running. `formats`: the figures' files to write (FIGURE_FORMATS or fewer)."""

    def __init__(self, out_dir: Path, processes: int, formats: tuple[str, ...] = FIGURE_FORMATS) -> None:
        self.out_dir, self.processes, self.formats = out_dir, processes, formats
        self.n_figures: int | None = None
        self.children: ChildCalls | None = None
        self.tell: int | None = None  # this end of the pipe that gives the payload's length, until it is closed
        self.free: int | None = None  # this end of the pipe where a figure process says it has no figure left

    def __enter__(self) -> _FigureProcesses:
        if self.processes:
            self.payload = _memory_file()
            told, self.tell = os.pipe()
            self.free, says_free = os.pipe()
            self.children = ChildCalls("fork")
            self.children.start(_draw_figures, told, self.tell, self.payload, self.out_dir, self.processes, says_free)
            os.close(told)  # the figure processes' ends
            os.close(says_free)
        return self

    def __exit__(self, *exc_info) -> None:
        if self.children is not None:
            # the data's pipe first: a figure process still waiting for it reads its end and ends, even one whose
            # SIGTERM a library swallowed while it imported matplotlib (it then waited forever, and `stop` for it)
            self._close_payload()
            self.children.stop()
            os.close(self.free)

    def send(self, figure_parts_of, data, kind: str) -> None:
        """Give the figure processes their parts' data (through a memory file, so this process never waits for
        them to read it); when it cannot be pickled, they end without drawing and the figures are drawn here."""
        if self.children is None:
            return
        with contextlib.suppress(pickle.PicklingError, TypeError, AttributeError, OSError):  # OSError: none started
            payload = pickle.dumps((figure_parts_of, data, kind), protocol=pickle.HIGHEST_PROTOCOL)
            with open(self.payload, "wb", closefd=False) as file:
                file.write(payload)
            os.write(self.tell, len(payload).to_bytes(8, "little"))
        self._close_payload()

    def wait_until_one_is_free(self, check: Callable[[], None]) -> None:
        """Return once a figure process has no figure left to draw, or none runs any more (at once where fewer
        than two were started), calling `check` (a cancel check) while waiting. The report holds its last tables
        (~0.03 s of CPU on 100,800 rows) until then: written earlier, they slow the figure processes, which keep
        both cores busy; written then, they use the core the free one leaves idle while the other draws its last
        figure (0.035-0.13 s on the benchmark's rows; issue 28, round 9)."""
        if self.children is None or self.processes < 2:
            return
        while not select.select([self.free], [], [], 0.05)[0]:
            check()
        os.read(self.free, 1)  # a figure process's byte, or nothing: every one ended
        check()

    def _close_payload(self) -> None:
        """Close this process's ends (once: a descriptor closed twice could be another file's by then)."""
        if self.tell is not None:
            os.close(self.tell)
            os.close(self.payload)
            self.tell = None

    def written(self, check: Callable[[], None]) -> dict[int, Report]:
        """The figures the processes wrote (part i + 1 is figure i), once they have ended; also sets `n_figures`."""
        if self.children is None:
            return {}
        for _, result in self.children.finished(check):
            if not isinstance(result, ChildCallFailed):
                self.n_figures, written = result
                return written
        return {}


def _draw_figures(
    told: int, tell: int, payload: int, out_dir: Path, processes: int, says_free: int
) -> tuple[int | None, dict]:
    """In the first figure process, forked as the report starts: import matplotlib, wait for the figures' data,
    then draw them with `processes` - 1 more forked from here; each writes a byte to `says_free` once it has no
    figure left. How many figures there are (None: no data came), and what was written, by part number."""
    os.close(tell)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # ended by the report: end the processes forked here too
    multiprocessing.current_process().daemon = False  # a daemon may fork none; this one ends its own (ChildCalls)
    matplotlib_hooks.import_to_draw()  # the import this process overlaps with the metrics
    from spokenbench.core.metrics import figures

    figures.warm_up()  # once for every figure process: the ones forked below inherit it

    length = os.read(told, 8)
    if len(length) < 8:  # nothing sent: the figures are drawn by the report's process
        return None, {}
    with mmap.mmap(payload, int.from_bytes(length, "little"), access=mmap.ACCESS_READ) as sent:
        figure_parts_of, data, kind = pickle.loads(sent)
    os.close(payload)
    built = figure_parts_of(data)
    parts = [None, *built.values()]
    order = _largest_first(list(built))
    helpers = max(0, min(processes, len(order)) - 1)
    if helpers + 1 < processes:  # fewer figures than processes: a core has none from the start
        os.write(says_free, b"\0")
    written: dict[int, Report] = {}
    with ChildCalls("fork") as children:
        with _queue_of_parts(order[helpers + 1 :]) as queue:
            for first in order[1 : helpers + 1]:
                children.start(_write_parts_in_child, {first: parts[first]}, out_dir, kind, queue, parts, says_free)
            if order:
                written = _write_parts_in_child({order[0]: parts[order[0]]}, out_dir, kind, queue, parts, says_free)
        for _, result in children.finished():
            if not isinstance(result, ChildCallFailed):
                written |= result
    return len(order), written


def _memory_file() -> int:
    """A file descriptor of an anonymous file in memory (a temporary file where there is no memfd)."""
    if hasattr(os, "memfd_create"):
        return os.memfd_create("spokenbench-report-figures")
    import tempfile

    fd, path = tempfile.mkstemp(prefix="spokenbench-report-")
    os.unlink(path)
    return fd


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _largest_first(stems: list[str]) -> list[int]:
    """The figures' part numbers (part i + 1 is figure i), largest first by MEASURED_FIGURE_SECONDS (others count
    as an average figure), so that the last to start is a small one."""
    average = sum(MEASURED_FIGURE_SECONDS.values()) / len(MEASURED_FIGURE_SECONDS)
    return sorted(range(1, len(stems) + 1), key=lambda i: -MEASURED_FIGURE_SECONDS.get(stems[i - 1], average))


@contextlib.contextmanager
def _queue_of_parts(indices: list[int]):
    """A pipe holding `indices`, already closed for writing: forked processes take the next one whenever they
    are free (a read of 2 bytes from a pipe is never split between readers), and see its end once it is empty.
    Each process thus ends within about one figure of the others, whatever the figures' real costs there. The
    block forks the processes; this one's copy is closed after it."""
    read, write = os.pipe()
    try:
        with os.fdopen(write, "wb") as writing:  # all at once: a few bytes, far below the pipe's buffer
            writing.write(b"".join(i.to_bytes(2, "little") for i in indices))
        yield read
    finally:
        os.close(read)


def _write_parts_in_child(
    parts: dict[int, Callable[[Report], None]],
    out_dir: Path,
    kind: str,
    queue: int | None = None,
    all_parts: list[Callable[[Report], None]] | None = None,
    says_free: int | None = None,
) -> dict[int, Report]:
    """In a forked process (it inherits the parts: closures need no pickling): write the parts in order, then
    those it takes from `queue` (_queue_of_parts: numbers in `all_parts`); what was written goes back, and a byte
    to `says_free` once there is nothing left to write here. A part that fails ends the work here; the parent
    writes that part and the rest again, and so raises the part's error."""
    written: dict[int, Report] = {}

    def taken() -> Iterator[tuple[int, Callable[[Report], None]]]:
        yield from parts.items()
        while queue is not None and len(number := os.read(queue, 2)) == 2:
            i = int.from_bytes(number, "little")
            yield i, all_parts[i]

    for i, write in taken():
        part = Report(out_dir=out_dir, kind=kind)
        try:
            write(part)
        except Exception:  # noqa: BLE001 - raised again by the parent, which writes the part again
            break
        written[i] = part
    if says_free is not None:
        with contextlib.suppress(OSError):  # the report ended meanwhile
            os.write(says_free, b"\0")
    return written


def _worker_count(n_parts: int, requested: int | None) -> int:
    """Processes to write `n_parts` parts in: `requested`, or by default one per core (at most one per part), forked
    so they start at once with the data and libraries already loaded (spawning re-imports pandas and
    matplotlib, ~1 s of CPU each). 0 (all in this process) where fork is missing, and by default with one core
    or where forking is unsafe or nested (`child_start_method`): another thread running (the app, the demo
    report's pool), inside a worker process already, or not on Linux."""
    if n_parts < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return 0
    if requested is not None:
        return max(0, min(requested, n_parts))
    if child_start_method() != "fork":  # one core, another thread, a worker already, or not Linux
        return 0
    return min(usable_cores(), n_parts)


def _with_ci(table: ColumnTable, analysis: McqAnalysis, column: str, key: str) -> ColumnTable:
    """`table` with the bootstrap interval of `column` (its `key` in the intervals) after it."""
    if not analysis.intervals:
        return table
    bounds = {
        f"{column}_ci_{side}": column_array([ci.get(key, (np.nan, np.nan))[i] for ci in analysis.intervals])
        for i, side in enumerate(("low", "high"))
    }
    out = {}
    for name, values in table.items():
        out[name] = values
        if name == column:
            out |= bounds
    return out


def _mcq_tables(analysis: McqAnalysis, report: Report, before_the_last: Callable[[], None] = lambda: None) -> None:
    """The multiple-choice tables, computed and written from plain columns: no pandas (its import and frames
    were ~1 s of CPU on 100,800 rows, issue 28); the files are the bytes pandas wrote for them. `before_the_last`
    is called before the selection-bias and per-question tables: a report waits there for a figure process to
    be free (`_FigureProcesses.wait_until_one_is_free`)."""
    data, summary, selection = analysis.data, analysis.summary_columns, analysis.selection
    columns = [
        "model",
        "n",
        "n_questions",
        "accuracy",
        "parse_failure_rate",
        "entropy_mean",
        "entropy_median",
        "entropy_iqr",
        "rsd",
        "ckld",
    ]
    overview = column_table({c: summary[c] for c in columns})
    for column, key in (("accuracy", "accuracy"), ("entropy_mean", "entropy_mean"), ("rsd", "rsd"), ("ckld", "ckld")):
        overview = _with_ci(overview, analysis, column, key)
    _add(report, overview, "summary", "Headline numbers per model (95% question-level bootstrap intervals)")

    rows = []
    for m, model in enumerate(data.models):
        for f, result in analysis.metrics.factors.items():
            ci = analysis.intervals[m] if analysis.intervals else {}
            rows.append(
                {
                    "model": model,
                    "factor": f,
                    "level_entropy": summary[f"level_entropy[{f}]"][m],
                    "apes": summary[f"apes[{f}]"][m],
                    "apes_ci_low": ci.get(f"apes[{f}]", (np.nan, np.nan))[0],
                    "apes_ci_high": ci.get(f"apes[{f}]", (np.nan, np.nan))[1],
                    "fleiss_kappa": summary[f"kappa[{f}]"][m],
                    "fleiss_kappa_ci_low": ci.get(f"fleiss_kappa[{f}]", (np.nan, np.nan))[0],
                    "fleiss_kappa_ci_high": ci.get(f"fleiss_kappa[{f}]", (np.nan, np.nan))[1],
                    "kappa_questions_defined": int(summary[f"kappa_defined[{f}]"][m]),
                    "kappa_questions_undefined": int(summary[f"kappa_undefined[{f}]"][m]),
                    "kappa_item_factors": "+".join(result.kappa_item_factors) or "(none)",
                }
            )
    if rows:
        factor_table = _rows_table(rows)
        if not analysis.intervals:
            factor_table = {c: values for c, values in factor_table.items() if "_ci_" not in c}
        _add(
            report,
            factor_table,
            "robustness_by_factor",
            "Level entropy, APES and Fleiss' κ per model and factor (BiasInEar Eqs. 2-3, App. C.4)",
        )
    else:
        report.skipped.append("robustness_by_factor: no factor columns")

    if data.factors:
        parts = []
        for f in data.factors:
            by_level = mcq.accuracy_by_columns(data, [f])
            n = len(by_level["n"])
            parts.append(
                {
                    "model": by_level["model"],
                    "factor": np.full(n, f, dtype=object),
                    "level": by_level[f],
                    "n": by_level["n"],
                    "accuracy": by_level["accuracy"],
                    "parse_failure_rate": by_level["parse_failure_rate"],
                }
            )
        long = column_table(mcq.concatenated(parts, []))
        _add(report, long, "accuracy_by_factor_level", "Accuracy and parse-failure rate per factor level")
        for f in data.factors:
            table = column_table(mcq.accuracy_cross_columns(data, f))
            _add(
                report,
                table,
                f"accuracy_by_{f}",
                f"Accuracy (%) by {f} across the other factors (BiasInEar Tables 6, 11-20)",
                display=_wide_cross_table(table, f),
            )
    if data.subject is not None:
        key, n_keys = combine(data.model, data.subject)
        first = representative_row(key, n_keys)
        n = np.bincount(key, minlength=n_keys)
        table = {
            "model": np.asarray(data.models, dtype=object)[data.model[first]],
            "subject": np.asarray(data.subjects, dtype=object)[data.subject[first]],
            "n": n,
            "accuracy": np.bincount(key, weights=data.correct, minlength=n_keys) / n,
            "parse_failure_rate": np.bincount(key, weights=~data.valid, minlength=n_keys) / n,
        }
        _add(report, column_table(table), "accuracy_by_subject", "Accuracy per subject")

    cs_ca = column_table(mcq.entropy_cs_ca_columns(analysis.metrics))
    if len(cs_ca["model"]):
        _add(report, cs_ca, "entropy_cs_ca", "Mean entropy of CS vs CA questions (BiasInEar Table 5 / Fig. 3)")
    else:
        report.skipped.append("entropy_cs_ca: no cultural_label column")
    if data.factors:
        _add(
            report,
            column_table(mcq.level_entropy_by_level_columns(analysis.metrics)),
            "level_entropy_by_level",
            "Mean level entropy per factor level (BiasInEar Table 22)",
        )
        strata = column_table(mcq.apes_by_stratum_columns(analysis.metrics))
        if len(strata["model"]):
            _add(
                report,
                strata,
                "apes_by_stratum",
                "APES and κ of each factor within each level of another (BiasInEar Table 21)",
            )

    before_the_last()
    positions = []
    per_model = selection.per_model_columns
    for m, model in enumerate(data.models):
        for p in selection.positions:
            positions.append(
                {
                    "model": model,
                    "gold_position": p,
                    "accuracy": per_model[f"accuracy_gold_{p}"][m],
                    "delta_accuracy_vs_original": per_model[f"delta_accuracy_gold_{p}"][m],
                    "predicted_share": per_model[f"predicted_share_{p}"][m],
                    "gold_share": per_model[f"gold_share_{p}"][m],
                }
            )
    _add(
        report,
        _rows_table(
            positions,
            ["model", "gold_position", "accuracy", "delta_accuracy_vs_original", "predicted_share", "gold_share"],
        ),
        "selection_bias_by_position",
        f"Accuracy by gold position, Δ vs the original order ({selection.comparison_rows}), predicted and gold shares (Hearing the Order)",
    )
    _add(
        report,
        column_table(selection.voting_columns),
        "permutation_voting",
        "Accuracy, RSD and CKLD in the original order and after majority voting over cyclic / full permutations "
        f"(Hearing the Order Table 3); {selection.vote_tie_note}",
    )
    ranking = column_table(selection.ranking_columns)
    _add(
        report,
        ranking,
        "model_ranking",
        "Model ranks (1 = most accurate) per setting (Hearing the Order Fig. 3)",
        display=_wide(ranking, ["model"], "setting", "rank", list(dict.fromkeys(ranking["setting"]))),
    )
    tau_columns = ["setting", "n_models", "kendall_tau", "p_value"]
    _add(
        report,
        _rows_table([dict(zip(tau_columns, row)) for row in selection.kendall_tau_rows], tau_columns),
        "ranking_kendall_tau",
        "Kendall's τ-b of each setting's accuracies against the original order",
    )
    _add(
        report,
        column_table(selection.mcnemar_columns),
        "mcnemar_original_vs_reversed",
        "Exact McNemar test of correctness, original vs reversed option order (pairs: same question and configuration)",
    )
    _add(
        report,
        column_table(mcq.per_question_columns(analysis.metrics)),
        "per_question",
        "Every per-question value",
        csv_only=True,
    )


def _rows_table(rows: list[dict], columns: list[str] | None = None) -> ColumnTable:
    """Rows (dicts of the same keys) as a ColumnTable, as pd.DataFrame(rows) makes them (no rows: `columns`
    of objects)."""
    if not rows:
        return {c: np.empty(0, dtype=object) for c in columns or []}
    return column_table({c: [row[c] for row in rows] for c in rows[0]})


def _wide(table: ColumnTable, index: list[str], across: str, values: str, order: list | None = None) -> ColumnTable:
    """`table` pivoted (pandas' pivot_table(index, columns=across, values, aggfunc="first", observed=True),
    reset): one row per combination of the `index` columns that occurs, sorted by their texts; one column per
    value of `across` (sorted, or in `order`), named as text, holding `values` (NaN where none)."""
    row_key, n_rows = _index_key(table, index)
    first = representative_row(row_key, n_rows)
    wide = {c: table[c][first] for c in index}
    for level in order if order is not None else sorted(set(table[across].tolist())):
        wide[str(level)] = _first_per_key(row_key, n_rows, table[values], table[across] == level)
    return wide


def _index_key(table: ColumnTable, index: list[str]) -> tuple[np.ndarray, int]:
    """Each row's combination of the `index` columns, numbered in the order of their sorted texts."""
    return combine(*(np.unique(table[c], return_inverse=True)[1] for c in index))


def _first_per_key(row_key: np.ndarray, n_keys: int, values: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per key, the first of `values` on the chosen `rows` that is not NaN (NaN if none), as groupby's first."""
    cells = np.full(n_keys, np.nan)
    chosen = np.flatnonzero(rows & ~np.isnan(values))
    first = np.unique(row_key[chosen], return_index=True)
    cells[first[0]] = values[chosen[first[1]]]
    return cells


def _wide_cross_table(table: ColumnTable, factor: str) -> ColumnTable:
    """The paper layout: one row per model × other factors, one column per level of `factor`, then Δ."""
    index = [c for c in table if c not in (factor, "n", "accuracy_pct") and not c.startswith("delta_")]
    wide = _wide(table, index, factor, "accuracy_pct")
    delta = [c for c in table if c.startswith("delta_")]
    if delta:
        row_key, n_rows = _index_key(table, index)
        wide["Δ"] = _first_per_key(row_key, n_rows, table[delta[0]], np.ones(len(row_key), dtype=bool))
    return wide


def _gender_study_tables(study, report: Report) -> None:
    import pandas as pd

    from spokenbench.core.metrics.gender_freeform import CLASSIFICATION_RULE
    from spokenbench.core.metrics.gender_tables import missing_paper_tables, paper_tables

    _add(
        report,
        study.table,
        "gender_probe",
        "Gender probes per answer setting, model and category: J, Δ (t-test), ν, parse failures, Cohen's κ and "
        "Bowker's test against the backbone; J_s, s, Δ_s and the unclassified share in the free form",
    )
    _add(
        report,
        study.per_question,
        "gender_probe_per_question",
        "Per-question J, preference rates and Δ (and J_s, s in the free form)",
        csv_only=True,
    )
    if study.classification is not None:
        keep = [
            c
            for c in ("model", "question_id", "category", "voice_gender", "raw_text", "classification", "prediction")
            if c in study.classification.columns
        ]
        _add(
            report,
            study.classification[keep],
            "gender_free_form_classification",
            f"Each free-form answer and the class the rule gave it. Rule: {CLASSIFICATION_RULE}",
            csv_only=True,
        )
    if study.backbones:
        pairs = pd.DataFrame({"speech_model": list(study.backbones), "backbone": list(study.backbones.values())})
        _add(report, pairs, "gender_backbone_pairs", "Speech models and the text backbones they were compared with")
    for spec, long, display in paper_tables(study):
        _add(report, long, f"paper_{spec.stem}", f"{spec.caption} (the paper's layout)", display=display)
    report.skipped += study.notes + missing_paper_tables(study)


def _write_index(report: Report, source: str, n_resamples: int, seed: int, figure_formats: tuple[str, ...]) -> None:
    lines = [
        "# SpokenBench metrics report",
        "",
        f"- source: `{source}`",
        f"- kind: {report.kind}",
        f"- bootstrap: {n_resamples} question-level resamples, seed {seed}" if n_resamples else "- bootstrap: off",
        "- definitions: docs/metrics.md in the SpokenBench repository",
    ]
    if figure_formats != FIGURE_FORMATS:  # said only when asked for: a default report's index stays as it was
        drawn = " and ".join(f.upper() for f in figure_formats) + " only" if figure_formats else "none"
        lines.append(f"- figures: {drawn} (as asked for)")
    lines += [
        "",
        "## Files",
        "",
    ]
    for stem, description in report.entries:
        lines.append(f"- `{stem}`: {description}")
    if report.skipped:
        lines += ["", "## Skipped", ""] + [f"- {s}" for s in report.skipped]
    path = report.out_dir / "README.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report.files.append(path)
