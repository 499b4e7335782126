"""Long work, one way: every job the app or the CLI starts is recorded where every process can see it, and
runs on one loop.

- `tracked_job(...)` records a job in the project's `jobs` table (kind, claim, pid, host, progress, status),
  refreshes its heartbeat once a second from a thread of its own, and hands the job a `Progress` that is also
  cancelled when anyone — the app, `spokenbench jobs --cancel`, a script — sets `cancel_requested`. A job whose
  heartbeat stopped (killed, machine off) is shown as *interrupted*; core.cli.resume rebuilds the command that
  resumes it from re-validated values of a known job kind (the stored argv is data, never run). A `claim`
  names the work a job holds (e.g. `run:3`): a second live job with the same claim is refused, saying who
  holds it; `claim_unit` claims one unit of work (an evaluation's request) the same way.
- `JobLoop` is the shared loop for batched remote or local work: a bounded number of asyncio workers take
  units in order; remote calls go through core.jobs.remote (rate limits, retries honouring the server's wait);
  each finished unit hands back a write, which one writer thread with its own connection commits in batches
  (so the event loop never waits on a commit and a rating from the app never waits behind a long job);
  progress counts committed units only, so whatever was reported survives a SIGKILL; cancel is polled every
  50 ms. A cancel stops every worker at once but those whose request has gone out to a paid service: their
  answers are waited for and stored (the provider bills a request it received whether or not anyone reads the
  answer, so a resume would pay for it twice); `cancel(now=True)` — a second Ctrl+C, Stop Now, `jobs --cancel
  JOB --now` — abandons those too. Resuming is the plan's business: plans leave out units already stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as _dt
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.processes import THIS_HOST, process_alive, process_stopped
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.batch_writer import BatchWriter, Write
from spokenbench.core.jobs.remote import (
    DEFAULT_CONCURRENCY,
    ProviderLimiter,
    RetryPolicy,
    call_with_retries,
    strip_url_credentials,
)
from spokenbench.core.store import database
from spokenbench.core.store import jobs as job_store

log = logging.getLogger("spokenbench.jobs")

HEARTBEAT_S = 1.0
STALE_AFTER_S = 10.0  # a running job whose heartbeat is older than this is shown as interrupted
MAX_CLOCK_AHEAD_S = 3600.0  # a heartbeat further ahead of this machine's clock is no sign of life (crafted, broken)
LEASE_S = STALE_AFTER_S / 2  # a job whose own heartbeat is older confirms a claim before paying under it
CANCEL_POLL_S = 0.05
WRITER_BACKLOG = 500  # finished units not yet committed beyond which the workers wait for the writer

JOB_STATUSES = ("running", "finished", "failed", "cancelled", "interrupted")

U = TypeVar("U")
T = TypeVar("T")


# --------------------------------------------------------------------------------------------------
# The command that started this process's jobs


_invocation: list[str] | None = None


def set_invocation(argv: list[str] | None) -> None:
    """The CLI records its arguments once, so every job it starts can be resumed with the same command."""
    global _invocation
    _invocation = None if argv is None else [strip_url_credentials(arg) or arg for arg in argv]


# --------------------------------------------------------------------------------------------------
# What other processes see


class JobClaimed(SpokenBenchError):
    """Another live job already holds this work."""


@dataclass(frozen=True)
class JobInfo:
    id: int
    kind: str
    label: str
    claim: str | None
    project: str
    pid: int
    host: str
    argv: list[str] | None  # as stored: data from the project folder, shown but never run (core.cli.resume)
    cwd: str | None  # the folder the command was started in, as stored: shown, never used
    started_at: str
    heartbeat_at: str
    finished_at: str | None
    done: int
    total: int | None
    message: str | None
    status: str  # effective: a 'running' row whose process is gone or whose heartbeat is stale is 'interrupted'
    stop_reason: str | None
    cancel_requested: bool
    heartbeat_age_s: float
    stop_now_requested: bool = False  # asked to abandon requests already sent too (`jobs --cancel JOB --now`)

    @property
    def is_live(self) -> bool:
        return self.status == "running"

    @property
    def elapsed_s(self) -> float:
        end = parse_stored_time(self.finished_at) if self.finished_at else time.time()
        return max(0.0, end - parse_stored_time(self.started_at))

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None when it cannot be told."""
        if not self.is_live or not self.total or self.done <= 0 or self.done >= self.total:
            return None
        return (self.total - self.done) * self.elapsed_s / self.done

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["elapsed_s"] = round(self.elapsed_s, 1)
        data["heartbeat_age_s"] = round(self.heartbeat_age_s, 1)
        return data


