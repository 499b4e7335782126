"""The real-device session's watchdog (tests/real_device.py) itself: a heartbeat file caught mid-write as the
watch begins must not read as a freeze since boot (a CI rehearsal reported a 48,467 s gap and 0 rounds); the
heartbeat never waits with the disk; a stall comes with what the UI thread was doing."""

import subprocess
import threading
import time
from pathlib import Path

from real_device import Heartbeat, beat_file

from spokenbench.app.main import STALL_REPORT_S, watch_for_stalls


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


def test_the_heartbeat_goes_on_tmpfs_so_a_disk_busy_with_another_process_s_writes_never_delays_it(tmp_path):
    """With another process's writes in flight, a beat file on the disk read empty for 3.1-3.4 s while its
    truncation waited, and the watchdog reported the event loop frozen (stop 79's CI: 3.1 s): the app never was."""
    if not Path("/dev/shm").is_dir():
        return  # no tmpfs there: the session's folder, as before
    path = beat_file(tmp_path)
    assert path.parent == Path("/dev/shm") and path == beat_file(tmp_path) and path != beat_file(tmp_path / "other")


def test_the_stall_watcher_writes_what_the_ui_thread_was_doing_while_its_beat_was_late(qapp, tmp_path):
    from PySide6.QtCore import QTimer

    timer = QTimer()  # never fires here: no event loop runs while this thread sleeps, as a stalled UI thread
    stalls = tmp_path / "heartbeat.stalls"
    stopping = watch_for_stalls(str(stalls), timer)
    try:
        time.sleep(STALL_REPORT_S + 0.5)  # the UI thread held
        text = stalls.read_text() if stalls.exists() else ""
    finally:
        stopping.set()
    assert "the UI thread's beat is" in text and f"(the UI thread: {threading.main_thread().ident:#018x}" in text, text
    ui_thread = text.split(f"hread {threading.main_thread().ident:#018x}")[-1].split("Thread 0x")[0]
    assert "in test_the_stall_watcher_writes_what_the_ui_thread_was_doing_while_its_beat_was_late" in ui_thread, text
