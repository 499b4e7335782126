"""A job whose heartbeat lapsed (its process stopped with Ctrl+Z, a suspended laptop, a machine too busy to let it
write) can have its claims taken over by another job; when it goes on, it must not pay again for what that job
took. Before the fix a rewrite stopped for 12 s beside a second one sent 64 requests for 60 items, and the stopped
job's next requests went out although their units were no longer its own."""

import asyncio
import os
import time

import pytest

from spokenbench.core.jobs import loop as job_loop
from spokenbench.core.jobs import registry as jobs
from spokenbench.core.jobs.remote import ProviderLimiter
from spokenbench.core.store import database

UNITS = 6


def _other_job(project) -> int:
    """A live job of another process's kind (its pid is this test's, so it counts as alive)."""
    now = database.utc_now()
    with database.transaction(project.conn) as conn:
        return conn.execute(
            "INSERT INTO jobs(kind, label, project, pid, host, started_at, heartbeat_at) VALUES "
            "('demo', 'took over', '/x', ?, ?, ?, ?)",
            (os.getpid(), jobs.THIS_HOST, now, now),
        ).lastrowid


def _run_with_a_lapse(project, monkeypatch, *, take_over: str | None, sent: list | None = None):
    """Unit 0 keeps the database's write lock for 3 lease lengths, so the job's own heartbeat cannot be written
    (a real lapse); in the same transaction another job takes over units 1-5 (`take_over="units"`) or, as a
    resume of its run does, marks the job interrupted (`"job"`)."""
    sent = [] if sent is None else sent
    monkeypatch.setattr(jobs, "HEARTBEAT_S", 0.05)
    monkeypatch.setattr(jobs, "LEASE_S", 0.4, raising=False)
    other = _other_job(project)

    def hold_the_lock_and_maybe_take_over():
        conn = database.connect(project.db_path)
        try:
            with database.transaction(conn):
                time.sleep(3 * jobs.LEASE_S)
                if take_over == "units":
                    conn.execute("UPDATE work_claims SET job_id = ? WHERE unit != 'demo:0'", (other,))
                if take_over == "job":
                    conn.execute("UPDATE jobs SET status = 'interrupted' WHERE id = ?", (progress.job_id,))
        finally:
            conn.close()

    async def work(n):
        async def call():
            sent.append(n)
            return n

        if n == 0:
            await asyncio.to_thread(hold_the_lock_and_maybe_take_over)
        await loop.remote(call, limiter)
        return lambda conn: conn.execute("INSERT INTO project_meta(key, value) VALUES (?, 'unit')", (f"unit-{n}",))

    limiter = ProviderLimiter("stub", concurrency=1)
    claims = job_loop.UnitClaims("demo", key=str)
    with jobs.tracked_job(project.path, "demo", "lapsing") as progress:
        loop = job_loop.JobLoop(project.db_path, progress, concurrency=1, claims=claims, claim_chunk=UNITS)
        result = asyncio.run(loop.run(range(UNITS), work))
        lapses = progress.lease.lapses if hasattr(progress, "lease") else None
    held = project.conn.execute("SELECT unit, job_id FROM work_claims ORDER BY unit").fetchall()
    return sent, result, loop, lapses, held, other


def test_units_taken_over_while_the_heartbeat_lapsed_are_not_sent_again(project, monkeypatch):
    sent, result, loop, lapses, held, other = _run_with_a_lapse(project, monkeypatch, take_over="units")
    assert sent == [0], "nothing another job took over was paid for again"
    assert lapses >= 1, "the held lock stopped the heartbeat for longer than the lease"
    assert result.completed == 1 and loop.skipped == UNITS - 1
    assert [tuple(row) for row in held] == [(f"demo:{n}", other) for n in range(1, UNITS)], "its claims untouched"
    stored = {row[0] for row in project.conn.execute("SELECT key FROM project_meta WHERE value = 'unit'")}
    assert stored == {"unit-0"}


def test_units_still_held_after_a_lapse_are_confirmed_and_sent(project, monkeypatch):
    sent, result, loop, lapses, held, _other = _run_with_a_lapse(project, monkeypatch, take_over=None)
    assert lapses >= 1
    assert sent == list(range(UNITS)) and result.completed == UNITS and loop.skipped == 0
    assert held == [], "every claim released with its unit's result"


