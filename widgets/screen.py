"""Sizes that fit the screen the widget is on (a laptop's 1280×720 or 1366×768 included)."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QWidget


def fitting_size(widget: QWidget, wanted: QSize, margin: int = 0) -> QSize:
    """`wanted`, made no larger than the free area of the widget's screen less `margin` pixels each way (a
    window manager's title bar); `wanted` itself when no screen is known."""
    screen = widget.screen()
    if screen is None:
        return wanted
    free = screen.availableGeometry().size()
    return wanted.boundedTo(QSize(free.width() - margin, free.height() - margin))


FIRST_WINDOW_SHARE = 0.9  # of the screen's free area: a 1400×900 screen is used, not left a third empty


def first_window_geometry(widget: QWidget, least: QSize) -> QRect:
    """Where a window opens the first time (no remembered geometry): FIRST_WINDOW_SHARE of its screen's free
    area but no smaller than `least`, bounded by that area and centred in it; `least` at the origin when no
    screen is known."""
    screen = widget.screen()
    if screen is None:
        return QRect(0, 0, least.width(), least.height())
    free = screen.availableGeometry()
    share = QSize(int(free.width() * FIRST_WINDOW_SHARE), int(free.height() * FIRST_WINDOW_SHARE))
    size = share.expandedTo(least).boundedTo(free.size())
    return QRect(
        free.left() + (free.width() - size.width()) // 2,
        free.top() + (free.height() - size.height()) // 2,
        size.width(),
        size.height(),
    )
