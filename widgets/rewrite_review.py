"""Reviewing flagged rewrites from the keyboard: the original and the rewrite side by side with their
differences highlighted, and the decision keys

    A / Enter  accept        E  edit in place (Ctrl+Enter saves, Esc cancels)        X  reject
    J / ↓      next          K / ↑  previous                                         Ctrl+Z  undo the last decision

The view only shows and asks: it emits `decision_requested(index, decision, text)` and `undo_requested()`, and
the app saves (a WriteOp) and reports back with `mark`. Highlights come from core's `char_diff`, the very
function `spokenbench flag` stores its diffs with, applied to the texts as shown."""

from __future__ import annotations

import dataclasses
import html

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QGridLayout, QLabel, QStackedWidget, QTextBrowser, QTextEdit, QVBoxLayout, QWidget

from spokenbench.core.rewriting.flagging import FlaggedRewrite, char_diff
from spokenbench.widgets.bidi import has_right_to_left
from spokenbench.widgets.keys import place_key_name
from spokenbench.widgets.screen_reader import SpokenFocus, spoken
from spokenbench.widgets.text_size import set_font_share
from spokenbench.widgets.tones import set_toned_sheet, toned

EDITING = "Editing: Ctrl+Enter saves, Esc cancels."
STATUS_TEXT = {
    "flagged": "awaiting review",
    "manual": "needs a hand-written rewrite (E)",
    "accepted": "accepted",
    "rejected": "rejected — the original is used",
    "edited": "edited",
    "saving": "saving…",
}
REMOVED_STYLE = "background:$removed_bg;color:$removed_text;text-decoration:line-through"
ADDED_STYLE = "background:$added_bg;color:$added_text"

MONOSPACE = "font-family: monospace"


def highlighted(original: str, rewrite: str) -> tuple[str, str]:
    """HTML of both texts with what differs marked: removed/replaced stretches in the original, inserted or
    replacing ones in the rewrite, each with its own text colour (the palette's own text, white in dark mode,
    is unreadable on a light mark). `char_diff` gives positions in the original; the rewrite's follow from the
    running difference in length, since equal stretches are equally long."""
    removed_style, added_style = toned(REMOVED_STYLE), toned(ADDED_STYLE)
    left, right = [], []
    i = j = 0
    for change in char_diff(original, rewrite):
        at = change["at"]
        equal = original[i:at]
        left.append(html.escape(equal))
        right.append(html.escape(rewrite[j : j + len(equal)]))
        j += len(equal)
        if change["original"]:
            left.append(f'<span style="{removed_style}">{html.escape(change["original"])}</span>')
        if change["rewrite"]:
            right.append(f'<span style="{added_style}">{html.escape(change["rewrite"])}</span>')
        i = at + len(change["original"])
        j += len(change["rewrite"])
    left.append(html.escape(original[i:]))
    right.append(html.escape(rewrite[j:]))
    return "".join(left), "".join(right)


