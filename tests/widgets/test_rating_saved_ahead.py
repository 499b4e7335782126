"""A rating's commit waits on the disk (SQLite's fsync: 0.5 s at p90 while another program writes a lot, a colleague's
script holding the write lock for a moment). The next clip is shown and can be heard and rated meanwhile; the page
says "Saving…" until every rating is in, then "Saved", and nothing is reported saved before it is. Here the wait is
another process holding the project's write lock for a while, then letting it go, as a short job commit does.

Before 78428e2 the next clip waited for the commit: these tests fail there. Up to 288650b one rating was in flight at
a time and the next clip's rating waited for it, so a third key meanwhile was ignored: the first test fails there."""

import threading
import time
from types import SimpleNamespace

import pytest
from demo_copies import linked_copy
from PySide6.QtCore import QCoreApplication, QEvent, QSettings, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from support import let_go, write_lock_held

from spokenbench.core.store import database, opened

ANNOTATOR = "alice"


def stored(path) -> list[tuple[int, str]]:
    with opened(path) as project:
        query = "SELECT clip_id, rating FROM ratings WHERE annotator = ? AND undone_at IS NULL ORDER BY id"
        return [tuple(row) for row in project.conn.execute(query, (ANNOTATOR,))]


@pytest.fixture
def short_lock_wait(monkeypatch):
    """The writer's wait for another process's lock, 15 s in the app, shortened: a rating behind it fails soon."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 1_500)


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
    qtbot, demo_copy, rating_page_on_demo_queue, short_lock_wait
):
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
    qtbot, demo_copy, rating_page_on_demo_queue, short_lock_wait
):
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
    qtbot, demo_copy, rating_page_on_demo_queue, short_lock_wait, dialogs
):
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "1")
        page.show_queues()  # Esc, then Enter on the same queue before the rating is in
        page.open_queue("demo-qc")
        qtbot.waitUntil(lambda: any("was not saved" in box.text for box in dialogs) and page.idle, timeout=10_000)
        assert f"Your rating of clip {first} in queue demo-qc was not saved" in dialogs[0].text
    assert page.rating.current.clip_id == first and stored(demo_copy) == []  # offered again


@pytest.fixture
def window_rating(shown_window, tmp_path, qtbot):
    """window_rating(project) → (the main window, its Rating page on the queue demo-qc of `project`)."""
    from spokenbench.app.settings_dialog import ANNOTATOR_KEY

    def make(project):
        settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
        settings.setValue(ANNOTATOR_KEY, ANNOTATOR)
        window = shown_window(settings)
        with qtbot.waitSignal(window.open_project(project).finished, timeout=20_000):
            pass
        window.show_page("rating")
        qtbot.waitUntil(lambda: not window.page_opening("rating"), timeout=10_000)
        page = window.page_widgets["rating"]
        page.open_queue("demo-qc")
        qtbot.waitUntil(lambda: page.rating is not None and page.idle, timeout=10_000)
        return window, page

    return make


def test_a_quit_waits_for_the_ratings_in_flight_says_so_and_closes_once_they_are_in(qtbot, demo_copy, window_rating):
    """Before, the quit waited through the pack's machinery with no pack open, and its dialog said "Saving the ratings
    into the pack … Every rating is already kept in the pack.d" (false: they were waiting for the lock); its "Quit
    without saving into the pack" then froze the window for the writer's 10 s."""
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated = [rated_and_moved_on(qtbot, page, key) for key in "13"]
        asked = time.monotonic()
        window.close()
        assert time.monotonic() - asked < 1.0 and window.isVisible()  # waits, the window answering meanwhile
        window.close()  # Ctrl+Q again before the dialog: still one wait
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible())
        assert "2 changes you made (ratings, notes, undos) are still being saved" in window.writes_dialog.message.text()
        let_go(holder)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)  # closed by itself once they are in
    assert stored(demo_copy) == [(rated[0], "correct"), (rated[1], "incorrect")]


