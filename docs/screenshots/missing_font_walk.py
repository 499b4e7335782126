"""Screenshots of the app on a machine with no font for Korean and Chinese (as this one, and many a fresh Linux
install), on a real X server with a PulseAudio null sink, driven by keys alone (tests/real_device.py):

    python docs/screenshots/missing_font_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project, opens the Rating page on the demo's queue demo-qc
(Ctrl+3, ↓, Enter; English, Korean and Chinese clips), rates its first (English) clip with 1 and takes
OUT/missing-font-rating.png on the second, a Korean one: its text as boxes, the session's banner naming ko and zh
and the fonts to install, the status bar's "No font: ko, zh". Run it where a CJK font is
installed and neither appears. Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, walk_arguments, walked_session  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    with walked_session(out, screen, demo_copy_in(out)) as (desktop, _process, _figures):
        desktop.xdotool("key", "1")  # the first clip is English, the second Korean
        time.sleep(2.0)
        desktop.screenshot(out / "missing-font-rating.png")
    print(out / "missing-font-rating.png")


if __name__ == "__main__":
    main()
