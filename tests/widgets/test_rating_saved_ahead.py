"""A rating's commit waits on the disk (SQLite's fsync: 0.5 s at p90 while another program writes a lot, a colleague's
script holding the write lock for a moment). The next clip is shown and can be heard and rated meanwhile; the page
says "Saving…" until every rating is in, then "Saved", and nothing is reported saved before it is. Here the wait is
another process holding the project's write lock for a while, then letting it go, as a short job commit does.

Before 78428e2 the next clip waited for the commit: these tests fail there. Up to 288650b one rating was in flight at
a time and the next clip's rating waited for it, so a third key meanwhile was ignored: the first test fails there."""

import contextlib
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt

from spokenbench.core.store import database, opened

ANNOTATOR = "alice"
HOLDER = (  # holds the write lock until a line comes on stdin, then commits and exits
    "import sqlite3, sys; conn = sqlite3.connect(sys.argv[1], isolation_level=None); "
    "conn.execute('BEGIN IMMEDIATE'); conn.execute('UPDATE project_meta SET value = value'); "
    "print('holding', flush=True); sys.stdin.readline(); conn.execute('COMMIT')"
)


def stored(path) -> list[tuple[int, str]]:
    with opened(path) as project:
        query = "SELECT clip_id, rating FROM ratings WHERE annotator = ? AND undone_at IS NULL ORDER BY id"
        return [tuple(row) for row in project.conn.execute(query, (ANNOTATOR,))]


def hold_write_lock(project) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(project / "project.sqlite")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "holding"
    return holder


def let_go(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait(10) == 0


@contextlib.contextmanager
def write_lock_held(project):
    """Another process holding the project's write lock for the block (let go at its end, if not already)."""
    holder = hold_write_lock(project)
    try:
        yield holder
    finally:
        if holder.poll() is None:
            let_go(holder)


def rated_and_moved_on(qtbot, page, *keys: str) -> int:
    """Press `keys` on the clip shown and wait until the next one is (the write lock held elsewhere): the clip rated."""
    rated = page.rating.current.clip_id
    for key in keys:
        qtbot.keyClick(page.view, key)
    qtbot.waitUntil(lambda: not page.busy and page.rating.current.clip_id != rated, timeout=3_000)
    return rated


def test_a_quick_raters_keys_are_all_taken_while_the_disk_holds_their_ratings(
    qtbot, demo_copy, rating_page_on_demo_queue
):
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    status = page.view.status_label.text
    with write_lock_held(demo_copy):
        rated = [rated_and_moved_on(qtbot, page, "1")]
        assert status() == "Saving…" and stored(demo_copy) == []
        assert page.rating.progress.done == 1  # the queue's position moves on; the session's counts wait
        rated += [rated_and_moved_on(qtbot, page, key) for key in "323"]  # each next clip shown, heard and rated
        assert status() == "Saving… (4 ratings)" and page.rating.saving == 4 and page.ignored_keys == 0
        fifth = page.rating.current.clip_id
        qtbot.keyClick(page.view, "2")  # rated too: stored once a place among the ratings in flight is free
        assert status() == "Saving… (4 ratings) then acceptable" and page.after_saves == ("rate_acceptable", fifth)
        assert page.view.progress_label.text().endswith("this session: 0 correct, 0 acceptable, 0 incorrect · 4 saving")
        qtbot.keyClick(page.view, Qt.Key.Key_Space)  # heard again meanwhile
        qtbot.keyClick(page.view, "1")  # a second thought is not taken: the first stands
        qtbot.keyClick(page.view, Qt.Key.Key_N)  # nor a note, which would find another clip once it is done
        assert page.ignored_keys == 2 and page.rating.saving == 4 and stored(demo_copy) == []
    qtbot.waitUntil(lambda: page.idle and status() == "Saved", timeout=10_000)
    assert page.rating.current.clip_id not in [*rated, fifth]
    verdicts = ["correct", "incorrect", "acceptable", "incorrect", "acceptable"]
    assert stored(demo_copy) == list(zip([*rated, fifth], verdicts, strict=True))
    assert page.rating.progress.session_counts == {"correct": 1, "acceptable": 2, "incorrect": 2}
    assert page.view.progress_label.text().endswith("1 correct, 2 acceptable, 2 incorrect")  # none saving


def test_an_undo_pressed_while_the_rating_is_saved_takes_it_back_once_it_is_in(
    qtbot, demo_copy, rating_page_on_demo_queue
):
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "1")
        qtbot.keyClick(page.view, "z", Qt.KeyboardModifier.ControlModifier)  # "oops"
        assert page.view.status_label.text() == "Saving… then undo"
        qtbot.keyClick(page.view, "2")  # not taken: it would rate the clip the undo is about to leave
        assert page.ignored_keys == 1 and page.rating.saving == 1 and page.after_saves[0] == "undo"
    qtbot.waitUntil(lambda: page.idle and page.rating.current.clip_id == first, timeout=10_000)
    assert page.view.status_label.text().startswith("Undid rating 1 (correct)"), page.view.status_label.text()
    assert stored(demo_copy) == []


