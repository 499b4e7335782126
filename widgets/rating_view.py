"""The rating screen's views: the queue list (with what is missing when nothing is screened) and the session
view that draws a `core.qc.rating_session` clip. They only draw and report keys and clicks; the page
(`app/rating_page.py`) drives the session and runs its reads and writes."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.qc.rating_session import DEFAULT_KEYMAP, ClipView, RatingProgress, keymap_action
from spokenbench.widgets.bidi import isolated
from spokenbench.widgets.flow_layout import ColumnsLayout
from spokenbench.widgets.keys import key_names
from spokenbench.widgets.screen_reader import SpokenFocus, spoken
from spokenbench.widgets.tables import row_table
from spokenbench.widgets.text_size import set_font_share
from spokenbench.widgets.tones import set_toned_sheet
from spokenbench.widgets.waveform import WaveformView

ACTION_LABELS = {
    "rate_correct": "Correct",
    "rate_acceptable": "Acceptable",
    "rate_incorrect": "Incorrect",
    "replay": "Replay",
    "note": "Note",
    "undo": "Undo",
    "previous": "Previous",
    "next": "Next",
    "help": "Keys",
    "slower": "Slower",
    "faster": "Faster",
    "toggle_transcripts": "Transcripts",
    "toggle_spectrogram": "Spectrogram",
}
# the key help's size (a share of the text's) and columns, tried in order until it fits the view (`_place_help`)
HELP_LAYOUTS = ((1.15, 1), (1.15, 2), (1.0, 2), (0.85, 2))
BUTTON_COLUMNS = 5  # rows of five fit beside the guided tour in a 1280-pixel window; fewer with larger text
# keys that work whatever the key map says, listed under it in the ? help
WINDOW_KEYS = (
    ("Esc", "Close this help; without it, back to the queue list"),
    ("Enter", "Start the selected queue (queue list)"),
    ("Ctrl+1 … Ctrl+7", "Pages: Items, Rewrites, Rating, QC, Speakers, Evaluate, Results"),
    ("Tab / Shift+Tab", "Move between controls (outside a session)"),
    ("F1", "Guided tour"),
    ("Ctrl+= / Ctrl+- / Ctrl+0", "Larger, smaller, normal text"),
)
WINDOW_KEY_MODIFIERS = (
    Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.MetaModifier
)
PLACE_NOTE = (  # widgets/keys.py
    "On AZERTY, Cyrillic, Greek, Arabic, Hebrew … layouts, digits and letters<br>also work by their place on a "
    "US keyboard: the key labelled 1 rates Correct."
)


def _named_reason(clip_id: int, reason: str) -> str:
    """'clip 7: …' once: the audio's own errors already start by naming the clip."""
    named = f"clip {clip_id}"
    return reason if reason.startswith((f"{named} ", f"{named}:")) else f"{named}: {reason}"


def keys_text(keys: tuple[str, ...]) -> str:
    return " / ".join(keys)


def clip_line(clip: ClipView, speed: float) -> str:
    """One clip as a screen reader says it: where it is, its rating, its text and who speaks it."""
    rating = f"rated {clip.rating.capitalize()}" if clip.rating else "not rated"
    note = f", note: {clip.note}" if clip.note else ""
    who = ", ".join(
        part
        for part in (
            clip.language,
            f"accent {clip.accent}" if clip.accent else "",
            f"voice {clip.voice}" if clip.voice else "",
            clip.part,
            f"speed {speed:.1f} times" if round(speed, 2) != 1.0 else "",
        )
        if part
    )
    return spoken(f"Clip {clip.position} of {clip.total}, {rating}{note}: {clip.text}", who)


