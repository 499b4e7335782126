"""What the jobs panel shows and what its buttons do: this window's running operations, plus the jobs other
processes recorded in the project's jobs table (read off the UI thread by the session's monitor). Cancel on
another process's job goes through the writer as a cancel request. Resume never runs the command stored in the
jobs table (a project folder is data): core.cli.resume rebuilds it from re-validated values of a known job kind,
a dialog shows what will run — the command, each host and which key goes there — and asks, warning before a
key goes to a host this machine has not used; only then is it started as a detached `spokenbench` process."""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QMessageBox

from spokenbench.app.batch_ops import BatchesController
from spokenbench.app.operations import JobOp, Operation, OperationRunner, ProjectSession, QueryOp, WriteOp, show_error
from spokenbench.core.cli.resume import ApprovedHosts, ResumePlan, ResumeRefused, plan_resume, resume_process_argv
from spokenbench.core.evaluation.preparation import claimed_run
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.processes import THIS_HOST
from spokenbench.core.jobs.loop import offers_stop_now
from spokenbench.core.jobs.registry import JobInfo, parse_stored_time, paused_for_room, request_cancel
from spokenbench.widgets.jobs_panel import STOP_NOW_TOOLTIP, STOPPING_NOW_TOOLTIP, JobRow, JobsPanel

RECENT_S = 120.0
RESUME_GRACE_S = 15.0  # a resumed job's new process has this long to show up before Resume is offered again  # how long a job that ended on its own stays listed
INTERRUPTED_KEPT_S = 7 * 86_400  # an interrupted job is offered for resuming this long
SHORT_READ_S = 1.0  # a read (a spectrogram, the next clip, a count) is listed only once it has taken this long


def _age_s(stamp: str | None, now: float) -> float:
    """How long ago `stamp` was; a job row's time that is not a time (any process writes them) reads as long ago."""
    return float("inf") if not stamp else now - parse_stored_time(stamp)


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


def resume_plan(job: JobInfo, project_dir: Path) -> ResumePlan | ResumeRefused:
    """What resuming `job` on the open project would run, or why it cannot (core.cli.resume)."""
    try:
        return plan_resume(job, project_dir)
    except ResumeRefused as refused:
        return refused


