"""Screenshots of a rating session whose disk fills up, on a real X server with a PulseAudio null sink, driven by
keys alone (tests/real_device.py):

    python docs/screenshots/full_disk_walk.py OUT [--screen 1280x720]

Mounts a 100 MB tmpfs at OUT/disk (needs root), copies the demo there (built into OUT/demo), opens the Rating page
on the demo's queue demo-qc (Ctrl+3, ↓, Enter), rates one clip with 1, fills the disk to the last byte and presses
2: OUT/full-disk-not-saved.png shows "Not saved: … the disk is full … free some space and try again" on the same
clip. Then it frees the space and presses 2 again: OUT/full-disk-saved.png. Prints the ratings stored after each
step. Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_in, stored_ratings, walk_arguments, walked_session  # noqa: E402
from support import fill_disk, tmpfs  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    with tmpfs(out / "disk") as disk:
        project = Path(shutil.copytree(demo_in(out), disk / "project"))
        with walked_session(out, screen, project) as (desktop, _process, _figures):
            desktop.xdotool("key", "1")
            time.sleep(1.5)
            print("rated with space left:", stored_ratings(project))
            filler = fill_disk(disk)
            desktop.xdotool("key", "2")
            time.sleep(2.0)
            desktop.screenshot(out / "full-disk-not-saved.png")
            print("2 pressed on the full disk:", stored_ratings(project))
            filler.unlink()
            desktop.xdotool("key", "2")
            time.sleep(2.0)
            desktop.screenshot(out / "full-disk-saved.png")
            print("2 pressed again with room:", stored_ratings(project))
    print(out / "full-disk-not-saved.png")


if __name__ == "__main__":
    main()
