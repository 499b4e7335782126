"""Where the window opens the first time: most of the screen, centred (the Xvfb walk saw 1200×760 in the corner
of a 1400×900 screen), never larger than the screen's free area."""

from PySide6.QtCore import QRect, QSize

from spokenbench.widgets.screen import first_window_geometry

LEAST = QSize(1200, 760)


class _Screen:
    def __init__(self, free: QRect):
        self.free = free

    def availableGeometry(self) -> QRect:  # noqa: N802 - QScreen's name
        return self.free


class _OnScreen:
    """A widget on a screen with this free area (a window manager's panels taken off)."""

    def __init__(self, free: QRect | None):
        self._screen = _Screen(free) if free is not None else None

    def screen(self):
        return self._screen


def test_a_large_screen_gets_most_of_it_centred():
    assert first_window_geometry(_OnScreen(QRect(0, 0, 1400, 900)), LEAST) == QRect(70, 45, 1260, 810)
    assert first_window_geometry(_OnScreen(QRect(0, 0, 3840, 2160)), LEAST) == QRect(192, 108, 3456, 1944)


def test_a_laptop_screen_bounds_it_and_a_panel_moves_it():
    assert first_window_geometry(_OnScreen(QRect(0, 0, 1280, 720)), LEAST) == QRect(40, 0, 1200, 720)
    assert first_window_geometry(_OnScreen(QRect(0, 32, 1366, 736)), LEAST) == QRect(68, 32, 1229, 736)


def test_no_screen_known_gives_the_least_size():
    assert first_window_geometry(_OnScreen(None), LEAST) == QRect(0, 0, 1200, 760)


def test_the_window_opens_inside_its_screen(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from spokenbench.app.main_window import MainWindow

    window = MainWindow(
        audio_message="Audio is off in tests", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    )
    qtbot.addWidget(window)
    free = window.screen().availableGeometry()
    assert free.contains(window.geometry()) and window.geometry() == first_window_geometry(window, LEAST)
