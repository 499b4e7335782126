"""The item browser: a table filtered by language, subject, cultural label, category, rewrite status and free
text, and the selected item's detail (rewrites, clips with Play buttons, transcripts with WER, ratings,
responses).

Filtering is done in Python over precomputed keys and shown through a model that holds the visible row
indices, not a QSortFilterProxyModel: a proxy calls back into Python once per row (and per comparison when
sorting), which is what made 20,000 items stutter. The detail is read by the app (a QueryOp) when
`item_selected` fires and handed back through `show_detail`."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QItemSelectionModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableView,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from spokenbench.core.asr.normalize import error_rate_name
from spokenbench.widgets.bidi import follow_text_direction, isolated, isolated_option
from spokenbench.widgets.screen_reader import read_by_line
from spokenbench.widgets.tables import DraggedWidths, FittedColumns

HEADERS = ("#", "ID", "Language", "Kind", "Label", "Answer", "Question", "Options")
SUBJECT, CULTURAL_LABEL, CATEGORY, STATUS = 8, 9, 10, 11  # extra fields of core's item_browser_rows
FILTERS = (("language", 2, "All languages"), ("subject", SUBJECT, "All subjects"),
           ("cultural label", CULTURAL_LABEL, "All labels"), ("category", CATEGORY, "All categories"),
           ("status", STATUS, "Any status"))  # fmt: skip


NO_PLAYBACK = "Audio is off: no audio output here, so clips cannot be played (the status bar's Audio says why)."


def _field(row: tuple, column: int):
    return row[column] if column < len(row) else ""


# the item list's columns' widths (# … Answer, Options); the question (6) stretches over what they leave
ITEM_COLUMN_WIDTHS = {0: 40, 1: 90, 2: 70, 3: 60, 4: 50, 5: 55, 7: 260}


class ItemsTableModel(QAbstractTableModel):
    """All rows, and the indices of those the filters let through, in the current sort order."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._rows: list[tuple] = []
        self._haystacks: list[str] = []
        self._visible: list[int] = []
        self._criteria: dict[int, str] = {}
        self._text = ""
        self._sort: tuple[int, Qt.SortOrder] = (0, Qt.SortOrder.AscendingOrder)

    # -- data --------------------------------------------------------------------------------------
    def set_rows(self, rows: list[tuple]) -> None:
        self.beginResetModel()
        self._rows = rows
        self._haystacks = [
            "\x1f".join(str(value) for value in (*row[:7], *row[7])).casefold() for row in rows
        ]  # search text, once
        self._visible = self._filtered()
        self._sort_visible()
        self.endResetModel()

    def total_count(self) -> int:
        return len(self._rows)

    def row_at(self, view_row: int) -> tuple:
        return self._rows[self._visible[view_row]]

    def values(self, column: int, rows: list[tuple] | None = None) -> list[str]:
        """The distinct values of a column (of `rows` when given, else of the rows shown)."""
        return sorted({str(_field(row, column)) for row in (self._rows if rows is None else rows)} - {""})

    # -- filtering and sorting -------------------------------------------------------------------
    def set_filter(self, column: int, value: str) -> None:
        """Keep rows whose `column` equals `value` ('' removes the filter on that column)."""
        if value:
            self._criteria[column] = value
        else:
            self._criteria.pop(column, None)
        self._refilter()

    def set_text(self, text: str) -> None:
        self._text = text.casefold().strip()
        self._refilter()

    def _filtered(self) -> list[int]:
        indices = range(len(self._rows))
        rows, text = self._rows, self._text
        for column, value in self._criteria.items():
            indices = [i for i in indices if _field(rows[i], column) == value]
        if text:
            haystacks = self._haystacks
            indices = [i for i in indices if text in haystacks[i]]
        return list(indices)

    def _refilter(self) -> None:
        self.beginResetModel()
        self._visible = self._filtered()
        self._sort_visible()
        self.endResetModel()

    def _sort_visible(self) -> None:
        column, order = self._sort
        rows = self._rows

        def key(i: int):
            value = rows[i][column]
            return " | ".join(value) if isinstance(value, tuple) else value

        self._visible.sort(key=key, reverse=order == Qt.SortOrder.DescendingOrder)

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order)
        self._sort_visible()
        self.layoutChanged.emit()

    # -- Qt model --------------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._visible)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        value = self._rows[self._visible[index.row()]][index.column()]
        if isinstance(value, tuple):  # the options: each one's text in its own direction
            value = " | ".join(isolated_option(option) for option in value)
        if role == Qt.ItemDataRole.DisplayRole or index.column() >= 6:
            return value
        return None

    def headerData(self, section: int, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return HEADERS[section]
        return None

    def languages(self) -> list[str]:
        return self.values(2)


def condition_text(key: str | None) -> str:
    """A response's condition as words that wrap ('accent american, gender female, …') rather than its stored
    key, one unbroken JSON line; the key itself when it is not a JSON object (a project from elsewhere)."""
    try:
        condition = json.loads(key or "")
    except (TypeError, ValueError, RecursionError):
        return key or ""
    if not isinstance(condition, dict):
        return key or ""
    return ", ".join(f"{name} {value}" for name, value in condition.items())


def _centred(button: QPushButton) -> QWidget:
    """The button at its own height in the middle of its cell: a row of wrapped transcripts is several lines
    tall, and a cell's widget is stretched to the cell."""
    holder = QWidget()
    layout = QVBoxLayout(holder)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(button, 0, Qt.AlignmentFlag.AlignVCenter)
    return holder


class ItemDetail(QWidget):
    """The selected item: question and options on top, then tabs for rewrites, clips, ratings and responses."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.header = QTextEdit()
        self.header.setAccessibleName("Item details")
        read_by_line(self.header)  # ↑/↓ read the question and each option to a screen reader
        self.header.setPlaceholderText("Select an item to see its question, options, rewrites, clips and answers.")
        self.tabs = QTabWidget()
        # each table's long-text column wraps when the tab is narrow, so the columns after it stay in view
        self.rewrites = self._table(
            "item-rewrites", ("Part", "Version", "Status", "Text", "Origin", "Reviewer"), wrapped=("Text",)
        )
        self.clips = self._table(
            "item-clips",
            ("", "Part", "Voice", "Accent", "Backend", "Seconds", "WER", "Transcripts"),
            wrapped=("Transcripts",),
        )
        self.ratings = self._table("item-ratings", ("Part", "Annotator", "Rating", "Note", "When"), wrapped=("Note",))
        self.responses = self._table(
            "item-responses", ("Run", "Order", "Parsed", "Maps to", "Status", "Condition"), wrapped=("Run", "Condition")
        )
        for name, table in (
            ("Rewrites", self.rewrites),
            ("Clips", self.clips),
            ("Ratings", self.ratings),
            ("Responses", self.responses),
        ):
            self.tabs.addTab(table, name)
            table.setAccessibleName(f"{name} of the item")  # a screen reader names the table, not only its tab
        self.audio_note = QLabel()
        self.audio_note.setWordWrap(True)
        self.play_buttons: list[QPushButton] = []
        self.clip_ids: list[int] = []
        self.clips.activated.connect(lambda index: self.play_row(index.row()))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(self.header)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.tabs)
        right_layout.addWidget(self.audio_note)
        splitter.addWidget(right)
        splitter.setSizes([330, 670])
        layout.addWidget(splitter)
        self.play_buttons: list[QPushButton] = []

    @staticmethod
    def _table(name: str, headers: tuple[str, ...], wrapped: tuple[str, ...]) -> QTableWidget:
        table = QTableWidget(0, len(headers))
        table.setHorizontalHeaderLabels(headers)
        table.verticalHeader().hide()
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        table.setTabKeyNavigation(False)  # Tab leaves the table, Shift+Tab comes back to the items
        table.fitted = FittedColumns(table, wrapped=[headers.index(title) for title in wrapped], name=name)
        follow_text_direction(table)  # a rewrite, transcript or answer in Arabic or Hebrew right-to-left
        return table

    @staticmethod
    def _fill(table: QTableWidget, rows: list[tuple], fit: bool = True) -> None:
        table.setRowCount(len(rows))
        for r, values in enumerate(rows):
            for c, value in enumerate(values):
                item = QTableWidgetItem("" if value is None else str(value))
                item.setToolTip(item.text())
                table.setItem(r, c, item)
        if fit:
            table.fitted.fit()

    def clear(self) -> None:
        self.header.clear()
        for table in (self.rewrites, self.clips, self.ratings, self.responses):
            table.setRowCount(0)
        self.play_buttons = []
        self.clip_ids: list[int] = []
        self.audio_note.clear()

    def show_row(self, row: tuple) -> None:
        item_id, source_id, language, kind, label, answer, question, options = row[:8]
        option_lines = "".join(
            f"<li><b>{shown} ✓</b></li>" if answer and text.startswith(f"{answer}. ") else f"<li>{shown}</li>"
            for text in options
            for shown in [html.escape(isolated_option(text))]
        )
        facts = " · ".join(html.escape(str(fact)) for fact in (language, kind, label, _field(row, SUBJECT)) if fact)
        self.header.setHtml(  # an item without a cultural label or subject leaves no empty '· ·'
            f"<p><b>{html.escape(source_id)}</b> · {facts}</p><p>{html.escape(question)}</p><ul>{option_lines}</ul>"
        )
        for table in (self.rewrites, self.clips, self.ratings, self.responses):
            table.setRowCount(0)
        self.audio_note.setText("Loading rewrites, clips and answers…")

    def show_detail(
        self, detail: dict, play: Callable[[Path, str], str | None] | None, audio_root: Path | None
    ) -> None:
        """Fill the tabs. `play(path, what)` plays a clip and returns a message when it cannot (None: audio is
        off)."""
        self._fill(
            self.rewrites,
            [(r["part"], r["version"], r["status"], r["text"], r["origin"], r["reviewer"]) for r in detail["rewrites"]],
        )
        rows = []
        for clip in detail["clips"]:
            wer = (
                ""
                if clip["error_rate"] is None
                else f"{error_rate_name(clip['language'], clip['metric'])} {clip['error_rate']:.2f}"
            )
            heard = "\n".join(f"{t['asr']}: {isolated(t['text'])}" for t in clip["transcripts"]) or "not transcribed"
            seconds = "" if clip["duration_s"] is None else f"{clip['duration_s']:.1f}"
            rows.append(("", clip["part"], clip["voice"], clip["accent"], clip["backend"], seconds, wer, heard))
        self._fill(self.clips, rows, fit=False)  # fitted once its Play buttons are in
        self.play_buttons = []
        self.clip_ids = [clip["id"] for clip in detail["clips"]]
        for r, clip in enumerate(detail["clips"]):
            button = QPushButton("▶ Play")
            button.setAccessibleName(f"Play clip {clip['id']}")
            self.clips.item(r, 0).setData(Qt.ItemDataRole.AccessibleTextRole, f"Play clip {clip['id']}")  # the row said
            path = (
                audio_root / clip["sha256"][:2] / f"{clip['sha256']}.{clip['audio_format']}"
                if audio_root is not None and clip["sha256"] and clip["audio_format"]
                else None
            )
            button.setEnabled(path is not None and play is not None)
            if play is None:
                button.setToolTip(NO_PLAYBACK)
            elif path is None:
                button.setToolTip("This clip has no audio file (not synthesized, or its synthesis failed).")
            else:
                button.setToolTip(f"Play clip {clip['id']} ({clip['part']})")
            button.clicked.connect(lambda _=False, p=path, what=f"clip {clip['id']}": self._play(play, p, what))
            self.clips.setCellWidget(r, 0, _centred(button))
            self.play_buttons.append(button)
        self.clips.fitted.fit()  # rows as tall as their text: a line per ASR system, not one cut-off line
        self._fill(
            self.ratings,
            [
                (
                    r["part"],
                    r["annotator"],
                    r["rating"] + (" (undone)" if r["undone_at"] else ""),
                    r["note"],
                    r["created_at"],
                )
                for r in detail["ratings"]
            ],
        )
        self._fill(
            self.responses,
            [
                (
                    r["run"],
                    r["option_order"],
                    r["parsed_letter"],
                    r["mapped_option"],
                    r["parse_status"],
                    condition_text(r["condition_key"]),
                )
                for r in detail["responses"]
            ],
        )
        counts = {name: len(detail[name]) for name in ("rewrites", "clips", "ratings", "responses")}
        for index, name in enumerate(counts):
            self.tabs.setTabText(index, f"{name.capitalize()} ({counts[name]})")
        self.audio_note.setText("" if play is not None else NO_PLAYBACK)

    def play_row(self, row: int) -> None:
        """Enter (or a double-click) on a clip's row plays it, like its ▶ button."""
        if 0 <= row < len(self.play_buttons) and self.play_buttons[row].isEnabled():
            self.play_buttons[row].click()

    def focus_clip(self, clip_id: int, play: bool = True) -> bool:
        """Show one clip of the item (a click-through from elsewhere): its row selected on the Clips tab, and
        played when it can be."""
        if clip_id not in self.clip_ids:
            return False
        row = self.clip_ids.index(clip_id)
        self.tabs.setCurrentWidget(self.clips)
        self.clips.selectRow(row)
        self.clips.scrollToItem(self.clips.item(row, 1))
        if play and self.play_buttons[row].isEnabled():
            self.play_buttons[row].click()
        return True

    def _play(self, play: Callable[[Path, str], str | None] | None, path: Path | None, what: str) -> None:
        if play is None or path is None:
            self.audio_note.setText(NO_PLAYBACK)
            return
        problem = play(path, what)
        self.audio_note.setText(problem or f"Playing {what}…")

    def play_ended(self, what: str, error: str | None) -> None:
        """The play of `what` ended (the window follows it): the line that said "Playing …" (or that it waits for
        the sound output) says how, unless it moved on to something else since."""
        if what and self.audio_note.text() in (f"Playing {what}…", self._waiting_text(what)):
            self.audio_note.setText(error or f"Played {what}")

    def play_waiting(self, what: str, waiting: bool) -> None:
        """The play of `what` is held by a sound output that does not answer (True), or plays after all (False)."""
        before, after = f"Playing {what}…", self._waiting_text(what)
        if not waiting:
            before, after = after, before
        if what and self.audio_note.text() == before:
            self.audio_note.setText(after)

    @staticmethod
    def _waiting_text(what: str) -> str:
        return f"Not playing {what} yet: the sound output does not answer"


class ItemsPanel(QWidget):
    """Filters, the table and the selected item's detail. Emits `item_selected(item_id)` so the app can load the
    detail off the UI thread."""

    item_selected = Signal(int)
    ALL_LANGUAGES = "All languages"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = ItemsTableModel(self)
        self.filter_boxes: dict[str, QComboBox] = {}
        bar = QHBoxLayout()
        for name, column, everything in FILTERS:
            box = QComboBox()
            box.setAccessibleName(f"{name.capitalize()} filter")
            box.addItem(everything)
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
            box.currentIndexChanged.connect(lambda _i, b=box, c=column: self.model.set_filter(c, self._choice(b)))
            self.filter_boxes[name] = box
            bar.addWidget(box)
        self.language_box = self.filter_boxes["language"]
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search questions, options, ids…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search")  # said before its placeholder
        self.search.textChanged.connect(self.model.set_text)
        self.count_label = QLabel()
        self.model.modelReset.connect(self._update_count)
        self.model.layoutChanged.connect(self._update_count)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.count_label)

        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setTabKeyNavigation(False)
        self.table.setAccessibleName("Items")
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # no per-row measuring
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setWordWrap(False)
        follow_text_direction(self.table)  # an Arabic or Hebrew question right-to-left, elided at its end
        header = self.table.horizontalHeader()
        for column in ITEM_COLUMN_WIDTHS:
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Interactive)  # ResizeToContents reads all rows
        header.setSectionResizeMode(6, QHeaderView.ResizeMode.Stretch)
        self.dragged_widths = DraggedWidths(self.table, "items", self._fit_columns)  # a column a person widened stays
        self._fit_columns()

        self.detail = ItemDetail()
        self.details = self.detail.header
        self.table.activated.connect(lambda _index: self.open_detail())  # Enter (or a double-click) opens the item
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        self.model.modelAboutToBeReset.connect(self._remember_selection)
        self.model.modelReset.connect(self._restore_selection)
        self._selected_before_reset: int | None = None
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(self.detail)
        splitter.setSizes([400, 260])

        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(splitter)
        self._update_count()

    @staticmethod
    def _choice(box: QComboBox) -> str:
        return "" if box.currentIndex() <= 0 else box.currentText()

    def set_filter(self, name: str, value: str) -> None:
        """Choose a filter value by name ('' for all), as a user would in the box."""
        box = self.filter_boxes[name]
        box.setCurrentIndex(max(0, box.findText(value)) if value else 0)

    def set_rows(self, rows: list[tuple]) -> None:
        """Show `rows`, keeping the filters, the selected item and the scroll position when the list is refreshed
        under the user's eyes (another process added items); identical rows change nothing."""
        if rows == self.model._rows:
            return
        chosen = {name: self._choice(box) for name, box in self.filter_boxes.items()}
        scroll = self.table.verticalScrollBar().value()
        for name, column, everything in FILTERS:
            box = self.filter_boxes[name]
            values = self.model.values(column, rows)
            box.blockSignals(True)
            box.clear()
            box.addItems([everything, *values])
            box.setCurrentIndex(box.findText(chosen[name]) if chosen[name] in values else 0)
            box.blockSignals(False)
            self.model._criteria.pop(column, None)
            if chosen[name] in values:
                self.model._criteria[column] = chosen[name]
        self.model.set_rows(rows)
        self.table.verticalScrollBar().setValue(scroll)

    def selected_item_id(self) -> int | None:
        current = self.table.selectionModel().currentIndex()
        if not current.isValid():
            return None
        return self.model.row_at(current.row())[0]

    def select_item(self, item_id: int) -> bool:
        for view_row in range(self.model.rowCount()):
            if self.model.row_at(view_row)[0] == item_id:
                self.table.selectionModel().setCurrentIndex(
                    self.model.index(view_row, 0),
                    QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
                )
                return True
        return False

    def reveal_item(self, item_id: int) -> bool:
        """Select an item even when the filters hide it (they are cleared then); False if it is not listed."""
        if self.select_item(item_id):
            return True
        self.search.clear()
        for name in self.filter_boxes:
            self.set_filter(name, "")
        return self.select_item(item_id)

    def _remember_selection(self) -> None:
        self._selected_before_reset = self.selected_item_id()

    def _restore_selection(self) -> None:
        item_id, self._selected_before_reset = self._selected_before_reset, None
        if item_id is not None and not self.select_item(item_id):
            self.detail.clear()

    def _fit_columns(self) -> None:
        """The columns at their widths, but those a person dragged (`DraggedWidths`): the question stretches."""
        self.dragged_widths.set_widths({**ITEM_COLUMN_WIDTHS, **self.dragged_widths.dragged()})

    def _current_changed(self, current: QModelIndex, previous: QModelIndex = QModelIndex()) -> None:
        if not current.isValid():
            self.detail.clear()
            return
        row = self.model.row_at(current.row())
        if previous.isValid() and previous.row() < self.model.rowCount() and self.model.row_at(previous.row()) == row:
            return
        self.detail.show_row(row)
        self.item_selected.emit(row[0])

    def show_detail(self, item_id: int, detail: dict, play=None, audio_root: Path | None = None) -> None:
        """The app's QueryOp delivers the selected item's detail; ignored if the selection moved on meanwhile."""
        if item_id == self.selected_item_id():
            self.detail.show_detail(detail, play, audio_root)

    def take_focus(self) -> None:
        """Shown by the window: the keys back where they were on this page, else on the items (↑/↓ browse, Enter
        opens one)."""
        last = self.focusWidget()
        if last is not None and last.isVisible() and last.isEnabled():
            last.setFocus(Qt.FocusReason.OtherFocusReason)
            return
        self.table.setFocus(Qt.FocusReason.OtherFocusReason)  # ↓ picks the first item when none is yet

    def open_detail(self) -> None:
        """The selected item opened from the keyboard: the keys go to its detail's shown tab (↑/↓ walk its rows,
        Enter on a clip plays it, Shift+Tab comes back)."""
        table = self.detail.tabs.currentWidget()
        if self.selected_item_id() is None or table is None:
            return
        if table.currentRow() < 0 and table.rowCount() > 0:
            table.selectRow(0)
        table.setFocus(Qt.FocusReason.OtherFocusReason)

    def _update_count(self, *args) -> None:
        shown, total = self.model.rowCount(), self.model.total_count()
        self.count_label.setText(f"{shown} of {total} items" if shown != total else f"{total} items")
