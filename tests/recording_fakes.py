"""Fakes of a speaker's input for the Speakers page's tests: a device, a reading of speech, and a stream
whose stop a sound server that does not answer holds."""

import numpy as np

from spokenbench.core.recording.recorder import InputDevice, fake_stream_factory

RATE = 16_000
FAKE_DEVICE = InputDevice(None, "Fake microphone", 1, RATE, True)


def speech(seconds: float, rate: int = RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    voiced = np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t)
    return (0.2 * voiced * (0.65 + 0.35 * np.sin(2 * np.pi * 4 * t))).astype(np.float32)


def take_signal(seconds: float) -> np.ndarray:
    silence = np.zeros(int(0.4 * RATE), dtype=np.float32)
    return np.concatenate([silence, speech(seconds), silence])


def fake(seconds: float):
    """Streams a take of `seconds` of speech, then nothing (the test stops it)."""
    return fake_stream_factory(take_signal(seconds), then_silence=False, noise_dbfs=-75)


class HeldStop:
    """A stream whose stop waits for `released`, as a sound server that does not answer holds it."""

    def __init__(self, stream, released, longest_s: float = 10.0):
        self.stream, self.released, self.longest_s = stream, released, longest_s

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def stop(self):
        self.released.wait(self.longest_s)  # a test that fails never holds its worker for good
        self.stream.stop()


def held_stops(made, released, longest_s: float = 10.0):
    """A stream factory giving `made`'s streams with their stop held until `released` is set."""
    return lambda **options: HeldStop(made(**options), released, longest_s)
