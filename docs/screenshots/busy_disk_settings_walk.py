"""Screenshot walk: the Settings dialog saved, by keys alone, while another process writes 3 GiB files to the same
disk, and the app started again keeps what was saved (app/app_settings.py: the settings are written by a thread of
their own, never on the UI thread).

    python docs/screenshots/busy_disk_settings_walk.py OUT [--screen 1280x720]

Xvfb with xfwm4 and a PulseAudio null sink (tests/real_device.py), the app on a copy of the demo with its settings
in OUT/config. With the writer running: Ctrl+, opens Settings (studio-busy-disk-settings), the annotator's name is
typed over (ctrl+a, "walker"), Enter saves it, Ctrl+Q quits; then the app is started again and Ctrl+, shows the name
kept (studio-busy-disk-settings-kept). Prints the longest event-loop gap of each start (the heartbeat, on tmpfs),
and the settings file's annotator line."""

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "benchmarks"))

from bench_disk_writeback import disk_writer  # noqa: E402
from real_device import Heartbeat, RealDesktop, app_window, beat_file, demo_copy_in, walk_arguments  # noqa: E402


def started(desktop: RealDesktop, project: Path, out: Path) -> tuple[subprocess.Popen, Heartbeat]:
    beat = beat_file(out / "walk")
    app = subprocess.Popen(
        ["spokenbench-studio", str(project)],
        env=desktop.app_env(out / "config", beat),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    desktop.xdotool("windowfocus", "--sync", app_window(desktop, app))
    heart = Heartbeat(beat, app, desktop)
    heart.wait_for(lambda *_: True, 60)
    heart.watching = True
    heart.start()
    time.sleep(4.0)  # the project opens and goes on the recent list
    return app, heart


def ended(desktop: RealDesktop, app: subprocess.Popen, heart: Heartbeat) -> float:
    heart.stop()
    desktop.xdotool("key", "ctrl+q")
    app.wait(30)
    heart.path.unlink(missing_ok=True)
    return heart.longest_gap


def main() -> None:
    out, screen = walk_arguments(__doc__)
    size = screen.removesuffix("x24")
    project = demo_copy_in(out)
    with RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4") as desktop:
        writer = disk_writer(out)
        try:
            app, heart = started(desktop, project, out)
            desktop.xdotool("key", "ctrl+comma")
            time.sleep(2.0)
            desktop.xdotool("key", "ctrl+a")
            desktop.xdotool("type", "--delay", "60", "walker")
            time.sleep(0.5)
            desktop.screenshot(out / f"studio-busy-disk-settings-{size}.png")
            desktop.xdotool("key", "Return")
            time.sleep(2.0)
            first = ended(desktop, app, heart)
            app, heart = started(desktop, project, out)
            desktop.xdotool("key", "ctrl+comma")
            time.sleep(2.0)
            desktop.screenshot(out / f"studio-busy-disk-settings-kept-{size}.png")
            desktop.xdotool("key", "Escape")
            second = ended(desktop, app, heart)
        finally:
            writer.kill()
            writer.wait()
            (out / "bench-disk-writeback.bin").unlink(missing_ok=True)
    stored = (out / "config" / "SpokenBench" / "SpokenBench Studio.conf").read_text(encoding="utf-8")
    print(f"{size}: longest event-loop gap {first:.2f} s (first start), {second:.2f} s (second start)")
    print("settings file:", [line for line in stored.splitlines() if line.startswith("name=")])


if __name__ == "__main__":
    main()
