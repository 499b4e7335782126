"""Screenshots of a rating session on a real X server and sound server when the sound output fails and when
another process keeps the project's write lock, driven by keys alone (xdotool):

    python docs/screenshots/sound_and_lock_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, starts Xvfb and a PulseAudio null sink (tests/real_device.py), opens the Rating
page on a 260-clip queue and takes, into OUT: 1-sound-output-lost.png (PulseAudio killed, Space pressed),
2-sound-output-back.png (started again, Space), 3-rating-write-lock.png (a process holding the write lock
stopped with SIGSTOP, 1 pressed: after the 15 s wait), 4-rating-saved-after-lock.png (that process killed, 1
again). Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import add_stress_queue, demo_in, stored_ratings, walk_arguments, walked_session  # noqa: E402

HOLDER = (
    "import os, signal, sqlite3, sys; conn = sqlite3.connect(sys.argv[1], isolation_level=None); "
    "conn.execute('BEGIN IMMEDIATE'); conn.execute('UPDATE project_meta SET value = value'); "
    "print('holding', flush=True); os.kill(os.getpid(), signal.SIGSTOP)"
)


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_in(out)
    add_stress_queue(project)
    with walked_session(out, screen, project) as (desktop, _process, figures):
        desktop.xdotool("key", "space")
        time.sleep(0.5)
        desktop.stop_pulse()
        desktop.xdotool("key", "--delay", "300", "1", "space")
        time.sleep(1.5)
        desktop.screenshot(out / "1-sound-output-lost.png")
        desktop.start_pulse()
        desktop.xdotool("key", "space")
        time.sleep(0.6)
        desktop.screenshot(out / "2-sound-output-back.png")
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(project / "project.sqlite")], stdout=subprocess.PIPE, text=True
        )
        holder.stdout.readline()
        time.sleep(0.3)
        desktop.xdotool("key", "1")
        time.sleep(17)  # the writer waits 15 s for the lock
        desktop.screenshot(out / "3-rating-write-lock.png")
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        desktop.xdotool("key", "1")
        time.sleep(1.5)
        desktop.screenshot(out / "4-rating-saved-after-lock.png")
    figures.ratings_stored = stored_ratings(project)  # the figures' "in the database" line
    print("\n".join(figures.lines()))


if __name__ == "__main__":
    main()