def test_ratings_the_writer_cannot_store_bring_their_clips_back_in_queue_order(
    qtbot, demo_copy, rating_page_on_demo_queue, monkeypatch
):
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 1_500)  # the writer's wait for the lock, shortened
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "1")
        second = rated_and_moved_on(qtbot, page, "2")  # in flight behind the first
        assert page.rating.saving == 2
        qtbot.waitUntil(lambda: page.idle and page.view.status_label.text().startswith("Not saved:"), timeout=10_000)
        assert page.rating.current.clip_id == first and page.rating.current.rating is None
        assert page.after_saves is None and page.rating.saving == 0 and stored(demo_copy) == []
    qtbot.keyClick(page.view, "1")  # the same keys, once the lock is free
    qtbot.waitUntil(lambda: page.idle and page.rating.current.clip_id == second, timeout=10_000)
    assert page.rating.current.rating is None  # offered again, after the first
    qtbot.keyClick(page.view, "2")
    qtbot.waitUntil(lambda: page.idle and page.view.status_label.text() == "Saved", timeout=10_000)
    assert stored(demo_copy) == [(first, "correct"), (second, "acceptable")]
    assert page.rating.current.clip_id not in (first, second)


def test_an_undo_held_for_ratings_that_fail_is_not_done_and_the_line_says_so(
    qtbot, demo_copy, rating_page_on_demo_queue, monkeypatch
):
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 1_500)  # the writer's wait for the lock, shortened
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    status = page.view.status_label.text
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "1")
        rated_and_moved_on(qtbot, page, "2")
        qtbot.keyClick(page.view, "z", Qt.KeyboardModifier.ControlModifier)  # meant for the second rating
        assert status() == "Saving… (2 ratings) then undo"
        qtbot.waitUntil(lambda: "Undo, pressed meanwhile, was not done" in status(), timeout=10_000)
        assert status().startswith("Not saved:") and page.rating.current.clip_id == first
        assert page.after_saves is None
        qtbot.waitUntil(lambda: page.idle, timeout=10_000)
    assert stored(demo_copy) == [] and page.rating.current.clip_id == first


def test_a_double_press_while_the_save_waits_stores_one_rating(qtbot, demo_copy, rating_page_on_demo_queue):
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "2", "2")  # a bounce, before the next clip is shown
        assert page.ignored_keys == 1 and page.rating.saving == 1
    qtbot.waitUntil(lambda: page.idle and page.view.status_label.text() == "Saved", timeout=10_000)
    assert stored(demo_copy) == [(first, "acceptable")]


@pytest.mark.slow
def test_the_ratings_in_flight_when_the_session_closes_are_stored(qtbot, demo_copy, rating_page_on_demo_queue):
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    with write_lock_held(demo_copy) as holder:
        rated = [rated_and_moved_on(qtbot, page, key) for key in "132"]
        assert stored(demo_copy) == [] and page.rating.saving == 3
        letting_go = threading.Timer(1.0, let_go, (holder,))  # while the close waits for the writer
        letting_go.start()
        page.session.close()  # as the window's close: the writer finishes what it was given
        letting_go.join(10)
    assert stored(demo_copy) == list(zip(rated, ["correct", "incorrect", "acceptable"], strict=True))


def test_an_undo_pressed_on_the_finished_screen_while_the_last_rating_is_saved_takes_it_back(
    qtbot, demo_copy, rating_page_on_demo_queue
):
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    while page.rating.progress.total - page.rating.progress.done > 1:
        qtbot.keyClick(page.view, "1")
        qtbot.waitUntil(lambda: page.idle, timeout=5_000)
    last = page.rating.current.clip_id
    with write_lock_held(demo_copy):
        qtbot.keyClick(page.view, "3")
        qtbot.waitUntil(lambda: not page.busy and page.rating.current is None, timeout=3_000)  # finished
        qtbot.keyClick(page.view, "z", Qt.KeyboardModifier.ControlModifier)
        assert page.view.status_label.text() == "Saving… then undo"
    qtbot.waitUntil(lambda: page.idle and page.rating.current is not None, timeout=10_000)
    assert page.rating.current.clip_id == last and page.rating.current.rating is None
    assert (last, "incorrect") not in stored(demo_copy)


def test_a_rating_that_fails_while_another_queue_opens_is_told(
    qtbot, demo_copy, rating_page_on_demo_queue, monkeypatch
):
    from PySide6.QtWidgets import QApplication, QMessageBox

    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 1_500)  # the writer's wait for the lock, shortened
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "1")
        page.show_queues()  # Esc, then Enter on the same queue before the rating is in
        page.open_queue("demo-qc")

        def told() -> list[str]:
            boxes = [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]
            return [box.text() for box in boxes if "was not saved" in box.text()]

        qtbot.waitUntil(lambda: bool(told()) and page.idle, timeout=10_000)
        assert f"Your rating of clip {first} in queue demo-qc was not saved" in told()[0]
    assert page.rating.current.clip_id == first and stored(demo_copy) == []  # offered again
