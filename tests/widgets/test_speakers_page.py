"""The Speakers page against a fake input stream: the consent gate in the UI, record / stop / retake / play and
prompt navigation with the keyboard, the checks shown after a take, speaker creation, withdrawal, cloning from
the best take (a stub backend; the real one's missing package as a dialog), and the page without PortAudio."""

import re
import sqlite3
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit, QWidget
from real_device import recorded_takes
from recording_fakes import FAKE_DEVICE, RATE, fake, held_stops, speech, take_signal
from support import write_jsonl

from spokenbench.app import speakers_page
from spokenbench.app.speakers_page import NOISE_FILTER, WAITING_TEXT, SpeakersPage
from spokenbench.core.audio.io import encode_wav
from spokenbench.core.audio.playback import ClipPlayer
from spokenbench.core.audio.tts.base import TTSBackend, VoiceSpec
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.recording.recorder import InputDevice, RecordingUnavailable, fake_stream_factory
from spokenbench.core.recording.speakers import add_speaker, give_consent
from spokenbench.core.store import Project, opened
from spokenbench.widgets.recording_view import METER_FLOOR_DB


class StubClone(TTSBackend):
    def __init__(self, references):
        super().__init__(
            name="clone",
            model="stub",
            accents={"en": (None,)},
            voices=tuple(VoiceSpec(n, g) for n, (g, _) in references.items()),
        )

    async def synthesize(self, request):
        return encode_wav(speech(0.8, 24_000), 24_000)


@pytest.fixture
def project_path(tmp_path):
    rows = [
        {
            "id": f"q{i}",
            "language": "en",
            "question": f"Question number {i}?",
            "options": ["a", "b", "c", "d"],
            "answer": "A",
        }
        for i in range(3)
    ]
    with Project.create(tmp_path / "p") as project:
        import_files(project, [write_jsonl(tmp_path / "q.jsonl", rows)], "mcq", ImportOptions(source="t"))
        add_speaker(project, "Ana", "en", "british", "woman")
    return tmp_path / "p"


def make_page(qtbot, open_session, path, lister=lambda: [FAKE_DEVICE]):
    page = SpeakersPage()
    page.device_lister = lister
    page.stream_factory = fake(1.2)
    qtbot.addWidget(page)
    page.resize(1100, 700)
    page.show()
    page.set_session(open_session(path))
    qtbot.waitUntil(lambda: page.speaker is not None and bool(page.prompts), timeout=5_000)
    return page


@pytest.fixture
def page(qtbot, open_session, project_path):
    page = make_page(qtbot, open_session, project_path)
    qtbot.waitUntil(lambda: bool(page.devices), timeout=5_000)
    return page


@pytest.fixture
def consented(project_path):
    with opened(project_path) as project:
        give_consent(project, "Ana", "I agree.", "tester")


def reload_consented(page, qtbot):
    """The consent was given outside the page (the `consented` fixture): read the speaker again."""
    page._reload_speaker()
    qtbot.waitUntil(lambda: page.speaker is not None and page.speaker.consent_in_force, timeout=5_000)


def press(page, qtbot, key):
    qtbot.keyClick(page.view, key)


def record_take(page, qtbot, stop_key="r"):
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    assert page.recorder._stream.delivered_signal.wait(5)
    before = len(page.takes)
    press(page, qtbot, stop_key)
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == before + 1, timeout=5_000)
    return page.takes[-1]


def stored_takes(path):
    with opened(path) as project:
        return [tuple(r) for r in project.conn.execute("SELECT prompt_key, take, passed FROM recordings ORDER BY id")]


@pytest.mark.slow
def test_recording_is_refused_in_the_ui_until_consent_is_recorded(page, qtbot, project_path):
    assert not page.speaker.consent_in_force and "no consent" in page.view.speaker_label.text()
    press(page, qtbot, "r")
    assert page.state == "idle" and page.recorder is None
    assert "refused" in page.refused and "refused" in page.view.status_label.text()
    dialog = page.open_consent_dialog()
    assert "I, Ana, agree" in dialog.text_edit.toPlainText()
    assert not dialog.agree_button.isEnabled()  # nothing is recorded before the box is ticked
    dialog.agree_box.setChecked(True)
    dialog.agree_button.click()
    qtbot.waitUntil(lambda: page.speaker is not None and page.speaker.consent_in_force, timeout=5_000)
    with opened(project_path) as project:
        [(text, by, given_at)] = project.conn.execute("SELECT consent_text, recorded_by, given_at FROM consents")
    assert text.startswith("I, Ana, agree") and by == page.annotator and given_at
    take = record_take(page, qtbot)
    assert take.passed


@pytest.mark.slow
def test_record_stop_shows_the_checks_and_stores_the_take(page, qtbot, consented, project_path):
    reload_consented(page, qtbot)
    assert page.view.device_box.currentText() == "Fake microphone (default)"
    take = record_take(page, qtbot)
    assert take.passed and take.take == 1
    text = page.view.checks_label.text()
    assert text.count("✓ pass") == 4 and "trimmed" in text and "SNR" in text
    assert "passed every check" in page.view.state_label.text()
    assert page.view.meter.updates > 0
    assert page.view.meter.rms_db == page.view.meter.peak_db == METER_FLOOR_DB  # at rest once the take stopped
    assert stored_takes(project_path) == [(page.prompts[0].key, 1, 1)]
    with opened(project_path) as project:
        assert project.audio.has(take.sha256, "flac")
    qtbot.waitUntil(lambda: "1 / 3 prompts done" in page.view.progress_label.text(), timeout=5_000)
    before = page.play_requested_at
    press(page, qtbot, Qt.Key.Key_Space)
    assert page.play_requested_at is not None and page.play_requested_at != before


@pytest.mark.slow
def test_a_failed_take_is_retaken_with_backspace(page, qtbot, consented, project_path):
    reload_consented(page, qtbot)
    page.stream_factory = fake(0.2)
    short = record_take(page, qtbot)
    assert not short.passed
    assert "✗ fail" in page.view.checks_label.text() and "only 0.2" in page.view.checks_label.text()
    assert "Backspace" in page.view.state_label.text()
    page.stream_factory = fake(1.2)
    press(page, qtbot, Qt.Key.Key_Backspace)  # records the prompt again
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    assert page.recorder._stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 2, timeout=5_000)
    key = page.prompts[0].key
    assert stored_takes(project_path) == [(key, 1, 0), (key, 2, 1)]
    assert page.current_take.take == 2 and "Take 2" in page.view.status_label.text()


@pytest.mark.slow
def test_backspace_while_recording_starts_the_take_again(page, qtbot, consented, project_path):
    reload_consented(page, qtbot)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    first = page.recorder
    press(page, qtbot, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: page.state == "recording" and page.recorder is not first, timeout=5_000)
    assert not first.recording and stored_takes(project_path) == []  # the abandoned take was never stored
    assert page.recorder._stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)


@pytest.mark.slow
def test_arrows_move_through_the_script_and_keys_wait_while_recording(page, qtbot, consented):
    reload_consented(page, qtbot)
    assert page.view.prompt_label.text() == "Question number 0?"
    press(page, qtbot, Qt.Key.Key_Right)
    assert page.prompt_index == 1 and "Prompt 2 of 3" in page.view.position_label.text()
    assert "Not recorded yet" in page.view.state_label.text()
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    press(page, qtbot, Qt.Key.Key_Left)
    assert page.prompt_index == 1 and "Stop recording first" in page.view.status_label.text()
    assert page.recorder._stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and bool(page.takes), timeout=5_000)
    assert page.takes[-1].prompt_key == page.prompts[1].key
    press(page, qtbot, Qt.Key.Key_Left)
    assert page.prompt_index == 0


