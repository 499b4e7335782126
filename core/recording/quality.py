"""Quality checks on every take, each with pass/fail and a reason a speaker can act on:

- clipping: the share of samples at full scale (the input gain is too high);
- SNR: estimated from 20 ms frame energies — the noise floor is a low percentile of the frame levels, the speech
  level a high one; their difference, with the noise's own power taken out, is the SNR;
- speech duration: the active speech (frames well above the noise floor) must lie within bounds;
- silence: leading and trailing silence is trimmed (a little padding kept); speech touching the very start or end
  of the take fails, because a word was probably cut off;
- input: only when the input sent nothing for a while during the take (`InputBreak`: a microphone pulled out, the
  sound server gone, a wireless headset dropping out), which fails: what was read meanwhile is not in the take.

Before a take, and during one, the level in words (`level_verdict`): for a speaker who cannot see the meter, and
for anyone checking the microphone before the first take.

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
# The level's bands, by the loudest block: a block at full scale (the clipping check's level) is too loud; one within
# 1 dB of it is close (the meter's red: a louder word would clip); below QUIET_PEAK_DBFS a voice is too quiet (the
# noise floor of a laptop's microphone and its hum come within 20-30 dB of it, and the SNR check fails in an
# ordinary room).
CLOSE_PEAK_DBFS = -1.0
QUIET_PEAK_DBFS = -30.0
# A few seconds of reading have few pauses, so a level check takes the room's noise from its quietest blocks (the
# lowest 1 %: a pause of 60 ms in 3 s), not from the lowest tenth as a take's SNR check does: a take begins and ends
# in silence. Measured on espeak's sentence read at once: its lowest tenth was speech, 32 dB above the room.
LEVEL_NOISE_PERCENTILE = 1.0


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


def full_scale_dbfs(settings: QualitySettings = QualitySettings()) -> float:
    """The level of a clipped sample (the clipping check's `clip_level`), in dBFS: a block that reaches it clips."""
    return dbfs(settings.clip_level)


class VoiceOnset:
    """When a voice begins among an input's block levels (a level check counts its seconds from it): ONSET_BLOCKS
    blocks in a row ONSET_ABOVE_ROOM_DB above the room and above the silence floor a take's speech needs. The room
    is the ROOM_PERCENTILE of the blocks heard before the run, once there are ROOM_BLOCKS of them: not the quietest
    block, which an input fading in or a room gone briefly quiet would leave far below the room for good. Blocks of
    exact zeros (waking, muted, a noise filter's pause) are no room. A key's click (a block or two) is no voice; nor
    is a steady noise, however loud."""

    ONSET_BLOCKS = 3  # 64 ms at 48 kHz in blocks of 1024
    ONSET_ABOVE_ROOM_DB = 10.0
    ROOM_BLOCKS = 10  # 0.2 s
    ROOM_PERCENTILE = 20.0

    def __init__(self, settings: QualitySettings = QualitySettings()):
        self.floor = settings.silence_floor_dbfs
        self.heard: list[float] = []  # the RMS of each block of sound before the current run
        self.run: list[tuple[float, float]] = []  # (RMS, when) of each block of the current run above the room
        self.at: float | None = None  # when the voice began

    @property
    def room(self) -> float | None:
        """The room's level (dBFS) so far, or None before ROOM_BLOCKS blocks of sound."""
        return float(np.percentile(self.heard, self.ROOM_PERCENTILE)) if len(self.heard) >= self.ROOM_BLOCKS else None

    def feed(self, rms_dbfs: float, at: float) -> float | None:
        """One block's RMS (dBFS) and arrival time; when the voice began, once it has."""
        if self.at is not None or rms_dbfs <= -120.0:
            return self.at
        room = self.room
        if room is not None and rms_dbfs >= max(self.floor, room + self.ONSET_ABOVE_ROOM_DB):
            self.run.append((rms_dbfs, at))
            if len(self.run) >= self.ONSET_BLOCKS:
                self.at = self.run[0][1]
        else:
            self.heard += [rms for rms, _at in self.run] + [rms_dbfs]  # a click's blocks are the room's again
            self.run.clear()
        return self.at


@dataclass(frozen=True)
class LevelVerdict:
    """What the input's level was over some seconds (`level_verdict`): its band, the figures, and the words."""

    band: str  # muted / silent / no voice / loud (at full scale) / quiet / noisy (too close to the room's noise) / good
    peak_dbfs: float
    noise_dbfs: float | None  # the room's noise floor, when there were enough blocks to tell
    snr_db: float | None
    words: str  # "Level good: your voice peaked at -9 dBFS, 41 dB above the room's noise"


def level_verdict(
    rms_dbfs, peak_dbfs, within: str = "", voice_heard: bool = True, settings: QualitySettings = QualitySettings()
) -> LevelVerdict:
    """The level of the blocks whose RMS and peak (dBFS, -120 for exact zeros: `recorder.block_level`) are given, in
    words a speaker can act on: too loud, too quiet or good by the loudest block, and how far the voice stands
    above the room's noise (its quietest blocks' RMS, LEVEL_NOISE_PERCENTILE; the SNR is then the check's). The
    peaks may be of fewer blocks than the RMS: a check's from the voice on, its room from before it too. Without
    `voice_heard` (a check that heard none, `VoiceOnset`), the loudest moment is no voice's: band "no voice".
    `within` follows the band in the words ("in the last 3 seconds"). Blocks of exact zeros (a noise filter's
    pauses) are no room: left out of its noise."""
    rms = np.asarray(rms_dbfs, dtype=np.float64).reshape(-1)
    peaks = np.asarray(peak_dbfs, dtype=np.float64).reshape(-1)
    peak = float(np.max(peaks)) if len(peaks) else -120.0
    said_within = f" {within}" if within else ""
    if peak <= -120.0:
        return LevelVerdict(
            "muted",
            peak,
            None,
            None,
            f"No sound at all{said_within}: every sample was exactly zero, so the input is {MUTED_INPUT}",
        )
    if peak < settings.silence_floor_dbfs:
        return LevelVerdict(
            "silent",
            peak,
            None,
            None,
            f"Nothing heard{said_within}: the loudest moment was {math.floor(peak)} dBFS; check the microphone and the "
            "chosen input",
        )
    noise = snr = None
    sounding = rms[rms > -120.0]
    if len(sounding) >= 10:  # about 0.2 s: enough blocks to tell the voice from the room
        noise = float(np.percentile(sounding, LEVEL_NOISE_PERCENTILE))
        snr = _snr_db(float(np.percentile(sounding, settings.speech_percentile)), noise)
    if snr is None:
        above = ""
    elif snr >= settings.min_snr_db:
        above = f", {round(snr)} dB above the room's noise"
    else:  # said whole, never rounded up to the dB a take needs
        how = f"only {math.floor(snr)} dB above" if snr >= 1 else "no louder than"
        above = f", {how} the room's noise at {noise:.0f} dBFS (a take needs {settings.min_snr_db:.0f} dB)"
    # never rounded into another band: one decimal next to full scale, whole dB down (floor) below the quiet limit
    shown = f"{peak:.1f}" if peak > -3.0 else f"{math.floor(peak) if peak < QUIET_PEAK_DBFS else round(peak)}"
    shown += " dBFS"
    close = ", close to full scale (a louder word would clip)" if peak >= CLOSE_PEAK_DBFS else ""
    if not voice_heard:
        room = "" if noise is None else f", the room's noise {noise:.0f} dBFS"
        return LevelVerdict(
            "no voice",
            peak,
            noise,
            snr,
            f"No voice heard{said_within}: the loudest moment was {shown}{room}; speak once the check is said, "
            "closer to the microphone",
        )
    if peak >= full_scale_dbfs(settings):
        band, headline = "loud", "too loud"
        words = "your voice reached full scale; lower the input gain or move a little further from the microphone"
    elif peak < QUIET_PEAK_DBFS:
        band, headline = "quiet", "too quiet"
        words = (
            f"your voice peaked at {shown}, below {QUIET_PEAK_DBFS:.0f} dBFS{above}; raise the input gain or move "
            "closer to the microphone"
        )
    elif snr is not None and snr < settings.min_snr_db:
        band, headline = "noisy", "good, but the room is noisy"
        words = f"your voice peaked at {shown}{close}{above}; record somewhere quieter or closer to the microphone"
    else:
        band, headline, words = "good", "good", f"your voice peaked at {shown}{close}{above}"
    return LevelVerdict(band, peak, noise, snr, f"Level {headline}{said_within}: {words}")
