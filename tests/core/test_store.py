import sqlite3
import threading
import time

import pytest

from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.store import Project, migrations
from spokenbench.core.store.database import SCHEMA_VERSION


def test_new_project_has_wal_foreign_keys_and_current_schema(tmp_path):
    with Project.create(tmp_path / "p") as project:
        conn = project.conn
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert (tmp_path / "p" / "audio").is_dir()
        with pytest.raises(sqlite3.IntegrityError):
            with project.transaction():
                conn.execute("INSERT INTO options(item_id, position, letter, text) VALUES (999, 0, 'A', 'x')")


def test_create_refuses_non_empty_folder_and_existing_project(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ProjectError, match="not empty"):
        Project.create(tmp_path / "busy")
    Project.create(tmp_path / "p").close()
    with pytest.raises(ProjectError, match="already a SpokenBench project"):
        Project.create(tmp_path / "p")


@pytest.mark.parametrize(
    "setup, message",
    [
        (lambda d: None, "no such project folder"),
        (lambda d: d.mkdir(), "project.sqlite is missing"),
        (
            lambda d: (d.mkdir(), (d / "project.sqlite").write_bytes(b"garbage" * 200)),
            "damaged or not SQLite|not a readable",
        ),
        (lambda d: (d.mkdir(), (d / "project.sqlite").write_bytes(b"")), "empty"),
    ],
)
def test_open_reports_what_is_wrong(tmp_path, setup, message):
    folder = tmp_path / "p"
    setup(folder)
    with pytest.raises(ProjectError, match=message):
        Project.open(folder)


def test_project_from_newer_version_is_refused(tmp_path):
    Project.create(tmp_path / "p").close()
    conn = sqlite3.connect(tmp_path / "p" / "project.sqlite")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(ProjectError, match="newer SpokenBench"):
        Project.open(tmp_path / "p")


def test_forward_migration_applies_once_and_keeps_a_backup(tmp_path, monkeypatch):
    Project.create(tmp_path / "p").close()
    extra = "CREATE TABLE later_feature (id INTEGER PRIMARY KEY, note TEXT);"
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, extra])
    from spokenbench.core.store import database

    monkeypatch.setattr(database, "MIGRATIONS", migrations.MIGRATIONS)
    monkeypatch.setattr(database, "SCHEMA_VERSION", len(migrations.MIGRATIONS))
    with Project.open(tmp_path / "p") as project:
        assert project.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        project.conn.execute("SELECT * FROM later_feature").fetchall()
    assert (tmp_path / "p" / f"project.schema{SCHEMA_VERSION}.bak.sqlite").is_file()
    Project.open(tmp_path / "p").close()  # second open: nothing to apply, no error