@pytest.mark.slow
def test_a_speaker_is_added_from_the_dialog(page, qtbot, project_path):
    dialog = page.open_add_dialog()
    dialog.name_edit.setText("Kim")
    dialog.language_box.setCurrentText("ko")
    dialog.gender_edit.setText("non-binary")
    dialog.buttons.accepted.emit()
    qtbot.waitUntil(lambda: page.speaker is not None and page.speaker.name == "Kim", timeout=5_000)
    assert page.speaker.gender_group == "other" and page.prompts == []
    assert "No prompts" in page.view.position_label.text()
    page.use_reading_text("First line to read.\nSecond line.")
    qtbot.waitUntil(lambda: len(page.prompts) == 2, timeout=5_000)
    assert page.view.prompt_label.text() == "First line to read."
    duplicate = page.open_add_dialog()
    duplicate.name_edit.setText("Kim")
    duplicate.buttons.accepted.emit()
    qtbot.waitUntil(lambda: "already exists" in duplicate.error_label.text(), timeout=5_000)


@pytest.mark.slow
def test_cloning_from_the_best_take_then_withdrawing_deletes_it(page, qtbot, consented, project_path):
    reload_consented(page, qtbot)
    take = record_take(page, qtbot)
    page.clone_backend_factory = StubClone
    page.view.clone_button.click()
    qtbot.waitUntil(lambda: page.last_clone is not None, timeout=10_000)
    assert page.last_clone.take_id == take.id and "Cloned voice of Ana ready" in page.view.status_label.text()
    qtbot.waitUntil(lambda: page.play_requested_at is not None, timeout=5_000)
    page.withdraw("Ana")
    qtbot.waitUntil(lambda: "withdrawn" in page.view.status_label.text(), timeout=5_000)
    qtbot.waitUntil(
        lambda: page.speaker is not None and not page.speaker.consent_in_force and not page.takes, timeout=5_000
    )
    with opened(project_path) as project:
        assert project.conn.execute("SELECT count(*) FROM cloned_voices").fetchone()[0] == 0
        assert not project.audio.has(take.sha256, "flac")
    press(page, qtbot, "r")
    assert page.state == "idle" and "refused" in page.refused


@pytest.mark.slow
def test_the_real_clone_backend_missing_is_shown_as_a_dialog(page, qtbot, consented, dialogs):
    pytest.importorskip("numpy")
    try:
        import chatterbox  # noqa: F401

        pytest.skip("chatterbox is installed here")
    except ImportError:
        pass
    reload_consented(page, qtbot)
    record_take(page, qtbot)
    job = page.create_clone()
    qtbot.waitSignal(job.finished, timeout=10_000).wait()
    assert job.status == "failed"
    assert any("spokenbench-studio[cloning]" in d.text for d in dialogs)
    assert "No cloned voice" in page.view.status_label.text()


@pytest.mark.slow
def test_without_portaudio_the_page_says_what_to_install_and_the_rest_works(qtbot, open_session, project_path):
    def no_portaudio():
        raise RecordingUnavailable("Recording needs the PortAudio library: apt-get install libportaudio2")

    page = make_page(qtbot, open_session, project_path, lister=no_portaudio)
    qtbot.waitUntil(lambda: page.view.banner.isVisible(), timeout=5_000)
    assert "libportaudio2" in page.view.banner.text()
    assert not page.view.buttons["record"].isEnabled()
    dialog = page.open_consent_dialog()
    dialog.agree_box.setChecked(True)
    dialog.agree_button.click()
    qtbot.waitUntil(lambda: page.speaker is not None and page.speaker.consent_in_force, timeout=5_000)
    press(page, qtbot, "r")
    assert page.state == "idle" and "not available" in page.refused


@pytest.mark.slow
def test_no_input_device_is_explained(qtbot, open_session, project_path):
    page = make_page(qtbot, open_session, project_path, lister=lambda: [])
    qtbot.waitUntil(lambda: page.view.banner.isVisible(), timeout=5_000)
    assert "No audio input device" in page.view.banner.text()


@pytest.mark.slow
def test_create_cloned_voice_waits_for_a_passing_take(page, qtbot, consented):
    reload_consented(page, qtbot)
    button = page.view.clone_button
    assert not button.isEnabled() and "passed every quality check" in button.toolTip()
    page.stream_factory = fake(0.2)
    assert not record_take(page, qtbot).passed
    assert not button.isEnabled()  # a failed take is not enough
    page.stream_factory = fake(1.2)
    press(page, qtbot, Qt.Key.Key_Right)
    assert record_take(page, qtbot).passed
    assert button.isEnabled() and "best passing take" in button.toolTip()


def page_in_window(qtbot, open_session, path, lister=lambda: [FAKE_DEVICE]):
    """The page in a stand-in window (`status_window`) on the project, its input devices found and its speaker's
    consent read; a start or stop the sound server holds is said after 0.3 s (STALL_S, shortened)."""
    window = status_window()
    page = SpeakersPage(window)
    page.device_lister = lister
    page.held_watch.setInterval(300)
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(path))
    qtbot.waitUntil(lambda: page.speaker is not None and bool(page.devices), timeout=5_000)
    reload_consented(page, qtbot)
    return window, page


def status_window():
    """What the page needs of the main window: the status bar's audio label and the playback answer."""
    from types import SimpleNamespace

    from PySide6.QtWidgets import QLabel

    return SimpleNamespace(
        audio_label=QLabel("Audio: recording only"),
        audio_message=None,
        recording_message=None,
        annotator="tester",
        settings=None,
    )


@pytest.mark.slow
def test_the_status_bar_and_the_banner_give_one_answer_and_rescan_finds_a_new_microphone(
    qtbot, open_session, project_path, monkeypatch
):
    from spokenbench.app import audio
    from spokenbench.core.recording import recorder

    monkeypatch.setattr(recorder, "input_devices", lambda: [])  # PortAudio is there, no input device is
    at_start = audio.recording_problem()
    assert at_start is not None and at_start.startswith("No audio input device")
    assert audio.audio_status(None, at_start)[0] == "Audio: playback only"

    connected: list = []
    window = status_window()
    page = SpeakersPage(window)
    page.device_lister = lambda: list(connected)
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(project_path))
    qtbot.waitUntil(lambda: page.view.banner.isVisible(), timeout=5_000)
    assert page.view.banner.text() == at_start  # the same check, the same words
    assert window.audio_label.text() == "Audio: playback only" and at_start in window.audio_label.toolTip()
    assert window.recording_message == at_start and not page.view.buttons["record"].isEnabled()

    connected.append(FAKE_DEVICE)  # a microphone is plugged in while the project stays open
    page.view.rescan_button.click()
    qtbot.waitUntil(lambda: not page.view.banner.isVisible(), timeout=5_000)
    assert page.view.device_box.currentText() == "Fake microphone (default)"
    assert page.view.buttons["record"].isEnabled() and page.recording_problem is None
    assert window.audio_label.text() == "Audio: ready" and window.recording_message is None

    connected.clear()  # unplugged: showing the page again looks again
    page.hide()
    page.show()
    qtbot.waitUntil(lambda: page.view.banner.isVisible(), timeout=5_000)
    assert page.devices == [] and window.audio_label.text() == "Audio: playback only"


