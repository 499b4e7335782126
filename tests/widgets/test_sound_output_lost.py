"""The sound output failing mid-session (the sound server killed or restarted, a headset unplugged): the
annotator is told in plain words that the output, not the clip, failed and that rating still works; the message
goes once a clip plays again, and the status bar's audio label follows. tests/widgets/test_real_device_session.py
kills a real PulseAudio server under the running app."""

import time
from types import SimpleNamespace

import numpy as np
import pytest
from PySide6.QtCore import QSettings, Qt

import spokenbench.app.audio as app_audio
from spokenbench.app.audio import audio_status
from spokenbench.app.main_window import MainWindow
from spokenbench.core.audio.io import encode_wav
from spokenbench.core.audio.playback import FakeOutputStream, PlaybackState
from spokenbench.core.store import opened

ANNOTATOR = "alice"
PORTAUDIO_ERROR = "Error opening OutputStream: Illegal combination of I/O devices [PaErrorCode -9993]"


class SwitchableOutput:
    """A sound output that can be taken away and brought back, as PortAudio reports it."""

    def __init__(self, gone: bool):
        self.gone = gone
        self.streams: list[FakeOutputStream] = []

    def __call__(self, device, rate):
        if self.gone:
            raise OSError(PORTAUDIO_ERROR)
        self.streams.append(FakeOutputStream(device, rate))
        return self.streams[-1]


def playing_window(qtbot, tmp_path) -> MainWindow:
    """The main window with audio (its start's checks passed), its settings in tmp_path."""
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(audio_message=None, poll_interval_s=0.1, settings=settings)
    qtbot.addWidget(window)
    return window


@pytest.mark.slow
def test_the_rating_page_says_the_output_failed_and_clears_it_once_sound_is_back(
    qtbot, demo_copy, rating_page_on_demo_queue, player_of
):
    output = SwitchableOutput(gone=True)
    noted = []
    page = rating_page_on_demo_queue(
        SimpleNamespace(annotator=ANNOTATOR, player=player_of(output), note_playback=noted.append)
    )
    first = page.rating.current.clip_id
    qtbot.waitUntil(lambda: "sound output" in page.view.status_label.text(), timeout=5_000)  # played on arrival
    assert page.view.status_label.text() == (
        f"Cannot play clip {first}: the sound output is not available ({PORTAUDIO_ERROR}). Rating still works; "
        "Space / R plays the clip again once the headphones or sound server are back."
    )
    assert noted[-1].output_failed
    qtbot.keyClick(page.view, "1")  # rating still works
    qtbot.waitUntil(lambda: page.idle and page.rating.current.clip_id != first, timeout=5_000)
    with opened(demo_copy) as project:
        assert project.conn.execute("SELECT count(*) FROM ratings WHERE annotator = ?", (ANNOTATOR,)).fetchone()[0]
    second = page.rating.current.clip_id
    qtbot.waitUntil(lambda: f"Cannot play clip {second}:" in page.view.status_label.text(), timeout=5_000)
    output.gone = False  # the sound server is back
    qtbot.keyClick(page.view, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: page.view.status_label.text() == "", timeout=5_000)
    assert noted[-1].playing and noted[-1].error is None and len(output.streams) == 1


def test_a_play_button_whose_output_fails_says_so_in_the_status_bar(qtbot, tmp_path, monkeypatch, player_of):
    output = SwitchableOutput(gone=True)
    monkeypatch.setattr(app_audio, "_shared", [player_of(output)])
    window = playing_window(qtbot, tmp_path)
    clip = tmp_path / "clip.wav"
    clip.write_bytes(encode_wav(np.zeros(8000, dtype=np.float32), 8000))
    ready = audio_status(window.audio_message, window.recording_message)[0]
    try:
        assert window.play_file(clip) is None  # posted: the outcome comes from the playback thread
        qtbot.waitUntil(lambda: window.audio_label.text() == "Audio: playback failed", timeout=5_000)
        assert window.statusBar().currentMessage() == "Cannot play clip.wav: the sound output is not available"
        assert PORTAUDIO_ERROR in window.audio_label.toolTip()  # PortAudio's words: the status bar keeps one line
        output.gone = False
        window.play_file(clip)
        qtbot.waitUntil(lambda: window.audio_label.text() == ready, timeout=5_000)
        assert len(output.streams) == 1
    finally:
        window.shutdown()


class VanishingStream(FakeOutputStream):
    """An output unplugged half a second into the clip (after the window has seen it play)."""

    def write(self, data):
        if not self.written:
            self.first_write = time.monotonic()
        elif time.monotonic() - self.first_write > 0.5:
            raise OSError("Error writing to stream: Unanticipated host error [PaErrorCode -9999]")
        return super().write(data)


