"""The one way screens run work off the UI thread (after Anki's QueryOp/CollectionOp): build an operation,
attach its callbacks, then `run()` it — nothing can finish before its callbacks are attached.

    QueryOp(session, lambda project, progress: item_rows(project.conn), label="Loading items",
            parent=self, supersede="items").success(self.show_items).run()
    WriteOp(session, lambda project: rate_clip(project, clip_id, me, "correct"), changes={"ratings"},
            label="Saving rating", parent=self).success(self.next_clip).run()

- `QueryOp` reads on the thread pool with a connection of its own for that call.
- `WriteOp` is a short write, run by the project's one writer thread (`store_writer.StoreWriter`).
- `JobOp` is long work that writes (import, evaluation, screening): given a `JobCall`, in a job process of its
  own (`core.jobs.host`), else on a thread of its own, with its own connection, committing in batches or in one
  short final transaction, recorded in the project's jobs table like a CLI job.
- `BackgroundOp` is work outside a project (opening one, building the demo).

Every outcome arrives on the UI thread through queued Qt signals. A cancelled operation's result, and every
result of an abandoned one (superseded by a newer operation with the same `supersede` key, or whose parent
widget was destroyed), is dropped. A failure becomes a dialog — a `SpokenBenchError` as a warning with its
message, anything else as "Unexpected error" with the traceback in the details — unless the screen handles it.
Writes declare the tables they change; after they commit, `ProjectChanges.changed` tells every screen, and the
session's `ProjectMonitor` sends the same notification for changes made by other processes."""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from spokenbench.app.store_writer import StoreWriter, connect_project
from spokenbench.core.foundation.environment_errors import explain_environment_error, may_have_lost_its_files
from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.native_memory import return_freed_memory
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs import host as job_host
from spokenbench.core.jobs import registry as core_jobs
from spokenbench.core.jobs.host import JobCall
from spokenbench.core.store import Project, database
from spokenbench.core.store.changes import changed_tables, table_versions
from spokenbench.core.store.project import DATABASE_NAME

log = logging.getLogger("spokenbench.app.operations")

POLL_INTERVAL_S = 0.5  # how often the monitor reads change counters and the jobs table


# --------------------------------------------------------------------------------------------------
# Dialogs


def explained_error(error: BaseException, project: Path | None = None) -> str | None:
    """What to tell the user about a failure that is theirs or the machine's (a full disk, a damaged database, a
    write lock another process keeps: named with `project`'s holder); None for a bug."""
    return str(error) if isinstance(error, SpokenBenchError) else explain_environment_error(error, project)


def show_error(parent: QWidget | None, error: BaseException, title: str = "SpokenBench Studio") -> QMessageBox:
    """A readable, non-blocking dialog for a failure: the user's problem (or the machine's: a full disk, a damaged
    database, text another program wrote) as a warning, a bug with its traceback."""
    explained = explained_error(error)
    if explained is not None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, explained, QMessageBox.StandardButton.Ok, parent)
    else:
        box = QMessageBox(
            QMessageBox.Icon.Critical,
            "Unexpected error",
            f"{title}: {type(error).__name__}: {error}\n\nThis is a bug in SpokenBench Studio; the details "
            "below help to report it. Everything saved before it is kept.",
            QMessageBox.StandardButton.Ok,
            parent,
        )
        box.setDetailedText("".join(traceback.format_exception(error)))
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()
    return box


def replace_dialog(previous: QWidget | None) -> None:
    """Delete the closed dialog a page kept from its last opening, before it makes the next: a dialog made at
    each opening (a note per clip, Settings) otherwise stays with its window until the page goes, one more each
    time for an annotator's hours. One still open is left alone; one whose work still runs — operations it
    started, or those in its `operations` list, whose callbacks reach it (a key being tested, rating keys being
    saved, a speaker being added) — goes once the last of them has delivered its outcome."""
    if previous is None or not shiboken6.isValid(previous) or previous.isVisible():
        return
    running = [operation for runner in list(_RUNNERS) for operation in runner.running]
    listed = getattr(previous, "operations", ())
    pending = [operation for operation in running if operation in listed or _started_from(operation, previous)]
    if pending:
        for operation in pending:  # `finished` comes after its callbacks, once it left `running`
            operation.finished.connect(lambda: replace_dialog(previous))
        return
    previous.deleteLater()