@pytest.mark.slow
def test_a_chosen_input_device_is_the_one_recorded_from(qtbot, open_session, project_path, consented):
    usb = InputDevice(7, "USB headset", 1, RATE, False)
    page = make_page(qtbot, open_session, project_path, lister=lambda: [FAKE_DEVICE, usb])
    qtbot.waitUntil(lambda: len(page.devices) == 2, timeout=5_000)
    reload_consented(page, qtbot)
    opened_with = []
    streams = fake(1.2)

    def stream_factory(**kwargs):
        opened_with.append(kwargs["device"])
        return streams(**kwargs)

    page.stream_factory = stream_factory
    assert page.view.device_box.currentText() == "Fake microphone (default)"
    page.view.device_box.setCurrentIndex(1)
    assert page.device is usb
    record_take(page, qtbot)
    assert opened_with == [7]
    with opened(project_path) as project:
        assert project.conn.execute("SELECT device FROM recordings").fetchall()[-1][0] == "USB headset"
    page.find_devices()  # a rescan keeps the choice
    qtbot.waitUntil(lambda: not page.last_scan.is_running, timeout=5_000)
    assert page.device is not None and page.device.name == "USB headset"


@pytest.mark.slow
def test_a_take_played_while_the_sound_output_fails_is_followed_by_the_window(
    qtbot, open_session, project_path, consented
):
    """The page has no line for playback: the window follows the request and says a failure in its status bar."""

    def no_output(device, rate):
        raise OSError("Error opening OutputStream: Illegal combination of I/O devices [PaErrorCode -9993]")

    player, followed = ClipPlayer(stream_factory=no_output), []
    page = SpeakersPage(SimpleNamespace(player=player, follow_play=lambda request, what: followed.append(request)))
    page.device_lister = lambda: [FAKE_DEVICE]
    page.stream_factory = fake(1.2)
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(project_path))
    qtbot.waitUntil(
        lambda: page.speaker is not None and page.speaker.consent_in_force and bool(page.devices), timeout=5_000
    )
    record_take(page, qtbot)
    press(page, qtbot, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: bool(followed) and player.state.request == followed[-1], timeout=5_000)
    qtbot.waitUntil(lambda: player.state.error is not None, timeout=5_000)
    assert player.state.output_failed and player.state.error.startswith("Cannot play the take: the sound output")
    player.close()
    assert player.join(2.0)


def test_a_speaker_added_after_add_speaker_was_opened_again_is_listed_and_chosen(page, qtbot, monkeypatch):
    """Add speaker submitted, Esc while it is stored, Add speaker again: the first dialog, replaced, was deleted
    before its write delivered ("AddSpeakerDialog already deleted" in an Unexpected error box, Kim not chosen)."""
    import time

    from PySide6.QtWidgets import QMessageBox

    import spokenbench.app.speakers_page as speakers_module

    real_add = speakers_module.add_speaker
    monkeypatch.setattr(speakers_module, "add_speaker", lambda *args: (time.sleep(1.0), real_add(*args))[1])
    dialog = page.open_add_dialog()
    dialog.name_edit.setText("Kim")
    dialog.language_box.setCurrentText("ko")
    dialog.buttons.accepted.emit()
    dialog.reject()
    page.open_add_dialog()
    qtbot.waitUntil(lambda: page.speaker is not None and page.speaker.name == "Kim", timeout=10_000)
    assert [box.text() for box in page.findChildren(QMessageBox)] == []


def test_closing_the_page_mid_recording_never_waits_for_the_stream(page, qtbot, consented):
    """A sound server that does not answer holds a stream's stop: the page closed on the UI thread (Ctrl+Q, another
    project) froze the window and kept the app from ending, measured with PulseAudio stopped."""
    import threading

    released = threading.Event()

    reload_consented(page, qtbot)
    made = fake(1.2)
    page.stream_factory = held_stops(made, released)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    recorder = page.recorder
    started = time.perf_counter()
    page.set_session(None)
    assert time.perf_counter() - started < 0.5 and page.state == "idle"
    released.set()
    qtbot.waitUntil(lambda: not recorder.recording, timeout=5_000)


def test_a_recording_start_the_sound_server_holds_is_said_on_the_page_and_in_the_status_bar(
    qtbot, open_session, project_path, consented
):
    """Before, the page said "Starting…" for good and the status bar "Audio: ready"."""
    import threading

    from spokenbench.app import audio

    server_answers = threading.Event()
    window, page = page_in_window(qtbot, open_session, project_path)
    made = fake(1.2)

    def held(**options):
        server_answers.wait(10)
        return made(**options)

    page.stream_factory = held
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: "does not answer" in page.view.status_label.text(), timeout=5_000)
    assert page.state == "starting" and window.audio_label.text() == "Audio: not answering"
    assert window.recording_message == audio.NOT_ANSWERING
    server_answers.set()
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    assert window.recording_message is None and window.audio_label.text() == "Audio: ready"
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle", timeout=5_000)


def newest_checks(path) -> dict[str, dict]:
    """The newest stored take's checks, by name."""
    take = recorded_takes(path)[-1]
    return {name: check for name, check in take.items() if isinstance(check, dict)}


def started_on(page, qtbot, **stream) -> None:
    """R pressed on a real-time fake input with `stream`'s options (a late start, a stop, silence)."""
    page.stream_factory = fake_stream_factory(take_signal(1.0), then_silence=False, realtime=True, **stream)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)


@pytest.mark.slow
def test_recording_shows_only_once_the_inputs_first_sound_comes(page, qtbot, consented, project_path):
    """An input that wakes late (PulseAudio's idle null sink: its first sound 1.7-2.0 s after the start, measured;
    a suspended USB microphone) loses what is said meanwhile. Before, "● Recording 0.0 s" showed at once, and a
    speaker who read a moment after it lost the first words of every take."""
    reload_consented(page, qtbot)
    started = time.monotonic()
    started_on(page, qtbot, start_delay_s=1.5, noise_dbfs=-75)
    assert page.view.state_label.text() == WAITING_TEXT and page.heartbeat_state == "recording-waiting"
    assert page.view.status_label.text() == ""  # not a problem yet: inputs take a moment to wake
    qtbot.waitUntil(lambda: page.view.state_label.text().startswith("● Recording"), timeout=5_000)
    assert time.monotonic() - started >= 1.45 and page.heartbeat_state == "recording-sound"
    qtbot.wait(400)
    shown = float(page.view.state_label.text().split()[2])  # the take's seconds: the sound received
    assert shown == pytest.approx(page.recorder.recorded_s, abs=0.1) and shown < time.monotonic() - started - 0.5
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)


@pytest.mark.slow
def test_recording_shows_only_once_an_input_waking_with_zeros_hears(page, qtbot, consented, project_path, dialogs):
    """An input that wakes with exact zeros (WASAPI's first buffers, a USB microphone leaving its power saving, a
    Bluetooth headset changing profile) is deaf until its first sound. Before, "● Recording" showed at its first
    block of zeros, a speaker who read then lost the first words, and a take of those zeros was kept."""
    reload_consented(page, qtbot)
    started_on(page, qtbot, zeros_s=1.3, noise_dbfs=-75)  # R lands well within its zeros
    recorder = page.recorder
    qtbot.waitUntil(lambda: recorder.first_block_at is not None, timeout=5_000)
    qtbot.wait(150)  # a few meter ticks with zeros coming
    assert page.view.state_label.text() == WAITING_TEXT and page.heartbeat_state == "recording-waiting"
    assert page.take_in_hand is None  # nothing to lose yet: a quit now asks nothing
    press(page, qtbot, "r")  # R while it is still deaf: nothing is kept, and the page says why
    assert page.state == "idle" and stored_takes(project_path) == [] and dialogs == []
    assert page.view.status_label.text().startswith('Nothing was recorded: no sound had come from the input "Fake')
    qtbot.waitUntil(lambda: not recorder.recording, timeout=5_000)
    started = time.monotonic()
    started_on(page, qtbot, zeros_s=0.8, noise_dbfs=-75)
    qtbot.waitUntil(lambda: page.view.state_label.text().startswith("● Recording"), timeout=5_000)
    assert time.monotonic() - started >= 0.75 and page.heartbeat_state == "recording-sound"
    assert page.take_in_hand == "recording" and page.view.status_label.text() == ""
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)


