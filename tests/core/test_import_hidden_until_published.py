"""An import is copied into the project in short transactions (issue 28: a rating waited for the whole copy), its
rows hidden behind a pending_imports row until one last transaction publishes them (migration 14). What must hold:
other writers get in between the chunks, no reader sees part of an import, and a failed or killed import leaves
nothing visible, its hidden rows removed by the next import or opening."""

import csv
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from support import gmmlu_rows, write_csv

from spokenbench.core.foundation.processes import owner_tag
from spokenbench.core.importers import import_files
from spokenbench.core.qc.queues import rate_clip
from spokenbench.core.recording.store import item_language
from spokenbench.core.store import Project, database
from spokenbench.core.store import items as store_items
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.export_queries import gender_probe_orientations
from spokenbench.core.store.gender_clips import gender_probe_items
from spokenbench.core.store.summary import item_browser_rows, item_rows, project_summary


def counts(conn) -> dict[str, int]:
    tables = ("items", "visible_items", "options", "imports", "pending_imports")
    return {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables}


def dead_owner() -> str:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return f"{owner_tag().split('.')[0]}.{process.pid}{store_items.PENDING_OWNER_SUFFIX}"


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(store_items, "IMPORT_CHUNK_ITEMS", 10)


def leave_an_import_hidden(project, table, monkeypatch) -> None:
    """Import `table` as a process killed before the publishing transaction would: its rows copied, hidden."""
    with monkeypatch.context() as patched:
        patched.setattr(store_items, "_publish", lambda conn, import_ids: (_ for _ in ()).throw(KeyboardInterrupt))
        patched.setattr(store_items, "remove_pending_imports", lambda conn, import_ids: None)  # a kill cleans nothing
        with pytest.raises(KeyboardInterrupt):
            import_files(project, [table], "gmmlu-lite")


def test_the_copy_is_chunked_and_the_rows_match_the_single_transaction_copy(project, tmp_path, monkeypatch):
    """The same ids, rows, options and imports as the one-transaction copy (digest of cb542b5's result, 600 + 300
    + 7 items, there in 3 transactions, here in 40)."""
    monkeypatch.setattr(store_items, "IMPORT_CHUNK_ITEMS", 25)
    monkeypatch.setattr(store_items, "CHUNK_PAUSE_S", 0)
    transactions = []
    real_transaction = store_items.transaction

    def counted(conn):
        transactions.append(conn is project.conn)
        return real_transaction(conn)

    tables = [write_csv(tmp_path / "en.csv", gmmlu_rows(600)), write_csv(tmp_path / "ko.csv", gmmlu_rows(300, "ko "))]
    try:
        store_items.transaction = counted
        import_files(project, tables, "gmmlu-lite")
    finally:
        store_items.transaction = real_transaction
    import_files(project, [write_csv(tmp_path / "zh.csv", gmmlu_rows(7, "zh "))], "gmmlu-lite")
    assert transactions.count(True) == 1 + 36 + 1  # the imports rows, 900 items in chunks of 25, the publishing one
    digest = hashlib.sha256()
    for query in (
        f"SELECT {store_items.ITEM_COLUMNS}, import_id FROM items ORDER BY id",
        "SELECT * FROM options ORDER BY item_id, position",
        "SELECT id, format, sha256, item_count FROM imports ORDER BY id",
    ):
        for row in project.conn.execute(query):
            digest.update(repr(tuple(row)).encode())
    assert digest.hexdigest() == "8be5c60242613c71de06ceaabd5a52a103e02ef22b3385943ed29b64c07f4ecc"
    assert counts(project.conn) == {
        "items": 907, "visible_items": 907, "options": 3_628, "imports": 3, "pending_imports": 0
    }  # fmt: skip


