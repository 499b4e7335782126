"""A row of buttons or fields that wraps onto the next line when the page is too narrow for it (Qt's Flow Layout
example, in Python): with larger text (View → Larger text) a row laid out side by side was wider than a laptop's
window, and the whole page scrolled sideways, its left edge cut off."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QSizePolicy, QSpacerItem, QWidget


class FlowLayout(QLayout):
    """Items left to right at their size hints, wrapped like words; as tall as its width needs (height for
    width), as narrow as its widest item."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self.setSpacing(spacing)
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)
        self.invalidate()

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._lay_out(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._lay_out(rect, move=True)

    def sizeHint(self) -> QSize:
        """All on one line, as a row of them would be."""
        margins = self.contentsMargins()
        shown = [item.sizeHint() for item in self._laid_out_items()]
        width = sum(size.width() for size in shown) + self.spacing() * max(0, len(shown) - 1)
        height = max((size.height() for size in shown), default=0)
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._laid_out_items():
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _laid_out_items(self) -> list[QLayoutItem]:
        """The items given room: a hidden button takes none; a stretch (a spacer, which Qt calls empty) does."""
        return [item for item in self._items if item.widget() is None or not item.isEmpty()]

    def _lay_out(self, rect: QRect, move: bool) -> int:
        """Place the items line by line (or only measure, without `move`); return the height they take. Each item
        is as wide as its size hint, within the line; a line's room left goes to its items that expand
        sideways (their size policy), shared equally, and each item is centred in its line's height."""
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        lines: list[list[tuple[QLayoutItem, QSize]]] = [[]]
        x = area.x()
        for item in self._laid_out_items():
            size = item.sizeHint()
            size.setWidth(max(item.minimumSize().width(), min(size.width(), area.width())))
            if lines[-1] and x + size.width() > area.right() + 1:
                lines.append([])
                x = area.x()
            lines[-1].append((item, size))
            x += size.width() + self.spacing()
        y = area.y()
        for line in lines:
            if not line:
                continue
            height = max(size.height() for _item, size in line)
            if move:
                used = sum(size.width() for _item, size in line) + self.spacing() * (len(line) - 1)
                growing = [item for item, _size in line if item.expandingDirections() & Qt.Orientation.Horizontal]
                extra = max(0, area.width() - used) // len(growing) if growing else 0
                x = area.x()
                for item, size in line:
                    width = size.width() + (extra if item in growing else 0)
                    item.setGeometry(QRect(QPoint(x, y + (height - size.height()) // 2), QSize(width, size.height())))
                    x += width + self.spacing()
            y += height + self.spacing()
        return max(0, y - self.spacing() - rect.y()) + margins.bottom()


def flow_row(*widgets: QWidget | None) -> FlowLayout:
    """A FlowLayout of `widgets` in this order; None is a stretch (what follows it on its line goes to the right)."""
    row = FlowLayout()
    for widget in widgets:
        if widget is None:
            row.addItem(QSpacerItem(0, 0, QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum))
        else:
            row.addWidget(widget)
    return row


class ColumnsLayout(FlowLayout):
    """A grid whose columns follow its width: every item as wide as the widest, as many a line as fit, up to
    `most`, spread over the line. The recorder's six take buttons in rows of three (Record / Stop, Retake, Play…)
    needed 715 pixels at 200 %: the Speakers page scrolled sideways on a laptop; now two or one a row."""

    def __init__(self, most: int, parent: QWidget | None = None, spacing: int = 6):
        super().__init__(parent, spacing)
        self.most = most
        self._cell_size: QSize | None = None  # the widest and tallest item's size hint, until the layout changes

    def invalidate(self) -> None:
        self._cell_size = None  # an item's text or font changed (its widget asked for a new geometry)
        super().invalidate()

    def sizeHint(self) -> QSize:
        """`most` columns, as the grid it stands for."""
        items = self._laid_out_items()
        cell = self._cell()
        columns = max(1, min(self.most, len(items)))
        margins = self.contentsMargins()
        width = columns * cell.width() + self.spacing() * (columns - 1) + margins.left() + margins.right()
        return QSize(width, self.heightForWidth(width))

    def minimumSize(self) -> QSize:
        """One column of items as wide as the widest: no button narrower than its text."""
        margins = self.contentsMargins()
        cell = self._cell()
        return QSize(cell.width() + margins.left() + margins.right(), cell.height() + margins.top() + margins.bottom())

    def columns_for(self, width: int) -> int:
        """How many columns `width` (the layout's own, margins included) holds."""
        margins = self.contentsMargins()
        room = width - margins.left() - margins.right()
        cell = self._cell().width()
        return max(1, min(self.most, (room + self.spacing()) // max(cell + self.spacing(), 1)))

    def _cell(self) -> QSize:
        """Every item's cell: as wide as the widest and as tall as the tallest (asked once per layout change: a
        layout pass asks for it about a hundred times)."""
        if self._cell_size is None:
            size = QSize(0, 0)
            for item in self._laid_out_items():
                size = size.expandedTo(item.sizeHint())
            self._cell_size = size
        return QSize(self._cell_size)

    def _lay_out(self, rect: QRect, move: bool) -> int:
        items = self._laid_out_items()
        margins = self.contentsMargins()
        if not items:
            return margins.top() + margins.bottom()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        columns = self.columns_for(rect.width())
        width = max(1, (area.width() - self.spacing() * (columns - 1)) // columns)
        height = self._cell().height()
        y = area.y()
        for first in range(0, len(items), columns):
            line = items[first : first + columns]
            if move:
                for place, item in enumerate(line):
                    item.setGeometry(QRect(area.x() + place * (width + self.spacing()), y, width, height))
            y += height + self.spacing()
        return max(0, y - self.spacing() - rect.y()) + margins.bottom()


class WrappedHeight(QObject):
    """Holds `widget` as high as its layout needs at its width: lines that wrap (labels, a FlowLayout, a
    ColumnsLayout) need more height on a narrower widget, and a container that does not ask for the height for
    a width (a QSplitter) gave it only its one-line least. The Speakers page's recorder, 80 pixels short at
    125 % on a laptop, drew its reading-list buttons over its take buttons (at 200 % with the guided tour
    below); now the page scrolls down. Held again on each resize and each new layout (a text that changed)."""

    def __init__(self, widget: QWidget):
        super().__init__(widget)
        self.widget = widget
        widget.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.widget and event.type() in (QEvent.Type.Resize, QEvent.Type.LayoutRequest):
            self.hold()
        return False

    def hold(self) -> None:
        widget, layout = self.widget, self.widget.layout()
        if layout is None:
            return
        # the layout's own least (its minimumSizeHint, which a minimum height set here does not change) or more;
        # narrower than its least (a splitter's half dragged shut) nothing is laid out: its least alone
        least = widget.minimumSizeHint()
        wrapped = layout.minimumHeightForWidth(widget.width()) if widget.width() >= least.width() else -1
        needed = max(wrapped, least.height())  # -1: nothing wraps
        if needed != widget.minimumHeight():
            widget.setMinimumHeight(needed)
