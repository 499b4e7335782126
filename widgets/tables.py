"""The app's list tables: rows of records that are read, selected whole, and never edited in place."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractItemView, QApplication, QHeaderView, QStyle, QTableView, QTableWidget

from spokenbench.widgets.bidi import follow_text_direction

SelectionMode = QAbstractItemView.SelectionMode
NARROWEST_WRAPPED = 8  # characters: a wrapped column narrower than this is a column of broken words
LONGEST_WORD = 30  # characters: a longer word (a path, a key) is broken, or elided, rather than kept whole
# where text wraps: at spaces and line breaks, and after a hyphen between letters ('gender-balanced', not '-0.58')
UNBREAKABLE = re.compile(r"[ \t\n]+|(?<=[^\W\d_]-)")
DRAGGED_WIDTHS = range(16, 4001)  # pixels: a width read back from the settings outside these is not used
SETTINGS_GROUP = "columns"  # the settings' key of a table's dragged widths: columns/<table>, JSON {title: width}
KEY_STEP_CHARACTERS = 4  # Alt+→ / Alt+← widen or narrow the current column by this many average characters
COLUMN_KEYS = {"Alt+Right": 1, "Alt+Left": -1, "Alt+Backspace": 0}  # Alt+Backspace: fitted again


class ColumnMemory:
    """The column widths a person dragged, by table and column title: a refill, a refit and (with `settings`, the
    app's QSettings) a restart keep them, as a spreadsheet or Anki's browser does. Before, a table's next fit put
    every column back (an item's tabs at each ↓ in the item list, a QC table at each refresh)."""

    def __init__(self, settings=None):
        self.settings = settings
        self.widths: dict[str, dict[str, int]] = {}

    def of(self, table: str) -> dict[str, int]:
        """The widths dragged in `table`, by column title (read from the settings the first time)."""
        if table not in self.widths:
            self.widths[table] = self._read(table)
        return self.widths[table]

    def _read(self, table: str) -> dict[str, int]:
        """Only whole widths within DRAGGED_WIDTHS under text titles: a settings file edited by hand, or by another
        version, is used as far as it makes sense and no further."""
        if self.settings is None:
            return {}
        try:
            stored = json.loads(str(self.settings.value(f"{SETTINGS_GROUP}/{table}", "{}")))
        except ValueError:
            return {}
        if not isinstance(stored, dict):
            return {}
        return {
            title: width
            for title, width in stored.items()
            if isinstance(title, str) and type(width) is int and width in DRAGGED_WIDTHS
        }

    def set(self, table: str, title: str, width: int) -> None:
        self.of(table)[title] = max(DRAGGED_WIDTHS.start, min(width, DRAGGED_WIDTHS.stop - 1))

    def forget(self, table: str, title: str) -> None:
        self.of(table).pop(title, None)

    def keep(self, table: str) -> None:
        """Into the settings, which QSettings writes to disk a moment later (a few hundred bytes, as the window's
        place and the recent projects are)."""
        if self.settings is not None:
            self.settings.setValue(f"{SETTINGS_GROUP}/{table}", json.dumps(self.of(table), sort_keys=True))


column_memory = ColumnMemory()  # the app's, bound to its settings by the main window (`MainWindow.__init__`)


class DraggedWidths(QObject):
    """What a person does to a table's column widths: a drag of a column's edge is kept in `column_memory` under
    the table's `name` (and put back by `apply` after the table's own sizing); a double-click on the edge forgets
    it, and `refit` fits the table again. Only the column whose edge the left button went down on, while it is
    down, is a person's: never a width set by code meanwhile (`by_code`, or a refresh of the table's own).
    From the keys, as a spreadsheet's Alt+→ / Alt+← (LibreOffice Calc's): the column of the current cell is made
    wider or narrower by KEY_STEP_CHARACTERS average characters, kept as a drag is; Alt+Backspace fits it again,
    as the double-click does; a bell where the column cannot be sized. Before, widths were the mouse's alone,
    and a cell cut off (…) could not be read whole from the keys."""

    def __init__(self, table: QTableView, name: str, refit: Callable[[], None]):
        super().__init__(table)
        self.table, self.name, self.refit = table, name, refit
        self.dragged_column: int | None = None  # the column whose edge the left button is down on
        self.resized_by_person = False  # that column was resized since
        self.sizing = False  # widths set by code (`by_code`): never a person's
        header = table.horizontalHeader()
        header.viewport().installEventFilter(self)
        # shortcuts, not key presses: with a screen reader, Qt hands a key press to it and delivers it again only
        # after Alt's release, which gave the menu bar the keys (Orca 43 said *View.*, and ↓ opened the Help menu);
        # a shortcut acts at once, and the late Alt is kept from the menu bar (screen_reader.AltLeftToTheShortcut)
        for keys, step in COLUMN_KEYS.items():
            shortcut = QShortcut(QKeySequence(keys), table, context=Qt.ShortcutContext.WidgetShortcut)
            shortcut.activated.connect(lambda step=step: self.resize_by_keys(step) or QApplication.beep())
        header.sectionResized.connect(self._resized)
        header.sectionHandleDoubleClicked.connect(self._fit_again)

    def titles(self) -> dict[int, str]:
        """The shown columns' titles, from the model (a QTableWidget's or any other)."""
        table, model = self.table, self.table.model()
        if model is None:
            return {}
        titles = {}
        for column in range(model.columnCount()):
            title = model.headerData(column, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole)
            if isinstance(title, str) and not table.isColumnHidden(column):
                titles[column] = title
        return titles

    def dragged(self) -> dict[int, int]:
        """The table's columns whose width a person chose: {column: width}."""
        widths = column_memory.of(self.name)
        return {column: widths[title] for column, title in self.titles().items() if title in widths}

    def apply(self) -> None:
        """Put back the dragged widths, after the table's own sizing."""
        self.set_widths(self.dragged())

    def set_widths(self, widths: dict[int, int]) -> None:
        with self.by_code():
            for column, width in widths.items():
                self.table.setColumnWidth(column, width)

    @contextlib.contextmanager
    def by_code(self):
        """Columns sized by code meanwhile (a fit, `resizeColumnsToContents`): never taken for a person's drag."""
        self.sizing = True
        try:
            yield
        finally:
            self.sizing = False

    def edge_at(self, x: int) -> int | None:
        """The column whose resizable edge is under `x` on the header (its right edge, its left one right to
        left), as QHeaderView finds the handle it resizes; None elsewhere."""
        header = self.table.horizontalHeader()
        grip = header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderGripMargin, None, header)
        right_to_left = header.isRightToLeft()
        for column in range(header.count()):
            if header.isSectionHidden(column):
                continue
            start = header.sectionViewportPosition(column)
            edge = start if right_to_left else start + header.sectionSize(column)
            if abs(x - edge) <= grip and header.sectionResizeMode(column) == QHeaderView.ResizeMode.Interactive:
                return column
        return None

    def _resized(self, column: int, _old: int, new: int) -> None:
        held = QApplication.mouseButtons() & Qt.MouseButton.LeftButton
        if self.sizing or column != self.dragged_column or not held:  # a release lost to a dialog is not held
            return
        if (title := self.titles().get(column)) is not None:
            column_memory.set(self.name, title, new)
            self.resized_by_person = True

    def _fit_again(self, column: int) -> None:
        title = self.titles().get(column)
        if title is not None:
            column_memory.forget(self.name, title)
            column_memory.keep(self.name)
        QTimer.singleShot(0, self, self.refit)  # after the header's own fit of that column to its contents

    def resize_by_keys(self, step: int) -> bool:
        """The current cell's column one step wider (1) or narrower (-1), kept as a person's width; fitted again
        (0). False where that column cannot be sized: none current, one that fills the rest (the Items page's
        Question) or sizes itself, or one already at its narrowest (or widest)."""
        table, header = self.table, self.table.horizontalHeader()
        column = table.currentIndex().column()
        title = self.titles().get(column)
        if title is None or header.sectionResizeMode(column) != QHeaderView.ResizeMode.Interactive:
            return False
        if step == 0:
            self._fit_again(column)
            return True
        change = step * KEY_STEP_CHARACTERS * table.fontMetrics().averageCharWidth()
        width = min(max(header.sectionSize(column) + change, header.minimumSectionSize()), DRAGGED_WIDTHS.stop - 1)
        if width == header.sectionSize(column):  # at its narrowest or widest already
            return False
        column_memory.set(self.name, title, width)
        column_memory.keep(self.name)
        self.refit()
        return True

    def eventFilter(self, watched, event) -> bool:
        kind = event.type()
        if kind == QEvent.Type.MouseButtonPress and event.button() == Qt.MouseButton.LeftButton:
            self.dragged_column, self.resized_by_person = self.edge_at(int(event.position().x())), False
        elif kind == QEvent.Type.MouseButtonRelease and self.dragged_column is not None:
            self.dragged_column = None
            if self.resized_by_person:
                column_memory.keep(self.name)
        return super().eventFilter(watched, event)


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
    Refitted when the table is refilled (`fit`), resized, or shown after a refill while hidden. A column whose
    edge a person dragged keeps that width (`DraggedWidths`, under `name`), and the others share the rest."""

    def __init__(self, table: QTableWidget, wrapped: Sequence[int], name: str):
        super().__init__(table)
        self.table = table
        self.wrapped = tuple(wrapped)
        self.dragged_widths = DraggedWidths(table, name, self.fit)
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
        dragged = self.dragged_widths.dragged()
        wanted = {column: width for column, width in self.wanted().items() if column not in dragged}
        shown = list(wanted)
        room = table.viewport().width()
        self.fitted_width = room
        room -= sum(dragged.values())
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
        widths.update(dragged)
        changed = any(table.columnWidth(column) != width for column, width in widths.items())
        self.dragged_widths.set_widths(widths)
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