def test_back_to_the_project_goes_on_saving_and_quit_without_them_closes_at_once(qtbot, demo_copy, window_rating):
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        first = rated_and_moved_on(qtbot, page, "2")
        window.close()
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible())
        qtbot.keyClick(window.writes_dialog, Qt.Key.Key_Escape)  # back: the rating goes on waiting
        assert window.isVisible() and not window.writes_dialog.isVisible()
        let_go(holder)
        qtbot.waitUntil(lambda: page.idle and page.view.status_label.text() == "Saved", timeout=10_000)
    assert window.isVisible() and stored(demo_copy) == [(first, "acceptable")]
    with write_lock_held(demo_copy):
        rated_and_moved_on(qtbot, page, "3")
        window.close()
        qtbot.waitUntil(lambda: window.writes_dialog.isVisible())
        asked = time.monotonic()
        window.writes_dialog.without_button.click()
        assert not window.isVisible() and time.monotonic() - asked < 2.0


def test_told_to_end_a_quit_waits_a_while_for_the_writes_and_asks_nothing(qtbot, demo_copy, window_rating, monkeypatch):
    from spokenbench.app import main_window

    monkeypatch.setattr(main_window, "TOLD_TO_END_WRITES_S", 1.0)  # 10 s in the app
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy):
        rated_and_moved_on(qtbot, page, "1")
        window.close()  # Ctrl+Q first: the dialog comes
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible())
        told = time.monotonic()
        window.close_when_told()  # then a logout's SIGTERM: nobody to answer the dialog, which goes
        assert window.isVisible() and not window.writes_dialog.isVisible()
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=5_000)
        assert time.monotonic() - told >= 0.9  # the writes had their time from the signal on
        assert not window.writes_dialog.isVisible() and stored(demo_copy) == []


def test_a_write_that_fails_while_the_quit_waits_stops_the_quit_and_says_why(
    qtbot, demo_copy, window_rating, short_lock_wait, dialogs
):
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "1")
        window.close()
        qtbot.waitUntil(lambda: any(box.text.startswith("Not quitting:") for box in dialogs), timeout=10_000)
        assert window.isVisible() and not window.writes_dialog.isVisible()
        assert "Saving rating:" in dialogs[-1].text
        qtbot.waitUntil(lambda: page.idle and page.rating.current.clip_id == first, timeout=10_000)  # offered again
    assert stored(demo_copy) == [] and window.isVisible()


@pytest.fixture
def other_project(built_demo, tmp_path):
    return linked_copy(built_demo, tmp_path / "other-project")


class Pauses:
    """The longest the event loop went without running a 20 ms timer, from `start()` on."""

    def __init__(self):
        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.timeout.connect(lambda: self.ticks.append(time.monotonic()))

    def start(self) -> None:
        self.ticks = [time.monotonic()]
        self.timer.start(20)

    def longest(self) -> float:
        ends = [*self.ticks[1:], time.monotonic()]
        return max(later - earlier for earlier, later in zip(self.ticks, ends, strict=True))


@pytest.fixture
def pauses():
    watch = Pauses()
    yield watch
    watch.timer.stop()


def opened_with(window, project, shown):
    """Open `project` as the demo is opened (`run_open`), `shown()` called once it is the project shown."""
    from spokenbench.app.main_window import load_project_view

    return window.run_open(lambda progress: (project, load_project_view(project, progress)), "Opening", shown)


def opening_waits(qtbot, window, project) -> None:
    """Open `project` and wait until the window says the opening waits for the writes."""
    window.open_project(project)
    qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible(), timeout=20_000)


