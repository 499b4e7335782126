"""The jobs list: one card per job — this window's operations and other processes' jobs alike — with its label,
state, progress bar, rate-based time left and one action (Cancel or Resume). A plain view: it shows the `JobRow`s
it is given and emits what the user asked for; the app decides what the rows are and what the actions do."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from spokenbench.widgets.tables import row_table
from spokenbench.widgets.tones import set_toned_sheet, tone

# state → (badge text, badge colour); white text on each at least 4.5:1, on light and dark palettes alike
STATES = {
    "running": ("Running", "#2f6fdf"),
    "cancelling": ("Cancelling…", "#616161"),
    "resuming": ("Resuming…", "#2f6fdf"),
    "paused": ("Paused", "#995400"),  # a live job waiting for room on a full disk (it goes on by itself)
    "interrupted": ("Interrupted", "#995400"),
    "failed": ("Failed", "#c62828"),
    "cancelled": ("Cancelled", "#616161"),
    "finished": ("Finished", "#2e7d32"),
}
LIVE_STATES = ("running", "cancelling", "resuming", "paused")
ACTION_LABELS = {"cancel": "Cancel", "stop_now": "Stop Now", "resume": "Resume"}
STOP_NOW_TOOLTIP = (
    "Stop without waiting for the answers to requests already sent: the service has them and bills them, but "
    "their answers are lost, and resuming sends (and pays for) them again."
)
STOPPING_NOW_TOOLTIP = "Stopping now: requests already sent are abandoned."


@dataclass(frozen=True)
class JobRow:
    key: str  # stable across updates: the card is updated in place
    title: str
    state: str = "running"  # a key of STATES
    detail: str = ""  # the job's latest message, or why it stopped
    origin: str = ""  # who runs it: "this window", "spokenbench · pid 4242"
    done: int = 0
    total: int | None = None
    eta_s: float | None = None
    action: str | None = None  # "cancel", "stop_now" (a cancel waiting for answers already sent), "resume" or None
    action_enabled: bool = True
    action_tooltip: str = ""
    run_id: int | None = None  # the evaluation run it works on: Enter (or a double-click) on the card opens it


class StopButtonKeys:
    """The keyboard on a button whose action changes under it as a job stops (Cancel, disabled while the job takes
    the cancel in, Stop Now, disabled, Resume). Disabled, a button passes the keys on down the focus chain — to
    another card's Resume, or out of the panel, where Esc no longer closes it — so they go to `holder` instead;
    and to the holder too when the button turns into Resume, which a second Space on Stop Now would press as the
    job ends. They come back only for Stop Now, the next step of the stop the user pressed. Only a change moves
    them: a Resume the user went to keeps them."""

    def __init__(self, button: QPushButton, holder: QWidget):
        self.button, self.holder = button, holder
        self.subject = None  # what the button acts on (the Evaluate page's selected run; a card's own job)
        self.offered_stop = False  # the button was an enabled Cancel or Stop Now
        self.held = False  # the holder took the keys from the button

    def before(self, offers_stop: bool, subject=None) -> None:
        """Call before the button changes: `offers_stop`, whether it will be an enabled Cancel or Stop Now, for
        `subject`. Another subject (another run selected) starts afresh: the keys come back only to stop the job
        the user stopped."""
        if subject != self.subject:
            self.subject, self.offered_stop, self.held = subject, False, False
        if self.offered_stop and not offers_stop and self._has_keys(self.button):
            self.holder.setFocus(Qt.FocusReason.OtherFocusReason)
            self.held = True
        self.offered_stop = offers_stop

    def after(self, stop_now: bool) -> None:
        """Call after the button changed: `stop_now`, whether it now offers Stop Now (enabled)."""
        if self.held and self.button.isEnabled() and not self.button.isHidden():
            self.held = False
            if stop_now and self._has_keys(self.holder):
                self.button.setFocus(Qt.FocusReason.OtherFocusReason)

    @staticmethod
    def _has_keys(widget: QWidget) -> bool:
        """Whether `widget` has its window's keyboard, also while another window is active."""
        return widget.window().focusWidget() is widget


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}:{seconds:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def progress_text(row: JobRow) -> str:
    """'1,234 / 20,000 · 6 % · 0:42 left'"""
    if row.total:
        parts = [f"{row.done:,} / {row.total:,}", f"{100 * row.done / row.total:.0f} %"]
        if row.eta_s is not None and row.state == "running":
            parts.append(f"{format_duration(row.eta_s)} left")
        return " · ".join(parts)
    return f"{row.done:,} done" if row.done else ""


class ElidedLabel(QLabel):
    """A one-line label that shortens its text with '…' instead of widening the panel; the full text is its tooltip."""

    def __init__(self, text: str = "", parent: QWidget | None = None):
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setMinimumWidth(40)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:
        return QSize(40, super().minimumSizeHint().height())

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        metrics = QFontMetrics(self.font())
        painter.setPen(self.palette().color(self.foregroundRole()))
        text = metrics.elidedText(self.text(), Qt.TextElideMode.ElideRight, self.contentsRect().width())
        painter.drawText(self.contentsRect(), int(self.alignment()), text)


class JobCard(QFrame):
    """One job: title and state badge, progress bar, message and progress figures, the action button."""

    def __init__(self, key: str, panel: JobsPanel):
        super().__init__()
        self.key = key
        self.setObjectName("jobCard")
        self.title = ElidedLabel()
        self.title.setObjectName("jobTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.badge = QLabel()
        self.badge.setObjectName("jobBadge")
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.button = QPushButton()
        self.button.setMinimumWidth(84)
        self.button.clicked.connect(lambda: panel._action_clicked(self))
        self.bar = QProgressBar()
        self.bar.setTextVisible(False)
        self.bar.setFixedHeight(8)
        self.detail = ElidedLabel()
        self.detail.setObjectName("jobDetail")
        self.figures = QLabel()
        self.figures.setObjectName("jobFigures")
        self.figures.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.origin = QLabel()
        self.origin.setObjectName("jobOrigin")

        top = QHBoxLayout()
        top.setSpacing(8)
        top.addWidget(self.title, 1)
        top.addWidget(self.badge)
        top.addWidget(self.button)
        bottom = QHBoxLayout()
        bottom.setSpacing(12)
        bottom.addWidget(self.detail, 1)
        bottom.addWidget(self.figures)
        bottom.addWidget(self.origin)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.setSpacing(5)
        layout.addLayout(top)
        layout.addWidget(self.bar)
        layout.addLayout(bottom)
        self.row: JobRow | None = None
        self.panel = panel
        self.keys = StopButtonKeys(self.button, self)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # Tab reaches each card; the focus ring shows which

    def show_row(self, row: JobRow) -> None:
        self.row = row
        self.title.setText(row.title)
        text, colour = STATES.get(row.state, (row.state.title(), "#616161"))
        self.badge.setText(text)
        self.badge.setStyleSheet(
            f"QLabel#jobBadge {{ color: white; background: {colour}; border-radius: 8px; padding: 1px 8px; }}"
        )
        if row.total:
            self.bar.setRange(0, row.total)
            self.bar.setValue(min(row.done, row.total))
        elif row.state in LIVE_STATES:
            self.bar.setRange(0, 0)  # busy indicator: the size of the work is not known yet
        else:
            self.bar.setRange(0, 1)
            self.bar.setValue(1 if row.state == "finished" else 0)
        self.detail.setText(row.detail)
        self.figures.setText(progress_text(row))
        self.origin.setText(row.origin)
        self.keys.before(row.action in ("cancel", "stop_now") and row.action_enabled)
        self.button.setVisible(row.action is not None)
        self.button.setText(ACTION_LABELS.get(row.action or "", ""))
        self.button.setEnabled(row.action_enabled)
        self.keys.after(row.action_enabled and row.action == "stop_now")
        self.button.setToolTip(row.action_tooltip)
        # a disabled button shows no tooltip on most styles: say it on the card too
        tips = ["" if row.action_enabled else row.action_tooltip]
        tips.append(f"Enter or a double-click: run {row.run_id} on the Evaluate page" if row.run_id else "")
        self.setToolTip("\n".join(tip for tip in tips if tip))

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.row is not None and self.row.run_id:
            self.panel.runOpened.emit(self.row.run_id)
            event.accept()
            return
        super().keyPressEvent(event)

    def mouseDoubleClickEvent(self, event) -> None:
        if self.row is not None and self.row.run_id:
            self.panel.runOpened.emit(self.row.run_id)
        super().mouseDoubleClickEvent(event)


class JobsPanel(QWidget):
    """Cards for the given rows, in the given order, updated in place."""

    cancelRequested = Signal(str)  # row key
    stopNowRequested = Signal(str)  # row key: abandon requests already sent too
    resumeRequested = Signal(str)
    runOpened = Signal(int)  # a card's evaluation run, opened with Enter or a double-click

    EMPTY_TEXT = (
        "No jobs. Imports, synthesis, transcription and evaluation runs show here while they run — started in "
        "this window or with <code>spokenbench</code> on the command line — with their progress and time left."
    )

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("jobsPanel")
        self.cards: dict[str, JobCard] = {}
        self.empty = QLabel(self.EMPTY_TEXT)
        self.empty.setWordWrap(True)
        self.empty.setObjectName("jobsEmpty")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._list = QWidget()
        self._list.setObjectName("jobsList")
        self._list_layout = QVBoxLayout(self._list)
        self._list_layout.setContentsMargins(8, 8, 8, 8)
        self._list_layout.setSpacing(6)
        self._list_layout.addWidget(self.empty)
        self._list_layout.addStretch(1)
        scroll = self._scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # no card yet: the keys still land in the panel
        scroll.setWidget(self._list)
        self.batches = BatchesView()
        self.batches.setVisible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scroll, 1)
        layout.addWidget(self.batches, 1)
        self.batches.rowsChanged.connect(lambda count: self.batches.setVisible(count > 0))
        set_toned_sheet(
            self,
            "QWidget#jobsList { background: palette(base); }"
            "QFrame#jobCard { background: palette(window); border: 1px solid palette(mid); border-radius: 6px; }"
            "QLabel#jobDetail, QLabel#jobOrigin, QLabel#jobFigures { color: $muted; }"
            "QLabel#jobsEmpty { color: $muted; padding: 16px; }",
        )

    def take_focus(self) -> None:
        """The keyboard to the first card (Tab goes on to the next), or to the list while there is none."""
        for index in range(self._list_layout.count()):
            card = self._list_layout.itemAt(index).widget()
            if isinstance(card, JobCard) and card.isVisibleTo(self):  # a card just added is shown later
                card.setFocus(Qt.FocusReason.ShortcutFocusReason)
                return
        self._scroll.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def set_rows(self, rows: list[JobRow]) -> None:
        keys = [row.key for row in rows]
        focused = QApplication.focusWidget()
        lost_focus = False  # a card with the keyboard went (its job ended): the keyboard stays in the panel
        for key in list(self.cards):
            if key not in keys:
                card = self.cards.pop(key)
                lost_focus = lost_focus or (focused is not None and (focused is card or card.isAncestorOf(focused)))
                self._list_layout.removeWidget(card)
                card.deleteLater()
        for position, row in enumerate(rows):
            card = self.cards.get(row.key)
            if card is None:
                card = self.cards[row.key] = JobCard(row.key, self)
            if self._list_layout.indexOf(card) != position:
                self._list_layout.insertWidget(position, card)
            card.show_row(row)
        self.empty.setVisible(not rows)
        if lost_focus:
            self.take_focus()

    @property
    def rows(self) -> list[JobRow]:
        ordered = sorted(self.cards.values(), key=self._list_layout.indexOf)
        return [card.row for card in ordered if card.row is not None]

    def live_count(self) -> int:
        return sum(1 for row in self.rows if row.state in LIVE_STATES)

    def _action_clicked(self, card: JobCard) -> None:
        if card.row is None:
            return
        if card.row.action == "cancel":
            self.cancelRequested.emit(card.key)
        elif card.row.action == "stop_now":
            self.stopNowRequested.emit(card.key)
        elif card.row.action == "resume":
            self.resumeRequested.emit(card.key)


# --------------------------------------------------------------------------------------------------
# Provider batch jobs and batch files (issue 14)

BATCH_COLUMNS = ("Provider", "Job id", "Model", "State", "Requests", "Submitted")


@dataclass(frozen=True)
class BatchRow:
    batch_id: int
    provider: str  # 'openai', 'gemini', 'batch file'
    job_id: str  # the provider's batch id, or the batch file's name
    model: str
    state: str  # as shown
    requests: str
    submitted: str  # local time
    detail: str = ""  # the tooltip: run, provider state, cost, note
    collectable: bool = False
    cancellable: bool = False
    attention: bool = False  # a note or an error: the state is shown in the warning colour


class BatchesView(QGroupBox):
    """The batch jobs the project submitted (and the batch files it wrote): one row each, with Collect, Cancel
    batch and Refresh for the selected rows (all collectable rows when none is selected)."""

    collectRequested = Signal(list)  # batch ids
    cancelRequested = Signal(list)
    refreshRequested = Signal()
    rowsChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Batch jobs (provider batches and batch files)", parent)
        self.rows: list[BatchRow] = []
        self.table = row_table(BATCH_COLUMNS, QAbstractItemView.SelectionMode.ExtendedSelection)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setObjectName("jobDetail")
        self.collect_button = QPushButton("Collect")
        self.collect_button.setToolTip(
            "Store what the finished jobs answered (finished jobs are collected by themselves)"
        )
        self.cancel_button = QPushButton("Cancel batch")
        self.cancel_button.setToolTip(
            "Ask the provider to cancel the selected jobs; what they answered is still collected"
        )
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Ask the providers where the unfinished jobs are now")
        buttons = QHBoxLayout()
        buttons.addWidget(self.message, 1)
        buttons.addWidget(self.refresh_button)
        buttons.addWidget(self.collect_button)
        buttons.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)
        self.collect_button.clicked.connect(self._collect)
        self.cancel_button.clicked.connect(self._cancel)
        self.refresh_button.clicked.connect(self.refreshRequested)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self._update_buttons()

    def set_rows(self, rows: list[BatchRow]) -> None:
        selected = set(self.selected_ids())
        self.rows = list(rows)
        table = self.table
        table.blockSignals(True)
        table.clearSelection()
        table.setRowCount(len(rows))
        for position, row in enumerate(rows):
            values = (row.provider, row.job_id, row.model, row.state, row.requests, row.submitted)
            for column, value in enumerate(values):
                item = table.item(position, column)
                if item is None:
                    item = QTableWidgetItem()
                    table.setItem(position, column, item)
                item.setText(value)
                item.setToolTip(row.detail)
                item.setData(Qt.ItemDataRole.UserRole, row.batch_id)
                if column == 3:  # no colour of its own unless it needs attention: the palette's text, whichever
                    item.setData(
                        Qt.ItemDataRole.ForegroundRole, QBrush(QColor(tone("error"))) if row.attention else None
                    )
            if row.batch_id in selected:
                table.selectRow(position)
        table.blockSignals(False)
        self._update_buttons()
        self.rowsChanged.emit(len(rows))

    def changeEvent(self, event) -> None:
        """The desktop switched between light and dark while the app ran: the attention colour follows."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.rows:
            self.set_rows(self.rows)

    def set_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setToolTip(text)

    def selected_ids(self) -> list[int]:
        model = self.table.selectionModel()
        if model is None:
            return []
        positions = sorted(index.row() for index in model.selectedRows())
        return [self.rows[p].batch_id for p in positions if p < len(self.rows)]

    def _chosen(self, wanted) -> list[int]:
        selected = set(self.selected_ids())
        pool = [row for row in self.rows if row.batch_id in selected] if selected else self.rows
        return [row.batch_id for row in pool if wanted(row)]

    def _update_buttons(self) -> None:
        self.collect_button.setEnabled(bool(self._chosen(lambda row: row.collectable)))
        self.cancel_button.setEnabled(bool(self.selected_ids()) and bool(self._chosen(lambda row: row.cancellable)))

    def _collect(self) -> None:
        ids = self._chosen(lambda row: row.collectable)
        if ids:
            self.collectRequested.emit(ids)

    def _cancel(self) -> None:
        ids = self._chosen(lambda row: row.cancellable) if self.selected_ids() else []
        if ids:
            self.cancelRequested.emit(ids)
