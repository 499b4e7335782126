"""A disk that fills while a paid job has requests out (a download filling a laptop's disk, a project on a small
stick): the job holds what it paid for, sends nothing more, says it is paused, and stores it all once the user
frees some space — before, it stopped with "the disk is full" and the next run paid again for every answer it
could not store. Stopped now (a second Ctrl-C), it says how many it discarded. The disk is a real one: a tmpfs
(mounting needs root; the tests are skipped where it is not allowed)."""

import asyncio
import collections
import contextlib
import os
import signal
import sqlite3
import subprocess
import threading
import time

import pytest
from paid_commands import KINDS, SPOKENBENCH
from qc_support import SECRET
from stub_server import StubServer
from support import as_from_a_terminal, entered_or_skipped, fill_disk, tmpfs

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.processes import THIS_HOST
from spokenbench.core.jobs import batch_writer, registry
from spokenbench.core.jobs.batch_writer import BatchWriter
from spokenbench.core.jobs.loop import JobLoop, UnitClaims
from spokenbench.core.store import Project, database

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")

ITEMS, CONCURRENCY, ANSWER_S = 12, 4, 0.5
ENV = dict(os.environ, NVIDIA_API_KEY=SECRET, OPENAI_API_KEY=SECRET)


@pytest.fixture
def small_disk(tmp_path):
    with contextlib.ExitStack() as stack:
        yield entered_or_skipped(stack, tmpfs(tmp_path / "disk", "64m"))


def started_with_requests_out(kind, small_disk, server, **popen):
    command, route = KINDS[kind](small_disk, ITEMS, server, CONCURRENCY, ANSWER_S)
    job = subprocess.Popen(
        [SPOKENBENCH, *command], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
    )
    deadline = time.monotonic() + 60
    while len(server.requests_to(route)) < CONCURRENCY:
        assert time.monotonic() < deadline and job.poll() is None, job.communicate()
        time.sleep(0.01)
    return job, command, route


def paid_twice(server, route) -> tuple[int, int]:
    bodies = collections.Counter(request.body for request in server.requests_to(route))
    return sum(count - 1 for count in bodies.values()), sum(bodies.values())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rewrite", "synthesize", "evaluate"])
def test_a_paid_job_on_a_disk_that_fills_waits_for_room_and_pays_for_nothing_twice(small_disk, kind):
    with StubServer() as server:
        job, _command, route = started_with_requests_out(kind, small_disk, server)
        filler = fill_disk(small_disk)
        time.sleep(2 * ANSWER_S + batch_writer.ROOM_POLL_S)  # every answer is back, none could be stored
        assert job.poll() is None, job.communicate()  # before: exit 2, "the disk is full"
        sent_while_full = len(server.requests_to(route))
        time.sleep(1.0)
        assert len(server.requests_to(route)) == sent_while_full  # nothing more goes out meanwhile
        filler.unlink()
        _out, err = job.communicate(timeout=120)
        assert job.returncode == 0, err
        assert paid_twice(server, route) == (0, ITEMS)
    assert "paused: the disk is full" in err and "room on the disk again" in err, err
    assert err.count("heartbeat not written") == 1, err  # said once, not every second


@pytest.mark.slow
def test_stopped_now_on_a_full_disk_it_says_what_it_discarded_and_a_resume_asks_for_only_that(small_disk):
    with StubServer() as server:
        job, command, route = started_with_requests_out("evaluate", small_disk, server, preexec_fn=as_from_a_terminal)
        filler = fill_disk(small_disk)
        time.sleep(2 * ANSWER_S + batch_writer.ROOM_POLL_S)
        job.send_signal(signal.SIGINT)
        time.sleep(1.0)
        assert job.poll() is None  # the first Ctrl-C waits for room: what is held was paid for
        job.send_signal(signal.SIGINT)
        _out, err = job.communicate(timeout=60)
        filler.unlink()
        assert job.returncode == 130, err
        assert "stopping: waiting for room on the disk to store" in err and "Ctrl+C again discards them" in err, err
        discarded = int(err.split("cancelled; ")[1].split(" result(s) held for room")[0])
        assert discarded > 0 and "a resume does them again" in err, err
        assert "error:" not in err, err  # the cancel is said, not a failure to mark the run on the full disk
        resumed = subprocess.run([SPOKENBENCH, *command], env=ENV, capture_output=True, text=True, timeout=120)
        assert resumed.returncode == 0, resumed.stderr
        assert paid_twice(server, route) == (discarded, ITEMS + discarded)


def test_an_unpaid_job_on_a_full_disk_still_stops_at_once_saying_so(small_disk, cli):
    """Offline speech costs nothing to make again: it stops with the message, as before, rather than wait."""
    project = small_disk / "project"
    Project.create(project).close()
    fill_disk(small_disk)
    started = time.monotonic()
    result = cli("synthesize", project, "--tts", "espeak", "--original-text")
    assert result.code == 2 and "the disk is full" in result.err and "free some space" in result.err, result.err
    assert time.monotonic() - started < 30


