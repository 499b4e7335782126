"""Fundamental frequency (F0) of speech by YIN (de Cheveigné & Kawahara, 2002), vectorized with numpy.

Only numpy and scipy's FFT are used: the signal is brought to 8 kHz (F0 of speech lies well below
1 kHz), cut into 40 ms frames every 10 ms, and in each frame the cumulative-mean-normalised difference function
is computed for every lag at once (by FFT). A frame is voiced when its energy is within 35 dB of the loudest
frame and the function dips below the absolute threshold; its period is the first such dip, refined by a
parabola through its neighbours. The clip's estimate is the median F0 of its voiced frames."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from spokenbench.core.audio.dsp import resample_fft

ANALYSIS_RATE = 8_000
F0_MIN_HZ = 60.0
F0_MAX_HZ = 400.0
FRAME_SECONDS = 0.04  # two periods of the lowest F0 fit
HOP_SECONDS = 0.01
YIN_THRESHOLD = 0.2  # 0.15 left too few voiced frames in short espeak male words
VOICED_RANGE_DB = 35.0  # frames quieter than this below the loudest frame are not analysed
MIN_VOICED_FRAMES = 5  # fewer voiced frames than this: no estimate


@dataclass(frozen=True)
class F0Track:
    """F0 per 10 ms frame (NaN where unvoiced) and the frames' start times in seconds."""

    f0: np.ndarray
    times: np.ndarray

    @property
    def voiced(self) -> np.ndarray:
        return self.f0[np.isfinite(self.f0)]

    @property
    def voiced_share(self) -> float:
        return float(np.isfinite(self.f0).mean()) if len(self.f0) else 0.0

    def median(self) -> float | None:
        """Median F0 of the voiced frames in Hz; None when too few frames are voiced to tell."""
        voiced = self.voiced
        return float(np.median(voiced)) if len(voiced) >= MIN_VOICED_FRAMES else None


def f0_track(
    samples: np.ndarray,
    rate: int,
    f0_min: float = F0_MIN_HZ,
    f0_max: float = F0_MAX_HZ,
    threshold: float = YIN_THRESHOLD,
) -> F0Track:
    """YIN F0 of every 10 ms frame of mono float samples."""
    from scipy import fft  # float32-friendly and faster than numpy's for these sizes

    divisor = math.gcd(int(rate), ANALYSIS_RATE)
    x = resample_fft(samples, ANALYSIS_RATE // divisor, int(rate) // divisor)  # float32: half the FFT time
    width = int(FRAME_SECONDS * ANALYSIS_RATE)
    hop = int(HOP_SECONDS * ANALYSIS_RATE)
    min_lag = max(2, int(ANALYSIS_RATE / f0_max))
    max_lag = int(math.ceil(ANALYSIS_RATE / f0_min))
    span = width + max_lag
    if len(x) < span:
        return F0Track(np.full(0, np.nan), np.zeros(0))
    count = 1 + (len(x) - span) // hop
    frames = np.lib.stride_tricks.sliding_window_view(x, span)[::hop][:count]
    frames = frames - frames.mean(axis=1, keepdims=True)
    power = np.einsum("ij,ij->i", frames[:, :width], frames[:, :width]) / width
    f0 = np.full(count, np.nan)
    # only frames within VOICED_RANGE_DB of the loudest are analysed (pauses and most consonants are not)
    loud = np.flatnonzero(power >= power.max(initial=0.0) * 10 ** (-VOICED_RANGE_DB / 10))
    if power.max(initial=0.0) <= 0 or len(loud) == 0:
        return F0Track(f0, np.arange(count) * HOP_SECONDS)
    frames = frames[loud]
    # r(τ) = Σ_j x[j] x[j+τ] over the first `width` samples, for every lag at once
    size = fft.next_fast_len(span + width, real=True)
    spectrum = fft.rfft(frames, size)
    head = fft.rfft(frames[:, :width], size)
    correlation = fft.irfft(np.conj(head) * spectrum, size)[:, : max_lag + 1]
    # energies of the windows starting at each lag, from cumulative sums of squares
    squares = np.concatenate([np.zeros((len(frames), 1)), np.cumsum(frames**2, axis=1, dtype=np.float64)], axis=1)
    energy = squares[:, width : width + max_lag + 1] - squares[:, : max_lag + 1]
    difference = np.maximum(energy[:, :1] + energy - 2 * correlation, 0.0)
    # cumulative-mean-normalised difference d'(τ) = d(τ) τ / Σ_{k≤τ} d(k), d'(0) = 1
    lags = np.arange(max_lag + 1)
    running = np.cumsum(difference[:, 1:], axis=1)
    normalised = np.ones_like(difference)
    with np.errstate(divide="ignore", invalid="ignore"):
        normalised[:, 1:] = np.where(running > 0, difference[:, 1:] * lags[1:] / running, 1.0)
    below = normalised[:, min_lag:max_lag] < threshold
    dipping = np.flatnonzero(below.any(axis=1))
    if len(dipping) == 0:
        return F0Track(f0, np.arange(count) * HOP_SECONDS)
    rows = normalised[dipping]
    lag = min_lag + np.argmax(below[dipping], axis=1)  # the first lag under the threshold…
    while True:  # …walked down to the bottom of its dip, all frames at once
        step = (lag + 1 < max_lag) & (
            rows[np.arange(len(rows)), np.minimum(lag + 1, max_lag)] < rows[np.arange(len(rows)), lag]
        )
        if not step.any():
            break
        lag = lag + step
    index = np.arange(len(rows))
    a, b, c = rows[index, lag - 1], rows[index, lag], rows[index, lag + 1]
    curvature = a - 2 * b + c
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(curvature > 0, 0.5 * (a - c) / curvature, 0.0)
    frequency = ANALYSIS_RATE / (lag + np.clip(shift, -1, 1))  # a parabola through the dip's neighbours
    keep = (frequency >= f0_min) & (frequency <= f0_max)
    f0[loud[dipping[keep]]] = frequency[keep]
    return F0Track(f0, np.arange(count) * HOP_SECONDS)


def median_f0(samples: np.ndarray, rate: int) -> float | None:
    """Median F0 of the voiced frames in Hz (None when the clip holds too little voiced speech)."""
    return f0_track(samples, rate).median()
