"""What the jobs panel shows and what its buttons do: this window's running operations, plus the jobs other
processes recorded in the project's jobs table (read off the UI thread by the session's monitor). Cancel on
another process's job goes through the writer as a cancel request; Resume starts the job's command again as a
detached `spokenbench` process."""

from __future__ import annotations

import datetime as _dt
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal

from spokenbench.app.batch_ops import BatchesController
from spokenbench.app.operations import Operation, OperationRunner, ProjectSession, QueryOp, WriteOp, show_error
from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.evaluation.preparation import claimed_run
from spokenbench.core.jobs import JobInfo, request_cancel
from spokenbench.widgets.jobs_panel import JobRow, JobsPanel

RECENT_S = 120.0
RESUME_GRACE_S = 15.0  # a resumed job's new process has this long to show up before Resume is offered again  # how long a job that ended on its own stays listed
INTERRUPTED_KEPT_S = 7 * 86_400  # an interrupted job is offered for resuming this long
CLI_MODULE = "spokenbench.core.cli.main"
SHORT_READ_S = 1.0  # a read (a spectrogram, the next clip, a count) is listed only once it has taken this long
HOST = socket.gethostname()


def _age_s(stamp: str | None, now: float) -> float:
    return float("inf") if not stamp else now - _dt.datetime.fromisoformat(stamp).timestamp()


def _work_key(job: JobInfo) -> tuple:
    """Jobs doing the same work: the same claim, or the same command (an evaluation resumes with --resume)."""
    if job.claim:
        return (job.kind, "claim", job.claim)
    if job.argv:
        return (job.kind, "argv", json.dumps([arg for arg in job.argv if arg != "--resume"]))
    return (job.kind, "id", job.id)


def jobs_to_show(jobs: list[JobInfo], hidden_ids: set[int], now: float) -> list[JobInfo]:
    """Live jobs; interrupted ones nobody has resumed yet; jobs that ended in the last two minutes.
    `hidden_ids` are this window's own jobs, already listed as operations."""
    newest_by_work: dict[tuple, int] = {}
    for job in jobs:
        key = _work_key(job)
        newest_by_work[key] = max(newest_by_work.get(key, job.id), job.id)
    shown = []
    for job in jobs:
        if job.id in hidden_ids:
            continue
        superseded = newest_by_work[_work_key(job)] != job.id
        if job.is_live:
            shown.append(job)
        elif job.status == "interrupted":
            if not superseded and _age_s(job.heartbeat_at, now) < INTERRUPTED_KEPT_S:
                shown.append(job)
        elif _age_s(job.finished_at, now) < RECENT_S and not superseded:
            shown.append(job)
    return shown


def resume_command(job: JobInfo) -> tuple[list[str], Path | None] | None:
    """The command that resumes `job` and the folder it was started in (its relative paths mean something
    there), or None when it cannot be resumed."""
    argv = job.resume_argv
    if argv is None:
        return None
    cwd = Path(job.cwd) if job.cwd and Path(job.cwd).is_dir() else None
    return [sys.executable, "-m", CLI_MODULE, *argv], cwd


def spawn_resume(job: JobInfo) -> subprocess.Popen:
    """Start the job's command again, detached: it outlives this window and reports through the jobs table."""
    command = resume_command(job)
    if command is None:
        raise ValueError(f"job {job.id} cannot be resumed")
    argv, cwd = command
    return subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def listed(operation: Operation, now: float) -> bool:
    """Whether the panel lists a running operation: never a quiet one, and a read only once it is not a short
    internal step (a card and "Jobs · 1 running" flashing for each spectrogram or clip would only distract)."""
    if getattr(operation, "quiet", False):
        return False
    if isinstance(operation, QueryOp):
        return operation.started_at is not None and now - operation.started_at >= SHORT_READ_S
    return True


def operation_row(operation: Operation) -> JobRow:
    state = "cancelling" if operation.status == "cancelling" else "running"
    return JobRow(
        key=f"op:{id(operation)}",
        title=operation.label,
        state=state,
        detail=operation.message,
        origin="this window",
        done=operation.done,
        total=operation.total,
        eta_s=operation.eta_s,
        action="cancel",
        action_enabled=operation.cancellable,
        run_id=claimed_run(getattr(operation, "claim", None)),
        action_tooltip="Stop at the next safe point; what is already saved stays saved."
        if operation.cancellable
        else "Cancel requested; it stops at its next safe point.",
    )