def test_a_writer_waiting_for_room_commits_once_there_is_some_and_one_that_is_not_fails(small_disk, monkeypatch):
    monkeypatch.setattr(batch_writer, "ROOM_POLL_S", 0.1)
    project = small_disk / "project"
    Project.create(project).close()
    db = project / "project.sqlite"

    def write(value):
        return lambda conn: conn.execute("INSERT INTO project_meta(key, value) VALUES (?, ?)", (value, "x" * 4000))

    told = threading.Event()
    failing, waiting = BatchWriter(db, linger_s=0.0), BatchWriter(db, linger_s=0.0)
    waiting.wait_for_room, waiting.on_full = True, told.set
    failing.start()
    waiting.start()  # each opens its connection first, as a job's writers do when it starts
    filler = fill_disk(small_disk)
    failing.put(write("refused"))
    failing.finish()
    assert failing.error is not None and "full" in str(failing.error)  # not told to wait: fails, as before

    for n in range(3):
        waiting.put(write(f"held {n}"))
    assert told.wait(10) and waiting.full is not None and waiting.unstored() == 3
    assert waiting.is_alive() and waiting.error is None
    filler.unlink()
    waiting.finish()
    assert waiting.error is None and waiting.full is None and waiting.unstored() == 0
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT count(*) FROM project_meta WHERE key LIKE 'held %'").fetchone()[0]
    assert stored == 3


def test_a_writer_told_to_give_up_fails_what_it_held(small_disk):
    project = small_disk / "project"
    Project.create(project).close()
    writer = BatchWriter(project / "project.sqlite", linger_s=0.0)
    writer.wait_for_room = True
    writer.start()
    fill_disk(small_disk)
    writer.put(lambda conn: conn.execute("INSERT INTO project_meta(key, value) VALUES ('k', ?)", ("x" * 4000,)))
    deadline = time.monotonic() + 10
    while writer.full is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    writer.give_up()
    writer.finish()
    assert writer.error is not None and writer.unstored() == 1


def test_a_live_job_whose_heartbeat_a_full_disk_stopped_is_said_to_wait_for_room(small_disk, monkeypatch, cli):
    """What the jobs panel and `spokenbench jobs` show: the job cannot write its heartbeat or its message."""
    project = Project.create(small_disk / "project")
    with database.transaction(project.conn) as conn:
        conn.execute(
            "INSERT INTO jobs(kind, label, project, pid, host, started_at, heartbeat_at) VALUES "
            "('evaluate', 'paid run', ?, ?, ?, ?, ?)",
            (str(project.path.resolve()), os.getpid(), THIS_HOST, database.utc_now(), database.utc_now()),
        )
    monkeypatch.setattr(registry, "STALE_AFTER_S", -1.0)
    assert registry.list_jobs(project.conn)[0].stop_reason.startswith("stopped without finishing")
    filler = fill_disk(small_disk)
    job = registry.list_jobs(project.conn)[0]
    assert job.status == "interrupted" and job.stop_reason.startswith("paused: the disk is full"), job.stop_reason
    assert "free some space" in job.stop_reason
    with pytest.raises(SpokenBenchError, match="paused on a full disk.*kill -INT"):  # not "nothing to cancel"
        registry.request_cancel(project.conn, job.id)
    listed = cli("jobs", project.path)
    assert "goes on by itself once there is room" in listed.out and "--resume" not in listed.out, listed.out
    filler.unlink()
    project.close()


@pytest.mark.parametrize("waits", [True, False], ids=["paid: waits for room", "free: fails"])
def test_units_whose_claim_a_full_disk_refused_are_done_once_there_is_room_never_skipped(
    small_disk, monkeypatch, waits
):
    """Claims are written a chunk at a time: one refused by the full disk ended its worker quietly, and the job
    said it had finished with the units of that chunk (and every later one that worker would have taken) undone."""
    monkeypatch.setattr(batch_writer, "ROOM_POLL_S", 0.1)
    project = Project.create(small_disk / "project")
    done, filled = [], []

    async def work(unit):
        if unit == 3 and not filled:  # the disk fills while unit 3 is worked on, and is emptied a second later
            filled.append(fill_disk(small_disk))
            threading.Timer(1.0, filled[0].unlink).start()
        await asyncio.sleep(0.02)
        done.append(unit)

    async def run():
        with registry.tracked_job(project.path, "rewrite", "units", None, total=40) as progress:
            loop = JobLoop(
                project.db_path, progress, concurrency=2, claims=UnitClaims("t", key=str), claim_chunk=4,
                wait_for_room=waits,
            )  # fmt: skip
            return await loop.run(list(range(40)), work)

    try:
        if waits:
            result = asyncio.run(run())
            assert (result.completed, result.stop_reason) == (40, None) and sorted(done) == list(range(40))
        else:
            with pytest.raises(Exception, match="full"):  # stops saying so, instead of "finished"
                asyncio.run(run())
            assert len(done) < 40
    finally:
        time.sleep(1.2)  # the filler gone before the disk is unmounted
        project.close()