class RewriteReviewView(SpokenFocus, QWidget):
    """One flagged part at a time. The keys act without moving the focus: `speak` (widgets/screen_reader.py)
    has a screen reader say each message and, on a move or a saved decision, the part now shown."""

    decision_requested = Signal(int, str, object)  # index, 'accept' | 'edit' | 'reject', edited text or None
    undo_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleDescription(spoken("A or Enter: accept, X: reject, E: edit, J: next, K: previous"))
        self.entries: list[FlaggedRewrite] = []
        self.statuses: list[str] = []
        self.index = 0
        self.editing = False

        self.progress_label = QLabel()
        self.progress_label.setAccessibleName("Review progress")
        set_font_share(self.progress_label, 1.4)
        self.title_label = QLabel()
        self.status_label = QLabel()
        self.original_view = QTextBrowser()
        self.original_view.setAccessibleName("Original text")
        # the rewrite is shown read-only and edited (E) in an editor of its own: a screen reader takes a text field
        # whose text changes for the focus (Orca does), so one shown field that changed with every part moved it off
        # the review, and what each key did went unsaid
        self.rewrite_view = QTextBrowser()
        self.rewrite_view.setAccessibleName("Rewrite")
        self.rewrite_editor = QTextEdit()
        self.rewrite_editor.setAccessibleName("Rewrite, editing")
        self.rewrite_editor.setStyleSheet("QTextEdit { border: 2px solid palette(highlight); }")
        self.rewrite_editor.installEventFilter(self)
        self.rewrite_stack = QStackedWidget()
        self.rewrite_stack.addWidget(self.rewrite_view)
        self.rewrite_stack.addWidget(self.rewrite_editor)
        for view in (self.original_view, self.rewrite_view, self.rewrite_editor):
            set_font_share(view, 1.3)
            view.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            view.setMinimumHeight(90)
            view.setMaximumHeight(240)
        self.diff_label = QLabel()
        self.diff_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.diff_label.setStyleSheet(MONOSPACE)
        self.diff_label.setWordWrap(True)
        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.keys_label = QLabel(
            "<b>A</b>/<b>Enter</b> accept · <b>E</b> edit (<b>Ctrl+Enter</b> saves, <b>Esc</b> cancels) · "
            "<b>X</b> reject · <b>J</b>/<b>↓</b> next · <b>K</b>/<b>↑</b> previous · <b>Ctrl+Z</b> undo"
        )
        self.keys_label.setWordWrap(True)  # two lines with larger text, not a page wider than the window
        set_toned_sheet(self.keys_label, "color: $muted")

        grid = QGridLayout()
        grid.addWidget(QLabel("<b>Original</b>"), 0, 0)
        grid.addWidget(QLabel("<b>Rewrite</b> (read aloud)"), 0, 1)
        grid.addWidget(self.original_view, 1, 0)
        grid.addWidget(self.rewrite_stack, 1, 1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.progress_label)
        layout.addWidget(self.title_label)
        layout.addWidget(self.status_label)
        layout.addLayout(grid)
        layout.addWidget(QLabel("Diff checked by <code>spokenbench flag</code> (whitespace removed, lower case):"))
        layout.addWidget(self.diff_label)
        layout.addWidget(self.message_label)
        layout.addStretch(1)
        layout.addWidget(self.keys_label)
        self._show()

    # -- the queue -------------------------------------------------------------------------------
    def set_entries(self, entries: list[FlaggedRewrite], keep_position: bool = True, said: str = "") -> None:
        """The queue (read again after every change). A screen reader on the review says the part shown when it
        changed, and `said` with it (an undo's outcome, once the reopened part's text has been read again)."""
        current = self.current_key() if keep_position else None
        self.entries = list(entries)
        self.statuses = [entry.status for entry in self.entries]
        self.index = 0
        if current is not None:
            self.index = next((i for i, e in enumerate(self.entries) if (e.item_id, e.part) == current), 0)
        else:  # a fresh queue opens at the first part still waiting
            self.index = next((i for i, s in enumerate(self.statuses) if s in ("flagged", "manual")), 0)
        self._show()
        self._stop_editing()
        if self.hasFocus() and (said or self._said_context != self.context_line):  # read again under a reader
            self.speak(said, with_context=True)

    def current_entry(self) -> FlaggedRewrite | None:
        return self.entries[self.index] if self.entries else None

    def current_key(self) -> tuple[int, str] | None:
        entry = self.current_entry()
        return None if entry is None else (entry.item_id, entry.part)

    def decided_count(self) -> int:
        return sum(status not in ("flagged", "manual", "saving") for status in self.statuses)

    def mark(self, index: int, status: str, text: str | None = None) -> None:
        """Show an entry's new status (the app calls this once a decision is saved, or fails); a saved edit's
        `text` replaces the rewrite shown, so going back to the part shows what will be read aloud."""
        if 0 <= index < len(self.statuses):
            self.statuses[index] = status
            if text is not None:
                self.entries[index] = dataclasses.replace(self.entries[index], rewrite=text)
            self._show()

    def reopen(self, item_id: int, part: str) -> None:
        """An undo put this part back in the queue: mark it awaiting review and go to it."""
        for i, entry in enumerate(self.entries):
            if (entry.item_id, entry.part) == (item_id, part):
                self.statuses[i] = "manual" if entry.status == "manual" else "flagged"
                self.index = i
                break
        self._show()

    def go(self, step: int) -> None:
        if self.entries and not self.editing:
            moved_to = max(0, min(len(self.entries) - 1, self.index + step))
            edge = "" if moved_to != self.index else ("First part" if step < 0 else "Last part")
            self.index = moved_to
            self._show()
            self.set_message("", said=False)  # a message is about the part it was said on, not the one moved to
            self.speak(edge, with_context=True)

    def set_message(self, text: str, with_part: bool = False, said: bool = True) -> None:
        """A message under the texts, `said` by a screen reader (with the part shown, `with_part`); an empty one
        has the part said. While editing, the editor has the focus: the message is its description, which a
        screen reader reads when it changes."""
        self.message_label.setText(text)
        if said and self.editing:
            self.rewrite_editor.setAccessibleDescription(text)
        elif said:
            self.speak(text, with_context=with_part)

    # -- decisions -------------------------------------------------------------------------------
    def decide(self, decision: str, text: str | None = None) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        if decision != "edit" and self.statuses[self.index] == "manual":
            self.set_message("This part has no rewrite yet: write one with E.")
            return
        index = self.index
        self.statuses[index] = "saving"
        self.decision_requested.emit(index, decision, text)
        if self.index == index and self.index < len(self.entries) - 1:
            self.index += 1
        self._show()

    def start_editing(self) -> None:
        entry = self.current_entry()
        if entry is None:
            return
        self.editing = True
        self.set_message(EDITING)  # the editor's description: read with it as it takes the focus
        self.rewrite_editor.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.rewrite_stack.setCurrentWidget(self.rewrite_editor)
        self.rewrite_editor.setFocus()
        # the text after the focus: a screen reader that saw the editor's caret move first took the focus as known
        # and said nothing of it (Orca 43)
        self.rewrite_editor.setPlainText(entry.rewrite or entry.original)

    def _stop_editing(self, said: str | None = None) -> None:
        """Back to the review. `said` (with the part shown) is set before the focus comes back, so a screen reader
        reads it then, once; the focus moves before the stack drops the editor, which would hand it to the
        rewrite shown (and a screen reader would say that)."""
        self.editing = False
        if said is not None:
            self.set_message(said, with_part=True)
        if self.isVisible():  # a hidden page never takes the keys from the page shown (a project just opened)
            self.setFocus()
        self.rewrite_editor.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.rewrite_stack.setCurrentWidget(self.rewrite_view)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.rewrite_editor and self.editing and event.type() == QEvent.Type.KeyPress:
            key, modifiers = event.key(), event.modifiers()
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and modifiers & Qt.KeyboardModifier.ControlModifier:
                text = self.rewrite_editor.toPlainText().strip()
                if not text:
                    self.set_message("An edit needs text; Esc cancels.")
                    return True
                self.decide("edit", text)  # on to the next part, said as the focus comes back; then the save
                self._stop_editing("")
                return True
            if key == Qt.Key.Key_Escape:
                self._show()
                self._stop_editing("Edit cancelled.")
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.editing:
            return super().keyPressEvent(event)
        place = place_key_name(event)  # the key labelled A on a Russian or Greek layout accepts too
        key = QKeySequence(place)[0].key() if place else event.key()
        modifiers = event.modifiers()
        if key == Qt.Key.Key_Z and modifiers & Qt.KeyboardModifier.ControlModifier:
            self.undo_requested.emit()
        elif modifiers & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier):
            return super().keyPressEvent(event)
        elif key in (Qt.Key.Key_A, Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.decide("accept")
        elif key == Qt.Key.Key_X:
            self.decide("reject")
        elif key == Qt.Key.Key_E:
            self.start_editing()
        elif key in (Qt.Key.Key_J, Qt.Key.Key_Down):
            self.go(1)
        elif key in (Qt.Key.Key_K, Qt.Key.Key_Up):
            self.go(-1)
        else:
            return super().keyPressEvent(event)
        event.accept()

    # -- drawing ---------------------------------------------------------------------------------
    def changeEvent(self, event: QEvent) -> None:
        """The desktop switched between light and dark while the app ran: mark the differences in the new tones."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the application palette, propagated to each widget
            self._show()

    def _show(self) -> None:
        entry = self.current_entry()
        if entry is None:
            self.progress_label.setText("Nothing to review")
            self.title_label.setText(
                "No flagged or hand-written parts wait for review. Run <code>spokenbench flag</code> after rewriting."
            )
            self.status_label.clear()
            self.original_view.clear()
            self.rewrite_view.clear()
            self.diff_label.clear()
            self.context_line = spoken(
                "Nothing to review",
                "No flagged or hand-written parts wait for review",
                "Run spokenbench flag after rewriting",
            )
            return
        self.progress_label.setText(
            f"{self.index + 1} / {len(self.entries)}  ·  {self.decided_count()} decided"
            f"  ·  {len(self.entries) - self.decided_count()} left"
        )
        self.title_label.setText(
            f"<b>{html.escape(entry.source_id)}</b> · {entry.language} · {html.escape(entry.part)} · item {entry.item_id}"
        )
        status = self.statuses[self.index]
        self.status_label.setText(f"Status: <b>{STATUS_TEXT.get(status, status)}</b>")
        self.context_line = spoken(
            f"Part {self.index + 1} of {len(self.entries)}, {STATUS_TEXT.get(status, status)}",
            f"{entry.source_id}, {entry.language}, {entry.part}",
            f"Original: {entry.original}",
            f"Rewrite: {entry.rewrite}" if entry.rewrite else "No rewrite yet",
        )
        left, right = highlighted(entry.original, entry.rewrite) if entry.rewrite else (html.escape(entry.original), "")
        self.original_view.setHtml(left)
        self.rewrite_view.setHtml(right or "<i>no rewrite yet</i>")
        self.diff_label.setText(html.escape(entry.diff) or "—")
        # monospace lines the markers up in Latin, Chinese and Korean text; Arabic in a monospace font loses its
        # joined letter shapes (each letter drawn apart in a fixed cell): a diff with any right-to-left letter
        # (after a Latin '(h2o)' too) keeps the page's font
        self.diff_label.setStyleSheet("" if has_right_to_left(entry.diff) else MONOSPACE)
