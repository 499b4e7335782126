"""What a screen reader (Orca on Linux, NVDA on Windows) says in the views that keep the keyboard while work
goes on: the rating session and the rewrite review. Their keys act without moving the focus, so the screen reader
has nothing to read unless told; the focused view's accessible name is set once per action, and a name change on
the focused widget is read out at once, cutting off the line before it (Orca 43 and NVDA read it; Orca 43 has no
support for Qt's newer announcement events). Also what Tab meets on every page: no silent stop on a scroll area
(`no_tab_stop`), an empty text field said as it is reached (`EmptyFieldSaid`), a list or table said with its
current row (`CurrentRowSaid`), and read-only text read line by line (`read_by_line`)."""

from __future__ import annotations

import time

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAccessible, QFocusEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QApplication,
    QFileDialog,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
)

from spokenbench.widgets.wheel_guard import install_application_filter

# an Alt delivered again after its shortcut comes within milliseconds (a screen reader's round trip); a press of
# Alt this long after one is the person's own
LATE_ALT_S = 1.0
SENTENCE_ENDS = ".!?…。？！"  # a part of a spoken line that ends in one of these gets no full stop added


def spoken(*parts: str) -> str:
    """Parts of a line as sentences: ('Correct saved', 'Clip 2 of 47') → 'Correct saved. Clip 2 of 47.'"""
    sentences = [" ".join(part.split()) for part in parts if part and part.strip()]  # a banner's line breaks too
    return " ".join(part if part[-1] in SENTENCE_ENDS else f"{part}." for part in sentences)


class SpokenFocus:
    """Mixed into a focusable QWidget: `speak` says what an action did and, when asked, `context_line` (where
    the view is: the clip, the part under review). The widget's description is read when it takes the focus."""

    context_line = ""
    _said_context: str | None = None  # the context line the accessible name says, None when it says none

    def speak(self, said: str = "", with_context: bool = False) -> None:
        self._said_context = self.context_line if with_context or not said else None
        line = spoken(said, self._said_context or "")
        if line == self.accessibleName():  # Qt tells no one of a name set again unchanged, and the key went unsaid
            line += " "  # (← at the first prompt pressed twice); a screen reader does not say the space
        self.setAccessibleName(line)

    def focusInEvent(self, event) -> None:
        """Coming to the view (a page opened, a dialog closed), a screen reader says where it is, not the last
        action's few words or a part since left: the name is set here, before Qt tells the screen reader of the
        focus. A line said while the focus was away (a note's outcome, as its dialog closes) is kept."""
        if self._said_context != self.context_line:
            self.speak()
        super().focusInEvent(event)

    def focusOutEvent(self, event) -> None:
        """Leaving the view, the line said last is done with: coming back says where the view is."""
        self._said_context = None
        super().focusOutEvent(event)


# the focus reasons QLineEdit answers by selecting all: Tab, Shift+Tab, a label's Alt+letter
SELECTING_REASONS = (
    Qt.FocusReason.TabFocusReason,
    Qt.FocusReason.BacktabFocusReason,
    Qt.FocusReason.ShortcutFocusReason,
)


def no_tab_stop(area: QAbstractScrollArea) -> None:
    """A scroll area around controls is no Tab stop of its own: Tab goes from control to control, and the area
    scrolls to show each (QScrollArea does). As a stop it was a silent one: a screen reader said nothing there,
    and the focus ring went round a whole page or form (Evaluate's first stop after Ctrl+6)."""
    area.setFocusPolicy(Qt.FocusPolicy.NoFocus)


class EmptyFieldSaid(QObject):
    """An empty text field is said as Tab reaches it ('Languages: text. all: en, ko, zh'). QLineEdit answers a
    Tab's focus by selecting all its text, which for an empty field reports a caret move before Qt reports the
    focus; Orca 43 then takes the field as already focused and says nothing of it (Evaluate's 11 empty fields were
    silent). The field gets the focus as if given by code instead, which selects nothing: the same field, nothing
    to select, and the focus reported first. One handler of the application's filter, as `WheelGuard`."""

    events = (QEvent.Type.FocusIn,)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if isinstance(watched, QLineEdit) and event.reason() in SELECTING_REASONS and not watched.text():
            QCoreApplication.sendEvent(watched, QFocusEvent(QEvent.Type.FocusIn, Qt.FocusReason.OtherFocusReason))
            return True
        return False


def install_empty_field_said(app: QApplication | None = None) -> EmptyFieldSaid | None:
    """Install the filter on the application once (later calls return the same one)."""
    return install_application_filter(EmptyFieldSaid, app)


