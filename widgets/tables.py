"""The app's list tables: rows of records that are read, selected whole, and never edited in place."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QAbstractItemView, QTableWidget

from spokenbench.widgets.bidi import follow_text_direction

SelectionMode = QAbstractItemView.SelectionMode


def row_table(columns: Sequence[str], selection: SelectionMode = SelectionMode.SingleSelection) -> QTableWidget:
    """A read-only table with these column headers that selects whole rows and shows no row numbers."""
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(selection)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    table.setTabKeyNavigation(False)  # rows are picked whole: Tab leaves the table for the next control
    follow_text_direction(table)  # an Arabic or Hebrew cell right-to-left
    return table
