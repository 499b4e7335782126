"""Screenshots of the guided tour beside the pages and below them, on a real X server with a PulseAudio null sink,
driven by keys alone (tests/real_device.py):

    python docs/screenshots/tour_layout_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project and opens the Rating page on the demo's queue demo-qc
(Ctrl+3, ↓, Enter). Opens the guided tour (F1) and Evaluate (Ctrl+6): OUT/tour-100-evaluate.png, the form and
the runs beside the tour at the normal size. Ctrl+= four times (175 %), then Rewrites (Ctrl+2), where the tour's
dock goes below the page: OUT/tour-175-rewrites.png; Results (Ctrl+7): OUT/tour-175-results.png; Ctrl+= (200 %)
and Speakers (Ctrl+5): OUT/tour-200-speakers.png; Ctrl+0 (normal) and Results: OUT/tour-100-results.png, the
tour beside the page again. Esc closes the tour, Ctrl+Q the app. Prints the ratings stored and the shots.
Set SPOKENBENCH_WALK_WM=xfwm4 for a window manager. Needs Xvfb, PulseAudio and xdotool."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, stored_ratings, walk_arguments, walked_session  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    shots = []
    with walked_session(out, screen, project) as (desktop, _process, _figures):

        def shot(name: str, wait: float) -> None:
            time.sleep(wait)
            shots.append(out / f"{name}.png")
            desktop.screenshot(shots[-1])

        desktop.xdotool("key", "F1")  # the tour, on the Results page
        time.sleep(6.0)  # the Results page computes its panels first
        desktop.xdotool("key", "ctrl+6")
        shot("tour-100-evaluate", 3.0)
        for _ in range(4):
            desktop.xdotool("key", "ctrl+equal")
            time.sleep(0.8)
        desktop.xdotool("key", "ctrl+2")
        shot("tour-175-rewrites", 3.0)
        desktop.xdotool("key", "ctrl+7")
        shot("tour-175-results", 4.0)
        desktop.xdotool("key", "ctrl+equal")
        time.sleep(0.8)
        desktop.xdotool("key", "ctrl+5")
        shot("tour-200-speakers", 3.0)
        desktop.xdotool("key", "ctrl+0")
        time.sleep(1.0)
        desktop.xdotool("key", "ctrl+7")
        shot("tour-100-results", 4.0)
        desktop.xdotool("key", "Escape")
        time.sleep(1.0)
    print(f"ratings stored: {stored_ratings(project)}")
    for path in shots:
        print(path)


if __name__ == "__main__":
    main()
