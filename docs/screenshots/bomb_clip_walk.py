"""A screenshot of a rating session whose first clip is a decompression bomb (1 MB of FLAC silence declaring 4
hours), on a real X server with a PulseAudio null sink, driven by keys alone (tests/real_device.py):

    python docs/screenshots/bomb_clip_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project with demo/001's question clip replaced by the bomb
(tests/support.py silence_bomb_clip), opens the Rating page on a 260-clip queue (Ctrl+3, ↓, Enter) and takes
OUT/rating-bomb-skipped.png: the clip skipped by name, the next one shown. Prints the app's peak memory. Needs
Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import add_stress_queue, demo_copy_in, walk_arguments, walked_session  # noqa: E402
from support import silence_bomb_clip  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    clip = silence_bomb_clip(project, hours=4)
    add_stress_queue(project)
    with walked_session(out, screen, project) as (desktop, process, _figures):
        time.sleep(2.0)
        desktop.screenshot(out / "rating-bomb-skipped.png")
        status = Path(f"/proc/{process.pid}/status").read_text()
        peak = next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))
    print(
        f"clip {clip} is the bomb; the app's peak memory: {int(peak) / 1024:.0f} MB; {out / 'rating-bomb-skipped.png'}"
    )


if __name__ == "__main__":
    main()
