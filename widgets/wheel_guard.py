"""The mouse wheel changes a combo box or spin box only when it has the keyboard focus: scrolling a form past an
unfocused one scrolls the form (Qt's default changed Prompt from Standard to Chain of thought under a wheel
meant for the page). One event filter on the application covers every such box, present and future.

Also the app's one filter on the application (`ApplicationFilters`), through which this guard and the screen
reader's handlers (widgets/screen_reader.py) see the events they watch."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QComboBox, QWidget

GUARDED = (QComboBox, QAbstractSpinBox)


class ApplicationFilters(QObject):
    """The app's one event filter on the application: each event goes only to the handlers that watch its type
    (their `events`). Every event of the application passes through it, a Python call from Qt each: one filter
    for all the handlers costs one call, where a filter each cost one call per handler
    (tests/benchmarks/bench_event_filters.py)."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.by_type: dict[QEvent.Type, list[QObject]] = {}

    def add(self, handler: QObject) -> None:
        for kind in handler.events:
            self.by_type.setdefault(kind, []).append(handler)

    def remove(self, handler: QObject) -> None:
        for handlers in self.by_type.values():
            if handler in handlers:
                handlers.remove(handler)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        handlers = self.by_type.get(event.type())
        return bool(handlers) and any(handler.eventFilter(watched, event) for handler in handlers)


class WheelGuard(QObject):
    events = (QEvent.Type.Polish, QEvent.Type.Wheel)

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
    """A handler of class `kind` for the events of its `events` on the application, installed once in the app's
    one filter (later calls return the same one)."""
    app = app or QApplication.instance()
    if app is None:
        return None
    filters = app.findChild(ApplicationFilters)
    if filters is None:
        filters = ApplicationFilters(app)
        app.installEventFilter(filters)
    installed = filters.findChild(kind)
    if installed is None:
        installed = kind(filters)
        filters.add(installed)
    return installed


def uninstall_application_filter(handler: QObject) -> None:
    """Take a handler `install_application_filter` installed out again (tests)."""
    filters = handler.parent()
    if isinstance(filters, ApplicationFilters):
        filters.remove(handler)
    handler.setParent(None)


def install_wheel_guard(app: QApplication | None = None) -> WheelGuard | None:
    """Install the guard on the application once (later calls return the same one)."""
    return install_application_filter(WheelGuard, app)
