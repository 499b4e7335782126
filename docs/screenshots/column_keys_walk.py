"""Screenshots of a table's column widened from the keys, on a real X server (Xvfb, no window manager) with a
PulseAudio null sink, driven by xdotool:

    python docs/screenshots/column_keys_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project and opens the app on its Rating page. Into OUT, each after
its keys: columns-before.png (Ctrl+1, → ×7: the current cell in the Items page's Options column, its text cut
off), columns-wider.png (Alt+→ ×10: the column widened, the Question column giving way) and columns-fitted.png
(Alt+Backspace: fitted again). Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, type_keys, walk_arguments, walked_session  # noqa: E402

PAGE_S = 4.0  # after Ctrl+1: the page is built and its rows read


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    with walked_session(out, screen, project, queue_keys=("Return",)) as (desktop, _process, _figures):
        time.sleep(2.0)
        type_keys(desktop, "ctrl+1")
        time.sleep(PAGE_S)
        type_keys(desktop, *["Right"] * 7)
        desktop.screenshot(out / "columns-before.png")
        type_keys(desktop, *["alt+Right"] * 10)
        time.sleep(1.0)
        desktop.screenshot(out / "columns-wider.png")
        type_keys(desktop, "alt+BackSpace")
        time.sleep(1.0)
        desktop.screenshot(out / "columns-fitted.png")
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