class AltLeftToTheShortcut(QObject):
    """Alt and a letter that pressed a button or chose a field (an Alt+letter mnemonic) leave the menu bar alone.
    With a screen reader running, Qt hands each key to it over AT-SPI first and delivers the Alt press again only
    after the letter's shortcut has acted; the menu bar took that late Alt as one pressed alone, and its release
    gave it the keys: Orca said "File." and the next key went to the menu bar, every other time (Alt+W on the
    Speakers page; measured with Orca 43, and in a bare Qt window). Such a late Alt, until Alt is released, is not
    shown to the menu bar; Alt pressed and released alone still gives it the keys."""

    events = (QEvent.Type.Shortcut, QEvent.Type.ShortcutOverride, QEvent.Type.KeyRelease)
    used_at: float | None = None  # when a shortcut with Alt acted, until Alt is released

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.Shortcut:
            keys = event.key()
            if keys.count() and keys[0].keyboardModifiers() & Qt.KeyboardModifier.AltModifier:
                self.shortcut_acted()
            return False
        if event.key() != Qt.Key.Key_Alt or self.used_at is None:
            return False
        if kind == QEvent.Type.KeyRelease:
            if not (event.spontaneous() and QAccessible.isActive()):  # a screen reader's bridge holds the first
                self.used_at = None  # release back, and delivers it again after the late Alt
            return False
        return time.monotonic() - self.used_at < LATE_ALT_S  # the late Alt: the menu bar never sees it

    def shortcut_acted(self) -> None:
        """An Alt+letter acted (Qt's shortcut, or one the app matched itself: `MainWindow._press_at_place`)."""
        self.used_at = time.monotonic()


def alt_shortcut_acted(app: QApplication | None = None) -> None:
    """Tell the installed handler, if any, that an Alt+letter the app matched itself has acted."""
    app = app or QApplication.instance()
    handler = app.findChild(AltLeftToTheShortcut) if app is not None else None
    if handler is not None:
        handler.shortcut_acted()


def install_alt_left_to_the_shortcut(app: QApplication | None = None) -> AltLeftToTheShortcut | None:
    """Install the handler on the application once (later calls return the same one)."""
    return install_application_filter(AltLeftToTheShortcut, app)


def read_by_line(view: QTextEdit | QPlainTextEdit) -> None:
    """A read-only text whose lines a screen reader reads as ↑/↓ move a caret through them, and whose line at the
    caret it says as Tab reaches it (*Item details read only text. demo/001 · en · mcq*). Qt reports a
    QTextBrowser as static text, which Orca 43 calls a label and reads nothing of; a read-only field selectable
    by the mouse alone has no caret, and the arrows scrolled it in silence (the item's question and options, the
    Evaluate page's plan)."""
    view.setReadOnly(True)
    view.setTextInteractionFlags(
        Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
    )


class CurrentRowSaid(QObject):
    """A list or table that takes the keys has its current row said with it (Ctrl+1: *Items. table with 84 rows
    8 columns. 1. demo/001. en. … not selected*). Orca 43 says the rows a view has selected as it takes the
    keys, and the current row only as it moves. Qt makes a view's first row current as the view takes the keys,
    but reports it before the view itself, unselected; Orca then said the table alone, and ↓ went to the second
    row, the first never said (the Items page, an item's rewrites, Evaluate's runs; measured with Orca 43). Once
    the focus has been reported, an unselected current row is reported again, by Qt's own `currentChanged`: the
    cell focused, as ↓ reports it. Nothing for a selected one, which Orca says already; nothing is selected,
    made current or scrolled here. Not a table's header, nor a popup's list (a combo box's, a completer's), nor a file
    dialog's views. One handler of the application's filter (widgets/wheel_guard.py `ApplicationFilters`)."""

    events = (QEvent.Type.FocusIn,)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if isinstance(watched, QAbstractItemView) and says_its_current_row(watched):
            QTimer.singleShot(0, watched, lambda view=watched: current_row_said_again(view))
        return False


def says_its_current_row(view: QAbstractItemView) -> bool:
    """Not a table's header (a view of its own to Qt), nor the list of a popup (a combo box's and a completer's
    lists are in popup windows), nor a file dialog's views: they present their own."""
    window = view.window()
    return not (
        isinstance(view, QHeaderView) or window.windowType() == Qt.WindowType.Popup or isinstance(window, QFileDialog)
    )


def current_row_said_again(view: QAbstractItemView) -> None:
    """Report the view's current index focused again (as Qt does when it moves), when the view still has the
    keys and the index is not selected."""
    selection = view.selectionModel()
    current = view.currentIndex()
    if view.hasFocus() and current.isValid() and selection is not None and not selection.isSelected(current):
        scrolls = view.hasAutoScroll()  # Qt's `currentChanged` scrolls to the index: a table scrolled away from
        view.setAutoScroll(False)  # its current row, then Tab or a click on its scroll bar, jumped back to it
        try:
            view.currentChanged(current, current)
        finally:
            view.setAutoScroll(scrolls)


def install_current_row_said(app: QApplication | None = None) -> CurrentRowSaid | None:
    """Install the handler on the application once (later calls return the same one)."""
    return install_application_filter(CurrentRowSaid, app)