def test_another_project_opens_once_the_ratings_in_flight_are_in_the_window_answering_meanwhile(
    qtbot, demo_copy, other_project, window_rating, pauses
):
    """Before, the opening closed the project's writer on the UI thread: the window froze for the writer's 10 s
    (measured 10.03 s), then opened the other project with the rating still waiting, told nothing of it."""
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated = rated_and_moved_on(qtbot, page, "1")
        pauses.start()
        shown = []
        opened_with(window, other_project, shown=lambda: shown.append(window.project_path))
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible(), timeout=20_000)
        assert shown == []  # before, the demo's tour started over the project still open
        dialog = window.writes_dialog
        assert dialog.windowTitle() == "Saving before opening other-project"
        assert dialog.without_button.text() == "&Open other-project without saving"
        assert "other-project opens as soon as it is in. If it cannot be saved" in dialog.message.text()
        assert window.project_path == demo_copy and page.rating.saving == 1
        let_go(holder)
        qtbot.waitUntil(lambda: window.project_path == other_project, timeout=10_000)
    assert not dialog.isVisible() and stored(demo_copy) == [(rated, "correct")] and shown == [other_project]
    assert pauses.longest() < 1.0
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is window.windowHandle(), timeout=2_000)  # the keys back


def test_back_from_the_openings_wait_drops_the_opening_and_the_ratings_go_on(
    qtbot, demo_copy, other_project, window_rating
):
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated = rated_and_moved_on(qtbot, page, "3")
        shown = []
        opened_with(window, other_project, shown=lambda: shown.append(1))  # as the demo's tour waits for the demo
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible(), timeout=20_000)
        qtbot.keyClick(window.writes_dialog, Qt.Key.Key_Escape)
        assert not window.writes_dialog.isVisible() and window.summary_label.text().startswith(str(demo_copy))
        qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is window.windowHandle(), timeout=2_000)
        let_go(holder)
        qtbot.waitUntil(lambda: page.idle and page.view.status_label.text() == "Saved", timeout=10_000)
    qtbot.wait(200)  # longer than the wait's polls: the opening is not taken up again
    assert window.project_path == demo_copy and stored(demo_copy) == [(rated, "incorrect")]
    with qtbot.waitSignal(window.open_project(other_project).finished, timeout=20_000):
        pass
    assert window.project_path == other_project and shown == []  # dropped with the opening it waited for


def test_a_rating_that_fails_while_another_project_waits_to_open_stops_the_opening_and_says_why(
    qtbot, demo_copy, other_project, window_rating, dialogs, monkeypatch
):
    """Before, the writer's close gave up on the write after the lock's wait and opened the other project; the
    rating, never stored, was not named anywhere."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 5_000)  # 15 s in the app; long enough for the other's loading
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy):
        first = rated_and_moved_on(qtbot, page, "1")
        opening_waits(qtbot, window, other_project)
        qtbot.waitUntil(
            lambda: any(box.text.startswith("Not opening other-project:") for box in dialogs), timeout=10_000
        )
        assert "Saving rating:" in dialogs[-1].text and "or open other-project again" in dialogs[-1].text
        qtbot.waitUntil(lambda: page.idle and page.rating.current.clip_id == first, timeout=10_000)  # offered again
    assert window.project_path == demo_copy and stored(demo_copy) == []
    with qtbot.waitSignal(window.open_project(other_project).finished, timeout=20_000):
        pass  # nothing left to wait for: opened at once
    assert window.project_path == other_project


def test_a_quit_while_another_project_waits_to_open_waits_in_its_place(qtbot, demo_copy, other_project, window_rating):
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated = rated_and_moved_on(qtbot, page, "2")
        opening_waits(qtbot, window, other_project)
        window.close_when_told()  # a logout meanwhile: the opening is dropped, the quit waits, asking nothing
        assert window.isVisible() and not window.writes_dialog.isVisible()
        let_go(holder)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert window.project_path == demo_copy and stored(demo_copy) == [(rated, "acceptable")]


def test_ctrl_q_while_another_project_waits_to_open_waits_in_its_place_and_back_stays(
    qtbot, demo_copy, other_project, window_rating
):
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated = rated_and_moved_on(qtbot, page, "1")
        window.open_project(other_project)
        qtbot.waitUntil(lambda: window._writes_wait is not None, timeout=20_000)  # before its dialog
        window.close()  # Ctrl+Q: the quit's wait instead
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible())
        assert window.writes_dialog.windowTitle() == "Saving before quitting"
        assert not window.summary_label.text().startswith("Opening")
        qtbot.keyClick(window.writes_dialog, Qt.Key.Key_Escape)  # back: neither quits nor opens
        let_go(holder)
        qtbot.waitUntil(lambda: page.idle and page.view.status_label.text() == "Saved", timeout=10_000)
    qtbot.wait(200)
    assert window.isVisible() and window.project_path == demo_copy and stored(demo_copy) == [(rated, "correct")]


def test_an_opening_that_comes_while_a_quit_waits_is_dropped(qtbot, demo_copy, other_project, window_rating):
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated = rated_and_moved_on(qtbot, page, "3")
        window.close()
        loading = window.open_project(other_project)
        qtbot.waitUntil(lambda: loading.status == "succeeded", timeout=20_000)  # loaded while the quit waits
        assert window._writes_wait[1] == "quit" and window.project_path == demo_copy
        assert not window.summary_label.text().startswith("Opening")
        let_go(holder)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert window.project_path == demo_copy and stored(demo_copy) == [(rated, "incorrect")]


def test_open_without_saving_opens_at_once_and_a_rating_left_behind_is_written_if_the_lock_comes(
    qtbot, demo_copy, other_project, window_rating, pauses
):
    """A share that hangs never answers, so a wait for it never ends: the dialog's Alt+O goes on without it."""
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated = rated_and_moved_on(qtbot, page, "2")
        opening_waits(qtbot, window, other_project)
        pauses.start()
        window.writes_dialog.without_button.click()
        qtbot.waitUntil(lambda: window.project_path == other_project, timeout=5_000)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # the closed project's objects go, as
        # they do once the app's event loop runs again
        assert pauses.longest() < 0.5  # the writer is not waited for (a quit's waits 0.5 s; before, 10 s)
        assert not window.writes_dialog.isVisible()
        let_go(holder)
    qtbot.waitUntil(lambda: stored(demo_copy) == [(rated, "acceptable")], timeout=10_000)  # the app lives on
    # ...and the write ends: before, its outcome raised (its project's signals deleted) and it stayed "running"
    qtbot.waitUntil(lambda: not [op for op in window.runner.running if op.label == "Saving rating"], timeout=5_000)


