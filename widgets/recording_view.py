"""The Speakers page's views: the speaker list, the add-speaker and consent dialogs, the live level meter and the
recorder panel (prompt, take, checks, progress, keys). They only draw and report keys and clicks; the page
(`app/speakers_page.py`) drives the recorder and runs every read and write off the UI thread."""

from __future__ import annotations

import time

from PySide6.QtCore import QEvent, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QPainter, QTextDocumentFragment
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.recording.quality import CLOSE_PEAK_DBFS
from spokenbench.core.recording.speakers import Speaker
from spokenbench.widgets.elided import ElidedComboBox
from spokenbench.widgets.flow_layout import ColumnsLayout, WrappedHeight, flow_row
from spokenbench.widgets.keys import key_names
from spokenbench.widgets.screen_reader import SpokenFocus, spoken
from spokenbench.widgets.tables import FittedColumns, row_table
from spokenbench.widgets.text_size import set_font_share
from spokenbench.widgets.tones import set_toned_sheet, tone
from spokenbench.widgets.waveform import WaveformView

# action -> (button label, keys): one table for the buttons, the key handling and the help line
RECORDER_KEYS = {
    "record": ("Record / Stop", ("R",)),
    "retake": ("Retake", ("Backspace",)),
    "play": ("Play", ("Space",)),
    "previous": ("Previous", ("Left",)),
    "next": ("Next", ("Right",)),
    "level": ("Check level", ("L",)),
}
METER_FLOOR_DB = -60.0
# read by a screen reader after the recorder's line as it takes the focus: the keys that act there, and what Tab meets
RECORDER_KEYS_SAID = (
    "R records and stops, Backspace records again, Space plays the take, Left and Right go to the previous and "
    "next prompt. L checks the level: before a take, speak for 3 seconds; during one, it says the level of the "
    "last 3 seconds. "
    "Tab goes to the input, then the script's and the cloning's buttons. Wear headphones: a "
    "microphone that hears the screen reader records it."
)


def action_for_key(name: str) -> str | None:
    key = name.upper() if len(name) == 1 else name
    return next((action for action, (_label, keys) in RECORDER_KEYS.items() if key in keys), None)


