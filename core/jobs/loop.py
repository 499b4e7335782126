"""The shared loop for batched remote or local work (`JobLoop`), run inside a tracked job (core.jobs.registry).

A bounded number of asyncio workers take units in order; remote calls go through core.jobs.remote (rate limits,
retries honouring the server's wait); each finished unit hands back a write, which one writer thread with its own
connection commits in batches (core.jobs.batch_writer: so the event loop never waits on a commit and a rating
from the app never waits behind a long job); progress counts committed units only, so whatever was reported
survives a SIGKILL; cancel is polled every 50 ms. A cancel stops every worker at once but those whose request
has gone out to a paid service: their answers are waited for and stored (the provider bills a request it
received whether or not anyone reads the answer, so a resume would pay for it twice); `cancel(now=True)` — a
second Ctrl+C, Stop Now, `jobs --cancel JOB --now` — abandons those too. A full disk does not throw away what a
paid job received either: with `wait_for_room`, the writers hold what the disk refused and try it again every
ROOM_POLL_S, a clip's file waits the same way (`store_file`), no new request goes out meanwhile, and the job says
it is paused until the user frees some space (a second Ctrl+C, or Stop Now through a job process, discards what is
held). Units are claimed before they are done
(`UnitClaims`), so two identical jobs share the work. Resuming is the plan's business: plans leave out units
already stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from spokenbench.core.foundation.environment_errors import is_disk_full
from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.batch_writer import ROOM_POLL_S, BatchWriter, Write
from spokenbench.core.jobs.registry import (
    CANCEL_POLL_S,
    HEARTBEAT_S,
    PAUSED_FOR_ROOM,
    JobInfo,
    JobProgress,
    Lease,
    job_info,
)
from spokenbench.core.jobs.remote import (
    DEFAULT_CONCURRENCY,
    ProviderLimiter,
    RetryPolicy,
    call_with_retries,
)
from spokenbench.core.store import database
from spokenbench.core.store import jobs as job_store

WRITER_BACKLOG = 500  # finished units not yet committed beyond which the workers wait for the writer

U = TypeVar("U")
T = TypeVar("T")


# --------------------------------------------------------------------------------------------------
# The shared loop


class StopLoop(Exception):
    """Raised by a unit's work to stop the loop gracefully (units in flight finish; no new ones start)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


log = logging.getLogger("spokenbench.jobs")
_STOP = object()
# What a job says while a cancel waits to keep what was paid for (the app offers Stop Now then): the answers to
# requests already sent, or results a full disk refused, held until there is room.
WAITING_FOR_SENT = "stopping: waiting for the answers to"
WAITING_FOR_ROOM = "stopping: waiting for room on the disk"


def offers_stop_now(message: str | None) -> bool:
    """Whether a job's message says a cancel waits to keep what was paid for (Stop Now is offered)."""
    return bool(message) and message.startswith((WAITING_FOR_SENT, WAITING_FOR_ROOM))


_RUNNING_LOOPS: set[JobLoop] = set()  # the loops running in this process, for Ctrl+C (`stop_on_interrupt`)


def stop_on_interrupt() -> str | None:
    """What a Ctrl+C (or SIGTERM) does to the loops the main thread runs — the CLI's signal handler calls it there,
    between any two bytecodes of whatever runs, so it only counts the press on each loop (its watcher acts on it
    within CANCEL_POLL_S); loops on other threads are their owners' to stop. The first press asks them to stop:
    a loop waiting for the answers to requests already sent waits for them (they are paid for), the others stop
    at once; the second abandons those answers. Returns what to tell the user ("" for nothing), or None when no
    loop runs (or every one was asked all it can be): then interrupt at once, as Ctrl+C always did."""
    here = threading.get_ident()  # the main thread's: loops on other threads are their owners' to stop
    loops = [loop for loop in list(_RUNNING_LOOPS) if loop._thread == here and loop._interrupts < 2]
    if not loops:
        return None
    waiting = abandoned = held = paused = 0
    for loop in loops:
        if loop._interrupts == 0 and (loop._sending or loop.disk_full() is not None):
            loop._interrupts = 1
            waiting += len(loop._sending)
            held += loop.held_for_room()
            paused += loop.disk_full() is not None
        else:
            loop._interrupts = 2
            abandoned += len(loop._sending)
    if waiting:
        return f"{WAITING_FOR_SENT} {waiting} request(s) already sent (paid for); Ctrl+C again abandons them"
    if paused:
        return f"{WAITING_FOR_ROOM} to store {held} result(s) held; Ctrl+C again discards them"
    if abandoned:
        return f"stopping now: abandoning {abandoned} request(s) already sent; a resume sends them again"
    return ""


