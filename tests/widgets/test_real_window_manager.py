"""The app under a real window manager on a laptop screen: xfwm4 (Xfce's) on Xvfb with a 40-pixel panel along
the bottom, PulseAudio's null sink, keys only through xdotool (tests/real_device.py). A bare X server adds no
title bar, so the walks without a window manager never saw that the first window, sized to the whole free
height of a 720- or 768-pixel screen, got a 29-pixel title bar on top and ended under the panel, its status bar
hidden; opened maximized there now, it fits. Slow (about 40 s a screen); skipped where Xvfb, PulseAudio, xdotool or xfwm4 cannot be installed."""

import time

import pytest
from real_device import (
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    app_window,
    close_app,
    frame_inside,
    launch_rating_session,
    missing_tools,
    missing_window_manager,
    stored_ratings,
)


def maximized(desktop: RealDesktop, window: str) -> bool:
    return "_NET_WM_STATE_MAXIMIZED_VERT" in desktop.xprop("-id", window, "_NET_WM_STATE")


@pytest.mark.slow
@pytest.mark.parametrize("screen", ["1280x720", "1366x768", "1024x600"])
def test_on_a_laptop_screen_with_a_panel_the_whole_window_stays_in_the_work_area(demo_copy, tmp_path, screen):
    """First open (nothing remembered) on a laptop's screen: maximized, above the panel; a note written in its
    dialog (N, text, Enter) gives the keyboard back, so the next rating key rates. Un-maximized (Alt+F10,
    xfwm4's key): the frame, title bar and borders included, inside the screen less the panel. Maximized again
    and closed with Ctrl+Q, the app opens maximized, and Alt+F10 brings back the window as it was before, not
    one filling the screen with its borders off it — at the second start and at the third, after a restored
    window was maximized by the window manager."""
    problem = missing_tools() or missing_window_manager()
    if problem:
        pytest.skip(f"a real X server, sound server and window manager are needed: {problem}")
    add_stress_queue(demo_copy)
    with RealDesktop(tmp_path / "desktop", screen=f"{screen}x24", window_manager="xfwm4", panel=40) as desktop:
        area = desktop.work_area()
        assert area[3] == int(screen.split("x")[1]) - 40, f"the panel reserved no room: {area}"
        figures = SessionFigures(0)
        process, heart, log = launch_rating_session(desktop, demo_copy, tmp_path, figures, None)
        assert process is not None, "\n".join(figures.notes)
        try:
            window = app_window(desktop, process)
            opened_maximized, opened = maximized(desktop, window), desktop.frame(window)
            desktop.xdotool("key", "1")
            time.sleep(1.0)
            desktop.xdotool("key", "n")
            time.sleep(1.0)
            desktop.xdotool("type", "--delay", "30", "hesitant start")
            desktop.xdotool("key", "Return")
            time.sleep(1.0)
            desktop.xdotool("key", "2")
            time.sleep(1.5)
            desktop.xdotool("key", "alt+F10")
            time.sleep(1.5)
            normal = None if maximized(desktop, window) else desktop.frame(window)
            desktop.xdotool("key", "alt+F10")
            time.sleep(1.5)
            maximized_again = maximized(desktop, window)
        finally:
            close_app(desktop, process, heart, log, figures)
        assert figures.exit_code == 0, f"Ctrl+Q did not end the app: {figures.notes}"
        assert opened_maximized and frame_inside(opened, area), f"first open: frame {opened} in the work area {area}"
        assert stored_ratings(demo_copy) == 2, "the rating key after the note dialog did not reach the session"
        assert normal is not None and maximized_again, "Alt+F10 did not switch between maximized and not"
        assert frame_inside(normal, area), f"un-maximized: frame {normal} not inside the work area {area}"

        for start in ("second", "third"):  # the third: as the second (a restored window) left it
            figures = SessionFigures(0)
            process, heart, log = launch_rating_session(desktop, demo_copy, tmp_path, figures, None, keep_settings=True)
            assert process is not None, "\n".join(figures.notes)
            try:
                window = app_window(desktop, process)
                reopened_maximized = maximized(desktop, window)
                desktop.xdotool("key", "alt+F10")
                time.sleep(1.5)
                restored = desktop.frame(window)
                desktop.xdotool("key", "alt+F10")
                time.sleep(1.5)
            finally:
                close_app(desktop, process, heart, log, figures)
            assert reopened_maximized, f"{start} start: the app left maximized did not open maximized"
            assert restored == normal, f"{start} start, un-maximized: frame {restored}, before maximizing {normal}"
