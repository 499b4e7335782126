"""Signal processing for assembly and perturbation, vectorized with numpy/scipy.

Loudness is the active speech level (in the spirit of ITU-T P.56): the mean power of 20 ms frames that are
within 35 dB of the loudest frame, in dBFS. Unlike whole-file RMS it ignores pauses, and unlike BS.1770
integrated loudness it works on clips shorter than 400 ms such as a spoken "A"."""

from __future__ import annotations

import functools
import hashlib
import math

import numpy as np

FRAME_SECONDS = 0.02
ACTIVE_RANGE_DB = 35.0
SILENCE_FLOOR_DB = -60.0
LIMIT_THRESHOLD = 0.95  # peaks above this are compressed smoothly…
LIMIT_CEILING = 0.99  # …so that none reaches this level


def _frame_power(samples: np.ndarray, frame: int) -> np.ndarray:
    """Mean power of consecutive frames of `frame` samples (a shorter tail counts as one more frame)."""
    usable = len(samples) // frame * frame
    frames = samples[:usable].astype(np.float64).reshape(-1, frame)
    power = np.einsum("ij,ij->i", frames, frames) / frame
    tail = samples[usable:].astype(np.float64)
    return np.append(power, np.mean(tail**2)) if len(tail) else power


def speech_level_db(samples: np.ndarray, rate: int) -> float:
    """Active speech level in dBFS; -inf for digital silence."""
    power = _frame_power(samples, max(1, int(rate * FRAME_SECONDS)))
    peak = power.max(initial=0.0)
    if peak <= 0:
        return -math.inf
    floor = max(peak * 10 ** (-ACTIVE_RANGE_DB / 10), 10 ** (SILENCE_FLOOR_DB / 10))
    active = power[power >= floor]
    if active.size == 0:
        return -math.inf
    return 10 * math.log10(active.mean())


def match_level(samples: np.ndarray, rate: int, target_db: float, level_db: float | None = None) -> np.ndarray:
    level = speech_level_db(samples, rate) if level_db is None else level_db
    if not math.isfinite(level):
        return samples
    return (samples * np.float32(10 ** ((target_db - level) / 20))).astype(np.float32)


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Polyphase resampling through scipy's public `scipy.signal.resample_poly`, with its default anti-aliasing
    filter (a Kaiser-windowed FIR designed once per rate pair by `_lowpass`, as firwin would). scipy.signal is
    imported on first use (0.8 s of CPU, paid once per process and only by commands that resample); earlier
    versions ran its private compiled kernel directly to skip that import, which tied them to scipy's private
    layout. The output is the same, bit for bit (tests/core/audio/test_dsp.py)."""
    if from_rate == to_rate:
        return samples
    from scipy.signal import resample_poly

    divisor = math.gcd(from_rate, to_rate)
    up, down = to_rate // divisor, from_rate // divisor
    return resample_poly(np.asarray(samples), up, down, window=_lowpass(up, down)).astype(np.float32, copy=False)


def resample_fft(samples: np.ndarray, up: int, down: int) -> np.ndarray:
    """Resampling by up/down in the frequency domain (the spectrum cut or zero-extended: an ideal low-pass),
    for analysis and voice effects where scipy.signal's import (0.7 s) would cost more than the work. Edges may
    ring slightly (the method treats the clip as periodic), which speech clips starting and ending in silence
    do not show."""
    from scipy import fft  # 0.2 s to import, and it keeps float32

    if up == down or len(samples) == 0:
        return np.asarray(samples, dtype=np.float32)
    length = len(samples)
    padded = fft.next_fast_len(length, real=True)
    out_padded = max(1, int(round(padded * up / down)))
    spectrum = fft.rfft(np.asarray(samples, dtype=np.float32), padded)
    bins = out_padded // 2 + 1
    if bins <= len(spectrum):
        spectrum = spectrum[:bins]
    else:
        spectrum = np.concatenate([spectrum, np.zeros(bins - len(spectrum), spectrum.dtype)])
    out = fft.irfft(spectrum, out_padded) * np.float32(out_padded / padded)
    return out[: max(1, int(round(length * up / down)))].astype(np.float32)


@functools.cache
def _lowpass(up: int, down: int) -> np.ndarray:
    """The FIR filter resample_poly designs itself — scipy.signal.firwin(20 max(up, down) + 1, 1 / max(up, down),
    window=("kaiser", 5.0)) — computed the same way in numpy, to the same float32 values (tests/core/audio/
    test_dsp.py), without importing scipy.signal."""
    max_rate = max(up, down)
    taps = 2 * 10 * max_rate + 1
    cutoff = 1.0 / max_rate
    centre = 0.5 * (taps - 1)
    offsets = np.arange(0, taps) - centre
    window = np.i0(5.0 * np.sqrt(1 - (offsets / centre) ** 2.0)) / np.i0(5.0)
    lowpass = cutoff * np.sinc(cutoff * offsets) * window
    return (lowpass / np.sum(lowpass)).astype(np.float32)


def silence(seconds: float, rate: int) -> np.ndarray:
    return np.zeros(int(round(seconds * rate)), dtype=np.float32)


def limit_peaks(samples: np.ndarray) -> tuple[np.ndarray, int]:
    """Soft-limit samples above the threshold instead of clipping; returns the audio and how many samples
    had to be limited (0 means the gain fitted without touching the waveform)."""
    over = np.abs(samples) > LIMIT_THRESHOLD
    count = int(over.sum())
    if count == 0:
        return samples, 0
    headroom = LIMIT_CEILING - LIMIT_THRESHOLD
    limited = samples.copy()
    excess = np.abs(samples[over]) - LIMIT_THRESHOLD
    limited[over] = np.sign(samples[over]) * (LIMIT_THRESHOLD + headroom * np.tanh(excess / headroom))
    return limited.astype(np.float32), count


def apply_volume(samples: np.ndarray, factor: float) -> tuple[np.ndarray, int]:
    """Scale amplitude by `factor` (BiasInEar's ×0.5 / ×1.5), limiting rather than clipping peaks."""
    return limit_peaks((samples * np.float32(factor)).astype(np.float32))


def add_noise(samples: np.ndarray, rate: int, snr_db: float, seed: int | str) -> np.ndarray:
    """White Gaussian noise at `snr_db` below the active speech level, reproducible from `seed`."""
    level = speech_level_db(samples, rate)
    if not math.isfinite(level):
        return samples
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:8], "little"))
    noise_power = 10 ** ((level - snr_db) / 10)
    noise = rng.standard_normal(len(samples)).astype(np.float32) * np.float32(math.sqrt(noise_power))
    return (samples + noise).astype(np.float32)