def parse_stored_time(stamp: str) -> float:
    """A stored time; one that is not a time (a crafted row) reads as long ago, so its job shows as stopped."""
    try:
        return _dt.datetime.fromisoformat(stamp).timestamp()
    except (TypeError, ValueError, OverflowError):
        return 0.0


MAX_STORED_ARGV_CHARS = 100_000


def _stored_argv(text) -> list[str] | None:
    """The stored command as a list of texts, or None when it is not one (a crafted row must not break the jobs
    list: no deep nesting, no huge text, no other types)."""
    if not isinstance(text, str) or not text or len(text) > MAX_STORED_ARGV_CHARS or not text.startswith("["):
        return None
    try:
        argv = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return argv if isinstance(argv, list) and all(isinstance(arg, str) for arg in argv) else None


def _job_info(row: sqlite3.Row, now: float) -> JobInfo:
    beat_age = now - parse_stored_time(row["heartbeat_at"])
    # A heartbeat is written as "now": one a little ahead comes from a clock that runs ahead (another machine's, or
    # this one's before it was set back) and counts as fresh; one more than an hour ahead is no sign of life (a
    # crafted row dated 2300 must not hold its claims until then).
    ahead = beat_age < -MAX_CLOCK_AHEAD_S
    age = -beat_age if ahead else max(0.0, beat_age)
    status = row["status"]
    alive = process_alive(row["pid"], row["host"]) if status == "running" else None
    if status == "running" and (ahead or age > STALE_AFTER_S or alive is False):
        status = "interrupted"
    stop_reason = row["stop_reason"]
    if status == "interrupted" and stop_reason is None:
        if alive and process_stopped(row["pid"]):
            stop_reason = (
                f"paused: its process is stopped (Ctrl+Z or SIGSTOP), no heartbeat for {age:.0f} s; once continued "
                "it skips what another job took over"
            )
        elif ahead:
            stop_reason = f"stopped without finishing (its heartbeat is {age:.0f} s ahead of this machine's clock)"
        else:
            stop_reason = f"stopped without finishing (no heartbeat for {age:.0f} s)"
    return JobInfo(
        id=row["id"],
        kind=row["kind"],
        label=row["label"],
        claim=row["claim"],
        project=row["project"],
        pid=row["pid"],
        host=row["host"],
        argv=_stored_argv(row["argv_json"]),
        cwd=row["cwd"],
        started_at=row["started_at"],
        heartbeat_at=row["heartbeat_at"],
        finished_at=row["finished_at"],
        done=row["done"],
        total=row["total"],
        message=row["message"],
        status=status,
        stop_reason=stop_reason,
        cancel_requested=bool(row["cancel_requested"]),
        heartbeat_age_s=age,
        stop_now_requested=row["cancel_requested"] == job_store.STOP_NOW,
    )


def list_jobs(conn: sqlite3.Connection, *, limit: int = 200, include_finished: bool = True) -> list[JobInfo]:
    """Jobs of every process, live ones first, newest first; status is the effective one."""
    now = time.time()
    jobs = [_job_info(row, now) for row in job_store.job_rows(conn, limit, include_finished=True)]
    if not include_finished:
        jobs = [job for job in jobs if job.is_live]
    return jobs


def get_job(conn: sqlite3.Connection, job_id: int) -> JobInfo | None:
    row = job_store.job_row(conn, job_id)
    return None if row is None else _job_info(row, time.time())


