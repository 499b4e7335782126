"""A take in hand when the window closes or another project opens: Ctrl+Q in a take asks (keep it, discard it,
go on recording), a take already stopped is saved before the window closes, and a sound server that does not
answer the stream's stop holds neither. Before, Ctrl+Q in a take closed the window at once and the take was gone
(seen on the real desktop: 4 s of reading, no question, no take)."""

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QMessageBox
from recording_fakes import FAKE_DEVICE, RATE, HeldStop, take_signal
from support import as_a_background_job, as_from_a_terminal, write_jsonl

from spokenbench.app.main import HEARTBEAT_ENV
from spokenbench.app.main_window import MainWindow
from spokenbench.app.speakers_page import SpeakersPage
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.recording.recorder import FakeInputStream, wait_for_closing_streams
from spokenbench.core.recording.speakers import add_speaker, give_consent
from spokenbench.core.store import Project

SPEECH_S = 30.0  # a long reading: the take is still being recorded when the window closes


def make_project(folder):
    rows = [
        {"id": f"q{i}", "language": "en", "question": f"Question {i}?", "options": ["a", "b", "c", "d"], "answer": "A"}
        for i in range(3)
    ]
    with Project.create(folder) as project:
        import_files(
            project, [write_jsonl(folder.parent / f"{folder.name}.jsonl", rows)], "mcq", ImportOptions(source="t")
        )
        add_speaker(project, "Ana", "en", "british", "woman")
        give_consent(project, "Ana", "I agree.", "tester")
    return folder


def stored_takes(folder) -> list[tuple]:
    with sqlite3.connect(f"file:{folder / 'project.sqlite'}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT prompt_key, take, duration_s FROM recordings ORDER BY id").fetchall()


@pytest.fixture
def window(qtbot, tmp_path, monkeypatch):
    """The whole window on a project with a consented speaker, its Speakers page recording from a fake input that
    reads for SPEECH_S at a device's pace."""
    monkeypatch.setattr(SpeakersPage, "device_lister", staticmethod(lambda: [FAKE_DEVICE]))
    monkeypatch.setattr(SpeakersPage, "stream_factory", staticmethod(reading))
    w = MainWindow(audio_message="off", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    w.open_project(make_project(tmp_path / "p"))
    qtbot.waitUntil(lambda: w.session is not None, timeout=10_000)
    w.show_page("speakers")
    qtbot.waitUntil(lambda: isinstance(w.page_widgets["speakers"], SpeakersPage), timeout=10_000)
    page = w.page_widgets["speakers"]
    qtbot.waitUntil(
        lambda: page.speaker is not None and page.speaker.consent_in_force and bool(page.devices), timeout=10_000
    )
    yield w
    w.shutdown()
    wait_for_closing_streams(5.0)


def reading(**options):
    return FakeInputStream(signal=take_signal(SPEECH_S), realtime=True, noise_dbfs=-75, **options)


def recording(window, qtbot) -> SpeakersPage:
    page = window.page_widgets["speakers"]
    qtbot.keyClick(page.view, "r")
    qtbot.waitUntil(lambda: page.take_in_hand == "recording" and page.recorder.recorded_s > 1.0, timeout=5_000)
    return page


def asked(window, qtbot) -> QMessageBox:
    qtbot.waitUntil(lambda: window.take_question is not None and window.take_question.isVisible(), timeout=5_000)
    return window.take_question


def answer(box: QMessageBox, starts: str) -> None:
    [button] = [button for button in box.buttons() if button.text().replace("&", "").startswith(starts)]
    button.click()


def test_quitting_in_a_take_asks_and_keeping_it_saves_it_before_the_window_closes(window, qtbot, tmp_path):
    recording(window, qtbot)
    window.close()
    box = asked(window, qtbot)
    assert window.isVisible() and "A take is being recorded" in box.text() and "read by Ana" in box.text()
    assert {b.text() for b in box.buttons()} == {"&Keep the take and quit", "&Discard it and quit", "&Go on recording"}
    assert box.defaultButton().text() == "&Go on recording" and box.escapeButton() is box.defaultButton()
    answer(box, "Keep")
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)  # closed by itself once the take is saved
    [(prompt, take, seconds)] = stored_takes(tmp_path / "p")
    assert take == 1 and seconds > 0.5  # the speech read before Ctrl+Q, its leading silence trimmed


def test_discarding_the_take_quits_at_once_and_keeps_nothing(window, qtbot, tmp_path):
    recording(window, qtbot)
    window.close()
    answer(asked(window, qtbot), "Discard")
    assert not window.isVisible()
    qtbot.wait(1_500)  # a take wrongly kept would be saved by now (STOP_WAIT_S at most, then its check)
    assert stored_takes(tmp_path / "p") == []


