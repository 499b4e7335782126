"""A shared project's schema is code SQLite runs on our writes (issue 23's trust model): a trigger, view, index or
changed table that SpokenBench did not create is refused before anything is written, naming the object; spacing
and comments that older migrations stored are not a difference; SQLite's own statistics tables are allowed;
connections do not trust the schema's functions; and processes opening an old project at once migrate it once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from bad_input_support import BASE_ITEMS, csv_of, files_digest

from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.store import database, migrations
from spokenbench.core.store.project import Project

RENAMING_TRIGGER = (
    "CREATE TRIGGER zz_rename AFTER INSERT ON speakers BEGIN "
    "UPDATE speakers SET name = 'mallory' WHERE id = NEW.id; END"
)


@pytest.fixture
def project(cli, tmp_path) -> Path:
    folder = tmp_path / "shared"
    assert cli("init", folder).code == 0
    assert cli("import", folder, csv_of(BASE_ITEMS)(tmp_path / "base.csv"), "--format", "mcq").code == 0
    return folder


def _edit(project: Path, *statements: str) -> None:
    """What another program (a colleague's script, the sqlite3 shell) does to the database."""
    conn = sqlite3.connect(project / "project.sqlite", isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _speakers(project: Path) -> list[str]:
    with sqlite3.connect(project / "project.sqlite") as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM speakers ORDER BY id")]
    conn.close()
    return names


def test_a_trigger_added_by_someone_else_is_refused_before_it_can_rewrite_a_write(cli, project, monkeypatch):
    _edit(project, RENAMING_TRIGGER)
    before = files_digest(project)
    for args in (("speakers", project, "--add", "ana", "--language", "en"), ("info", project), ("check", project)):
        result = cli(*args)
        assert result.code == 2, (args, result.out, result.err)
        assert "trigger 'zz_rename' on 'speakers' that SpokenBench does not create" in result.err
        assert "internal error" not in result.err
    assert files_digest(project) == before

    # what the check prevents: without it, the stored name is not the one given, and nothing says so
    monkeypatch.setattr(database, "schema_objects_problem", lambda conn, version: None)
    cli("speakers", project, "--add", "ana", "--language", "en")  # fails, looking for the speaker it added
    assert _speakers(project) == ["mallory"]


def _first(project: Path, kind: str, table: str) -> tuple[str, str]:
    with sqlite3.connect(project / "project.sqlite") as conn:
        row = conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = ? AND tbl_name = ? AND sql IS NOT NULL ORDER BY name",
            (kind, table),
        ).fetchone()
    conn.close()
    return row


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda p: ("CREATE VIEW extra AS SELECT 1",), "view 'extra' that SpokenBench does not create"),
        (
            lambda p: ("CREATE UNIQUE INDEX one_note ON ratings(note)",),
            "index 'one_note' on 'ratings' that SpokenBench does not create",
        ),
        (
            lambda p: (f"DROP TRIGGER {_first(p, 'trigger', 'items')[0]}",),
            f"of schema {migrations.SCHEMA_VERSION} is missing",
        ),
        (
            lambda p: (
                f"DROP TRIGGER {_first(p, 'trigger', 'items')[0]}",
                _first(p, "trigger", "items")[1].replace("BEGIN", "WHEN 0 BEGIN", 1),
            ),
            "differs from the one SpokenBench creates",
        ),
        (
            lambda p: (
                "PRAGMA writable_schema = ON",
                "UPDATE sqlite_master SET sql = replace(sql, 'CHECK (length(trim(annotator)) > 0)', '') "
                "WHERE name = 'ratings'",
            ),
            "table 'ratings' differs from the one SpokenBench creates",
        ),
    ],
    ids=["view added", "unique index added", "our trigger dropped", "our trigger changed", "a CHECK taken out"],
)
def test_a_schema_object_that_is_not_ours_is_refused_naming_it(cli, project, edit, named):
    _edit(project, *edit(project))
    before = files_digest(project)
    result = cli("speakers", project, "--add", "ana", "--language", "en")
    assert result.code == 2, result.err
    assert named in result.err and "internal error" not in result.err
    assert files_digest(project) == before


