"""The app's one writer: a thread that owns the project's write connection and runs the user's writes (a
rating, a review decision, a cancel request) one at a time, each a short core function taking the writer's
`Project` and committing its own short transaction. Long jobs never run here — they have their own connection
and commit in batches — so a rating waits for at most one other short write or one job's short commit.

Qt-free on purpose: `operations.WriteOp` bridges results to the UI thread."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spokenbench.core.foundation.environment_errors import may_have_lost_its_files
from spokenbench.core.store import Project, database
from spokenbench.core.store.project import DATABASE_NAME

log = logging.getLogger("spokenbench.app.writer")

WriteFunction = Callable[[Project], Any]
Done = Callable[[Any, BaseException | None], None]  # (result, error), called on the writer thread


def connect_project(path: Path, read_only: bool | None = None) -> Project:
    """A `Project` on a fresh connection for the calling thread, without `Project.open`'s once-per-open chores
    (migration and temp-file cleanup — the session's first open did both, and the cleanup must not run while
    another process may be writing audio). read_only=None: read-only only where the project is not writable."""
    path = Path(path)
    db_path = path / DATABASE_NAME
    if read_only is None:
        read_only = not database.is_writable(db_path)
    return Project(path, database.connect(db_path, read_only=read_only), read_only=read_only)


@dataclass
class WriteRequest:
    fn: WriteFunction
    done: Done
    label: str = ""


class LeftTransactionOpen(RuntimeError):
    """A write function returned with its transaction still open; it was rolled back."""


_STOP = object()


class StoreWriter:
    """Runs submitted write functions in order on one thread with one connection."""

    def __init__(self, project_path: Path):
        self.project_path = Path(project_path)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="spokenbench-store-writer", daemon=True)
        self._thread.start()

    def submit(self, fn: WriteFunction, done: Done, label: str = "") -> WriteRequest:
        """Queue `fn(project)`; `done(result, error)` is called on the writer thread once it ran. A queued write is
        never skipped: what the user did is written (`close` finishes the queue)."""
        if self._closed:
            raise RuntimeError("the project's writer is closed")
        request = WriteRequest(fn, done, label)
        self._queue.put(request)
        return request

    def close(self, timeout_s: float = 10.0) -> None:
        """Finish the queued writes, then close the connection (waiting at most `timeout_s`: a write may wait for a
        lock another process keeps; what is still queued then is written only if this process lives on)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            log.warning("the project's writer did not finish within %.0f s; writes still queued may be lost", timeout_s)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def _run(self) -> None:
        project, open_error = self._open()
        lost = False  # the connection failed in a way that may mean its files went away: open it again first
        try:
            while (request := self._queue.get()) is not _STOP:
                if lost:
                    project, open_error = self._open(check=True)
                    lost = project is None  # still out of reach (or damaged): tried again at the next write
                error = self._execute(project, open_error, request)
                if project is not None and may_have_lost_its_files(error):
                    log.warning(
                        "write %s failed (%s); the connection is opened again for the next", request.label, error
                    )
                    with contextlib.suppress(Exception):
                        project.close()
                    project, lost = None, True
        finally:
            if project is not None:
                project.close()

    def _open(self, check: bool = False) -> tuple[Project | None, BaseException | None]:
        """The writer's connection, or why it could not be opened (every request is then answered with it).
        `check`: after a lost connection — a USB stick pulled out mid-write and put back — the file is checked
        for damage before anything is written into it (once per file and process)."""
        project = None
        try:
            project = connect_project(self.project_path)
            if not project.read_only:
                if check:
                    database.check_not_damaged(project.conn, project.db_path)
                database.poll_for_the_write_lock(project.conn)  # a rating is committed as soon as a job's commit ends
        except BaseException as error:  # noqa: BLE001 - every request is answered with it
            if project is not None:
                with contextlib.suppress(Exception):
                    project.close()
            return None, error
        return project, None

    @staticmethod
    def _execute(
        project: Project | None, open_error: BaseException | None, request: WriteRequest
    ) -> BaseException | None:
        result, error = None, None
        if project is None:
            error = open_error
        else:
            try:
                result = request.fn(project)
                if project.conn.in_transaction:
                    project.conn.rollback()
                    raise LeftTransactionOpen(f"{request.label or request.fn!r} left its transaction open")
            except BaseException as caught:  # noqa: BLE001 - handed to the caller, which shows it
                error = caught
        try:
            request.done(result, error)
        except Exception:  # a broken callback must not stop the writer
            log.exception("write %s: completion callback failed", request.label)
        return error
