"""How many PortAudio streams this process has open (playback in core/audio/playback.py, recording in
core/recording/recorder.py): the one count both keep, so the device list is never renewed under an open stream."""

from __future__ import annotations

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
