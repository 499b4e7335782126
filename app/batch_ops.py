"""Large runs in the app (issue 14): which ways of running the launcher offers for a model, the operations that
submit provider batches, export and import batch files, and the controller that keeps the jobs panel's batch list
up to date — refreshing the providers' states off the UI thread, collecting finished jobs (automatically, or on
click) and cancelling them. Everything here runs through app/operations.py; the work itself is
core/evaluation/batches.py's."""

from __future__ import annotations

import datetime as _dt
import math
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal

from spokenbench.app.operations import JobOp, Operation, OperationRunner, ProjectSession, QueryOp
from spokenbench.core.evaluation import batches
from spokenbench.core.evaluation.launcher import CUSTOM, LaunchForm
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.host import job_call
from spokenbench.core.store import Project
from spokenbench.widgets.jobs_panel import BatchesView, BatchRow

ONLINE, BATCH, FILE = "online", "batch", "file"
RUN_WAYS = (
    (ONLINE, "Online"),
    (BATCH, "Batch (half price, results within 24 h)"),
    (FILE, "Export batch file"),
)
BATCH_CHANGES = frozenset({"runs", "responses", "response_cache", "jobs", "batch_jobs"})
BATCH_POLL_MS = 60_000  # how often unfinished provider batches are asked about
SHOWN_STATES = {
    "submitting": "submitting",
    "pending": "queued at the provider",
    "running": "running",
    "finalizing": "finalizing",
    "cancelling": "cancelling",
    "completed": "finished: to collect",
    "failed": "failed: to collect",
    "expired": "expired: to collect",
    "cancelled": "cancelled: to collect",
    "collected": "collected",
    "writing": "writing the file",
    "exported": "exported: waiting for results",
    "imported": "imported",
}


def batch_provider(spec: str) -> str | None:
    """The batch API a model of this preset spec is submitted to, or None."""
    provider = spec.split(":", 1)[0] if ":" in spec else ""
    return provider if provider in batches.PROVIDERS else None


def run_ways(form: LaunchForm) -> dict[str, str | None]:
    """For each way of running (ONLINE, BATCH, FILE): None when the form's model can run that way, else why not."""
    spec = form.model or ""
    reasons: dict[str, str | None] = {ONLINE: None, BATCH: None, FILE: None}
    if spec.startswith("simulated:"):
        why = "a simulated listener answers offline at once: there is nothing to batch"
        return {ONLINE: None, BATCH: why, FILE: why}
    if form.mode == "pipeline":
        why = "pipeline mode asks twice per request (the transcript, then the answer): run it online"
        return {ONLINE: None, BATCH: why, FILE: why}
    if spec == CUSTOM:
        reasons[BATCH] = (
            f"a {form.custom_provider} endpoint has no batch API: export a batch file and run it with vLLM's run_batch"
        )
        return reasons
    provider = batch_provider(spec)
    if provider is None:
        name = spec.split(":", 1)[0] or "this"
        reasons[BATCH] = (
            f"{name} models have no batch API in SpokenBench (only openai and gemini): export a batch file and run "
            "the open model with vLLM"
        )
    if provider == "gemini":
        reasons[FILE] = "a batch file holds OpenAI chat-completions requests; a Gemini model takes Batch (gemini)"
    return reasons


class ProjectThreadOp(Operation):
    """Short network work on a thread of its own with a writable connection of its own:
    `fn(project, progress) -> result` (asking the providers for batch states, cancelling a batch). A `quiet`
    operation (the periodic state refresh) is not listed in the jobs panel."""

    def __init__(
        self,
        session: ProjectSession,
        fn: Callable[[Project, Progress], Any],
        *,
        changes: Iterable[str] = (),
        quiet: bool = False,
        **kwargs,
    ):
        super().__init__(session.runner, **kwargs)
        self.session = session
        self.changes = frozenset(changes)
        self.quiet = quiet
        self._fn = fn

    def _start(self) -> None:
        self._run_with_own_connection(self._fn, self.changes, f"op: {self.label}")


def _submitted_text(stamp: str | None) -> str:
    if not stamp:
        return ""
    try:
        moment = _dt.datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _waiting(entry: dict) -> bool:
    """A provider job that may still change state: worth asking the provider about."""
    return entry["provider"] != "file" and bool(entry.get("remote_id")) and entry["state"] in batches.WAITING


