"""What a screen reader is given in the views that keep the keys while the work goes on: the focused view's
accessible name, which Qt's AT-SPI bridge hands to Orca (the real Orca hears it in
tests/widgets/test_real_screen_reader.py). Each action says what it did and, when the clip or part
changed, where the rater now is; the rewrite shown is never an editable field (a screen reader takes one whose text
changes for the focus)."""

from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QLineEdit,
    QPlainTextEdit,
    QTableWidget,
    QTextBrowser,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.audio import playback
from spokenbench.core.qc.rating_session import ClipView, RatingProgress
from spokenbench.core.rewriting.flagging import FlaggedRewrite
from spokenbench.widgets.rating_view import RatingView
from spokenbench.widgets.rewrite_review import RewriteReviewView
from spokenbench.widgets.screen_reader import (
    AltLeftToTheShortcut,
    install_alt_left_to_the_shortcut,
    install_current_row_said,
    install_empty_field_said,
    read_by_line,
    spoken,
)
from spokenbench.widgets.wheel_guard import uninstall_application_filter

CLIP = ClipView(
    position=2, total=47, clip_id=805, text="Which is larger?", item="demo/019", language="en", accent="american",
    voice="espeak-male", part="question", audio=b"", audio_format="wav", rating=None, note=None,
    transcripts=(("asr-a", "which is larger"),), wer=0.07, transcripts_visible=False,
)  # fmt: skip
PARTS = [
    FlaggedRewrite(1, 49, "demo/001", "en", "option_A", "2 and -5", "two and minus five", "[-2-]", "flagged"),
    FlaggedRewrite(2, 49, "demo/001", "en", "option_B", "-2 and 5", "minus two and five", "[-2-]", "flagged"),
]


def said(widget) -> str:
    """What the screen reader is given for the widget: its accessible name, which Qt's AT-SPI bridge hands on as
    set. (Not read through QAccessible.queryAccessibleInterface: a test run that asked for interfaces from Python
    corrupted memory as the process ended, PySide6 6.12.)"""
    return widget.accessibleName()


@pytest.fixture
def shown(qtbot):
    """shown(view) → a text field beside the view, both in a shown window (kept to the test's end) that can
    move the focus between them."""
    windows = []

    def show(view: QWidget) -> QLineEdit:
        window = QWidget()
        elsewhere = QLineEdit()
        layout = QVBoxLayout(window)
        layout.addWidget(elsewhere)
        layout.addWidget(view)
        qtbot.addWidget(window)
        window.resize(1000, 700)
        window.show()
        qtbot.waitExposed(window)
        window.activateWindow()
        windows.append(window)
        return elsewhere

    return show


def focus(qtbot, widget: QWidget) -> None:
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus, timeout=2_000)


def test_parts_become_sentences_without_doubled_stops():
    assert spoken("Correct saved", "", "Clip 2 of 47: Which is larger?", "en.") == (
        "Correct saved. Clip 2 of 47: Which is larger? en."
    )
    assert spoken("Part 1", "原文：二和负五。") == "Part 1. 原文：二和负五。"
    assert spoken("", "  ") == ""


def test_a_rating_says_what_was_saved_and_the_next_clip_with_its_text_and_speaker(shown):
    view = RatingView()
    shown(view)
    view.show_progress(RatingProgress(1, 47, 0, {"correct": 1, "acceptable": 0, "incorrect": 0}))
    view.show_clip(CLIP, "demo-qc", 1.0)
    view.speak("Correct saved", with_context=True)
    assert said(view) == (
        "Correct saved. Clip 2 of 47, not rated: Which is larger? en, accent american, voice espeak-male, question."
    )
    view.show_clip(CLIP.__class__(**{**CLIP.__dict__, "rating": "acceptable", "note": "a click"}), "demo-qc", 0.9)
    view.speak(with_context=True)
    assert said(view).startswith("Clip 2 of 47, rated Acceptable, note: a click: Which is larger?")
    assert said(view).endswith("question, speed 0.9 times.")
    assert view.transcripts_said() == "Transcripts hidden"
    view.show_state(CLIP.__class__(**{**CLIP.__dict__, "transcripts_visible": True}), 1.0)
    assert view.transcripts_said() == "WER 0.07. asr-a: which is larger."