def job_row(job: JobInfo, resuming: bool = False, from_this_window: bool = False) -> JobRow:
    """`from_this_window`: recorded by one of this window's operations (in a job process, with that pid)."""
    if from_this_window or (job.pid == os.getpid() and job.host == HOST):
        where = "this window"
    else:
        where = f"pid {job.pid}" + ("" if job.host == HOST else f" on {job.host}")
    origin = f"{job.kind} · {where}"
    detail = job.message or ""
    if not job.is_live and job.stop_reason:
        detail = job.stop_reason
    row = dict(
        key=f"job:{job.id}",
        title=job.label,
        detail=detail,
        origin=origin,
        done=job.done,
        total=job.total,
        run_id=claimed_run(job.claim),
    )
    if job.is_live:
        if job.cancel_requested:
            return JobRow(
                **row,
                state="cancelling",
                action="cancel",
                action_enabled=False,
                action_tooltip="Cancel requested; the job stops at its next safe point.",
            )
        return JobRow(
            **row,
            state="running",
            eta_s=job.eta_s,
            action="cancel",
            action_tooltip=f"Ask {where} to stop at its next safe point; what it saved stays saved.",
        )
    command = resume_command(job)
    if resuming:
        return JobRow(**row, state="resuming", action="resume", action_enabled=False, action_tooltip="Starting…")
    if job.status == "interrupted" or command is not None:
        if command is None:
            tooltip = (
                "This job was not started with a command this app can rerun (only `spokenbench` runs can be resumed)."
            )
        else:
            tooltip = "Run again: spokenbench " + " ".join(command[0][3:]) + " (work already saved is skipped)"
        return JobRow(
            **row, state=job.status, action="resume", action_enabled=command is not None, action_tooltip=tooltip
        )
    return JobRow(**row, state=job.status)


class JobsController(QObject):
    """Keeps a `JobsPanel` up to date and carries out its Cancel and Resume requests."""

    live_count_changed = Signal(int)
    resume_started = Signal(object)  # the Popen

    def __init__(self, runner: OperationRunner, panel: JobsPanel, parent: QObject | None = None):
        super().__init__(parent)
        self.runner, self.panel = runner, panel
        self.session: ProjectSession | None = None
        self._resuming: dict[int, float] = {}  # job id → when Resume was clicked
        self._refresh_soon = QTimer(self, singleShot=True, interval=100)  # coalesces bursts of updates
        self._refresh_soon.timeout.connect(self.refresh)
        self._tick = QTimer(self, interval=1000)  # time left keeps moving between reports
        self._tick.timeout.connect(self.refresh)
        self._tick.start()
        for signal in (runner.started, runner.updated, runner.ended):
            signal.connect(self._schedule)
        panel.cancelRequested.connect(self.cancel)
        panel.resumeRequested.connect(self.resume)
        self.batches = BatchesController(runner, panel.batches, self)  # provider batches and batch files

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None:
            self.session.jobs_listed.disconnect(self._schedule)
        self.session = session
        self._resuming.clear()
        if session is not None:
            session.jobs_listed.connect(self._schedule)
        self.batches.set_session(session)
        self.refresh()

    def _schedule(self, *args) -> None:
        if not self._refresh_soon.isActive():
            self._refresh_soon.start()

    def refresh(self) -> None:
        operations = [op for op in self.runner.running if op.is_running and listed(op, time.monotonic())]
        rows = [operation_row(op) for op in operations]
        if self.session is not None and not self.session.closed:
            own = set().union(*(getattr(op, "recorded_job_ids", ()) for op in operations))
            now = _dt.datetime.now(_dt.UTC).timestamp()
            for job in jobs_to_show(self.session.jobs, own, now):
                started = self._resuming.get(job.id)
                if started is not None and time.monotonic() - started > RESUME_GRACE_S:
                    del self._resuming[job.id]  # the new process never took over: offer Resume again
                rows.append(
                    job_row(
                        job,
                        resuming=job.id in self._resuming,
                        from_this_window=job.id in self.session.recorded_job_ids,
                    )
                )
        before = self.panel.live_count()
        self.panel.set_rows(rows)
        if self.panel.live_count() != before:
            self.live_count_changed.emit(self.panel.live_count())

    def _operation(self, key: str) -> Operation | None:
        return next((op for op in self.runner.running if f"op:{id(op)}" == key), None)

    def _job(self, key: str) -> JobInfo | None:
        if self.session is None:
            return None
        return next((job for job in self.session.jobs if f"job:{job.id}" == key), None)

    def cancel(self, key: str) -> None:
        operation = self._operation(key)
        if operation is not None:
            operation.cancel()
        elif (job := self._job(key)) is not None and self.session is not None:
            WriteOp(
                self.session,
                lambda project, job_id=job.id: request_cancel(project.conn, job_id),
                changes={"jobs"},
                label=f"Cancelling “{job.label}”",
                error_title="Cannot cancel the job",
            ).run()
        self.refresh()

    def resume(self, key: str) -> None:
        job = self._job(key)
        if job is None or resume_command(job) is None:
            return
        try:
            process = spawn_resume(job)
        except OSError as error:
            show_error(self.runner.error_parent, SpokenBenchError(f"could not start the job again: {error}"))
            return
        self._resuming[job.id] = time.monotonic()
        self.resume_started.emit(process)
        self.refresh()
