"""Screenshots of Evaluate's form and a Results figure reached by the keys alone, on a real X server (Xvfb, no
window manager) with a PulseAudio null sink, driven by xdotool:

    python docs/screenshots/figure_keys_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project and opens the app on its Rating page (Enter on the first
queue). Into OUT, each after its keys: evaluate-keys.png (Ctrl+6: Model has the keys, not the scroll area around
the form), figure-point.png (Ctrl+7, Tab to the figure after PDF…, then → →: the second point ringed, its value,
interval and counts beside it) and figure-responses.png (Enter: that point's responses, which have the keys).
What a screen reader says of the same keys: `python tests/benchmarks/bench_screen_reader.py --walk pages`. Needs
Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, walk_arguments, walked_session  # noqa: E402

PAGE_S = 4.0  # after Ctrl+6 or Ctrl+7: the page is built (Results computes its panels) before the next key
KEY_S = 0.6
TABS_TO_THE_FIGURE = 7  # Runs → All runs, Panels, Published (paper), PNG…, SVG…, PDF…, the figure


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    with walked_session(out, screen, project, queue_keys=("Return",)) as (desktop, _process, _figures):
        time.sleep(2.0)
        desktop.xdotool("key", "ctrl+6")
        time.sleep(PAGE_S)
        desktop.screenshot(out / "evaluate-keys.png")
        desktop.xdotool("key", "ctrl+7")
        time.sleep(PAGE_S)
        for key in ["Tab"] * TABS_TO_THE_FIGURE + ["Right", "Right"]:
            desktop.xdotool("key", key)
            time.sleep(KEY_S)
        desktop.screenshot(out / "figure-point.png")
        desktop.xdotool("key", "Return")
        time.sleep(PAGE_S)
        desktop.screenshot(out / "figure-responses.png")
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
