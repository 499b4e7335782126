"""Where a file system cannot share SQLite's write-ahead log index (WSL's Windows drives, FUSE file systems with
direct I/O such as sshfs -o direct_io, some network shares) a project uses a rollback journal instead of failing
with "disk I/O error" — or, when creating one, "internal error: cannot commit - no transaction is active" — and
an error SQLite has already rolled back is the error reported, not the failed ROLLBACK after it."""

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support import (
    entered_or_skipped,
    gmmlu_rows,
    no_shared_memory_file_system,
    run_console_script,
    write_csv,
)

from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.store import Project, database
from spokenbench.core.store.meta import read_meta, write_meta
from spokenbench.core.store.project import DATABASE_NAME


def header_journal(db_path) -> bytes:
    with open(db_path, "rb") as file:
        return file.read(20)[18:20]


@pytest.fixture
def rollback_folders(monkeypatch):
    """Folders this process treats as unable to share WAL's index (as it would after a real failure there)."""
    folders: set[str] = set()
    monkeypatch.setattr(database, "_ROLLBACK_JOURNAL_FOLDERS", folders)
    return folders


def test_an_error_sqlite_rolled_back_itself_is_the_error_raised(tmp_path):
    """An interrupted INSERT inside a transaction is rolled back by SQLite itself (as an I/O error or a full disk
    may be); a ROLLBACK after it fails with "no transaction is active", which used to replace the real error."""
    with Project.create(tmp_path / "p") as project:
        conn = project.conn
        with pytest.raises(sqlite3.OperationalError, match="interrupted"):
            with database.transaction(conn):
                write_meta(conn, "kept", "no")
                conn.set_progress_handler(lambda: 1, 100)
                conn.execute(
                    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 100000) "
                    "INSERT INTO project_meta(key, value) SELECT 'row' || n, n FROM r"
                )
        conn.set_progress_handler(None, 0)
        assert not conn.in_transaction
        assert read_meta(conn, "kept") is None  # the whole transaction is gone, as SQLite rolled it back
        with database.transaction(conn):  # and the connection works on
            write_meta(conn, "kept", "yes")
        assert read_meta(conn, "kept") == "yes"