def before_next_request() -> None:
    """For a unit's work with a next request to send after an answer it stored — pipeline mode's answer after its
    transcript: raise asyncio.CancelledError once the unit's job stops, so a cancel waits for the request out,
    never for the ones after it."""
    loop = _working_in.get()
    if loop is not None and loop.stopping:
        raise asyncio.CancelledError()


@dataclass
class LoopResult:
    completed: int  # units whose writes are committed (this session)
    stop_reason: str | None  # None when every unit ran; a StopLoop's reason otherwise
    retries: int
    elapsed_s: float


@dataclass(frozen=True)
class UnitResult:
    """What a unit's work may return instead of a bare write: the write plus a tag that `on_committed`
    receives once the write is committed (e.g. the record, for counting answers and errors)."""

    write: Write | None
    tag: Any = None


class _Done:
    """Marks the write that completes a unit (journal writes from `save` carry none)."""

    __slots__ = ("label", "tag")

    def __init__(self, label: str, tag: Any):
        self.label, self.tag = label, tag


@dataclass(frozen=True)
class UnitClaims(Generic[U]):
    """Lets several processes share one job's units instead of both doing (and paying for) each one: a unit is
    claimed before it is worked on, a unit claimed by another live job is skipped, a unit already stored
    (`already_done`, asked inside the claiming transaction) is skipped, and a dead job's claims are taken over.
    A claim is released in the transaction that commits its unit's result."""

    kind: str
    key: Callable[[U], str]
    already_done: Callable[[sqlite3.Connection, list[str]], set[str]] = lambda conn, keys: set()


class ClaimLost(BaseException):
    """The unit a paid request was for is no longer this job's: another job took it over during a lapse of this
    one's heartbeat (`Lease`). A BaseException, like a cancel, so that no unit's own error handling stores it as
    that unit's failure: the job that holds the unit now stores its result."""

    def __init__(self, unit: str):
        super().__init__(f"{unit} was taken over by another job")
        self.unit = unit


class ClaimUnconfirmed(BaseException):
    """After a lapse, the database could not say whether a claim is still this job's: nothing is sent, and the
    job stops (a BaseException, so that no retry or unit's error handling takes it for the request's failure)."""


@dataclass
class ClaimInHand:
    """The claim a piece of work is being done under, and the job's lease mark when it was claimed or confirmed."""

    unit: str
    mark: int


_working_in: contextvars.ContextVar[JobLoop | None] = contextvars.ContextVar("spokenbench_working_in", default=None)
_claim_in_hand: contextvars.ContextVar[ClaimInHand | None] = contextvars.ContextVar(
    "spokenbench_claim_in_hand", default=None
)


@contextlib.contextmanager
def working_under(claim: ClaimInHand | None) -> Iterator[None]:
    """Remote calls made inside (by this task, or tasks it starts) confirm `claim` first after a lease lapse."""
    token = _claim_in_hand.set(claim)
    try:
        yield
    finally:
        _claim_in_hand.reset(token)


def live_claim_holder(conn: sqlite3.Connection, unit: str, job_id: int) -> JobInfo | None:
    """The live job other than `job_id` that holds `unit`, or None (unclaimed, ours, or its holder is dead:
    killed, or no heartbeat for STALE_AFTER_S)."""
    return live_claim_holders(conn, [unit], job_id).get(unit)


