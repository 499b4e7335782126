"""Reviewing flagged rewrites with the keyboard alone: every decision is stored through a WriteOp, with the
annotator's name from Settings, and Ctrl+Z undoes the last one."""

import pytest
from PySide6.QtCore import QSettings, Qt

from spokenbench.app.main_window import MainWindow
from spokenbench.app.settings_dialog import ANNOTATOR_KEY
from spokenbench.core.store import opened
from spokenbench.widgets.rewrite_review import highlighted


@pytest.fixture
def settings(tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue(ANNOTATOR_KEY, "ana")
    return settings


@pytest.fixture
def window(qtbot, settings):
    w = MainWindow(audio_message="off", poll_interval_s=0.1, settings=settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.shutdown()


@pytest.fixture
def review(window, qtbot, demo_copy):
    with qtbot.waitSignal(window.open_project(demo_copy).finished, timeout=10_000):
        pass
    window.sidebar.select("rewrites")
    view = window.rewrite_page.view
    qtbot.waitUntil(lambda: len(view.entries) == 20, timeout=5_000)  # 10 reviewed in the demo, 10 waiting
    return window.rewrite_page, view, demo_copy


def reviews_by(path, reviewer):
    with opened(path) as project:
        rows = project.conn.execute(
            "SELECT item_id, part, decision, edited_rewrite_id FROM rewrite_reviews WHERE reviewer = ? ORDER BY id",
            (reviewer,),
        )
        return [tuple(row) for row in rows]


def saved(qtbot, page):
    qtbot.waitUntil(lambda: page.last_write.status == "succeeded", timeout=5_000)


@pytest.mark.slow
def test_accept_reject_and_edit_with_keys_alone(review, qtbot):
    page, view, path = review
    first = view.current_entry()
    assert view.statuses[view.index] == "flagged" and view.progress_label.text().startswith("11 / 20")
    qtbot.keyClick(view, Qt.Key.Key_A)
    saved(qtbot, page)
    second = view.current_entry()
    qtbot.keyClick(view, Qt.Key.Key_X)
    saved(qtbot, page)
    third = view.current_entry()
    qtbot.keyClick(view, Qt.Key.Key_E)
    assert view.editing
    view.rewrite_editor.selectAll()
    qtbot.keyClicks(view.rewrite_editor, "fixed by hand")
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    saved(qtbot, page)
    assert reviews_by(path, "ana")[:2] == [
        (first.item_id, first.part, "accept", None),
        (second.item_id, second.part, "reject", None),
    ]
    item_id, part, decision, edited_id = reviews_by(path, "ana")[2]
    assert (item_id, part, decision) == (third.item_id, third.part, "edit")
    with opened(path) as project:
        assert (
            project.conn.execute("SELECT text FROM rewrites WHERE id = ?", (edited_id,)).fetchone()[0]
            == "fixed by hand"
        )
    qtbot.waitUntil(lambda: view.decided_count() == 13, timeout=5_000)
    qtbot.waitUntil(lambda: window_badge(page) == "Rewrites · 7 to review", timeout=5_000)


def window_badge(page):
    return page.window.sidebar.text_of("rewrites")


@pytest.mark.slow
def test_moving_with_j_k_and_arrows_changes_nothing(review, qtbot):
    page, view, path = review
    start = view.index
    qtbot.keyClick(view, Qt.Key.Key_J)
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert view.index == start + 2
    qtbot.keyClick(view, Qt.Key.Key_K)
    qtbot.keyClick(view, Qt.Key.Key_Up)
    qtbot.keyClick(view, Qt.Key.Key_Up)
    assert view.index == start - 1
    qtbot.keyClick(view, Qt.Key.Key_E)
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Escape)
    assert not view.editing and reviews_by(path, "ana") == []


@pytest.mark.slow
def test_ctrl_z_undoes_the_last_decision_keeping_history(review, qtbot):
    page, view, path = review
    entry = view.current_entry()
    qtbot.keyClick(view, Qt.Key.Key_Return)
    saved(qtbot, page)
    qtbot.keyClick(view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    saved(qtbot, page)
    assert page.last_write.result.decision == "accept"
    assert view.current_key() == (entry.item_id, entry.part)
    qtbot.waitUntil(lambda: view.statuses[view.index] == "flagged", timeout=5_000)
    assert reviews_by(path, "ana") == [(entry.item_id, entry.part, "accept", None)]  # history kept
    with opened(path) as project:
        status = project.conn.execute(
            "SELECT status FROM rewrites WHERE item_id = ? AND part = ? ORDER BY version DESC LIMIT 1",
            (entry.item_id, entry.part),
        ).fetchone()[0]
    assert status == "flagged"
    qtbot.keyClick(view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    saved(qtbot, page)
    assert page.last_write.result is None and "Nothing" in view.message_label.text()


@pytest.mark.slow
def test_without_an_annotator_name_nothing_is_stored(review, qtbot, window):
    page, view, path = review
    window.settings.setValue(ANNOTATOR_KEY, "")
    qtbot.keyClick(view, Qt.Key.Key_A)
    assert "Settings" in view.message_label.text()
    assert view.statuses[view.index] == "flagged"  # the entry it stayed on or came back to
    assert page.last_write is None and reviews_by(path, "") == []


@pytest.mark.slow
def test_highlights_follow_the_flag_diff():
    left, right = highlighted("2 and -5", "two and negative five")
    assert "line-through" in left and ">2<" in left and ">-5<" in left
    assert ">two<" in right and ">negative five<" in right and " and " in right


@pytest.mark.slow
def test_a_part_marked_for_manual_rewriting_is_written_by_hand(window, qtbot, demo_copy):
    from spokenbench.core.rewriting.store import store_rewrite_outcome

    with opened(demo_copy) as project:
        item_id = project.conn.execute(
            "SELECT min(id) FROM items WHERE id NOT IN (SELECT item_id FROM rewrites)"
        ).fetchone()[0]
        parts = 1 + project.conn.execute("SELECT count(*) FROM options WHERE item_id = ?", (item_id,)).fetchone()[0]
        with project.transaction() as tx:
            store_rewrite_outcome(tx, item_id, "manual", "test-model", 3, "no valid answer")
    with qtbot.waitSignal(window.open_project(demo_copy).finished, timeout=10_000):
        pass
    qtbot.waitUntil(lambda: window.sidebar.text_of("rewrites") == f"Rewrites · {10 + parts} to review", timeout=5_000)
    window.sidebar.select("rewrites")
    page, view = window.rewrite_page, window.rewrite_page.view
    qtbot.waitUntil(lambda: len(view.entries) == 20 + parts, timeout=5_000)  # its question and options join the queue
    view.index = next(i for i, e in enumerate(view.entries) if e.item_id == item_id)
    qtbot.keyClick(view, Qt.Key.Key_A)
    assert "write one with E" in view.message_label.text() and page.last_write is None
    qtbot.keyClick(view, Qt.Key.Key_E)
    view.rewrite_editor.selectAll()
    qtbot.keyClicks(view.rewrite_editor, "a question read aloud")
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Enter, Qt.KeyboardModifier.ControlModifier)
    saved(qtbot, page)
    [(stored_item, part, decision, edited_id)] = reviews_by(demo_copy, "ana")
    assert (stored_item, decision) == (item_id, "edit") and edited_id is not None
    qtbot.waitUntil(lambda: window.sidebar.text_of("rewrites") == f"Rewrites · {9 + parts} to review", timeout=5_000)
    written_by_hand = next(i for i, e in enumerate(view.entries) if (e.item_id, e.part) == (item_id, part))
    qtbot.waitUntil(lambda: view.statuses[written_by_hand] == "edited", timeout=5_000)  # stays in the queue
    assert len(view.entries) == 20 + parts


@pytest.mark.slow
def test_going_back_to_a_saved_edit_shows_the_edit_and_no_stale_message(review, qtbot):
    page, view, path = review
    edited = view.current_entry()
    qtbot.keyClick(view, Qt.Key.Key_E)
    view.rewrite_editor.selectAll()
    qtbot.keyClicks(view.rewrite_editor, "the annotator's own words")
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    saved(qtbot, page)
    assert "edited" in view.message_label.text()
    qtbot.keyClick(view, Qt.Key.Key_K)
    assert view.current_key() == (edited.item_id, edited.part)
    assert view.rewrite_view.toPlainText() == "the annotator's own words"
    assert view.message_label.text() == ""  # the save's message belonged to the moment it was said
    assert "edited" in view.status_label.text()
    # the queue reloaded from the database (the save changed the rewrites) shows the edit as well
    page.reload()
    qtbot.waitUntil(lambda: page.last_read.status == "succeeded", timeout=5_000)
    assert view.current_key() == (edited.item_id, edited.part)
    assert view.rewrite_view.toPlainText() == "the annotator's own words"
    assert "edited" in view.status_label.text()


@pytest.mark.slow
def test_a_screen_reader_hears_each_decision_saved_with_the_next_part_and_an_undo_once_read_again(review, qtbot):
    """What the review gives a screen reader (its accessible name, as tests/widgets/test_screen_reader.py reads
    it), driven through the page with real writes."""
    page, view, _path = review
    view.setFocus()
    qtbot.waitUntil(view.hasFocus, timeout=2_000)
    first = view.current_entry()
    assert view.accessibleName().startswith(f"Part 11 of 20, awaiting review. {first.source_id}, {first.language}")
    qtbot.keyClick(view, Qt.Key.Key_A)
    saved(qtbot, page)
    assert view.accessibleName().startswith(f"Saved: {first.source_id} {first.part} accepted. Part 12 of 20,")
    qtbot.keyClick(view, Qt.Key.Key_K)
    assert view.accessibleName().startswith(f"Part 11 of 20, accepted. {first.source_id}")
    qtbot.keyClick(view, Qt.Key.Key_E)
    assert view.rewrite_editor.hasFocus()
    assert view.rewrite_editor.accessibleDescription() == "Editing: Ctrl+Enter saves, Esc cancels."
    view.rewrite_editor.selectAll()
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Delete)
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert view.rewrite_editor.accessibleDescription() == "An edit needs text; Esc cancels."  # said in the editor
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Escape)
    assert view.hasFocus() and view.accessibleName().startswith("Edit cancelled. Part 11 of 20, accepted.")
    qtbot.keyClick(view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    saved(qtbot, page)
    qtbot.waitUntil(lambda: view.accessibleName().startswith("Undid your accept of item"), timeout=5_000)
    assert "Part 11 of 20, awaiting review." in view.accessibleName()  # the part read again, back in the queue
    qtbot.keyClick(view, Qt.Key.Key_K)
    assert view.accessibleName().startswith("Part 10 of 20")
    for _ in range(12):
        qtbot.keyClick(view, Qt.Key.Key_K)
    assert view.accessibleName().startswith("First part. Part 1 of 20")  # the end said, not silence