LAST_CONNECTION_ELSEWHERE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM project_meta").fetchone()
conn.close()  # the last connection to a WAL database checkpoints it and removes the log, if it can lock it alone
"""


def test_opening_another_connection_keeps_the_locks_this_process_holds(tmp_path):
    """The journal is read from the file's header through SQLite only. Read through a descriptor of our own, once
    closed, it dropped every POSIX lock this process's connections held on the database: another process closing
    its last connection then took itself for the last one and removed the log under them (the CI rehearsal:
    "database disk image is malformed" in 19 tests where processes share a project)."""
    Project.create(tmp_path / "p").close()
    db_path = tmp_path / "p" / DATABASE_NAME
    first = database.connect(db_path)
    with database.transaction(first):
        write_meta(first, "in the log", "yes")
    second = database.connect(db_path)
    subprocess.run([sys.executable, "-c", LAST_CONNECTION_ELSEWHERE, str(db_path)], check=True)
    assert (tmp_path / "p" / f"{DATABASE_NAME}-wal").exists()  # the other process knew it was not the last
    assert read_meta(second, "in the log") == "yes"
    first.close()
    second.close()


def test_with_a_rollback_journal_a_commit_waits_for_a_reader_instead_of_failing(tmp_path, rollback_folders):
    """With a rollback journal a commit waits until no connection reads; the app's writer polls with a 5 ms busy
    timeout, so its COMMIT came back busy at once and left its transaction open. It is now tried again."""
    folder = tmp_path / "p"
    folder.mkdir()
    rollback_folders.add(os.path.realpath(folder))
    Project.create(folder).close()
    db_path = folder / DATABASE_NAME
    assert header_journal(db_path) == b"\x01\x01"
    writer = database.connect(db_path)
    database.poll_for_the_write_lock(writer)
    database.skip_fsync_on_commit(writer)
    assert writer.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL kept: NORMAL is unsafe without WAL
    reading, releasing = threading.Event(), []

    def read_for_a_while() -> None:
        reader = database.connect(db_path, read_only=True)
        with database.read_snapshot(reader):
            reader.execute("SELECT count(*) FROM project_meta").fetchone()
            reading.set()
            time.sleep(0.3)
            releasing.append(time.perf_counter())  # the read lock is held until just after this
        reader.close()

    thread = threading.Thread(target=read_for_a_while)
    thread.start()
    assert reading.wait(5)
    with database.transaction(writer):
        write_meta(writer, "rating", "1")
    committed = time.perf_counter()
    thread.join()
    assert committed >= releasing[0]  # it waited for the reader, and did not fail
    assert not writer.in_transaction
    assert writer.execute("PRAGMA busy_timeout").fetchone()[0] == database.BUSY_TIMEOUT_MS  # polls only inside
    writer.close()
    with Project.open(folder) as project:
        assert read_meta(project.conn, "rating") == "1"


def test_a_project_with_a_rollback_journal_keeps_it_until_check_use_wal_switches_it_back(tmp_path, cli):
    """A project that comes back from a file system without WAL keeps its rollback journal when opened (the same
    file may be open where WAL cannot work, as on both sides of a WSL drive: switched behind its back, that
    process's writes failed); `check --use-wal` switches it back, and not while another connection reads it."""
    Project.create(tmp_path / "p").close()
    db_path = tmp_path / "p" / DATABASE_NAME
    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    info = cli("info", tmp_path / "p")
    assert info.code == 0 and "journal: rollback — the project keeps a rollback journal" in info.out
    assert "`spokenbench check DIR --use-wal` switches it back" in info.out
    assert header_journal(db_path) == b"\x01\x01"

    reader = database.connect(db_path, read_only=True)
    with database.read_snapshot(reader):
        reader.execute("SELECT count(*) FROM project_meta").fetchone()
        refused = cli("check", tmp_path / "p", "--use-wal")
    reader.close()
    assert refused.code == 2 and "another program is using the project" in refused.err, refused.err
    assert header_journal(db_path) == b"\x01\x01"

    switched = cli("check", tmp_path / "p", "--use-wal")
    assert switched.code == 0 and "journal: switched back to WAL" in switched.out, switched.err
    assert header_journal(db_path) == b"\x02\x02"
    assert json.loads(cli("info", tmp_path / "p", "--json").out)["journal"] == "wal"
    assert "journal: WAL already" in cli("check", tmp_path / "p", "--use-wal").out
    assert not [name for name in os.listdir(tmp_path / "p") if name.startswith(database.WAL_PROBE_PREFIX)]


def live_copy_with_changes_in_its_log(source, target) -> None:
    """`target`: a copy of a project taken while a process still had changes in its write-ahead log."""
    Project.create(source).close()
    conn = database.connect(source / DATABASE_NAME)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    with database.transaction(conn):
        write_meta(conn, "in the log", "only")
    assert os.path.getsize(source / f"{DATABASE_NAME}-wal") > 0
    target.mkdir(parents=True)
    for name in (DATABASE_NAME, f"{DATABASE_NAME}-wal"):
        shutil.copyfile(source / name, target / name)
    (target / "audio").mkdir()
    conn.close()


def test_leaving_wal_keeps_what_only_the_log_held(tmp_path):
    live_copy_with_changes_in_its_log(tmp_path / "live", tmp_path / "copy")
    database._leave_wal(tmp_path / "copy" / DATABASE_NAME)
    assert header_journal(tmp_path / "copy" / DATABASE_NAME) == b"\x01\x01"
    assert not (tmp_path / "copy" / f"{DATABASE_NAME}-wal").exists()
    with contextlib.closing(sqlite3.connect(tmp_path / "copy" / DATABASE_NAME)) as conn:
        assert read_meta(conn, "in the log") == "only"


# --- on a file system that cannot share WAL's index (slow; root, bindfs and /dev/fuse) ---------------------------


@pytest.fixture
def no_wal_folder(tmp_path):
    with contextlib.ExitStack() as stack:
        yield entered_or_skipped(stack, no_shared_memory_file_system(tmp_path / "fuse"))


def test_the_mount_really_cannot_share_the_index(no_wal_folder):
    """The test's premise: plain SQLite in WAL mode fails there."""
    with contextlib.closing(sqlite3.connect(no_wal_folder / "plain.sqlite", isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        with pytest.raises(sqlite3.OperationalError) as failure:
            conn.execute("CREATE TABLE t(x)")
    assert failure.value.sqlite_errorname.startswith("SQLITE_IOERR_SHM")


@pytest.mark.slow
def test_the_demo_is_built_opened_and_checked_there(no_wal_folder):
    built = run_console_script("demo", no_wal_folder / "demo")
    assert built.returncode == 0, built.stderr
    info = run_console_script("info", no_wal_folder / "demo")
    assert info.returncode == 0, info.stderr
    assert "journal: rollback — the project keeps a rollback journal" in info.stdout
    checked = run_console_script("check", no_wal_folder / "demo")
    assert checked.returncode == 0, checked.stderr
    assert sorted(os.listdir(no_wal_folder)) == ["demo"]  # no staging folder left
    assert sorted(os.listdir(no_wal_folder / "demo")) == ["audio", DATABASE_NAME]  # no scratch database either
    refused = run_console_script("check", no_wal_folder / "demo", "--use-wal")
    assert refused.returncode == 2 and "keeps its rollback journal here" in refused.stderr, refused.stderr


@pytest.mark.slow
def test_a_live_copy_brought_there_opens_with_its_last_changes(tmp_path, no_wal_folder):
    live_copy_with_changes_in_its_log(tmp_path / "live", no_wal_folder / "copy")
    first = run_console_script("info", no_wal_folder / "copy", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["journal"] == "rollback"
    assert "now keeps a rollback journal" in first.stderr  # said once, when the file is switched
    again = run_console_script("info", no_wal_folder / "copy")
    assert again.returncode == 0 and again.stderr == ""
    with Project.open(no_wal_folder / "copy") as project:
        assert read_meta(project.conn, "in the log") == "only"
        with project.transaction() as conn:
            write_meta(conn, "written there", "yes")
    with Project.open(no_wal_folder / "copy") as project:
        assert read_meta(project.conn, "written there") == "yes"


@pytest.mark.slow
def test_a_foreign_wal_database_there_is_refused_unchanged(no_wal_folder):
    folder = no_wal_folder / "foreign"
    folder.mkdir()
    db_path = folder / DATABASE_NAME
    with contextlib.closing(sqlite3.connect(db_path, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE notes(text)")  # made as a rollback-journal file, then marked WAL by hand
    with open(db_path, "r+b") as file:
        file.seek(18)
        file.write(b"\x02\x02")
    before = hashlib.sha256(db_path.read_bytes()).hexdigest()
    with pytest.raises(ProjectError, match="carries no SpokenBench marker"):
        Project.open(folder)
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before


@pytest.mark.slow
def test_a_rating_is_not_held_up_by_a_cli_import_there(tmp_path, no_wal_folder):
    """The app's writer (polling for the lock) and a `spokenbench import` of 20,000 items in another process, on
    a rollback journal: each rating is committed while the import runs (between its chunks), none fails."""
    folder = no_wal_folder / "shared"
    Project.create(folder).close()
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(20_000))
    writer = database.connect(folder / DATABASE_NAME)
    database.poll_for_the_write_lock(writer)
    script = Path(sys.executable).with_name("spokenbench")
    importer = subprocess.Popen(
        [str(script), "import", str(folder), str(table), "--format", "gmmlu-lite", "--language", "en"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    waits = []
    try:
        while importer.poll() is None:
            started = time.perf_counter()
            with database.transaction(writer):
                write_meta(writer, f"rating {len(waits)}", "1")
            waits.append(time.perf_counter() - started)
            time.sleep(0.05)
    finally:
        _, err = importer.communicate(timeout=300)
    writer.close()
    assert importer.returncode == 0, err
    assert len(waits) >= 5
    print(
        f"rating waits during the import: median {statistics.median(waits) * 1000:.0f} ms, longest "
        f"{max(waits) * 1000:.0f} ms, {len(waits)} ratings"
    )
    assert statistics.median(waits) < 0.5, [round(w, 3) for w in waits]
    with Project.open(folder) as project:
        assert project.conn.execute("SELECT count(*) FROM visible_items").fetchone()[0] == 20_000
        stored = project.conn.execute("SELECT count(*) FROM project_meta WHERE key LIKE 'rating %'").fetchone()[0]
    assert stored == len(waits)


OPEN_AT_THE_SIGNAL = """
import sys, time
from pathlib import Path
from spokenbench.core.store import Project
start = Path(sys.argv[2])
while not start.exists():
    time.sleep(0.001)
with Project.open(sys.argv[1]) as project:
    print(project.conn.execute("SELECT value FROM project_meta WHERE key = 'in the log'").fetchone()[0])
"""


@pytest.mark.slow
def test_processes_opening_a_wal_project_there_at_the_same_moment_all_open_it(tmp_path, no_wal_folder):
    """Four processes that meet the WAL file at once: one switches it, the others wait for it (before, each held
    the shared lock the others needed: all but one failed after 15 s, saying a stopped process held the lock)."""
    for round_number in range(3):
        project = no_wal_folder / f"copy{round_number}"
        live_copy_with_changes_in_its_log(tmp_path / f"live{round_number}", project)
        signal = tmp_path / f"go{round_number}"
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT_THE_SIGNAL, str(project), str(signal)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        time.sleep(1.5)  # all four have imported and wait for the signal
        signal.touch()
        started = time.perf_counter()
        results = [opener.communicate(timeout=60) for opener in openers]
        assert [(opener.returncode, out.strip()) for opener, (out, _) in zip(openers, results)] == [(0, "only")] * 4, [
            err for _, err in results
        ]
        assert time.perf_counter() - started < 10
        assert header_journal(project / DATABASE_NAME) == b"\x01\x01"


@pytest.mark.slow
def test_a_switch_killed_halfway_is_finished_by_the_next_opening(tmp_path, no_wal_folder):
    """SIGKILL while the log (30 MB) is being copied into the file: the next opening finishes the switch with
    every row (before, the half-copied main file was read on its own and the project said to be damaged)."""
    source = tmp_path / "live"
    Project.create(source).close()
    conn = database.connect(source / DATABASE_NAME)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    with database.transaction(conn):
        conn.executemany(
            "INSERT INTO project_meta(key, value) VALUES (?, ?)", [(f"row {n}", "x" * 1000) for n in range(30_000)]
        )
    killed_halfway = 0
    for delay in (0.2, 0.4, 0.6, 0.8, 1.0):
        project = no_wal_folder / f"killed-{delay}"
        project.mkdir()
        for name in (DATABASE_NAME, f"{DATABASE_NAME}-wal"):
            shutil.copyfile(source / DATABASE_NAME if name == DATABASE_NAME else source / name, project / name)
        (project / "audio").mkdir()
        opener = subprocess.Popen(
            [sys.executable, "-c", f"from spokenbench.core.store import Project; Project.open({str(project)!r})"],
            stderr=subprocess.DEVNULL,
        )
        time.sleep(delay)
        opener.kill()
        opener.wait()
        killed_halfway += header_journal(project / DATABASE_NAME) == b"\x02\x02"
        info = run_console_script("info", project, "--json")
        assert info.returncode == 0, (delay, info.stderr)
        with Project.open(project) as reopened:
            assert (
                reopened.conn.execute("SELECT count(*) FROM project_meta WHERE key LIKE 'row %'").fetchone()[0]
                == 30_000
            )
            assert reopened.conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    conn.close()
    assert killed_halfway, "no kill landed before the switch ended: the test proved nothing"


@pytest.mark.slow
def test_opened_where_wal_works_the_file_keeps_its_rollback_journal(tmp_path, no_wal_folder):
    """The same folder seen without the mount (as Windows sees a WSL drive's files) opens the switched project
    with its rollback journal: switched back to WAL, every write of a process on the mount failed."""
    live_copy_with_changes_in_its_log(tmp_path / "live", no_wal_folder / "copy")
    Project.open(no_wal_folder / "copy").close()
    backing = no_wal_folder.parent / "backing" / "copy"
    with Project.open(backing) as project:
        assert database.journal_kind(project.conn) == "rollback"
        with project.transaction() as conn:
            write_meta(conn, "written beside", "yes")
    assert header_journal(backing / DATABASE_NAME) == b"\x01\x01"
    with Project.open(no_wal_folder / "copy") as project:
        assert read_meta(project.conn, "written beside") == "yes"


@pytest.mark.slow
def test_the_verified_clips_cache_keeps_a_rollback_journal_there_too(no_wal_folder, monkeypatch):
    """A home folder on such a file system: the cache of verified clips keeps a rollback journal instead of being
    off (before, it could not be opened, so every clip was hashed again each time)."""
    from spokenbench.core.store import verified_clips

    monkeypatch.setattr(verified_clips, "cache_dir", lambda: no_wal_folder / "cache")
    clip = no_wal_folder / "clip.flac"
    clip.write_bytes(b"x" * 100)
    old = os.stat(clip)
    cache = verified_clips.open_verified_clips()
    assert cache is not None
    cache.record("ab" * 32, old, old.st_mtime_ns + 10 * verified_clips.RACY_NS)
    cache.close()
    again = verified_clips.open_verified_clips()
    assert again is not None
    again.look_up(["ab" * 32])
    assert again.vouches("ab" * 32, old)
    assert again._conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    again.close()