def test_a_play_button_whose_output_goes_away_mid_clip_says_so_too(qtbot, tmp_path, monkeypatch, player_of):
    """The window follows a Play button's clip to its end, not only to its start."""
    monkeypatch.setattr(app_audio, "_shared", [player_of(VanishingStream)])
    window = playing_window(qtbot, tmp_path)
    clip = tmp_path / "long.wav"
    clip.write_bytes(encode_wav(np.zeros(16000, dtype=np.float32), 8000))  # 2 s
    try:
        window.play_file(clip)
        qtbot.waitUntil(lambda: app_audio._shared[0].state.playing, timeout=5_000)
        qtbot.wait(250)  # the window has polled it playing
        qtbot.waitUntil(lambda: window.audio_label.text() == "Audio: playback failed", timeout=5_000)
        assert window.statusBar().currentMessage() == "Playback of long.wav stopped: the sound output went away"
        assert not window._play_watch.isActive()
    finally:
        window.shutdown()


class StatePlayer:
    """A player whose published state the test sets: a play's outcome as the window may first see it."""

    alive = True

    def __init__(self):
        self.requests, self.next_state = 0, None

    def play(self, audio, what="clip", device=None):
        self.requests += 1
        self.state = self.next_state(self.requests)
        return self.requests

    def stop(self):
        pass

    def unanswered_s(self) -> float:
        return 0.0


def test_a_short_clip_that_ended_between_two_polls_clears_an_earlier_failure(qtbot, tmp_path, monkeypatch):
    player = StatePlayer()
    monkeypatch.setattr(app_audio, "_shared", [player])
    window = playing_window(qtbot, tmp_path)
    ready = audio_status(window.audio_message, window.recording_message)[0]
    try:
        player.next_state = lambda n: PlaybackState(n, error="Cannot play a.wav: …", output_failed=True)
        window.play_file(tmp_path / "a.wav")
        qtbot.waitUntil(lambda: window.audio_label.text() == "Audio: playback failed", timeout=5_000)
        player.next_state = lambda n: PlaybackState(n, 0.05, 0.05)  # already played through, never seen playing
        window.play_file(tmp_path / "b.wav")
        qtbot.waitUntil(lambda: not window._play_watch.isActive(), timeout=5_000)
        assert window.audio_label.text() == ready
    finally:
        window.shutdown()


def test_a_long_path_in_the_status_line_never_widens_the_rating_view(qtbot):
    """A write-lock message names the project's path, which may have no space to wrap at for 400 characters."""
    from spokenbench.widgets.rating_view import RatingView

    view = RatingView()
    qtbot.addWidget(view)
    narrowest = view.minimumSizeHint().width()
    view.status_label.setText("Not saved: /" + "a_long_folder_name/" * 20 + "project.sqlite: another process kept it")
    assert view.minimumSizeHint().width() == narrowest < 1280


def test_the_items_detail_line_says_how_a_play_ended_not_playing_after_it_failed(
    qtbot, tmp_path, monkeypatch, player_of
):
    """The line under an item's clips said "Playing clip 12…" for good while the status bar said the play
    failed; it now says the failure, and "Played clip 12" once a play went through."""
    output = SwitchableOutput(gone=True)
    monkeypatch.setattr(app_audio, "_shared", [player_of(output)])
    window = playing_window(qtbot, tmp_path)
    sha = "ab" * 32
    (tmp_path / "audio" / sha[:2]).mkdir(parents=True)
    (tmp_path / "audio" / sha[:2] / f"{sha}.wav").write_bytes(encode_wav(np.zeros(800, dtype=np.float32), 8000))
    clip = {
        "id": 12, "part": "question", "voice": "v", "accent": "american", "backend": "espeak", "duration_s": 0.1,
        "error_rate": None, "language": "en", "metric": "wer", "transcripts": [], "sha256": sha, "audio_format": "wav",
    }  # fmt: skip
    detail = window.items_panel.detail
    detail.show_detail(
        {"rewrites": [], "clips": [clip], "ratings": [], "responses": []}, window._play_function(), tmp_path / "audio"
    )
    try:
        detail.play_row(0)
        assert detail.audio_note.text() == "Playing clip 12…"  # posted to the playback thread
        qtbot.waitUntil(lambda: detail.audio_note.text() != "Playing clip 12…", timeout=5_000)
        assert detail.audio_note.text() == "Cannot play clip 12: the sound output is not available"
        output.gone = False
        detail.play_row(0)
        qtbot.waitUntil(lambda: detail.audio_note.text() == "Played clip 12", timeout=5_000)
    finally:
        window.shutdown()


class HeldOutput:
    """A sound server that does not answer (PulseAudio stopped): opening a stream waits until it is let go."""

    def __init__(self):
        import threading

        self.answers = threading.Event()
        self.streams: list[FakeOutputStream] = []

    def __call__(self, device, rate):
        self.answers.wait(30)
        self.streams.append(FakeOutputStream(device, rate))
        return self.streams[-1]