@pytest.mark.slow
def test_an_input_that_stops_mid_take_is_said_and_the_take_fails_its_input_check(page, qtbot, consented, project_path):
    """A microphone pulled out, or the sound server gone, mid-take: no block comes any more. Before, the clock
    went on counting, the meter held, and the take was saved cut short without a word."""
    reload_consented(page, qtbot)
    started_on(page, qtbot, stop_after_s=0.8)
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-stalled", timeout=5_000)
    assert page.view.state_label.text().startswith("● Input stopped at 0.8 s")
    assert re.match(
        r'No sound has come from the input "Fake microphone" for \d s: a microphone disconnected',
        page.view.status_label.text(),
    )
    assert page.view.meter.rms_db == METER_FLOOR_DB  # the meter does not hold the last level
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)
    checks = newest_checks(project_path)
    assert not page.takes[-1].passed and not checks["input"]["passed"]
    assert checks["input"]["value"] == pytest.approx(0.8, abs=0.05)
    assert "stopped sending sound 0.8 s into the take" in page.view.checks_label.text()
    assert checks["silence"]["passed"]  # the sentence reaching the end is the input's doing, not the speaker's
    assert page.view.status_label.text().startswith("Take 1 saved")  # the input's line went with the take


@pytest.mark.slow
def test_after_a_take_whose_input_stopped_the_page_and_status_bar_look_for_the_input_again(
    qtbot, open_session, project_path, consented
):
    """Before, the status bar said "Audio: ready" after the sound server had gone mid-take, until the page was
    shown again."""
    connected = [FAKE_DEVICE]
    window, page = page_in_window(qtbot, open_session, project_path, lister=lambda: list(connected))
    started_on(page, qtbot, stop_after_s=0.5)
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-stalled", timeout=5_000)
    connected.clear()  # the microphone was pulled out, or the server is gone: PortAudio lists no input now
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.view.banner.isVisible(), timeout=5_000)
    assert page.view.banner.text().startswith("No audio input device") and len(page.takes) == 1
    assert window.audio_label.text() == "Audio: playback only" and not page.view.buttons["record"].isEnabled()
    assert page.heartbeat_state == "unavailable"


@pytest.mark.slow
def test_a_muted_input_is_said_while_recording_and_in_the_takes_check(page, qtbot, consented, project_path):
    """A muted microphone (a mute key, `pactl set-source-mute`) sends exact zeros. Before, the page recorded
    silence without a word and the take said only "no speech found … check the microphone"."""
    reload_consented(page, qtbot)
    page.stream_factory = fake_stream_factory(None, realtime=True, noise_dbfs=None)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-silent", timeout=5_000)
    assert "sends no sound at all (every sample is exactly zero)" in page.view.status_label.text()
    assert page.view.status_label.text().endswith(NOISE_FILTER)  # zeros since R: a noise filter's pause, maybe
    assert page.view.state_label.text().startswith("● Recording")  # it is recording: what it gets is zeros
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)
    assert "every sample is exactly zero" in newest_checks(project_path)["speech_duration"]["reason"]
    page.stream_factory = fake_stream_factory(take_signal(0.3)[6_400:11_200], realtime=True, noise_dbfs=None)
    press(page, qtbot, "r")  # sound, then zeros: muted mid-take, no noise filter's pause
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-silent", timeout=5_000)
    assert "exactly zero" in page.view.status_label.text() and NOISE_FILTER not in page.view.status_label.text()


@pytest.mark.slow
def test_r_before_the_input_sent_anything_keeps_no_take_and_says_why(page, qtbot, consented, project_path, dialogs):
    """On a prompt with a take: R, then R before the input's first block. Nothing is kept, no dialog opens (before:
    a warning box), the prompt's take stays shown, and the page takes R again at once."""
    reload_consented(page, qtbot)
    first = record_take(page, qtbot)
    started_on(page, qtbot, start_delay_s=5.0)
    recorder = page.recorder
    press(page, qtbot, "r")
    assert page.state == "idle"  # the stream is closed on a thread of its own: the page never waits for it
    assert page.view.status_label.text().startswith('Nothing was recorded: no sound had come from the input "Fake')
    assert page.view.state_label.text().startswith(f"Take {first.take}: ")  # the prompt's take, still shown
    qtbot.waitUntil(lambda: not recorder.recording, timeout=5_000)
    assert stored_takes(project_path) == [(page.prompts[0].key, 1, 1)] and dialogs == []


@pytest.mark.slow
def test_a_take_checked_while_its_project_closed_is_not_saved_into_the_next(
    page, qtbot, consented, project_path, open_session, tmp_path
):
    """Its speaker belongs to the closed project: before, the take landed in the other project's recordings."""
    import threading

    released = threading.Event()
    reload_consented(page, qtbot)
    made = fake(1.2)

    page.stream_factory = held_stops(made, released)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording" and page.recorder.first_block_at is not None, timeout=5_000)
    press(page, qtbot, "r")  # checking the take: its stop is held
    other = tmp_path / "other"  # a copy: its speaker 1 and items could take the first project's take
    other.mkdir()
    with sqlite3.connect(project_path / "project.sqlite") as source, sqlite3.connect(other / "project.sqlite") as copy:
        source.backup(copy)
    page.set_session(open_session(other))
    qtbot.waitUntil(lambda: page.speaker is not None and page.session.path == other, timeout=5_000)
    released.set()
    qtbot.wait(1_000)
    assert stored_takes(other) == [] and stored_takes(project_path) == []


