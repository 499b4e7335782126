"""Screenshots of an annotation pack file that travelled without its folder: rated at work (2 clips), copied alone
to a laptop and rated there (3 more), then copied back over the one at work, beside the folder of the first two.
The app opens it there, as the annotator would, under a real window manager (xfwm4):

    python docs/screenshots/travelled_pack_walk.py OUT [--screen 1280x720]

The ratings outside the app are made by `open_pack` and the rating session (as the Rating page makes them) and
saved with `save_pack_ratings`. OUT/travelled-pack.png: the Rating page on the returned pack, its status line
saying how many ratings the file carries. It prints the ratings the file carries before opening and after. Needs
Xvfb, PulseAudio, xdotool and xfwm4. For the tree before the fix, PYTHONPATH=DIR with DIR/spokenbench that tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import RealDesktop, app_on, demo_in, walk_arguments  # noqa: E402

from spokenbench.core.qc.packs import read_pack  # noqa: E402
from spokenbench.core.qc.rating_session import SynchronousRatingSession  # noqa: E402

try:
    from spokenbench.core.qc.pack_folders import open_pack, save_pack_ratings  # noqa: E402
except ImportError:  # the tree before the fix
    from spokenbench.core.qc.packs import open_pack, save_pack_ratings  # noqa: E402


def rate(pack: Path, keys: list[str]) -> None:
    with open_pack(pack) as project:
        session = SynchronousRatingSession.open(project, "demo-qc", "bo")
        for key in keys:
            session.press(key)
    save_pack_ratings(pack)


def main() -> None:
    out, screen = walk_arguments(__doc__)
    work, home = out / "work" / "bo.sbpack", out / "home" / "bo.sbpack"
    for folder in (work.parent, home.parent):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
    command = ["spokenbench", "pack", str(demo_in(out)), "--queue", "demo-qc", "--annotator", "bo", "--out", str(work)]
    subprocess.run(command, check=True, capture_output=True)
    rate(work, ["1", "3"])
    shutil.copy(work, home)
    rate(home, ["2", "1", "3"])
    shutil.copy(home, work)
    print(f"the file brought back carries {len(read_pack(work).ratings)} ratings")
    with (
        RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop,
        app_on(desktop, work, out),
    ):
        time.sleep(6.0)  # opened, and saved into at once
        desktop.screenshot(out / "travelled-pack.png")
    print(f"after opening it in the app: {len(read_pack(work).ratings)} ratings")


if __name__ == "__main__":
    main()
