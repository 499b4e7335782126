"""The jobs table's SQL (see core/jobs/registry.py for what jobs are). Every statement is its own short transaction,
so a heartbeat or a cancel request never waits behind a job's work."""

from __future__ import annotations

import json
import logging
import sqlite3
from typing import NamedTuple

from spokenbench.core.store.database import transaction, utc_now

log = logging.getLogger("spokenbench.jobs")

JOB_COLUMNS = (
    "id, kind, label, claim, project, pid, host, argv_json, cwd, started_at, heartbeat_at, finished_at, done, total, "
    "message, status, stop_reason, cancel_requested"
)


def running_jobs_with_claim(conn: sqlite3.Connection, claim: str) -> list[sqlite3.Row]:
    return conn.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE status = 'running' AND claim = ?", (claim,)).fetchall()


def insert_job(
    conn: sqlite3.Connection,
    *,
    kind: str,
    label: str,
    claim: str | None,
    project: str,
    pid: int,
    host: str,
    argv: list[str] | None,
    cwd: str | None = None,
    total: int | None = None,
) -> int:
    now = utc_now()
    cursor = conn.execute(
        "INSERT INTO jobs(kind, label, claim, project, pid, host, argv_json, cwd, started_at, heartbeat_at, total) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (kind, label, claim, project, pid, host, json.dumps(argv) if argv is not None else None, cwd, now, now, total),
    )
    return cursor.lastrowid


# jobs.cancel_requested: 0 nobody asked; STOP (1) stop at the next safe point, waiting for the answers to requests
# already sent; STOP_NOW (2) abandon those too. Older versions read any non-zero value as STOP.
STOP, STOP_NOW = 1, 2


class Beat(NamedTuple):
    cancel_requested: int  # 0, STOP or STOP_NOW
    still_running: bool  # False once another job marked this one interrupted (its heartbeat had gone stale)
    written_at: str  # the heartbeat stored: what other processes judge this job's life by


def beat(conn: sqlite3.Connection, job_id: int, done: int, total: int | None, message: str | None) -> Beat:
    """Refresh the heartbeat and progress; say whether someone asked this job to cancel or took over its claim."""
    with transaction(conn):
        now = utc_now()  # taken holding the write lock, so no other job judged this job by an older heartbeat since
        conn.execute(
            "UPDATE jobs SET heartbeat_at = ?, done = ?, total = ?, message = ? WHERE id = ?",
            (now, done, total, message, job_id),
        )
        row = conn.execute("SELECT cancel_requested, status FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return Beat(
        _cancel_level(row[0]) if row else 0, row is None or row[1] == "running", now
    )  # a row gone: nothing to act on


def confirm_claim(conn: sqlite3.Connection, job_id: int, unit: str) -> tuple[bool, bool, str]:
    """In one transaction: refresh the job's heartbeat and say whether it still holds `unit` and is still running
    — (held, running, the heartbeat written). Another job may have taken the unit over (or, a resume of its run,
    marked it interrupted) while this one's heartbeat was stale."""
    with transaction(conn):
        now = utc_now()
        conn.execute("UPDATE jobs SET heartbeat_at = ? WHERE id = ?", (now, job_id))
        holder = conn.execute("SELECT job_id FROM work_claims WHERE unit = ?", (unit,)).fetchone()
        status = conn.execute("SELECT status FROM jobs WHERE id = ?", (job_id,)).fetchone()
    running = status is None or status[0] == "running"
    return running and bool(holder and holder[0] == job_id), running, now


def finish_job(
    conn: sqlite3.Connection,
    job_id: int,
    status: str,
    stop_reason: str | None,
    done: int,
    total: int | None,
    message: str | None,
) -> None:
    now = utc_now()
    with transaction(conn):
        conn.execute(
            "UPDATE jobs SET status = ?, stop_reason = ?, finished_at = ?, heartbeat_at = ?, done = ?, total = ?, "
            "message = ? WHERE id = ?",
            (status, stop_reason, now, now, done, total, message, job_id),
        )


def mark_interrupted(conn: sqlite3.Connection, job_id: int, reason: str) -> None:
    """Record that a job died without saying so (its heartbeat stopped); the caller holds the transaction."""
    conn.execute(
        "UPDATE jobs SET status = 'interrupted', stop_reason = ?, finished_at = heartbeat_at "
        "WHERE id = ? AND status = 'running'",
        (reason, job_id),
    )


def job_rows(conn: sqlite3.Connection, limit: int, include_finished: bool) -> list[sqlite3.Row]:
    where = "" if include_finished else "WHERE status = 'running'"
    return conn.execute(
        f"SELECT {JOB_COLUMNS} FROM jobs {where} ORDER BY (status = 'running') DESC, id DESC LIMIT ?", (limit,)
    ).fetchall()


def job_row(conn: sqlite3.Connection, job_id: int) -> sqlite3.Row | None:
    return conn.execute(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()


def _cancel_level(value) -> int:
    """A stored cancel_requested as 0, STOP or STOP_NOW (another program's value is read as STOP)."""
    if not value:
        return 0
    return STOP_NOW if value == STOP_NOW else STOP


def set_cancel_requested(conn: sqlite3.Connection, job_id: int, *, now: bool = False) -> bool:
    """Never lowers a request: STOP asked after STOP_NOW stays STOP_NOW (any other stored value, another
    program's, is replaced)."""
    level = STOP_NOW if now else STOP
    with transaction(conn):
        cursor = conn.execute(
            "UPDATE jobs SET cancel_requested = CASE WHEN cancel_requested = ? THEN ? ELSE ? END "
            "WHERE id = ? AND status = 'running'",
            (STOP_NOW, STOP_NOW, level, job_id),
        )
    return cursor.rowcount > 0


# --------------------------------------------------------------------------------------------------
# Units claimed by running jobs


def claim_holders(conn: sqlite3.Connection, units: list[str]) -> dict[str, sqlite3.Row]:
    """unit → the jobs row of the job holding it, for the units that are claimed."""
    holders = {}
    for start in range(0, len(units), 500):
        batch = units[start : start + 500]
        rows = conn.execute(
            f"SELECT c.unit AS unit, {', '.join('j.' + c.strip() for c in JOB_COLUMNS.split(','))} "
            f"FROM work_claims c JOIN jobs j ON j.id = c.job_id WHERE c.unit IN ({','.join('?' * len(batch))})",
            batch,
        )
        holders.update({row["unit"]: row for row in rows})
    return holders


def claim_units(conn: sqlite3.Connection, units: list[str], job_id: int) -> None:
    """Claim (or take over) units for a job; the caller holds the transaction and has checked the holders."""
    now = utc_now()
    conn.executemany(
        "INSERT INTO work_claims(unit, job_id, claimed_at) VALUES (?, ?, ?) "
        "ON CONFLICT(unit) DO UPDATE SET job_id = excluded.job_id, claimed_at = excluded.claimed_at",
        [(unit, job_id, now) for unit in units],
    )


def release_claim(conn: sqlite3.Connection, unit: str, job_id: int) -> None:
    conn.execute("DELETE FROM work_claims WHERE unit = ? AND job_id = ?", (unit, job_id))


def release_job_claims(conn: sqlite3.Connection, job_id: int) -> None:
    """At a job's end. When they cannot be released (a full disk) they are left: a claim whose job has ended is
    taken over like any other stale one, and the job's outcome is what to tell, not this."""
    try:
        with transaction(conn):
            conn.execute("DELETE FROM work_claims WHERE job_id = ?", (job_id,))
    except sqlite3.Error as error:
        log.warning("job %d: its claims were not released (%s); they lapse as it ends", job_id, error)
