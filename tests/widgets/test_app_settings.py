"""The app's settings are written off the UI thread (app/app_settings.py): QSettings synced them on it, with two
fdatasyncs and a wait for another instance's lock, and the window froze while the disk or the lock held it."""

import subprocess
import sys
import time

from PySide6.QtCore import QSettings, QTimer

from spokenbench.app.app_settings import AppSettings
from spokenbench.app.settings_dialog import WINDOW_GEOMETRY_KEY

HOLD_S = 2.0
LOCK_HOLDER = """
import sys, time
from PySide6.QtCore import QLockFile
lock = QLockFile(sys.argv[1])
assert lock.tryLock(5000)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.unlock()
"""


def hold_lock(settings_file, seconds: float = HOLD_S) -> subprocess.Popen:
    """Another instance's QSettings lock on the file (QSettings takes FILE.lock around every write), held for
    `seconds` by another process."""
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, f"{settings_file}.lock", str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


def longest_gap_while_running(qtbot, seconds: float) -> float:
    """The event loop run for `seconds` with a 20 ms timer: the longest time between two of its ticks."""
    ticks = [time.monotonic()]
    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    qtbot.wait(int(seconds * 1000))
    timer.stop()
    ticks.append(time.monotonic())
    return max(later - earlier for earlier, later in zip(ticks, ticks[1:], strict=False))


def test_a_value_set_is_read_back_at_once_and_is_in_the_file_once_flushed(qapp, tmp_path):
    path = tmp_path / "settings.ini"
    path.write_text("[annotator]\nname=ana\n", encoding="utf-8")
    settings = AppSettings(QSettings(str(path), QSettings.Format.IniFormat))
    assert settings.value("annotator/name") == "ana" and settings.value("missing", "default") == "default"
    settings.setValue("columns/items", '{"Origin": 196}')
    assert settings.value("columns/items") == '{"Origin": 196}'
    assert settings.flush(5.0)
    assert "Origin" in path.read_text(encoding="utf-8") and "name=ana" in path.read_text(encoding="utf-8")
    assert settings.close(5.0)
    settings.setValue("tour/state", "skipped")  # after the close (a window's state saved once more): still written
    assert settings.flush(5.0) and "state=skipped" in path.read_text(encoding="utf-8")
    settings.close(5.0)


def test_the_window_answers_while_another_instance_holds_the_settings_file_and_its_place_is_written_after(
    qtbot, tmp_path
):
    """Before, the window's place saved (and a project opened, a column dragged) held the event loop until the
    other instance let go: 2.0 s here."""
    from spokenbench.app.main_window import MainWindow

    path = tmp_path / "settings.ini"
    window = MainWindow(audio_message="off", settings=QSettings(str(path), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    holder = hold_lock(path)
    try:
        window.save_window_state()
        gap = longest_gap_while_running(qtbot, 0.6)
        assert not window.settings.flush(0.1)  # still waiting for the lock, off the UI thread
    finally:
        holder.wait(10)
    assert gap < 0.5, f"the event loop waited {gap:.2f} s"
    window.shutdown()  # writes what is left
    assert WINDOW_GEOMETRY_KEY.split("/")[1] in path.read_text(encoding="utf-8")


def test_a_quit_the_disk_does_not_answer_in_time_leaves_the_writer_running_and_says_so(qapp, tmp_path):
    """`abandoned` tells app/main.py to end the process without Qt's teardown, which would delete the QSettings
    under the sync still running; meanwhile the writer goes on and writes what it was given."""
    path = tmp_path / "settings.ini"
    settings = AppSettings(QSettings(str(path), QSettings.Format.IniFormat))
    holder = hold_lock(path)
    try:
        settings.setValue("window/geometry", [10, 20, 700, 520])
        assert not settings.close(0.3) and settings.abandoned
    finally:
        holder.wait(10)
    assert settings.flush(10.0) and "700" in path.read_text(encoding="utf-8")
    assert settings.close(5.0)
