"""The writer: user actions' writes commit on the writer thread and tell screens what changed; they never wait
behind a long job; changes made by other processes are noticed by the session's monitor."""

import subprocess
import sys
import textwrap
import threading
import time

import pytest
from support import gmmlu_rows, write_csv

from spokenbench.app.operations import JobOp, WriteOp
from spokenbench.app.store_writer import LeftTransactionOpen
from spokenbench.core.importers import import_files
from spokenbench.core.qc.queues import queue_clips, rate_clip
from spokenbench.core.store import Project


def first_queue_clip(path) -> int:
    with Project.open(path) as project:
        return queue_clips(project.conn, "demo-qc")[0].clip_id


def ratings_of(path, annotator: str) -> list[tuple]:
    with Project.open(path) as project:
        return project.conn.execute(
            "SELECT clip_id, rating, created_at FROM ratings WHERE annotator = ?", (annotator,)
        ).fetchall()


def test_a_rating_queued_behind_another_write_when_the_project_closes_is_written(open_session, qtbot, demo_copy):
    """The window's close (Ctrl+Q, another project opened) abandons the project's operations; before, a write that
    had not started yet was skipped with them: a rating pressed just before, queued behind a slower write, lost."""
    session = open_session(demo_copy)
    clip_id = first_queue_clip(demo_copy)
    started = threading.Event()

    def slow(project):
        started.set()
        time.sleep(0.5)

    WriteOp(session, slow, changes=set(), label="A slow write").run()
    rating = WriteOp(
        session,
        lambda project: rate_clip(project, clip_id, "ana", "correct", queue="demo-qc"),
        changes={"ratings"},
        label="Saving rating",
    ).run()
    assert started.wait(5)
    session.close()  # finishes the queued writes
    assert [tuple(r)[:2] for r in ratings_of(demo_copy, "ana")] == [(clip_id, "correct")]
    assert not rating.cancellable  # nor does the jobs panel offer to skip it


@pytest.mark.slow
def test_a_write_commits_on_the_writer_thread_and_announces_its_changes(open_session, qtbot, demo_copy):
    session = open_session(demo_copy)
    clip_id = first_queue_clip(demo_copy)
    threads = []

    def rate(project):
        threads.append(threading.current_thread())
        return rate_clip(project, clip_id, "ana", "correct", queue="demo-qc")

    operation = WriteOp(session, rate, changes={"ratings"}, label="Saving rating")
    with qtbot.waitSignal(session.changes.changed, timeout=5_000) as changed:
        operation.run()
    assert changed.args == [{"ratings"}]
    qtbot.waitUntil(lambda: operation.status == "succeeded")
    assert isinstance(operation.result, int)
    assert threads == [session.writer.thread]
    assert [tuple(r)[:2] for r in ratings_of(demo_copy, "ana")] == [(clip_id, "correct")]


@pytest.mark.slow
def test_a_rejected_write_is_a_dialog_and_announces_nothing(open_session, qtbot, demo_copy, dialogs):
    session = open_session(demo_copy)
    announced = []
    session.changes.changed.connect(announced.append)
    operation = WriteOp(
        session, lambda project: rate_clip(project, 10**9, "ana", "correct"), changes={"ratings"}, label="Rating"
    ).run()
    with qtbot.waitSignal(operation.finished, timeout=5_000):
        pass
    assert [(d.title, d.text) for d in dialogs] == [("Rating failed", f"no clip {10**9} in this project")]
    qtbot.wait(50)
    assert announced == []


@pytest.mark.slow
def test_a_write_that_leaves_its_transaction_open_is_rolled_back(open_session, qtbot, project, dialogs):
    session = open_session(project.path)

    def careless(project):
        project.conn.execute("BEGIN IMMEDIATE")

    operation = WriteOp(session, careless, changes=set(), label="Careless").run()
    with qtbot.waitSignal(operation.finished, timeout=5_000):
        pass
    assert isinstance(operation.error, LeftTransactionOpen)
    # the writer still works
    after = WriteOp(session, lambda project: "fine", changes=set(), label="Next").run()
    with qtbot.waitSignal(after.finished, timeout=5_000):
        pass
    assert after.result == "fine"


@pytest.mark.slow
def test_a_rating_commits_while_a_20000_item_import_is_still_writing(open_session, qtbot, demo_copy, tmp_path):
    """The issue's "done when": the import is held in the middle of writing its 20,000 items until the rating
    has committed. If the import held the project's write lock while writing (as it used to), the rating
    would wait for it and the held import would time out."""
    session = open_session(demo_copy)
    clip_id = first_queue_clip(demo_copy)
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(20_000))
    import_is_writing = threading.Event()
    rating_committed = threading.Event()
    held = []

    def hold_halfway(done, total, message):
        if message.startswith("writing") and done >= 10_000 and not held:
            import_is_writing.set()
            held.append(rating_committed.wait(10))

    def import_items(project, progress):
        def both(done, total, message):
            hold_halfway(done, total, message)
            progress.report(done, total, message)

        return import_files(project, [table], "gmmlu-lite", progress=progress.sub_task(both))

    importing = JobOp(session, import_items, kind="import", changes={"items"}, label="Importing en.csv").run()
    qtbot.waitUntil(import_is_writing.is_set, timeout=20_000)
    started = time.monotonic()
    rating = WriteOp(
        session,
        lambda project: rate_clip(project, clip_id, "ana", "acceptable", queue="demo-qc"),
        changes={"ratings"},
        label="Saving rating",
    ).success(lambda rating_id: rating_committed.set())
    rating.run()
    with qtbot.waitSignal(rating.finished, timeout=5_000):
        pass
    latency = time.monotonic() - started
    assert rating.status == "succeeded" and importing.is_running
    with qtbot.waitSignal(importing.finished, timeout=30_000):
        pass
    assert importing.status == "succeeded" and held == [True]
    assert latency < 1.0, f"the rating took {latency:.2f} s"
    with Project.open(demo_copy) as project:
        conn = project.conn
        assert conn.execute("SELECT count(*) FROM items WHERE language = 'en' AND source = 'global-mmlu-lite'")
        imported_at = conn.execute("SELECT max(created_at) FROM imports").fetchone()[0]
        rated_at = conn.execute("SELECT created_at FROM ratings WHERE annotator = 'ana'").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 84 + 20_000
    assert rated_at < imported_at, "the rating must commit before the import does"


CHANGE_FROM_ANOTHER_PROCESS = textwrap.dedent(
    """
    import sys
    from spokenbench.core.qc.queues import rate_clip
    from spokenbench.core.store import Project
    with Project.open(sys.argv[1]) as project:
        rate_clip(project, int(sys.argv[2]), "bo", "incorrect")
    """
)


@pytest.mark.slow
def test_a_change_made_by_another_process_is_announced_within_two_seconds(open_session, qtbot, demo_copy):
    session = open_session(demo_copy)
    clip_id = first_queue_clip(demo_copy)
    announced = []
    session.changes.changed.connect(announced.append)
    qtbot.wait(300)  # the monitor has taken its first reading
    subprocess.run([sys.executable, "-c", CHANGE_FROM_ANOTHER_PROCESS, str(demo_copy), str(clip_id)], check=True)
    qtbot.waitUntil(lambda: any("ratings" in tables for tables in announced), timeout=2_000)