def _started_from(operation: Operation, dialog: QWidget) -> bool:
    parent = operation._live_parent()
    return parent is dialog or (isinstance(parent, QWidget) and dialog.isAncestorOf(parent))


# --------------------------------------------------------------------------------------------------
# Change notifications


class ProjectChanges(QObject):
    """The hub screens subscribe to: `changed` carries the names of the tables that changed (on the UI thread),
    whether this app or another process changed them. `notify` may be called from any thread."""

    changed = Signal(object)  # set[str]
    _incoming = Signal(object)

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._incoming.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def notify(self, tables: Iterable[str]) -> None:
        tables = frozenset(tables)
        if tables:
            self._incoming.emit(tables)

    def _deliver(self, tables: frozenset[str]) -> None:
        self.changed.emit(set(tables))


class ProjectMonitor(threading.Thread):
    """Polls, with a connection of its own, the per-table change counters (any process bumps them) and the jobs
    table; reports changed tables and the job list through callbacks, called on this thread."""

    def __init__(
        self,
        project_path: Path,
        on_changes: Callable[[set[str]], None],
        on_jobs: Callable[[list[core_jobs.JobInfo]], None],
        interval_s: float = POLL_INTERVAL_S,
    ):
        super().__init__(name="spokenbench-project-monitor", daemon=True)
        self.db_path = Path(project_path) / DATABASE_NAME
        self.on_changes, self.on_jobs, self.interval_s = on_changes, on_jobs, interval_s
        self.stopping = threading.Event()

    def run(self) -> None:
        conn = None
        versions: dict[str, int] | None = None
        failing = False
        while not self.stopping.is_set():
            try:
                conn = conn or database.connect(self.db_path)
                current = table_versions(conn)
                if versions is not None and (changed := changed_tables(versions, current)):
                    self.on_changes(changed)
                versions = current
                self.on_jobs(core_jobs.list_jobs(conn, limit=100))
                failing = False
            except Exception as error:  # a busy, moved or damaged database: say so once, keep trying
                if not failing:
                    log.warning("watching %s failed: %s", self.db_path, error)
                failing = True
                if conn is not None and may_have_lost_its_files(error):  # a USB stick pulled out and put back
                    with contextlib.suppress(Exception):
                        conn.close()
                    conn = None
            self.stopping.wait(self.interval_s)
        if conn is not None:
            conn.close()

    def stop(self, timeout_s: float = 5.0) -> None:
        self.stopping.set()
        self.join(timeout_s)


# --------------------------------------------------------------------------------------------------
# Where operations run


_RUNNERS: weakref.WeakSet[OperationRunner] = weakref.WeakSet()  # every runner, for replace_dialog
TRIM_DELAY_MS = 50  # after the last operation ended: its outcome slots and their follow-up events have run


