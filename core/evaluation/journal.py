"""The journal of paid answers: each answer a run pays for is committed (fsynced) as soon as it is read —
its response row, its response-cache entry and its cost, in one transaction — before it is counted and
before the worker that received it sends anything else.

The job loop's BatchWriter commits finished units in batches, up to 10 ms after they arrive, which is right
for throughput but leaves a window in which a SIGKILL loses a reply that was already paid for, and a resume
pays for it again (an audit saw 2-3 re-sent per kill). This writer closes that window: it has a thread and a
connection of its own and does not linger; answers arriving while a commit is under way go together into the
next one (group commit), so a burst of replies costs one fsync, not one per reply. The worker awaits the
commit, so once it moves on the answer is on disk and a resume sends nothing for it. What was not paid for
(failures, cache hits, the simulated listener) still goes through the batch writer.

Measured with tests/benchmarks/bench_runner.py (640 requests at concurrency 32, stub answering after 200 ms):
throughput unchanged within noise (median 149.2 against 149.5 requests/s before), about 0.2 ms more CPU per
request (one commit per answer instead of one per batch)."""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.store import database

Write = Callable[[sqlite3.Connection], None]
_STOP = object()


class JournalError(SpokenBenchError):
    """A paid reply could not be stored (disk full, database unwritable): the run stops, it is not one
    request's failure."""


class ReplyJournal(threading.Thread):
    """Commits writes at once, in its own transaction, and tells the awaiting coroutine when they are durable.
    `save` is called from the event loop; everything else happens on this thread."""

    def __init__(self, db_path: Path):
        super().__init__(name="spokenbench-reply-journal", daemon=True)
        self.db_path = Path(db_path)
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.commits = 0  # transactions (a burst of replies shares one)
        self.saved = 0  # writes committed

    async def save(self, write: Write) -> None:
        """Commit `write` now; returns once it is on disk. Raises JournalError if it could not be stored."""
        future = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved even if nobody waits
        self.queue.put((write, future))
        await asyncio.shield(future)  # cancelling the worker does not cancel the commit already asked for

    def run(self) -> None:
        conn = database.connect(self.db_path)
        try:
            stop = False
            while not stop:
                batch = [self.queue.get()]
                while True:  # no linger: only what is already waiting joins this commit
                    try:
                        batch.append(self.queue.get_nowait())
                    except queue.Empty:
                        break
                stop = any(entry is _STOP for entry in batch)
                batch = [entry for entry in batch if entry is not _STOP]
                if not batch:
                    continue
                error: BaseException | None = None
                try:
                    with database.transaction(conn):
                        for write, _future in batch:
                            write(conn)
                except BaseException as problem:  # noqa: BLE001 - handed to every waiting worker
                    error = problem
                else:
                    self.commits += 1
                    self.saved += len(batch)
                for _write, future in batch:
                    _resolve(future, error)
        finally:
            conn.close()

    def close(self) -> None:
        """Commit what is queued, then stop (blocking: call it from a thread, or after the event loop)."""
        if self.is_alive():
            self.queue.put(_STOP)
            self.join()


def _resolve(future: asyncio.Future, error: BaseException | None) -> None:
    def done() -> None:
        if future.done():
            return
        if error is None:
            future.set_result(None)
        else:
            failure = JournalError(f"storing a paid reply failed: {error}")
            failure.__cause__ = error
            future.set_exception(failure)

    try:
        future.get_loop().call_soon_threadsafe(done)
    except RuntimeError:  # the event loop is already closed: nobody is waiting any more
        pass