def live_claim_holders(conn: sqlite3.Connection, units: list[str], job_id: int) -> dict[str, JobInfo]:
    """`live_claim_holder` for many units at once: unit → the live job other than `job_id` holding it."""
    now, infos, held = time.time(), {}, {}
    for unit, row in job_store.claim_holders(conn, units).items():
        if row["id"] != job_id:
            info = infos.get(row["id"]) or infos.setdefault(row["id"], job_info(row, now))
            if info.is_live:
                held[unit] = info
    return held


def claim_unit(conn: sqlite3.Connection, unit: str, job_id: int) -> JobInfo | None:
    """In the caller's transaction: claim `unit` for job `job_id` (taking it over from a dead holder) and
    return None — or return the live job that holds it, claiming nothing."""
    holder = live_claim_holder(conn, unit, job_id)
    if holder is None:
        job_store.claim_units(conn, [unit], job_id)
    return holder


class _ClaimingFeeder(Generic[U]):
    """Hands workers the units this job holds, claiming them a chunk at a time on a thread (and connection)
    of its own, so the event loop never waits on the claiming transaction."""

    def __init__(
        self,
        units: Iterator[U],
        claims: UnitClaims[U],
        progress: JobProgress,
        db_path: Path,
        chunk: int,
        with_room: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]],
    ):
        from concurrent.futures import ThreadPoolExecutor

        self.units, self.claims, self.db_path, self.chunk = units, claims, db_path, chunk
        self.with_room = with_room  # JobLoop.with_room: a claim a full disk refused is tried again once there is room
        self.job_id, self.lease = progress.job_id, progress.lease
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="spokenbench-claims")
        self.conn: sqlite3.Connection | None = None
        self.pending: list[tuple[U, ClaimInHand]] = []
        self.lock = asyncio.Lock()
        self.exhausted = False
        self.skipped_stored = 0
        self.skipped_elsewhere = 0

    def unit_name(self, unit: U) -> str:
        return f"{self.claims.kind}:{self.claims.key(unit)}"

    async def next(self) -> tuple[U, ClaimInHand] | None:
        async with self.lock:
            while not self.pending and not self.exhausted:
                chunk = [unit for _, unit in zip(range(self.chunk), self.units)]
                if not chunk:
                    self.exhausted = True
                    break
                loop = asyncio.get_running_loop()
                claimed = await self.with_room(
                    functools.partial(loop.run_in_executor, self.executor, self._claim, chunk)
                )
                self.pending.extend(claimed)
            return self.pending.pop(0) if self.pending else None

    def _connection(self) -> sqlite3.Connection:
        if self.conn is None:
            self.conn = database.connect(self.db_path)
        return self.conn

    def _claim(self, chunk: list[U]) -> list[tuple[U, ClaimInHand]]:
        conn = self._connection()
        keys = [self.claims.key(unit) for unit in chunk]
        mark = self.lease.mark()
        with database.transaction(conn):
            now = time.time()  # holding the write lock: no heartbeat is judged by a time read before a wait for it
            done = self.claims.already_done(conn, keys)
            names = [f"{self.claims.kind}:{key}" for key in keys]
            holders = job_store.claim_holders(conn, [n for n, k in zip(names, keys) if k not in done])
            mine, claimed = [], []
            for unit, key, name in zip(chunk, keys, names):
                if key in done:
                    self.skipped_stored += 1
                    continue
                holder = holders.get(name)
                if holder is not None and holder["id"] != self.job_id and job_info(holder, now).is_live:
                    self.skipped_elsewhere += 1
                    continue
                mine.append((unit, ClaimInHand(name, mark)))
                claimed.append(name)
            job_store.claim_units(conn, claimed, self.job_id)
        return mine

    def _release_all(self) -> None:
        try:
            job_store.release_job_claims(self._connection(), self.job_id)
        finally:
            self.conn.close()

    async def close(self) -> None:
        """Release what this job still holds (units it claimed but did not finish)."""
        await asyncio.get_running_loop().run_in_executor(self.executor, self._release_all)
        self.executor.shutdown(wait=False)


