"""Screenshots of the Items page and the Evaluate page's plan read with the keys alone, on a real X server (Xvfb,
no window manager) with a PulseAudio null sink, driven by xdotool:

    python docs/screenshots/items_keys_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project and opens the app on its Rating page. Into OUT, each
after its keys: items-table.png (Ctrl+1: the first item current, its detail shown), items-detail.png (↓ Tab ↓:
the second item's question and options with the caret on the question's line), items-rewrites.png (Tab Tab: the
item's rewrites, the first row current) and evaluate-plan.png (Ctrl+6, Shift+Tab ×7 to Prepare, Space, ↓: the
plan with the caret on its second line). What a screen reader says of the same keys: `python
tests/benchmarks/bench_screen_reader.py --walk items`. Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb
pulseaudio xdotool)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, type_keys, walk_arguments, walked_session  # noqa: E402

PAGE_S = 4.0  # after Ctrl+1 or Ctrl+6: the page is built and its rows read
KEY_S = 1.0


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    with walked_session(out, screen, project, queue_keys=("Return",)) as (desktop, _process, _figures):

        def keys(*pressed: str, then: float = KEY_S) -> None:
            type_keys(desktop, *pressed)
            time.sleep(then)  # what they did is drawn

        time.sleep(2.0)
        keys("ctrl+1", then=PAGE_S)
        desktop.screenshot(out / "items-table.png")
        keys("Down", "Tab", "Down")
        desktop.screenshot(out / "items-detail.png")
        keys("Tab", "Tab")
        desktop.screenshot(out / "items-rewrites.png")
        keys("ctrl+6", then=PAGE_S)
        keys(*["shift+Tab"] * 7)
        keys("space", then=PAGE_S)
        keys("Down")
        desktop.screenshot(out / "evaluate-plan.png")
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
