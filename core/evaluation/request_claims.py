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
  for; if that job fails the request or stops, the claim is released (or goes stale) and this job sends it;
- a request pending in a provider batch that may still answer it (`spokenbench evaluate --batch`, of any run) is
  not sent: `acquire` raises WaitingInBatch, and the run is resumed once that batch is collected (its answer is
  then in the response cache). A submitter claims its requests until the provider has the batch, so a live run
  waits for the submit rather than racing it.
The claiming runs on a thread and connection of its own, so the event loop never waits on SQLite."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from spokenbench.core.evaluation import store
from spokenbench.core.jobs.batch_writer import Write
from spokenbench.core.jobs.loop import ClaimInHand, claim_unit, live_claim_holder, live_claim_holders
from spokenbench.core.jobs.registry import JobInfo, Lease
from spokenbench.core.store import batches as batch_store
from spokenbench.core.store import database
from spokenbench.core.store import jobs as job_store

CLAIM_KIND = "request"
POLL_S = 0.1  # how often a request held by another job is looked for in the response cache


def claim_name(key: str) -> str:
    return f"{CLAIM_KIND}:{key}"


class WaitingInBatch(Exception):
    """The request waits in provider batch `batch_id` (of run `run_id`), which may still answer it: not sent."""

    def __init__(self, batch_id: int, run_id: int):
        super().__init__(f"waiting in batch {batch_id} (run {run_id})")
        self.batch_id, self.run_id = batch_id, run_id


class Waits:
    """Planned requests not sent because they wait elsewhere — in a provider batch that may still answer them
    (of this run or another), or claimed by a live job sending them now — counted by where they wait. Once that
    batch is collected (or that job is done) their answers are in the response cache: resuming the run fills
    them at no cost."""

    def __init__(self):
        self.by_place: dict[tuple, int] = {}

    def add(self, place: tuple, requests: int = 1) -> None:
        """`place`: ('batch', batch id, run id) or ('job', job id, label)."""
        self.by_place[place] = self.by_place.get(place, 0) + requests

    @property
    def count(self) -> int:
        return sum(self.by_place.values())

    def entries(self) -> list[dict]:
        """[{"batch_id", "run_id", "job_id", "job", "requests"}] (None where it does not apply), for --json."""
        return [
            {
                "batch_id": place[1] if place[0] == "batch" else None,
                "run_id": place[2] if place[0] == "batch" else None,
                "job_id": place[1] if place[0] == "job" else None,
                "job": place[2] if place[0] == "job" else None,
                "requests": requests,
            }
            for place, requests in sorted(self.by_place.items(), key=lambda entry: (entry[0][0], entry[0][1]))
        ]


def describe_waits(entries: list[dict]) -> str:
    """'6 request(s) wait in batch 1 (run 1); 2 are being sent by job 5 (label)' from Waits.entries."""
    return "; ".join(
        f"{entry['requests']} request(s) wait in batch {entry['batch_id']} (run {entry['run_id']})"
        if entry["batch_id"] is not None
        else f"{entry['requests']} request(s) are being sent by job {entry['job_id']} ({entry['job']})"
        for entry in entries
    )


def held_elsewhere(conn: sqlite3.Connection, keys: list[str], job_id: int) -> dict[str, tuple]:
    """request key → where it waits (a Waits place) for the keys that must not be sent by job `job_id`: pending
    in an in-flight provider batch of any run, or claimed (`request:<key>`) by another live job."""
    held: dict[str, tuple] = {
        key: ("batch", batch_id, run_id) for key, (batch_id, run_id) in batch_store.batches_holding(conn, keys).items()
    }
    names = {claim_name(key): key for key in keys if key not in held}
    for name, holder in live_claim_holders(conn, list(names), job_id).items():
        held[names[name]] = ("job", holder.id, holder.label)
    return held


class RequestClaims:
    """The claims of one job (`job_id`) on the requests it sends. `on_note` hears, once per other job, that
    this one waits for that job's answers instead of sending the same requests."""

    def __init__(self, db_path: Path, job_id: int, lease: Lease, on_note: Callable[[str], None] | None = None):
        self.db_path, self.job_id, self.lease, self.on_note = Path(db_path), job_id, lease, on_note
        self._in_hand: dict[str, ClaimInHand] = {}  # request key → its claim, from `acquire` until it is sent
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="spokenbench-request-claims")
        self.conn: sqlite3.Connection | None = None
        self.reused_from: dict[int, int] = {}  # job id → answers of that job reused here
        self._noted: set[int] = set()

    @property
    def reused(self) -> int:
        return sum(self.reused_from.values())

    async def acquire(self, key: str) -> store.CachedReply | None:
        """None: the request is this job's to send (claimed; `in_hand` is its claim). A reply: another job has
        sent it (waited for while that job held it). Raises WaitingInBatch for a request an in-flight provider
        batch holds."""
        loop = asyncio.get_running_loop()
        waited_for: JobInfo | None = None
        while True:
            mark = self.lease.mark()
            reply, holder, batch = await loop.run_in_executor(self.executor, self._check, key)
            if batch is not None:
                raise WaitingInBatch(*batch)
            if reply is not None:
                if waited_for is not None:
                    self.reused_from[waited_for.id] = self.reused_from.get(waited_for.id, 0) + 1
                return reply
            if holder is None:
                self._in_hand[key] = ClaimInHand(claim_name(key), mark)
                return None
            waited_for = holder
            self._note(holder)
            await asyncio.sleep(POLL_S)

    def in_hand(self, key: str) -> ClaimInHand | None:
        """The claim `acquire` just made on `key`, for sending it under (`core.jobs.registry.working_under`)."""
        return self._in_hand.pop(key, None)

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

    def _check(self, key: str) -> tuple[store.CachedReply | None, JobInfo | None, tuple[int, int] | None]:
        """(the cached reply, the live job holding the request, (batch id, run id) of a batch holding it)."""
        conn = self._connection()
        name = claim_name(key)
        reply = store.cached_replies(conn, [key]).get(key)
        if reply is not None:
            return reply, None, None
        holder = live_claim_holder(conn, name, self.job_id)  # read first: waiting takes no write lock
        if holder is not None:
            return None, holder, None
        with database.transaction(conn):
            reply = store.cached_replies(conn, [key]).get(key)
            if reply is not None:
                return reply, None, None
            batch = batch_store.batches_holding(conn, [key]).get(key)
            if batch is not None:
                return None, None, batch
            return None, claim_unit(conn, name, self.job_id), None

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
