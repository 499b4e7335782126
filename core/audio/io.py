"""Decoding and encoding audio with checks that name the clip at fault. Internally audio is mono float32
in [-1, 1]; on disk it is 16-bit PCM WAV."""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import soundfile

from spokenbench.core.errors import SpokenBenchError


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
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
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


def pcm16_to_wav(pcm: bytes, rate: int) -> bytes:
    """Raw 16-bit little-endian mono PCM (as Gemini and OpenAI 'pcm' return it) wrapped in a WAV header."""
    if len(pcm) % 2:
        raise AudioError("raw PCM audio has an odd number of bytes; the response was cut off")
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    return encode_wav(samples, rate)


def encode_audio(samples: np.ndarray, rate: int, audio_format: str = "wav") -> bytes:
    """16-bit PCM in a WAV or FLAC container; samples beyond full scale are clipped here, so callers limit first."""
    buffer = io.BytesIO()
    soundfile.write(buffer, np.clip(samples, -1.0, 1.0), rate, format=audio_format.upper(), subtype="PCM_16")
    return buffer.getvalue()


def encode_wav(samples: np.ndarray, rate: int) -> bytes:
    return encode_audio(samples, rate, "wav")