class LevelMeter(QWidget):
    """A horizontal meter: RMS as the bar, the peak as a line that falls back slowly, -60…0 dBFS. Not said as it
    moves (40 changes a second): L says the level in words (`quality.level_verdict`)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAccessibleName("Input level")
        self.setAccessibleDescription("L on the recorder says it")
        self.setMinimumHeight(22)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.rms_db = METER_FLOOR_DB
        self.peak_db = METER_FLOOR_DB
        self.held_peak_db = METER_FLOOR_DB
        self._held_at = 0.0
        self.updates = 0

    def set_level(self, rms_db: float, peak_db: float) -> None:
        self.rms_db, self.peak_db = rms_db, peak_db
        now = time.monotonic()
        if peak_db >= self.held_peak_db or now - self._held_at > 1.0:
            self.held_peak_db, self._held_at = peak_db, now
        self.updates += 1
        self.setToolTip(f"RMS {rms_db:.1f} dBFS, peak {peak_db:.1f} dBFS")
        self.update()

    def reset(self) -> None:
        self.rms_db = self.peak_db = self.held_peak_db = METER_FLOOR_DB
        self.update()

    @staticmethod
    def _fraction(db: float) -> float:
        return min(1.0, max(0.0, (db - METER_FLOOR_DB) / -METER_FLOOR_DB))

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        rect = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        painter.fillRect(rect, QColor("#20242c"))
        width = rect.width() * self._fraction(self.rms_db)
        colour = "#d9534f" if self.peak_db >= CLOSE_PEAK_DBFS else "#f0ad4e" if self.rms_db > -12 else "#5cb85c"
        painter.fillRect(QRectF(rect.left(), rect.top(), width, rect.height()), QColor(colour))
        x = rect.left() + rect.width() * self._fraction(self.held_peak_db)
        painter.setPen(QColor("white"))
        painter.drawLine(int(x), int(rect.top()), int(x), int(rect.bottom()))
        painter.end()


class SpeakerListView(QWidget):
    """The project's speakers with their consent and progress; add, consent and withdraw buttons."""

    selected = Signal(str)
    add_requested = Signal()
    consent_requested = Signal()
    withdraw_requested = Signal()

    COLUMNS = ("Speaker", "Language", "Accent", "Gender", "Consent", "Prompts done", "Cloned")

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.table = row_table(self.COLUMNS)
        self.table.setAccessibleName("Speakers")
        self.fitted = FittedColumns(self.table, wrapped=[0, 3, 4], name="speakers")  # name, gender and consent wrap
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.add_button = QPushButton("&Add speaker…")  # Alt+letters: reached from the recorder without Tab
        self.consent_button = QPushButton("&Consent…")
        self.withdraw_button = QPushButton("&Withdraw consent…")
        self.add_button.clicked.connect(self.add_requested)
        self.consent_button.clicked.connect(self.consent_requested)
        self.withdraw_button.clicked.connect(self.withdraw_requested)
        for button in (self.add_button, self.consent_button, self.withdraw_button):
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # Tab reaches them; a click leaves the keys where they were
        buttons = flow_row(self.add_button, self.consent_button, self.withdraw_button)  # wrapped with larger text
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("<h3>Speakers</h3>"))
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self.wrapped_height = WrappedHeight(self)  # in the page's splitter: its buttons' lines never squeezed
        self._names: list[str] = []
        self.set_buttons(None)

    def set_speakers(self, speakers: list[Speaker], keep: str | None = None) -> None:
        self.table.blockSignals(True)
        self._names = [s.name for s in speakers]
        self.table.setRowCount(len(speakers))
        for row, s in enumerate(speakers):
            gender = s.gender_self_described or "—"
            if s.gender_group not in ("unspecified",) and s.gender_self_described != s.gender_group:
                gender += f" ({s.gender_group})"
            cells = [
                s.name,
                s.language or "—",
                s.accent or "—",
                gender,
                s.consent_state,
                str(s.prompts_done),
                str(s.cloned_voices),
            ]
            for column, text in enumerate(cells):
                self.table.setItem(row, column, QTableWidgetItem(text))
        self.fitted.fit()
        self.table.blockSignals(False)
        if keep in self._names:
            self.table.selectRow(self._names.index(keep))
        elif speakers:
            self.table.selectRow(0)
        self._selection_changed()

    def selected_name(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return self._names[rows[0].row()] if rows and rows[0].row() < len(self._names) else None

    def select(self, name: str) -> None:
        if name in self._names:
            self.table.selectRow(self._names.index(name))

    def set_buttons(self, speaker: Speaker | None) -> None:
        self.consent_button.setEnabled(speaker is not None and not speaker.consent_in_force)
        self.withdraw_button.setEnabled(speaker is not None and speaker.consent_in_force)

    def _selection_changed(self) -> None:
        name = self.selected_name()
        if name is not None:
            self.selected.emit(name)


class AddSpeakerDialog(QDialog):
    """Name, language, accent and gender in the speaker's own words."""

    submitted = Signal(dict)

    def __init__(self, parent: QWidget | None = None, languages: list[str] | None = None):
        super().__init__(parent)
        self.operations: list = []  # the app's work whose callbacks reach this dialog
        self.setWindowTitle("Add speaker")
        self.name_edit = QLineEdit()
        self.language_box = QComboBox()
        self.language_box.setEditable(True)
        self.language_box.addItems(languages or ["en", "zh", "ko"])
        self.accent_edit = QLineEdit()
        self.accent_edit.setPlaceholderText("e.g. american, british, indian, beijing, seoul")
        self.gender_edit = QLineEdit()
        self.gender_edit.setPlaceholderText("in the speaker's own words (optional)")
        self.notes_edit = QLineEdit()
        self.error_label = QLabel()
        set_toned_sheet(self.error_label, "color: $error")
        self.error_label.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Name", self.name_edit)
        form.addRow("Language", self.language_box)
        form.addRow("Accent", self.accent_edit)
        form.addRow("Gender", self.gender_edit)
        form.addRow("Notes", self.notes_edit)
        hint = QLabel(
            "Gender is stored as the speaker describes it; the gender study uses a group derived from it "
            "(male, female, other, unspecified)."
        )
        hint.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self._submit)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(hint)
        layout.addWidget(self.error_label)
        layout.addWidget(self.buttons)

    def add_languages(self, languages: list[str]) -> None:
        """Offer the project's languages too; what was typed or chosen stays."""
        current = self.language_box.currentText()
        known = {self.language_box.itemText(i) for i in range(self.language_box.count())}
        self.language_box.addItems([language for language in languages if language not in known])
        self.language_box.setCurrentText(current)

    def values(self) -> dict:
        return {
            "name": self.name_edit.text().strip(),
            "language": self.language_box.currentText().strip(),
            "accent": self.accent_edit.text().strip() or None,
            "gender": self.gender_edit.text().strip() or None,
            "notes": self.notes_edit.text().strip() or None,
        }

    def _submit(self) -> None:
        self.error_label.setText("")
        self.submitted.emit(self.values())

    def show_error(self, text: str) -> None:
        self.error_label.setText(text)


