"""Screenshots of an annotation pack opened where it cannot be rated: on a read-only file system (a stick set
read-only, a share without write rights, a mounted image), under a real window manager (xfwm4) with a panel:

    python docs/screenshots/read_only_pack_walk.py OUT [--screen 1280x720]

Run as root: it packs the demo's queue demo-qc for the annotator bo, mounts a tmpfs at OUT/readonly, copies the
pack there and remounts it read-only, then starts `spokenbench-studio OUT/readonly/bo.sbpack` on Xvfb with
xfwm4, a 40-pixel panel and a PulseAudio null sink (tests/real_device.py), its home folder OUT/home. Keys only:

1. OUT/read-only-pack.png: the dialog that offers to copy the pack to OUT/home/Documents.
2. Enter: the copy is made and opened on the Rating page (OUT/read-only-pack-copied.png); 1 and 3 rate two
   clips, Ctrl+S saves them into the copy, Ctrl+Q quits.
3. The app again on the read-only pack, Enter: the earlier copy opens with its two ratings
   (OUT/read-only-pack-reopened.png); Ctrl+Q.

It prints the files in Documents, the ratings each pack file carries and whether the original's bytes changed.
Needs Xvfb, PulseAudio, xdotool and xfwm4."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import RealDesktop, app_on, demo_in, walk_arguments  # noqa: E402

from spokenbench.core.qc.packs import read_pack  # noqa: E402


def quit_app(desktop: RealDesktop, app: subprocess.Popen) -> float:
    started = time.monotonic()
    desktop.xdotool("key", "ctrl+q")
    app.wait(30)
    return time.monotonic() - started


def main() -> None:
    out, screen = walk_arguments(__doc__)
    pack = out / "bo.sbpack"
    pack.unlink(missing_ok=True)
    command = ["spokenbench", "pack", str(demo_in(out)), "--queue", "demo-qc", "--annotator", "bo", "--out", str(pack)]
    subprocess.run(command, check=True, capture_output=True)
    home = out / "home"
    shutil.rmtree(home, ignore_errors=True)
    (home / "Documents").mkdir(parents=True)
    mount = out / "readonly"
    mount.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "none", str(mount)], check=True)
    try:
        subprocess.run(["cp", str(pack), str(mount)], check=True)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        original = mount / pack.name
        before = hashlib.sha256(original.read_bytes()).hexdigest()
        with RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop:
            with app_on(desktop, original, out, env={"HOME": str(home)}) as app:
                time.sleep(5.0)  # the pack is read on a worker thread; the dialog comes up over the window
                desktop.screenshot(out / "read-only-pack.png")
                desktop.xdotool("key", "Return")
                time.sleep(6.0)  # copied, then opened on the Rating page
                for key in ("1", "3"):
                    desktop.xdotool("key", key)
                    time.sleep(0.8)
                desktop.xdotool("key", "ctrl+s")
                time.sleep(2.0)
                desktop.screenshot(out / "read-only-pack-copied.png")
                print(f"first session quit in {quit_app(desktop, app):.1f} s")
            with app_on(desktop, original, out, fresh=False, env={"HOME": str(home)}) as app:
                time.sleep(5.0)
                desktop.xdotool("key", "Return")
                time.sleep(5.0)
                desktop.screenshot(out / "read-only-pack-reopened.png")
                print(f"second session quit in {quit_app(desktop, app):.1f} s")
        documents = home / "Documents"
        print(f"files in {documents}: {sorted(p.name for p in documents.iterdir())}")
        print(f"ratings in the copy: {len(read_pack(documents / pack.name).ratings)}")
        print(f"ratings in the original: {len(read_pack(original).ratings)}")
        print(f"original unchanged: {hashlib.sha256(original.read_bytes()).hexdigest() == before}")
        print(f"files in {mount}: {sorted(p.name for p in mount.iterdir())}")
    finally:
        subprocess.run(["umount", str(mount)], check=False)


if __name__ == "__main__":
    main()
