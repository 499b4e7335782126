"""Screenshots of a rating session whose USB stick is pulled out and put back, on a real X server with a PulseAudio
null sink, driven by keys alone (tests/real_device.py):

    python docs/screenshots/pulled_drive_walk.py OUT [--screen 1280x720]

Makes an exFAT "stick" (a loop device through exfat-fuse, tests/support.py UsbStick: needs root, `apt-get install
exfatprogs exfat-fuse`), copies the demo onto it (built into OUT/demo), opens the Rating page on the demo's queue
(Ctrl+3, ↓, Enter) and rates one clip with 1. Then the stick is pulled out and 2 pressed: OUT/pulled-not-saved.png.
The stick is put back, and 2 pressed again: OUT/pulled-put-back.png. Prints the ratings stored on the stick after
each step (read once it is back). Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_in, stored_ratings, walk_arguments, walked_session  # noqa: E402
from support import usb_stick  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    with usb_stick(out / "usb") as stick:
        project = Path(shutil.copytree(demo_in(out), stick.mounted / "project"))
        os.sync()  # the copy on the stick, as one made and ejected elsewhere (a pull loses what was not written)
        with walked_session(out, screen, project) as (desktop, _process, _figures):
            desktop.xdotool("key", "1")
            time.sleep(1.5)
            print("rated with the stick in:", stored_ratings(project))
            stick.pull_out()
            desktop.xdotool("key", "2")
            time.sleep(2.0)
            desktop.screenshot(out / "pulled-not-saved.png")
            stick.plug_in()
            time.sleep(1.0)
            print("2 pressed with the stick out; back in, stored:", stored_ratings(project))
            desktop.xdotool("key", "2")
            time.sleep(2.0)
            desktop.screenshot(out / "pulled-put-back.png")
            print("2 pressed again with the stick back:", stored_ratings(project))
    print(out / "pulled-not-saved.png")


if __name__ == "__main__":
    main()