class ConsentDialog(QDialog):
    """The consent text the speaker reads and agrees to; agreement is recorded with the time and who took it."""

    agreed = Signal(str, str)  # consent text, recorded by

    def __init__(self, speaker: str, text: str, recorded_by: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(f"Consent of {speaker}")
        self.text_edit = QPlainTextEdit(text)
        self.text_edit.setMinimumSize(520, 200)
        self.text_edit.setAccessibleName("Consent text")
        self.text_edit.setTabChangesFocus(True)  # Tab goes on to who took it, as in every other field
        self.by_edit = QLineEdit(recorded_by)
        self.agree_box = QCheckBox(f"{speaker} has read this text and agrees to it")
        self.error_label = QLabel()
        set_toned_sheet(self.error_label, "color: $error")
        self.error_label.setWordWrap(True)
        self.agree_button = QPushButton("Record agreement")
        self.agree_button.setEnabled(False)
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(self.reject)
        self.agree_button.clicked.connect(self._agree)
        self.agree_box.toggled.connect(self._update)
        self.by_edit.textChanged.connect(self._update)
        self.text_edit.textChanged.connect(self._update)
        form = QFormLayout()
        form.addRow("Consent taken by", self.by_edit)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(cancel)
        buttons.addWidget(self.agree_button)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"<b>Read this text to or with {speaker}.</b> Recording is refused until they agree."))
        layout.addWidget(self.text_edit, 1)
        layout.addLayout(form)
        layout.addWidget(self.agree_box)
        layout.addWidget(self.error_label)
        layout.addLayout(buttons)

    def _update(self) -> None:
        ready = (
            self.agree_box.isChecked()
            and bool(self.by_edit.text().strip())
            and bool(self.text_edit.toPlainText().strip())
        )
        self.agree_button.setEnabled(ready)

    def _agree(self) -> None:
        self.error_label.setText("")
        self.agreed.emit(self.text_edit.toPlainText(), self.by_edit.text().strip())

    def show_error(self, text: str) -> None:
        self.error_label.setText(text)