def test_going_on_recording_keeps_the_window_and_the_take_running(window, qtbot, tmp_path):
    page = recording(window, qtbot)
    window.close()
    box = asked(window, qtbot)
    qtbot.keyClick(box, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not box.isVisible(), timeout=5_000)
    assert window.isVisible() and page.take_in_hand == "recording"
    seconds = page.recorder.recorded_s
    qtbot.waitUntil(lambda: page.recorder.recorded_s > seconds + 0.5, timeout=5_000)  # still recording
    qtbot.keyClick(page.view, "r")
    qtbot.waitUntil(lambda: page.take_in_hand is None and page.state == "idle", timeout=10_000)
    assert len(stored_takes(tmp_path / "p")) == 1
    window.close()  # nothing in hand: no question
    assert not window.isVisible()


def test_a_take_stopped_just_before_quitting_is_saved_first_without_a_question(window, qtbot, tmp_path):
    page = recording(window, qtbot)
    qtbot.keyClick(page.view, "r")
    assert page.take_in_hand == "finishing"
    window.close()
    window.close()  # Ctrl+Q again while it waits: still one closing
    assert window.isVisible() and window.take_question is None
    assert window.statusBar().currentMessage() == "Saving the take before you quit…"
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert len(stored_takes(tmp_path / "p")) == 1


def test_a_take_whose_stop_the_sound_server_never_answers_is_saved_and_the_window_closes(
    window, qtbot, tmp_path, monkeypatch
):
    """PulseAudio stopped as R is pressed: the stream's stop waits on it. Before, the take waited with it, and
    Ctrl+Q meanwhile lost it."""
    server_answers = threading.Event()
    monkeypatch.setattr(
        SpeakersPage, "stream_factory", staticmethod(lambda **o: HeldStop(reading(**o), server_answers, 60))
    )
    page = recording(window, qtbot)
    recorder = page.recorder
    window.close()
    answer(asked(window, qtbot), "Keep")
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)  # STOP_WAIT_S, then the take is saved
    assert len(stored_takes(tmp_path / "p")) == 1 and page.stop_held
    assert recorder.closing.is_alive()  # the stream still waits on the server
    server_answers.set()
    recorder.closing.join(5)
    assert not recorder.closing.is_alive()


def test_opening_another_project_in_a_take_asks_and_saves_the_take_into_its_own_project(window, qtbot, tmp_path):
    other = make_project(tmp_path / "other")
    recording(window, qtbot)
    window.open_project(other)
    box = asked(window, qtbot)
    assert "&Keep the take and open other" in [button.text() for button in box.buttons()]
    assert window.session.path == tmp_path / "p"  # not opened yet
    answer(box, "Keep")
    qtbot.waitUntil(lambda: window.session is not None and window.session.path == other, timeout=10_000)
    assert len(stored_takes(tmp_path / "p")) == 1 and stored_takes(other) == []


def test_going_on_recording_drops_the_opening(window, qtbot, tmp_path):
    other = make_project(tmp_path / "other")
    page = recording(window, qtbot)
    window.open_project(other)
    answer(asked(window, qtbot), "Go on")
    qtbot.wait(300)
    assert window.session.path == tmp_path / "p" and page.take_in_hand == "recording"
    assert str(tmp_path / "p") in window.summary_label.text()


def test_told_to_end_in_a_take_keeps_it_without_asking(window, qtbot, tmp_path):
    """SIGTERM or SIGINT (`close_when_told`): nobody may be there to answer, so the take is kept."""
    recording(window, qtbot)
    window.close_when_told()
    assert window.take_question is None
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert len(stored_takes(tmp_path / "p")) == 1


def test_told_to_end_while_asked_keeps_the_take(window, qtbot, tmp_path):
    recording(window, qtbot)
    window.close()
    box = asked(window, qtbot)
    window.close_when_told()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert not box.isVisible() and len(stored_takes(tmp_path / "p")) == 1


@pytest.mark.slow
@pytest.mark.parametrize("told", [signal.SIGTERM, signal.SIGINT])
def test_the_app_closes_as_ctrl_q_does_when_told_to_end_by_a_signal(tmp_path, told):
    """A logout, a shutdown or `kill` sends SIGTERM; Ctrl+C in its terminal, SIGINT. Before, SIGTERM ended the
    process at once (exit -15: no closing, a take in hand lost) and SIGINT waited for Python code to run."""
    project = make_project(tmp_path / "p")
    heartbeat, config = tmp_path / "heartbeat", tmp_path / "config"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(config), HEARTBEAT_ENV: str(heartbeat)}
    app = [sys.executable, "-c", "from spokenbench.app.main import main; raise SystemExit(main())"]
    process = subprocess.Popen([*app, str(project)], env=env, preexec_fn=as_from_a_terminal)
    try:
        deadline = time.monotonic() + 60
        settings = config / "SpokenBench" / "SpokenBench Studio.conf"
        while not (settings.exists() and str(project) in settings.read_text() and heartbeat.exists()):
            assert time.monotonic() < deadline and process.poll() is None, "the app never opened the project"
            time.sleep(0.05)  # opened: the project is among the recent ones
        process.send_signal(told)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
    assert "page=items" in settings.read_text(), (
        settings.read_text()
    )  # the window was closed as Ctrl+Q closes it: its state saved


