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


# The most audio one file may decode to: 31 minutes at 48 kHz, above the longest SpokenBench makes (a 30-minute
# assembled input) and ~360 MB as float32. Compressed audio can hold far more: a FLAC of silence decodes to ~1,300
# times its size, so a 1 MB file in a shared project or pack could take gigabytes (a decompression bomb).
MAX_DECODED_SAMPLES = 31 * 60 * 48_000
DECODE_BLOCK_FRAMES = 1 << 20  # a file of unknown length is read in blocks, so no count of its own sizes a read
UNKNOWN_LENGTH = 1 << 62


def decode_audio(data: bytes, what: str, expected_rate: int | None = None, expected_channels: int | None = 1) -> Audio:
    """Decode WAV/FLAC/OGG bytes. `what` names the clip in errors ('item demo/001 (en) option_B, voice Orus').
    Audio longer than MAX_DECODED_SAMPLES is refused: from the length its header gives, before a sample is read
    (libsndfile reads no further than that length), or block by block when the header gives none."""
    if not data:
        raise AudioError(f"{what}: the audio is empty (0 bytes)")
    try:
        with soundfile.SoundFile(io.BytesIO(data)) as handle:
            rate, channels = handle.samplerate, handle.channels
            pcm16 = handle.subtype == "PCM_16"  # libsndfile's int->float conversion is slow; numpy's is not
            dtype = "int16" if pcm16 else "float32"
            if handle.frames < UNKNOWN_LENGTH:  # one read, which libsndfile stops at the length the header gives
                _check_length(handle.frames, channels, rate, what)
                samples = handle.read(dtype=dtype, always_2d=True)
            else:  # a stream that did not say its length (libsndfile's largest count): read in bounded blocks
                samples = _read_blocks(handle, dtype, channels, rate, what)
        if pcm16 and len(samples):
            samples = samples.astype(np.float32) / np.float32(32768)
    except (soundfile.LibsndfileError, RuntimeError, ValueError) as error:
        raise AudioError(f"{what}: the audio is unreadable or corrupt ({error})") from None
    except MemoryError:
        raise AudioError(f"{what}: not enough memory to decode the audio ({len(data):,} bytes)") from None
    if expected_channels is not None and channels != expected_channels:
        raise AudioError(f"{what}: the audio has {channels} channels; {expected_channels} expected")
    if expected_rate is not None and rate != expected_rate:
        raise AudioError(f"{what}: the audio's sample rate is {rate} Hz; {expected_rate} Hz expected")
    if len(samples) == 0:
        raise AudioError(f"{what}: the audio holds no samples")
    mono = samples[:, 0] if channels == 1 else samples.mean(axis=1)
    return Audio(np.ascontiguousarray(mono, dtype=np.float32), int(rate))


def _read_blocks(handle: soundfile.SoundFile, dtype: str, channels: int, rate: int, what: str) -> np.ndarray:
    """All frames of a file of unknown length, block by block, refused once past MAX_DECODED_SAMPLES."""
    blocks, frames = [], 0
    while True:
        block = handle.read(DECODE_BLOCK_FRAMES, dtype=dtype, always_2d=True)
        frames += len(block)
        _check_length(frames, channels, rate, what)
        blocks.append(block)
        if len(block) < DECODE_BLOCK_FRAMES:
            return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]


def _check_length(frames: int, channels: int, rate: int, what: str) -> None:
    """AudioError when `frames` frames of `channels` channels exceed MAX_DECODED_SAMPLES."""
    if frames * max(channels, 1) > MAX_DECODED_SAMPLES:
        seconds = frames / rate if rate > 0 else None
        length = (
            f"{frames:,} frames"
            if seconds is None
            else f"{seconds:,.0f} s at {rate:,} Hz"
            if seconds < 120
            else f"{seconds / 60:,.0f} minutes at {rate:,} Hz"
        )
        raise AudioError(
            f"{what}: the audio decodes to more than {length} ({channels} channel(s)), beyond the "
            f"{MAX_DECODED_SAMPLES:,} samples SpokenBench reads from one file (31 minutes at 48 kHz); no clip is "
            "this long: the file is damaged or was made to exhaust memory"
        )


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
