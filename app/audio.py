"""What this machine can do with sound, asked once at start and by the screens that play or record: Qt
Multimedia and an output device for playback, PortAudio (through sounddevice) and an input device for recording.
Each answer is `None` when it works, else a message saying what is missing and what to install. Recording has one
check, `core.recording.recorder.recording_availability` (PortAudio and its input devices): the status bar asks it
at start and the Speakers page on every scan of the devices, which then shows its answer in the status bar too
(`show_recording_status`), so the two never disagree."""

from __future__ import annotations

NO_AUDIO_BANNER = (
    "No audio output device: clips cannot be played here. You can still rate — read the text and, with T, "
    "the transcripts."
)


def audio_outputs_available() -> tuple[bool, str]:
    """Whether clips can be played, and why not. Needs a QGuiApplication (device lists come from it)."""
    try:
        from PySide6.QtMultimedia import QMediaDevices
    except ImportError as error:
        return False, (
            f"Qt Multimedia is unavailable ({error}); install PulseAudio's client library "
            "(Debian/Ubuntu: apt-get install libpulse0). " + NO_AUDIO_BANNER
        )
    if not QMediaDevices.audioOutputs():
        return False, NO_AUDIO_BANNER
    return True, ""


def playback_problem() -> str | None:
    ok, message = audio_outputs_available()
    return None if ok else message


def recording_problem() -> str | None:
    """Why speakers cannot be recorded here (PortAudio missing, or no input device), or None."""
    from spokenbench.core.audio_support import sounddevice_support
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
    text, tooltip = audio_status(getattr(window, "audio_message", None), recording)
    label.setText(text)
    label.setToolTip(tooltip)


def audio_status(playback: str | None, recording: str | None) -> tuple[str, str]:
    """The status bar's short text and its tooltip."""
    if playback is None and recording is None:
        return "Audio: ready", "Clips can be played and speakers recorded."
    if playback is None:
        return "Audio: playback only", f"Recording is off: {recording}"
    if recording is None:
        return "Audio: recording only", f"Playback is off: {playback}"
    return "Audio: off", f"Playback is off: {playback}\nRecording is off: {recording}"