def test_a_short_outcome_gives_way_to_the_clip_when_the_focus_comes_back(qtbot, shown):
    view = RatingView()
    elsewhere = shown(view)
    view.show_clip(CLIP, "demo-qc", 1.0)
    focus(qtbot, view)
    view.speak("Speed 0.9 times")
    assert said(view) == "Speed 0.9 times."  # said alone: the clip did not change
    focus(qtbot, elsewhere)  # a note dialog, another page
    focus(qtbot, view)
    assert said(view).startswith("Clip 2 of 47, not rated: Which is larger?")
    view.speak("Correct saved", with_context=True)
    focus(qtbot, elsewhere)
    focus(qtbot, view)  # the line said last is done with once the focus has left
    assert said(view).startswith("Clip 2 of 47, not rated")
    focus(qtbot, elsewhere)  # a note's dialog: its outcome is said while the dialog still has the focus
    view.speak("the note is saved with the rating", with_context=True)
    focus(qtbot, view)  # and is what the focus coming back reads
    assert said(view).startswith("the note is saved with the rating. Clip 2 of 47")


def test_the_keys_are_said_as_mapped(shown):
    view = RatingView()
    shown(view)
    view.set_keymap({"rate_correct": ("J",), "rate_acceptable": ("K",), "rate_incorrect": ("L",), "help": ("H",)})
    description = view.accessibleDescription()
    assert description == "J: Correct, K: Acceptable, L: Incorrect. H: all keys."
    view.toggle_help()
    assert said(view).startswith("Keys. J: Correct. K: Acceptable. L: Incorrect. H: Keys.")
    assert "Esc: Close this help; without it, back to the queue list." in said(view)  # the window's keys too
    assert said(view).endswith("F1: Guided tour. Ctrl+= / Ctrl+- / Ctrl+0: Larger, smaller, normal text.")
    view.toggle_help()
    assert said(view) == "Keys help closed."


def test_a_finished_queue_is_said(shown):
    view = RatingView()
    shown(view)
    view.show_progress(RatingProgress(47, 47, 0, {"correct": 47, "acceptable": 0, "incorrect": 0}))
    view.show_clip(None, "demo-qc", 1.0)
    view.speak("Correct saved", with_context=True)
    assert said(view).startswith("Correct saved. Every clip of this queue is rated. Thank you! 47 / 47 rated")


def test_a_queue_name_is_shown_as_text_not_markup(qtbot):
    view = RatingView()
    view.show_clip(CLIP, "<img src='x'>q", 1.0)
    assert "&lt;img" in view.queue_label.text()


def test_a_review_says_each_move_and_the_editor_and_never_shows_an_editable_field(qtbot, shown):
    view = RewriteReviewView()
    shown(view)
    view.set_entries(PARTS, keep_position=False)
    focus(qtbot, view)
    assert said(view).startswith("Part 1 of 2, awaiting review. demo/001, en, option_A. Original: 2 and -5.")
    qtbot.keyClick(view, Qt.Key.Key_J)
    assert said(view) == (
        "Part 2 of 2, awaiting review. demo/001, en, option_B. Original: -2 and 5. Rewrite: minus two and five."
    )
    # the rewrite shown changes with every part: in a text field (QTextEdit's role, editable text), Orca took it
    # for the focus; Qt gives a QTextBrowser the role of static text
    assert type(view.rewrite_view) is QTextBrowser and not view.rewrite_editor.isVisible()
    qtbot.keyClick(view, Qt.Key.Key_E)
    assert view.rewrite_editor.hasFocus() and view.rewrite_editor.toPlainText() == "minus two and five"
    assert said(view.rewrite_editor) == "Rewrite, editing"
    qtbot.keyClick(view.rewrite_editor, Qt.Key.Key_Escape)
    assert view.hasFocus() and said(view).startswith("Edit cancelled. Part 2 of 2, awaiting review.")
    view.decide("accept")  # the page says the save with the next part (the last part stays shown)
    view.mark(1, "accepted")
    view.set_message("Saved: demo/001 option_B accepted.", with_part=True)
    assert said(view).startswith("Saved: demo/001 option_B accepted. Part 2 of 2, accepted.")


