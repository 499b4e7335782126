"""Another process keeping the project's write lock (a command suspended with Ctrl+Z in another terminal while it
wrote, a colleague's script in a long transaction) is not a bug: the command that waited for it says so, names
the stopped processes of this machine that have the project open, exits 2 and has written nothing half-way."""

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spokenbench.core.foundation.environment_errors import explain_environment_error
from spokenbench.core.foundation.processes import process_state, stopped_processes_with_open
from spokenbench.core.store import Project

HOLDER = textwrap.dedent(
    """
    import os, signal, sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    if sys.argv[2] != "open":  # "open": the file open, no lock held
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE project_meta SET value = value")
    conn.execute("SELECT count(*) FROM project_meta").fetchone()
    print("holding", flush=True)
    if sys.argv[2] == "stop":
        os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(600)
    """
)


@pytest.fixture
def project(tmp_path):
    with Project.create(tmp_path / "proj") as p:
        yield p


@pytest.fixture
def holder(project):
    """holder("stop" | "run" | "open") → a process holding the project's write lock, stopped or running (or only
    having the project open)."""
    started = []

    def start(how: str) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(project.path / "project.sqlite"), how],
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout.readline().strip() == "holding"
        deadline = time.monotonic() + 10
        while how == "stop" and process_state(process.pid) not in ("T", "t"):
            assert time.monotonic() < deadline, "the holder did not stop"
            time.sleep(0.01)
        return process

    yield start
    for process in started:
        process.send_signal(signal.SIGKILL)
        process.wait(10)


def busy_error(project) -> sqlite3.OperationalError:
    conn = sqlite3.connect(project.path / "project.sqlite", isolation_level=None, timeout=0.05)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as error:
        return error
    finally:
        conn.close()
    raise AssertionError("the write lock was free")


def test_a_stopped_holder_is_named_with_how_to_continue_it(project, holder):
    process = holder("stop")
    message = explain_environment_error(busy_error(project), project.path)
    assert message.startswith(
        f"{project.path / 'project.sqlite'}: another process kept the project's write lock for as long as "
        "SpokenBench waited for it (SQLite: database is locked), so nothing more was written; everything reported "
        "saved is kept. Stopped (Ctrl+Z or SIGSTOP) with the project open: "
        f"process {process.pid} ({sys.executable} -c "
    )
    assert message.endswith(f"(`fg` in its terminal, or `kill -CONT {process.pid}`) or end it, then try again")


def test_a_running_holder_gets_the_general_hint(project, holder):
    holder("run")
    message = explain_environment_error(busy_error(project), project.path)
    assert "Stopped (Ctrl+Z or SIGSTOP) with the project open" not in message
    assert message.endswith(
        "keeps the lock until it continues (`spokenbench jobs PROJECT` shows a stopped job as paused); try again "
        "once it is released"
    )


def test_only_stopped_processes_with_the_file_open_are_listed(project, holder, tmp_path):
    running, stopped = holder("open"), holder("stop")
    other = tmp_path / "other.sqlite"
    other.write_bytes(b"")
    assert [pid for pid, _command in stopped_processes_with_open(project.path / "project.sqlite")] == [stopped.pid]
    assert stopped_processes_with_open(other) == [] and running.poll() is None


@pytest.mark.slow
def test_a_command_waiting_for_a_stopped_holder_exits_2_saying_so_and_writes_nothing(project, holder):
    from spokenbench.core.recording.speakers import list_speakers

    process = holder("stop")
    spokenbench = str(Path(sys.executable).with_name("spokenbench"))
    started = time.monotonic()
    done = subprocess.run(
        [spokenbench, "speakers", str(project.path), "--add", "Mina", "--language", "en"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and f"kill -CONT {process.pid}" in done.stderr
    assert 10 < time.monotonic() - started < 60  # it waited for the lock first
    process.send_signal(signal.SIGKILL)  # its transaction is rolled back
    process.wait(10)
    with Project.open(project.path) as reopened:
        assert list_speakers(reopened.conn) == []
    again = subprocess.run(
        [spokenbench, "speakers", str(project.path), "--add", "Mina", "--language", "en"],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr
