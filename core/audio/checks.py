"""Checks every synthesized clip passes before it is stored as good: decodable, not empty, not silent, and
a duration plausible for its text (catching truncated or runaway TTS output)."""

from __future__ import annotations

import unicodedata

from spokenbench.core.audio.dsp import speech_level_db
from spokenbench.core.audio.io import Audio, AudioError, decode_audio

SILENT_BELOW_DB = -55.0


def speech_units(text: str) -> float:
    """Rough spoken length: a CJK character or Hangul syllable takes about as long as three Latin letters."""
    units = 0.0
    for char in text:
        if char.isspace():
            units += 0.5
        elif unicodedata.east_asian_width(char) in ("W", "F"):
            units += 3.0
        elif char.isalnum():
            units += 1.0
        else:
            units += 0.3
    return units


def plausible_duration(text: str) -> tuple[float, float]:
    """(shortest, longest) believable duration in seconds for `text`, at any sane speaking rate."""
    units = speech_units(text)
    return max(0.05, units / 40.0), 2.0 + units / 3.0


def check_clip(data: bytes, text: str, what: str, expected_rate: int | None = None) -> tuple[Audio, float]:
    """Decode and vet a clip; returns the audio and its active speech level, or raises AudioError. A rate other
    than the backend's declared one means a changed or misbehaving service, so it is refused, not resampled."""
    audio = decode_audio(data, what, expected_rate=expected_rate)
    return audio, check_audio(audio, text, what)


def check_audio(audio: Audio, text: str, what: str) -> float:
    """The active speech level of decoded audio, or AudioError when it is silent or implausibly long or short."""
    level = speech_level_db(audio.samples, audio.rate)
    if level < SILENT_BELOW_DB:
        raise AudioError(f"{what}: the audio is silent (speech level {level:.0f} dBFS)")
    shortest, longest = plausible_duration(text)
    if not shortest <= audio.duration <= longest:
        raise AudioError(
            f"{what}: {audio.duration:.2f} s is implausible for {len(text)} characters of text "
            f"(expected {shortest:.2f}–{longest:.1f} s)"
        )
    return level
