"""Sizes that fit the screen the widget is on (a laptop's 1280×720 or 1366×768 included)."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QWidget


def fitting_size(widget: QWidget, wanted: QSize, margin: int = 0) -> QSize:
    """`wanted`, made no larger than the free area of the widget's screen less `margin` pixels each way (a
    window manager's title bar); `wanted` itself when no screen is known."""
    screen = widget.screen()
    if screen is None:
        return wanted
    free = screen.availableGeometry().size()
    return wanted.boundedTo(QSize(free.width() - margin, free.height() - margin))
