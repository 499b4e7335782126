"""A screenshot of the Items page's Play button while the sound output fails, driven by keys alone (xdotool) in a
real X server with a PulseAudio null sink (tests/real_device.py):

    python docs/screenshots/items_play_walk.py PROJECT OUT [--screen 1280x720]

Ctrl+1 (Items), ↓ (the second item), PulseAudio killed, Tab Tab (the detail's tabs), → (Clips), Tab (the first
clip's Play), Space; then OUT/items-play-failed.png: the status bar's one line naming the clip, "Audio: playback
failed". Needs Xvfb, PulseAudio and xdotool."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import RealDesktop  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--screen", default="1400x900")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    config = out / "config"
    (config / "SpokenBench").mkdir(parents=True, exist_ok=True)
    (config / "SpokenBench" / "SpokenBench Studio.conf").write_text("[annotator]\nname=walker\n", encoding="utf-8")
    with RealDesktop(out / "desktop", screen=f"{args.screen}x24") as desktop, (out / "app.log").open("w") as log:
        studio = str(Path(sys.executable).parent / "spokenbench-studio")
        app = subprocess.Popen(
            [studio, str(args.project)], env=desktop.app_env(config, out / "heartbeat"), stdout=log, stderr=log
        )
        try:
            found = desktop.xdotool("search", "--sync", "--onlyvisible", "--pid", str(app.pid), timeout=60)
            desktop.xdotool("windowfocus", "--sync", found.stdout.split()[0])  # no window manager gives it the keys
            time.sleep(4)  # the project opens on the read pool
            desktop.xdotool("key", "ctrl+1")
            time.sleep(1.5)
            desktop.xdotool("key", "Down")
            time.sleep(1.5)
            desktop.stop_pulse()
            desktop.xdotool("key", "--delay", "400", "Tab", "Tab", "Right", "Tab", "space")
            time.sleep(1.5)
            desktop.screenshot(out / "items-play-failed.png")
            desktop.xdotool("key", "ctrl+q")
            app.wait(20)
        finally:
            if app.poll() is None:
                app.kill()


if __name__ == "__main__":
    main()
