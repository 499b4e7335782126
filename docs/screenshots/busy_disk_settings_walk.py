"""Screenshot walk: the Settings dialog saved, by keys alone, while another process writes 3 GiB files to the same
disk, and the app started again keeps what was saved (app/app_settings.py: the settings are written by a thread of
their own, never on the UI thread).

    python docs/screenshots/busy_disk_settings_walk.py OUT [--screen 1280x720]

Xvfb with xfwm4 and a PulseAudio null sink (tests/real_device.py), the app on a copy of the demo with its settings
in OUT/config-walk. With the writer running: Ctrl+, opens Settings (studio-busy-disk-settings), the annotator's name is
typed over (ctrl+a, "walker"), Enter saves it, Ctrl+Q quits; then the app is started again and Ctrl+, shows the name
kept (studio-busy-disk-settings-kept). Prints the longest event-loop gap of each start (the heartbeat, on tmpfs),
and the settings file's annotator line."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "benchmarks"))

from bench_disk_writeback import disk_writing  # noqa: E402
from real_device import RealDesktop, demo_copy_in, walk_app, walk_app_ended, walk_arguments  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    size = screen.removesuffix("x24")
    project = demo_copy_in(out)
    with RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4") as desktop:
        with disk_writing(out, settle_s=0.0):
            app, heart = walk_app(desktop, project, out)
            time.sleep(4.0)  # the project opens and goes on the recent list
            desktop.xdotool("key", "ctrl+comma")
            time.sleep(2.0)
            desktop.xdotool("key", "ctrl+a")
            desktop.xdotool("type", "--delay", "60", "walker")
            time.sleep(0.5)
            desktop.screenshot(out / f"studio-busy-disk-settings-{size}.png")
            desktop.xdotool("key", "Return")
            time.sleep(2.0)
            first = walk_app_ended(desktop, app, heart)
            app, heart = walk_app(desktop, project, out)
            time.sleep(4.0)
            desktop.xdotool("key", "ctrl+comma")
            time.sleep(2.0)
            desktop.screenshot(out / f"studio-busy-disk-settings-kept-{size}.png")
            desktop.xdotool("key", "Escape")
            second = walk_app_ended(desktop, app, heart)
    stored = (out / "config-walk" / "SpokenBench" / "SpokenBench Studio.conf").read_text(encoding="utf-8")
    print(f"{size}: longest event-loop gap {first:.2f} s (first start), {second:.2f} s (second start)")
    print("settings file:", [line for line in stored.splitlines() if line.startswith("name=")])


if __name__ == "__main__":
    main()
