"""A person's drag of a table's column edge, with the mouse (QTest events on the header's viewport)."""

from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest


def drag_edge(table, column: int, by: int) -> None:
    """A drag of the right edge of `column`'s header by `by` pixels, in four moves."""
    header = table.horizontalHeader()
    edge = header.sectionViewportPosition(column) + header.sectionSize(column) - 1
    y = header.height() // 2
    viewport = header.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(edge, y))
    for step in range(1, 5):
        QTest.mouseMove(viewport, QPoint(edge + by * step // 4, y))
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(edge + by, y))
