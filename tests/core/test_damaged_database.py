"""A project database that is damaged, inconsistent or blocked by its surroundings (issue 23, defects 7, 9, 11):
no command writes into a file that fails SQLite's quick check; a schema number that does not match the tables
is refused before any migration or backup; a full disk, a file size limit or a stray journal is reported as
what it is, not as damage (which would invite restoring a backup for nothing)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from bad_input_support import BASE_ITEMS, _damaged, csv_of, deadline, files_digest

from spokenbench.core.store import database


@pytest.fixture
def base_project(cli, tmp_path) -> Path:
    project = tmp_path / "source"
    assert cli("init", project).code == 0
    assert cli("import", project, csv_of(BASE_ITEMS)(tmp_path / "base.csv"), "--format", "mcq").code == 0
    with sqlite3.connect(project / "project.sqlite") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return project


def test_no_command_writes_into_a_database_that_fails_its_quick_check(cli, base_project, tmp_path):
    damaged = _damaged(base_project)(tmp_path)
    before = files_digest(damaged)
    more = csv_of([{**BASE_ITEMS[0], "id": "new1"}])(tmp_path / "more.csv")
    for args in (
        ["import", damaged, more, "--format", "mcq"],
        ["sample", damaged, "--name", "q"],
        ["speakers", damaged, "--add", "ana"],
    ):
        result = cli(*args)
        assert result.code == 2, (args, result.out, result.err)
        assert "project.sqlite: the project database is damaged" in result.err and "internal error" not in result.err
    assert files_digest(damaged) == before


@pytest.mark.parametrize("claimed", [3, 10])
def test_a_schema_number_lower_than_the_tables_is_refused_without_migrating_or_a_backup(cli, base_project, claimed):
    with sqlite3.connect(base_project / "project.sqlite") as conn:
        conn.execute(f"PRAGMA user_version = {claimed}")
    conn.close()
    before = files_digest(base_project)
    for _ in range(2):
        result = cli("info", base_project)
        assert result.code == 2 and "internal error" not in result.err
        assert f"claims schema {claimed} but holds table(s)" in result.err and "project.sqlite" in result.err
    assert files_digest(base_project) == before  # no migration ran, no backup copy was written
    assert not list(base_project.glob("*.bak.sqlite"))


def test_a_missing_table_is_detected_at_open(cli, base_project):
    with sqlite3.connect(base_project / "project.sqlite") as conn:
        conn.execute("DROP TABLE ratings")
    conn.close()
    for command in ("info", "items", "qc-report"):
        result = cli(command, base_project)
        assert result.code == 2, result.err
        assert "table(s) ratings of schema" in result.err and "are missing" in result.err


def _stray_journal(project: Path) -> None:
    """A rollback journal beside a database whose WAL is checkpointed away (as after a copy of the folder)."""
    for leftover in ("project.sqlite-wal", "project.sqlite-shm"):
        (project / leftover).unlink(missing_ok=True)
    (project / "project.sqlite-journal").write_bytes(bytes(range(255, -1, -1)) * 16)  # a non-zero header: hot


def test_a_stray_journal_is_rolled_back_not_called_damage(cli, base_project):
    _stray_journal(base_project)
    result = cli("info", base_project)
    assert result.code == 0, result.err
    assert "damaged" not in result.err


def test_a_journal_that_cannot_be_rolled_back_says_it_needs_write_access(cli, base_project, monkeypatch):
    _stray_journal(base_project)
    monkeypatch.setattr(database, "is_writable", lambda path: False)  # as root, permissions cannot deny it
    result = cli("info", base_project)
    assert result.code == 2
    assert "project.sqlite-journal: a write to this project was interrupted" in result.err
    assert "needs write access" in result.err and "damaged" not in result.err.replace("not damaged", "")


@pytest.mark.slow
def test_a_file_size_limit_at_open_is_reported_as_such_not_as_damage(base_project):
    """`ulimit -f` (a real child process under RLIMIT_FSIZE): opening needs to write the WAL's index."""
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192));"
        "from spokenbench.core.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "import", str(base_project), str(csv_of(BASE_ITEMS)(base_project.parent / "x.csv")),
         "--format", "mcq", "--source", "other"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "ulimit -f" in result.stderr and "damaged" not in result.stderr and "internal error" not in result.stderr


def test_a_full_disk_at_open_is_reported_as_such(cli, base_project, monkeypatch):
    """SQLite's SQLITE_FULL raised while opening: the message says the disk is full."""
    real_connect = sqlite3.connect

    def full_disk(*args, **kwargs):
        error = sqlite3.OperationalError("database or disk is full")
        error.sqlite_errorname = "SQLITE_FULL"
        raise error

    monkeypatch.setattr(database.sqlite3, "connect", full_disk)
    result = cli("info", base_project)
    monkeypatch.setattr(database.sqlite3, "connect", real_connect)
    assert result.code == 2 and "the disk is full" in result.err and "damaged" not in result.err


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("how", ["FIFO", "link to /dev/zero"])
def test_a_database_neighbour_that_is_not_a_regular_file_is_refused_at_once(cli, base_project, suffix, how):
    """A FIFO journal made SQLite wait forever; a link to /dev/zero was called a disk I/O error."""
    for leftover in ("project.sqlite-wal", "project.sqlite-shm"):
        (base_project / leftover).unlink(missing_ok=True)
    neighbour = base_project / f"project.sqlite{suffix}"
    os.mkfifo(neighbour) if how == "FIFO" else neighbour.symlink_to("/dev/zero")
    with deadline(10):
        result = cli("info", base_project)
    assert result.code == 2
    kind = "a FIFO" if how == "FIFO" else "a symbolic link"
    assert f"project.sqlite{suffix} is {kind}, not a file SQLite wrote" in result.err


@pytest.fixture
def distant_file_size_limit():
    """`ulimit -f` of 20 GB in this process (the soft limit; restored after)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000_000_000, hard))
    yield 20_000_000_000
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def test_a_full_disk_under_a_distant_file_size_limit_is_still_a_full_disk(tmp_path, distant_file_size_limit):
    """Any `ulimit -f` made every full disk read "this process may not write files larger than …; raise the
    limit": the limit is blamed only when a file written has reached it."""
    import errno

    from spokenbench.core.foundation.environment_errors import explain_environment_error

    small = tmp_path / "take.wav"
    small.write_bytes(b"\0" * 1000)
    message = explain_environment_error(OSError(errno.ENOSPC, "No space left on device", str(small)))
    assert message.endswith("No space left on device; free some space and try again"), message
    full = sqlite3.OperationalError("database or disk is full")
    full.sqlite_errorname = "SQLITE_FULL"
    (tmp_path / "project.sqlite").write_bytes(b"\0" * 1000)
    message = explain_environment_error(full, tmp_path)
    assert "the disk is full" in message and "free some space and try again" in message and "ulimit" not in message
    with open(small, "r+b") as handle:  # sparse: the file has reached the limit, within a megabyte
        handle.truncate(distant_file_size_limit - 1000)
    message = explain_environment_error(OSError(errno.EFBIG, "File too large", str(small)))
    assert "may not write files larger than 20,000,000,000 bytes (ulimit -f)" in message, message
