"""Each request sent once, whichever process needs it.

Two evaluations that need the same request — two identical runs started together, the app's Evaluate page
and a CLI run on one plan, a run and a resume of an older one — used to send it once each (two identical fresh
runs paid 164 of 168 requests twice). The run claim (`run:<id>`) does not help: each fresh run is a run of
its own. So every request is claimed, by its request key (the response cache's key: model, parameters,
prompt, audio), in the jobs machinery's `work_claims` table, as `request:<key>`:
- a request whose answer is in the response cache is reused;
- a request no live job holds is claimed (a killed or stalled holder's claim is taken over: its process is
  gone, or its heartbeat is older than `core.jobs.registry.STALE_AFTER_S`) and sent;
- a request another live job holds is waited for: once that job stores the answer (in the response cache, in
  the same transaction that releases the claim) it is reused — at no cost — and said so, once per job waited
  for; if that job fails the request or stops, the claim is released (or goes stale) and this job sends it.
The claiming runs on a thread and connection of its own, so the event loop never waits on SQLite."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from spokenbench.core.evaluation import store
from spokenbench.core.jobs.registry import JobInfo, Write, claim_unit, live_claim_holder
from spokenbench.core.store import database
from spokenbench.core.store import jobs as job_store

CLAIM_KIND = "request"
POLL_S = 0.1  # how often a request held by another job is looked for in the response cache


def claim_name(key: str) -> str:
    return f"{CLAIM_KIND}:{key}"


class RequestClaims:
    """The claims of one job (`job_id`) on the requests it sends. `on_note` hears, once per other job, that
    this one waits for that job's answers instead of sending the same requests."""

    def __init__(self, db_path: Path, job_id: int, on_note: Callable[[str], None] | None = None):
        self.db_path, self.job_id, self.on_note = Path(db_path), job_id, on_note
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="spokenbench-request-claims")
        self.conn: sqlite3.Connection | None = None
        self.reused_from: dict[int, int] = {}  # job id → answers of that job reused here
        self._noted: set[int] = set()

    @property
    def reused(self) -> int:
        return sum(self.reused_from.values())

    async def acquire(self, key: str) -> store.CachedReply | None:
        """None: the request is this job's to send (claimed). A reply: another job has sent it (waited for
        while that job held it)."""
        loop = asyncio.get_running_loop()
        waited_for: JobInfo | None = None
        while True:
            reply, holder = await loop.run_in_executor(self.executor, self._check, key)
            if reply is not None:
                if waited_for is not None:
                    self.reused_from[waited_for.id] = self.reused_from.get(waited_for.id, 0) + 1
                return reply
            if holder is None:
                return None
            waited_for = holder
            self._note(holder)
            await asyncio.sleep(POLL_S)

    def releasing(self, write: Write, keys: list[str]) -> Write:
        """`write` (which stores the answers to `keys`), releasing their claims in the same transaction."""

        def write_and_release(conn: sqlite3.Connection) -> None:
            write(conn)
            for key in keys:
                job_store.release_claim(conn, claim_name(key), self.job_id)

        return write_and_release

    async def release(self, key: str) -> None:
        """Give a request back unanswered (it failed): a job waiting for it sends it itself."""
        await asyncio.get_running_loop().run_in_executor(self.executor, self._release, key)

    async def close(self) -> None:
        """Release whatever this job still holds (requests it claimed and did not answer)."""
        await asyncio.get_running_loop().run_in_executor(self.executor, self._close)
        self.executor.shutdown(wait=False)

    # -- on the claims thread ------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self.conn is None:
            self.conn = database.connect(self.db_path)
            # A claim need not survive a power cut (its job would be dead, and its claims stale, all the same):
            # committing one without an fsync keeps claiming off the requests' critical path.
            database.skip_fsync_on_commit(self.conn)
        return self.conn

    def _check(self, key: str) -> tuple[store.CachedReply | None, JobInfo | None]:
        conn = self._connection()
        name = claim_name(key)
        reply = store.cached_replies(conn, [key]).get(key)
        if reply is not None:
            return reply, None
        holder = live_claim_holder(conn, name, self.job_id)  # read first: waiting takes no write lock
        if holder is not None:
            return None, holder
        with database.transaction(conn):
            reply = store.cached_replies(conn, [key]).get(key)
            if reply is not None:
                return reply, None
            return None, claim_unit(conn, name, self.job_id)

    def _release(self, key: str) -> None:
        conn = self._connection()
        with database.transaction(conn):
            job_store.release_claim(conn, claim_name(key), self.job_id)

    def _close(self) -> None:
        if self.conn is None:
            return
        try:
            job_store.release_job_claims(self.conn, self.job_id)
        finally:
            self.conn.close()
            self.conn = None

    def _note(self, holder: JobInfo) -> None:
        if holder.id in self._noted or self.on_note is None:
            return
        self._noted.add(holder.id)
        self.on_note(
            f"note: requests of this run are being sent by job {holder.id} ({holder.label}; pid {holder.pid} on "
            f"{holder.host}) at the same time: waiting for them and reusing its answer instead of sending them "
            "again"
        )
