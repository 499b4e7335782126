"""The Results page's figures as plain data, computed in a job process and kept by the project's change counters.

    request = ResultsRequest(run_ids=None, n_resamples=1000)
    snapshot = compute_results(project_path, request, progress=progress)   # in a job process (task_call)
    snapshot.panels.panels["accuracy_by_level"].points                     # plain, picklable values

Why: the panels are seconds of pandas and numpy that hold the GIL; on a thread of the app they kept its UI loop
from reacting. In a job process of its own the work reads the project through a fresh read-only connection and
returns values that cross the pipe whole (no closure, no connection: every table and question list is built
before it is sent). `ResultsCache` keeps recent snapshots by the counters of the tables they were read from
(core/store/changes.py) and the request: the same counters and the same request answer without a computation."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.results.model import DEFAULT_RESAMPLES, PanelSet
from spokenbench.core.store import Project, database
from spokenbench.core.store.changes import table_versions
from spokenbench.core.store.project import DATABASE_NAME

# The tables whose rows the panels are computed from: a change anywhere else leaves the figures as they are
RESULTS_TABLES = ("items", "runs", "responses")
KEPT_SNAPSHOTS = 4  # a few run selections to go back and forth between


@dataclass(frozen=True)
class ResultsRequest:
    """What the page asks for: the runs picked (None: every run) and the bootstrap's resamples."""

    run_ids: tuple[int, ...] | None = None
    n_resamples: int = DEFAULT_RESAMPLES


@dataclass
class ResultsSnapshot:
    """The figures of one request at one reading of the project: `versions` are the change counters read
    before the rows, so a change while computing makes the next reading differ (never a stale hit)."""

    request: ResultsRequest
    versions: tuple[tuple[str, int], ...]
    runs: list[dict]
    panels: PanelSet


def results_versions(conn) -> tuple[tuple[str, int], ...]:
    """The change counters of RESULTS_TABLES, as a cache key (one query on a tiny table)."""
    versions = table_versions(conn)
    return tuple((name, versions.get(name, 0)) for name in RESULTS_TABLES)


def open_read_only(project_path: str | Path) -> Project:
    """A project on a fresh read-only connection: a computation of figures never writes."""
    path = Path(project_path)
    return Project(path, database.connect(path / DATABASE_NAME, read_only=True), read_only=True)


def compute_results(
    project_path: str | Path, request: ResultsRequest, progress: Progress | None = None
) -> ResultsSnapshot:
    """Every panel of `request`, its tables complete and every point's questions listed (a `task_call`: the
    Results page runs it in a job process). Picklable as a whole."""
    from spokenbench.core.metrics.store import run_list
    from spokenbench.core.results.compute import project_panels  # here: the app that asks never loads the engine

    progress = progress or no_progress()
    project = open_read_only(project_path)
    try:
        versions = results_versions(project.conn)  # before the rows: a change while reading shows next time
        runs = run_list(project.conn)
        wanted = None if request.run_ids is None else list(request.run_ids)
        panels = project_panels(project, wanted, runs=runs, n_resamples=request.n_resamples, progress=progress)
    finally:
        project.close()
    progress.check_cancelled()
    panels.complete_tables()  # the Δ tables in the paper's layout: built here, not on the page's first look
    return ResultsSnapshot(request, versions, runs, panels)


class ResultsCache:
    """Recent snapshots by (change counters, request); safe to share between threads."""

    def __init__(self, keep: int = KEPT_SNAPSHOTS) -> None:
        self._snapshots: OrderedDict[tuple, ResultsSnapshot] = OrderedDict()
        self._lock = threading.Lock()
        self.keep = keep

    def get(self, versions: tuple, request: ResultsRequest) -> ResultsSnapshot | None:
        with self._lock:
            snapshot = self._snapshots.get((versions, request))
            if snapshot is not None:
                self._snapshots.move_to_end((versions, request))
            return snapshot

    def put(self, snapshot: ResultsSnapshot) -> None:
        with self._lock:
            self._snapshots[(snapshot.versions, snapshot.request)] = snapshot
            self._snapshots.move_to_end((snapshot.versions, snapshot.request))
            while len(self._snapshots) > self.keep:
                self._snapshots.popitem(last=False)
