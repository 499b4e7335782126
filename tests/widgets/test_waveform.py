"""The waveform picture made with numpy: what is lit, and that painting is one image, not a call per column."""

import numpy as np
from PySide6.QtGui import QImage

from spokenbench.core.audio.io import encode_wav
from spokenbench.widgets.waveform import BACKGROUND, WAVE, WaveformView, peaks, prepare_clip, waveform_pixels


def lit_rows(pixels: np.ndarray, column: int) -> np.ndarray:
    return np.flatnonzero(pixels[:, column] == 1)


def test_a_half_scale_tone_lights_the_middle_half_and_silence_a_thin_line():
    rate = 16_000
    tone = 0.5 * np.sin(2 * np.pi * 440 * np.arange(rate) / rate)
    samples = np.concatenate([tone, np.zeros(rate)]).astype(np.float32)
    pixels = waveform_pixels(peaks(samples), width=200, height=108)  # half height 50 after the 4-pixel margin
    assert pixels.shape == (108, 200) and pixels.dtype == np.uint8
    loud = lit_rows(pixels, 50)
    assert 27 <= loud.min() <= 30 and 78 <= loud.max() <= 81  # 54 ± 25
    quiet = lit_rows(pixels, 150)
    assert 1 <= len(quiet) <= 2 and abs(quiet.mean() - 54) <= 1
    assert pixels[0, 50] == 0


def test_fewer_peaks_than_pixels_spread_over_the_whole_width():
    stored = np.array([[-1.0, 1.0], [0.0, 0.0]], np.float32)  # a full-scale column, then silence
    pixels = waveform_pixels(stored, width=10, height=40)
    assert all(len(lit_rows(pixels, x)) > 30 for x in range(5))
    assert all(len(lit_rows(pixels, x)) <= 2 for x in range(5, 10))


def test_the_view_paints_the_clip_and_remakes_the_picture_only_when_the_size_changes(qtbot):
    rate = 16_000
    samples = (0.8 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)).astype(np.float32)
    view = WaveformView()
    qtbot.addWidget(view)
    view.resize(300, 120)
    view.set_clip(prepare_clip(encode_wav(samples, rate), "tone"))
    first = view.grab().toImage()
    made = view._wave_image
    view.grab()
    assert view._wave_image is made  # the same picture reused for the next paint
    middle = first.pixelColor(150, 60)
    assert (middle.red(), middle.green(), middle.blue()) == WAVE
    corner = first.pixelColor(150, 2)
    assert (corner.red(), corner.green(), corner.blue()) == BACKGROUND
    view.resize(400, 120)
    view.grab()
    assert view._wave_image is not made and view._wave_image.width() == 400
    assert isinstance(view._wave_image, QImage)
