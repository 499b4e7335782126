"""How many PortAudio streams this process has open (playback in core/audio/playback.py, recording in
core/recording/recorder.py): the one count both keep, so the device list is never renewed under an open stream."""

from __future__ import annotations

import atexit
import sys
import threading

# PortAudio lists the devices once, when it is initialized (at sounddevice's import), so a microphone connected
# later is not seen. sounddevice has no public call to list them again; its maintainer's advice
# (python-sounddevice issues #125 and #516) is the private pair `sd._terminate(); sd._initialize()`, used here for
# lack of a public one. It closes every open stream, so it is skipped while a Recorder of this process has one.
lock = threading.Lock()
count = 0


def count_open_stream(change: int) -> None:
    global count
    with lock:
        count += change


_guarded: list[bool] = []


def import_sounddevice():
    """The sounddevice module — the one way the project imports it. Its import loads PortAudio, lists the devices
    through the sound server (which can hang: never on the UI thread before the start's sound check answered) and
    registers an exit hook that terminates PortAudio; `_leave_held_portaudio` is registered after that hook, so it
    runs before it. Raises what the import raises (OSError without PortAudio, ImportError without the package)."""
    import sounddevice

    _guard_portaudio_exit()
    return sounddevice


def _guard_portaudio_exit() -> None:
    """Register `_leave_held_portaudio` once, after sounddevice's own exit hook."""
    with lock:
        if not _guarded:
            atexit.register(_leave_held_portaudio)
            _guarded.append(True)


def _leave_held_portaudio() -> None:
    """A thread still inside a sounddevice call at exit is held by a sound server that does not answer (a hung
    PulseAudio or PipeWire: a stream's abort or close, a recording's start, a device scan). sounddevice's exit
    hook would then wait on that server for good (measured: the app never ended after Ctrl+Q), so it is
    unregistered and PortAudio left to the process's end."""
    sounddevice = sys.modules.get("sounddevice")
    handler = getattr(sounddevice, "_exit_handler", None)
    if handler is None:
        return
    here = threading.get_ident()
    for ident, frame in sys._current_frames().items():
        while frame is not None and ident != here:
            if frame.f_code.co_filename == sounddevice.__file__:
                atexit.unregister(handler)
                return
            frame = frame.f_back
