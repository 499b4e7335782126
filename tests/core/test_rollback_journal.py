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
from support import gmmlu_rows, no_shared_memory_file_system, run_console_script, write_csv

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


def test_a_read_snapshot_reports_its_own_error_and_leaves_no_transaction(tmp_path):
    with Project.create(tmp_path / "p") as project:
        conn = project.conn
        with pytest.raises(sqlite3.OperationalError, match="no such table: missing"):
            with database.read_snapshot(conn):
                conn.execute("SELECT * FROM missing")
        assert not conn.in_transaction


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
    reading, released = threading.Event(), []

    def read_for_a_while() -> None:
        reader = database.connect(db_path, read_only=True)
        with database.read_snapshot(reader):
            reader.execute("SELECT count(*) FROM project_meta").fetchone()
            reading.set()
            time.sleep(0.3)
        released.append(time.perf_counter())
        reader.close()

    thread = threading.Thread(target=read_for_a_while)
    thread.start()
    reading.wait(5)
    with database.transaction(writer):
        write_meta(writer, "rating", "1")
    committed = time.perf_counter()
    thread.join()
    assert committed >= released[0]  # it waited for the reader, and did not fail
    assert not writer.in_transaction
    assert writer.execute("PRAGMA busy_timeout").fetchone()[0] == database.BUSY_TIMEOUT_MS  # polls only inside
    writer.close()
    with Project.open(folder) as project:
        assert read_meta(project.conn, "rating") == "1"


def test_a_project_left_with_a_rollback_journal_goes_back_to_wal_where_wal_works(tmp_path, cli):
    """A project that came back from a file system without WAL (its file has a rollback journal) is switched to
    WAL again once a scratch database shows WAL works in its folder; the scratch files are removed."""
    Project.create(tmp_path / "p").close()
    db_path = tmp_path / "p" / DATABASE_NAME
    with contextlib.closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    assert header_journal(db_path) == b"\x01\x01"
    assert json.loads(cli("info", tmp_path / "p", "--json").out)["journal"] == "wal"
    assert header_journal(db_path) == b"\x02\x02"
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
    try:
        with no_shared_memory_file_system(tmp_path / "fuse") as mounted:
            yield mounted
    except OSError as error:
        pytest.skip(str(error))


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
    assert "journal: rollback — this file system cannot share SQLite's write-ahead log index" in info.stdout
    checked = run_console_script("check", no_wal_folder / "demo")
    assert checked.returncode == 0, checked.stderr
    assert sorted(os.listdir(no_wal_folder)) == ["demo"]  # no staging folder, no scratch database left


@pytest.mark.slow
def test_a_live_copy_brought_there_opens_with_its_last_changes(tmp_path, no_wal_folder):
    live_copy_with_changes_in_its_log(tmp_path / "live", no_wal_folder / "copy")
    first = run_console_script("info", no_wal_folder / "copy", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["journal"] == "rollback"
    assert "uses a rollback journal here" in first.stderr  # said once, when the file is switched
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
