"""Screenshots of the app on a scaled screen (a 1920×1080 laptop at 150 %, Windows' default for such screens, so
1280×720 logical pixels), on a real X server with a PulseAudio null sink, driven by keys alone
(tests/real_device.py):

    python docs/screenshots/scaled_screen_walk.py OUT [--screen 1920x1080] [--scale 1.5]

Builds the demo into OUT/demo, copies it to OUT/project and starts the app with QT_SCALE_FACTOR. Opens the Rating
page on the demo's queue demo-qc (Ctrl+3, ↓, Enter), rates a clip with 1, shows the spectrogram (S) and takes
OUT/scaled-spectrogram.png (drawn in device pixels: its labels sharp); then the Results page (Ctrl+7):
OUT/scaled-results.png (the accent facet's names slanted, none running into another). Needs Xvfb, PulseAudio and
xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, walked_session  # noqa: E402


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--screen", default="1920x1080")
    parser.add_argument("--scale", default="1.5")
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    os.environ["QT_SCALE_FACTOR"] = args.scale  # passed on to the app
    with walked_session(out, f"{args.screen}x24", demo_copy_in(out)) as (desktop, _process, _figures):
        desktop.xdotool("key", "1")
        time.sleep(1.0)
        desktop.xdotool("key", "s")
        time.sleep(4.0)  # the spectrogram is computed off the UI thread
        desktop.screenshot(out / "scaled-spectrogram.png")
        desktop.xdotool("key", "s", "ctrl+7")
        time.sleep(6.0)
        desktop.screenshot(out / "scaled-results.png")
    print(out / "scaled-spectrogram.png")
    print(out / "scaled-results.png")


if __name__ == "__main__":
    main()