def test_a_rating_is_committed_between_two_chunks_while_the_import_is_still_hidden(project, tmp_path, small_chunks):
    import_files(project, [write_csv(tmp_path / "fr.csv", gmmlu_rows(1))], "gmmlu-lite")
    with project.transaction() as conn:
        clip_id = conn.execute(
            "INSERT INTO clips(item_id, part, text, language, backend, cache_key, created_at) "
            "VALUES (1, 'question', 'q', 'en', 'test', 'k', ?)",
            (utc_now(),),
        ).lastrowid
    seen_by_the_rater: list[dict] = []
    chunks: list[int] = []
    real_copy_chunk = store_items._copy_chunk

    def rate_as_the_app_does() -> None:
        with Project.open(project.path) as app:
            database.poll_for_the_write_lock(app.conn)
            rate_clip(app, clip_id, "ana", "correct")
            seen_by_the_rater.append(counts(app.conn) | {"chunks copied": len(chunks)})

    rater = threading.Thread(target=rate_as_the_app_does)

    def copy_chunk(conn, *args):
        real_copy_chunk(conn, *args)
        chunks.append(1)
        if len(chunks) == 2:  # inside the second chunk's transaction: the rater queues for the lock
            rater.start()
            threading.Event().wait(0.2)

    store_items._copy_chunk = copy_chunk
    try:
        import_files(project, [write_csv(tmp_path / "en.csv", gmmlu_rows(60, "more "))], "gmmlu-lite")
    finally:
        store_items._copy_chunk = real_copy_chunk
    rater.join(10)
    [seen] = seen_by_the_rater
    assert 2 <= seen["chunks copied"] < 6, seen  # committed after the second chunk, before the import's end
    assert seen["pending_imports"] == 1 and seen["visible_items"] == 1 and seen["items"] >= 21
    assert project.conn.execute("SELECT count(*) FROM ratings WHERE clip_id = ?", (clip_id,)).fetchone()[0] == 1
    assert counts(project.conn) == {
        "items": 61, "visible_items": 61, "options": 244, "imports": 2, "pending_imports": 0
    }  # fmt: skip


def test_a_failure_between_chunks_removes_what_was_copied(project, tmp_path, small_chunks, monkeypatch):
    import_files(project, [write_csv(tmp_path / "ko.csv", gmmlu_rows(5))], "gmmlu-lite")
    before = counts(project.conn)
    pauses = []

    def fail_at_the_fourth_pause():
        pauses.append(1)
        if len(pauses) == 4:
            raise OSError("disk gone")

    monkeypatch.setattr(store_items, "_let_other_writers_in", fail_at_the_fourth_pause)
    with pytest.raises(OSError, match="disk gone"):
        import_files(project, [write_csv(tmp_path / "en.csv", gmmlu_rows(50, "more "))], "gmmlu-lite")
    assert counts(project.conn) == before
    assert project.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert project.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL again


def test_no_reader_sees_a_hidden_import(project, tmp_path, small_chunks, monkeypatch, cli):
    """info, items, the item browser, export, evaluation planning, the languages, validation lookups, recording
    and the gender-probe readers: each lists the visible import only (queues and everything else reach items
    through clips, runs or rewrites, which only exist for items these readers listed)."""
    import_files(project, [write_csv(tmp_path / "en.csv", gmmlu_rows(4))], "gmmlu-lite")
    leave_an_import_hidden(project, write_csv(tmp_path / "ko.csv", gmmlu_rows(30, "ko ")), monkeypatch)
    hidden = counts(project.conn)
    assert hidden["items"] == 34 and hidden["visible_items"] == 4 and hidden["pending_imports"] == 1

    info = cli("info", project.path, "--json")
    assert (
        info.code == 0
        and info.json()["items"]["total"] == 4
        and info.json()["items"]["by_source"] == {"global-mmlu-lite": 4}
    )
    listing = cli("items", project.path)
    assert listing.code == 0 and len(listing.out.strip().splitlines()) == 1 + 4 and "ko " not in listing.out
    exported = cli("export", project.path, "--what", "items", "--out", tmp_path / "items.csv")
    assert exported.code == 0, exported.err
    with open(tmp_path / "items.csv", newline="", encoding="utf-8") as file:
        assert len(list(csv.DictReader(file))) == 4
    plan = cli(
        "evaluate", project.path, "--model", "simulated:steady", "--mode", "text", "--prompt", "standard",
        "--dry-run", "--json",
    )  # fmt: skip
    assert plan.code == 0, plan.err
    assert plan.json()["plan"]["requests"] == 4
    assert len(item_rows(project.conn)) == len(item_browser_rows(project.conn)) == 4
    assert [item_id for item_id, _ in store_items.iter_items(project.conn)] == [1, 2, 3, 4]
    assert list(store_items.items_in_languages(project.conn, ["ko"])) == []
    assert store_items.item_languages(project.conn) == ["en"]
    assert store_items.existing_items(project.conn, {("global-mmlu-lite", "subject_0/test/0", "en")})
    assert store_items.item_id_by_key(project.conn, "global-mmlu-lite", "subject_0/test/0", "en") == 1
    hidden_id = project.conn.execute("SELECT max(id) FROM items").fetchone()[0]
    assert item_language(project.conn, hidden_id) is None and item_language(project.conn, 1) == "en"
    assert gender_probe_items(project.conn) == [] and gender_probe_orientations(project.conn) == []
    assert counts(project.conn) == hidden  # the importing process (this one) still lives: its rows are kept


