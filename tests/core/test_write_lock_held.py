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
from spokenbench.core.foundation.processes import process_stopped, write_lock_holders
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
        while how == "stop" and not process_stopped(process.pid):
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
        f"saved is kept. It is held by process {process.pid} ({sys.executable} -c "
    )
    assert message.endswith(
        ", stopped (Ctrl+Z or SIGSTOP): a stopped process keeps it until it continues: continue it (`fg` in its "
        f"terminal, or `kill -CONT {process.pid}`) or end it, then try again"
    )


def test_a_running_holder_is_named_and_waited_for(project, holder):
    process = holder("run")
    message = explain_environment_error(busy_error(project), project.path)
    assert f"It is held by process {process.pid} (" in message and "stopped" not in message
    assert message.endswith("try again once it has finished (a long import, a database browser with unsaved changes "
                            "or an sqlite3 shell inside BEGIN keeps it until it commits)")  # fmt: skip


def test_only_the_process_holding_the_write_lock_is_named(project, holder):
    """Readers hold locks of their own on the same files (WAL): only the write lock's holder is named."""
    reader, writer = holder("open"), holder("stop")
    assert [pid for pid, _command, _stopped in write_lock_holders(project.path / "project.sqlite")] == [writer.pid]
    assert reader.poll() is None


def test_without_a_holder_on_this_machine_the_general_hint_is_given(project, tmp_path):
    """A lock held from another machine (or unseen): what usually keeps one, and how to look."""
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorname = "SQLITE_BUSY"
    message = explain_environment_error(error, project.path)
    assert write_lock_holders(project.path / "project.sqlite") == []
    assert "It is held by" not in message
    assert message.endswith(
        "(the jobs panel, or `spokenbench jobs PROJECT`, shows a stopped job as paused); try again once it is released"
    )


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


def test_the_holder_is_found_where_the_kernel_lists_another_device_number(project, holder, tmp_path, monkeypatch):
    """btrfs: a subvolume's stat gives another device number than the one /proc/locks lists."""
    import spokenbench.core.foundation.processes as processes

    process = holder("stop")
    listed = Path(processes.LOCKS_FILE).read_text().splitlines()
    relisted = []
    for line in listed:
        fields = line.split()
        if len(fields) >= 8 and "->" not in fields:
            fields[5] = "00:99:" + fields[5].rsplit(":", 1)[-1]
        relisted.append(" ".join(fields))
    fake = tmp_path / "locks"
    fake.write_text("\n".join(relisted) + "\n")
    monkeypatch.setattr(processes, "LOCKS_FILE", str(fake))
    assert [pid for pid, _command, _stopped in write_lock_holders(project.path / "project.sqlite")] == [process.pid]


def test_this_process_holding_the_lock_on_another_connection_is_not_named(project):
    conn = sqlite3.connect(project.path / "project.sqlite", isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE project_meta SET value = value")
        assert write_lock_holders(project.path / "project.sqlite") == []
    finally:
        conn.execute("ROLLBACK")
        conn.close()