def spawn_resume(plan: ResumePlan, project_dir: Path) -> subprocess.Popen:
    """Start the rebuilt command, detached: it outlives this window and reports through the jobs table. It runs
    in the project's folder — never in a folder the jobs table names."""
    return subprocess.Popen(
        resume_process_argv(plan),
        cwd=project_dir,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def confirm_resume(
    parent, question: str, details: str, endpoints, answered: Callable[[bool], None], *, always: bool = True
) -> QMessageBox | None:
    """Ask before resuming work whose settings came from the project folder: what will run (`details`), and a
    warning for each key that would go to a host this machine has not sent one to — then Cancel is the
    default button and the other says "Send key and resume". Approving remembers those hosts (per machine).
    `answered(True)` runs after a yes. With `always=False` and no new host, it answers yes without asking (None)."""
    approved = ApprovedHosts()
    new_hosts = [endpoint for endpoint in endpoints if endpoint.key and not approved.knows(endpoint.host)]
    if not new_hosts and not always:
        answered(True)
        return None
    box = QMessageBox(
        QMessageBox.Icon.Warning if new_hosts else QMessageBox.Icon.Question,
        "Resume",
        question,
        QMessageBox.StandardButton.NoButton,
        parent,
    )
    box.setTextFormat(Qt.TextFormat.PlainText)  # labels and values come from the project: never markup
    warnings = [
        f"It sends your {endpoint.key} to {endpoint.host}, a host this machine has not sent a key to. Resume only "
        "if you trust it: what it runs comes from the project folder."
        for endpoint in new_hosts
    ]
    box.setInformativeText("\n\n".join([details, *warnings]))
    accept = box.addButton("Send key and resume" if new_hosts else "Resume", QMessageBox.ButtonRole.AcceptRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel if new_hosts else accept)
    box.setEscapeButton(cancel)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

    def finished(_result: int) -> None:
        accepted = box.clickedButton() is accept
        if accepted and new_hosts:
            approved.approve([endpoint.host for endpoint in new_hosts])
        answered(accepted)

    box.finished.connect(finished)
    box.open()
    return box


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
    action, enabled = "cancel", operation.cancellable
    if operation.cancellable:
        tooltip = "Stop at the next safe point; what is already saved stays saved."
    elif isinstance(operation, WriteOp):
        tooltip = "What you did is being saved: it always completes."
    else:
        tooltip = "Cancel requested; it stops at its next safe point."
    if isinstance(operation, JobOp) and offers_stop_now(operation.message):  # cancelled here or from elsewhere
        state, action, enabled = "cancelling", "stop_now", not operation.stopping_now
        tooltip = STOPPING_NOW_TOOLTIP if operation.stopping_now else STOP_NOW_TOOLTIP
    return JobRow(
        key=f"op:{id(operation)}",
        title=operation.label,
        state=state,
        detail=operation.message,
        origin="this window",
        done=operation.done,
        total=operation.total,
        eta_s=operation.eta_s,
        action=action,
        action_enabled=enabled,
        run_id=claimed_run(getattr(operation, "claim", None)),
        action_tooltip=tooltip,
    )


def job_row(
    job: JobInfo,
    resuming: bool = False,
    from_this_window: bool = False,
    resume: ResumePlan | ResumeRefused | None = None,
) -> JobRow:
    """`from_this_window`: recorded by one of this window's operations (in a job process, with that pid).
    `resume`: what Resume would run, or why it cannot (asked only for jobs that are not live)."""
    if from_this_window or (job.pid == os.getpid() and job.host == THIS_HOST):
        where = "this window"
    else:
        where = f"pid {job.pid}" + ("" if job.host == THIS_HOST else f" on {job.host}")
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
        if offers_stop_now(job.message):  # cancelled from anywhere: a panel, `jobs --cancel`, Ctrl-C in its terminal
            return JobRow(
                **row,
                state="cancelling",
                action="stop_now",
                action_enabled=not job.stop_now_requested,
                action_tooltip=STOPPING_NOW_TOOLTIP if job.stop_now_requested else STOP_NOW_TOOLTIP,
            )
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
    if resuming:
        return JobRow(**row, state="resuming", action="resume", action_enabled=False, action_tooltip="Starting…")
    if paused_for_room(job):
        # alive, waiting for room on its disk to store what it paid for: it goes on by itself, and a resume
        # would only compete with it (and a cancel cannot be written on the full disk)
        return JobRow(**row, state="paused")
    resumable = isinstance(resume, ResumePlan)
    if job.status == "interrupted" or resumable:
        if resumable:
            tooltip = (
                "Run again (asks first): spokenbench " + " ".join(resume.argv) + " (work already saved is skipped)"
            )
        else:
            tooltip = f"Cannot be resumed from here: {resume}" if resume else "Cannot be resumed from here."
        return JobRow(**row, state=job.status, action="resume", action_enabled=resumable, action_tooltip=tooltip)
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
        self.confirmation: QMessageBox | None = None  # the open "Resume?" dialog
        self._plans: dict[tuple, ResumePlan | ResumeRefused] = {}
        self._refresh_soon = QTimer(self, singleShot=True, interval=100)  # coalesces bursts of updates
        self._refresh_soon.timeout.connect(self.refresh)
        self._tick = QTimer(self, interval=1000)  # time left keeps moving between reports
        self._tick.timeout.connect(self.refresh)
        self._tick.start()
        for signal in (runner.started, runner.updated, runner.ended):
            signal.connect(self._schedule)
        panel.cancelRequested.connect(self.cancel)
        panel.stopNowRequested.connect(self.stop_now)
        panel.resumeRequested.connect(self.resume)
        self.batches = BatchesController(runner, panel.batches, self)  # provider batches and batch files

    def set_session(self, session: ProjectSession | None) -> None:
        if self.session is not None:
            self.session.jobs_listed.disconnect(self._schedule)
        self.session = session
        self._resuming.clear()
        self._plans.clear()
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
                        resume=None if job.is_live else self._plan(job),
                    )
                )
        before = self.panel.live_count()
        self.panel.set_rows(rows)
        if self.panel.live_count() != before:
            self.live_count_changed.emit(self.panel.live_count())

    def _plan(self, job: JobInfo) -> ResumePlan | ResumeRefused:
        """Planned once per job and stored command (the panel refreshes every second)."""
        key = (job.id, job.kind, job.status, json.dumps(job.argv))
        if key not in self._plans:
            self._plans[key] = resume_plan(job, self.session.path)
        return self._plans[key]

    def _operation(self, key: str) -> Operation | None:
        return next((op for op in self.runner.running if f"op:{id(op)}" == key), None)

    def _job(self, key: str) -> JobInfo | None:
        if self.session is None:
            return None
        return next((job for job in self.session.jobs if f"job:{job.id}" == key), None)

    def cancel(self, key: str, now: bool = False) -> None:
        operation = self._operation(key)
        if operation is not None:
            if now:
                operation.stop_now()
            else:
                operation.cancel()
        elif (job := self._job(key)) is not None and self.session is not None:
            WriteOp(
                self.session,
                lambda project, job_id=job.id: request_cancel(project.conn, job_id, now=now),
                changes={"jobs"},
                label=f"{'Stopping' if now else 'Cancelling'} “{job.label}”",
                error_title="Cannot cancel the job",
            ).run()
        self.refresh()

    def stop_now(self, key: str) -> None:
        """Stop Now on a job that waits for answers to requests it has already sent: abandon them."""
        self.cancel(key, now=True)

    def resume(self, key: str) -> None:
        """Show what Resume would run and ask; a key for a host not used on this machine is warned about, and
        Cancel is then the default."""
        job = self._job(key)
        if job is None or self.session is None:
            return
        plan = resume_plan(job, self.session.path)
        if isinstance(plan, ResumeRefused):
            box = show_error(self.runner.error_parent, plan, "Cannot resume the job")
            box.setTextFormat(Qt.TextFormat.PlainText)  # it quotes the stored command
            return

        def answered(accepted: bool) -> None:
            self.confirmation = None
            if accepted:
                self._start_resume(job, plan)

        self.confirmation = confirm_resume(
            self.runner.error_parent, f"Resume “{job.label}”? This runs:", plan.describe(), plan.endpoints, answered
        )

    def _start_resume(self, job: JobInfo, plan: ResumePlan) -> None:
        if self.session is None:
            return
        try:
            process = spawn_resume(plan, self.session.path)
        except OSError as error:
            show_error(self.runner.error_parent, SpokenBenchError(f"could not start the job again: {error}"))
            return
        self._resuming[job.id] = time.monotonic()
        self.resume_started.emit(process)
        self.refresh()