def request_cancel(conn: sqlite3.Connection, job_id: int, *, now: bool = False) -> bool:
    """Ask a running job — in this process or any other — to stop at its next safe point (within about a
    second), waiting for the answers to requests it has already sent (they are paid for); `now` abandons those
    too. False when there is no such running job."""
    job = get_job(conn, job_id)
    if job is None:
        raise SpokenBenchError(f"no job {job_id} in this project (see `spokenbench jobs DIR`)")
    if not job.is_live:
        return False
    return job_store.set_cancel_requested(conn, job_id, now=now)


# --------------------------------------------------------------------------------------------------
# Recording a job

TAKEN_OVER = (
    f"another job took over its work while its process was stopped (no heartbeat for over {STALE_AFTER_S:.0f} s)"
)


class TakenOver(Cancelled):
    """This job was stopped (Ctrl+Z, a suspended machine) long enough for another job to take over its claim."""


class _JobState:
    """The latest progress a job reported; the heartbeat thread writes it at most once a second."""

    def __init__(self, total: int | None):
        self.lock = threading.Lock()
        self.done, self.total, self.message = 0, total, None
        self.outcome: tuple[str, str | None] | None = None
        self.taken_over = False  # another job took over this one's claim (a resume of its run) while it was stopped

    def update(self, done: int, total: int | None, message: str) -> None:
        with self.lock:
            self.done, self.total, self.message = done, total if total is not None else self.total, message

    def snapshot(self) -> tuple[int, int | None, str | None]:
        with self.lock:
            return self.done, self.total, self.message


class Lease:
    """What a job may assume about the claims it holds. Another job takes a claim over once its holder's
    heartbeat is STALE_AFTER_S old — also when the holder is only stopped (Ctrl+Z, a suspended laptop, a starved
    machine) and goes on once it continues. So every heartbeat the job writes is timed: a gap longer than LEASE_S
    since the one before counts a lapse, and a claim made before a lapse (or during one) is confirmed, renewing the
    heartbeat in the same transaction, before anything is paid for under it (`JobLoop.remote`)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.written_at = time.time()  # taken before the job's row is inserted: never later than its first beat
        self.lapses = 0

    def renewed(self, written_at: str) -> bool:
        """The job's heartbeat was just stored as `written_at`; returns whether that counted a lapse. A clock set
        back counts as one too (the heartbeats before it read as younger than they are)."""
        stamp = parse_stored_time(written_at)
        with self.lock:
            lapsed = abs(stamp - self.written_at) > LEASE_S
            self.lapses += lapsed
            self.written_at = stamp
            return lapsed

    def mark(self) -> int:
        """Taken before claiming: what `holds` compares with (-1 during a lapse, which nothing holds through)."""
        with self.lock:
            return self.lapses if time.time() - self.written_at <= LEASE_S else -1

    def holds(self, mark: int) -> bool:
        """Whether a claim made at `mark` is still safe to act on without asking the database."""
        return mark >= 0 and self.mark() == mark


class _Heartbeat(threading.Thread):
    def __init__(self, db_path: Path, job_id: int, state: _JobState, progress: JobProgress):
        super().__init__(name=f"spokenbench-job-{job_id}-heartbeat", daemon=True)
        self.db_path, self.job_id, self.state, self.progress = db_path, job_id, state, progress
        self.stopping = threading.Event()

    def run(self) -> None:
        conn = database.connect(self.db_path)
        try:
            while not self.stopping.wait(HEARTBEAT_S):
                try:
                    beat = job_store.beat(conn, self.job_id, *self.state.snapshot())
                except sqlite3.Error as error:  # a busy or read-only database must not kill the job
                    log.warning("job %d: heartbeat not written (%s)", self.job_id, error)
                    continue
                self.progress.lease.renewed(beat.written_at)
                if not beat.still_running:
                    # Stopped for longer than STALE_AFTER_S, this job was marked interrupted by one that took over
                    # its claim (a resume of the same run): that job does the work now, so this one stops.
                    self.progress.stop_taken_over()
                if beat.cancel_requested:
                    self.progress.cancel(now=beat.cancel_requested == job_store.STOP_NOW)
        finally:
            conn.close()


class JobProgress(Progress):
    """The Progress a tracked job works with: reports go to the caller's progress and to the jobs table;
    cancelling it (or a cancel request in the table) cancels the caller's progress too."""

    def __init__(self, inner: Progress, state: _JobState, job_id: int, db_path: Path, lease: Lease):
        super().__init__(self._forward, inner._cancel_event, inner._on_job_recorded, inner._stop_now_event)
        self.inner, self.state, self.job_id, self.db_path, self.lease = inner, state, job_id, db_path, lease

    def _forward(self, done: int, total: int | None, message: str) -> None:
        self.state.update(done, total, message)
        self.inner.report(done, total, message)

    @property
    def taken_over(self) -> bool:
        return self.state.taken_over

    def stop_taken_over(self) -> None:
        """Another job took over this one's claim while it was stopped: stop, and end as interrupted, saying why."""
        self.state.taken_over = True
        self.cancel()

    def set_outcome(self, status: str, stop_reason: str | None) -> None:
        """Say how the job ended when it returns normally without finishing (e.g. stopped by its budget)."""
        if status not in JOB_STATUSES:
            raise ValueError(f"unknown job status {status!r}")
        self.state.outcome = (status, stop_reason)