@pytest.mark.slow
def test_a_warning_about_the_input_goes_with_its_take_and_never_covers_another_line(page, qtbot, consented):
    """Muted, then Backspace on a live input: the muted line goes (before, it stayed all through the next take);
    a line written meanwhile (the arrows refused while recording) is not written over as the seconds change."""
    reload_consented(page, qtbot)
    page.stream_factory = fake_stream_factory(None, realtime=True, noise_dbfs=None)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-silent", timeout=5_000)
    page.stream_factory = fake_stream_factory(take_signal(1.0), realtime=True, noise_dbfs=-75)
    press(page, qtbot, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-sound", timeout=5_000)
    assert page.view.status_label.text() == ""
    page.stream_factory = fake_stream_factory(take_signal(1.0), realtime=True, start_delay_s=8.0)
    press(page, qtbot, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-waiting", timeout=5_000)
    page.recording_since -= 5.0  # as if it had waited STALL_S: the line says so, with its seconds
    qtbot.waitUntil(lambda: page.view.status_label.text().startswith("No sound has come"), timeout=5_000)
    press(page, qtbot, Qt.Key.Key_Right)
    assert page.view.status_label.text() == "Stop recording first (R)"
    qtbot.wait(1_200)  # the waiting line's seconds changed meanwhile
    assert page.view.status_label.text() == "Stop recording first (R)"


@pytest.mark.slow
def test_a_take_whose_stop_the_sound_server_holds_is_saved_without_it_and_that_is_said_until_it_answers(
    qtbot, open_session, project_path, consented, monkeypatch
):
    """A server that hangs as R stops the take holds the stream's stop. Before, the page said "Checking the
    take…" until the server answered, and a quit meanwhile lost the take; now it is saved after STOP_WAIT_S, the
    line and the status bar say the input did not answer, and both clear once the stream has closed."""
    import threading

    from spokenbench.app import audio
    from spokenbench.core.recording import recorder as recorder_module

    monkeypatch.setattr(recorder_module, "STOP_WAIT_S", 0.5)
    server_answers = threading.Event()
    window, page = page_in_window(qtbot, open_session, project_path)
    window.audio_label.setText("Audio: ready")
    made = fake(1.2)

    page.stream_factory = held_stops(made, server_answers)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-sound", timeout=5_000)
    assert page.recorder._stream.stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)  # the server still hung
    line = page.view.status_label.text()
    assert page.takes[0].passed and line.startswith("Take 1 saved") and "did not answer its stop" in line
    assert window.audio_label.text() == "Audio: not answering" and window.recording_message == audio.NOT_ANSWERING
    server_answers.set()
    qtbot.waitUntil(lambda: window.recording_message is None, timeout=5_000)
    assert window.audio_label.text() == "Audio: ready" and page.view.status_label.text() == line.split(". ")[0]


# -- with the keys alone and a screen reader ---------------------------------------------------------------------


def focused_page(qtbot, open_session, path, **options):
    """The page active, as in a window a person types into (focus moves only in an active window)."""
    page = make_page(qtbot, open_session, path, **options)
    page.activateWindow()
    qtbot.waitUntil(page.isActiveWindow, timeout=5_000)
    qtbot.waitUntil(lambda: bool(page.devices), timeout=5_000)
    return page


def said(page) -> str:
    """What a screen reader reads of the recorder now: its name, changed once per action (SpokenFocus)."""
    return page.view.accessibleName()


def test_the_recorder_says_where_it_is_and_what_each_key_did(qtbot, open_session, project_path, consented):
    """Orca said nothing on the recorder: it had no name, and its keys changed only labels. Now coming to it says
    the speaker, the prompt and its take, then its keys; R, a take's checks, ← → and the ends are said."""
    page = focused_page(qtbot, open_session, project_path)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    assert said(page).startswith("Ana, en, british, consent given. Prompt 1 of 3")
    assert "Question number 0?" in said(page) and "Not recorded yet" in said(page)
    assert "R records and stops" in page.view.accessibleDescription()
    assert "Wear headphones" in page.view.accessibleDescription()  # its voice would be recorded into the take
    press(page, qtbot, "r")
    assert said(page) == "Starting the microphone."
    qtbot.waitUntil(lambda: said(page) == "Recording.", timeout=5_000)
    assert page.recorder._stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: said(page).startswith("Take 1 saved ("), timeout=5_000)
    assert said(page).endswith("FLAC). Passed every check.")
    press(page, qtbot, Qt.Key.Key_Right)
    assert said(page).startswith("Ana, en, british, consent given. Prompt 2 of 3") and "Question number 1?" in said(
        page
    )
    press(page, qtbot, Qt.Key.Key_Left)
    assert "Take 1: passed every check" in said(page) and "1 / 3 prompts done" in said(page)
    press(page, qtbot, Qt.Key.Key_Left)
    assert said(page) == "This is the first prompt."
    page.stream_factory = fake(0.2)
    press(page, qtbot, Qt.Key.Key_Backspace)  # records it again: too short, each failure is said with its reason
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    assert page.recorder._stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: said(page).startswith("Take 2 saved ("), timeout=5_000)
    assert "Failed 1 of 4 checks: speech duration: only 0.2" in said(page) and "Backspace records it again" in said(
        page
    )


def test_a_refused_key_and_an_input_that_stops_mid_take_are_said(qtbot, open_session, project_path):
    """Without consent, R is refused aloud. An input that stops mid-take is said once, with what to do, not again
    as its seconds count (each name change is read out, cutting off the line before)."""
    page = focused_page(qtbot, open_session, project_path)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    assert "no consent: recording refused" in said(page)
    press(page, qtbot, "r")
    assert said(page).startswith("Recording refused: Ana has not given consent")
    with opened(project_path) as project:
        give_consent(project, "Ana", "I agree.", "tester")
    reload_consented(page, qtbot)
    names = []
    started_on(page, qtbot, stop_after_s=0.8)
    qtbot.waitUntil(lambda: page.heartbeat_state == "recording-stalled", timeout=5_000)
    named = []
    set_name = page.view.setAccessibleName
    page.view.setAccessibleName = lambda name: (named.append(name), set_name(name))  # every name set, not only seen
    for _ in range(30):  # 1.5 s of the 40 Hz meter's ticks, the warning's seconds counting
        names.append(said(page))
        qtbot.wait(50)
    assert len(set(names)) == 1 and names[0].startswith("Input stopped. No sound has come from the input")
    assert named == []  # said once, as the input stopped: each name set is read out again


def test_tab_and_alt_letters_reach_the_input_and_the_script_buttons(
    qtbot, open_session, project_path, consented, monkeypatch, dialogs
):
    """The input, Rescan devices, the reading list's and the project's buttons and Create cloned voice took no
    focus: a keyboard user could not choose a microphone or clone a voice. Tab reaches them after the recorder,
    each has an Alt+letter, and the input is named by its label."""
    page = focused_page(qtbot, open_session, project_path)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    view = page.view
    view.clone_button.setEnabled(True)  # as once a take has passed
    reached = []
    for _ in range(5):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        reached.append(QApplication.focusWidget())
    assert reached == [
        view.device_box,
        view.rescan_button,
        view.reading_list_button,
        view.project_button,
        view.clone_button,
    ]
    assert view.input_label.buddy() is view.device_box  # Orca: "Input combo box. Fake microphone (default)"
    view.setFocus()
    qtbot.keyClick(view, "i", Qt.KeyboardModifier.AltModifier)
    assert view.device_box.hasFocus()
    import spokenbench.app.speakers_page as speakers_module

    asked = []
    monkeypatch.setattr(speakers_module.QFileDialog, "getOpenFileName", lambda *args: ("", ""))  # Esc at once
    page.clone_backend_factory = StubClone  # no passing take yet: its refusal is a dialog, recorded
    view.reading_list_requested.connect(lambda: asked.append("reading list"))
    view.clone_requested.connect(lambda: asked.append("clone"))
    view.setFocus()
    qtbot.waitUntil(view.hasFocus, timeout=5_000)
    qtbot.keyClick(view, "l", Qt.KeyboardModifier.AltModifier)
    qtbot.keyClick(view, "o", Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: asked == ["reading list", "clone"], timeout=5_000)  # a button's letter clicks it
    press(page, qtbot, Qt.Key.Key_Right)
    assert page.prompt_index == 1
    qtbot.keyClick(view, "q", Qt.KeyboardModifier.AltModifier)  # the project's questions again, from the first
    qtbot.waitUntil(lambda: page.prompt_index == 0 and "Prompt 1 of 3" in said(page), timeout=5_000)
    assert view.hasFocus()


