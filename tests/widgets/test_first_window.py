"""Where the window opens the first time: most of the screen, centred (the Xvfb walk saw 1200×760 in the corner
of a 1400×900 screen), never larger than the screen's free area."""

from PySide6.QtCore import QMargins, QRect, QSize

from spokenbench.widgets.screen import first_window_geometry, frame_fitted_geometry

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


# xfwm4's frame: 5-pixel borders and a 29-pixel title bar (left, top, right, bottom)
XFWM4_FRAME = QMargins(5, 29, 5, 5)


def test_a_window_sized_to_a_laptop_screen_is_fitted_once_its_title_bar_is_known():
    """The first window on 1280×720 with a 40-pixel panel at the bottom (free 1280×680) is 1200×680 before the
    window manager frames it: with the title bar its frame is 714 high, its status bar under the panel."""
    free = QRect(0, 0, 1280, 680)
    fitted = frame_fitted_geometry(QRect(40, 0, 1200, 680), XFWM4_FRAME, free)
    assert fitted == QRect(40, 29, 1200, 646)  # the frame stays where it was across, moved up
    assert free.contains(fitted.marginsAdded(XFWM4_FRAME))


def test_a_frame_that_fits_is_left_alone():
    assert frame_fitted_geometry(QRect(75, 74, 1260, 774), XFWM4_FRAME, QRect(0, 0, 1400, 860)) is None


def test_a_frame_off_an_edge_is_moved_in_keeping_its_size():
    """A window left half off the right edge and above a top panel: moved in, as large as it was."""
    free = QRect(0, 32, 1366, 736)
    fitted = frame_fitted_geometry(QRect(900, 10, 800, 500), XFWM4_FRAME, free)
    assert fitted.size() == QSize(800, 500) and free.contains(fitted.marginsAdded(XFWM4_FRAME))
    assert fitted.topLeft().y() == 32 + 29  # the title bar just below the panel, never off the top


def test_a_frame_larger_than_the_screen_is_made_smaller_with_its_title_bar_on_screen():
    free = QRect(0, 0, 1024, 600)
    fitted = frame_fitted_geometry(QRect(-50, -40, 1400, 900), XFWM4_FRAME, free)
    assert fitted == QRect(5, 29, 1014, 566)


def test_a_laptop_screen_opens_the_first_window_maximized_a_large_one_does_not(monkeypatch):
    import spokenbench.widgets.screen as screen

    monkeypatch.setattr(screen, "SCREENLESS_PLATFORMS", frozenset())  # these tests run on the offscreen platform
    assert screen.opens_maximized(_OnScreen(QRect(0, 0, 1280, 680)), LEAST)  # 1280×720 less a 40-pixel panel
    assert screen.opens_maximized(_OnScreen(QRect(0, 32, 1366, 736)), LEAST)  # 1366×768 less GNOME's top bar
    assert not screen.opens_maximized(_OnScreen(QRect(0, 0, 1400, 860)), LEAST)  # room for 1260×774 and a frame
    assert not screen.opens_maximized(_OnScreen(QRect(0, 0, 1920, 1040)), LEAST)
    assert not screen.opens_maximized(_OnScreen(None), LEAST)
