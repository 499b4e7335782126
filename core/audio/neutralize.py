"""Gender-neutralized voices offline: a signal-level APPROXIMATION of the gender paper's Section 5.

The paper neutralizes a voice by averaging a male and a female Kokoro speaker embedding (embedding-based
gender-ambiguous synthesis, after Székely et al., 2023); `core/audio/tts/kokoro.py` does exactly that. Without
Kokoro there is no embedding to average, so this module moves a finished clip's acoustic gender cues instead —
an approximation, named as one wherever it is stored or shown (`signal-approximation`, voices ending in
`-neutral-approx`):

1. **Pitch.** The clip's median F0 (core/audio/pitch.py) is moved to `NEUTRAL_F0_HZ` (160 Hz, inside the
   gender-ambiguous band of core/audio/voice_gender.py) by resampling — every frequency scales by the same
   ratio p — followed by WSOLA time-stretching back to the original duration (pitch kept, core/audio/dsp.py).
2. **Formants.** Resampling moved the formants by p as well, which would turn a male voice into a child's.
   The spectral envelope is therefore put back where the formant target wants it: each STFT frame is divided
   by its own cepstrally smoothed envelope and multiplied by the original frame's envelope, warped along the
   frequency axis by the formant factor f = p ** FORMANT_EXPONENT — a partial shift (a male voice's formants
   rise by about 10%, a female voice's fall by about 7%), about half the typical male-female difference.

The result keeps the words and timing and lands in the ambiguous pitch band; it is not a voice a listener
would take for a natural speaker, and classifiers trained on natural speech may still find gender cues the
shift leaves (voice quality, breathiness, the synthesizer's own character). Treat results on these clips as an
input-level probe in the spirit of the paper's Section 5, not as a reproduction of it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from spokenbench.core.audio.dsp import match_level, resample_fft, speech_level_db, time_stretch
from spokenbench.core.audio.io import AudioError
from spokenbench.core.audio.pitch import median_f0

METHOD = "signal-approximation"  # clips.neutralization for clips made here
EMBEDDING_METHOD = "embedding-average"  # clips.neutralization for Kokoro's averaged embeddings
NEUTRAL_F0_HZ = 160.0
FORMANT_EXPONENT = 0.25
PITCH_FACTOR_RANGE = (0.5, 2.0)
MAX_RATIO_DENOMINATOR = 40  # the pitch ratio as a small fraction keeps the resampling filter short
ENVELOPE_GAIN_LIMIT_DB = 18.0
OVERLAP = 2  # STFT frames per frame length: the gain changes slowly, so half-overlapping frames suffice  # where the shifted signal has no energy, do not amplify its noise further


@dataclass(frozen=True)
class Neutralized:
    samples: np.ndarray
    source_f0: float
    pitch_factor: float
    formant_factor: float


def neutralize_approximation(
    samples: np.ndarray,
    rate: int,
    target_f0: float = NEUTRAL_F0_HZ,
    source_f0: float | None = None,
    fallback_f0: float | None = None,
) -> Neutralized:
    """The clip with its median F0 moved to `target_f0` and its formants part of the way along (see the module
    docstring). `source_f0` is measured from the clip when not given; `fallback_f0` (the voice's typical F0) is
    used when the clip is too short to measure, such as a spoken letter."""
    samples = np.asarray(samples, dtype=np.float32)
    if source_f0 is None:
        source_f0 = median_f0(samples, rate) or fallback_f0
    if source_f0 is None:
        raise AudioError("too little voiced speech to neutralize the clip (no pitch found)")
    ratio = Fraction(float(np.clip(target_f0 / source_f0, *PITCH_FACTOR_RANGE))).limit_denominator(
        MAX_RATIO_DENOMINATOR
    )
    pitch_factor = float(ratio)
    formant_factor = pitch_factor**FORMANT_EXPONENT
    if len(samples) == 0 or ratio == 1:
        return Neutralized(samples, source_f0, 1.0, 1.0)
    # every frequency × p and duration / p, then the duration restored with the pitch kept
    shifted = resample_fft(samples, ratio.denominator, ratio.numerator)
    shifted = time_stretch(shifted, rate, len(shifted) / len(samples))
    shifted = _fit_length(shifted, len(samples))
    out = _move_envelope(samples, shifted, rate, formant_factor)
    level = speech_level_db(samples, rate)
    if math.isfinite(level):
        out = match_level(out, rate, level)
    peak = float(np.abs(out).max(initial=0.0))
    if peak > 0.99:
        out = out * np.float32(0.99 / peak)
    return Neutralized(out.astype(np.float32), source_f0, pitch_factor, formant_factor)


def _fit_length(samples: np.ndarray, length: int) -> np.ndarray:
    if len(samples) >= length:
        return samples[:length]
    return np.concatenate([samples, np.zeros(length - len(samples), np.float32)])


def _frame_size(rate: int) -> int:
    return 1 << int(round(math.log2(rate * 0.046)))  # about 46 ms: 1024 samples at 22.05 kHz


def _stft(samples: np.ndarray, size: int) -> np.ndarray:
    """Spectra of Hann-windowed frames every half frame (scipy's FFT keeps float32: twice numpy's speed)."""
    from scipy import fft

    hop = size // OVERLAP
    padded = np.concatenate([np.zeros(size, np.float32), samples, np.zeros(size + hop, np.float32)])
    count = 1 + (len(padded) - size) // hop
    frames = np.lib.stride_tricks.sliding_window_view(padded, size)[::hop][:count]
    return fft.rfft(frames * np.hanning(size).astype(np.float32), axis=1)


def _istft(spectra: np.ndarray, size: int, length: int) -> np.ndarray:
    """Overlap-add of the Hann-windowed inverse frames, normalised by the summed squared window. Each hop-long
    block of output is the sum of OVERLAP frames' parts: OVERLAP array additions, no loop over frames."""
    from scipy import fft

    hop = size // OVERLAP
    window = np.hanning(size).astype(np.float32)
    frames = (fft.irfft(spectra, size, axis=1) * window).reshape(len(spectra), OVERLAP, hop)
    blocks = np.zeros((len(spectra) + OVERLAP - 1, hop), np.float32)
    norm = np.zeros_like(blocks)
    squared = (window**2).reshape(OVERLAP, hop)
    for part in range(OVERLAP):
        blocks[part : part + len(spectra)] += frames[:, part]
        norm[part : part + len(spectra)] += squared[part]
    out = (blocks / np.maximum(norm, 1e-2)).ravel()
    return out[size : size + length]


def _envelope(spectra: np.ndarray, size: int, rate: int) -> np.ndarray:
    """Cepstrally smoothed magnitude envelope of each frame: the real cepstrum kept below 1.6 ms (quefrencies
    shorter than the period of any F0 up to 600 Hz), so harmonics are smoothed away and formants stay."""
    from scipy import fft

    log_magnitude = np.log(np.abs(spectra) + np.float32(1e-7))
    cepstrum = fft.irfft(log_magnitude, size, axis=1)
    keep = max(8, int(rate / 600))
    cepstrum[:, keep : size - keep + 1] = 0.0
    return np.exp(fft.rfft(cepstrum, size, axis=1).real)


def _warp(envelope: np.ndarray, factor: float) -> np.ndarray:
    """The envelope with every feature moved from frequency k to k × factor (linear interpolation per bin)."""
    bins = envelope.shape[1]
    source = np.clip(np.arange(bins) / factor, 0, bins - 1)
    low = np.floor(source).astype(int)
    high = np.minimum(low + 1, bins - 1)
    weight = (source - low).astype(np.float32)
    return envelope[:, low] * (1 - weight) + envelope[:, high] * weight


def _move_envelope(original: np.ndarray, shifted: np.ndarray, rate: int, formant_factor: float) -> np.ndarray:
    """`shifted` with each frame's spectral envelope replaced by the original's, warped by `formant_factor`."""
    size = _frame_size(rate)
    original_spectra = _stft(original, size)
    shifted_spectra = _stft(shifted, size)
    wanted = _warp(_envelope(original_spectra, size, rate), formant_factor)
    limit = 10 ** (ENVELOPE_GAIN_LIMIT_DB / 20)
    gain = np.clip(wanted / _envelope(shifted_spectra, size, rate), 1 / limit, limit)
    return _istft(shifted_spectra * gain, size, len(original))