class OperationRunner(QObject):
    """The app's running operations (the jobs panel lists them) and the pool reads run on."""

    started = Signal(object)  # Operation
    updated = Signal(object)  # progress or state changed
    ended = Signal(object)

    def __init__(self, parent: QObject | None = None, max_read_threads: int = 4):
        super().__init__(parent)
        self.pool = concurrent.futures.ThreadPoolExecutor(max_read_threads, thread_name_prefix="spokenbench-read")
        self._reads: set[concurrent.futures.Future] = set()
        self.running: list[Operation] = []
        _RUNNERS.add(self)
        self._ending: list[Operation] = []
        self._forget_soon = QTimer(self, singleShot=True, interval=0)
        self._forget_soon.timeout.connect(self._forget_ended)
        # once the last operation has ended and its outcome slots have dropped what they did not keep, the C
        # heap's freed pages go back to the system (issue 28: the app's peak memory)
        self._trim_when_idle = QTimer(self, singleShot=True, interval=TRIM_DELAY_MS)
        self._trim_when_idle.timeout.connect(self._return_freed_memory)
        self.error_parent: QWidget | None = None  # dialogs of operations whose own parent is gone
        self.closed = False

    def _register(self, operation: Operation) -> None:
        if operation.supersede is not None:
            for older in self.running:
                if older.supersede == operation.supersede and not older.abandoned:
                    older.abandon("superseded")
        self.running.append(operation)
        self.started.emit(operation)

    def _unregister(self, operation: Operation) -> None:
        if operation in self.running:
            self.running.remove(operation)
        # keep it alive until its outcome slot has returned: a QObject must not be deleted inside its own slot
        self._ending.append(operation)
        self._forget_soon.start()
        self.ended.emit(operation)
        if not self.running:
            self._trim_when_idle.start()

    def _return_freed_memory(self) -> None:
        if not self.running:
            return_freed_memory()

    def _forget_ended(self) -> None:
        self._ending.clear()

    def cancel_all(self) -> None:
        for operation in list(self.running):
            operation.abandon("closing")

    def shutdown(self, timeout_s: float = 10.0) -> bool:
        """Abandon everything and wait (up to the timeout) for the threads to return, but those held by the sound
        server (`sound_device`) and those that only relay a job process: cancelled, it stops on its own, also after
        the app is gone, and may first wait for the answers to requests it has already sent (its quit waited 5 s
        for them, the window frozen). True when all waited for did."""
        self.cancel_all()
        deadline = time.monotonic() + timeout_s
        self.closed = True
        _, reading = concurrent.futures.wait(list(self._reads), timeout_s)  # a copy: workers discard from it
        self.pool.shutdown(wait=False, cancel_futures=True)
        waited = [
            operation for operation in self.running if not operation.sound_device and not operation.in_job_process
        ]
        for operation in waited:
            operation._join(max(0.0, deadline - time.monotonic()))
        return not reading and all(not op._thread_alive() for op in waited)

    def submit_read(self, work: Callable[[], None]) -> bool:
        """Run `work` on the read pool; False once the runner is shut down (the app is closing)."""
        if self.closed:
            return False
        future = self.pool.submit(work)
        self._reads.add(future)
        future.add_done_callback(self._reads.discard)
        return True


class ProjectSession(QObject):
    """An open project: its writer, its change hub and monitor. One per open project; `close()` stops them."""

    jobs_listed = Signal(object)  # list[JobInfo], every poll, on the UI thread
    _jobs_incoming = Signal(object)

    def __init__(self, path: Path, runner: OperationRunner, poll_interval_s: float = POLL_INTERVAL_S):
        super().__init__(runner)
        self.path = Path(path)
        self.runner = runner
        self.closed = False
        self.changes = ProjectChanges(self)
        self.writer = StoreWriter(self.path)
        self.jobs: list[core_jobs.JobInfo] = []
        # every job this window's operations recorded in this project, in job processes too (their rows carry the
        # job process's pid): the jobs panel says "this window"
        self.recorded_job_ids: set[int] = set()
        self._jobs_incoming.connect(self._receive_jobs, Qt.ConnectionType.QueuedConnection)
        self.monitor = ProjectMonitor(self.path, self.changes.notify, self._jobs_incoming.emit, poll_interval_s)
        self.monitor.start()

    def _receive_jobs(self, jobs: list[core_jobs.JobInfo]) -> None:
        if not self.closed:
            self.jobs = jobs
            self.jobs_listed.emit(jobs)

    def unfinished_writes(self) -> list[WriteOp]:
        """The user's writes to this project not yet answered (a rating saved ahead waiting for the lock). One that
        only waits for those before it (`waits_only`) is not one: a quit's dialog counted it as a change made."""
        running = list(self.runner.running)
        return [op for op in running if isinstance(op, WriteOp) and op.session is self and not op.waits_only]

    def close(self, writer_wait_s: float | None = None) -> None:
        """Stop watching, finish queued writes (waiting at most `writer_wait_s`, the writer's own limit when None).
        Running operations of this project are abandoned."""
        if self.closed:
            return
        self.closed = True
        for operation in list(self.runner.running):
            if getattr(operation, "session", None) is self:
                operation.abandon("project closed")
        self.monitor.stop()
        if writer_wait_s is None:
            self.writer.close()
        else:
            self.writer.close(timeout_s=writer_wait_s)


