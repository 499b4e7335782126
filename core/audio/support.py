"""Which audio I/O this machine can do. Playback and recording need PortAudio (Debian: libportaudio2);
without it the tool still runs, with audio disabled and this message shown instead of a crash."""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class AudioSupport:
    available: bool
    message: str


@functools.cache
def sounddevice_support() -> AudioSupport:
    from spokenbench.core.audio.open_streams import import_sounddevice

    try:
        import_sounddevice()  # loads libportaudio
    except OSError as error:
        return AudioSupport(
            False,
            f"Audio playback and recording are disabled: {error}. "
            "Install PortAudio (Debian/Ubuntu: apt-get install libportaudio2) and restart.",
        )
    except ImportError as error:
        return AudioSupport(False, f"Audio playback and recording are disabled: {error}.")
    return AudioSupport(True, "audio playback and recording available")
