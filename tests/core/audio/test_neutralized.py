"""The offline gender-neutralized approximation: pitch moved into the ambiguous band, formants part of the way,
duration and level kept; espeak's '-neutral-approx' voices store it as such; migration 10's column."""

import asyncio
import sqlite3

import numpy as np
import pytest
from gender_support import RATE, import_demo_probes, voiced

from spokenbench.core.audio.dsp import speech_level_db
from spokenbench.core.audio.io import AudioError
from spokenbench.core.audio.neutralize import (
    FORMANT_EXPONENT,
    METHOD,
    NEUTRAL_F0_HZ,
    _envelope,
    _frame_size,
    _stft,
    neutralize_approximation,
)
from spokenbench.core.audio.pitch import median_f0
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import get_backend
from spokenbench.core.audio.voice_gender import FEMALE_MIN_HZ, MALE_MAX_HZ, gender_of_f0


def formant_peak(samples: np.ndarray, rate: int, low: float, high: float) -> float:
    """Frequency of the strongest point of the mean cepstral envelope between low and high Hz."""
    size = _frame_size(rate)
    spectra = _stft(samples, size)
    loud = np.abs(spectra).sum(axis=1) > 0.1 * np.abs(spectra).sum(axis=1).max()
    envelope = _envelope(spectra[loud], size, rate).mean(axis=0)
    frequencies = np.fft.rfftfreq(size, 1 / rate)
    band = (frequencies >= low) & (frequencies <= high)
    return float(frequencies[band][np.argmax(envelope[band])])


@pytest.mark.parametrize("source_f0, direction", [(110.0, 1), (210.0, -1)])
def test_pitch_lands_in_the_ambiguous_band_and_formants_move_part_way(source_f0, direction):
    signal = voiced(source_f0, seconds=2.0, formants=(1000.0, 2200.0))
    result = neutralize_approximation(signal, RATE)
    assert result.source_f0 == pytest.approx(source_f0, rel=0.02)
    f0 = median_f0(result.samples, RATE)
    assert MALE_MAX_HZ < f0 < FEMALE_MIN_HZ and f0 == pytest.approx(NEUTRAL_F0_HZ, rel=0.03)
    assert gender_of_f0(f0) == "ambiguous"
    # the formant factor follows the pitch factor, a quarter of the way on a log scale
    assert result.formant_factor == pytest.approx(result.pitch_factor**FORMANT_EXPONENT)
    assert (result.formant_factor - 1) * direction > 0.05
    before = formant_peak(signal, RATE, 700, 1400)
    after = formant_peak(result.samples, RATE, 700, 1400)
    assert after / before == pytest.approx(result.formant_factor, rel=0.04)
    # the words keep their timing and loudness
    assert len(result.samples) == len(signal) and result.samples.dtype == np.float32
    # (matched, then lowered only where a peak would pass 0.99)
    assert speech_level_db(result.samples, RATE) == pytest.approx(speech_level_db(signal, RATE), abs=1.0)
    assert np.abs(result.samples).max() <= 0.99


def test_a_clip_without_pitch_needs_a_fallback():
    silent = np.zeros(RATE // 2, np.float32)
    with pytest.raises(AudioError, match="too little voiced speech"):
        neutralize_approximation(silent, RATE)
    short = voiced(110.0, seconds=0.02)  # one spoken letter's worth: too short to measure
    assert median_f0(short, RATE) is None
    result = neutralize_approximation(short, RATE, fallback_f0=110.0)
    assert result.source_f0 == 110.0 and len(result.samples) == len(short)


def test_a_voice_already_ambiguous_is_left_alone():
    signal = voiced(NEUTRAL_F0_HZ)
    result = neutralize_approximation(signal, RATE)
    assert result.pitch_factor == 1.0 and np.array_equal(result.samples, signal)


@pytest.mark.slow
def test_espeak_neutral_voices_are_stored_as_the_approximation(project):
    import_demo_probes(project)
    backend = get_backend("espeak")
    voices = ["espeak-male-neutral-approx", "espeak-female-2-neutral-approx"]
    plan = plan_synthesis(project.conn, backend, voices=voices, accents=["american"], kinds=("gender-probe",))
    report = asyncio.run(run_synthesis(project, plan))  # questions and options: short options must work too
    assert report.failed == 0, report.failures
    rows = project.conn.execute(
        "SELECT voice, speaker_gender, neutralization, count(*) FROM clips GROUP BY voice ORDER BY voice"
    ).fetchall()
    # per voice: 12 questions, 24 options (two per probe, as in the paper, since issue 25) and 3 instruction
    # tokens ('question', 'A', 'B'; a letter is too short to measure, so the voice's typical F0 stands in)
    assert [tuple(r) for r in rows] == [
        ("espeak-female-2-neutral-approx", "female", METHOD, 39),
        ("espeak-male-neutral-approx", "male", METHOD, 39),
    ]


def test_migration_10_allows_only_the_two_methods(project):
    conn = project.conn
    columns = {row[1] for row in conn.execute("PRAGMA table_info(clips)")}
    assert "neutralization" in columns
    insert = (
        "INSERT INTO clips(part, text, language, voice, speaker_gender, backend, cache_key, status, created_at, "
        "neutralization) VALUES ('token:A', 'A', 'en', 'v', 'male', 'b', ?, 'failed', 'now', ?)"
    )
    with project.transaction() as c:
        c.execute(insert, ("k1", "embedding-average"))
        c.execute(insert, ("k2", "signal-approximation"))
        c.execute(insert, ("k3", None))
    with pytest.raises(sqlite3.IntegrityError):
        with project.transaction() as c:
            c.execute(insert, ("k4", "pitch-shift"))


@pytest.mark.slow
def test_the_demo_speaks_the_probes_in_two_voices_per_gender_and_neutralized(built_demo):
    from spokenbench.core.store import Project

    with Project.open(built_demo) as project:
        conn = project.conn
        assert conn.execute("SELECT count(*) FROM clips WHERE speaker_gender IS NULL").fetchone()[0] == 0
        rows = conn.execute(
            "SELECT c.voice, c.speaker_gender, c.neutralization, count(DISTINCT c.item_id) FROM clips c "
            "JOIN items i ON i.id = c.item_id WHERE i.kind = 'gender-probe' AND c.part = 'question' "
            "AND c.accent = 'american' GROUP BY c.voice"
        ).fetchall()
    probes = {voice: (gender, method, items) for voice, gender, method, items in rows}
    for gender in ("male", "female"):
        plain = [v for v, (g, m, n) in probes.items() if g == gender and m is None and n == 12]
        neutral = [v for v, (g, m, n) in probes.items() if g == gender and m == METHOD and n == 12]
        assert len(plain) >= 2 and len(neutral) >= 1, probes