# --------------------------------------------------------------------------------------------------
# Operations


class Operation(QObject):
    """What every kind of operation shares: callbacks, outcome delivery on the UI thread, progress, cancel."""

    progressed = Signal(int, object, str)  # done, total or None, message — on the UI thread
    succeeded = Signal(object)
    failed = Signal(object)
    cancelled = Signal()
    finished = Signal()  # after any outcome, dropped ones included
    _outcome_incoming = Signal(str, object)
    _progress_incoming = Signal()

    def __init__(
        self,
        runner: OperationRunner,
        *,
        label: str,
        parent: QWidget | None = None,
        supersede: str | None = None,
        error_title: str | None = None,
        sound_device: bool = False,
    ):
        super().__init__()  # no Qt parent: it outlives a destroyed widget until its thread returns
        self.runner = runner
        self.label = label
        self.parent_widget = parent
        self.supersede = supersede
        # a call to the sound server (a device scan, a recording's start or stop): one that does not answer holds
        # it for good, and at shutdown there is nothing of it to finish (its outcome lands in no event loop), so it
        # is not waited for: Ctrl+Q took 6-7 s, the window frozen 5 s, with one held
        self.sound_device = sound_device
        self.error_title = error_title or f"{label} failed"
        self.status = "new"  # running, cancelling, succeeded, failed, cancelled
        self.abandoned: str | None = None  # why its outcome will be dropped
        self.result: Any = None
        self.error: BaseException | None = None
        self.done, self.total, self.message = 0, None, ""
        self.started_at: float | None = None
        self.job_id: int | None = None  # its row in the jobs table, for operations recorded there
        self._cancel_event = threading.Event()
        self._stop_now_event = threading.Event()  # a second step of cancel: abandon requests already sent too
        self.in_job_process = False  # its work runs in a job process (JobOp given a JobCall): nothing to wait for
        self._thread: threading.Thread | None = None  # only operations that need a thread of their own
        self._on_success: list[Callable[[Any], None]] = []
        self._on_failure: list[Callable[[BaseException], None]] = []
        self._on_progress: list[Callable[[int, int | None, str], None]] = []
        self._failure_dialog = True
        self._latest_progress: tuple[int, int | None, str] | None = None
        self._progress_pending = threading.Event()
        self._outcome_incoming.connect(self._receive_outcome, Qt.ConnectionType.QueuedConnection)
        self._progress_incoming.connect(self._receive_progress, Qt.ConnectionType.QueuedConnection)

    # -- building -------------------------------------------------------------------------------

    def success(self, callback: Callable[[Any], None]) -> Operation:
        self._on_success.append(callback)
        return self

    def failure(self, callback: Callable[[BaseException], None], *, dialog: bool = False) -> Operation:
        """Handle failures yourself; the dialog is shown as well only with dialog=True."""
        self._on_failure.append(callback)
        self._failure_dialog = dialog
        return self

    def on_progress(self, callback: Callable[[int, int | None, str], None]) -> Operation:
        self._on_progress.append(callback)
        return self

    def run(self) -> Operation:
        if self.status != "new":
            raise RuntimeError(f"operation '{self.label}' was already started")
        self.status = "running"
        self.started_at = time.monotonic()
        if self.parent_widget is not None:
            self.parent_widget.destroyed.connect(self._parent_destroyed)
        self.runner._register(self)
        self._start()
        return self

    # -- controlling ----------------------------------------------------------------------------

    def cancel(self) -> None:
        """Ask the work to stop at its next safe point; its result is dropped either way. Answers to requests
        it has already sent to a paid service are waited for and kept (`stop_now` abandons them)."""
        self._cancel_event.set()
        if self.status == "running":
            self.status = "cancelling"
            self.runner.updated.emit(self)

    def stop_now(self) -> None:
        """Cancel without waiting for the answers to requests already sent: they are lost, and a resume sends
        (and pays for) them again."""
        self._stop_now_event.set()
        self.cancel()
        self.runner.updated.emit(self)

    @property
    def stopping_now(self) -> bool:
        return self._stop_now_event.is_set()

    def abandon(self, reason: str) -> None:
        """Nobody wants the outcome any more (superseded, parent closed): cancel and drop it."""
        if self.abandoned is None:
            self.abandoned = reason
        self.cancel()

    @property
    def is_running(self) -> bool:
        return self.status in ("running", "cancelling")

    @property
    def cancellable(self) -> bool:
        return self.status == "running"

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None when it cannot be told."""
        if not self.total or self.done <= 0 or self.done >= self.total or self.started_at is None:
            return None
        elapsed = time.monotonic() - self.started_at
        return (self.total - self.done) * elapsed / self.done

    # -- for subclasses: the worker side --------------------------------------------------------

    def _start(self) -> None:
        raise NotImplementedError

    def _make_progress(self) -> Progress:
        return Progress(self._report_from_worker, self._cancel_event, stop_now_event=self._stop_now_event)

    def _report_from_worker(self, done: int, total: int | None, message: str) -> None:
        """Keeps the latest report; at most one progress event waits in the UI queue at a time."""
        self._latest_progress = (done, total, message)
        if not self._progress_pending.is_set():
            self._progress_pending.set()
            self._progress_incoming.emit()

    def _deliver(self, outcome: str, payload: Any) -> None:
        """Called once by the worker: outcome is 'ok', 'error' or 'cancelled'."""
        self._outcome_incoming.emit(outcome, payload)

    def _guarded(self, work: Callable[[], Any]) -> None:
        """Run `work` on a worker thread and deliver whatever happens."""
        try:
            result = work()
        except core_jobs.TakenOver as error:  # not the user's cancel: say why it stopped
            self._deliver("error", SpokenBenchError(str(error)))
        except Cancelled:
            self._deliver("cancelled", None)
        except BaseException as error:  # noqa: BLE001 - reported on the UI thread, never lost
            self._deliver("error", error)
        else:
            self._deliver("ok", result)

    def _run_on_own_thread(self, work: Callable[[], Any], name: str) -> None:
        """For operations that need a thread of their own (long jobs, work outside a project)."""
        self._thread = threading.Thread(target=self._guarded, args=(work,), name=name, daemon=True)
        self._thread.start()

    def _run_with_own_connection(self, fn: Callable[[Project, Progress], Any], changes: frozenset[str], name: str):
        """`fn(project, progress)` on a thread of its own with a writable connection of its own to the operation's
        `session`, not wrapped in a tracked job (for core functions that record their own: run_evaluation,
        submit_batches, …); `changes` are announced when it ends, however it ends."""
        progress = self._make_progress()

        def work() -> Any:
            progress.check_cancelled()
            try:
                project = connect_project(self.session.path)
                try:
                    return fn(project, progress)
                finally:
                    project.close()
            finally:
                self.session.changes.notify(changes)

        self._run_on_own_thread(work, name)

    def _join(self, timeout_s: float) -> None:
        """Wait for the operation's own thread, if it has one."""
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _thread_alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the UI side ----------------------------------------------------------------------------

    def _parent_destroyed(self, *args) -> None:
        self.parent_widget = None
        self.abandon("its window was closed")

    def _live_parent(self) -> QWidget | None:
        parent = self.parent_widget
        return parent if parent is not None and shiboken6.isValid(parent) else None

    def _dialog_parent(self) -> QWidget | None:
        """The window a dialog about this operation belongs to: its parent when that is a widget, else the
        runner's (an operation of a controller, a QObject, once passed the controller and the dialog failed)."""
        parent = self._live_parent()
        return parent if isinstance(parent, QWidget) else self.runner.error_parent

    def _receive_progress(self) -> None:
        self._progress_pending.clear()
        if self._latest_progress is None or not self.is_running or not shiboken6.isValid(self.runner):
            return  # (the runner gone: its window was closed and deleted while this still ran, as in _receive_outcome)
        self.done, self.total, self.message = self._latest_progress
        self.runner.updated.emit(self)
        if self.abandoned is None:
            self.progressed.emit(self.done, self.total, self.message)
            for callback in self._on_progress:
                self._call(callback, self.done, self.total, self.message)

    def _receive_outcome(self, outcome: str, payload: Any) -> None:
        if not shiboken6.isValid(self.runner):  # its window was closed and deleted: abandoned, nobody to tell
            if outcome == "error":
                log.warning("'%s' failed after its window was gone: %s", self.label, payload)
            return
        if outcome == "ok" and self._cancel_event.is_set():
            outcome = "cancelled"  # a cancelled operation's result is dropped even when the work finished
        self.status = {"ok": "succeeded", "error": "failed", "cancelled": "cancelled"}[outcome]
        self.runner._unregister(self)
        try:
            if outcome == "error":
                self.error = payload
                self._handle_failure(payload)
            elif self.abandoned is not None:
                log.debug("dropped the outcome of '%s' (%s)", self.label, self.abandoned)
            elif outcome == "ok":
                self.result = payload
                for callback in self._on_success:
                    self._call(callback, payload)
                self.succeeded.emit(payload)
            else:
                self.cancelled.emit()
        finally:
            self.finished.emit()

    def _handle_failure(self, error: BaseException) -> None:
        if self.abandoned is not None and not self._failure_matters_when_abandoned():
            log.info("'%s' failed after it was abandoned (%s): %s", self.label, self.abandoned, error)
            return
        parent = self._dialog_parent()
        if self.abandoned is None:
            for callback in self._on_failure:
                self._call(callback, error)
            self.failed.emit(error)
        if self._failure_dialog or self.abandoned is not None:
            show_error(parent, error, self.error_title)

    def _failure_matters_when_abandoned(self) -> bool:
        """A failed write is news even when its screen is gone: what the user did was not saved."""
        return False

    def _call(self, callback: Callable, *args) -> None:
        """A screen's callback failing is a bug to show, not to lose in a log."""
        try:
            callback(*args)
        except Exception as error:
            show_error(self._dialog_parent(), error, self.error_title)