class JobLoop(Generic[U]):
    """Runs `work(unit)` for every unit with at most `concurrency` in flight (see the module docstring).
    `work` returns the write that stores the unit's result (or None), and handles the unit's own failures
    (storing them as failed); any exception it raises stops the loop and is re-raised once everything
    already finished is committed — except StopLoop, which ends the loop quietly with its reason."""

    def __init__(
        self,
        db_path: Path,
        progress: Progress | None = None,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        describe: Callable[[U], str] = str,
        on_committed: Callable[[list], None] | None = None,  # tags of the units just committed
        claims: UnitClaims[U] | None = None,
        claim_chunk: int = 16,
        wait_for_room: bool = False,  # paid work: on a full disk, hold what was received and wait for room
    ):
        self.db_path = Path(db_path)
        self.wait_for_room = wait_for_room
        # workers waiting for room (`with_room`) → (the error, whether they hold a paid result: a cancel spares them)
        self._room_waits: dict[asyncio.Task, tuple[BaseException, bool]] = {}
        self._discarded = 0  # results held for room when a cancel became `now`
        self._stopped_on_full_disk = False
        self._paused_for_room = False
        self.progress = progress or no_progress()
        self.concurrency = max(1, concurrency)
        self.describe = describe
        self.on_committed = on_committed
        self.stop_reason: str | None = None
        self.completed = 0
        self.retries = 0
        self.total: int | None = None
        self._workers: list[asyncio.Task] = []
        self._sending: set[asyncio.Task] = set()  # workers whose request is out: a cancel waits for their answers
        self._kept_after_cancel = 0  # answers to requests in flight at the cancel, waited for and stored
        self._interrupts = 0  # Ctrl+Cs that reached this loop (stop_on_interrupt)
        self._abandoned = 0  # requests out when a cancel became `now`
        self._thread: int | None = None  # the thread running the loop (stop_on_interrupt)
        self._failure: BaseException | None = None
        self._started = time.monotonic()
        self._carried = 0  # units counted as done before this session (resume)
        self.writer: BatchWriter | None = None
        self.durable: BatchWriter | None = None
        self._uncommitted = 0  # finished units handed to the writer, not yet committed
        self._writer_caught_up: asyncio.Event | None = None
        self.claims, self.claim_chunk = claims, max(1, claim_chunk)
        self._feeder: _ClaimingFeeder[U] | None = None
        self._taken_over = 0  # units another job took over during a lapse of this job's heartbeat
        if claims is not None and not isinstance(self.progress, JobProgress):
            raise ValueError("claiming units needs the JobProgress of a tracked job")

    @property
    def skipped(self) -> int:
        """Units left out because they were already stored or another job was doing them."""
        if self._feeder is None:
            return self._taken_over
        return self._feeder.skipped_stored + self._feeder.skipped_elsewhere + self._taken_over

    # -- for work functions ---------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self.stop_reason is not None or self.progress.cancelled or self._interrupts > 0

    def save(self, write: Write, tag: Any = None) -> None:
        """Queue a write that does not complete a unit; it is committed with the next batch."""
        self.writer.put(write, tag)

    async def save_now(self, write: Write) -> None:
        """Commit `write` at once and return when it is on disk: for what was paid for (an answer, a clip), so a
        kill right after cannot lose it and a resume never pays for it again. Answers arriving together share
        one commit. Raises DurableWriteFailed when it cannot be stored (the job then stops)."""
        future = self.loop.create_future()
        future.add_done_callback(lambda f: f.cancelled() or f.exception())  # retrieved even if nobody waits
        self.durable.put(write, None, future)
        await asyncio.shield(future)  # cancelling the worker does not cancel a commit already asked for

    async def remote(
        self,
        call: Callable[[], Awaitable[T]],
        limiter: ProviderLimiter,
        policy: RetryPolicy | None = None,
        *,
        secrets: Iterable[str] = (),
        tokens: float = 0.0,
        paid: bool = True,
    ) -> tuple[T, int]:
        """A remote call through the provider's limits and the retry policy. Checked right before each
        attempt is sent (after the limiter's wait): once the job stops, nothing more goes out. A `paid` call
        already out when the job is cancelled is waited for (see the module docstring), and one that fails then is
        not tried again; an unpaid one (this machine's own model, a free engine) is cancelled at once."""

        async def guarded() -> T:
            while self.disk_full() is not None and not self.stopping:  # what it brought could not be stored
                await asyncio.sleep(CANCEL_POLL_S)
            await self._confirm_claim_in_hand()
            worker = asyncio.current_task()
            if paid:  # counted before the check: a Ctrl-C between the two finds it out, and waits for it
                self._sending.add(worker)
            if self.stopping:  # no await from here to `call()`: a cancel finds this request either unsent or out
                self._sending.discard(worker)
                raise asyncio.CancelledError()
            try:
                result = await call()
            except Exception:
                if self.stopping:  # no retry once the job stops (nor its backoff, up to a server's Retry-After)
                    raise asyncio.CancelledError() from None
                raise
            finally:
                self._sending.discard(worker)
            if paid and self.stopping:
                self._kept_after_cancel += 1
            return result

        def counted(_attempt, _error, _delay) -> None:
            self.retries += 1

        return await call_with_retries(guarded, limiter, policy, tokens=tokens, secrets=secrets, on_retry=counted)

    async def store_file(self, store: Callable[[], T]) -> T:
        """`store()` — writing a paid result's file, as a clip's audio — tried again every ROOM_POLL_S while the
        disk is full (with `wait_for_room`), until it is stored or the job is stopped now."""

        async def attempt() -> T:
            return store()

        return await self.with_room(attempt, holding=True)

    async def with_room(self, attempt: Callable[[], Awaitable[T]], *, holding: bool = False) -> T:
        """`await attempt()`, tried again every ROOM_POLL_S while it fails on a full disk (with `wait_for_room`):
        a clip's file, or a claim or its confirmation written before a request. `holding`: the worker holds a
        paid result meanwhile (counted as held; a cancel waits for it as for a request out). Stopped now, a
        worker waiting here ends as cancelled (a held result counted as discarded)."""
        worker = asyncio.current_task()
        try:
            while True:
                try:
                    return await attempt()
                except Exception as error:
                    if not (self.wait_for_room and is_disk_full(error)):
                        raise
                    if self.progress.stopping_now:
                        self._stopped_on_full_disk = True  # said even when the watcher looks after this worker left
                        self._discarded += holding
                        raise asyncio.CancelledError() from None
                    self._room_waits[worker] = (error, holding)
                    self._room_changed()
                waited = 0.0
                while waited < ROOM_POLL_S and not self.progress.stopping_now:
                    await asyncio.sleep(CANCEL_POLL_S)
                    waited += CANCEL_POLL_S
        finally:
            if self._room_waits.pop(worker, None) is not None:
                self._room_changed()

    def disk_full(self) -> BaseException | None:
        """The full-disk error the job waits behind, or None."""
        for writer in (self.durable, self.writer):
            if writer is not None and writer.full is not None:
                return writer.full
        return next((error for error, _ in self._room_waits.values()), None)

    def held_for_room(self) -> int:
        """Results finished and not yet stored because the disk is full (both writers', and paid clips' files)."""
        if self.disk_full() is None:
            return 0
        files = sum(holding for _, holding in self._room_waits.values())
        return files + sum(writer.unstored() for writer in (self.durable, self.writer) if writer is not None)

    async def _confirm_claim_in_hand(self) -> None:
        """After a lapse of this job's heartbeat, make sure the unit about to be paid for is still its own (and
        renew the heartbeat, so it stays so); raise ClaimLost if another job took it over meanwhile."""
        claim, lease = _claim_in_hand.get(), getattr(self.progress, "lease", None)
        if claim is None or lease is None or lease.holds(claim.mark):
            return
        try:
            held, job_running, mark = await self.with_room(
                lambda: self.loop.run_in_executor(None, self._confirm, claim.unit, lease)
            )
        except sqlite3.Error as error:
            raise ClaimUnconfirmed(
                f"{claim.unit} could not be confirmed as this job's after a pause: {error}"
            ) from None
        if not job_running:
            self.progress.stop_taken_over()
        if self.stopping:
            raise asyncio.CancelledError()
        if not held:
            raise ClaimLost(claim.unit)
        claim.mark = mark

    def _confirm(self, unit: str, lease: Lease) -> tuple[bool, bool, int]:
        """(held, whether this job's row is still running, the lease mark the confirmation is good for)."""
        lapses = lease.lapses  # read before: a pause after the commit must still count against the new mark
        conn = database.connect(self.db_path)
        try:
            held, job_running, written_at = job_store.confirm_claim(conn, self.progress.job_id, unit)
        finally:
            conn.close()
        return held, job_running, lapses + lease.renewed(written_at)

    # -- running ----------------------------------------------------------------------------------

    async def run(
        self,
        units: Iterable[U],
        work: Callable[[U], Awaitable[Write | UnitResult | None]],
        *,
        total: int | None = None,
        already_done: int = 0,
    ) -> LoopResult:
        """Raises Cancelled after a cancel (everything finished before it is committed)."""
        self.loop = asyncio.get_running_loop()
        self.total = total if total is not None else (len(units) if hasattr(units, "__len__") else None)
        self._carried = already_done
        self._started = time.monotonic()
        self._writer_caught_up = asyncio.Event()
        self.writer = BatchWriter(self.db_path, self._on_commit)
        self.durable = BatchWriter(self.db_path, linger_s=0.0, name="spokenbench-job-durable-writer")
        for writer in (self.writer, self.durable):
            writer.wait_for_room = self.wait_for_room
            writer.on_full = lambda: self.loop.call_soon_threadsafe(self._room_changed)
            writer.start()
        shared = iter(units)
        if self.claims is not None:
            self._feeder = _ClaimingFeeder(
                shared,
                self.claims,
                self.progress,
                self.db_path,
                max(self.claim_chunk, self.concurrency),
                self.with_room,
            )
        self._workers = [asyncio.create_task(self._worker(shared, work)) for _ in range(self.concurrency)]
        watcher = asyncio.create_task(self._watch_cancel())
        self._report()
        self._thread = threading.get_ident()
        _RUNNING_LOOPS.add(self)
        try:
            await asyncio.gather(*self._workers, return_exceptions=True)
        finally:
            try:
                await self.loop.run_in_executor(None, self.durable.finish)
                await self.loop.run_in_executor(None, self.writer.finish)
                await asyncio.sleep(0)  # deliver the writer's last commit callback
                if self._feeder is not None:
                    await self._feeder.close()
            finally:
                watcher.cancel()  # after the flush: a wait for room on a full disk can still be stopped now
                _RUNNING_LOOPS.discard(self)  # after the flush: a Ctrl+C during it is a cancel, not an interrupt
        if self._interrupts and not self.progress.cancelled:  # a Ctrl-C the watcher had no time to tell
            self.progress.cancel(now=self._interrupts > 1)
        if self.stopping and (self.stop_reason is None or self.stop_reason == "cancelled"):
            # a worker's own check (or `remote`'s, right before a request) may see the cancel before the watcher
            # does and end quietly: units were left undone all the same, so this is a cancel, never "finished"
            self._stop("cancelled")
        self._report()
        if self._stopped_on_full_disk and self.stop_reason == "cancelled":  # stopped now on a full disk: say so
            raise Cancelled(self._cancel_outcome())
        if self.writer.error is not None:
            raise SpokenBenchError(f"storing results failed: {self.writer.error}") from self.writer.error
        if self._failure is not None:
            raise self._failure
        if self.stop_reason == "cancelled":
            raise Cancelled(self._cancel_outcome())
        return LoopResult(self.completed, self.stop_reason, self.retries, time.monotonic() - self._started)

    def _cancel_outcome(self) -> str:
        """What a cancel did to the requests that were out (empty when none were)."""
        said = []
        kept = max(0, self._kept_after_cancel - self._discarded)  # a kept answer may be one a full disk then lost
        if kept:
            said.append(f"the answers to {kept} request(s) already sent were waited for and kept")
        if self._abandoned:
            said.append(f"{self._abandoned} request(s) already sent were abandoned; a resume sends them again")
        if self._stopped_on_full_disk:
            said.append(
                f"{self._discarded} result(s) held for room on the full disk were discarded; a resume does them again"
            )
        return f"cancelled; {'; '.join(said)}" if said else ""

    async def _next_unit(self, shared: Iterator[U]) -> tuple[U, ClaimInHand | None] | None:
        if self._feeder is not None:
            return await self._feeder.next()
        unit = next(shared, _STOP)
        return None if unit is _STOP else (unit, None)

    async def _worker(self, shared: Iterator[U], work: Callable[[U], Awaitable[Write | UnitResult | None]]) -> None:
        _working_in.set(self)  # this worker task's own context: before_next_request finds its loop
        while not self._stopped_here():
            try:
                next_unit = await self._next_unit(shared)
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # noqa: BLE001 - a claim that failed: the job stops, as a unit's failure does
                self._fail(error)
                return
            if next_unit is None:
                return
            unit, claim = next_unit
            if self._stopped_here():  # checked before claiming a unit too: a spared worker claims no more
                return
            try:
                with working_under(claim):
                    write = await work(unit)
            except ClaimLost:
                self._taken_over += 1  # the job that took it over stores its result
                continue
            except StopLoop as stop:
                self._stop(stop.reason)
                return
            except asyncio.CancelledError:
                raise
            except BaseException as error:  # noqa: BLE001 - the first failure stops the job and is re-raised
                self._fail(error)
                return
            tag = write.tag if isinstance(write, UnitResult) else None
            write = write.write if isinstance(write, UnitResult) else write
            if self._feeder is not None:
                write = self._releasing(write, self._feeder.unit_name(unit))
            self.writer.put(write, _Done(self.describe(unit), tag))
            self._uncommitted += 1
            while self._uncommitted > WRITER_BACKLOG and self.writer.is_alive():
                # Units that finish faster than they can be stored (a simulated listener, cached answers) wait
                # until the writer has committed them. Waiting idle matters: the writer holds the write lock while
                # it stores them, and a loop taking the GIL meanwhile (polling, or working on) stretched one commit
                # to 20 s, while other writers — a heartbeat, a rating in the app — waited for the lock.
                self._writer_caught_up.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._writer_caught_up.wait(), HEARTBEAT_S)

    def _fail(self, error: BaseException) -> None:
        """The first failure stops the job (every worker) and is re-raised once what finished is stored."""
        if self._failure is None:
            unconfirmed = isinstance(error, ClaimUnconfirmed)
            self._failure = SpokenBenchError(str(error)) if unconfirmed else error
        self._stop("error")
        self._cancel_workers()

    def _stopped_here(self) -> bool:
        """Whether the job stops; units left undone by a cancel make it cancelled, never finished."""
        if not self.stopping:
            return False
        if self.progress.cancelled or self._interrupts:
            self._stop("cancelled")
        return True

    def _releasing(self, write: Write | None, unit_name: str) -> Write:
        """The unit's write, releasing its claim in the same transaction."""
        job_id = self.progress.job_id

        def write_and_release(conn: sqlite3.Connection) -> None:
            if write is not None:
                write(conn)
            job_store.release_claim(conn, unit_name, job_id)

        return write_and_release

    def _stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason

    def _cancel_workers(self, sparing: set[asyncio.Task] = frozenset()) -> None:
        for task in self._workers:
            if task is not asyncio.current_task() and task not in sparing:
                task.cancel()

    async def _watch_cancel(self) -> None:
        """Cancels every worker but those waiting for the answer to a request already sent (see the module
        docstring); cancels those too once the cancel is `now`. Ends when `run` cancels it."""
        while not self.progress.cancelled and not self._interrupts:
            await asyncio.sleep(CANCEL_POLL_S)
        self._stop("cancelled")
        holding = {worker for worker, (_, holds) in self._room_waits.items() if holds}
        self._cancel_workers(sparing=self._sending | holding)
        said, told = None, 0
        while not self.progress.stopping_now:
            if self._interrupts > told:  # Ctrl+C: told to the job's Progress here, not in the signal handler
                told = self._interrupts
                self.progress.cancel(now=told > 1)
                continue
            if len(self._sending) != said:
                said = len(self._sending)
                self._report()
            await asyncio.sleep(CANCEL_POLL_S)
        self._abandoned = len(self._sending)
        self._stopped_on_full_disk |= self.disk_full() is not None
        self._discarded += (
            sum(writer.unstored() for writer in (self.writer, self.durable)) if self._stopped_on_full_disk else 0
        )
        for writer in (self.writer, self.durable):
            writer.give_up()
        self._cancel_workers()

    def _on_commit(self, tags: list | None) -> None:
        """Called in the writer thread after each commit; hops to the event loop."""
        self.loop.call_soon_threadsafe(self._committed, tags)

    def _committed(self, tags: list | None) -> None:
        if tags is None:  # the writer died: stop taking work
            self._stop("error")
            self._cancel_workers()
            return
        finished = [tag for tag in tags if isinstance(tag, _Done)]
        self.completed += len(finished)
        self._uncommitted -= len(finished)
        if self._uncommitted <= WRITER_BACKLOG:
            self._writer_caught_up.set()
        if self.on_committed is not None and finished:
            self.on_committed([tag.tag for tag in finished])
        if finished:
            self._report(message=finished[-1].label)

    def _room_changed(self) -> None:
        """At each try on a full disk and once room is back: said once on stderr (scripts see no progress bar),
        and in the job's progress at every try (so a bar drawn at most every so often shows it)."""
        paused = self.disk_full() is not None
        if paused != self._paused_for_room:
            self._paused_for_room = paused
            where = self.db_path.parent
            if paused:
                log.warning(
                    "%s (%s): what was paid for is held and stored once there is room; free some space",
                    PAUSED_FOR_ROOM,
                    where,
                )
            else:
                log.warning("room on the disk again (%s): what was held is stored; the job goes on", where)
        self._report()

    def _report(self, message: str = "") -> None:
        """After every commit (commits are batched, so at most about a hundred a second)."""
        now = time.monotonic()
        done = self._carried + self.completed + self.skipped
        rate = self.completed / max(now - self._started, 1e-6)
        eta = ""
        if self.total and rate > 0 and done < self.total:
            left = (self.total - done) / rate
            eta = f" ETA {int(left // 60)}:{int(left % 60):02d}"
        stopping = (self.progress.cancelled or self._interrupts) and not self.progress.stopping_now
        if stopping and self._sending:
            message = f"{WAITING_FOR_SENT} {len(self._sending)} request(s) already sent (paid for)"
            self.progress.report(done, self.total, message)
            return
        if self.disk_full() is not None and not self.progress.stopping_now:
            where, held = self.db_path.parent, self.held_for_room()
            message = (
                f"{WAITING_FOR_ROOM} ({where}) to store {held} result(s) held; free some space"
                if stopping
                else f"{PAUSED_FOR_ROOM} ({where}): {held} result(s) held, stored once there is room; free some space"
            )
            self.progress.report(done, self.total, message)
            return
        self.progress.report(done, self.total, f"{rate:.1f}/s{eta} {message}".strip())
