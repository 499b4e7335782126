"""Decoding and encoding audio with checks that name the clip at fault. Internally audio is mono float32
in [-1, 1]; on disk it is 16-bit PCM WAV."""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass

import numpy as np
import soundfile

from spokenbench.core.foundation.errors import SpokenBenchError


class AudioError(SpokenBenchError):
    """Audio that cannot be used: unreadable, corrupt, empty, silent, or not in the expected shape."""


@dataclass(frozen=True)
class Audio:
    samples: np.ndarray  # float32, mono
    rate: int

    @property
    def duration(self) -> float:
        return len(self.samples) / self.rate


def decode_audio(data: bytes, what: str, expected_rate: int | None = None, expected_channels: int | None = 1) -> Audio:
    """Decode WAV/FLAC/OGG bytes. `what` names the clip in errors ('item demo/001 (en) option_B, voice Orus')."""
    if not data:
        raise AudioError(f"{what}: the audio is empty (0 bytes)")
    try:
        with soundfile.SoundFile(io.BytesIO(data)) as handle:
            rate = handle.samplerate
            if handle.subtype == "PCM_16":  # libsndfile's int->float conversion is slow; numpy's is not
                samples = handle.read(dtype="int16", always_2d=True).astype(np.float32) / np.float32(32768)
            else:
                samples = handle.read(dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, ValueError) as error:
        raise AudioError(f"{what}: the audio is unreadable or corrupt ({error})") from None
    channels = samples.shape[1]
    if expected_channels is not None and channels != expected_channels:
        raise AudioError(f"{what}: the audio has {channels} channels; {expected_channels} expected")
    if expected_rate is not None and rate != expected_rate:
        raise AudioError(f"{what}: the audio's sample rate is {rate} Hz; {expected_rate} Hz expected")
    if len(samples) == 0:
        raise AudioError(f"{what}: the audio holds no samples")
    mono = samples[:, 0] if channels == 1 else samples.mean(axis=1)
    return Audio(np.ascontiguousarray(mono, dtype=np.float32), int(rate))


def read_pcm16(data: bytes, what: str) -> tuple[np.ndarray, int] | None:
    """Mono 16-bit PCM WAV samples as int16 with their rate, without conversion (the stdlib's wave reader is the
    cheapest way in); None for any other layout, which callers then decode in full."""
    try:
        with wave.open(io.BytesIO(data)) as handle:
            if handle.getsampwidth() != 2 or handle.getnchannels() != 1:
                return None
            return np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2"), handle.getframerate()
    except (wave.Error, EOFError):
        return None


def write_pcm16_wav(samples: np.ndarray, rate: int) -> bytes:
    """int16 mono samples as a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(samples.astype("<i2", copy=False).tobytes())
    return buffer.getvalue()


def pcm16_to_wav(pcm: bytes, rate: int) -> bytes:
    """Raw 16-bit little-endian mono PCM (as Gemini and OpenAI 'pcm' return it) wrapped in a WAV header."""
    if len(pcm) % 2:
        raise AudioError("raw PCM audio has an odd number of bytes; the response was cut off")
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    return encode_wav(samples, rate)


def encode_audio(samples: np.ndarray, rate: int, audio_format: str = "wav") -> bytes:
    """16-bit PCM in a WAV or FLAC container; samples beyond full scale are clipped here, so callers limit first.
    The float->int16 conversion is done in numpy: ten times faster than letting libsndfile do it."""
    pcm = _pcm16(samples)
    buffer = io.BytesIO()
    soundfile.write(buffer, pcm, rate, format=audio_format.upper(), subtype="PCM_16")
    return buffer.getvalue()


def _pcm16(samples: np.ndarray) -> np.ndarray:
    return (np.clip(samples, -1.0, 1.0) * np.float32(32767)).astype("<i2")


def as_stored(samples: np.ndarray) -> np.ndarray:
    """The samples a 16-bit file written from `samples` decodes to — `decode_audio(encode_wav(samples))` without
    the file in between (the speech workers check and store what a listener will hear)."""
    return _pcm16(samples).astype(np.float32) / np.float32(32768)


def encode_wav(samples: np.ndarray, rate: int) -> bytes:
    return encode_audio(samples, rate, "wav")