def batch_row(entry: dict, collecting: set[int]) -> BatchRow:
    """One entry of `batch_states` as the jobs panel's batch list shows it."""
    provider, state = entry["provider"], entry["state"]
    remote = entry.get("remote_id") or ""
    if provider == "file":
        job_id = os.path.basename(entry.get("input_file") or "") or "(batch file)"
        provider_text = "batch file"
    else:
        job_id = remote or "(not submitted)"
        provider_text = provider
    shown = "collecting…" if entry["id"] in collecting else SHOWN_STATES.get(state, state)
    requests = f"{entry['requests']:,}" if entry.get("requests") is not None else ""
    if state in ("collected", "imported"):
        requests += f" ({entry.get('answered') or 0:,} answered, {entry.get('failed') or 0:,} failed)"
    elif provider == "file" and entry.get("pending"):
        requests += f" ({entry['pending']:,} waiting)"
    detail = [f"Batch {entry['id']} of run {entry['run_id']}: {entry['model']}"]
    if entry.get("remote_state"):
        detail.append(f"provider state: {entry['remote_state']}")
    if entry.get("cost_usd"):
        detail.append(f"cost ${entry['cost_usd']:.4f} (batch price)")
    for key in ("error", "note"):
        if entry.get(key):
            detail.append(str(entry[key]))
    if provider == "file" and entry.get("input_file"):
        detail.append(str(entry["input_file"]))
    waiting = _waiting(entry)
    return BatchRow(
        batch_id=entry["id"],
        provider=provider_text,
        job_id=job_id,
        model=entry["model"],
        state=shown,
        requests=requests,
        submitted=_submitted_text(entry.get("created_at")),
        detail=" · ".join(detail),
        collectable=provider != "file"
        and (state in batches.TERMINAL or bool(entry.get("orphaned")))
        and entry["id"] not in collecting,
        cancellable=bool(waiting) and state != "cancelling",
        attention=bool(entry.get("note") or entry.get("error")),
    )


