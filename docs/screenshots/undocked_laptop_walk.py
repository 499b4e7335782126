"""Screenshots of a laptop undocked while the app runs on its external monitor:

    python docs/screenshots/undocked_laptop_walk.py OUT

Run as root (apt-get install xserver-xorg-core xserver-xorg-video-dummy x11-xserver-utils; Xvfb has no RandR
monitors): Xorg's dummy driver gives Qt two screens, the laptop's 1280x720 (primary) and a 1400x900 monitor to
its right (tests/real_device.TwoMonitorDesktop). The app starts on the demo with its window remembered on the
monitor; the monitor is then unplugged, the desktop shrinking to the laptop's screen (OUT/undocked.png); Ctrl+,
opens Settings over it (OUT/undocked-settings.png), Esc, Ctrl+Q; the app started again (OUT/undocked-reopened.png).
It prints the window's frame at each step and whether it lies on the laptop's screen. Keys only (xdotool gives
the window the keyboard where no window manager does).

No window manager by default: nothing moves the window then but the app. With SPOKENBENCH_WALK_WM=xfwm4 the
window never reaches the monitor: xfwm4 places windows by the dummy driver's one output, the laptop's."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import TwoMonitorDesktop, app_on, app_window, demo_in, frame_inside, walk_arguments  # noqa: E402

EXTERNAL_GEOMETRY = "1400, 60, 1250, 780"  # x, y, width, height of the window as remembered: on the monitor


def remember_window_on_the_monitor(out: Path, project: Path) -> None:
    config = out / "config" / "SpokenBench"
    config.mkdir(parents=True, exist_ok=True)
    (config / "SpokenBench Studio.conf").write_text(
        f"[projects]\nrecent={project}\n\n[window]\ngeometry={EXTERNAL_GEOMETRY}\nmaximized=false\n"
    )


def frame_line(desktop: TwoMonitorDesktop, window: str, what: str) -> str:
    frame = desktop.frame(window)
    on_laptop = frame_inside(frame, (0, 0, *desktop.laptop))
    return f"{what}: frame {frame} {'on' if on_laptop else 'NOT on'} the laptop's screen"


def main() -> None:
    out, _screen = walk_arguments(__doc__)
    project = demo_in(out)
    remember_window_on_the_monitor(out, project)
    with TwoMonitorDesktop(out / "desktop", panel=0) as desktop:
        with app_on(desktop, project, out, fresh=False) as app:
            window = app_window(desktop, app)
            time.sleep(5.0)
            print(frame_line(desktop, window, "docked"))
            started = time.monotonic()
            desktop.unplug()
            for _ in range(30):
                time.sleep(0.2)
                if frame_inside(desktop.frame(window), (0, 0, *desktop.laptop)):
                    print(f"back on the laptop's screen {time.monotonic() - started:.1f} s after the unplug")
                    break
            time.sleep(1.0)
            print(frame_line(desktop, window, "undocked"))
            desktop.screenshot(out / "undocked.png")
            desktop.xdotool("windowfocus", window)  # no window manager gives it the keyboard
            desktop.xdotool("key", "ctrl+comma")
            time.sleep(2.0)
            desktop.screenshot(out / "undocked-settings.png")
            found = desktop.xdotool("search", "--onlyvisible", "--name", "Settings").stdout.split()
            if found:
                print(frame_line(desktop, found[0], "settings dialog"))
            desktop.xdotool("key", "Escape")
            time.sleep(1.0)
            desktop.xdotool("windowfocus", window)  # nothing gives it back the keyboard either
            desktop.xdotool("key", "ctrl+q")
            app.wait(30)
        stored = (out / "config" / "SpokenBench" / "SpokenBench Studio.conf").read_text()
        print("remembered:", next(line for line in stored.splitlines() if line.startswith("geometry=")))
        with app_on(desktop, project, out, fresh=False) as app:
            window = app_window(desktop, app)
            time.sleep(5.0)
            print(frame_line(desktop, window, "reopened"))
            desktop.screenshot(out / "undocked-reopened.png")
            desktop.xdotool("windowfocus", window)
            desktop.xdotool("key", "ctrl+q")
            app.wait(30)


if __name__ == "__main__":
    main()
