"""Jobs every process can see (core/jobs/registry.py): recording, heartbeat, cancel from elsewhere, interrupted jobs,
claims, and the shared loop's commit, stop and cancel behaviour."""

import asyncio
import json
import signal
import sqlite3
import statistics
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from spokenbench.core.cli.resume import ResumeRefused, plan_resume
from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs import batch_writer
from spokenbench.core.jobs import loop as job_loop
from spokenbench.core.jobs import registry as jobs
from spokenbench.core.store import Project, database
from spokenbench.core.store.changes import changed_tables, table_versions

HOLD_JOB = textwrap.dedent(
    """
    import sys, time
    from spokenbench.core.jobs import registry as jobs
    jobs.set_invocation(["synthesize", sys.argv[1], "--tts", "espeak"])
    with jobs.tracked_job(sys.argv[1], "synthesize", "holding", claim="synthesis") as progress:
        progress.report(2, 5, "working")
        print("started", flush=True)
        while not progress.cancelled:
            time.sleep(0.05)
        print("cancel seen", flush=True)
    """
)


def start_holder(project_path) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD_JOB, str(project_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "started", process.stderr.read()
    return process


def wait_for(condition, timeout=5.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("condition not met in time")


@pytest.mark.slow
def test_a_job_is_visible_with_its_progress_and_its_outcome(project):
    with jobs.tracked_job(project.path, "rewrite", "rewriting 3 items", total=3) as progress:
        [job] = jobs.list_jobs(project.conn)
        assert job.status == "running" and job.kind == "rewrite" and job.total == 3 and job.is_live
        progress.report(2, 3, "item 2")
        wait_for(lambda: jobs.list_jobs(project.conn)[0].done == 2, timeout=3)
    [job] = jobs.list_jobs(project.conn)
    assert job.status == "finished" and job.finished_at
    with pytest.raises(ResumeRefused, match="is finished"):
        plan_resume(job, project.path)


@pytest.mark.slow
def test_a_failing_job_records_why(project):
    with pytest.raises(SpokenBenchError), jobs.tracked_job(project.path, "transcribe", "asr"):
        raise SpokenBenchError("the ASR key was rejected")
    [job] = jobs.list_jobs(project.conn)
    assert job.status == "failed" and job.stop_reason == "the ASR key was rejected"


@pytest.mark.slow
def test_a_job_in_another_process_is_seen_cancelled_from_here_and_stops(project):
    holder = start_holder(project.path)
    try:
        [job] = jobs.list_jobs(project.conn, include_finished=False)
        assert job.pid == holder.pid and job.label == "holding"
        wait_for(lambda: jobs.list_jobs(project.conn)[0].done == 2, timeout=3)
        started = time.monotonic()
        assert jobs.request_cancel(project.conn, job.id)
        assert holder.stdout.readline().strip() == "cancel seen"
        assert holder.wait(timeout=5) == 0
        assert time.monotonic() - started < 2.5, "a cancel request is seen within about a second"
    finally:
        holder.kill()
    [job] = jobs.list_jobs(project.conn)
    assert job.status == "cancelled"
    assert not jobs.request_cancel(project.conn, job.id), "a finished job cannot be cancelled"


@pytest.mark.slow
def test_a_killed_job_shows_as_interrupted_and_its_claim_can_be_taken_over(project):
    holder = start_holder(project.path)
    with pytest.raises(jobs.JobClaimed, match=f"pid {holder.pid}"):
        with jobs.tracked_job(project.path, "synthesize", "second", claim="synthesis"):
            pass
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    [job] = jobs.list_jobs(project.conn)
    assert job.status == "interrupted" and "no heartbeat" in job.stop_reason
    assert plan_resume(job, project.path).argv == ["synthesize", str(project.path.resolve()), "--tts=espeak"]
    with jobs.tracked_job(project.path, "synthesize", "second", claim="synthesis"):
        statuses = {j.label: j.status for j in jobs.list_jobs(project.conn)}
    assert statuses == {"holding": "interrupted", "second": "running"}
    stored = project.conn.execute("SELECT status FROM jobs WHERE label = 'holding'").fetchone()[0]
    assert stored == "interrupted", "taking the claim over records the dead job as interrupted"


def test_a_job_on_another_machine_is_interrupted_only_when_its_heartbeat_is_stale(project, monkeypatch):
    with database.transaction(project.conn) as conn:
        conn.execute(
            "INSERT INTO jobs(kind, label, project, pid, host, started_at, heartbeat_at) VALUES "
            "('evaluate', 'remote', '/x', 1, 'another-host', ?, ?)",
            (database.utc_now(), database.utc_now()),
        )
    assert jobs.list_jobs(project.conn)[0].status == "running"
    monkeypatch.setattr(jobs, "STALE_AFTER_S", -1.0)
    assert jobs.list_jobs(project.conn)[0].status == "interrupted"


@pytest.mark.slow
def test_evaluation_resume_command_adds_resume(project):
    jobs.set_invocation(
        ["evaluate", "P", "--model", "simulated:steady", "--base-url", "https://u:secret@h/v1", "--mode", "text"]
        + ["--prompt", "standard"]
    )
    try:
        with pytest.raises(KeyboardInterrupt), jobs.tracked_job(project.path, "evaluate", "run"):
            raise KeyboardInterrupt
    finally:
        jobs.set_invocation(None)
    [job] = jobs.list_jobs(project.conn)
    assert job.status == "cancelled" and job.stop_reason == "interrupted (Ctrl-C)"
    assert plan_resume(job, project.path).argv[-1] == "--resume" and "secret" not in json.dumps(job.argv)


# --------------------------------------------------------------------------------------------------
# The shared loop


def insert_marker(n):
    return lambda conn: conn.execute("INSERT INTO project_meta(key, value) VALUES (?, 'unit')", (f"unit-{n}",))


def stored_units(project) -> set[str]:
    return {row[0] for row in project.conn.execute("SELECT key FROM project_meta WHERE value = 'unit'")}


@pytest.mark.slow
def test_the_loop_bounds_concurrency_and_counts_committed_units(project):
    in_flight, peak, reports = 0, 0, []

    async def work(n):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.002)
        in_flight -= 1
        return insert_marker(n)

    loop = job_loop.JobLoop(project.db_path, Progress(lambda d, t, m: reports.append((d, t))), concurrency=3)
    result = asyncio.run(loop.run(range(40), work))
    assert result.completed == 40 and result.stop_reason is None and peak == 3
    assert len(stored_units(project)) == 40
    assert reports[-1] == (40, 40) and all(d <= 40 for d, _ in reports)


@pytest.mark.slow
def test_a_failing_unit_stops_the_loop_after_committing_what_finished(project):
    async def work(n):
        if n == 5:
            await asyncio.sleep(0.05)
            raise RuntimeError("a bug in unit 5")
        return insert_marker(n)

    loop = job_loop.JobLoop(project.db_path, concurrency=1)
    with pytest.raises(RuntimeError, match="unit 5"):
        asyncio.run(loop.run(range(20), work))
    assert stored_units(project) == {f"unit-{n}" for n in range(5)}


def test_stop_loop_ends_quietly_with_its_reason(project):
    async def work(n):
        if n == 3:
            raise job_loop.StopLoop("budget")
        return insert_marker(n)

    result = asyncio.run(job_loop.JobLoop(project.db_path, concurrency=1).run(range(10), work))
    assert result.stop_reason == "budget" and result.completed == 3


@pytest.mark.slow
def test_cancel_stops_within_a_poll_and_keeps_finished_units(project):
    progress = Progress()

    async def work(n):
        if n == 10:
            progress.cancel()
        await asyncio.sleep(0.01 if n < 10 else 30)
        return insert_marker(n)

    started = time.monotonic()
    with pytest.raises(Cancelled):
        asyncio.run(job_loop.JobLoop(project.db_path, progress, concurrency=2).run(range(100), work))
    assert time.monotonic() - started < 2
    assert {f"unit-{n}" for n in range(9)} <= stored_units(project) and len(stored_units(project)) < 12


@pytest.mark.slow
def test_remote_calls_stop_going_out_once_the_job_stops(project):
    """Unit 1 waits for the provider's only slot while unit 0 is answered and stops the job: unit 1 is never sent."""
    from spokenbench.core.jobs.remote import ProviderLimiter

    sent = []

    async def work(n):
        async def call():
            sent.append(n)
            await asyncio.sleep(0.05)
            return n

        await loop.remote(call, limiter)
        if n == 0:
            raise job_loop.StopLoop("budget")
        return insert_marker(n)

    limiter = ProviderLimiter("stub", concurrency=1)
    loop = job_loop.JobLoop(project.db_path, concurrency=2)
    result = asyncio.run(loop.run(range(10), work))
    assert result.stop_reason == "budget" and sent == [0] and result.completed == 0


def test_a_write_that_fails_stops_the_job_with_a_clear_error(project):
    async def work(n):
        return lambda conn: conn.execute("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(SpokenBenchError, match="storing results failed"):
        asyncio.run(job_loop.JobLoop(project.db_path, concurrency=1).run(range(3), work))


# --------------------------------------------------------------------------------------------------
# The store across threads and processes


def test_a_connection_refuses_use_from_another_thread(project):
    errors = []
    thread = threading.Thread(target=lambda: errors.append(_try_query(project)))
    thread.start()
    thread.join()
    assert isinstance(errors[0], sqlite3.ProgrammingError)


def _try_query(project):
    try:
        project.conn.execute("SELECT 1")
    except sqlite3.ProgrammingError as error:
        return error
    return None


@pytest.mark.slow
def test_change_counters_tell_what_another_process_changed(project):
    before = table_versions(project.conn)
    code = (
        "import sys; from spokenbench.core.store import opened\n"
        "from spokenbench.core.jobs.registry import tracked_job\n"
        "with tracked_job(sys.argv[1], 'demo', 'x'): pass\n"
    )
    subprocess.run([sys.executable, "-c", code, str(project.path)], check=True)
    assert changed_tables(before, table_versions(project.conn)) == {"jobs"}
    other = Project.open(project.path)
    try:
        with other.transaction() as conn:
            conn.execute(
                "INSERT INTO items(source, source_id, language, question, created_at) VALUES ('s', '1', 'en', 'q?', 'now')"
            )
    finally:
        other.close()
    assert "items" in changed_tables(before, table_versions(project.conn))


def test_claimed_units_of_a_live_job_are_skipped_and_a_dead_jobs_are_taken_over(project):
    """Units 0-4 are held by a live job elsewhere, 5-9 by a job whose process died; 10-14 are already stored."""
    holder = start_holder(project.path)
    try:
        with database.transaction(project.conn) as conn:
            live_job = conn.execute("SELECT id FROM jobs WHERE pid = ?", (holder.pid,)).fetchone()[0]
            conn.execute(
                "INSERT INTO jobs(kind, label, project, pid, host, started_at, heartbeat_at) "
                "VALUES ('demo', 'dead', '/x', 999999999, ?, ?, ?)",
                (jobs.THIS_HOST, database.utc_now(), database.utc_now()),
            )
            dead_job = conn.execute("SELECT max(id) FROM jobs").fetchone()[0]
            conn.executemany(
                "INSERT INTO work_claims(unit, job_id, claimed_at) VALUES (?, ?, 'now')",
                [(f"demo:{n}", live_job if n < 5 else dead_job) for n in range(10)],
            )
        worked = []

        async def work(n):
            worked.append(n)
            return insert_marker(n)

        claims = job_loop.UnitClaims(
            "demo", key=str, already_done=lambda conn, keys: {k for k in keys if 10 <= int(k) < 15}
        )
        with jobs.tracked_job(project.path, "demo", "sharing") as progress:
            loop = job_loop.JobLoop(project.db_path, progress, concurrency=2, claims=claims, claim_chunk=4)
            result = asyncio.run(loop.run(range(20), work))
        assert sorted(worked) == list(range(5, 10)) + list(range(15, 20))
        assert result.completed == 10 and loop.skipped == 10
        held = project.conn.execute("SELECT unit FROM work_claims ORDER BY unit").fetchall()
        assert [row[0] for row in held] == [f"demo:{n}" for n in range(5)], "only the live job's claims remain"
    finally:
        holder.kill()
        holder.wait()


def test_save_now_commits_a_burst_in_few_transactions_without_lingering(project):
    """What was paid for is on disk when `save_now` returns; a burst shares commits instead of one fsync each."""
    written, elapsed = [], []

    async def work(n):
        started = time.perf_counter()
        await loop.save_now(lambda conn, n=n: written.append(n))
        elapsed.append(time.perf_counter() - started)
        return None

    loop = job_loop.JobLoop(project.db_path, concurrency=50)
    asyncio.run(loop.run(range(50), work))
    assert sorted(written) == list(range(50))
    assert loop.durable.commits <= 5 and max(elapsed) < 0.5


def test_a_durable_write_that_fails_stops_the_job(project):
    async def work(n):
        await loop.save_now(lambda conn: conn.execute("INSERT INTO no_such_table VALUES (1)"))

    loop = job_loop.JobLoop(project.db_path, concurrency=2)
    with pytest.raises(batch_writer.DurableWriteFailed, match="no_such_table"):
        asyncio.run(loop.run(range(4), work))


def test_a_core_job_inside_a_tracked_job_on_the_same_project_is_one_job(project):
    """The app's JobOp runs a core job that tracks itself: one row, not two."""
    with jobs.tracked_job(project.path, "transcribe", "from the app") as outer:
        with jobs.tracked_job(project.path, "transcribe", "core's own", outer) as inner:
            assert inner is outer
    assert [job.label for job in jobs.list_jobs(project.conn)] == ["from the app"]


@pytest.mark.slow
def test_units_finishing_faster_than_they_are_stored_leave_the_write_lock_to_other_writers(project):
    """12,000 instant units (a simulated listener's answers) whose writes do some Python work: while they are stored,
    no commit holds more than the backlog limit's writes, so another writer — a heartbeat, a rating in the app —
    still gets the write lock soon. Before the workers waited for a long backlog, one 2,000-write commit held the
    lock for 20 s (the loop took the GIL from the writer holding it) and the job was shown as interrupted while it
    ran. The write-count bound is exact; the wait is timed on a shared machine, so its bound is loose."""
    import threading

    UNITS = 12_000

    def slow_write(n):
        def write(conn):  # an answer's rows: a few statements, each handing the GIL over and taking it back
            for part in ("a", "b", "c"):
                conn.execute("INSERT INTO project_meta(key, value) VALUES (?, 'part')", (f"unit-{n}-{part}",))
            conn.execute("INSERT INTO project_meta(key, value) VALUES (?, 'unit')", (f"unit-{n}",))

        return write

    async def work(n):
        sum(i * i for i in range(5_000))  # choosing and recording an answer: the loop keeps the GIL busy
        return slow_write(n)

    finished = threading.Event()

    loop = job_loop.JobLoop(project.db_path, concurrency=8)

    def run() -> None:
        try:
            asyncio.run(loop.run(range(UNITS), work))
        finally:
            finished.set()

    runner = threading.Thread(target=run)
    runner.start()
    waits = []
    other = database.connect(project.db_path)
    try:
        while not finished.is_set():
            started = time.monotonic()
            with database.transaction(other):
                other.execute("INSERT OR REPLACE INTO project_meta(key, value) VALUES ('beat', 'x')")
            waits.append(time.monotonic() - started)
            time.sleep(0.05)
    finally:
        runner.join(120)
        other.close()
    assert len(stored_units(project)) == UNITS
    # workers wait while more than the limit is uncommitted, and each puts at most one unit before it checks
    assert loop.writer.largest_batch <= job_loop.WRITER_BACKLOG + 8, loop.writer.largest_batch
    # measured side by side (the same 12,000 units outside pytest): at most 0.08-0.14 s with the workers
    # waiting idle for the commit, 0.95-1.05 s when they polled the queue, 2.3-2.7 s with no limit
    assert len(waits) > 5, waits
    assert statistics.median(waits) < 0.2 and max(waits) < 1.5, f"the other writer waited up to {max(waits):.2f} s"


def test_a_stop_now_request_reaches_the_jobs_progress_and_is_never_lowered(project):
    with jobs.tracked_job(project.path, "evaluate", "sending") as progress:
        [job] = jobs.list_jobs(project.conn)
        assert jobs.request_cancel(project.conn, job.id, now=True)
        assert jobs.request_cancel(project.conn, job.id)  # a plain cancel after it keeps "now"
        wait_for(lambda: progress.stopping_now, timeout=3)
        [job] = jobs.list_jobs(project.conn)
        assert job.cancel_requested and job.stop_now_requested and progress.cancelled


def test_a_plain_cancel_request_does_not_stop_now(project):
    with jobs.tracked_job(project.path, "evaluate", "sending") as progress:
        [job] = jobs.list_jobs(project.conn)
        assert jobs.request_cancel(project.conn, job.id)
        wait_for(lambda: progress.cancelled, timeout=3)
        time.sleep(jobs.HEARTBEAT_S * 1.5)
        assert not progress.stopping_now and not jobs.list_jobs(project.conn)[0].stop_now_requested


def test_now_without_cancel_is_refused_naming_both(cli, project):
    result = cli("jobs", project.path, "--now")
    assert result.code == 2 and "--now goes with --cancel JOB" in result.err


def _one_remote_unit(project, call, *, paid=True, policy=None, then=None):
    """A loop of one unit that sends `call` through `remote` (then, if given, `then()` and `call` again), cancelled
    0.1 s after it starts; returns (the Cancelled raised, seconds from the cancel to the loop's end)."""
    from spokenbench.core.jobs.remote import ProviderLimiter, RetryPolicy

    progress = Progress()
    loop = job_loop.JobLoop(project.db_path, progress, concurrency=1)
    limiter = ProviderLimiter("stub")

    async def work(_unit):
        await loop.remote(call, limiter, policy or RetryPolicy(max_attempts=1), paid=paid)
        if then is not None:
            then()
            await loop.remote(call, limiter, policy or RetryPolicy(max_attempts=1), paid=paid)

    async def run():
        asyncio.get_running_loop().call_later(0.1, progress.cancel)
        await loop.run([1], work)

    with pytest.raises(Cancelled) as cancelled:
        asyncio.run(run())
    return cancelled.value, progress


def test_a_request_out_that_fails_after_the_cancel_is_not_tried_again_nor_waited_for(project):
    """Its retry's backoff (here 8 s; a server's Retry-After may ask 300) is not slept through: the job stops."""
    from spokenbench.core.jobs.remote import RetryPolicy

    sent = []

    async def timing_out():
        sent.append(time.monotonic())
        await asyncio.sleep(0.3)
        raise TimeoutError("the provider did not answer")

    started = time.monotonic()
    _one_remote_unit(project, timing_out, policy=RetryPolicy(max_attempts=3, base_delay_s=8.0, jitter=0.0))
    assert len(sent) == 1 and time.monotonic() - started < 2.0


def test_a_cancel_does_not_wait_for_unpaid_work(project):
    """This machine's own model or a free engine: nothing is paid, nothing is waited for."""

    async def slow_local_answer():
        await asyncio.sleep(30)

    started = time.monotonic()
    cancelled, _ = _one_remote_unit(project, slow_local_answer, paid=False)
    assert time.monotonic() - started < 2.0 and str(cancelled) == ""


def test_a_cancel_waits_for_the_request_out_but_never_sends_the_next(project):
    """A unit with two requests in a row (a transcript, then the answer): the first, out at the cancel, is waited
    for; before_next_request stops the unit before the second."""
    sent = []

    async def answered_later():
        sent.append(time.monotonic())
        await asyncio.sleep(0.5)
        return "answer"

    cancelled, _ = _one_remote_unit(project, answered_later, then=job_loop.before_next_request)
    assert len(sent) == 1 and "the answers to 1 request(s) already sent were waited for and kept" in str(cancelled)


def test_stop_now_overrides_a_cancel_request_another_program_stored(project):
    with jobs.tracked_job(project.path, "evaluate", "sending") as progress:
        [job] = jobs.list_jobs(project.conn)
        with database.transaction(project.conn) as conn:
            conn.execute("UPDATE jobs SET cancel_requested = 7 WHERE id = ?", (job.id,))
        assert jobs.request_cancel(project.conn, job.id, now=True)
        wait_for(lambda: progress.stopping_now, timeout=3)
        assert jobs.list_jobs(project.conn)[0].stop_now_requested


@pytest.mark.parametrize(
    "message, offered",
    [
        ("stopping: waiting for the answers to 4 request(s) already sent (paid for)", True),
        ("stopping: waiting for room on the disk (/p) to store 3 paid result(s) held; free some space", True),
        ("paused: the disk is full (/p): 3 paid result(s) held, stored once there is room; free some space", False),
        ("2.0/s ETA 0:10", False),
        (None, False),
    ],
)
def test_stop_now_is_offered_while_a_cancel_waits_to_keep_what_was_paid_for(message, offered):
    from spokenbench.core.jobs.loop import offers_stop_now

    assert offers_stop_now(message) is offered
