import math
import subprocess
import sys
from pathlib import Path

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


RATE_PAIRS = [(22_050, 16_000), (24_000, 16_000), (44_100, 16_000), (48_000, 16_000), (16_000, 22_050)]
RATE_PAIRS += [(8_000, 16_000), (22_050, 48_000), (32_000, 16_000), (11_025, 16_000), (44_100, 48_000)]


@pytest.mark.parametrize(("from_rate", "to_rate"), RATE_PAIRS)
def test_resample_is_bit_for_bit_scipys_resample_poly(from_rate, to_rate):
    """resample's filter and output are exactly what firwin and resample_poly give (what the earlier private-kernel
    path gave too, so stored inputs assembled before stay identical)."""
    from scipy.signal import firwin, resample_poly

    divisor = math.gcd(from_rate, to_rate)
    up, down = to_rate // divisor, from_rate // divisor
    designed = firwin(20 * max(up, down) + 1, 1 / max(up, down), window=("kaiser", 5.0)).astype(np.float32)
    assert np.array_equal(dsp._lowpass(up, down), designed)
    rng = np.random.default_rng(from_rate + to_rate)
    for length in (1, 7, 999, 2 * from_rate + 13):
        samples = (0.3 * rng.standard_normal(length)).astype(np.float32)
        expected = resample_poly(samples, up, down, window=designed)
        out = dsp.resample(samples, from_rate, to_rate)
        assert out.dtype == np.float32 and np.array_equal(out, expected), (from_rate, to_rate, length)


def test_resampling_loads_no_private_scipy_module_on_its_own():
    """resample goes through scipy.signal's public resample_poly: no scipy module is loaded by file path past its
    package (every loaded module's parent package is loaded too), and core never loads modules by path."""
    code = (
        "import sys, numpy as np\n"
        "from spokenbench.core.audio import dsp\n"
        "dsp.resample(np.ones(5000, np.float32), 22050, 16000)\n"
        "orphans = [m for m in sys.modules if m.startswith('scipy.') and m.rsplit('.', 1)[0] not in sys.modules]\n"
        "print('scipy.signal' in sys.modules, orphans)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True []"
    core = Path(dsp.__file__).parents[1]
    assert not [p for p in core.rglob("*.py") if "spec_from_file_location" in p.read_text(encoding="utf-8")]


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