def test_comments_and_spacing_of_older_migrations_and_sqlites_statistics_are_not_differences(project):
    with sqlite3.connect(project / "project.sqlite") as conn:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'ratings'").fetchone()[0]
    conn.close()
    relaid = sql.replace("(", "(  -- a comment a migration once had\n", 1).replace(", ", " ,\n\t/* old */ ")
    assert relaid != sql
    _edit(
        project,
        "PRAGMA writable_schema = ON",
        f"UPDATE sqlite_master SET sql = '{relaid.replace(chr(39), chr(39) * 2)}' WHERE name = 'ratings'",
        "ANALYZE",
    )
    with Project.open(project) as opened:
        assert opened.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone()[0]
        with opened.transaction() as conn:
            conn.execute("INSERT INTO speakers(name, created_at) VALUES ('ana', 'now')")
    assert _speakers(project) == ["ana"]


def test_a_changed_string_in_the_schema_is_a_difference(project):
    """Spacing inside a string is content, not layout."""
    _edit(
        project,
        "PRAGMA writable_schema = ON",
        "UPDATE sqlite_master SET sql = replace(sql, '''acceptable''', '''acceptable  ''') WHERE name = 'ratings'",
    )
    with pytest.raises(ProjectError, match="table 'ratings' differs"):
        Project.open(project)


@pytest.mark.parametrize("version", range(1, migrations.SCHEMA_VERSION))
def test_a_project_of_every_older_schema_opens_and_migrates(tmp_path, version):
    path = tmp_path / "old"
    (path / "audio").mkdir(parents=True)
    with sqlite3.connect(path / "project.sqlite") as conn:
        for script in migrations.MIGRATIONS[:version]:
            conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
        database.mark_as_project(conn)
    conn.close()
    with Project.open(path) as opened:
        assert database.schema_version(opened.conn) == migrations.SCHEMA_VERSION
        assert database.schema_problem(opened.conn, migrations.SCHEMA_VERSION) is None


def test_connections_do_not_let_the_schema_call_functions_sqlite_does_not_mark_harmless(project):
    """Defence in depth for a file another program changes after it was checked: a view it adds that calls a
    function of ours is refused by SQLite itself."""
    with Project.open(project) as opened:
        opened.conn.create_function("leak", 1, lambda value: value)
        assert opened.conn.execute("SELECT leak(1)").fetchone()[0] == 1  # our own SQL may call it
        _edit(project, "CREATE VIEW uses_leak AS SELECT leak(name) FROM speakers")
        with pytest.raises(sqlite3.OperationalError, match="unsafe use of leak"):
            opened.conn.execute("SELECT * FROM uses_leak").fetchall()


def test_the_pinned_digest_is_the_schema_the_migrations_make():
    made = database.schema_digest(database.migrated_schema(tuple(migrations.MIGRATIONS)))
    assert made == migrations.CURRENT_SCHEMA_DIGEST, f"set migrations.CURRENT_SCHEMA_DIGEST = {made!r}"


def test_three_processes_opening_an_old_project_at_once_all_open_it(tmp_path):
    """The app and scripts after an upgrade: each migration is applied once, under the write lock; the others see
    it done (before, 26 of 60 such openings of a schema-12 project failed: "no such trigger", "duplicate column")."""
    for trial in range(5):
        path = tmp_path / f"old{trial}"
        (path / "audio").mkdir(parents=True)
        with sqlite3.connect(path / "project.sqlite") as conn:
            for script in migrations.MIGRATIONS[:12]:
                conn.executescript(script)
            conn.execute("PRAGMA user_version = 12")
            database.mark_as_project(conn)
        conn.close()
        opening = f"from spokenbench.core.store.project import Project; Project.open({str(path)!r}).close()"
        processes = [
            subprocess.Popen([sys.executable, "-c", opening], stderr=subprocess.PIPE, text=True) for _ in range(3)
        ]
        errors = [process.communicate(timeout=60)[1] for process in processes]
        assert [process.returncode for process in processes] == [0, 0, 0], errors
        with Project.open(path) as opened:
            assert database.schema_version(opened.conn) == migrations.SCHEMA_VERSION
            assert database.schema_problem(opened.conn, migrations.SCHEMA_VERSION) is None
