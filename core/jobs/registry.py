"""Long work, one way: every job the app or the CLI starts is recorded where every process can see it (its loop is
core/jobs/loop.py).

- `tracked_job(...)` records a job in the project's `jobs` table (kind, claim, pid, host, progress, status),
  refreshes its heartbeat once a second from a thread of its own, and hands the job a `Progress` that is also
  cancelled when anyone — the app, `spokenbench jobs --cancel [--now]`, a script — sets `cancel_requested`. A job
  whose heartbeat stopped (killed, machine off) is shown as *interrupted*; core.cli.resume rebuilds the command
  that resumes it from re-validated values of a known job kind (the stored argv is data, never run). A `claim`
  names the work a job holds (e.g. `run:3`): a second live job with the same claim is refused, saying who
  holds it; core.jobs.loop.claim_unit claims one unit of work (an evaluation's request) the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.processes import THIS_HOST, process_alive, process_stopped
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.remote import (
    strip_url_credentials,
)
from spokenbench.core.store import database
from spokenbench.core.store import jobs as job_store

log = logging.getLogger("spokenbench.jobs")

HEARTBEAT_S = 1.0
STALE_AFTER_S = 10.0  # a running job whose heartbeat is older than this is shown as interrupted
PAUSED_FOR_ROOM = "paused: the disk is full"  # a paid job holding what it received until there is room (JobLoop)
FULL_DISK_BYTES = 1 << 20  # less free space than this where a live job's heartbeat stopped: the disk is full
MAX_CLOCK_AHEAD_S = 3600.0  # a heartbeat further ahead of this machine's clock is no sign of life (crafted, broken)
LEASE_S = STALE_AFTER_S / 2  # a job whose own heartbeat is older confirms a claim before paying under it
CANCEL_POLL_S = 0.05

JOB_STATUSES = ("running", "finished", "failed", "cancelled", "interrupted")


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


def _disk_full(folder: str | None) -> bool:
    try:
        status = os.statvfs(folder)
    except (OSError, TypeError, ValueError):
        return False
    return status.f_bavail * status.f_frsize < FULL_DISK_BYTES


def job_info(row: sqlite3.Row, now: float) -> JobInfo:
    """A jobs row as every process sees it: a 'running' row whose process is gone or whose heartbeat is stale is
    interrupted (paused, when its process here is stopped)."""
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
        elif alive and _disk_full(row["project"]):  # its heartbeat cannot be written: a paid job waits for room
            stop_reason = (
                f"{PAUSED_FOR_ROOM}: no heartbeat for {age:.0f} s; it goes on once there is room: free some space"
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
    jobs = [job_info(row, now) for row in job_store.job_rows(conn, limit, include_finished=True)]
    if not include_finished:
        jobs = [job for job in jobs if job.is_live]
    return jobs


def get_job(conn: sqlite3.Connection, job_id: int) -> JobInfo | None:
    row = job_store.job_row(conn, job_id)
    return None if row is None else job_info(row, time.time())


def paused_for_room(job: JobInfo) -> bool:
    """Whether `job` is a live paid job paused on a full disk (its heartbeat stopped; it goes on once there is
    room): nobody should resume it, and a cancel cannot be written to it."""
    return job.status == "interrupted" and (job.stop_reason or "").startswith(PAUSED_FOR_ROOM)


def request_cancel(conn: sqlite3.Connection, job_id: int, *, now: bool = False) -> bool:
    """Ask a running job — in this process or any other — to stop at its next safe point (within about a
    second), waiting for the answers to requests it has already sent (they are paid for); `now` abandons those
    too. False when there is no such running job."""
    job = get_job(conn, job_id)
    if job is None:
        raise SpokenBenchError(f"no job {job_id} in this project (see `spokenbench jobs DIR`)")
    if paused_for_room(job):
        raise SpokenBenchError(
            f"job {job_id} is paused on a full disk, where no cancel can be written: free some space (it then goes "
            f"on), or stop it from its own terminal with Ctrl-C or with `kill -INT {job.pid}` on {job.host} (a "
            "second one discards what it holds)"
        )
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
        failing = False
        try:
            while not self.stopping.wait(HEARTBEAT_S):
                try:
                    beat = job_store.beat(conn, self.job_id, *self.state.snapshot())
                except sqlite3.Error as error:  # a busy, read-only or full database must not kill the job
                    if not failing:  # once, not every second of a full disk
                        log.warning(
                            "job %d: heartbeat not written (%s); tried again every %g s",
                            self.job_id,
                            error,
                            HEARTBEAT_S,
                        )
                    failing = True
                    continue
                if failing:
                    log.warning("job %d: heartbeat written again", self.job_id)
                    failing = False
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
                    holder = job_info(row, now)
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