def test_rescan_by_the_keys_says_the_inputs_found_and_keeps_them_with_the_recorder(qtbot, open_session, project_path):
    """Space on Rescan devices disabled the button, which passed the focus on to Load reading list (said as if
    chosen), and nothing said what was found. Now the recorder takes the keys while the scan runs and says the
    inputs found, or why there are none; Alt+D does the same from the recorder."""
    connected = [FAKE_DEVICE]
    page = focused_page(qtbot, open_session, project_path, lister=lambda: list(connected))
    view = page.view
    view.rescan_button.setFocus()
    qtbot.waitUntil(view.rescan_button.hasFocus, timeout=5_000)
    qtbot.keyClick(view.rescan_button, Qt.Key.Key_Space)
    assert view.hasFocus() and said(page) == "Looking for input devices."
    qtbot.waitUntil(lambda: said(page) == "1 input found. Recording from Fake microphone (default).", timeout=5_000)
    assert view.hasFocus()
    connected.clear()
    view.device_box.setFocus()  # Alt+D from the input's box: there R would choose a device, not record
    qtbot.waitUntil(view.device_box.hasFocus, timeout=5_000)
    qtbot.keyClick(view.device_box, "d", Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: said(page).startswith("No audio input device"), timeout=5_000)
    assert view.hasFocus() and view.banner.isVisible()


def test_walking_the_speaker_list_keeps_the_keys_there_and_enter_gives_them_to_the_recorder(
    qtbot, open_session, project_path
):
    """Each speaker the arrows chose took the keys away to the recorder once read, so ↓ could not go past the next
    speaker. Now the list keeps them; Enter gives them to the recorder, which says the speaker chosen."""
    with opened(project_path) as project:
        add_speaker(project, "Bo", "en", "american", "man")
        add_speaker(project, "Cy", "en", "indian", None)
    page = focused_page(qtbot, open_session, project_path)
    qtbot.waitUntil(lambda: page.list_view.table.rowCount() == 3, timeout=5_000)
    table = page.list_view.table
    table.setFocus()
    qtbot.waitUntil(table.hasFocus, timeout=5_000)
    for name in ("Bo", "Cy"):
        qtbot.keyClick(table, Qt.Key.Key_Down)
        qtbot.waitUntil(lambda name=name: page.speaker is not None and page.speaker.name == name, timeout=5_000)
        qtbot.wait(50)
        assert table.hasFocus()
    qtbot.keyClick(table, Qt.Key.Key_Return)
    assert page.view.hasFocus() and said(page).startswith("Cy, en, indian")


def test_the_page_s_keys_go_to_the_recorder_once_its_speaker_is_read(qtbot, open_session, project_path):
    """The list keeps the keys while it is walked (above); a page given them before its speaker was read (Ctrl+5
    as the project opens) still hands them to the recorder once it is read, so R records at once."""
    page = SpeakersPage()
    page.device_lister = lambda: [FAKE_DEVICE]
    qtbot.addWidget(page)
    page.show()
    page.activateWindow()
    qtbot.waitUntil(page.isActiveWindow, timeout=5_000)
    page.set_session(open_session(project_path))
    page.take_focus()  # as the window does on Ctrl+5, before the speaker is read
    assert page.list_view.table.hasFocus()
    qtbot.waitUntil(lambda: page.speaker is not None and page.view.hasFocus(), timeout=5_000)


def test_withdrawing_consent_asks_with_cancel_as_the_default(qtbot, open_session, project_path, consented, monkeypatch):
    """Enter on Withdraw consent…, then Enter in its question, deleted the speaker's takes and voices: Yes was the
    default. Now Cancel is; W (the letter that opened it with Alt) and Return delete nothing; the button that
    deletes says so, and only it withdraws."""
    from PySide6.QtWidgets import QMessageBox

    page = focused_page(qtbot, open_session, project_path)
    reload_consented(page, qtbot)
    withdrawn = []
    monkeypatch.setattr(page, "withdraw", withdrawn.append)
    for keys in (("w",), ("w", Qt.KeyboardModifier.AltModifier), (Qt.Key.Key_Return,)):
        box = page.confirm_withdrawal()
        qtbot.waitExposed(box)
        assert box.defaultButton() is box.escapeButton()
        assert box.standardButton(box.defaultButton()) == QMessageBox.StandardButton.Cancel
        qtbot.keyClick(box, *keys)
        qtbot.wait(300)  # a message box presses a button by its letter 100 ms later (animateClick)
        box.done(0)
        assert withdrawn == [], keys
    box = page.confirm_withdrawal()
    [delete] = [button for button in box.buttons() if button is not box.defaultButton()]
    assert delete.text() == "Withdraw and delete"
    delete.click()
    assert withdrawn == ["Ana"]


def test_r_while_a_take_plays_stops_it_first(qtbot, open_session, project_path, consented):
    """With a loudspeaker, a take still playing as R was pressed was recorded into the next take's start
    (measured on the real bed: 0.8 s of the last take, and the silence check failed)."""
    from spokenbench.core.audio.playback import FakeOutputStream

    player = ClipPlayer(stream_factory=lambda device, rate: FakeOutputStream(device, rate))
    page = SpeakersPage(SimpleNamespace(player=player, follow_play=lambda request, what: None))
    page.device_lister = lambda: [FAKE_DEVICE]
    page.stream_factory = fake(3.0)
    qtbot.addWidget(page)
    page.show()
    page.set_session(open_session(project_path))
    qtbot.waitUntil(lambda: page.speaker is not None and page.speaker.consent_in_force, timeout=5_000)
    qtbot.waitUntil(lambda: bool(page.devices), timeout=5_000)
    try:
        record_take(page, qtbot)
        press(page, qtbot, Qt.Key.Key_Space)
        qtbot.waitUntil(lambda: player.state.playing, timeout=5_000)
        press(page, qtbot, "r")
        qtbot.waitUntil(lambda: not player.state.playing, timeout=2_000)
        assert page.state in ("starting", "recording")
    finally:
        player.close()
        assert player.join(2.0)


def test_the_consent_text_lets_tab_go_on_and_is_named(qtbot, project_path):
    from spokenbench.widgets.recording_view import ConsentDialog

    dialog = ConsentDialog("Ana", "I agree to be recorded.", "tester")
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.activateWindow()
    qtbot.waitUntil(dialog.isActiveWindow, timeout=5_000)
    dialog.text_edit.setFocus()
    qtbot.waitUntil(dialog.text_edit.hasFocus, timeout=5_000)
    qtbot.keyClick(dialog.text_edit, Qt.Key.Key_Tab)
    assert dialog.by_edit.hasFocus() and dialog.text_edit.toPlainText() == "I agree to be recorded."
    assert dialog.text_edit.accessibleName() == "Consent text"