def test_a_newer_opening_wins_over_one_whose_writes_came_in_between_two_polls(
    qtbot, demo_copy, other_project, window_rating, built_demo, tmp_path
):
    """The older opening's poll, coming after the newer project opened, opened the older one over it (review)."""
    third = linked_copy(built_demo, tmp_path / "third-project")
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        rated_and_moved_on(qtbot, page, "1")
        window.open_project(other_project)
        qtbot.waitUntil(lambda: window._writes_wait is not None, timeout=20_000)
        window._writes_poll.setInterval(60_000)  # its next poll not yet come...
        let_go(holder)
    qtbot.waitUntil(lambda: not window.session.unfinished_writes(), timeout=10_000)  # ...when the rating is in
    with qtbot.waitSignal(window.open_project(third).finished, timeout=20_000):
        pass
    window._writes_poll.setInterval(50)  # had the older wait been left, its poll would open other-project now
    qtbot.wait(200)
    assert window.project_path == third and window._writes_wait is None


def test_the_wait_for_a_rating_before_another_queue_opens_is_not_counted_as_a_change(qtbot, demo_copy, window_rating):
    """The empty write queued behind the rating (so the queue reads it) was counted: "2 changes you made" (review)."""
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy):
        rated_and_moved_on(qtbot, page, "1")
        page.show_queues()
        page.open_queue("demo-qc")
        window.close()
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible())
        assert window.writes_dialog.message.text().startswith("1 change you made (a rating, a note, an undo) is")
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)


def test_a_write_that_changes_no_table_is_waited_for_too(qtbot, demo_copy, window_rating, pauses):
    """The rating keys' save declares no table (`changes=set()`) but writes: a quit did not wait for it and froze
    10 s in the writer's close instead (review of 6c50a42, which took an empty `changes` for "only waits")."""
    from spokenbench.app.operations import WriteOp
    from spokenbench.core.qc.rating_session import save_keymap

    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy) as holder:
        keys = lambda project: save_keymap(project, ANNOTATOR, {"rate_correct": ["7"]})  # noqa: E731
        WriteOp(window.session, keys, changes=set(), label="Saving the rating keys").run()
        pauses.start()
        window.close()
        qtbot.waitUntil(lambda: window.writes_dialog is not None and window.writes_dialog.isVisible())
        assert pauses.longest() < 1.0 and window.isVisible()
        let_go(holder)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)