class QueueListView(QWidget):
    """Rating queues with this annotator's progress; what screening needs when the project has no transcripts."""

    start_requested = Signal(str)
    create_requested = Signal()
    transcribe_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.title = QLabel("<h3>Rating queues</h3>")
        self.table = row_table(["Queue", "Strategy", "Clips", "Rated by you", "Progress"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)  # the page's width
        self.table.doubleClicked.connect(lambda _index: self._start_selected())
        self.table.installEventFilter(self)  # Enter starts the selected queue
        self.table.setAccessibleName("Rating queues")
        self.table.setAccessibleDescription("Up and Down choose a queue; Enter starts rating it")
        self.start_button = QPushButton("Start rating")
        self.start_button.clicked.connect(self._start_selected)
        self.create_button = QPushButton("Create queue…")
        self.create_button.clicked.connect(self.create_requested)
        buttons = QHBoxLayout()
        buttons.addWidget(self.start_button)
        buttons.addWidget(self.create_button)
        buttons.addStretch(1)
        self.screening_box = QFrame()
        self.screening_box.setFrameShape(QFrame.Shape.StyledPanel)
        self.screening_text = QLabel()
        self.screening_text.setWordWrap(True)
        self.screening_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.transcribe_button = QPushButton("Transcribe")
        self.transcribe_button.clicked.connect(self.transcribe_requested)
        box_layout = QVBoxLayout(self.screening_box)
        box_layout.addWidget(QLabel("<b>No transcripts yet: queues are sampled without WER intervals</b>"))
        box_layout.addWidget(self.screening_text)
        box_layout.addWidget(self.transcribe_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.screening_box.hide()
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.screening_box)

    def set_queues(self, queues: list[dict], annotator: str) -> None:
        self.table.setRowCount(len(queues))
        for row, queue in enumerate(queues):
            rated = queue["rated_by"].get(annotator, 0)
            percent = f"{100 * rated / queue['clips']:.0f} %" if queue["clips"] else "—"
            cells = [queue["name"], queue["strategy"], str(queue["clips"]), str(rated), percent]
            for column, text in enumerate(cells):
                self.table.setItem(row, column, QTableWidgetItem(text))
        if queues and not self.table.selectedItems():
            self.table.selectRow(0)
        self.start_button.setEnabled(bool(queues))

    def set_screening_needs(self, needs: str | None, transcribe_label: str, can_transcribe: bool) -> None:
        """`needs` is screening_requirements()'s text, or None when the project has transcripts."""
        self.screening_box.setVisible(needs is not None)
        self.screening_text.setText(needs or "")
        self.transcribe_button.setText(transcribe_label)
        self.transcribe_button.setEnabled(can_transcribe)

    def selected_queue(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return self.table.item(rows[0].row(), 0).text() if rows else None

    def _start_selected(self) -> None:
        name = self.selected_queue()
        if name:
            self.start_requested.emit(name)

    def eventFilter(self, watched, event) -> bool:
        if (
            watched is self.table
            and event.type() == QEvent.Type.KeyPress
            and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and self.selected_queue()
        ):
            self._start_selected()
            return True
        return super().eventFilter(watched, event)


class RatingView(SpokenFocus, QWidget):
    """One clip: the text to hear, who speaks it, the waveform, the buttons (labelled from the key map), the
    progress. Keys are reported by name through `key_pressed`; buttons report their action.

    The session keeps the keyboard here: `speak` (widgets/screen_reader.py) has a screen reader say each
    action's outcome and the clip; the description lists the rating keys."""

    key_pressed = Signal(str)
    action_clicked = Signal(str)
    back_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.help_spoken = ""  # the key help, as `speak` says it
        self.transcripts_spoken = ""  # the clip's transcripts, as `speak` says them
        self.banner = QLabel()
        self.banner.setWordWrap(True)
        self.banner.setStyleSheet("background:#fff3cd; color:#5c4400; padding:6px; border:1px solid #e0c36a;")
        self.banner.hide()
        self.queue_label = QLabel()
        self.back_button = QPushButton("← Queues  (Esc)")
        self.back_button.setToolTip("Leave the session for the queue list (Esc); every rating is already saved")
        self.back_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.back_button.clicked.connect(self.back_requested)
        self.progress_label = QLabel()
        self.progress_label.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.progress_label.setWordWrap(True)  # '0 / 47 rated · this session: …': 648 pixels at 175 %
        top = QHBoxLayout()
        top.addWidget(self.back_button)
        top.addWidget(self.queue_label)
        top.addWidget(self.progress_label, 1)  # the rest of the row: wrapped to its size hint, two lines at 100 %
        self.text_label = QLabel()
        self.text_label.setWordWrap(True)
        self.text_label.setTextFormat(Qt.TextFormat.PlainText)
        self.text_label.setStyleSheet("padding:8px 0;")
        set_font_share(self.text_label, 1.5)  # the clip's text: 18 pixels on a 9-point desktop
        self.meta_label = QLabel()
        self.meta_label.setWordWrap(True)  # 'Clip 1 of 47 · language: en · accent: …': 1,060 pixels at 175 %
        self.state_label = QLabel()
        self.state_label.setWordWrap(True)
        self.waveform = WaveformView()
        self.waveform.setMinimumHeight(80)  # 120 left the page 33 pixels short at 200 % on a laptop: it scrolled
        self.transcripts_label = QLabel()
        self.transcripts_label.setWordWrap(True)
        self.transcripts_label.setTextFormat(Qt.TextFormat.PlainText)
        self.skipped_label = QLabel()
        self.skipped_label.setWordWrap(True)
        set_toned_sheet(self.skipped_label, "color: $warning")
        self.skipped_label.hide()
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)  # a long message (a path without spaces too) never widens the window
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)  # messages carry stored names: never markup
        self.buttons: dict[str, QPushButton] = {}
        grid = self.button_grid = ColumnsLayout(most=BUTTON_COLUMNS)  # at 175 % five a row needed 1,078 pixels
        for action in ACTION_LABELS:
            button = QPushButton()
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _checked=False, a=action: self.action_clicked.emit(a))
            self.buttons[action] = button
            grid.addWidget(button)
        self.help_overlay = QLabel(self)
        self.help_overlay.setTextFormat(Qt.TextFormat.RichText)
        self.help_overlay.setStyleSheet("background:rgba(20,24,32,235); color:white; padding:16px; border-radius:8px;")
        set_font_share(self.help_overlay, 1.15)
        self.help_overlay.hide()
        self.help_rows: list[tuple[str, str]] = []  # (keys, what), from the key map (`set_keymap`)
        self._help_placed_for: tuple | None = None  # what the open help was laid out for (`_place_help`)
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addLayout(top)
        layout.addWidget(self.text_label)
        layout.addWidget(self.meta_label)
        layout.addWidget(self.waveform, 1)
        layout.addWidget(self.state_label)
        layout.addWidget(self.transcripts_label)
        layout.addLayout(grid)
        layout.addWidget(self.skipped_label)
        layout.addWidget(self.status_label)
        self.set_keymap(DEFAULT_KEYMAP)

    # -- the key map: one table for buttons and help ---------------------------------------------------

    def set_keymap(self, keymap: dict[str, tuple[str, ...]]) -> None:
        self.keymap = dict(keymap)
        for action, button in self.buttons.items():
            keys = keys_text(self.keymap.get(action, ()))
            button.setText(f"{ACTION_LABELS[action]}  ({keys})" if keys else ACTION_LABELS[action])
            button.setToolTip(f"{ACTION_LABELS[action]}: {keys}" if keys else f"{ACTION_LABELS[action]}: no key set")
        listed = [(keys_text(self.keymap.get(a, ())) or "—", ACTION_LABELS[a]) for a in ACTION_LABELS]
        self.help_rows = [*listed, *WINDOW_KEYS]
        self._place_help()
        said_keys = [(keys_text(self.keymap.get(a, ())), ACTION_LABELS[a]) for a in ACTION_LABELS]
        self.help_spoken = spoken(
            "Keys",
            *(f"{keys}: {what}" for keys, what in said_keys if keys),
            *(f"{keys}: {what}" for keys, what in WINDOW_KEYS),
        )
        rating_keys = [f"{keys}: {what}" for keys, what in said_keys[:4] if keys]
        closing = keys_text(self.keymap.get("help", ()))
        self.setAccessibleDescription(spoken(", ".join(rating_keys), f"{closing}: all keys" if closing else ""))

    def toggle_help(self) -> None:
        self.help_overlay.setVisible(not self.help_overlay.isVisible())
        self._place_help()
        self.help_overlay.raise_()
        self.speak(self.help_spoken if self.help_overlay.isVisible() else "Keys help closed")

    def _help_text(self, columns: int) -> str:
        """The key help's table, its rows in `columns` side by side (a gap before each column after the first)."""
        per_column = -(-len(self.help_rows) // columns)
        cells = [
            f"<td style='padding-right:16px{'; padding-left:32px' if index >= per_column else ''}'>"
            f"<b>{html.escape(keys)}</b></td><td>{html.escape(what)}</td>"
            for index, (keys, what) in enumerate(self.help_rows)
        ]
        rows = "".join(f"<tr>{''.join(cells[row::per_column])}</tr>" for row in range(per_column))
        closing = keys_text(self.keymap.get("help", ()))
        return (
            f"<h3>Keys</h3><table>{rows}</table><p>{PLACE_NOTE}</p><p>Press "
            f"{html.escape(closing) + ' or ' if closing else ''}Esc to close</p>"
        )

    def _place_help(self) -> None:
        """The key help in one column, or two where one is taller than the view, and smaller than the text around
        it where two are still too tall (text made larger, a short window): at 150 % its last lines reached the
        view's bottom edge, and larger ones were cut off there. Hidden, it is written in one column, unsized."""
        if self.help_overlay.isHidden():  # closed (open on a page not shown is sized: it is seen coming back)
            set_font_share(self.help_overlay, HELP_LAYOUTS[0][0])
            self.help_overlay.setText(self._help_text(HELP_LAYOUTS[0][1]))
            self._help_placed_for = None
            return  # sized when shown: rich text laid out up to four times at every resize for nothing
        placed_for = (self.size(), QApplication.font().toString(), tuple(self.help_rows), self.keymap.get("help"))
        if placed_for == self._help_placed_for:
            return  # laid out for this already (a font change elsewhere, a resize back): 30 ms a layout
        self._help_placed_for = placed_for
        for share, columns in HELP_LAYOUTS:  # the first that fits; the last anyway (a window shorter than any)
            set_font_share(self.help_overlay, share)
            self.help_overlay.setText(self._help_text(columns))
            self.help_overlay.setWordWrap(False)
            width = min(self.help_overlay.sizeHint().width(), self.width())
            self.help_overlay.setWordWrap(True)  # narrower than the view: its descriptions wrap
            size = QSize(width, self.help_overlay.heightForWidth(width))
            if size.height() <= self.height():
                break
        self.help_overlay.setGeometry(
            max(0, (self.width() - size.width()) // 2), max(0, (self.height() - size.height()) // 3), size.width(),
            size.height(),
        )  # fmt: skip

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._place_help()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # larger text: the help's size again
            self._place_help()

    # -- drawing -----------------------------------------------------------------------------------------

    def show_clip(self, clip: ClipView | None, queue: str, speed: float) -> None:
        self.queue_label.setText(f"Queue <b>{html.escape(queue)}</b>")
        if clip is None:
            self.text_label.setText("Every clip of this queue is rated. Thank you!")
            self.meta_label.setText("")
            self.state_label.setText("")
            self.transcripts_label.hide()
            self.waveform.set_clip(None, "Queue finished")
            self.context_line = spoken(self.text_label.text(), self.progress_label.text())
            return
        self.text_label.setText(clip.text)
        who = " · ".join(
            f"{name}: {value}"
            for name, value in (
                ("language", clip.language),
                ("accent", clip.accent or "—"),
                ("voice", clip.voice or "—"),
                ("part", clip.part),
                ("item", clip.item),
            )
        )
        self.meta_label.setText(f"Clip {clip.position} of {clip.total} · {who}")
        self.show_state(clip, speed)

    def show_state(self, clip: ClipView | None, speed: float) -> None:
        if clip is None:
            return
        state = f"Your rating: <b>{clip.rating}</b>" if clip.rating else "Not rated yet"
        if clip.note:
            state += f" · note: {clip.note}"
        state += f" · speed {speed:.1f}×"
        self.state_label.setText(state)
        self.context_line = clip_line(clip, speed)
        if clip.transcripts_visible:
            lines = [f"{asr}: {isolated(text)}" for asr, text in clip.transcripts] or ["no transcripts for this clip"]
            wer = "—" if clip.wer is None else f"{clip.wer:.2f}"
            self.transcripts_label.setText("\n".join([f"{clip.error_metric} {wer}", *lines]))
            said_rate = "" if clip.wer is None else f"{clip.error_metric} {clip.wer:.2f}"
            heard = [f"{asr}: {text}" for asr, text in clip.transcripts]
            self.transcripts_spoken = spoken(said_rate, *heard) if heard else "No transcripts for this clip"
            self.transcripts_label.show()
        else:
            self.transcripts_label.hide()

    def show_progress(self, progress: RatingProgress) -> None:
        counts = ", ".join(f"{n} {rating}" for rating, n in progress.session_counts.items())
        text = f"{progress.done} / {progress.total} rated · this session: {counts}"
        if progress.saving:  # rated, and counted once in
            text += f" · {progress.saving} saving"
        if progress.skipped:
            text += f" · {progress.skipped} skipped"
        self.progress_label.setText(text)

    def show_skipped(self, skipped: list) -> None:
        if not skipped:
            self.skipped_label.hide()
            return
        reasons = "; ".join(f"#{s.position} {_named_reason(s.clip_id, s.reason)}" for s in skipped[:5])
        more = f"; and {len(skipped) - 5} more" if len(skipped) > 5 else ""
        clips = "1 clip" if len(skipped) == 1 else f"{len(skipped)} clips"
        self.skipped_label.setText(f"{clips} skipped (missing or unreadable audio): {reasons}{more}")
        self.skipped_label.show()

    def set_banner(self, text: str | None) -> None:
        self.banner.setText(text or "")
        self.banner.setVisible(bool(text))

    def transcripts_said(self) -> str:
        """The transcripts as shown (the error rate and each system's text), or that they are hidden."""
        return self.transcripts_spoken if self.transcripts_label.isVisibleTo(self) else "Transcripts hidden"

    def show_status(self, text: str) -> None:
        """A status line the rater sees and a screen reader says."""
        self.status_label.setText(text)
        self.speak(text)

    # -- input -------------------------------------------------------------------------------------------

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.isAutoRepeat():
            event.accept()  # holding a key never rates a run of clips
            return
        names = key_names(event)
        if names[0] == "Esc" and not any("Esc" in keys for keys in self.keymap.values()):
            if self.help_overlay.isVisible():
                self.toggle_help()  # Esc closes the key help first
            else:
                self.back_requested.emit()  # then leaves the session
            event.accept()
            return
        name = next((name for name in names if keymap_action(self.keymap, name)), None)
        if name:
            self.key_pressed.emit(name)
            event.accept()
        elif event.modifiers() & WINDOW_KEY_MODIFIERS:
            super().keyPressEvent(event)  # maybe the window's (Ctrl+& on AZERTY is Ctrl+1): passed on to it
        else:
            event.accept()  # any other key stays here: Page Down never scrolls the page under the session