def test_a_check_cancelled_while_a_quit_waits_lets_the_next_quit_through(window, qtbot, tmp_path, monkeypatch):
    """Cancel on "Checking the take" in the jobs panel: before, the page kept "Checking the take…" for good and
    the quit waiting for it never ended (nor did any later one)."""
    held = threading.Event()
    monkeypatch.setattr(SpeakersPage, "stream_factory", staticmethod(lambda **o: HeldStop(reading(**o), held, 60)))
    page = recording(window, qtbot)
    qtbot.keyClick(page.view, "r")
    window.close()
    [check] = [op for op in window.runner.running if op.label == "Checking the take"]
    check.cancel()
    qtbot.waitUntil(lambda: page.state == "idle", timeout=10_000)
    assert window.isVisible() and page.view.status_label.text() == "The take was not kept: its check was cancelled"
    window.close()
    assert not window.isVisible()
    held.set()


def test_a_quit_waiting_for_a_take_wins_over_an_opening_that_comes_meanwhile(window, qtbot, tmp_path, monkeypatch):
    """Before, the opening took the quit's place: once the take was saved, the other project opened instead."""
    other = make_project(tmp_path / "other")
    held = threading.Event()  # the stop is held: the take is saved only after STOP_WAIT_S
    monkeypatch.setattr(SpeakersPage, "stream_factory", staticmethod(lambda **o: HeldStop(reading(**o), held, 60)))
    page = recording(window, qtbot)
    qtbot.keyClick(page.view, "r")  # stopped: the quit waits for its save
    window.close()
    opening = window.open_project(other)
    qtbot.waitUntil(lambda: opening.status == "succeeded", timeout=10_000)
    assert page.take_in_hand == "finishing"  # the opening came while the quit waited
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert window.session is None and len(stored_takes(tmp_path / "p")) == 1
    held.set()


def test_a_quit_while_an_openings_question_is_open_replaces_it(window, qtbot, tmp_path):
    other = make_project(tmp_path / "other")
    recording(window, qtbot)
    window.open_project(other)
    opening_question = asked(window, qtbot)
    window.close()
    box = asked(window, qtbot)
    assert box is not opening_question and "&Keep the take and quit" in [button.text() for button in box.buttons()]
    answer(box, "Keep")
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=10_000)
    assert len(stored_takes(tmp_path / "p")) == 1


END_SIGNALS_SCRIPT = """
import os, signal, sys, time
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication
from spokenbench.app.main import EndSignals

app = QApplication([])


class Window(QObject):
    told = 0

    def close_when_told(self):
        self.told += 1  # a window that takes its time to close


window = Window()
ending = EndSignals(window)
child = os.fork()
if child == 0:  # a process forked from the app: the handlers from before, no wakeup socket
    os._exit(0 if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and signal.set_wakeup_fd(-1) == -1 else 3)
print("forked child", os.waitpid(child, 0)[1] >> 8, flush=True)
os.kill(os.getpid(), signal.SIGINT)  # ignored from the start (a background job): stays ignored
os.kill(os.getpid(), signal.SIGTERM)
deadline = time.monotonic() + 5
while not window.told and time.monotonic() < deadline:
    app.processEvents()
    time.sleep(0.01)
print("told", window.told, ending.told, flush=True)
os.kill(os.getpid(), signal.SIGTERM)  # told twice: ends at once
time.sleep(5)
print("still alive", flush=True)
"""