class RecorderView(SpokenFocus, QWidget):
    """The prompt to read, the device and level meter, the take and its checks, progress, and the keys. Keys are
    reported by action through `action_requested` (buttons too). With the focus it keeps the keys while a take is
    recorded, so what they did is said through `say` (SpokenFocus); coming to it says the speaker, the prompt and
    its take (`context_line`), then the keys."""

    action_requested = Signal(str)
    device_chosen = Signal(int)
    reading_list_requested = Signal()
    project_prompts_requested = Signal()
    clone_requested = Signal()
    rescan_requested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._checks: tuple[list[dict] | None, str] = (None, "")  # the last shown, drawn again in new tones
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setAccessibleDescription(RECORDER_KEYS_SAID)
        self.banner = QLabel()
        self.banner.setWordWrap(True)
        self.banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.banner.setStyleSheet("background:#fff3cd; color:#5c4400; padding:6px; border:1px solid #e0c36a;")
        self.banner.hide()
        self.speaker_label = QLabel("Choose or add a speaker")
        self.speaker_label.setWordWrap(True)  # a long name wraps: the recorder's width never grows with it
        self.progress_label = QLabel()
        self.progress_label.setAlignment(Qt.AlignmentFlag.AlignRight)
        top = QHBoxLayout()
        top.addWidget(self.speaker_label, 1)
        top.addWidget(self.progress_label)
        self.device_box = ElidedComboBox()
        self.device_box.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # Tab or Alt+I; a click leaves R with the recorder
        # asks for room for a device's name, not just its first word; squeezed, it elides down to 8 characters
        self.device_box.setMinimumContentsLength(20)
        self.device_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.device_box.currentIndexChanged.connect(self.device_chosen)
        self.rescan_button = QPushButton("Rescan &devices")
        self.rescan_button.setToolTip("Look for input devices again (after connecting a microphone)")
        self.meter = LevelMeter()
        devices = QHBoxLayout()
        self.input_label = QLabel("&Input")
        self.input_label.setBuddy(self.device_box)
        devices.addWidget(self.input_label)
        devices.addWidget(self.device_box, 1)
        devices.addWidget(self.rescan_button)
        self.position_label = QLabel()
        self.position_label.setWordWrap(True)  # "No prompts: …" on two lines with larger text
        self.prompt_label = QLabel()
        self.prompt_label.setWordWrap(True)
        self.prompt_label.setTextFormat(Qt.TextFormat.PlainText)
        self.prompt_label.setStyleSheet("padding:10px 0;")
        set_font_share(self.prompt_label, 1.65)  # the prompt read aloud: 20 pixels on a 9-point desktop
        self.state_label = QLabel()
        set_toned_sheet(self.state_label, "font-weight:bold;")
        self.waveform = WaveformView()
        self.waveform.setMinimumHeight(80)
        self.checks_label = QLabel()
        self.checks_label.setWordWrap(True)
        self.checks_label.setTextFormat(Qt.TextFormat.RichText)
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        self.buttons: dict[str, QPushButton] = {}
        grid = ColumnsLayout(most=3)  # rows of three on a laptop; two or one with larger text
        for action, (label, keys) in RECORDER_KEYS.items():
            button = QPushButton(f"{label}  ({' / '.join(keys)})")
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _checked=False, a=action: self.action_requested.emit(a))
            self.buttons[action] = button
            grid.addWidget(button)
        self.reading_list_button = QPushButton("Load reading &list…")
        self.project_button = QPushButton("Use project &questions")
        self.clone_button = QPushButton("Create cl&oned voice")
        # Tab and their Alt+letters reach them (a click leaves the keys with the recorder); the take's buttons
        # above take no focus: their keys act wherever the recorder has it, and Space on one would press it
        for button, signal in (
            (self.rescan_button, self.rescan_requested),
            (self.reading_list_button, self.reading_list_requested),
            (self.project_button, self.project_prompts_requested),
            (self.clone_button, self.clone_requested),
        ):
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
            button.clicked.connect(signal)
        extra = flow_row(self.reading_list_button, self.project_button, None, self.clone_button)  # cloning at the right
        layout = QVBoxLayout(self)
        layout.addWidget(self.banner)
        layout.addLayout(top)
        layout.addLayout(devices)
        layout.addWidget(self.meter)  # the recorder's width: beside the input it had 80-100 pixels on a laptop
        layout.addWidget(self.position_label)
        layout.addWidget(self.prompt_label)
        layout.addWidget(self.state_label)
        layout.addWidget(self.waveform, 1)
        layout.addWidget(self.checks_label)
        layout.addLayout(grid)
        layout.addLayout(extra)
        layout.addWidget(self.status_label)
        self.wrapped_height = WrappedHeight(self)  # in the page's splitter: as high as its wrapped lines need

    @property
    def context_line(self) -> str:
        """Where the recorder is, as a screen reader says it on coming here or on moving to another prompt: the
        speaker and their consent, the prompt and its text, its take, and the script's progress."""
        if self.banner.isVisible():  # recording cannot work here: why comes first
            said = [self.banner.text()]
        else:
            said = []
        said += [
            QTextDocumentFragment.fromHtml(self.speaker_label.text()).toPlainText().replace(" · ", ", "),
            self.position_label.text(),
            self.prompt_label.text(),
            self.state_label.text(),
            self.progress_label.text(),
        ]
        return spoken(*said)

    def say(self, text: str, with_context: bool = False) -> None:
        """What a key or a take's outcome did, said by a screen reader at once while the recorder has the focus
        (without it, coming to the recorder says where it is, not this)."""
        if text or with_context:
            self.speak(text, with_context)

    def set_status(self, text: str, said: str | None = None) -> None:
        """The line under the buttons; said as well (`said` instead, when given; nothing when both are empty)."""
        self.status_label.setText(text)
        self.say(text if said is None else said)

    def set_banner(self, text: str | None) -> None:
        self.banner.setText(text or "")
        self.banner.setVisible(bool(text))

    def set_devices(self, labels: list[str], keep: str | None = None) -> None:
        """List the devices; `keep` (a label) stays chosen when it is still there."""
        self.device_box.blockSignals(True)
        self.device_box.clear()
        self.device_box.addItems(labels)
        self.device_box.setEnabled(bool(labels))
        if keep in labels:
            self.device_box.setCurrentIndex(labels.index(keep))
        self.device_box.blockSignals(False)

    def set_clone_state(self, enabled: bool, reason: str) -> None:
        """Create cloned voice: enabled with what it does, or disabled with what it needs."""
        self.clone_button.setEnabled(enabled)
        self.clone_button.setToolTip(reason)

    def set_prompt(self, position: int, total: int, text: str, label: str) -> None:
        if total == 0:
            self.position_label.setText("No prompts: load a reading list, or add items in the speaker's language")
            self.prompt_label.setText("")
            return
        self.position_label.setText(f"Prompt {position} of {total} · {label}")
        self.prompt_label.setText(text)

    def changeEvent(self, event) -> None:
        """The desktop switched between light and dark while the app ran: pass and fail take the new tones."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.show_checks(*self._checks)

    def show_checks(self, checks: list[dict] | None, header: str = "") -> None:
        self._checks = (checks, header)
        if not checks:
            self.checks_label.setText(header)
            return
        rows = "".join(
            f"<tr><td style='color:{tone('success' if c['passed'] else 'error')}; padding-right:8px'>"
            f"{'✓ pass' if c['passed'] else '✗ fail'}</td><td style='padding-right:8px'>{c['name'].replace('_', ' ')}</td>"
            f"<td>{_escape(c['reason'])}</td></tr>"
            for c in checks
        )
        self.checks_label.setText(f"{header}<table>{rows}</table>")

    def set_recording_enabled(self, enabled: bool) -> None:
        for action in ("record", "retake", "level"):
            self.buttons[action].setEnabled(enabled)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.isAutoRepeat():
            event.accept()
            return
        action = next(filter(None, map(action_for_key, key_names(event))), None)
        if action is not None:
            self.action_requested.emit(action)
            event.accept()
        else:
            super().keyPressEvent(event)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
