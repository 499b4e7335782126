"""Keyboard aids for the whole window (issue 22): a focus ring drawn around whichever widget has the keyboard, so
Tab and Shift+Tab can be followed on every style, and Enter pressing the focused button outside dialogs (inside a
dialog Qt already does). Both follow `QApplication.focusChanged`: no application-wide event filter, so no Python
call for every event the UI thread handles."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QObject, QRect, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QAbstractButton, QApplication, QDialog, QFocusFrame, QWidget

from spokenbench.widgets.tones import tone

RING_WIDTH = 2  # pixels, drawn in the frame's margin just outside the widget
ENTER_KEYS = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


class FocusRing(QFocusFrame):
    """A coloured frame just outside the focused widget; clicks pass through it (QFocusFrame follows the widget's
    place, size and visibility, and sits in its parent so a scroll area clips it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("focusRing")

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(tone("focus")), RING_WIDTH))  # blue: stands out on the tour's orange too
        inset = RING_WIDTH / 2
        shown = self.rect()
        parent = self.parentWidget()
        if parent is not None:  # a widget flush with its parent's edge: the ring drawn just inside that edge
            shown = shown.intersected(QRect(-self.pos(), parent.size()))
        painter.drawRoundedRect(QRectF(shown).adjusted(inset, inset, -inset, -inset), 3, 3)


class KeyboardAids(QObject):
    """Installed once per application (`install`): the focus ring and Enter on buttons."""

    def __init__(self, app: QApplication):
        super().__init__(app)
        self.ring = FocusRing()
        self._button: QAbstractButton | None = None
        app.focusChanged.connect(self._focus_changed)

    def _focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        if not shiboken6.isValid(self.ring):  # it sat in a widget that was deleted since
            self.ring = FocusRing()
        ringed = new if new is not None and not new.isWindow() and new.focusPolicy() != Qt.FocusPolicy.NoFocus else None
        self.ring.setWidget(ringed)
        self.ring.setVisible(self.ring.widget() is not None)  # never a frame of its own without a widget
        if self._button is not None:
            if shiboken6.isValid(self._button):  # not deleted meanwhile
                self._button.removeEventFilter(self)
        self._button = new if isinstance(new, QAbstractButton) and not isinstance(new.window(), QDialog) else None
        if self._button is not None:
            self._button.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if (
            watched is self._button
            and event.type() == QEvent.Type.KeyPress
            and event.key() in ENTER_KEYS
            and not event.isAutoRepeat()
            and watched.isEnabled()
        ):
            watched.click()
            return True
        return False


def install(app: QApplication) -> KeyboardAids:
    """The application's keyboard aids, created on first call."""
    aids = app.findChild(KeyboardAids)
    return aids if aids is not None else KeyboardAids(app)
