"""The QC dashboard's views: one tab per table (the paper's Tables 2, 3 and 9 in their published layouts,
annotator agreement, the clips annotators disagree on), each with its explanation, an empty state that says what
is missing, and CSV / LaTeX export buttons. The views only draw: the page reads the data (a QueryOp) and writes
the exports (off the UI thread); a disagreement row activated asks for its clip through `clip_requested`."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QAccessible, QAccessibleEvent, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.metrics.table_formats import format_cell
from spokenbench.widgets.bidi import follow_text_direction
from spokenbench.widgets.flow_layout import FlowLayout
from spokenbench.widgets.tables import DraggedWidths
from spokenbench.widgets.text_size import set_font_share
from spokenbench.widgets.tones import set_toned_sheet

EXPORT_FORMATS = (("csv", "CSV…"), ("tex", "LaTeX…"))
LONG_CELL = 30  # characters: a longer cell gets its text as a tooltip
MIN_COLUMN = 70  # pixels: columns are narrowed to fit the page down to this


@dataclass(frozen=True)
class QcTable:
    """One table as shown and exported: `rows` hold the columns in `columns` (the published layout)."""

    key: str  # also the export's default file name
    tab: str
    caption: str
    columns: list[str]
    rows: list[dict] = field(default_factory=list)
    empty: str | None = None  # why there are no rows (what is missing), shown instead of the table
    clip_column: str | None = None  # rows carry a clip id here: activating one requests that clip


class QcTableSection(QWidget):
    """A table with its caption, empty state and export buttons."""

    export_requested = Signal(str, str)  # table key, format ('csv' or 'tex')
    row_activated = Signal(int)  # the row's clip id (tables with a clip column)

    def __init__(self, key: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.key = key
        self.table_data: QcTable | None = None
        self._natural: list[int] = []  # each column's width before fitting the page
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.empty_label = QLabel()
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.empty_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        set_toned_sheet(self.empty_label, "QLabel { color: $muted; padding: 12px; }")
        self.table = QTableWidget()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.setTabKeyNavigation(False)  # Tab leaves for the export buttons
        follow_text_direction(self.table)  # a disagreement's Arabic or Hebrew text right-to-left
        self.table.itemActivated.connect(self._activated)
        self.table.viewport().installEventFilter(self)
        self.dragged_widths = DraggedWidths(
            self.table, f"qc-{key}", self.fit_columns
        )  # a column a person widened stays
        self.export_buttons: dict[str, QPushButton] = {}
        buttons = QHBoxLayout()
        self.count_label = QLabel()
        buttons.addWidget(self.count_label, 1)
        for fmt, text in EXPORT_FORMATS:
            button = QPushButton(f"Export {text}")
            button.clicked.connect(lambda _checked=False, fmt=fmt: self.export_requested.emit(self.key, fmt))
            self.export_buttons[fmt] = button
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.caption)
        layout.addWidget(self.empty_label, 1)
        layout.addWidget(self.table, 1)
        layout.addLayout(buttons)

    def set_table(self, data: QcTable) -> None:
        self.table_data = data
        self.caption.setText(data.caption)
        has_rows = bool(data.rows)
        self.empty_label.setText(data.empty or "Nothing to show yet.")
        self.empty_label.setVisible(not has_rows)
        self.table.setVisible(has_rows)
        for button in self.export_buttons.values():
            button.setEnabled(has_rows)
        self.count_label.setText(f"{len(data.rows)} row(s)" if has_rows else "")
        self.table.clear()
        self.table.setColumnCount(len(data.columns))
        self.table.setHorizontalHeaderLabels([column.replace("_", " ") for column in data.columns])
        self.table.setRowCount(len(data.rows))
        for row_index, row in enumerate(data.rows):
            for column_index, column in enumerate(data.columns):
                value = row.get(column)
                item = QTableWidgetItem(format_cell(value, 2 if column.startswith("pct") else 3))
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if column_index == 0 and data.clip_column:
                    item.setData(Qt.ItemDataRole.UserRole, row.get(data.clip_column))
                self.table.setItem(row_index, column_index, item)
                if len(item.text()) > LONG_CELL:
                    item.setToolTip(item.text())  # a cell cut to fit the page says all of it on hover
        with self.dragged_widths.by_code():
            self.table.resizeColumnsToContents()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # room to breathe, but no column stretched across the page
        self._natural = [min(max(header.sectionSize(c) + 24, 90), 420) for c in range(len(data.columns))]
        self.fit_columns()

    def fit_columns(self) -> None:
        """Each column at its natural width when they all fit; else the widest ones narrowed (their text elided,
        whole in the tooltip and wrapped in taller rows) until every column — the notes last of all — is on screen.
        A column a person dragged keeps its width, and the others share the rest."""
        dragged = self.dragged_widths.dragged()
        widths = [0 if column in dragged else width for column, width in enumerate(self._natural)]
        room = self.table.viewport().width() - sum(dragged.values())
        if room <= 0:  # the person's columns take the whole width (Alt+→ held): the others as narrow as they go,
            widths = [min(width, MIN_COLUMN) for width in widths]  # not back at their natural widths
        while room > 0 and sum(widths) > room and max(widths, default=0) > MIN_COLUMN:
            widest = widths.index(max(widths))
            widths[widest] = max(MIN_COLUMN, widths[widest] - max(8, (sum(widths) - room) // 4))
        self.dragged_widths.set_widths({**dict(enumerate(widths)), **dragged})
        self.table.resizeRowsToContents()  # a narrowed column's text wraps onto more lines instead of being cut

    def eventFilter(self, watched, event) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self.fit_columns()  # the room the table has now (a tab shown, the window resized)
        return False

    def _activated(self, item: QTableWidgetItem | None) -> None:
        if item is None or self.table_data is None or not self.table_data.clip_column:
            return
        clip_id = self.table.item(item.row(), 0).data(Qt.ItemDataRole.UserRole)
        if clip_id is not None:
            self.row_activated.emit(int(clip_id))


class QcTablesView(QWidget):
    """The dashboard body: a summary line and a tab per table."""

    export_requested = Signal(str, str)
    clip_requested = Signal(int)
    refresh_requested = Signal()
    paper_layout_toggled = Signal(bool)  # Table 2 as the paper prints it (four intervals) or with its extra row
    exclude_flagged_toggled = Signal(bool)
    thresholds_changed = Signal(float, float)  # the coordinator's bars: control accuracy, agreement (0–1)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        title = QLabel("Quality control")
        set_font_share(title, 1.65, QFont.Weight.DemiBold)
        self.summary = QLabel("No project open")
        self.summary.setWordWrap(True)
        self.status = QLabel()
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh_requested)
        self.paper_layout = QCheckBox("&Paper layout")
        self.paper_layout.setToolTip(
            "Table 2 exactly as the paper prints it: the four WER intervals per language, a clip whose every "
            "transcript looks like an ASR hallucination counted where its WER puts it (off: such clips get a row of "
            "their own)"
        )
        self.paper_layout.toggled.connect(self.paper_layout_toggled)
        self.exclude_flagged = QCheckBox("Table 3 without flagged annotators")
        self.exclude_flagged.setToolTip("Recompute Table 3, agreement and disagreements without the annotators the "
                                        "Annotators tab flags; the summary says how many ratings that drops.")  # fmt: skip
        self.exclude_flagged.toggled.connect(self.exclude_flagged_toggled)
        self.accuracy_bar = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=0.8)
        self.agreement_bar = QDoubleSpinBox(minimum=0.0, maximum=1.0, singleStep=0.05, decimals=2, value=0.6)
        for box in (self.accuracy_bar, self.agreement_bar):
            box.setKeyboardTracking(False)  # one re-read per value, not per key typed
            box.valueChanged.connect(
                lambda _value: self.thresholds_changed.emit(self.accuracy_bar.value(), self.agreement_bar.value())
            )
        top = QHBoxLayout()
        top.addWidget(title)
        top.addSpacing(16)
        top.addWidget(self.summary, 1)
        top.addWidget(self.status)
        top.addWidget(self.paper_layout)
        top.addWidget(self.refresh_button)
        bars = FlowLayout(spacing=12)  # wrapped with larger text; each label stays with its box
        for text, box in (
            ("Flag annotators below control accuracy", self.accuracy_bar),
            ("or agreement", self.agreement_bar),
        ):
            label = QLabel(text)
            label.setBuddy(box)  # a screen reader says the label with the box, as in a form
            pair = QWidget()
            pair_layout = QHBoxLayout(pair)
            pair_layout.setContentsMargins(0, 0, 0, 0)
            pair_layout.addWidget(label)
            pair_layout.addWidget(box)
            bars.addWidget(pair)
        bars.addWidget(self.exclude_flagged)
        self.tabs = QTabWidget()
        self.sections: dict[str, QcTableSection] = {}
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(bars)
        layout.addWidget(self.tabs, 1)

    def set_loading(self, loading: bool) -> None:
        self.status.setText("Reading…" if loading else "")

    def set_summary(self, text: str) -> None:
        self.summary.setText(text)

    def set_tables(self, tables: list[QcTable]) -> None:
        """Show these tables (a tab each, in this order); tabs are kept across refreshes, so is the current one.
        The first tab added reports itself selected, and Orca 43 moves to whatever tab such a report names: after
        Ctrl+4 it said *Table 2 · WER intervals page tab* while the keys were on Paper layout. The widget with the
        keys is reported focused again after the first tabs, so the screen reader ends where the keys are."""
        first = not self.tabs.count()
        for data in tables:
            section = self.sections.get(data.key)
            if section is None:
                section = QcTableSection(data.key)
                section.export_requested.connect(self.export_requested)
                section.row_activated.connect(self.clip_requested)
                self.sections[data.key] = section
                self.tabs.addTab(section, data.tab)
            section.set_table(data)
            section.table.setAccessibleName(data.tab)  # a screen reader names the table, not only its tab
            index = self.tabs.indexOf(section)
            self.tabs.setTabText(index, data.tab + (f" ({len(data.rows)})" if data.clip_column and data.rows else ""))
        focused = QApplication.focusWidget()
        if first and self.tabs.count() and focused is not None and self.isVisible():
            QAccessible.updateAccessibility(QAccessibleEvent(focused, QAccessible.Event.Focus))

    def table(self, key: str) -> QcTable | None:
        section = self.sections.get(key)
        return section.table_data if section else None