@pytest.mark.slow
def test_a_second_signal_ends_the_app_at_once_an_ignored_one_stays_ignored_and_a_fork_gets_the_old_handlers(
    tmp_path,
):
    script = tmp_path / "end_signals.py"
    script.write_text(END_SIGNALS_SCRIPT)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(
        [sys.executable, str(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=as_a_background_job,
    )
    assert done.returncode == -signal.SIGTERM, (done.stdout, done.stderr)
    assert done.stdout == f"forked child 0\ntold 1 [{int(signal.SIGTERM)}]\n", (done.stdout, done.stderr)


def left_behind(folder, seconds: float = 1.5, heard: bool = True) -> None:
    """A take a killed process left in the project's spool: 1.5 s of speech of the first prompt, by Ana (`heard`
    False: the exact zeros an input waking up sends)."""
    from spokenbench.core.recording.prompts import project_prompts
    from spokenbench.core.recording.spool import TakeSpool
    from spokenbench.core.store import opened

    with opened(folder) as project:  # the first prompt of Ana's script, as the page lists it
        prompt = project_prompts(project.conn, "en")[0]
    spool = TakeSpool(folder, 1, prompt, RATE, "Fake microphone")
    spool.write(take_signal(seconds) if heard else np.zeros(int(seconds * RATE), dtype=np.float32))
    spool.close(remove=False)  # as a kill leaves it


def window_on(qtbot, tmp_path, folder) -> MainWindow:
    w = MainWindow(audio_message="off", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show()
    w.open_project(folder)
    qtbot.waitUntil(lambda: w.session is not None, timeout=10_000)
    w.show_page("speakers")
    qtbot.waitUntil(lambda: isinstance(w.page_widgets["speakers"], SpeakersPage), timeout=10_000)
    return w


@pytest.mark.parametrize(("answer_with", "kept", "left"), [("Keep", 1, 0), ("Discard", 0, 0), ("Later", 0, 1)])
def test_a_take_cut_short_by_a_kill_is_offered_at_the_next_opening(
    qtbot, tmp_path, monkeypatch, answer_with, kept, left
):
    """Before, a take lived in memory until R: the app killed (a crash, a power cut) mid-take lost all of it."""
    from spokenbench.core.recording.spool import left_takes

    monkeypatch.setattr(SpeakersPage, "device_lister", staticmethod(lambda: [FAKE_DEVICE]))
    folder = make_project(tmp_path / "p")
    left_behind(folder)
    window = window_on(qtbot, tmp_path, folder)
    page = window.page_widgets["speakers"]
    qtbot.waitUntil(lambda: page.left_take_box is not None and page.left_take_box.isVisible(), timeout=10_000)
    box = page.left_take_box
    assert "cut short" in box.text() and "2 s of q0 question, read by Ana" in box.text(), box.text()
    assert box.defaultButton().text() == "&Keep the take"
    answer(box, answer_with)
    qtbot.waitUntil(lambda: len(left_takes(folder)) == left and len(stored_takes(folder)) == kept, timeout=10_000)
    qtbot.wait(1_000)  # Later changes nothing, even a moment after
    assert len(left_takes(folder)) == left and len(stored_takes(folder)) == kept
    if kept:
        qtbot.waitUntil(lambda: page.view.status_label.text().startswith("The take cut short was kept"), timeout=5_000)
        [(_prompt, take, seconds)] = stored_takes(folder)
        assert take == 1 and 1.0 < seconds < 2.0
    window.shutdown()


def test_a_take_cut_short_before_its_input_heard_anything_is_not_asked_about(qtbot, tmp_path, monkeypatch):
    """Killed while "Starting the microphone…" showed, on an input waking with zeros: before, the next opening asked
    "Keep a take cut short?" about 2 s of nothing. Nothing was recorded, as R then says: its files are removed."""
    from spokenbench.core.recording.spool import SPOOL_DIR_NAME

    monkeypatch.setattr(SpeakersPage, "device_lister", staticmethod(lambda: [FAKE_DEVICE]))
    folder = make_project(tmp_path / "p")
    left_behind(folder, heard=False)
    for left in (folder / SPOOL_DIR_NAME).iterdir():  # left a minute ago, as by a kill before this start
        os.utime(left, (time.time() - 60, time.time() - 60))
    window = window_on(qtbot, tmp_path, folder)
    page = window.page_widgets["speakers"]
    qtbot.waitUntil(lambda: not any((folder / SPOOL_DIR_NAME).iterdir()), timeout=10_000)
    qtbot.wait(300)
    assert page.left_take_box is None and stored_takes(folder) == []
    window.shutdown()


def test_a_take_being_recorded_is_on_disk_until_it_is_saved(window, qtbot, tmp_path):
    from spokenbench.core.recording.spool import SPOOL_DIR_NAME

    spool_dir = tmp_path / "p" / SPOOL_DIR_NAME
    page = recording(window, qtbot)
    qtbot.waitUntil(lambda: sum(f.stat().st_size for f in spool_dir.glob("*.pcm")) > RATE, timeout=5_000)
    qtbot.keyClick(page.view, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(stored_takes(tmp_path / "p")) == 1, timeout=10_000)
    qtbot.waitUntil(lambda: not any(spool_dir.iterdir()), timeout=5_000)  # let go once saved
