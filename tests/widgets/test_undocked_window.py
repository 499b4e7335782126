"""A laptop undocked (its external monitor unplugged) while the window is on the monitor: where no window manager
moves it (none, or one that does not see the monitor), the window stayed where the monitor had been, out of sight
and out of reach of the keys (docs/screenshots/undocked_laptop_walk.py: a black screen). Now it comes back onto the
primary screen once the screens settle."""

from PySide6.QtCore import QRect
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from spokenbench.widgets import screen as screen_module
from spokenbench.widgets.screen import ScreenWatch, bring_back_on_screen, reachable

LAPTOP, MONITOR = QRect(0, 0, 1280, 720), QRect(1280, 0, 1400, 900)


def test_a_title_bar_on_some_screen_is_reachable_one_on_none_is_not():
    assert reachable(QRect(1400, 60, 1250, 780), [LAPTOP, MONITOR], 29)
    assert not reachable(QRect(1400, 60, 1250, 780), [LAPTOP], 29)  # the monitor gone
    assert reachable(QRect(1150, 60, 1250, 780), [LAPTOP], 29)  # 130 pixels of its title bar on the laptop
    assert not reachable(QRect(1200, 60, 1250, 780), [LAPTOP], 29)  # 80: too little to take it with the mouse
    assert not reachable(QRect(100, 730, 600, 400), [LAPTOP], 29)  # below the laptop's screen
    assert reachable(QRect(1220, 100, 60, 60), [LAPTOP], 20)  # a narrow window: all of its title bar
    assert not reachable(QRect(1250, 100, 60, 60), [LAPTOP], 20)  # half of it


def test_a_window_left_off_every_screen_is_brought_back_fitted_one_on_screen_is_left_alone(qtbot):
    window = QWidget()
    qtbot.addWidget(window)
    window.setGeometry(QRect(40, 40, 300, 200))
    window.show()
    qtbot.waitExposed(window)
    free = QGuiApplication.primaryScreen().availableGeometry()
    assert bring_back_on_screen(window) is None and window.geometry() == QRect(40, 40, 300, 200)
    window.setGeometry(QRect(free.right() + 500, 60, 300, 200))
    given = bring_back_on_screen(window)
    assert given is not None and given.size() == window.size() == QRect(0, 0, 300, 200).size()
    assert window.geometry() == given and free.contains(window.frameGeometry())
    assert free.right() - window.frameGeometry().right() < 10  # moved in from the right edge, not to the corner


def test_the_watch_brings_the_window_back_once_the_screens_change(qtbot, monkeypatch):
    monkeypatch.setattr(screen_module, "SCREENS_SETTLE_MS", 50)
    window = QWidget()
    qtbot.addWidget(window)
    fitted = []
    watch = ScreenWatch(window, fitted=fitted.append)
    window.show()
    qtbot.waitExposed(window)
    free = QGuiApplication.primaryScreen().availableGeometry()
    window.setGeometry(QRect(free.right() + 500, 60, 300, 200))  # where the unplugged monitor was
    QGuiApplication.primaryScreen().availableGeometryChanged.emit(free)  # the desktop shrank
    qtbot.waitUntil(lambda: free.contains(window.geometry()), timeout=3_000)
    assert fitted == [window.geometry()]
    window.hide()
    window.setGeometry(QRect(free.right() + 500, 60, 300, 200))
    watch.check()  # a hidden window is not moved
    assert not free.contains(window.geometry())


def test_a_window_minimized_while_its_monitor_went_is_brought_back_once_restored(qtbot, monkeypatch):
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QWindowStateChangeEvent
    from PySide6.QtWidgets import QApplication

    monkeypatch.setattr(screen_module, "SCREENS_SETTLE_MS", 50)
    window = QWidget()
    qtbot.addWidget(window)
    ScreenWatch(window)
    window.show()
    qtbot.waitExposed(window)
    free = QGuiApplication.primaryScreen().availableGeometry()
    window.setGeometry(QRect(free.right() + 500, 60, 300, 200))  # the screens changed while it was minimized
    QApplication.sendEvent(window, QWindowStateChangeEvent(Qt.WindowState.WindowMinimized))  # now restored
    qtbot.waitUntil(lambda: free.contains(window.geometry()), timeout=3_000)
