"""Screenshots of the app on a dark desktop, on a real X server with a PulseAudio null sink, driven by keys alone
(tests/real_device.py):

    python docs/screenshots/dark_mode_walk.py OUT [--screen 1280x720]

The desktop is GNOME's dark mode as Qt sees it: Qt's gtk3 platform theme with GTK_THEME=Adwaita:dark hands the
app a dark palette (needs GTK 3: apt-get install libgtk-3-0; without it Qt keeps its light palette, and the walk
stops). Builds the demo into OUT/demo, copies it to OUT/project, opens the Rating page on the demo's queue
demo-qc (Ctrl+3, ↓, Enter), then takes OUT/dark-rewrites.png on the Rewrites review (Ctrl+2, then K back to an
English part whose rewrite differs), OUT/dark-results.png (Ctrl+7) and OUT/dark-evaluate.png (Ctrl+6). Needs
Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import ctypes.util
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, walk_arguments, walked_session  # noqa: E402

ENGLISH_PART_BACK = 9  # K presses from the first part waiting (demo/001 ko) back to demo/001 en option_B


def main() -> None:
    out, screen = walk_arguments(__doc__)
    if not ctypes.util.find_library("gtk-3"):
        raise SystemExit("GTK 3 is not installed (apt-get install libgtk-3-0): Qt would show its light palette")
    os.environ.update(QT_QPA_PLATFORMTHEME="gtk3", GTK_THEME="Adwaita:dark")  # passed on to the app
    with walked_session(out, screen, demo_copy_in(out)) as (desktop, _process, _figures):
        desktop.xdotool("key", "1")  # one clip rated: the session's tally
        time.sleep(1.0)
        desktop.xdotool("key", "ctrl+2")
        time.sleep(2.0)
        for _ in range(ENGLISH_PART_BACK):
            desktop.xdotool("key", "k")
            time.sleep(0.2)
        time.sleep(1.0)
        desktop.screenshot(out / "dark-rewrites.png")
        desktop.xdotool("key", "ctrl+7")
        time.sleep(6.0)  # the panels are computed off the UI thread
        desktop.screenshot(out / "dark-results.png")
        desktop.xdotool("key", "ctrl+6")
        time.sleep(2.0)
        desktop.screenshot(out / "dark-evaluate.png")
    for name in ("dark-rewrites", "dark-results", "dark-evaluate"):
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
