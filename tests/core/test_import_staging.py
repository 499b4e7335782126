"""The import's write phase (core/importers, core/store/items.py): rows are staged beside the project without its
write lock and copied in one short transaction. These tests belong with tests/core/test_importers.py; they live
here because the Studio foundation owns this write phase."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support import gmmlu_rows, write_csv

from spokenbench.core.foundation.processes import owner_tag
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.importers import import_files
from spokenbench.core.store import Project
from spokenbench.core.store.items import STAGING_PREFIX, remove_stale_staging_files


def staging_files(path):
    return sorted(p.name for p in path.glob(f"{STAGING_PREFIX}*"))


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_stale_staging_files_of_dead_processes_are_removed_by_the_next_import(project, tmp_path):
    host = owner_tag().split(".")[0]
    dead = project.path / f"{STAGING_PREFIX}.{host}.{dead_pid()}.0badf00d.sqlite"
    live = project.path / f"{STAGING_PREFIX}.{owner_tag()}.c0ffee00.sqlite"  # another import of ours
    foreign = project.path / f"{STAGING_PREFIX}.elsewhere.example.123.deadbeef.sqlite"  # can't tell: kept a day
    for path in (dead, live, foreign):
        path.write_bytes(b"half-written staging data")
    [result] = import_files(project, [write_csv(tmp_path / "ko.csv", gmmlu_rows(5))], "gmmlu-lite")
    assert result.imported == 5
    assert staging_files(project.path) == sorted([live.name, foreign.name])
    os.utime(foreign, (0, 0))
    assert remove_stale_staging_files(project.path) == 1 and staging_files(project.path) == [live.name]


KILLED_WHILE_STAGING = textwrap.dedent(
    """
    import sys
    from spokenbench.core.importers import import_files
    from spokenbench.core.foundation.progress import Progress
    from spokenbench.core.store import Project

    def report(done, total, message):
        if message.startswith("writing") and done >= 3_000:
            print("STAGING", flush=True)
            sys.stdin.readline()

    with Project.open(sys.argv[1]) as project:
        import_files(project, [sys.argv[2]], "gmmlu-lite", progress=Progress(report))
    """
)


@pytest.mark.slow
def test_a_kill_while_staging_leaves_the_project_unchanged_and_the_retry_cleans_up(project, tmp_path):
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(6_000))
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_WHILE_STAGING, str(project.path), str(table)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "STAGING"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    assert len(staging_files(project.path)) == 1
    assert project.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    [result] = import_files(project, [table], "gmmlu-lite")
    assert result.imported == 6_000 and staging_files(project.path) == []
    assert project.conn.execute("SELECT count(*) FROM options").fetchone()[0] == 24_000


def test_items_stored_by_another_process_meanwhile_get_ids_before_the_import(project, tmp_path):
    """Ids are assigned inside the final transaction, after whatever others committed while the import staged."""
    import_files(project, [write_csv(tmp_path / "ko.csv", gmmlu_rows(3))], "gmmlu-lite")
    other = write_csv(tmp_path / "zh.csv", gmmlu_rows(2))

    def meanwhile(done, total, message):
        if message.startswith("saving"):
            with Project.open(project.path) as elsewhere:
                import_files(elsewhere, [other], "gmmlu-lite")

    import_files(project, [write_csv(tmp_path / "en.csv", gmmlu_rows(4))], "gmmlu-lite", progress=Progress(meanwhile))
    rows = project.conn.execute(
        "SELECT i.id, i.language, m.file FROM items i JOIN imports m ON m.id = i.import_id ORDER BY i.id"
    ).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(n, lang) for n, lang in enumerate(["ko"] * 3 + ["zh"] * 2 + ["en"] * 4, 1)]
    assert all(r[2].endswith(f"{r[1]}.csv") for r in rows)
    options = project.conn.execute("SELECT item_id, count(*) FROM options GROUP BY 1 ORDER BY 1").fetchall()
    assert [tuple(o) for o in options] == [(n, 4) for n in range(1, 10)]


def test_the_same_items_stored_by_another_process_meanwhile_are_reported_as_duplicates(project, tmp_path):
    """Without --skip-existing, the items another process stored meanwhile are duplicates: a clear error naming
    them, nothing of this import stored."""
    from spokenbench.core.foundation.errors import InputError

    table = write_csv(tmp_path / "en.csv", gmmlu_rows(4))

    def meanwhile(done, total, message):
        if message.startswith("saving") and not project.conn.execute("SELECT count(*) FROM items").fetchone()[0]:
            with Project.open(project.path) as elsewhere:
                import_files(elsewhere, [table], "gmmlu-lite")

    with pytest.raises(InputError, match="already in the project; use --skip-existing"):
        import_files(project, [table], "gmmlu-lite", progress=Progress(meanwhile))
    assert project.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 4  # the other import's
    assert project.conn.execute("SELECT count(*) FROM imports").fetchone()[0] == 1
    assert staging_files(project.path) == []
    assert project.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1  # restored after the copy


def test_with_skip_existing_items_stored_meanwhile_are_skipped_not_an_error(project, tmp_path):
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(4))
    more = write_csv(tmp_path / "ko.csv", gmmlu_rows(3))

    def meanwhile(done, total, message):
        if message.startswith("saving") and not project.conn.execute("SELECT count(*) FROM items").fetchone()[0]:
            with Project.open(project.path) as elsewhere:
                import_files(elsewhere, [table], "gmmlu-lite")

    results = import_files(project, [table, more], "gmmlu-lite", skip_existing=True, progress=Progress(meanwhile))
    assert [(r.imported, r.skipped) for r in results] == [(0, 4), (3, 0)]
    assert project.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 7
    assert staging_files(project.path) == []


@pytest.mark.slow
def test_two_concurrent_skip_existing_imports_of_one_file_both_succeed(project, tmp_path):
    import subprocess
    import sys

    table = write_csv(tmp_path / "en.csv", gmmlu_rows(3000))
    spokenbench = Path(sys.executable).with_name("spokenbench")
    command = [str(spokenbench), "import", str(project.path), str(table), "--format", "gmmlu-lite", "--skip-existing"]
    processes = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    results = [(p.wait(60), p.stderr.read().decode()) for p in processes]
    assert [code for code, _ in results] == [0, 0, 0], results
    assert project.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 3000


def test_staged_rows_obey_the_projects_own_constraints(project, tmp_path, monkeypatch):
    """The copy skips re-checking CHECK constraints row by row because staging enforced the same ones."""
    from spokenbench.core import importers
    from spokenbench.core.domain.items import Item, Option

    bad = Item("src", "1", "en", "   ", (Option("A", "a"), Option("B", "b")), "A")  # blank question
    monkeypatch.setattr(importers, "parse_file", lambda path, format_name, options: [bad])
    with pytest.raises(Exception, match="CHECK constraint failed"):
        import_files(project, [write_csv(tmp_path / "x.csv", gmmlu_rows(1))], "gmmlu-lite")
    assert project.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    assert staging_files(project.path) == []