def test_ctrl_5_gives_the_keys_to_the_recorder_and_again_from_its_buttons(
    qtbot, tmp_path, project_path, consented, monkeypatch
):
    """Ctrl+5 pressed on the Speakers page did nothing (the sidebar's row was already chosen), so from a button the
    keys never went back to the recorder but by Shift+Tab."""
    from PySide6.QtCore import QSettings

    from spokenbench.app.main_window import MainWindow

    monkeypatch.setattr(SpeakersPage, "device_lister", staticmethod(lambda: [FAKE_DEVICE]))
    window = MainWindow(audio_message="off", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    try:
        window.open_project(project_path)
        qtbot.waitUntil(lambda: window.session is not None, timeout=10_000)
        qtbot.keyClick(QApplication.focusWidget() or window, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: isinstance(window.page_widgets["speakers"], SpeakersPage), timeout=10_000)
        page = window.page_widgets["speakers"]
        qtbot.waitUntil(lambda: page.speaker is not None and page.view.hasFocus(), timeout=10_000)
        page.view.project_button.setFocus()
        qtbot.waitUntil(page.view.project_button.hasFocus, timeout=5_000)
        qtbot.keyClick(page.view.project_button, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
        assert page.view.hasFocus() and said(page).startswith("Ana, en, british, consent given. Prompt 1 of 3")
        page.view.say("Recording")
        qtbot.keyClick(page.view, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)  # on the recorder: said again
        assert said(page).startswith("Ana, en, british, consent given. Prompt 1 of 3")
    finally:
        window.shutdown()


def test_space_while_recording_plays_nothing_into_the_take(qtbot, open_session, project_path, consented):
    """Space played the prompt's last take while the next was being recorded: from a loudspeaker, into the take."""
    page = focused_page(qtbot, open_session, project_path)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    record_take(page, qtbot)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    before = page.play_requested_at
    press(page, qtbot, Qt.Key.Key_Space)
    assert page.play_requested_at == before and said(page) == "Stop recording first (R)."


def test_a_hidden_page_never_takes_the_keys_when_its_speaker_is_read(qtbot, open_session, project_path):
    """The speaker read while another page is shown (a project opened from the Items page) gave the hidden
    recorder the keys: R then started a take nobody could see."""
    window = QWidget()
    other, page = QLineEdit(window), SpeakersPage()
    page.device_lister = lambda: [FAKE_DEVICE]
    page.setParent(window)
    qtbot.addWidget(window)
    window.show()
    page.hide()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5_000)
    other.setFocus()
    qtbot.waitUntil(other.hasFocus, timeout=5_000)
    page.set_session(open_session(project_path))
    qtbot.waitUntil(lambda: page.speaker is not None, timeout=5_000)
    qtbot.wait(100)
    assert other.hasFocus() and not page.view.hasFocus()


def test_a_line_said_before_the_speaker_is_read_again_is_said_with_it(qtbot, open_session, project_path):
    """Consent recorded (and a withdrawal, a take cut short kept) read the speaker again, whose line then cut the
    outcome off: a screen reader's user heard the recorder's line, not "Consent of Ana recorded"."""
    page = focused_page(qtbot, open_session, project_path)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    with opened(project_path) as project:
        give_consent(project, "Ana", "I agree.", "tester")
    page._consented("Ana")
    qtbot.waitUntil(lambda: page.speaker is not None and page.speaker.consent_in_force, timeout=5_000)
    qtbot.waitUntil(lambda: "consent given" in said(page), timeout=5_000)
    assert said(page).startswith("Consent of Ana recorded: press R to record. Ana, en, british, consent given.")
    page.list_view.table.setFocus()  # Alt+C or Alt+W from the list: the keys went back to it as its dialog closed
    qtbot.waitUntil(page.list_view.table.hasFocus, timeout=5_000)
    page._consented("Ana")
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)  # the recorder, where R records, says it
    assert said(page).startswith("Consent of Ana recorded: press R to record. Ana, en, british, consent given.")


def test_backspace_while_recording_says_the_take_thrown_away_with_the_new_start(
    qtbot, open_session, project_path, consented
):
    """ "Take thrown away" was cut off at once by "Starting the microphone": each name set cuts off the one before."""
    page = focused_page(qtbot, open_session, project_path)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    named = []
    set_name = page.view.setAccessibleName
    page.view.setAccessibleName = lambda name: (named.append(name.strip()), set_name(name))
    press(page, qtbot, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: "Recording." in named, timeout=5_000)
    assert named[: named.index("Recording.")] == ["Take thrown away. Starting the microphone."]


def test_a_speaker_read_as_a_take_begins_leaves_the_take_to_its_speaker(qtbot, open_session, project_path, consented):
    """↓ Enter R in the list: the speaker chosen was read once the take had begun, and the take was then checked
    against the new speaker's prompt and saved as theirs (who may not have consented)."""
    from spokenbench.app.speakers_page import read_speaker_state

    with opened(project_path) as project:
        add_speaker(project, "Bo", "en", "american", "man")
        bo = read_speaker_state(project, "Bo", None)
    page = focused_page(qtbot, open_session, project_path)
    reload_consented(page, qtbot)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording", timeout=5_000)
    page._speaker_loaded(*bo)  # Bo's read, landing now
    assert page.speaker.name == "Ana" and page.list_view.selected_name() == "Ana"
    assert page.recorder._stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)
    with opened(project_path) as project:
        [(owner,)] = project.conn.execute(
            "SELECT speakers.name FROM recordings JOIN speakers ON speakers.id = recordings.speaker_id"
        ).fetchall()
    assert owner == "Ana"


# -- the level in words (L) --------------------------------------------------------------------------------------


def names_set(page) -> list[str]:
    """Every accessible name the recorder is given from now on: each is read out, cutting off the one before."""
    named = []
    set_name = page.view.setAccessibleName
    page.view.setAccessibleName = lambda name: (named.append(name.strip()), set_name(name))
    return named


@pytest.fixture
def quick_check(monkeypatch):
    """A level check of 1 s of voice (3 s in the app), judged after 2 s of sound without one (8 s in the app)."""
    monkeypatch.setattr(speakers_page, "LEVEL_CHECK_S", 1.0)
    monkeypatch.setattr(speakers_page, "LEVEL_VOICE_WAIT_S", 2.0)


def checking_page(qtbot, open_session, project_path):
    page = focused_page(qtbot, open_session, project_path)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    return page


def test_l_before_a_take_checks_the_level_says_it_and_keeps_nothing(qtbot, open_session, project_path, quick_check):
    """A speaker who cannot see the meter heard the level only in a take's checks, after reading it; the meter moved
    only while a take was recorded. L now listens until the voice has been heard for a few seconds, without a take or
    a consent (nothing is kept), and says the level with what to do."""
    page = checking_page(qtbot, open_session, project_path)
    before = sorted(path.relative_to(project_path) for path in project_path.rglob("*"))
    # the room for 1.2 s, then the voice, as a person speaks once the check is said: the seconds count from the voice
    page.stream_factory = fake_stream_factory(
        np.concatenate([np.zeros(int(1.2 * RATE), dtype=np.float32), take_signal(2.0)]), realtime=True, noise_dbfs=-75
    )
    named = names_set(page)
    press(page, qtbot, "l")
    started = time.monotonic()
    assert page.state == "listening" and page.heartbeat_state == "listening"
    assert named == ["Level check: speak as you will read."]
    qtbot.waitUntil(
        lambda: page.view.state_label.text() == "Level check: speak as you will read… — L ends it now", timeout=5_000
    )
    qtbot.waitUntil(lambda: "speak as you will read… 1 s" in page.view.state_label.text(), timeout=5_000)
    qtbot.waitUntil(lambda: page.state == "idle", timeout=5_000)
    assert time.monotonic() - started > 2.4  # 1.6 s of room (0.4 s of it in the take's signal), 1 s of voice
    line = page.view.status_label.text()
    assert line.startswith("Level good: your voice peaked at -") and line.endswith("dB above the room's noise")
    assert named[1:] == [f"{line}."]
    assert page.view.meter.updates > 0 and page.view.meter.peak_db == METER_FLOOR_DB  # it moved, then rested
    assert page.view.state_label.text() == "Not recorded yet: press R and read the prompt"
    assert page.takes == [] and stored_takes(project_path) == []
    after = sorted(path.relative_to(project_path) for path in project_path.rglob("*"))
    assert [path for path in after if path not in before and "spool" in str(path)] == []
    with opened(project_path) as project:
        give_consent(project, "Ana", "I agree.", "tester")
    reload_consented(page, qtbot)
    page.stream_factory = fake(1.0)
    press(page, qtbot, "r")  # the take's level is its own: the check's verdict leaves the line
    assert page.state == "starting" and page.view.status_label.text() == ""