class BatchesController(QObject):
    """Keeps the jobs panel's batch list up to date and carries out Collect and Cancel batch.

    States are read off the UI thread: from the project on every change of `batch_jobs`, and from the providers
    every `poll_ms` (`batch_states(refresh=True)`, a quiet operation). A job the provider reports finished is
    collected automatically, once per session (a failing collect is then left to the Collect button)."""

    collected = Signal(object)  # CollectSummary
    states_read = Signal(object)  # list[dict]

    def __init__(self, runner: OperationRunner, view: BatchesView, parent: QObject | None = None, poll_ms: int = 0):
        super().__init__(parent)
        self.runner, self.view = runner, view
        self.session: ProjectSession | None = None
        self.entries: list[dict] = []
        self.collecting: set[int] = set()
        self.collect_op: Operation | None = None
        self.last_read: Operation | None = None
        self._auto_tried: set[int] = set()
        self._orphans_tried: dict[int, float] = {}  # killed submitters' parts → when a collect last looked for them
        self._asked: set[int] = set()  # jobs the providers were asked about since this session was set
        self.auto_collect = True
        self._poll = QTimer(self, interval=poll_ms or BATCH_POLL_MS)
        self._poll.timeout.connect(lambda: self.refresh(remote=True))
        view.collectRequested.connect(self.collect)
        view.cancelRequested.connect(self.cancel)
        view.refreshRequested.connect(lambda: self.refresh(remote=True))

    def set_poll_ms(self, poll_ms: int) -> None:
        self._poll.setInterval(poll_ms)

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None:
            try:
                self.session.changes.changed.disconnect(self._changed)
            except (RuntimeError, TypeError):
                pass
        self.session = session
        self.entries, self.collecting, self._auto_tried, self._asked = [], set(), set(), set()
        self._orphans_tried = {}
        self.collect_op = None
        self.view.set_rows([])
        self.view.set_message("")
        self._poll.stop()
        if session is None:
            return
        session.changes.changed.connect(self._changed)
        self._poll.start()
        self.refresh()  # jobs still waiting are then asked about at once

    def _changed(self, tables: set[str]) -> None:
        if "batch_jobs" in tables:
            self.refresh(remote=False)

    def refresh(self, remote: bool = False) -> Operation | None:
        """Read every batch job's state; with `remote`, ask the providers about unfinished ones first."""
        session = self.session
        if session is None or session.closed:
            return None
        if remote and self.collect_op is not None and self.collect_op.is_running:
            remote = False  # the collect asks the providers itself; never race it
        if remote and not any(_waiting(entry) for entry in self.entries):
            remote = False  # nothing to ask about (a read-only project never gets a writable connection here)
        if remote:
            self._asked |= {entry["id"] for entry in self.entries}
            operation: Operation = ProjectThreadOp(
                session,
                lambda project, progress: batches.batch_states(project, refresh=True),
                label="Asking the providers about batch jobs",
                supersede="batch-states-remote",
                quiet=True,
            )
            # a provider that cannot be reached is a note on its row, never a dialog
            operation.failure(lambda error: self.view.set_message(f"Batch states not refreshed: {error}"))
        else:
            operation = QueryOp(
                session,
                lambda project, progress: batches.batch_states(project, refresh=False),
                label="Reading the batch jobs",
                supersede="batch-states",
            )
            operation.quiet = True
            operation.failure(lambda error: self.view.set_message(f"Batch jobs not read: {error}"))
        self.last_read = operation.success(self._states_read).run()
        return self.last_read

    def _states_read(self, entries: list[dict]) -> None:
        self.entries = entries
        fresh = {entry["id"] for entry in entries if _waiting(entry) and entry["id"] not in self._asked}
        if fresh:  # a job just submitted (or first seen): where is it now?
            self._asked |= fresh
            QTimer.singleShot(0, lambda: self.refresh(remote=True))
        self._show()
        self.states_read.emit(entries)
        if self.auto_collect:
            ready = [
                entry["id"]
                for entry in entries
                if entry["provider"] != "file"
                and entry["state"] in batches.TERMINAL
                and entry["id"] not in self._auto_tried
            ]
            now = time.monotonic()  # a killed submitter's part is looked for again once the grace has passed
            orphans = [
                entry["id"]
                for entry in entries
                if entry.get("orphaned")
                and now - self._orphans_tried.get(entry["id"], -math.inf) > batches.ORPHAN_GRACE_S
            ]
            if (ready or orphans) and (self.collect_op is None or not self.collect_op.is_running):
                self._auto_tried.update(ready)
                self._orphans_tried.update(dict.fromkeys(orphans, now))
                self.collect(ready + orphans)

    def _show(self) -> None:
        self.view.set_rows([batch_row(entry, self.collecting) for entry in self.entries])

    def collect(self, batch_ids: list[int] | None = None) -> Operation | None:
        """Store what the finished jobs answered (collect_batches on a worker, with progress and cancel)."""
        session = self.session
        if session is None or session.closed:
            return None
        if self.collect_op is not None and self.collect_op.is_running:
            self.view.set_message("A collect is already running; it takes every finished job.")
            return None
        ids = list(batch_ids) if batch_ids else None
        label = "Collecting batch " + ", ".join(map(str, ids)) if ids else "Collecting the finished batches"
        operation = JobOp(
            session,
            job_call(batches.collect_batches, ids),  # reading and storing big result files: in a job process
            kind=batches.JOB_KIND_COLLECT,
            tracked=False,  # collect_batches records a job per batch it collects
            changes=BATCH_CHANGES,
            label=label,
            error_title="Collecting the batch failed",
        )
        self.collecting = set(ids or (entry["id"] for entry in self.entries if entry["state"] != "collected"))
        self._show()
        operation.success(self._collected)
        operation.finished.connect(self._collect_ended)
        self.collect_op = operation.run()
        return self.collect_op

    def _collect_ended(self) -> None:
        self.collecting = set()
        self._show()
        self.refresh(remote=False)

    def _collected(self, summary: batches.CollectSummary) -> None:
        parts = []
        if summary.collected:
            ids = ", ".join(map(str, summary.collected))
            parts.append(
                f"Collected batch {ids}: {summary.answered:,} answered, {summary.failed:,} failed "
                f"(${summary.cost_usd:.4f} at the batch price)."
            )
            if summary.failed:
                parts.append("Resume the run on the Evaluate page to send the failed requests again.")
        for filled in summary.filled:  # other runs that waited on these batches, filled from the response cache
            parts.append(f"Run {filled['run_id']}: {filled['results']:,} result(s) filled from the cache at no cost.")
        for run in summary.still_incomplete:
            parts.append(f"Run {run['run_id']} is still incomplete ({run['why']}); resume it on the Evaluate page.")
        for orphan in summary.orphans:  # a killed submitter's part: found by its tag, or never created
            if orphan["outcome"] != "kept":
                parts.append(f"Batch {orphan['batch_id']}: {orphan['note']}.")
        for batch_id, state in summary.not_ready:
            parts.append(f"Batch {batch_id} not ready: {state}.")
        self.view.set_message(" ".join(parts) or "Nothing to collect.")
        self.collected.emit(summary)

    def cancel(self, batch_ids: list[int]) -> Operation | None:
        session = self.session
        if session is None or session.closed or not batch_ids:
            return None
        ids = list(batch_ids)
        operation = ProjectThreadOp(
            session,
            lambda project, progress: batches.cancel_batches(project, ids),
            changes={"batch_jobs"},
            label="Cancelling batch " + ", ".join(map(str, ids)),
            error_title="Cannot cancel the batch",
        )

        def cancelled(changed: list[dict]) -> None:
            states = "; ".join(f"batch {entry['id']}: {entry['note'] or entry['state']}" for entry in changed)
            self.view.set_message(
                f"Cancel requested ({states}). What the job answered before it stopped is still collected."
            )

        return operation.success(cancelled).run()
