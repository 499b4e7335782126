"""The item list: a read-only table with a language filter and free-text search."""

from __future__ import annotations

import html

from PySide6.QtCore import QAbstractTableModel, QItemSelectionModel, QModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSplitter,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

HEADERS = ("#", "ID", "Language", "Kind", "Label", "Answer", "Question", "Options")


class ItemsTableModel(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self._rows: list[tuple] = []

    def set_rows(self, rows: list[tuple]) -> None:
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        value = self._rows[index.row()][index.column()]
        if isinstance(value, tuple):
            value = " | ".join(value)
        if role == Qt.ItemDataRole.DisplayRole:
            return value
        if role == Qt.ItemDataRole.ToolTipRole and index.column() >= 6:
            return value
        return None

    def headerData(self, section: int, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return HEADERS[section]
        return None

    def languages(self) -> list[str]:
        return sorted({row[2] for row in self._rows})


class ItemFilter(QSortFilterProxyModel):
    """Matches the search text anywhere in the row and, if chosen, one language."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._language = ""
        self._text = ""

    def set_language(self, language: str) -> None:
        self.beginFilterChange()
        self._language = language
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def set_text(self, text: str) -> None:
        self.beginFilterChange()
        self._text = text.casefold().strip()
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex) -> bool:
        row = self.sourceModel()._rows[source_row]
        if self._language and row[2] != self._language:
            return False
        return not self._text or any(self._text in str(value).casefold() for value in (*row[:7], *row[7]))


class ItemsPanel(QWidget):
    ALL_LANGUAGES = "All languages"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = ItemsTableModel(self)
        self.proxy = ItemFilter(self)
        self.proxy.setSourceModel(self.model)

        self.language_box = QComboBox()
        self.language_box.setAccessibleName("Language filter")
        self.language_box.currentTextChanged.connect(
            lambda text: self.proxy.set_language("" if text == self.ALL_LANGUAGES else text)
        )
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search questions, options, ids…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.proxy.set_text)
        self.count_label = QLabel()
        self.proxy.rowsInserted.connect(self._update_count)
        self.proxy.rowsRemoved.connect(self._update_count)
        self.proxy.modelReset.connect(self._update_count)
        self.proxy.layoutChanged.connect(self._update_count)

        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        for column in range(6):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(6, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(7, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(7, 260)

        self.details = QTextBrowser()
        self.details.setAccessibleName("Item details")
        self.details.setPlaceholderText("Select an item to see its full question and options.")
        self.table.selectionModel().currentRowChanged.connect(self._show_details)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(self.details)
        splitter.setSizes([480, 140])

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Language:"))
        bar.addWidget(self.language_box)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.count_label)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(splitter)
        self._update_count()

    def set_rows(self, rows: list[tuple]) -> None:
        """Show `rows`, keeping the language filter, the selected item and the scroll position when the list is
        refreshed under the user's eyes (another process added items); identical rows change nothing."""
        if rows == self.model._rows:
            return
        language = self.language_box.currentText()
        selected = self.selected_item_id()
        scroll = self.table.verticalScrollBar().value()
        self.model.set_rows(rows)
        languages = self.model.languages()
        if language not in languages:
            language = self.ALL_LANGUAGES
        self.language_box.blockSignals(True)
        self.language_box.clear()
        self.language_box.addItems([self.ALL_LANGUAGES, *languages])
        self.language_box.setCurrentText(language)
        self.language_box.blockSignals(False)
        self.proxy.set_language("" if language == self.ALL_LANGUAGES else language)
        if selected is not None:
            self.select_item(selected)
        self.table.verticalScrollBar().setValue(scroll)
        self._update_count()

    def selected_item_id(self) -> int | None:
        current = self.table.selectionModel().currentIndex()
        if not current.isValid():
            return None
        return self.model._rows[self.proxy.mapToSource(current).row()][0]

    def select_item(self, item_id: int) -> bool:
        for row, values in enumerate(self.model._rows):
            if values[0] == item_id:
                index = self.proxy.mapFromSource(self.model.index(row, 0))
                if index.isValid():
                    self.table.selectionModel().setCurrentIndex(
                        index,
                        QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows,
                    )
                    return True
        return False

    def _show_details(self, current: QModelIndex, previous: QModelIndex = QModelIndex()) -> None:
        if not current.isValid():
            self.details.clear()
            return
        row = self.model._rows[self.proxy.mapToSource(current).row()]
        item_id, source_id, language, kind, label, answer, question, options = row
        option_lines = "".join(
            f"<li><b>{html.escape(text)} ✓</b></li>"
            if answer and text.startswith(f"{answer}. ")
            else f"<li>{html.escape(text)}</li>"
            for text in options
        )
        self.details.setHtml(
            f"<p><b>{html.escape(source_id)}</b> · {language} · {kind} · {html.escape(label)}</p>"
            f"<p>{html.escape(question)}</p><ul>{option_lines}</ul>"
        )

    def _update_count(self, *args) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        self.count_label.setText(f"{shown} of {total} items" if shown != total else f"{total} items")
