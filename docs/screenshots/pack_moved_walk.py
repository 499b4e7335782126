"""Screenshots of an annotation pack whose file is moved away while its queue is rated (sent, tidied into another
folder), under a real window manager (xfwm4) with a panel, keys only:

    python docs/screenshots/pack_moved_walk.py OUT [--screen 1280x720]

Packs the demo's queue demo-qc for the annotator bo into OUT/bo.sbpack and starts `spokenbench-studio
OUT/bo.sbpack` on Xvfb with xfwm4, a 40-pixel panel and a PulseAudio null sink (tests/real_device.py). Rates one
clip with 1 (saved into the pack), moves the pack to OUT/sent/, rates seven more with 2 3 1 2 3 1 2:
OUT/pack-moved.png (the status bar says the pack was not saved, in the warning tone; no dialog took the keys).
Ctrl+Q: OUT/pack-quit-asked.png (asked first, Stay by default; Enter stays). Moves the pack back and rates one
more: OUT/pack-back.png (every rating saved into the pack). Prints the ratings
in the pack's folder and in the pack file at each step. Needs Xvfb, PulseAudio, xdotool and xfwm4."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import RealDesktop, app_on, demo_in, walk_arguments  # noqa: E402


def counts(pack: Path, folder: Path) -> str:
    from spokenbench.core.qc.packs import read_pack

    with sqlite3.connect(f"file:{folder / 'project.sqlite'}?mode=ro", uri=True) as conn:
        rated = conn.execute("SELECT count(*) FROM ratings WHERE undone_at IS NULL").fetchone()[0]
    carried = len(read_pack(pack).ratings) if pack.exists() else "no file"
    return f"{rated} rating(s) in {folder.name}, {carried} in the pack file"


def main() -> None:
    out, screen = walk_arguments(__doc__)
    pack, sent = out / "bo.sbpack", out / "sent" / "bo.sbpack"
    for stale in (pack, sent):
        stale.unlink(missing_ok=True)
    shutil.rmtree(out / "bo.sbpack.d", ignore_errors=True)
    sent.parent.mkdir(exist_ok=True)
    command = ["spokenbench", "pack", str(demo_in(out)), "--queue", "demo-qc", "--annotator", "bo", "--out", str(pack)]
    subprocess.run(command, check=True, capture_output=True)
    with (
        RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop,
        app_on(desktop, pack, out) as app,
    ):
        time.sleep(6.0)  # the pack is unpacked and its queue opened on the Rating page
        desktop.xdotool("key", "1")
        time.sleep(3.0)  # saved into the pack 1.5 s after the last rating
        print(f"rated one: {counts(pack, out / 'bo.sbpack.d')}")
        shutil.move(pack, sent)
        for key in "2312312":
            desktop.xdotool("key", key)
            time.sleep(0.9)
        time.sleep(3.0)
        desktop.screenshot(out / "pack-moved.png")
        print(f"moved away, seven more: {counts(pack, out / 'bo.sbpack.d')}")
        desktop.xdotool("key", "ctrl+q")
        time.sleep(1.5)
        desktop.screenshot(out / "pack-quit-asked.png")
        desktop.xdotool("key", "Return")  # Stay, the default
        time.sleep(1.0)
        print(f"Ctrl+Q, then Enter: the app {'is still open' if app.poll() is None else 'ended'}")
        shutil.move(sent, pack)
        desktop.xdotool("key", "3")
        time.sleep(4.0)
        desktop.screenshot(out / "pack-back.png")
        print(f"back, one more: {counts(pack, out / 'bo.sbpack.d')}")


if __name__ == "__main__":
    main()