@pytest.mark.slow
def test_the_rating_page_says_the_queue_each_save_each_move_and_a_note(rating_page_on_demo_queue, qtbot, monkeypatch):
    monkeypatch.setattr(playback, "output_devices", lambda: [])  # no sound device, whatever this machine has
    page = rating_page_on_demo_queue(SimpleNamespace(annotator="alice"))
    opened = said(page.view)
    total = page.rating.progress.total
    assert opened.startswith("No audio output device: clips cannot be played here.")  # said first
    assert f"Queue demo-qc, 0 of {total} rated. Clip 1 of {total}, not rated: {page.rating.current.text}" in opened
    first = page.rating.current.text
    qtbot.keyClick(page.view, "1")
    qtbot.waitUntil(lambda: said(page.view).startswith(f"Correct saved. Clip 2 of {total}"), timeout=5_000)
    qtbot.keyClick(page.view, Qt.Key.Key_Right)  # the newest clip: nothing after it
    qtbot.waitUntil(lambda: said(page.view) == "this is the newest clip.", timeout=5_000)
    qtbot.keyClick(page.view, Qt.Key.Key_Left)
    qtbot.waitUntil(lambda: said(page.view).startswith(f"Clip 1 of {total}, rated Correct: {first}"), timeout=5_000)
    qtbot.keyClick(page.view, Qt.Key.Key_Right)  # back to the first unrated clip
    qtbot.waitUntil(lambda: said(page.view).startswith(f"Clip 2 of {total}, not rated"), timeout=5_000)
    qtbot.keyClick(page.view, Qt.Key.Key_N)
    qtbot.waitUntil(lambda: page.note_dialog is not None and page.note_dialog.isVisible(), timeout=5_000)
    page.note_dialog.textValueSelected.emit("a click at the start")
    assert said(page.view).startswith(f"the note is saved with the rating. Clip 2 of {total}, not rated, note: a click")
    qtbot.keyClick(page.view, "t")  # the queue's transcripts were stripped with its simulated QC
    assert said(page.view) == "No transcripts for this clip."
    qtbot.keyClick(page.view, "t")
    assert said(page.view) == "Transcripts hidden."


@pytest.fixture
def empty_field_said():
    """The app's filter, installed for the test and taken out after it (a window installs it again)."""
    said = install_empty_field_said()
    yield said
    uninstall_application_filter(said)


def test_an_empty_field_tab_reaches_is_focused_as_by_code_and_a_filled_one_still_has_its_text_selected(
    qtbot, empty_field_said
):
    """QLineEdit answers a Tab's focus by selecting all its text: for an empty field, a caret move reported before
    the focus, after which Orca 43 took the field as focused already and said nothing of it (Evaluate's 11 empty
    fields; heard in tests/widgets/test_real_screen_reader.py). The empty field now gets its focus as from code."""
    reasons = []

    class Field(QLineEdit):
        def focusInEvent(self, event) -> None:
            reasons.append((self.text(), event.reason()))
            super().focusInEvent(event)

    window = QWidget()
    start, empty, filled = QLineEdit("start"), Field(), Field("0")
    layout = QVBoxLayout(window)
    for field in (start, empty, filled):
        layout.addWidget(field)
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    focus(qtbot, start)
    qtbot.keyClick(start, Qt.Key.Key_Tab)
    assert empty.hasFocus() and reasons == [("", Qt.FocusReason.OtherFocusReason)]
    qtbot.keyClick(empty, Qt.Key.Key_Tab)
    assert filled.hasFocus() and reasons[-1] == ("0", Qt.FocusReason.TabFocusReason) and filled.selectedText() == "0"
    qtbot.keyClick(filled, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    assert empty.hasFocus() and reasons[-1] == ("", Qt.FocusReason.OtherFocusReason)
    empty.setText("typed")  # reached again with text in it: selected, as Qt does
    qtbot.keyClick(empty, Qt.Key.Key_Tab)
    qtbot.keyClick(filled, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    assert empty.hasFocus() and reasons[-1] == ("typed", Qt.FocusReason.BacktabFocusReason)
    assert empty.selectedText() == "typed"


@pytest.fixture
def alt_left_to_the_shortcut():
    """The app's handler, installed for the test and taken out after it (a window installs it again)."""
    handler = install_alt_left_to_the_shortcut()
    yield handler
    uninstall_application_filter(handler)


@pytest.fixture
def qt_alone():
    """No handler for Alt: one a window of an earlier test installed is taken out for the test."""
    left = QApplication.instance().findChild(AltLeftToTheShortcut)
    if left is not None:
        uninstall_application_filter(left)
    yield
    if left is not None:
        install_alt_left_to_the_shortcut()


def late_alt_after_a_mnemonic(qtbot, field: QLineEdit) -> None:
    """Alt+Q as Qt delivers it with a screen reader running (logged in a bare Qt window under Orca 43): Alt's
    shortcut check, the letter's shortcut acting, then Alt delivered again after the screen reader's round trip,
    and its release."""
    from PySide6.QtGui import QKeyEvent

    alt = Qt.KeyboardModifier.AltModifier
    QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.ShortcutOverride, Qt.Key.Key_Alt, alt))
    qtbot.keyPress(field, Qt.Key.Key_Q, alt)  # the shortcut acts: Qt's menu bar forgets the Alt
    QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.ShortcutOverride, Qt.Key.Key_Alt, alt))  # the late Alt
    QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.KeyPress, Qt.Key.Key_Alt, alt))
    QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.KeyRelease, Qt.Key.Key_Alt, Qt.KeyboardModifier.NoModifier))