@pytest.mark.slow
def test_a_clip_the_player_has_not_taken_up_is_said_not_playing_and_rating_goes_on(
    qtbot, demo_copy, rating_page_on_demo_queue, player_of, monkeypatch
):
    """Before, the page waited without a word for a clip a hung sound server held (the playhead still)."""
    monkeypatch.setattr("spokenbench.app.rating_page.STALL_S", 0.3)
    output = HeldOutput()
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR, player=player_of(output)))
    first = page.rating.current.clip_id
    qtbot.waitUntil(lambda: "does not answer" in page.view.status_label.text(), timeout=5_000)  # played on arrival
    assert page.view.status_label.text() == (
        f"Not playing clip {first}: the sound output does not answer (the sound server may be hung). Rating still "
        "works; the clip plays once the server answers."
    )
    qtbot.keyClick(page.view, "1")
    qtbot.waitUntil(lambda: page.idle and page.rating.current.clip_id != first, timeout=5_000)
    with opened(demo_copy) as project:
        assert project.conn.execute("SELECT count(*) FROM ratings WHERE annotator = ?", (ANNOTATOR,)).fetchone()[0]
    output.answers.set()  # the server answers again: the newest clip plays, and the line goes
    qtbot.waitUntil(lambda: page.player.state.request == page.play_request, timeout=5_000)
    qtbot.waitUntil(lambda: "does not answer" not in page.view.status_label.text(), timeout=5_000)
    assert len(output.streams) == 1


class UnansweredCheck:
    """The start's sound check (app/audio.py SoundCheck) as a test drives it."""

    def __init__(self):
        self.answered, self.waited, self.playback, self.recording = False, 0.0, None, None

    def waited_s(self) -> float:
        return self.waited

    def answered_at_start(self) -> bool:
        return self.answered


def test_a_window_opened_before_the_sound_check_answered_says_so_and_takes_the_answer_when_it_comes(
    qtbot, tmp_path, monkeypatch
):
    monkeypatch.setattr("spokenbench.app.main_window.SOUND_CHECK_POLL_MS", 20)
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings=settings)
    qtbot.addWidget(window)
    check = UnansweredCheck()
    try:
        window.follow_sound_check(check)
        assert window.audio_label.text() == "Audio: checking…"
        window.show_audio_status()  # a play's outcome meanwhile does not say "ready"
        assert window.audio_label.text() == "Audio: checking…"
        check.waited = 6.0
        qtbot.waitUntil(lambda: window.audio_label.text() == "Audio: not answering", timeout=2_000)
        assert window.audio_label.toolTip() == app_audio.NOT_ANSWERING
        check.answered, check.recording = True, "No audio input device: connect a microphone."
        qtbot.waitUntil(lambda: window.audio_label.text() == "Audio: playback only", timeout=2_000)
        assert window.recording_message == check.recording and window.audio_message is None
        assert window.statusBar().currentMessage().startswith("The sound server answered. Recording is off")
    finally:
        window.shutdown()


def test_before_the_sound_check_answered_nothing_on_the_ui_thread_lists_devices(qtbot, tmp_path, runner, monkeypatch):
    """Listing them then would wait on sounddevice's import, held by the check's thread for as long as the
    server does not answer: the pages take clips to be playable, Settings offers the system's default and keeps
    the output chosen before (it said "No audio output device found", greyed out)."""
    from spokenbench.app.settings_dialog import AUDIO_OUTPUT_KEY, SettingsDialog, audio_outputs
    from spokenbench.core.audio import playback

    def listed():
        raise AssertionError("the devices were listed on the UI thread")

    monkeypatch.setattr(playback, "output_devices", listed)
    monkeypatch.setattr(app_audio, "_check", [UnansweredCheck()])
    assert app_audio.audio_outputs_available() == (True, "")
    assert audio_outputs() is None
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue(AUDIO_OUTPUT_KEY, "USB headset")
    dialog = SettingsDialog(settings, runner)
    qtbot.addWidget(dialog)
    box = dialog.device_box
    assert box.isEnabled() and [box.itemText(i) for i in range(box.count())] == ["System default", "USB headset"]
    assert box.currentData() == "USB headset"


def test_a_play_button_whose_clip_the_player_has_not_taken_up_says_the_output_does_not_answer(
    qtbot, tmp_path, monkeypatch, player_of
):
    """Before, the window gave up following such a play after 5 s without a word."""
    monkeypatch.setattr("spokenbench.app.main_window.PLAY_POLLS_MAX", 3)
    output = HeldOutput()
    monkeypatch.setattr(app_audio, "_shared", [player_of(output)])
    window = playing_window(qtbot, tmp_path)
    clip = tmp_path / "clip.wav"
    clip.write_bytes(encode_wav(np.zeros(8000, dtype=np.float32), 8000))
    try:
        window.play_file(clip)
        qtbot.waitUntil(lambda: "does not answer" in window.statusBar().currentMessage(), timeout=5_000)
        assert window.statusBar().currentMessage() == (
            "Not playing clip.wav: the sound output does not answer (the sound server may be hung)"
        )
        assert window.audio_label.text() == "Audio: not answering"  # the label agrees with the line
        assert window._play_watch.isActive()  # still followed: it plays once the server answers
        output.answers.set()
        qtbot.waitUntil(lambda: window.audio_label.text() == "Audio: ready", timeout=5_000)
    finally:
        output.answers.set()
        window.shutdown()