def _claim_and_insert(db_path: Path, project_path: Path, kind: str, label: str, claim: str | None, argv, total):
    conn = database.connect(db_path)
    try:
        with database.transaction(conn):
            if claim is not None:
                now = time.time()
                for row in job_store.running_jobs_with_claim(conn, claim):
                    holder = _job_info(row, now)
                    if holder.is_live:
                        raise JobClaimed(
                            f"{claim} is being worked on by job {holder.id} ({holder.label}; pid {holder.pid} on "
                            f"{holder.host}, started {holder.started_at}); wait for it to finish or cancel it "
                            f"with `spokenbench jobs {project_path} --cancel {holder.id}`"
                        )
                    reason = TAKEN_OVER if str(holder.stop_reason).startswith("paused") else holder.stop_reason
                    job_store.mark_interrupted(conn, holder.id, reason)  # "paused" would not stay true
            return job_store.insert_job(
                conn,
                kind=kind,
                label=label,
                claim=claim,
                project=str(Path(project_path).resolve()),
                pid=os.getpid(),
                host=THIS_HOST,
                argv=argv,
                cwd=os.getcwd() if argv is not None else None,
                total=total,
            )
    finally:
        conn.close()


@contextlib.contextmanager
def tracked_job(
    project_path: str | Path,
    kind: str,
    label: str,
    progress: Progress | None = None,
    *,
    claim: str | None = None,
    argv: list[str] | None = None,
    total: int | None = None,
) -> Iterator[JobProgress]:
    """Record a job for its whole life (see the module docstring). The job's outcome is written on the way
    out: finished, cancelled (Cancelled, Ctrl-C), or failed with the error's message."""
    from spokenbench.core.store.project import DATABASE_NAME

    project_path = Path(project_path)
    db_path = project_path / DATABASE_NAME
    if isinstance(progress, JobProgress) and claim is None and progress.db_path == db_path.resolve():
        # Already inside a tracked job on this project (the app's JobOp running a core job): one job, one row.
        yield progress
        return
    inner = progress or no_progress()
    state, lease = _JobState(total), Lease()
    job_id = _claim_and_insert(db_path, project_path, kind, label, claim, argv or _invocation, total)
    job_progress = JobProgress(inner, state, job_id, db_path.resolve(), lease)
    heartbeat = _Heartbeat(db_path, job_id, state, job_progress)
    heartbeat.start()
    status, reason = "finished", None
    try:
        inner.job_recorded(job_id, claim)
        yield job_progress
        if state.outcome is not None:
            status, reason = state.outcome
        elif state.taken_over:  # it returned early on its own, having seen the cancel
            raise Cancelled()  # below: recorded as interrupted, said as TakenOver
        elif job_progress.cancelled:  # the job saw the cancel and returned early on its own
            status, reason = "cancelled", "cancel requested"
    except Cancelled as cancelled:
        said = str(cancelled).removeprefix("cancelled; ")  # what it did to requests out (JobLoop), if anything
        status, reason = "cancelled", f"cancel requested; {said}" if said else "cancel requested"
        if state.taken_over:
            status, reason = "interrupted", TAKEN_OVER
            raise TakenOver(f"job {job_id} stopped: {TAKEN_OVER}") from None
        raise
    except KeyboardInterrupt:
        status, reason = "cancelled", "interrupted (Ctrl-C)"
        raise
    except asyncio.CancelledError:  # its task cancelled: asyncio.run ending on a KeyboardInterrupt, or its caller
        status, reason = "cancelled", "interrupted"
        raise
    except SpokenBenchError as error:
        status, reason = "failed", str(error)[:500]
        raise
    except BaseException as error:
        status, reason = "failed", f"internal error: {type(error).__name__}: {error}"[:500]
        raise
    finally:
        heartbeat.stopping.set()
        heartbeat.join()
        done, total_now, message = state.snapshot()
        conn = database.connect(db_path)
        try:
            job_store.finish_job(conn, job_id, status, reason, done, total_now, message)
        except sqlite3.Error as error:
            log.warning("job %d: outcome not recorded (%s)", job_id, error)
        finally:
            conn.close()