@pytest.mark.parametrize("handled", [True, False], ids=["handled", "qt-alone"])
def test_an_alt_mnemonic_under_a_screen_reader_leaves_the_keys_where_they_were(qtbot, handled, request):
    """With Orca running, Alt+W on the Speakers page pressed Withdraw consent… and then gave the keys to the menu
    bar: Orca said "File." and Escape from the question left the window with no focus. Qt alone (the second case)
    still does; the handler keeps the keys where they were, and Alt pressed alone still reaches the menu bar."""
    from PySide6.QtWidgets import QMainWindow, QPushButton

    request.getfixturevalue("alt_left_to_the_shortcut" if handled else "qt_alone")
    window = QMainWindow()
    window.menuBar().addMenu("&File").addAction("Quit")
    body = QWidget()
    field, button = QLineEdit(), QPushButton("&Quick")
    pressed = []
    button.clicked.connect(lambda: pressed.append(True))
    layout = QVBoxLayout(body)
    layout.addWidget(field)
    layout.addWidget(button)
    window.setCentralWidget(body)
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2_000)
    focus(qtbot, field)
    late_alt_after_a_mnemonic(qtbot, field)
    qtbot.waitUntil(lambda: bool(pressed), timeout=2_000)  # the button was pressed, either way
    assert field.hasFocus() is handled and window.menuBar().hasFocus() is not handled
    if handled:  # Alt alone: the menu bar, as before
        from PySide6.QtGui import QKeyEvent

        alt = Qt.KeyboardModifier.AltModifier
        QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.ShortcutOverride, Qt.Key.Key_Alt, alt))
        QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.KeyPress, Qt.Key.Key_Alt, alt))
        QApplication.sendEvent(
            field, QKeyEvent(QKeyEvent.Type.KeyRelease, Qt.Key.Key_Alt, Qt.KeyboardModifier.NoModifier)
        )
        assert window.menuBar().hasFocus()


def test_a_line_said_twice_is_said_again(qtbot):
    """Qt reports no change for a name set again unchanged, so a screen reader said "This is the first prompt"
    for the first ← at the first prompt and nothing for the next (heard with Orca 43 on the Speakers page)."""
    from spokenbench.widgets.screen_reader import SpokenFocus

    class View(SpokenFocus, QWidget):
        pass

    view = View()
    qtbot.addWidget(view)
    names = []
    for _ in range(3):
        view.speak("This is the first prompt")
        names.append(view.accessibleName())
    assert [name.strip() for name in names] == ["This is the first prompt."] * 3
    assert names[0] != names[1] and names[1] != names[2]  # each a change a screen reader is told of


def test_an_alt_mnemonic_the_app_matched_itself_leaves_the_menu_bar_alone_too(qtbot, alt_left_to_the_shortcut):
    """The main window presses a button for an Alt+letter Qt did not match (a letter of another layout, the tour's
    Alt+N): no shortcut event, so the handler is told (`alt_shortcut_acted`), and the late Alt arms nothing."""
    from PySide6.QtGui import QKeyEvent
    from PySide6.QtWidgets import QMainWindow

    from spokenbench.widgets.screen_reader import alt_shortcut_acted

    window = QMainWindow()
    window.menuBar().addMenu("&File").addAction("Quit")
    field = QLineEdit()
    window.setCentralWidget(field)
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2_000)
    focus(qtbot, field)
    alt = Qt.KeyboardModifier.AltModifier
    alt_shortcut_acted()
    QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.ShortcutOverride, Qt.Key.Key_Alt, alt))  # the late Alt
    QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.KeyPress, Qt.Key.Key_Alt, alt))
    QApplication.sendEvent(field, QKeyEvent(QKeyEvent.Type.KeyRelease, Qt.Key.Key_Alt, Qt.KeyboardModifier.NoModifier))
    assert field.hasFocus() and not window.menuBar().hasFocus()


