import math

import numpy as np
import pytest
from support import AUDIO_RATE, pitch, tone

from spokenbench.core.audio import dsp

RATE = AUDIO_RATE


def test_speech_level_of_a_sine_ignores_pauses():
    sine = tone(440, 1.0, amplitude=0.5)
    expected = 20 * math.log10(0.5 / math.sqrt(2))
    assert dsp.speech_level_db(sine, RATE) == pytest.approx(expected, abs=0.1)
    with_pause = np.concatenate([sine, np.zeros(RATE * 3, np.float32)])
    assert dsp.speech_level_db(with_pause, RATE) == pytest.approx(expected, abs=0.1)
    assert dsp.speech_level_db(np.zeros(RATE, np.float32), RATE) == -math.inf


def test_match_level_brings_segments_to_one_level():
    quiet, loud = tone(300, 0.5, 0.05), tone(500, 0.5, 0.9)
    levels = [dsp.speech_level_db(dsp.match_level(s, RATE, -26.0), RATE) for s in (quiet, loud)]
    assert levels == pytest.approx([-26.0, -26.0], abs=0.05)


def test_resample_keeps_duration_and_frequency():
    source = tone(220, 2.0, rate=24_000)
    out = dsp.resample(source, 24_000, RATE)
    assert len(out) == 2 * RATE
    assert pitch(out) == pytest.approx(220, rel=0.02)


@pytest.mark.parametrize("speed", [0.75, 1.25])
def test_time_stretch_changes_duration_not_pitch(speed):
    voiced = np.concatenate([tone(180, 0.6), np.zeros(RATE // 5, np.float32), tone(180, 0.6)])
    stretched = dsp.time_stretch(voiced, RATE, speed)
    assert len(stretched) / RATE == pytest.approx(len(voiced) / RATE / speed, rel=0.01)
    assert pitch(stretched[RATE // 10 :]) == pytest.approx(pitch(voiced[RATE // 10 :]), rel=0.03)


def test_volume_scales_and_limits_instead_of_clipping():
    quiet, limited = dsp.apply_volume(tone(300, 0.5, 0.2), 1.5)
    assert limited == 0 and np.abs(quiet).max() == pytest.approx(0.3, abs=1e-3)
    loud, limited = dsp.apply_volume(tone(300, 0.5, 0.9), 1.5)
    assert limited > 0, "limiting must be reported"
    assert np.abs(loud).max() <= 0.99


def test_noise_reaches_the_target_snr_reproducibly():
    speech = tone(300, 2.0, 0.3)
    noisy = dsp.add_noise(speech, RATE, 10.0, seed="item-1")
    noise = noisy - speech
    snr = dsp.speech_level_db(speech, RATE) - 10 * math.log10(np.mean(noise.astype(np.float64) ** 2))
    assert snr == pytest.approx(10.0, abs=0.2)
    assert np.array_equal(noisy, dsp.add_noise(speech, RATE, 10.0, seed="item-1"))
    assert not np.array_equal(noisy, dsp.add_noise(speech, RATE, 10.0, seed="item-2"))


def test_find_pauses_locates_silences():
    audio = np.concatenate([tone(300, 0.5), np.zeros(int(0.3 * RATE), np.float32), tone(300, 0.5)])
    [(start, end)] = [p for p in dsp.find_pauses(audio, RATE) if 0 < p[0] and p[1] < len(audio)]
    assert start / RATE == pytest.approx(0.5, abs=0.02) and end / RATE == pytest.approx(0.8, abs=0.02)
