"""Sizes that fit the screen the widget is on (a laptop's 1280×720 or 1366×768 included)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QMargins, QObject, QRect, QSize, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QScreen
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


FRAME_ROOM = 100  # pixels each way a window manager's title bar, borders and a panel may take


def opens_maximized(widget: QWidget, least: QSize) -> bool:
    """Whether a first window (nothing remembered) opens maximized: where its screen's free area cannot hold
    `least` with a title bar and borders around it — a laptop's 1280×720 or 1366×768 — the window would take
    nearly all of it anyway, and maximized it gets all of it (the pages fit 1280×640, the room left by a
    48-pixel taskbar and a 32-pixel title bar). Never on Qt's screenless platforms."""
    screen = widget.screen()
    if screen is None or QGuiApplication.platformName() in SCREENLESS_PLATFORMS:
        return False
    free = screen.availableGeometry().size()
    return free.width() < least.width() + FRAME_ROOM or free.height() < least.height() + FRAME_ROOM


def frame_fitted_geometry(inner: QRect, margins: QMargins, free: QRect) -> QRect | None:
    """The window geometry (inside its frame) that keeps the whole frame — `inner` with the window manager's
    title bar and borders, `margins` — within `free`: as large as before where that fits, smaller where it does
    not, moved in from the edges; None when the frame already fits."""
    frame = inner.marginsAdded(margins)
    if free.contains(frame):
        return None
    across, down = margins.left() + margins.right(), margins.top() + margins.bottom()
    width = max(min(inner.width(), free.width() - across), 1)
    height = max(min(inner.height(), free.height() - down), 1)
    left = max(min(frame.left(), free.right() + 1 - (width + across)), free.left())
    top = max(min(frame.top(), free.bottom() + 1 - (height + down)), free.top())  # the title bar never off the top
    return QRect(left + margins.left(), top + margins.top(), width, height)


FRAME_WAIT_MS, FRAME_POLLS = 100, 30  # a window manager frames a new window within a few hundred ms
SCREENLESS_PLATFORMS = frozenset({"offscreen", "minimal"})


def keep_frame_on_screen(window: QWidget, fitted: Callable[[QRect], None] | None = None) -> None:
    """Once the window manager has framed the shown `window` (its title bar is known only then, on X11 from
    _NET_FRAME_EXTENTS), fit the frame into the screen's free area: a window sized to a 720-pixel laptop screen
    before it had a title bar otherwise ends below the screen's edge or under its panel, its status bar hidden.
    Nothing for a maximized or full-screen window (the window manager fits those), nor where no window manager
    adds a frame (polls for FRAME_POLLS × FRAME_WAIT_MS, then stops), nor on Qt's screenless platforms, whose
    made-up 800×800 screen the tests' windows are larger than on purpose. `fitted` is told the geometry given."""
    if QGuiApplication.platformName() in SCREENLESS_PLATFORMS:
        return
    timer = QTimer(window)
    timer.setInterval(FRAME_WAIT_MS)
    polls = [0]

    def poll() -> None:
        polls[0] += 1
        handle, screen = window.windowHandle(), window.screen()
        framed = handle is not None and not handle.frameMargins().isNull()
        if not framed and polls[0] < FRAME_POLLS:
            return
        timer.stop()
        timer.deleteLater()
        if not framed or screen is None or window.windowState() & (Qt.WindowMaximized | Qt.WindowFullScreen):
            return
        geometry = frame_fitted_geometry(window.geometry(), handle.frameMargins(), screen.availableGeometry())
        if geometry is not None:
            window.setGeometry(geometry)
            if fitted is not None:
                fitted(geometry)

    timer.timeout.connect(poll)
    timer.start()


REACHABLE_PIXELS = 100  # of a title bar's width on some screen: enough to take the window with the mouse
SCREENS_SETTLE_MS = 500  # a monitor unplugged: its screen goes, then the desktop shrinks; look once both are done


def reachable(frame: QRect, free_areas: list[QRect], title_height: int) -> bool:
    """Whether some screen's free area shows enough of the frame's title bar to take the window with the mouse
    (REACHABLE_PIXELS of its width, or all of a narrower one)."""
    title = QRect(frame.left(), frame.top(), frame.width(), max(title_height, 1))
    needed = min(REACHABLE_PIXELS, frame.width())
    return any(area.intersected(title).width() >= needed for area in free_areas)


def bring_back_on_screen(window: QWidget) -> QRect | None:
    """Move a window whose title bar no screen shows any more onto the primary screen, fitted into its free area
    (a maximized one stays maximized there); the geometry given, or None when it was reachable."""
    screens, primary = QGuiApplication.screens(), QGuiApplication.primaryScreen()
    handle = window.windowHandle()
    if primary is None or handle is None:
        return None
    margins = handle.frameMargins()
    if reachable(window.geometry().marginsAdded(margins), [s.availableGeometry() for s in screens], margins.top()):
        return None
    free = primary.availableGeometry()
    geometry = frame_fitted_geometry(window.geometry(), margins, free) or window.geometry()
    enlarged = window.windowState() & (Qt.WindowState.WindowMaximized | Qt.WindowState.WindowFullScreen)
    if enlarged:
        window.setWindowState(window.windowState() & ~enlarged)
    handle.setScreen(primary)
    window.setGeometry(geometry)
    if enlarged:
        window.setWindowState(window.windowState() | enlarged)
    return geometry


class ScreenWatch(QObject):
    """Brings `window` back onto a screen when the screens change and leave it on none: a laptop undocked or its
    monitor unplugged while the app runs on the monitor, a resolution lowered. Window managers differ in whether
    they move such a window themselves; without one (or with xfwm4 where it does not see the monitor) it stayed
    where the monitor had been, out of sight and out of reach of the keys. `fitted` is told the geometry given."""

    def __init__(self, window: QWidget, fitted: Callable[[QRect], None] | None = None):
        super().__init__(window)
        self.window, self.fitted = window, fitted
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(SCREENS_SETTLE_MS)
        self.timer.timeout.connect(self.check)
        application = QGuiApplication.instance()
        application.screenAdded.connect(self.watch)
        application.screenRemoved.connect(self.timer.start)
        application.primaryScreenChanged.connect(self.timer.start)
        for screen in QGuiApplication.screens():
            screen.availableGeometryChanged.connect(self.timer.start)
        window.installEventFilter(self)  # a window minimized while the monitor went: looked at once restored

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if (
            event.type() == QEvent.Type.WindowStateChange
            and event.oldState() & Qt.WindowState.WindowMinimized
            and not self.window.isMinimized()
        ):
            self.timer.start()
        return False

    def watch(self, screen: QScreen) -> None:
        """A screen added: its free area watched too (the primary screen may change with it)."""
        screen.availableGeometryChanged.connect(self.timer.start)
        self.timer.start()

    def check(self) -> None:
        if not self.window.isVisible() or self.window.isMinimized():
            return
        geometry = bring_back_on_screen(self.window)
        if geometry is not None and self.fitted is not None:
            self.fitted(geometry)
