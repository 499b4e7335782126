"""The app's list tables: rows of records that are read, selected whole, and never edited in place."""

from __future__ import annotations

import re
from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableWidget

from spokenbench.widgets.bidi import follow_text_direction

SelectionMode = QAbstractItemView.SelectionMode
NARROWEST_WRAPPED = 8  # characters: a wrapped column narrower than this is a column of broken words
LONGEST_WORD = 30  # characters: a longer word (a path, a key) is broken, or elided, rather than kept whole
# where text wraps: at spaces and line breaks, and after a hyphen between letters ('gender-balanced', not '-0.58')
UNBREAKABLE = re.compile(r"[ \t\n]+|(?<=[^\W\d_]-)")


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


class FittedColumns(QObject):
    """Keeps every column of a record table in view at the width it is given: each column as wide as its text
    and header when they fit, and when they do not, the `wrapped` columns (long text: a rewrite, transcripts, a
    consent line) share what the others leave, each in proportion to its text, and wrap it onto more lines (each
    word whole, down to a floor) — so on a laptop's screen no column is pushed off to the right behind a scroll
    bar (the Speakers list lost 'Prompts done' and 'Cloned', an item's rewrites 'Origin' and 'Reviewer').
    Refitted when the table is refilled (`fit`), resized, or shown after a refill while hidden."""

    def __init__(self, table: QTableWidget, wrapped: Sequence[int]):
        super().__init__(table)
        self.table = table
        self.wrapped = tuple(wrapped)
        self.fitted_width = -1
        header = table.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)  # widths set here; a person may drag
        table.setWordWrap(True)
        rows = table.verticalHeader()
        rows.setMinimumSectionSize(rows.defaultSectionSize())  # one-line rows as tall as in the other tables
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)  # narrower than the floors
        self.stale = False  # refilled while hidden (a tab not shown): fitted when it is shown
        self.resized = QTimer(self, singleShot=True, interval=0)  # a drag's many widths: one refit once it pauses
        self.resized.timeout.connect(lambda: self.fit(rows=False))
        table.viewport().installEventFilter(self)
        table.installEventFilter(self)

    def wanted(self) -> dict[int, int]:
        """Each shown column's width for its header and text on one line."""
        table, header = self.table, self.table.horizontalHeader()
        shown = [column for column in range(table.columnCount()) if not table.isColumnHidden(column)]
        return {c: max(header.sectionSizeHint(c), table.sizeHintForColumn(c)) for c in shown}

    def wanted_width(self) -> int:
        """The table's width with every column whole on one line: its frame and a vertical scroll bar included
        (whether or not the bar is shown yet: rows are laid out after a refill)."""
        table = self.table
        return sum(self.wanted().values()) + 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width()

    def fit(self, rows: bool = True) -> None:
        """Size the columns to the table's width; `rows`: the text changed, so the rows are measured again even
        when no column's width did (a resize measures them only when one did)."""
        table = self.table
        self.stale = not table.isVisible()
        if self.stale:  # an item's four tabs are refilled at each ↓: only the one shown is measured then
            return
        wanted = self.wanted()
        shown = list(wanted)
        room = table.viewport().width()
        self.fitted_width = room
        wrapped = [c for c in self.wrapped if c in wanted]
        overflow = sum(wanted.values()) - room
        widths = dict(wanted)
        if overflow > 0 and wrapped:
            floor = {c: min(wanted[c], self._floor(c)) for c in wrapped}
            free = max(room - sum(wanted[c] for c in shown if c not in wrapped), sum(floor.values()))
            placing = sorted(wrapped, key=wanted.get)  # the narrowest first: its text, or a share as long as it is
            for left, column in enumerate(placing):
                kept = sum(floor[c] for c in placing[left + 1 :])  # the floors of the columns still to place
                share = min(free * wanted[column] // sum(wanted[c] for c in placing[left:]), free - kept)
                widths[column] = max(min(wanted[column], share), floor[column])
                free -= widths[column]
        slack = room - sum(widths.values())
        if slack > 0 and shown:  # the header spans the table: the room left goes to its long text (or last column)
            widths[wrapped[-1] if wrapped else shown[-1]] += slack
        changed = False
        for column, width in widths.items():
            changed = changed or table.columnWidth(column) != width
            table.setColumnWidth(column, width)
        if rows or changed:
            table.resizeRowsToContents()

    def _floor(self, column: int) -> int:
        """The narrowest a wrapped column goes: its header whole, a few characters a line, and its longest word
        whole (a model's name such as 'simulated:gender-balanced' breaks at its hyphen at most, never elided)."""
        table = self.table
        metrics = table.fontMetrics()
        # the item delegate's margin on each side of a cell's text (the style's focus frame and a pixel), and 2 to spare
        margins = 2 * (table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, table) + 1) + 2
        words = (
            word
            for row in range(table.rowCount())
            for item in [table.item(row, column)]
            if item is not None
            for word in UNBREAKABLE.split(item.text())
        )
        longest = max((metrics.horizontalAdvance(word) for word in set(words)), default=0)  # words repeat
        narrowest, widest = (metrics.averageCharWidth() * count for count in (NARROWEST_WRAPPED, LONGEST_WORD))
        return max(table.horizontalHeader().sectionSizeHint(column), min(max(narrowest, longest), widest) + margins)

    def eventFilter(self, watched, event) -> bool:
        if "table" not in vars(self):  # the table's last events, as Python lets go of this object
            return False
        if watched is self.table:
            if event.type() == QEvent.Type.Show and self.stale:
                self.fit()
        elif event.type() == QEvent.Type.Resize and watched.width() != self.fitted_width:
            self.resized.start()
        return super().eventFilter(watched, event)