def test_the_next_import_removes_a_dead_imports_hidden_rows_and_succeeds(project, tmp_path, small_chunks, monkeypatch):
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(45))
    leave_an_import_hidden(project, table, monkeypatch)
    with project.transaction() as conn:
        conn.execute("UPDATE pending_imports SET owner = ?", (dead_owner(),))
    versions = dict(project.conn.execute("SELECT name, version FROM change_counters WHERE name = 'items'"))
    [result] = import_files(project, [table], "gmmlu-lite")  # the same items: they would collide with the hidden
    assert result.imported == 45
    assert counts(project.conn) == {
        "items": 45, "visible_items": 45, "options": 180, "imports": 1, "pending_imports": 0
    }  # fmt: skip
    after = dict(project.conn.execute("SELECT name, version FROM change_counters WHERE name = 'items'"))
    assert after["items"] > versions["items"]  # published: open screens reload their items


def test_a_hidden_import_of_another_machine_is_kept_for_a_day(project, tmp_path, small_chunks, monkeypatch):
    leave_an_import_hidden(project, write_csv(tmp_path / "en.csv", gmmlu_rows(12)), monkeypatch)
    with project.transaction() as conn:
        conn.execute("UPDATE pending_imports SET owner = 'elsewhere.example.4242.import'")
    assert store_items.remove_abandoned_imports(project.conn) == 0 and counts(project.conn)["items"] == 12
    with project.transaction() as conn:
        conn.execute("UPDATE pending_imports SET started_at = '2020-01-01T00:00:00.000+00:00'")
    assert store_items.remove_abandoned_imports(project.conn) == 1
    assert counts(project.conn) == {
        "items": 0, "visible_items": 0, "options": 0, "imports": 0, "pending_imports": 0
    }  # fmt: skip


@pytest.mark.parametrize("started_at", ["2999-01-01T00:00:00.000+00:00", "yesterday", ""])
def test_a_shared_projects_hidden_import_with_a_start_no_clock_gives_hides_nothing(
    project, tmp_path, small_chunks, monkeypatch, started_at
):
    """A project from someone else is data: a pending import dated in the future (or not dated) would otherwise
    keep its items hidden for ever; it is removed as abandoned like a day-old one."""
    leave_an_import_hidden(project, write_csv(tmp_path / "en.csv", gmmlu_rows(12)), monkeypatch)
    with project.transaction() as conn:
        conn.execute(
            "UPDATE pending_imports SET owner = 'elsewhere.example.4242.import', started_at = ?", (started_at,)
        )
    assert store_items.remove_abandoned_imports(project.conn) == 1
    assert counts(project.conn)["pending_imports"] == 0 and counts(project.conn)["items"] == 0


KILLED_BETWEEN_CHUNKS = textwrap.dedent(
    """
    import sys
    from spokenbench.core.importers import import_files
    from spokenbench.core.store import Project
    from spokenbench.core.store import items

    pauses = []
    real_pause = items._let_other_writers_in

    def pause():
        real_pause()
        pauses.append(1)
        if len(pauses) == 4:  # three chunks are committed, hidden
            print("BETWEEN CHUNKS", flush=True)
            sys.stdin.readline()

    items._let_other_writers_in = pause
    with Project.open(sys.argv[1]) as project:
        import_files(project, [sys.argv[2]], "gmmlu-lite")
    """
)