def test_a_rating_that_failed_between_two_polls_stops_the_quit_that_replaces_the_opening(
    qtbot, demo_copy, other_project, window_rating, dialogs, monkeypatch
):
    """The quit took the opening's place without looking at its writes: one that had failed since the last poll was
    no longer unfinished, and the window closed with it unsaved (review of 6c50a42)."""
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 5_000)
    window, page = window_rating(demo_copy)
    with write_lock_held(demo_copy):
        rated_and_moved_on(qtbot, page, "1")
        opening_waits(qtbot, window, other_project)
        window._writes_poll.setInterval(60_000)  # no poll comes...
        qtbot.waitUntil(lambda: not window.session.unfinished_writes(), timeout=10_000)  # ...as the rating fails
        window.close()
        window._writes_poll.setInterval(50)  # polls again, for the quit now
        qtbot.waitUntil(lambda: any(box.text.startswith("Not quitting:") for box in dialogs), timeout=5_000)
    assert window.isVisible() and window.project_path == demo_copy and stored(demo_copy) == []


def test_an_ampersand_in_the_projects_name_is_shown_and_makes_no_shortcut(qtbot):
    from PySide6.QtWidgets import QWidget

    from spokenbench.widgets.writes_wait_dialog import WritesWaitDialog

    parent = QWidget()
    qtbot.addWidget(parent)
    assert WritesWaitDialog(1, parent, "open Q&A").without_button.text() == "&Open Q&&A without saving"


def test_an_answer_to_open_without_saving_is_forgotten_with_any_opening_dropped(
    qtbot, demo_copy, other_project, window_rating, built_demo, tmp_path
):
    """ "Open X without saving", then X's opening replaced by Y's and Y's dropped (Back): the answer for X stood, and
    opening X later skipped the wait, leaving the ratings made since to the old writer (review of 50e58bf)."""
    third = linked_copy(built_demo, tmp_path / "third-project")
    window, page = window_rating(demo_copy)
    window._writes_given_up = "open other-project"  # as if answered for an opening that a take's question then held
    with write_lock_held(demo_copy) as holder:
        rated_and_moved_on(qtbot, page, "1")
        opening_waits(qtbot, window, third)
        qtbot.keyClick(window.writes_dialog, Qt.Key.Key_Escape)  # Back: this opening is dropped
        opening_waits(qtbot, window, other_project)  # waits: not opened at once
        assert window.project_path == demo_copy
        let_go(holder)
        qtbot.waitUntil(lambda: window.project_path == other_project, timeout=10_000)


def test_an_opening_that_meets_a_take_while_a_quit_waits_is_dropped_without_asking(
    qtbot, demo_copy, other_project, window_rating
):
    """It asked "Keep the take and open …?", and its Go on recording forgot the quit's answers (review of 50e58bf)."""
    window, page = window_rating(demo_copy)
    speakers = window.page_widgets.get("speakers")
    with write_lock_held(demo_copy) as holder:
        rated_and_moved_on(qtbot, page, "1")
        window.close()  # the quit waits for the rating
        qtbot.waitUntil(lambda: window._writes_wait is not None)
        taking = SimpleNamespace(take_in_hand="recording", take_described="a take of 3 s")  # the Speakers page, as
        window.page_widgets["speakers"] = taking  # the closing sees it: a take being recorded
        try:
            loading = window.open_project(other_project)
            qtbot.waitUntil(lambda: loading.status == "succeeded", timeout=20_000)
            assert window.take_question is None or not window.take_question.isVisible()  # not asked: dropped
        finally:
            window.page_widgets["speakers"] = speakers
        let_go(holder)
        qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert window.project_path == demo_copy
