"""Screenshots of an annotation pack opened where it cannot be rated: on a read-only file system (a stick set
read-only, a share without write rights, a mounted image), under a real window manager (xfwm4) with a panel:

    python docs/screenshots/read_only_pack_walk.py OUT [--screen 1280x720]

Run as root: it packs the demo's queue demo-qc for the annotator bo, mounts a tmpfs at OUT/readonly, copies the
pack there and remounts it read-only, then starts `spokenbench-studio OUT/readonly/bo.sbpack` on Xvfb with
xfwm4, a 40-pixel panel and a PulseAudio null sink (tests/real_device.py). OUT/read-only-pack.png: the dialog
that says what to do; Enter closes it (OUT/read-only-pack-closed.png). Needs Xvfb, PulseAudio, xdotool and xfwm4."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import RealDesktop, app_on, demo_in, walk_arguments  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    pack = out / "bo.sbpack"
    pack.unlink(missing_ok=True)
    command = ["spokenbench", "pack", str(demo_in(out)), "--queue", "demo-qc", "--annotator", "bo", "--out", str(pack)]
    subprocess.run(command, check=True, capture_output=True)
    mount = out / "readonly"
    mount.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "none", str(mount)], check=True)
    try:
        subprocess.run(["cp", str(pack), str(mount)], check=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        with (
            RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop,
            app_on(desktop, mount / pack.name, out),
        ):
            time.sleep(5.0)  # the pack is read on a worker thread; the dialog comes up over the window
            desktop.screenshot(out / "read-only-pack.png")
            desktop.xdotool("key", "Return")
            time.sleep(1.5)
            desktop.screenshot(out / "read-only-pack-closed.png")
            print(f"files in {mount}: {sorted(p.name for p in mount.iterdir())}")
    finally:
        subprocess.run(["umount", str(mount)], check=False)


if __name__ == "__main__":
    main()
