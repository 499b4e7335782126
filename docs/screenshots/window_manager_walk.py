"""Screenshots of the app under a real window manager (xfwm4, Xfce's) with a 40-pixel panel along the bottom of
the screen, as on a laptop, driven by keys alone:

    python docs/screenshots/window_manager_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, starts Xvfb, xfwm4 (apt-get install --no-install-recommends xfwm4), a panel that
keeps windows out of the bottom 40 pixels (a Tk dock window reserving them) and a PulseAudio null sink
(tests/real_device.py). Opens the app for the first time (no remembered geometry; maximized on a screen smaller
than 1300×860 less the panel) on a 260-clip queue (Ctrl+3, ↓, Enter): OUT/1-first-open.png; rates with 1, writes
a note (N, text, Enter) and rates the next clip with 2 once the window manager gave the keyboard back:
OUT/2-after-note.png; opens Settings (Ctrl+,): OUT/3-settings.png, closed with Esc; the Results page (Ctrl+7):
OUT/4-results.png; switches maximized (Alt+F10, xfwm4's key): OUT/5-switched.png; quits with Ctrl+Q and opens
the app again as it was left: OUT/6-reopened.png. Prints each window's frame (title bar and borders included)
against the work area (the screen less the panel)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    app_window,
    close_app,
    demo_in,
    frame_inside,
    launch_rating_session,
    stored_ratings,
    walk_arguments,
)


def report(desktop: RealDesktop, window: str, what: str) -> bool:
    frame, area = desktop.frame(window), desktop.work_area()
    fits = frame_inside(frame, area)
    state = "maximized" if "MAXIMIZED_VERT" in desktop.xprop("-id", window, "_NET_WM_STATE") else "not maximized"
    print(f"{what}: {state}, frame {frame} in work area {area}: {'inside' if fits else 'NOT INSIDE'}")
    return fits


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = out / "project"
    subprocess.run(["rm", "-rf", str(project), str(out / "config")], check=True)
    subprocess.run(["cp", "-a", str(demo_in(out)), str(project)], check=True)
    add_stress_queue(project)
    with RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop:
        figures = SessionFigures(0)
        process, heart, log = launch_rating_session(desktop, project, out, figures, None)
        if process is None:
            raise SystemExit("\n".join(figures.notes))
        try:
            window = app_window(desktop, process)
            report(desktop, window, "first open")
            desktop.screenshot(out / "1-first-open.png")
            desktop.xdotool("key", "1")
            time.sleep(1.0)
            desktop.xdotool("key", "n")
            time.sleep(1.0)
            desktop.xdotool("type", "--delay", "40", "a long pause before the answer")
            desktop.xdotool("key", "Return")
            time.sleep(1.0)
            desktop.xdotool("key", "2")  # reaches the session only if the keyboard came back to the window
            time.sleep(1.5)
            focused = desktop.xdotool("getwindowfocus", "getwindowname").stdout.strip()
            print(f"after the note: the keyboard is in {focused!r}; {stored_ratings(project)} ratings stored")
            desktop.screenshot(out / "2-after-note.png")
            desktop.xdotool("key", "ctrl+comma")
            time.sleep(2.0)
            desktop.screenshot(out / "3-settings.png")
            desktop.xdotool("key", "Escape")
            time.sleep(1.0)
            desktop.xdotool("key", "ctrl+7")
            time.sleep(6.0)  # the figures are drawn in a job process
            desktop.screenshot(out / "4-results.png")
            desktop.xdotool("key", "alt+F10")
            time.sleep(2.0)
            report(desktop, window, "Alt+F10")
            desktop.screenshot(out / "5-switched.png")
        finally:
            close_app(desktop, process, heart, log, figures)
        print(f"Ctrl+Q: exit code {figures.exit_code}")
        figures = SessionFigures(0)
        process, heart, log = launch_rating_session(desktop, project, out, figures, None, keep_settings=True)
        if process is None:
            raise SystemExit("\n".join(figures.notes))
        try:
            report(desktop, app_window(desktop, process), "reopened")
            desktop.screenshot(out / "6-reopened.png")
        finally:
            close_app(desktop, process, heart, log, figures)


if __name__ == "__main__":
    main()