def test_a_take_that_reaches_full_scale_says_too_loud_once_and_l_says_its_last_seconds(
    qtbot, open_session, project_path, consented
):
    """The meter turns red as a take clips; nothing was said until its checks. Now "Too loud" is said once, as it
    first clips, and L says the level of the last 3 seconds."""
    page = focused_page(qtbot, open_session, project_path)
    reload_consented(page, qtbot)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    loud = np.clip(speech(1.5) * 6, -1, 1)
    page.stream_factory = fake_stream_factory(np.concatenate([take_signal(0.1), loud]), realtime=True, noise_dbfs=-75)
    named = names_set(page)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: any("Too loud: clipping." in name for name in named), timeout=5_000)  # maybe with Recording
    qtbot.wait(500)  # more blocks at full scale
    assert sum("Too loud" in name for name in named) == 1, named
    press(page, qtbot, "l")
    assert named[-1].startswith("Level too loud in the last 3 seconds: your voice reached full scale; lower the"), named
    assert page.state == "recording"  # L changed nothing of the take
    assert page.recorder._stream.delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)
    assert not page.takes[-1].passed and "clipped" in page.view.checks_label.text()


def test_r_in_a_level_check_records_once_the_checks_stream_has_closed(qtbot, open_session, project_path, consented):
    """R (or Backspace) during a check ends it and records; the take's stream opens after the check's has closed,
    as an input that takes one stream at a time would refuse the next."""
    page = focused_page(qtbot, open_session, project_path)
    reload_consented(page, qtbot)
    page.view.setFocus()
    qtbot.waitUntil(page.view.hasFocus, timeout=5_000)
    streams = []

    def one_at_a_time(**options):
        assert not any(stream.active for stream in streams), "a second stream opened while the first was open"
        streams.append(fake_stream_factory(take_signal(1.0), realtime=True)(**options))
        return streams[-1]

    page.stream_factory = one_at_a_time
    named = names_set(page)
    press(page, qtbot, "l")
    qtbot.waitUntil(lambda: page.view.meter.updates > 0, timeout=5_000)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "recording" and "Recording." in named, timeout=5_000)
    assert named[1] == "Level check ended. Starting the microphone.", named
    assert len(streams) == 2 and page.recorder._stream is streams[1]
    assert streams[1].delivered_signal.wait(5)
    press(page, qtbot, "r")
    qtbot.waitUntil(lambda: page.state == "idle" and len(page.takes) == 1, timeout=5_000)
    assert page.takes[-1].passed


def test_r_in_a_level_check_without_consent_ends_it_and_says_why_nothing_records(qtbot, open_session, project_path):
    """A check needs no consent; a take does. R during a check from a speaker without one left "Level check: speak
    as you will read… 2 s" on the screen, the meter frozen, and said nothing of the check's end."""
    page = checking_page(qtbot, open_session, project_path)
    page.stream_factory = fake_stream_factory(take_signal(2.0), realtime=True, noise_dbfs=-75)
    press(page, qtbot, "l")
    qtbot.waitUntil(lambda: page.view.meter.updates > 0, timeout=5_000)
    press(page, qtbot, "r")
    assert page.state == "idle" and page.recorder is None
    assert said(page).startswith("Recording refused: Ana has not given consent")
    assert page.view.state_label.text() == "Not recorded yet: press R and read the prompt"
    assert page.view.meter.peak_db == METER_FLOOR_DB and not page.meter_timer.isActive()


@pytest.mark.parametrize(
    ("stream", "stall_s", "said"),
    [
        (dict(start_delay_s=30.0), 1.0, 'Level not checked: no sound came from the input "Fake microphone"; check'),
        (dict(noise_dbfs=None), None, "No sound at all: every sample was exactly zero, so the input is muted"),
        (dict(stop_after_s=0.3), None, 'Level not checked: the input "Fake microphone" stopped sending sound (a micro'),
    ],
    ids=["never-wakes", "muted", "stops"],
)
def test_an_input_that_never_wakes_sends_only_zeros_or_stops_fails_the_check_with_what_to_do(
    qtbot, open_session, project_path, quick_check, monkeypatch, stream, stall_s, said
):
    if stall_s is not None:  # ended 1 s after the check's 1 s (5 s after its 3 s in the app)
        monkeypatch.setattr(speakers_page, "STALL_S", stall_s)
    page = checking_page(qtbot, open_session, project_path)
    page.stream_factory = fake_stream_factory(np.zeros(0, dtype=np.float32), realtime=True, **stream)
    press(page, qtbot, "l")
    qtbot.waitUntil(lambda: page.state == "idle", timeout=8_000)
    assert page.view.status_label.text().startswith(said), page.view.status_label.text()
    assert said in page.view.accessibleName()


def test_l_again_ends_the_check_other_keys_end_it_and_act_and_leaving_the_page_ends_it(
    qtbot, open_session, project_path
):
    """L before the voice ends the check, said (a key that seemed lost); → ends it and moves on; another page
    ends it (its microphone would hear that page's clips)."""
    page = checking_page(qtbot, open_session, project_path)
    page.stream_factory = fake_stream_factory(speech(3.0), realtime=True, start_delay_s=30.0)
    press(page, qtbot, "l")
    press(page, qtbot, "l")
    assert page.state == "idle" and page.recorder is None and said(page) == "Level check ended."
    page.stream_factory = fake_stream_factory(speech(3.0), realtime=True, noise_dbfs=-75)
    press(page, qtbot, "l")
    qtbot.waitUntil(lambda: page.view.meter.updates > 0, timeout=5_000)
    press(page, qtbot, Qt.Key.Key_Right)
    assert page.state == "idle" and page.recorder is None and page.prompt_index == 1
    assert said(page).startswith("Ana, en, british, no consent") and "Prompt 2 of 3" in said(page)
    press(page, qtbot, "l")
    assert page.state == "listening"
    page.hide()
    assert page.state == "idle" and page.recorder is None and not page.meter_timer.isActive()


def test_a_check_whose_start_the_sound_server_holds_says_so(
    qtbot, open_session, project_path, quick_check, monkeypatch
):
    """A start the sound server holds was said as a microphone that sent nothing ("check that it is connected")."""
    monkeypatch.setattr(speakers_page, "STALL_S", 1.0)
    released = threading.Event()
    made = fake_stream_factory(take_signal(1.0), realtime=True)

    class HeldStart:
        def __init__(self, **options):
            self.stream = made(**options)

        def __getattr__(self, name):
            return getattr(self.stream, name)

        def start(self):
            released.wait(10)  # a test that fails never holds its worker for good
            self.stream.start()

    page = checking_page(qtbot, open_session, project_path)
    page.stream_factory = HeldStart
    press(page, qtbot, "l")
    try:
        qtbot.waitUntil(lambda: page.state == "idle", timeout=8_000)
        assert page.view.status_label.text().startswith(
            "Level not checked: the sound input did not answer (the sound server may be hung)"
        ), page.view.status_label.text()
    finally:
        released.set()


def test_choosing_another_input_ends_a_check_of_the_one_before(qtbot, open_session, project_path):
    """A check went on with the input it began with, and its verdict was said as if of the input chosen since."""
    usb = InputDevice(7, "USB microphone", 1, RATE, False)
    page = make_page(qtbot, open_session, project_path, lister=lambda: [FAKE_DEVICE, usb])
    qtbot.waitUntil(lambda: page.view.device_box.count() == 2, timeout=5_000)
    page.stream_factory = fake_stream_factory(take_signal(2.0), realtime=True, noise_dbfs=-75)
    page.do_action("level")
    qtbot.waitUntil(lambda: page.view.meter.updates > 0, timeout=5_000)
    page.view.device_box.setCurrentIndex(1)
    assert page.state == "idle" and page.recorder is None and page.view.status_label.text() == "Level check ended"
    page.do_action("level")
    assert page.recorder.device == usb
