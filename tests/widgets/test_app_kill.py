"""The app's own saving path under a hard kill: a rating key pressed in the desktop app (the Rating page, its
writer thread, the success delivered back to the UI), "Saved" shown, then SIGKILL — the rating is there on
reopen and the queue resumes after it. Slow: it starts a fresh interpreter with Qt."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from spokenbench.core.qc import store as qc_store
from spokenbench.core.qc.queues import queue_clips
from spokenbench.core.qc.rating_session import SynchronousRatingSession
from spokenbench.core.store import opened

APP_RATES_AND_WAITS = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from PySide6.QtCore import QSettings, Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication
    from spokenbench.app.main_window import MainWindow
    from spokenbench.app.settings_dialog import ANNOTATOR_KEY

    app = QApplication(sys.argv[:1])
    settings = QSettings(sys.argv[2], QSettings.Format.IniFormat)
    settings.setValue(ANNOTATOR_KEY, "kim")
    window = MainWindow(audio_message="off", settings=settings)
    window.show()

    def wait(condition):
        deadline = time.monotonic() + 20
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            app.processEvents()
            time.sleep(0.005)

    opening = window.open_project(Path(sys.argv[1]))
    wait(lambda: opening.status == "succeeded")
    window.show_page("rating")
    wait(lambda: not window.page_opening("rating"))  # its module is imported on a thread
    page = window.page_widgets["rating"]
    page.open_queue("demo-qc")
    wait(lambda: page.rating is not None and page.idle)
    rated = page.rating.current.clip_id
    QTest.keyClick(page.view, Qt.Key.Key_3)
    wait(lambda: page.idle and page.view.status_label.text() == "Saved")
    print("RATED", rated, flush=True)
    while True:  # the app keeps running, its project open, until it is killed
        app.processEvents()
        time.sleep(0.005)
    """
)


@pytest.mark.slow
def test_a_rating_saved_in_the_app_survives_sigkill_right_after_it(demo_copy, tmp_path):
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    process = subprocess.Popen(
        [sys.executable, "-c", APP_RATES_AND_WAITS, str(demo_copy), str(tmp_path / "settings.ini")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("RATED "), process.stderr.read() if process.poll() is not None else line
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    rated = int(line.split()[1])
    with opened(demo_copy) as project:
        assert {
            clip: rating for clip, (_id, rating, _note) in qc_store.live_ratings_by(project.conn, "kim").items()
        } == {rated: "incorrect"}
        order = [clip.clip_id for clip in queue_clips(project.conn, "demo-qc")]
        session = SynchronousRatingSession.open(project, "demo-qc", "kim")
        assert session.current.clip_id == order[order.index(rated) + 1]  # resumes after the rated clip