def time_stretch(samples: np.ndarray, rate: int, speed: float) -> np.ndarray:
    """Change tempo by `speed` (1.25 = 25% faster) keeping pitch, by WSOLA: overlap-add windows taken from the
    input at the new rate, each shifted within ±tolerance to the position most similar to the natural
    continuation of the previous window. Chosen over a phase vocoder because it keeps speech free of phasiness."""
    if speed == 1.0 or len(samples) == 0:
        return samples
    window = int(rate * 0.03) // 2 * 2  # 30 ms
    hop = window // 2
    tolerance = int(rate * 0.01)  # ±10 ms search
    padded = np.concatenate(
        [np.zeros(tolerance + window, np.float32), samples, np.zeros(tolerance + 2 * window, np.float32)]
    )
    offset = tolerance + window
    out_length = int(len(samples) / speed)
    frames = out_length // hop + 1
    taper = np.hanning(window).astype(np.float32)
    output = np.zeros(frames * hop + window, dtype=np.float32)
    norm = np.zeros_like(output)
    previous = offset  # input position of the previous chosen window
    for k in range(frames):
        nominal = offset + int(k * hop * speed)
        if k == 0:
            start = nominal
        else:
            natural = padded[previous + hop : previous + hop + window]  # what would follow the last window
            region = padded[nominal - tolerance : nominal + tolerance + window]
            if len(region) < window or not natural.any():
                start = nominal
            else:
                scores = np.correlate(region, natural, mode="valid")
                start = nominal - tolerance + int(np.argmax(scores))
        segment = padded[start : start + window]
        if len(segment) < window:
            break
        output[k * hop : k * hop + window] += segment * taper
        norm[k * hop : k * hop + window] += taper
        previous = start
    nonzero = norm > 1e-3
    output[nonzero] /= norm[nonzero]
    return output[:out_length]


def find_pauses(
    samples: np.ndarray, rate: int, min_pause_s: float = 0.12, floor_db: float = -45.0
) -> list[tuple[int, int]]:
    """(start, end) sample ranges of pauses: runs of 10 ms frames quieter than `floor_db` relative to the peak
    frame and at least `min_pause_s` long. Splitting inside such a run never cuts a word."""
    frame = max(1, int(rate * 0.01))
    power = _frame_power(samples, frame)
    peak = power.max(initial=0.0)
    if peak <= 0:
        return [(0, len(samples))]
    quiet = power < peak * 10 ** (floor_db / 10)
    edges = np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    min_frames = int(math.ceil(min_pause_s / 0.01))
    return [(s * frame, min(e * frame, len(samples))) for s, e in zip(starts, ends) if e - s >= min_frames]
