"""The real-device session's watchdog (tests/real_device.py) itself: a heartbeat file caught mid-write as the
watch begins must not read as a freeze since boot (a CI rehearsal reported a 48,467 s gap and 0 rounds)."""

import subprocess
import time

from real_device import Heartbeat


class _Alive:
    def poll(self):
        return None


class _QuietPulse:
    def pactl(self, *args, timeout: float = 10):
        return subprocess.CompletedProcess(args, 0, stdout="", stderr="")


def test_the_watchdog_measures_from_the_last_beat_seen_when_its_first_read_finds_a_half_written_file(tmp_path):
    path = tmp_path / "heartbeat"
    path.write_text(f"{time.monotonic():.3f} 0 0 1 rating 0\n")
    heart = Heartbeat(path, _Alive(), _QuietPulse())
    assert heart.wait_for(lambda beat, saves, ignored, session: session == 1, 5)
    path.write_text("")  # the app truncated it and has not written the line yet
    heart.watching = True
    heart.start()
    time.sleep(0.2)
    heart.stop()
    assert not heart.froze and heart.longest_gap < 2.0, f"gap {heart.longest_gap:.1f} s"
