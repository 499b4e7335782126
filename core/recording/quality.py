"""Quality checks on every take, each with pass/fail and a reason a speaker can act on:

- clipping: the share of samples at full scale (the input gain is too high);
- SNR: estimated from 20 ms frame energies — the noise floor is a low percentile of the frame levels, the speech
  level a high one; their difference, with the noise's own power taken out, is the SNR;
- speech duration: the active speech (frames well above the noise floor) must lie within bounds;
- silence: leading and trailing silence is trimmed (a little padding kept); speech touching the very start or end
  of the take fails, because a word was probably cut off;
- input: only when the input sent nothing for a while during the take (`InputBreak`: a microphone pulled out, the
  sound server gone, a wireless headset dropping out), which fails: what was read meanwhile is not in the take.

A take of exact zeros (a muted input) says so in its speech-duration reason: no microphone's noise is that quiet.

Pure numpy on mono float32 samples in [-1, 1]; nothing here touches the project."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

FRAME_S = 0.02
# Only exact zeros for this long: the input is muted (a mute key or switch, the system's sound settings, a denied
# microphone permission), sends nothing, or is a noise filter's pause. A live microphone's noise floor is never
# exactly zero; an input waking up sends zeros for less (WASAPI 255 samples, a USB microphone up to 1 s).
DIGITAL_SILENCE_S = 1.5
MUTED_INPUT = (
    "muted (a mute key or switch, the system's sound settings, a microphone permission not given) or sends nothing"
)
INPUT_LOST = "a microphone disconnected or out of range, or the sound server stopped"


@dataclass(frozen=True)
class InputBreak:
    """The input sent nothing for a while during a take (`Recorder.input_break`): from `at_s` seconds into the
    take, for `seconds` (None: it never came back before the take was stopped)."""

    at_s: float
    seconds: float | None = None

    def check(self) -> Check:
        if self.seconds is None:
            what = f"stopped sending sound {self.at_s:.1f} s into the take"
            rest = "the rest was not recorded"
        else:
            what = f"sent nothing for {self.seconds:.1f} s, {self.at_s:.1f} s into the take"
            rest = "what was said meanwhile is missing"
        return Check(
            "input",
            False,
            round(self.at_s, 2),
            f"the input {what} ({INPUT_LOST}), so {rest}: check the input, then record it again",
        )


@dataclass(frozen=True)
class QualitySettings:
    clip_level: float = 0.999  # |sample| at or above this is full scale
    max_clipped_share: float = 0.001  # 0.1 % of samples
    min_snr_db: float = 20.0
    min_speech_s: float = 0.5
    max_speech_s: float = 30.0
    silence_floor_dbfs: float = -55.0  # a take whose loudest frames stay below this holds no speech
    noise_percentile: float = 10.0
    speech_percentile: float = 95.0
    keep_padding_s: float = 0.15  # silence kept before and after the speech when trimming
    edge_s: float = 0.06  # speech this close to the start or end of the take counts as cut off


@dataclass(frozen=True)
class Check:
    name: str  # clipping / snr / speech_duration / silence / input
    passed: bool
    value: float | None
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TakeAnalysis:
    checks: tuple[Check, ...]
    trimmed: np.ndarray = field(repr=False)  # the take without its leading and trailing silence
    rate: int
    duration_s: float  # of the take as recorded
    trimmed_duration_s: float
    lead_trimmed_s: float
    tail_trimmed_s: float
    speech_s: float
    snr_db: float | None
    clipped_share: float
    peak_dbfs: float

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]

    def check(self, name: str) -> Check:
        return next(check for check in self.checks if check.name == name)


def dbfs(power_or_amplitude: float, power: bool = False) -> float:
    """Decibels relative to full scale; -120 for silence."""
    value = float(power_or_amplitude)
    if value <= 0:
        return -120.0
    return max(-120.0, (10 if power else 20) * math.log10(value))


def frame_levels_db(samples: np.ndarray, rate: int, frame_s: float = FRAME_S) -> np.ndarray:
    """Mean power of each whole frame in dBFS (a sine of amplitude 1 is -3 dBFS)."""
    frame = max(1, int(rate * frame_s))
    count = len(samples) // frame
    if count == 0:
        return np.zeros(0, dtype=np.float64)
    frames = samples[: count * frame].astype(np.float64).reshape(count, frame)
    power = np.mean(frames * frames, axis=1)
    return 10 * np.log10(np.maximum(power, 1e-12))


def waking_zeros(samples: np.ndarray, rate: int) -> int:
    """How many exact zeros a take begins with that its input sent while waking up, which are not the take's: those
    before its first sound when it came within DIGITAL_SILENCE_S; 0 when it came later, or never: then the take
    began with its zeros (a muted input, a noise filter's pause), and they stay."""
    nonzero = np.flatnonzero(np.asarray(samples[: int(DIGITAL_SILENCE_S * rate)]))
    return int(nonzero[0]) if len(nonzero) else 0


def analyse_take(
    samples: np.ndarray,
    rate: int,
    settings: QualitySettings = QualitySettings(),
    input_break: InputBreak | None = None,
) -> TakeAnalysis:
    """The take's checks and trimmed samples. `input_break`: when the input sent nothing for a while during the
    take (`Recorder.input_break`), a failed input check; one that never came back is not also a word cut off at
    the end, which the speaker could not have helped."""
    samples = np.asarray(samples, dtype=np.float32).reshape(-1)
    duration = len(samples) / rate if rate else 0.0
    peak = float(np.max(np.abs(samples))) if len(samples) else 0.0
    clipped = float(np.mean(np.abs(samples) >= settings.clip_level)) if len(samples) else 0.0
    checks = [_clipping_check(clipped, settings)]
    if input_break is not None:
        checks.append(input_break.check())

    levels = frame_levels_db(samples, rate)
    frame = max(1, int(rate * FRAME_S))
    if len(levels) == 0 or float(np.max(levels)) < settings.silence_floor_dbfs:
        loudest = float(np.max(levels)) if len(levels) else -120.0
        reason = (
            f"no sound at all: every sample is exactly zero, so the input is {MUTED_INPUT}; unmute it or choose "
            "another input"
            if not samples.any()
            else f"no speech found: the loudest moment is {loudest:.0f} dBFS (speech needs at least "
            f"{settings.silence_floor_dbfs:.0f} dBFS); check the microphone and the chosen input device"
        )
        checks += [
            Check("snr", False, None, "no speech to measure the signal-to-noise ratio on"),
            Check("speech_duration", False, 0.0, reason),
            Check("silence", False, None, "nothing to trim: the take is silent"),
        ]
        return TakeAnalysis(tuple(checks), samples, rate, duration, duration, 0.0, 0.0, 0.0, None, clipped, dbfs(peak))

    noise_db = float(np.percentile(levels, settings.noise_percentile))
    speech_db = float(np.percentile(levels, settings.speech_percentile))
    threshold = noise_db + max(3.0, (speech_db - noise_db) / 2)
    threshold = max(threshold, settings.silence_floor_dbfs)
    active = levels >= threshold
    speech_s = float(np.count_nonzero(active)) * FRAME_S
    snr = _snr_db(speech_db, noise_db)
    checks.append(_snr_check(snr, noise_db, settings))
    checks.append(_duration_check(speech_s, settings))

    first, last = int(np.argmax(active)), len(active) - 1 - int(np.argmax(active[::-1]))
    pad = int(settings.keep_padding_s * rate)
    start = max(0, first * frame - pad)
    end = min(len(samples), (last + 1) * frame + pad)
    trimmed = samples[start:end]
    lead, tail = start / rate, (len(samples) - end) / rate
    edge = int(math.ceil(settings.edge_s / FRAME_S))
    cut_start, cut_end = first < edge, last >= len(active) - edge
    if input_break is not None and input_break.seconds is None:
        cut_end = False  # the input check says why: no pause before R would have helped
    if cut_start or cut_end:
        where = "start" if cut_start and not cut_end else "end" if cut_end and not cut_start else "start and end"
        advice = {
            "start": "wait a moment after ● Recording shows before you speak",
            "end": "wait a moment after the last word before stopping",
            "start and end": "leave a moment of silence before and after speaking",
        }[where]
        checks.append(
            Check(
                "silence",
                False,
                lead + tail,
                f"speech reaches the {where} of the take, so a word may be cut off: {advice}",
            )
        )
    else:
        checks.append(
            Check("silence", True, lead + tail, f"trimmed {lead:.2f} s of leading and {tail:.2f} s of trailing silence")
        )
    return TakeAnalysis(
        tuple(checks),
        np.ascontiguousarray(trimmed),
        rate,
        duration,
        len(trimmed) / rate,
        lead,
        tail,
        speech_s,
        snr,
        clipped,
        dbfs(peak),
    )


def _snr_db(speech_db: float, noise_db: float) -> float:
    """Speech-plus-noise level minus the noise floor, the noise's own power removed; capped at 100 dB."""
    speech_power, noise_power = 10 ** (speech_db / 10), 10 ** (noise_db / 10)
    signal = speech_power - noise_power
    if signal <= 0:
        return 0.0
    return float(min(100.0, 10 * math.log10(signal / max(noise_power, 1e-12))))


def _clipping_check(share: float, settings: QualitySettings) -> Check:
    if share > settings.max_clipped_share:
        return Check(
            "clipping",
            False,
            share,
            f"{100 * share:.2f} % of samples are clipped (at most {100 * settings.max_clipped_share:.2f} %): lower "
            "the input gain or move a little further from the microphone",
        )
    return Check("clipping", True, share, f"{100 * share:.3f} % of samples clipped")


def _snr_check(snr: float, noise_db: float, settings: QualitySettings) -> Check:
    if snr < settings.min_snr_db:
        return Check(
            "snr",
            False,
            snr,
            f"estimated SNR {snr:.1f} dB is below {settings.min_snr_db:.0f} dB (noise floor {noise_db:.0f} dBFS): "
            "record somewhere quieter or closer to the microphone",
        )
    return Check("snr", True, snr, f"estimated SNR {snr:.1f} dB (noise floor {noise_db:.0f} dBFS)")


def _duration_check(speech_s: float, settings: QualitySettings) -> Check:
    if speech_s < settings.min_speech_s:
        return Check(
            "speech_duration",
            False,
            speech_s,
            f"only {speech_s:.2f} s of speech (at least {settings.min_speech_s:.1f} s): read the whole prompt",
        )
    if speech_s > settings.max_speech_s:
        return Check(
            "speech_duration",
            False,
            speech_s,
            f"{speech_s:.1f} s of speech is longer than {settings.max_speech_s:.0f} s: split the prompt or stop sooner",
        )
    return Check("speech_duration", True, speech_s, f"{speech_s:.2f} s of speech")