def test_failed_migration_leaves_database_at_previous_version(tmp_path, monkeypatch):
    Project.create(tmp_path / "p").close()
    broken = "CREATE TABLE half_done (id INTEGER); INSERT INTO no_such_table VALUES (1);"
    from spokenbench.core.store import database

    monkeypatch.setattr(database, "MIGRATIONS", [*migrations.MIGRATIONS, broken])
    monkeypatch.setattr(database, "SCHEMA_VERSION", len(migrations.MIGRATIONS) + 1)
    with pytest.raises(sqlite3.OperationalError):
        Project.open(tmp_path / "p")
    conn = sqlite3.connect(tmp_path / "p" / "project.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0


def test_two_writers_queue_instead_of_failing(tmp_path):
    """A GUI and a headless run on the same project: the second writer waits for the first."""
    Project.create(tmp_path / "p").close()
    second = Project.open(tmp_path / "p")
    holding = threading.Event()

    def long_write():
        with Project.open(tmp_path / "p") as first, first.transaction() as conn:  # one connection per thread
            conn.execute("INSERT INTO speakers(name, created_at) VALUES ('a', 'now')")
            holding.set()
            time.sleep(0.5)

    thread = threading.Thread(target=long_write)
    thread.start()
    holding.wait(5)
    with second.transaction() as conn:  # blocks until the first commits, then succeeds
        conn.execute("INSERT INTO speakers(name, created_at) VALUES ('b', 'now')")
    thread.join()
    names = [r[0] for r in second.conn.execute("SELECT name FROM speakers ORDER BY id")]
    assert names == ["a", "b"]
    second.close()


def test_exception_in_transaction_rolls_back_everything(project):
    with pytest.raises(RuntimeError):
        with project.transaction() as conn:
            conn.execute("INSERT INTO speakers(name, created_at) VALUES ('a', 'now')")
            raise RuntimeError("boom")
    assert project.conn.execute("SELECT count(*) FROM speakers").fetchone()[0] == 0


def test_audio_is_content_addressed_and_verified(project):
    sha = project.audio.put_bytes(b"RIFF-fake-audio", "wav")
    again = project.audio.put_bytes(b"RIFF-fake-audio", "wav")
    assert sha == again
    path = project.audio.path_for(sha, "wav")
    assert path.name == f"{sha}.wav" and path.parent.name == sha[:2]
    assert project.audio.read_bytes(sha, "wav") == b"RIFF-fake-audio"
    path.write_bytes(b"tampered")
    with pytest.raises(ProjectError, match="damaged"):
        project.audio.read_bytes(sha, "wav")
    with pytest.raises(ProjectError, match="missing"):
        project.audio.read_bytes("0" * 64, "wav")
    with pytest.raises(ValueError):
        project.audio.put_bytes(b"", "wav")


def test_only_temp_audio_whose_writer_is_gone_is_removed_on_open(tmp_path):
    import os
    import subprocess
    import sys

    from spokenbench.core.foundation.processes import owner_tag

    Project.create(tmp_path / "p").close()
    incoming = tmp_path / "p" / "audio" / ".incoming"
    incoming.mkdir()
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    host = owner_tag().split(".")[0]
    dead_writer = incoming / f"{host}.{finished.stdout.strip()}.abc.part"
    live_writer = incoming / f"{owner_tag()}.def.part"
    old_unknown, new_unknown = incoming / "tmp123.part", incoming / "elsewhere.77.x.part"
    for path in (dead_writer, live_writer, old_unknown, new_unknown):
        path.write_bytes(b"half a file")
    two_days_ago = time.time() - 2 * 86_400
    os.utime(old_unknown, (two_days_ago, two_days_ago))
    Project.open(tmp_path / "p").close()
    assert sorted(p.name for p in incoming.iterdir()) == sorted([live_writer.name, new_unknown.name])


@pytest.mark.slow
def test_a_reader_opening_the_project_in_a_loop_never_breaks_a_writer(tmp_path):
    """`spokenbench info` in a loop during synthesis used to delete the writer's temp files."""
    import subprocess
    import sys
    import textwrap

    Project.create(tmp_path / "p").close()
    writer = textwrap.dedent(
        """
        import os, sys, time
        from spokenbench.core.store.audio_files import AudioStore
        store = AudioStore(sys.argv[1])
        real_replace = os.replace
        def slow_replace(src, dst):
            time.sleep(0.02)  # a window in which another process opens the project
            real_replace(src, dst)
        os.replace = slow_replace
        for n in range(60):
            store.put_bytes(os.urandom(20_000) + bytes([n]), "wav")
        print("ok")
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", writer, str(tmp_path / "p" / "audio")], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    opens = 0
    while process.poll() is None:
        Project.open(tmp_path / "p").close()
        opens += 1
    out, err = process.communicate()
    assert process.returncode == 0 and out.strip() == b"ok", err.decode()
    assert opens > 5 and len(list((tmp_path / "p" / "audio").rglob("*.wav"))) == 60


def test_a_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path, cli):
    folder = tmp_path / "not-ours"
    folder.mkdir()
    db = folder / "project.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE project_meta(key TEXT, value TEXT)")  # even a table of the same name
        conn.execute("INSERT INTO project_meta VALUES ('owner', 'another program')")
    before = db.read_bytes()
    with pytest.raises(ProjectError, match="another program, not a SpokenBench project"):
        Project.open(folder)
    result = cli("info", folder)
    assert result.code == 2 and "not a SpokenBench project" in result.err
    assert db.read_bytes() == before and not (folder / "project.schema0.bak.sqlite").exists()


def test_a_project_made_before_the_marker_opens_and_is_marked(tmp_path):
    from spokenbench.core.store.database import PROJECT_APPLICATION_ID

    Project.create(tmp_path / "p").close()
    with sqlite3.connect(tmp_path / "p" / "project.sqlite") as conn:
        conn.execute("PRAGMA application_id = 0")
    with Project.open(tmp_path / "p") as project:
        assert project.conn.execute("PRAGMA application_id").fetchone()[0] == PROJECT_APPLICATION_ID
