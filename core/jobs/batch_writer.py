"""A job's writer thread: what a JobLoop's units hand back is committed here, in batches, on a connection of
its own — so the event loop never waits on a commit, and a rating from the app never waits behind a long job.
core.jobs.loop.JobLoop runs two: one that lingers to share a commit among many units (throughput), and one
that commits at once what was paid for (`JobLoop.save_now`). A writer told to `wait_for_room` holds a batch that
a full disk refused and tries it again every ROOM_POLL_S, until it is stored or the writer is told to `give_up`."""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spokenbench.core.foundation.environment_errors import is_disk_full
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store import database

WRITER_LINGER_S = 0.01  # the longest a finished unit waits for its commit: bounds what a SIGKILL can lose
ROOM_POLL_S = 2.0  # how often a writer that a full disk refused tries its batch again
Write = Callable[[sqlite3.Connection], None]
_FINISH = object()


class DurableWriteFailed(SpokenBenchError):
    """A result that was paid for could not be stored (disk full, database unwritable): the job stops."""


class BatchWriter(threading.Thread):
    """A job's writer: its own connection; writes are committed in batches (one fsync for many), and each
    commit is reported back with the tags of what it committed. With `linger_s` the writer waits that long for
    more writes to share a commit (throughput); without, it commits what is waiting at once (durability: a
    paid answer is on disk before the worker that received it moves on). A write may carry a future that is
    resolved — on the event loop — once it is committed, or failed when it could not be."""

    def __init__(
        self,
        db_path: Path,
        on_commit: Callable[[list | None], None] | None = None,
        *,
        linger_s: float = WRITER_LINGER_S,
        max_batch: int = 2000,
        name: str = "spokenbench-job-writer",
    ):
        super().__init__(name=name, daemon=True)
        self.db_path, self.on_commit, self.linger_s, self.max_batch = db_path, on_commit, linger_s, max_batch
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.error: BaseException | None = None
        self.commits = 0
        self.largest_batch = 0  # the most writes one commit held the write lock for (the backlog limit bounds it)
        self.wait_for_room = False  # hold a batch a full disk refused, and try it again (a job holding paid results)
        self.full: BaseException | None = None  # the disk-full error the batch held now waits behind
        self._put = self._stored = 0  # writes handed in / committed (each counted on one thread only)
        self.on_full: Callable[[], None] | None = None  # called at each try on a full disk, and once room is back
        self._give_up = threading.Event()

    def put(self, write: Write | None, tag: Any = None, future: asyncio.Future | None = None) -> None:
        self._put += write is not None
        self.queue.put((write, tag, future))

    def unstored(self) -> int:
        """Writes handed in and not committed yet (those of a batch held for room among them)."""
        return self._put - self._stored

    def run(self) -> None:
        conn = database.connect(self.db_path)
        try:
            stop = False
            while not stop:
                batch = [self.queue.get()]
                if self.linger_s:
                    time.sleep(self.linger_s)  # let a few more arrive: one commit for several
                while len(batch) < self.max_batch:
                    try:
                        batch.append(self.queue.get_nowait())
                    except queue.Empty:
                        break
                stop = any(entry is _FINISH for entry in batch)
                batch = [entry for entry in batch if entry is not _FINISH]
                if batch:
                    self._commit(conn, batch)
        finally:
            conn.close()

    def _commit(self, conn: sqlite3.Connection, batch: list) -> None:
        while self.error is None:
            try:
                if any(write is not None for write, _tag, _future in batch):
                    with database.transaction(conn):
                        for write, _tag, _future in batch:
                            if write is not None:
                                write(conn)
                    self.commits += 1
                    self.largest_batch = max(self.largest_batch, len(batch))
                    self._stored += sum(write is not None for write, _tag, _future in batch)
            except BaseException as error:  # noqa: BLE001 - handed to the loop, which stops and re-raises
                if self.wait_for_room and is_disk_full(error) and not self._give_up.is_set():
                    self._set_full(error)
                    self._give_up.wait(ROOM_POLL_S)  # rolled back: the same writes are tried again
                    continue
                self.error = error
                if self.on_commit is not None:
                    self.on_commit(None)
            else:
                self._set_full(None)
                if self.on_commit is not None:
                    self.on_commit([tag for _write, tag, _future in batch])
            break
        for _write, _tag, future in batch:  # after a failure, every later write fails too: nobody waits forever
            if future is not None:
                _resolve(future, self.error)

    def _set_full(self, error: BaseException | None) -> None:
        was_full = self.full is not None
        self.full = error
        if (error is not None or was_full) and self.on_full is not None:
            self.on_full()

    def give_up(self) -> None:
        """Stop waiting for room: the batch held fails (and so does every write after it)."""
        self._give_up.set()

    def finish(self) -> None:
        """Commit what is queued, then stop (blocking: call it from a thread, or after the event loop)."""
        if self.is_alive():
            self.queue.put(_FINISH)
            self.join()


def _resolve(future: asyncio.Future, error: BaseException | None) -> None:
    def settle() -> None:
        if future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            failure = DurableWriteFailed(f"storing a paid result failed: {error}")
            failure.__cause__ = error
            future.set_exception(failure)

    try:
        future.get_loop().call_soon_threadsafe(settle)
    except RuntimeError:  # the event loop is closed: nobody waits any more
        pass
