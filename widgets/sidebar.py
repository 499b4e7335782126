"""The main window's left navigation: one entry per page, each with a count badge ("Rewrites · 10 to review")."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtWidgets import QListWidget, QListWidgetItem

MIN_WIDTH, MIN_ROW_HEIGHT = 210, 34  # pixels: the sizes on a 9-point desktop
# the badge the list is made wide enough for (a longer one, "Evaluate · 2 running, 1 to resume", is elided)
WIDEST_ENTRY = "Rewrites · 1000 to review"
PADDING = 40  # the item's left padding, the frame and a scroll bar's room, in pixels
ROW_PADDING = 18  # above and below the text of a row


class Sidebar(QListWidget):
    """Pages by key; `page_selected(key)` when the user picks one. Badges are plain text after the page name."""

    page_selected = Signal(str)
    page_entered = Signal(str)  # Enter on a page's entry: the keyboard goes to that page

    def __init__(self, pages: list[tuple[str, str]], parent=None):
        super().__init__(parent)
        self.setAccessibleName("Pages")
        self.moving_by_key = False  # the arrow keys walk the list: the keyboard stays here
        self._names: dict[str, str] = {}
        self._rows: dict[str, int] = {}
        for key, name in pages:
            item = QListWidgetItem(name)
            item.setToolTip(f"{name} (Ctrl+{len(self._rows) + 1})")  # the window's page keys, in this order
            self.addItem(item)
            self._names[key] = name
            self._rows[key] = self.count() - 1
        self.setStyleSheet("QListWidget { border: none; padding-top: 6px; } QListWidget::item { padding-left: 10px; }")
        self._fit_text()
        self.currentRowChanged.connect(self._row_changed)

    def _fit_text(self) -> None:
        """As wide as its longest badge needs and its rows as tall as the text, at the font now: 210 by 34 pixels
        on a 9-point desktop, and more with larger text (View → Larger text), which elided 'Rewrites · 10 to rev…'
        at a fixed width."""
        metrics = self.fontMetrics()
        self.setFixedWidth(max(MIN_WIDTH, metrics.horizontalAdvance(WIDEST_ENTRY) + PADDING))
        for row in range(self.count()):
            self.item(row).setSizeHint(QSize(0, max(MIN_ROW_HEIGHT, metrics.height() + ROW_PADDING)))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_text()

    def keys(self) -> list[str]:
        return list(self._rows)

    def select(self, key: str) -> None:
        self.setCurrentRow(self._rows[key])

    def current_key(self) -> str | None:
        row = self.currentRow()
        return next((key for key, r in self._rows.items() if r == row), None)

    def set_badge(self, key: str, badge: str | None) -> None:
        """'Rating · 24 left'; None or '' shows the name alone."""
        self.item(self._rows[key]).setText(f"{self._names[key]} · {badge}" if badge else self._names[key])

    def text_of(self, key: str) -> str:
        return self.item(self._rows[key]).text()

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.current_key() is not None:
            self.page_entered.emit(self.current_key())
            event.accept()
            return
        self.moving_by_key = True
        try:
            super().keyPressEvent(event)
        finally:
            self.moving_by_key = False

    def _row_changed(self, row: int) -> None:
        key = self.current_key()
        if key is not None:
            self.page_selected.emit(key)