@pytest.mark.slow
def test_a_kill_between_chunks_shows_nothing_and_reopening_removes_the_hidden_rows(project, tmp_path):
    import_files(project, [write_csv(tmp_path / "ko.csv", gmmlu_rows(3, "ko "))], "gmmlu-lite")
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(6_000))
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_BETWEEN_CHUNKS, str(project.path), str(table)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "BETWEEN CHUNKS"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    hidden = counts(project.conn)
    assert hidden["items"] == 3 + 3 * store_items.IMPORT_CHUNK_ITEMS and hidden["pending_imports"] == 1
    assert hidden["visible_items"] == 3
    assert project_summary(project.conn)["items"]["total"] == 3
    with Project.open(project.path) as reopened:
        assert counts(reopened.conn) == {
            "items": 3, "visible_items": 3, "options": 12, "imports": 1, "pending_imports": 0
        }  # fmt: skip
    [result] = import_files(project, [table], "gmmlu-lite")
    assert result.imported == 6_000
    assert counts(project.conn) == {
        "items": 6_003, "visible_items": 6_003, "options": 24_012, "imports": 2, "pending_imports": 0
    }  # fmt: skip
    assert project.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_migration_14_keeps_every_item_of_an_older_project_visible_and_counted(tmp_path, monkeypatch):
    """Items imported before migration 14 (with an import id, no pending row) stay visible; afterwards an item
    without an import id still bumps the items counter row by row, one with an import id is counted by its insert."""
    from spokenbench.core.importers import ImportOptions, parse_file
    from spokenbench.core.store import migrations

    items = parse_file(write_csv(tmp_path / "en.csv", gmmlu_rows(8)), "gmmlu-lite", ImportOptions())
    monkeypatch.setattr(database, "MIGRATIONS", migrations.MIGRATIONS[:13])
    monkeypatch.setattr(database, "SCHEMA_VERSION", 13)
    monkeypatch.setattr("spokenbench.core.store.project.SCHEMA_VERSION", 13)
    with Project.create(tmp_path / "p") as old, old.transaction() as conn:
        import_id = store_items.record_import(conn, "old.csv", "gmmlu-lite", "0" * 64, 3)
        store_items.insert_items(conn, items[:3], import_id)
    monkeypatch.undo()
    with Project.open(tmp_path / "p") as project:
        assert project.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        assert counts(project.conn) == {
            "items": 3, "visible_items": 3, "options": 12, "imports": 1, "pending_imports": 0
        }  # fmt: skip

        def items_counter() -> int:
            return project.conn.execute("SELECT version FROM change_counters WHERE name = 'items'").fetchone()[0]

        before = items_counter()
        with project.transaction() as conn:
            store_items.insert_items(conn, items[3:5])  # no import: the trigger, once per row
        assert items_counter() == before + 2
        with project.transaction() as conn:
            store_items.insert_items(conn, items[5:8], import_id)  # an import's rows: once per statement
        assert items_counter() == before + 3 and counts(project.conn)["visible_items"] == 8


@pytest.mark.slow
def test_two_imports_copied_at_once_interleave_their_chunks_and_keep_each_items_options(project, tmp_path):
    """Each chunk takes its ids past the largest at that moment, so two imports' chunks may interleave: every
    item keeps its own options all the same (option A of question n is 'alpha n'), and each import is whole."""
    tables = [write_csv(tmp_path / f"{language}.csv", gmmlu_rows(4_000, f"{language} ")) for language in ("en", "ko")]
    spokenbench = Path(sys.executable).with_name("spokenbench")
    processes = [
        subprocess.Popen(
            [str(spokenbench), "import", str(project.path), str(table), "--format", "gmmlu-lite"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for table in tables
    ]
    assert [(p.wait(120), p.stderr.read().decode()) for p in processes] == [(0, ""), (0, "")]
    assert counts(project.conn) == {
        "items": 8_000, "visible_items": 8_000, "options": 32_000, "imports": 2, "pending_imports": 0
    }  # fmt: skip
    matched = project.conn.execute(
        "SELECT count(*) FROM items i JOIN options o ON o.item_id = i.id WHERE o.letter = 'A' AND "
        "o.text = 'alpha ' || substr(i.question, length(i.language) + 18, length(i.question) - length(i.language) - 18)"
    ).fetchone()[0]
    assert matched == 8_000


def test_items_hidden_by_a_live_import_elsewhere_are_waited_for_then_reported(project, tmp_path, monkeypatch):
    """The UNIQUE key counts hidden rows: an import of the same items while another live process's copy of them
    is hidden waits for that import to end, looks again, and says so when it never does; nothing of it is left."""
    from spokenbench.core import importers
    from spokenbench.core.foundation.errors import SpokenBenchError

    table = write_csv(tmp_path / "en.csv", gmmlu_rows(12))
    leave_an_import_hidden(project, table, monkeypatch)
    elsewhere = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with project.transaction() as conn:
            conn.execute(
                "UPDATE pending_imports SET owner = ?", (f"{owner_tag().split('.')[0]}.{elsewhere.pid}.import",)
            )
        before = counts(project.conn)
        monkeypatch.setattr(importers, "OTHER_IMPORT_WAIT_S", 0.1)
        with pytest.raises(SpokenBenchError, match="other processes kept storing these items"):
            import_files(project, [table], "gmmlu-lite")
        assert counts(project.conn) == before  # the other import's hidden rows only
    finally:
        elsewhere.kill()
        elsewhere.wait()