def test_a_job_whose_run_a_resume_took_over_during_the_lapse_sends_nothing_more_and_says_why(project, monkeypatch):
    sent = []
    with pytest.raises(jobs.TakenOver, match="another job took over its work while its process was stopped"):
        _run_with_a_lapse(project, monkeypatch, take_over="job", sent=sent)
    assert sent == [], "not even unit 0, whose claim it still held: the run is the resume's now"
    status, reason = project.conn.execute("SELECT status, stop_reason FROM jobs WHERE label = 'lapsing'").fetchone()
    assert (status, reason) == ("interrupted", jobs.TAKEN_OVER)


def test_a_lease_lapses_when_its_heartbeat_is_written_late_and_marks_taken_during_a_lapse_hold_nothing():
    lease = jobs.Lease()
    mark = lease.mark()
    assert mark == 0 and lease.holds(mark)
    on_time = time.time() + jobs.LEASE_S / 2
    lease.renewed(_stamp(on_time))
    assert lease.lapses == 0 and lease.holds(mark)
    late = on_time + jobs.LEASE_S * 2
    lease.renewed(_stamp(late))
    assert lease.lapses == 1 and not lease.holds(mark), "a claim made before the lapse must be confirmed"
    lease.written_at = time.time() - 2 * jobs.LEASE_S  # no heartbeat written for a while: a lapse going on now
    assert lease.mark() == -1 and not lease.holds(lease.mark())
    lease.renewed(_stamp(time.time()))
    now_mark = lease.mark()
    assert lease.lapses == 2 and lease.holds(now_mark)
    assert lease.renewed(_stamp(time.time() - 3 * jobs.LEASE_S)), "a clock set back counts as a lapse"
    assert not lease.holds(now_mark)


def _stamp(seconds: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="milliseconds")


@pytest.mark.parametrize("ahead_s", [2 * 3600.0, 10_000_000.0])
def test_a_heartbeat_far_ahead_of_the_clock_does_not_keep_a_job_live(project, ahead_s, cli):
    """A crafted row dated 2300 (or a machine whose clock is hours off) showed its job 'running' and its claims
    held until that time came: every evaluation needing one of its requests waited for it."""
    job = _foreign_job(project, ahead_s)
    info = jobs.get_job(project.conn, job)
    assert info.status == "interrupted" and not info.is_live
    assert "ahead of this machine's clock" in info.stop_reason
    assert job_loop.live_claim_holder(project.conn, "request:k", job + 1) is None, "its claim can be taken over"
    listed = cli("jobs", project.path)
    assert listed.code == 0 and f"job {job}: stopped without finishing (its heartbeat is " in listed.out


def test_a_heartbeat_a_little_ahead_is_a_live_job_on_a_machine_whose_clock_runs_ahead(project):
    job = _foreign_job(project, 60.0)
    info = jobs.get_job(project.conn, job)
    assert info.status == "running" and info.is_live
    assert job_loop.live_claim_holder(project.conn, "request:k", job + 1).id == job, "its claim is respected"


def _foreign_job(project, ahead_s: float) -> int:
    """A running job of another machine whose heartbeat is `ahead_s` ahead of this one's clock, holding a claim."""
    stamp = _stamp(time.time() + ahead_s)
    with database.transaction(project.conn) as conn:
        job = conn.execute(
            "INSERT INTO jobs(kind, label, project, pid, host, started_at, heartbeat_at) VALUES "
            "('evaluate', 'from elsewhere', '/x', 4242, 'a-colleagues-laptop', ?, ?)",
            (stamp, stamp),
        ).lastrowid
        conn.execute("INSERT INTO work_claims(unit, job_id, claimed_at) VALUES ('request:k', ?, ?)", (job, stamp))
    return job


def test_a_stopped_process_is_shown_as_paused(project):
    """A same-host job whose process is stopped (Ctrl+Z) is not said to have stopped without finishing."""
    import signal
    import subprocess
    import sys

    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        sleeper.send_signal(signal.SIGSTOP)
        old = _stamp(time.time() - 3 * jobs.STALE_AFTER_S)
        with database.transaction(project.conn) as conn:
            job = conn.execute(
                "INSERT INTO jobs(kind, label, project, pid, host, started_at, heartbeat_at) VALUES "
                "('rewrite', 'paused', '/x', ?, ?, ?, ?)",
                (sleeper.pid, jobs.THIS_HOST, old, old),
            ).lastrowid
        deadline = time.monotonic() + 5
        while (info := jobs.get_job(project.conn, job)).stop_reason.startswith("stopped without"):
            assert time.monotonic() < deadline, info.stop_reason  # the stop reaches the process's state
            time.sleep(0.02)
        assert info.status == "interrupted" and info.stop_reason.startswith("paused: its process is stopped")
    finally:
        sleeper.kill()
        sleeper.wait()