class BackgroundOp(Operation):
    """Work outside any project, on a thread of its own: `fn(progress) -> result`."""

    def __init__(self, runner: OperationRunner, fn: Callable[[Progress], Any], **kwargs):
        super().__init__(runner, **kwargs)
        self._fn = fn

    def _start(self) -> None:
        progress = self._make_progress()
        self._run_on_own_thread(lambda: self._fn(progress), f"op: {self.label}")


class QueryOp(Operation):
    """A read on the thread pool: `fn(project, progress) -> result`, with a read-only connection of its own for
    the call (a write in it fails)."""

    def __init__(self, session: ProjectSession, fn: Callable[[Project, Progress], Any], **kwargs):
        super().__init__(session.runner, **kwargs)
        self.session = session
        self._fn = fn

    def _start(self) -> None:
        progress = self._make_progress()

        def read() -> Any:
            progress.check_cancelled()
            project = connect_project(self.session.path, read_only=True)
            try:
                return self._fn(project, progress)
            finally:
                project.close()

        if not self.runner.submit_read(lambda: self._guarded(read)):
            self._deliver("cancelled", None)


class WriteOp(Operation):
    """A short write, run by the project's writer thread: `fn(project) -> result`, committing its own short
    transaction (core functions such as `rate_clip` do). `changes` names the tables it changes: screens showing
    them are told once it has committed."""

    def __init__(
        self,
        session: ProjectSession,
        fn: Callable[[Project], Any],
        *,
        changes: Iterable[str],
        waits_only: bool = False,
        **kwargs,
    ):
        """`waits_only`: the write does nothing but wait for those queued before it (it is no change the user made)."""
        super().__init__(session.runner, **kwargs)
        self.session = session
        self.changes = frozenset(changes)
        self.waits_only = waits_only
        self._fn = fn

    def _start(self) -> None:
        if self.session.closed:
            self._deliver("error", SpokenBenchError(f"{self.label}: the project {self.session.path} was closed"))
            return
        self.session.writer.submit(self._fn, self._written, self.label)

    def cancel(self) -> None:
        """Only its outcome is dropped: what the user did is written even when the screen that asked is gone or the
        project closes behind it (a rating queued behind another write was skipped, and lost, by the close)."""
        super().cancel()

    @property
    def cancellable(self) -> bool:
        return False  # the jobs panel offers no cancel for a user's write: it is never skipped

    def _written(self, result: Any, error: BaseException | None) -> None:  # on the writer thread
        if error is None:
            try:  # a closed project's screens are gone, and its ProjectChanges with it: emitting raised, the outcome
                if not self.session.closed:  # was never delivered, and the write stayed "running" in the jobs panel
                    self.session.changes.notify(self.changes)
            finally:
                self._deliver("ok", result)
        else:
            self._deliver("error", error)

    def _failure_matters_when_abandoned(self) -> bool:
        return True


