"""The mouse wheel changes a combo box or spin box only when it has the keyboard focus: scrolling a form past an
unfocused one scrolls the form (Qt's default changed Prompt from Standard to Chain of thought under a wheel
meant for the page). One event filter on the application covers every such box, present and future."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QWidget

GUARDED = (QComboBox, QAbstractSpinBox)


class WheelGuard(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.Polish and isinstance(watched, GUARDED):
            if watched.focusPolicy() == Qt.FocusPolicy.WheelFocus:  # a wheel would focus it, then change it
                watched.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        elif kind == QEvent.Type.Wheel and isinstance(watched, GUARDED) and not watched.hasFocus():
            parent = watched.parentWidget()
            while parent is not None and isinstance(parent, GUARDED):
                parent = parent.parentWidget()
            if isinstance(parent, QWidget):  # the form around it scrolls instead
                QCoreApplication.sendEvent(parent, event)
            return True
        return False


def install_application_filter(kind: type[QObject], app: QApplication | None = None) -> QObject | None:
    """An event filter of class `kind` on the application, installed once (later calls return the same one)."""
    app = app or QApplication.instance()
    if app is None:
        return None
    installed = app.findChild(kind)
    if installed is None:
        installed = kind(app)
        app.installEventFilter(installed)
    return installed


def install_wheel_guard(app: QApplication | None = None) -> WheelGuard | None:
    """Install the guard on the application once (later calls return the same one)."""
    return install_application_filter(WheelGuard, app)