@pytest.fixture
def current_row_said():
    """The app's handler, installed for the test and taken out after it (a window installs it again)."""
    handler = install_current_row_said()
    yield handler
    uninstall_application_filter(handler)


class ReportedRows(QTableWidget):
    """Records each report of its current index as focused again (Qt's `currentChanged` with the same index: what
    Qt's AT-SPI bridge hands on as the cell focused) and whether the table had the keys then."""

    def __init__(self):
        super().__init__(4, 2)
        self.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.reports: list[tuple[int, bool]] = []

    def currentChanged(self, current, previous) -> None:  # noqa: N802 - Qt's name
        if current == previous:
            self.reports.append((current.row(), self.hasFocus()))
        super().currentChanged(current, previous)


def test_a_table_taking_the_keys_reports_its_unselected_current_row_after_itself(qtbot, shown, current_row_said):
    """Orca 43 says the rows a table has selected as it takes the keys, the current row only as it moves. Qt
    makes the first row current as the table takes the keys, but reports it before the table, unselected: Orca
    said *Items. table with 84 rows 8 columns* alone, and ↓ went to the second row, the first never said (heard
    in tests/widgets/test_real_screen_reader.py). Now the current row is reported again once the table has the
    keys; a selected one, which Orca says, is not; nothing is selected here."""
    table = ReportedRows()
    start = shown(table)
    focus(qtbot, start)
    qtbot.keyClick(start, Qt.Key.Key_Tab)  # Qt makes row 0 current as the keys come
    qtbot.waitUntil(lambda: table.reports == [(0, True)], timeout=2_000)
    assert not table.selectedIndexes() and table.currentRow() == 0

    table.selectRow(2)  # chosen: Orca says it with the table, once is enough
    focus(qtbot, start)
    focus(qtbot, table)
    qtbot.wait(50)
    assert table.reports == [(0, True)]
    table.clearSelection()  # current and unselected again: said
    focus(qtbot, start)
    focus(qtbot, table)
    qtbot.waitUntil(lambda: table.reports == [(0, True), (2, True)], timeout=2_000)
    focus(qtbot, start)
    table.setFocus()
    start.setFocus()  # gone before the report: nothing said for a table without the keys
    qtbot.wait(50)
    assert table.reports == [(0, True), (2, True)]


def test_a_table_scrolled_away_from_its_current_row_stays_where_it_was_when_the_keys_come(
    qtbot, shown, current_row_said
):
    """Qt's `currentChanged` scrolls to the current index: the report made a table scrolled away from its row
    jump back to it as Tab (or a click on its scroll bar) gave it the keys (found in review)."""
    table = ReportedRows()
    table.setRowCount(200)
    start = shown(table)
    table.setCurrentCell(0, 0)
    table.clearSelection()
    focus(qtbot, start)
    table.verticalScrollBar().setValue(150)
    qtbot.keyClick(start, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: table.reports == [(0, True)], timeout=2_000)
    assert table.verticalScrollBar().value() == 150 and table.hasAutoScroll()


ITEM_TEXT = "demo/001 · en\nWhat is two plus two?\nA. three"


def test_read_only_text_moves_a_caret_line_by_line_for_a_screen_reader(qtbot):
    """A QTextBrowser is reported as static text (Orca 43: *Item details label*, nothing of the text), and a
    read-only field selectable by the mouse alone has no caret: ↓ scrolled it in silence."""
    for view in (QTextEdit(), QPlainTextEdit()):
        read_by_line(view)
        view.setPlainText(ITEM_TEXT)
        qtbot.addWidget(view)
        view.show()
        view.activateWindow()
        focus(qtbot, view)
        qtbot.keyClick(view, Qt.Key.Key_Down)
        assert view.textCursor().blockNumber() == 1 and view.isReadOnly()
        qtbot.keyClick(view, Qt.Key.Key_A)
        assert view.toPlainText() == ITEM_TEXT  # still read-only
