"""The keyboard back to the window a dialog was over, when the dialog closes.

Without a window manager (a kiosk session, a bare X server) nothing does it: X gives the focus to the root window,
and every key after goes nowhere. Seen on Xvfb: Esc from the quit's dialog, then Ctrl+Q, left the app open; OK on a
*Not opening …* box, then Ctrl+Q, likewise (20 s, then killed). The window is activated as the dialog goes, not a
moment later: a key pressed 0.1 s after a dialog closed by itself was lost when this waited 150 ms to see whether a
window manager had done it. With a window manager that is what it does anyway. A dialog that closes while another
application has the focus gives nothing back: that would steal the keys from it."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QGuiApplication, QWindow
from PySide6.QtWidgets import QWidget


class KeysBack(QObject):
    """Watches the dialogs over `window` (its own, its pages', and dialogs over those) as each takes the focus. The
    keys go to the nearest window still shown below the one that closed, or to a window-modal dialog still open over
    `window` beside it, which blocks the windows below it."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self.window = window
        self.watched: set[int] = set()  # ids of the dialog windows whose hiding is watched
        QGuiApplication.instance().focusWindowChanged.connect(self._focus_moved)

    def _focus_moved(self, focused: QWindow | None) -> None:
        if focused is None or id(focused) in self.watched or self._below(focused) is None:
            return
        self.watched.add(id(focused))
        focused.visibleChanged.connect(lambda shown, dialog=focused: self._dialog_shown(dialog, shown))
        focused.destroyed.connect(lambda _object=None, key=id(focused): self.watched.discard(key))

    def _below(self, dialog: QWindow) -> QWindow | None:
        """The nearest window still shown below `dialog`, if the window it is over is this one; else None."""
        if not shiboken6.isValid(self.window):
            return None
        below = dialog.transientParent()
        while below is not None and not below.isVisible():
            below = below.transientParent()
        top = below
        while top is not None and top.transientParent() is not None:
            top = top.transientParent()
        return below if top is not None and top is self.window.windowHandle() else None

    def _dialog_shown(self, dialog: QWindow, shown: bool) -> None:
        if shown or QGuiApplication.focusWindow() is not dialog:  # not closing, or closing without the keys
            return
        below = self._below(dialog)
        if below is None:
            return
        modal = [  # a window-modal dialog still open over this window blocks the one below: it takes the keys
            window
            for window in QGuiApplication.topLevelWindows()
            if window is not dialog
            and window.isVisible()
            and window.modality() != Qt.WindowModality.NonModal
            and self._below(window) is not None
        ]
        chosen = QGuiApplication.modalWindow()
        if chosen not in modal:
            chosen = modal[-1] if modal else below
        chosen.requestActivate()