class JobOp(Operation):
    """Long work that writes — `fn(project, progress) -> result` with a connection of its own, recorded in the
    jobs table (other processes see it and may ask it to cancel). The work must commit in batches or in one
    short final transaction so the writer's short writes never wait long. `changes` are announced when it
    ends, whatever the outcome (batches committed before a failure or cancel are real).

    Where it runs: a `JobCall` (a picklable call of a core function) runs in a job process of its own
    (`core.jobs.host`), so work that holds the GIL for seconds — imports, evaluation runs, screening,
    transcription, batch files and results — never keeps the UI thread waiting; a thread of this process
    waits for it and passes its progress on. Any other callable runs on a thread
    of its own: for work that mostly waits (network, audio devices, C code) or needs objects that cannot be
    sent to another process."""

    def __init__(
        self,
        session: ProjectSession,
        fn: Callable[[Project, Progress], Any] | JobCall,
        *,
        kind: str,
        changes: Iterable[str],
        claim: str | None = None,
        tracked: bool = True,
        **kwargs,
    ):
        super().__init__(session.runner, **kwargs)
        self.session = session
        self.kind = kind
        self.claim = claim
        self.tracked = tracked  # False: the work records its own job (run_evaluation), not wrapped in a second
        self.changes = frozenset(changes)
        self._fn = fn
        self.recorded_job_ids: frozenset[int] = frozenset()  # replaced whole, so the UI thread reads it safely

    def _make_progress(self) -> Progress:
        """Also hears of every job the work records (tracked_job tells its progress), as frames do in a process."""
        return Progress(self._report_from_worker, self._cancel_event, self._job_recorded, self._stop_now_event)

    def _start(self) -> None:
        if isinstance(self._fn, JobCall):
            self._start_in_job_process(self._fn)
            return
        if not self.tracked:
            self._run_with_own_connection(self._fn, self.changes, f"job: {self.label}")
            return
        progress = self._make_progress()

        def work() -> Any:
            progress.check_cancelled()
            try:
                with core_jobs.tracked_job(
                    self.session.path, self.kind, self.label, progress, claim=self.claim
                ) as job_progress:
                    project = connect_project(self.session.path)
                    try:
                        return self._fn(project, job_progress)
                    finally:
                        project.close()
            finally:
                self.session.changes.notify(self.changes)

        self._run_on_own_thread(work, f"job: {self.label}")

    def _start_in_job_process(self, call: JobCall) -> None:
        try:
            request = job_host.encode_request(
                self.session.path, call, kind=self.kind, label=self.label, claim=self.claim, tracked=self.tracked
            )
        except Exception as error:  # noqa: BLE001 - a call that cannot be sent is a bug to show, as any other
            self._deliver("error", error)
            return
        progress = self._make_progress()
        self.in_job_process = True

        def work() -> Any:
            try:
                return job_host.run_in_job_process(request, progress, self.label)
            finally:
                self.session.changes.notify(self.changes)

        self._run_on_own_thread(work, f"job process: {self.label}")

    def _job_recorded(self, job_id: int, claim: str | None) -> None:
        """On the worker or reader thread, for each job the work records: the first is this operation's own; the
        jobs panel lists them all once, as this operation (a collect records one job per batch)."""
        self.recorded_job_ids = self.recorded_job_ids | {job_id}
        self.session.recorded_job_ids.add(job_id)
        if self.job_id is None:
            self.job_id = job_id
