"""Helpers for the voice-gender tests: speech-like synthetic signals with a known F0, and a small project holding
the demo's gender probes."""

import numpy as np
from scipy.signal import lfilter

from spokenbench.core.demo.project import DEMO_GENDER_PROBES, DEMO_GENDER_SOURCE, demo_file
from spokenbench.core.importers import ImportOptions, import_files

RATE = 16_000


def voiced(f0: float, seconds: float = 1.5, rate: int = RATE, formants=(700.0, 1200.0, 2600.0)) -> np.ndarray:
    """A vowel-like signal: a pulse train at `f0` (with a slow ±3% glide, as speech has) through resonators at
    `formants`, with 100 ms of silence around it."""
    t = np.arange(int(seconds * rate)) / rate
    frequency = f0 * (1 + 0.03 * np.sin(2 * np.pi * 1.5 * t))
    phase = np.cumsum(frequency) / rate
    pulses = (np.diff(np.floor(phase), prepend=0) > 0).astype(np.float64)
    signal = pulses
    for formant in formants:
        radius = np.exp(-np.pi * 90 / rate)
        signal = lfilter([1.0], [1, -2 * radius * np.cos(2 * np.pi * formant / rate), radius**2], signal)
    signal = signal / np.abs(signal).max() * 0.5
    pad = np.zeros(int(0.1 * rate))
    return np.concatenate([pad, signal, pad]).astype(np.float32)


def import_demo_probes(project) -> None:
    with demo_file(DEMO_GENDER_PROBES) as path:
        import_files(project, [path], "gender-probe", ImportOptions(source=DEMO_GENDER_SOURCE))
