"""What this machine can do with sound, asked once at start and by the screens that play or record: PortAudio
(through sounddevice) and an output device for playback, and an input device for recording.
Each answer is `None` when it works, else a message saying what is missing and what to install. Recording has one
check, `core.recording.recorder.recording_availability` (PortAudio and its input devices): the status bar asks it
at start and the Speakers page on every scan of the devices, which then shows its answer in the status bar too
(`show_recording_status`), so the two never disagree."""

from __future__ import annotations

import threading
import time

from spokenbench.app.settings_dialog import AUDIO_OUTPUT_KEY
from spokenbench.core.audio import playback

NO_AUDIO_BANNER = (
    "No audio output device: clips cannot be played here. You can still rate — read the text and, with T, "
    "the transcripts."
)


NO_DEVICE_FLASH = "No sound device — playback unavailable"  # a play key answered where nothing can sound

NOT_ANSWERING = (
    "The sound output does not answer: the sound server (PulseAudio or PipeWire) may be hung, or a forwarded one out "
    "of reach. Clips play once it answers; restarting it (systemctl --user restart pulseaudio, or pipewire "
    "pipewire-pulse) usually helps. You can still rate — read the text and, with T, the transcripts."
)


NOT_ANSWERING_WORDS = "the sound output does not answer"
SOUND_CHECK_WAIT_S = 1.0  # the longest the first window and pages wait for the start's sound check, from its start


def not_answering_line(what: str) -> str:
    """A status line for a clip the player has not taken up for STALL_S (core/audio/playback.py unanswered_s)."""
    return f"Not playing {what or 'the clip'}: {NOT_ANSWERING_WORDS} (the sound server may be hung)"


class SoundCheck:
    """PortAudio's first use (sounddevice's import) lists the devices through the sound server, and a server that
    does not answer (a hung PulseAudio or PipeWire, a forwarded one across a dropped network) holds that call for
    good: measured, more than 100 s with PulseAudio stopped. So the start's checks run on a thread of their own,
    and nothing on the UI thread touches sounddevice before they have answered (`answered`)."""

    def __init__(self):
        self.started_at = time.monotonic()
        self.playback: str | None = None  # why clips cannot be played (None: they can), once answered
        self.recording: str | None = None  # why speakers cannot be recorded, once answered
        self._answered = threading.Event()
        threading.Thread(target=self._run, name="sound-check", daemon=True).start()

    def _run(self) -> None:
        try:
            self.playback, self.recording = playback_problem(), recording_problem()
        finally:
            self._answered.set()

    @property
    def answered(self) -> bool:
        return self._answered.is_set()

    def wait(self, timeout: float) -> bool:
        return self._answered.wait(timeout)

    def waited_s(self) -> float:
        return time.monotonic() - self.started_at

    def answered_at_start(self) -> bool:
        """Whether it has answered, waited for until it is SOUND_CHECK_WAIT_S old: ~0.1-0.3 s when the server
        answers, so the first window and pages know; never longer, so a server that does not answer holds nothing."""
        return self._answered.wait(max(0.0, SOUND_CHECK_WAIT_S - self.waited_s()))


_check: list[SoundCheck] = []
_check_lock = threading.Lock()


def sound_check() -> SoundCheck:
    """The process's one check, started at the first call (the app's start calls it before importing Qt)."""
    with _check_lock:
        if not _check:
            _check.append(SoundCheck())
        return _check[0]


def audio_outputs_available() -> tuple[bool, str]:
    """Whether clips can be played, and why not. Before the sound check has answered, clips are taken to be
    playable: the player plays them once the server answers, and says so when it does not (`ClipPlayer.unanswered_s`)."""
    if not sound_check().answered_at_start():
        return True, ""
    return _outputs_available_now()


def _outputs_available_now() -> tuple[bool, str]:
    from spokenbench.core.audio.support import sounddevice_support

    support = sounddevice_support()
    if not support.available:
        return False, f"{support.message} {NO_AUDIO_BANNER}"
    if not playback.output_devices():
        return False, NO_AUDIO_BANNER
    return True, ""


_shared: list[playback.ClipPlayer] = []


def shared_player() -> playback.ClipPlayer:
    """The app's one clip player (its own thread; see core/audio/playback.py): the Rating and Speakers pages and
    the window's Play buttons share it, so one clip sounds at a time and a new one replaces it."""
    if not _shared or not _shared[0].alive:
        _shared[:] = [playback.ClipPlayer()]
    return _shared[0]


def silence() -> None:
    """Stop whatever the shared player plays (never waits; nothing to do when none was made)."""
    if _shared:
        _shared[0].stop()


def page_player(window) -> tuple[playback.ClipPlayer | None, str]:
    """A page's player and, without one, why: the window's own `player` when it has one (tests give a player
    over a fake stream), else the shared player when this machine has an output device."""
    given = getattr(window, "player", None)
    if given is not None:
        return given, ""
    ok, message = audio_outputs_available()
    return (shared_player() if ok else None), message


def chosen_output(window) -> str | None:
    """The output device chosen in Settings (a PortAudio device name), None for the system's default."""
    settings = getattr(window, "settings", None)
    if settings is None:
        return None
    return str(settings.value(AUDIO_OUTPUT_KEY, "") or "") or None


def playback_problem() -> str | None:
    """Why clips cannot be played here, or None. Lists the devices the first time: the sound check's thread, or
    any thread once it has answered."""
    ok, message = _outputs_available_now()
    return None if ok else message


def recording_problem() -> str | None:
    """Why speakers cannot be recorded here (PortAudio missing, or no input device), or None. Asks PortAudio for
    the devices again: off the UI thread, or at the start's sound check."""
    from spokenbench.core.audio.support import sounddevice_support
    from spokenbench.core.recording import recorder

    support = sounddevice_support()
    if not support.available:
        return support.message
    _devices, problem = recorder.recording_availability(recorder.input_devices)
    return problem


def show_recording_status(window, recording: str | None) -> None:
    """A newer answer of the recording check (a device scan of the Speakers page) in the window's status bar."""
    label = getattr(window, "audio_label", None)
    if label is None:
        return
    window.recording_message = recording
    if hasattr(window, "show_audio_status"):  # the window's own: a failed play still shows
        window.show_audio_status()
        return
    text, tooltip = audio_status(getattr(window, "audio_message", None), recording)
    label.setText(text)
    label.setToolTip(tooltip)


def audio_status(playback: str | None, recording: str | None) -> tuple[str, str]:
    """The status bar's short text and its tooltip."""
    if NOT_ANSWERING in (playback, recording):  # a held recording start (the Speakers page) or play
        return "Audio: not answering", NOT_ANSWERING
    if playback is None and recording is None:
        return "Audio: ready", "Clips can be played and speakers recorded."
    if playback is None:
        return "Audio: playback only", f"Recording is off: {recording}"
    if recording is None:
        return "Audio: recording only", f"Playback is off: {playback}"
    return "Audio: off", f"Playback is off: {playback}\nRecording is off: {recording}"