# --------------------------------------------------------------------------------------------------
# The shared loop


class StopLoop(Exception):
    """Raised by a unit's work to stop the loop gracefully (units in flight finish; no new ones start)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


_STOP = object()
# What a job says while a cancel waits for the answers to requests already sent (the app offers Stop Now then).
WAITING_FOR_SENT = "stopping: waiting for the answers to"
_RUNNING_LOOPS: set[JobLoop] = set()  # the loops running in this process, for Ctrl+C (`stop_on_interrupt`)


def stop_on_interrupt() -> str | None:
    """What a Ctrl+C (or SIGTERM) does to the loops running in this process — the CLI's signal handler calls it,
    on the main thread, between two steps of the event loop, so it only counts the press on each loop (its
    watcher acts on it within CANCEL_POLL_S). The first asks them to stop: a loop waiting for the answers to
    requests already sent waits for them (they are paid for), the others stop at once; the second abandons those
    answers. Returns what to tell the user ("" for nothing), or None when no loop runs (or every one was asked
    all it can be): then interrupt at once, as Ctrl+C always did."""
    loops = [loop for loop in _RUNNING_LOOPS if loop._interrupts < 2]
    if not loops:
        return None
    waiting = abandoned = 0
    for loop in loops:
        if loop._interrupts == 0 and loop._sending:
            loop._interrupts = 1
            waiting += len(loop._sending)
        else:
            loop._interrupts = 2
            abandoned += len(loop._sending)
    if waiting:
        return f"{WAITING_FOR_SENT} {waiting} request(s) already sent (paid for); Ctrl+C again abandons them"
    if abandoned:
        return f"stopping now: abandoning {abandoned} request(s) already sent; a resume sends them again"
    return ""


def before_next_request() -> None:
    """For a unit's work with a next request to send after an answer — a long clip's next chunk, pipeline mode's
    answer after its transcript: raise asyncio.CancelledError once the unit's job stops, so a cancel waits for the
    request out, never for the ones after it."""
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
            info = infos.get(row["id"]) or infos.setdefault(row["id"], _job_info(row, now))
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

    def __init__(self, units: Iterator[U], claims: UnitClaims[U], progress: JobProgress, db_path: Path, chunk: int):
        from concurrent.futures import ThreadPoolExecutor

        self.units, self.claims, self.db_path, self.chunk = units, claims, db_path, chunk
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
                self.pending.extend(await loop.run_in_executor(self.executor, self._claim, chunk))
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
                if holder is not None and holder["id"] != self.job_id and _job_info(holder, now).is_live:
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
    ):
        self.db_path = Path(db_path)
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
            await self._confirm_claim_in_hand()
            if self.stopping:  # no await from here to `call()`: a cancel finds this request either unsent or out
                raise asyncio.CancelledError()
            worker = asyncio.current_task()
            if paid:
                self._sending.add(worker)
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

    async def _confirm_claim_in_hand(self) -> None:
        """After a lapse of this job's heartbeat, make sure the unit about to be paid for is still its own (and
        renew the heartbeat, so it stays so); raise ClaimLost if another job took it over meanwhile."""
        claim, lease = _claim_in_hand.get(), getattr(self.progress, "lease", None)
        if claim is None or lease is None or lease.holds(claim.mark):
            return
        try:
            held, job_running, mark = await self.loop.run_in_executor(None, self._confirm, claim.unit, lease)
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
        self.writer.start()
        self.durable = BatchWriter(self.db_path, linger_s=0.0, name="spokenbench-job-durable-writer")
        self.durable.start()
        shared = iter(units)
        if self.claims is not None:
            self._feeder = _ClaimingFeeder(
                shared, self.claims, self.progress, self.db_path, max(self.claim_chunk, self.concurrency)
            )
        self._workers = [asyncio.create_task(self._worker(shared, work)) for _ in range(self.concurrency)]
        watcher = asyncio.create_task(self._watch_cancel())
        self._report()
        _RUNNING_LOOPS.add(self)
        try:
            await asyncio.gather(*self._workers, return_exceptions=True)
        finally:
            watcher.cancel()
            try:
                await self.loop.run_in_executor(None, self.durable.finish)
                await self.loop.run_in_executor(None, self.writer.finish)
                await asyncio.sleep(0)  # deliver the writer's last commit callback
                if self._feeder is not None:
                    await self._feeder.close()
            finally:
                _RUNNING_LOOPS.discard(self)  # after the flush: a Ctrl+C during it is a cancel, not an interrupt
        if self.stopping and (self.stop_reason is None or self.stop_reason == "cancelled"):
            # a worker's own check (or `remote`'s, right before a request) may see the cancel before the watcher
            # does and end quietly: units were left undone all the same, so this is a cancel, never "finished"
            self._stop("cancelled")
        self._report()
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
        if self._kept_after_cancel:
            said.append(f"the answers to {self._kept_after_cancel} request(s) already sent were waited for and kept")
        if self._abandoned:
            said.append(f"{self._abandoned} request(s) already sent were abandoned; a resume sends them again")
        return f"cancelled; {'; '.join(said)}" if said else ""

    async def _next_unit(self, shared: Iterator[U]) -> tuple[U, ClaimInHand | None] | None:
        if self._feeder is not None:
            return await self._feeder.next()
        unit = next(shared, _STOP)
        return None if unit is _STOP else (unit, None)

    async def _worker(self, shared: Iterator[U], work: Callable[[U], Awaitable[Write | UnitResult | None]]) -> None:
        _working_in.set(self)  # this worker task's own context: before_next_request finds its loop
        while (next_unit := await self._next_unit(shared)) is not None:
            unit, claim = next_unit
            if self.stopping:
                if self.progress.cancelled:
                    self._stop("cancelled")  # units are left undone: the job did not finish
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
                if self._failure is None:
                    unconfirmed = isinstance(error, ClaimUnconfirmed)
                    self._failure = SpokenBenchError(str(error)) if unconfirmed else error
                self._stop("error")
                self._cancel_workers()
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
        self._cancel_workers(sparing=set(self._sending))
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

    def _report(self, message: str = "") -> None:
        """After every commit (commits are batched, so at most about a hundred a second)."""
        now = time.monotonic()
        done = self._carried + self.completed + self.skipped
        rate = self.completed / max(now - self._started, 1e-6)
        eta = ""
        if self.total and rate > 0 and done < self.total:
            left = (self.total - done) / rate
            eta = f" ETA {int(left // 60)}:{int(left % 60):02d}"
        if self.stop_reason == "cancelled" and self._sending and not self.progress.stopping_now:
            message = f"{WAITING_FOR_SENT} {len(self._sending)} request(s) already sent (paid for)"
            self.progress.report(done, self.total, message)
            return
        self.progress.report(done, self.total, f"{rate:.1f}/s{eta} {message}".strip())
