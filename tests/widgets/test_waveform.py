"""The waveform picture made with numpy: what is lit, and that painting is one image, not a call per column."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
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


SCALED_SCREEN = r"""
import json
import numpy as np
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication
from spokenbench.core.audio.io import encode_wav
from spokenbench.widgets.waveform import WaveformView, prepare_clip, spectrogram_image

app = QApplication([])
rate = 16_000
samples = (0.8 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)).astype(np.float32)
view = WaveformView()
view.show()
seen = []
for width, height in ((300, 120), (301, 121), (333, 157), (150, 80)):
    view.resize(width, height)
    app.processEvents()
    view.show_spectrogram = False
    view.set_clip(prepare_clip(encode_wav(samples, rate), "tone"))
    grabbed = view.grab().toImage()
    wave = [view._wave_image.width(), view._wave_image.height()]
    view.show_spectrogram = True
    picture = spectrogram_image(samples, rate, (view.width(), view.height()), view.devicePixelRatioF())
    view.set_spectrogram(picture)
    shown = view.grab().toImage().convertToFormat(QImage.Format.Format_RGBA8888)
    drawn = np.frombuffer(shown.constBits(), np.uint8).reshape(shown.height(), shown.bytesPerLine() // 4, 4)
    drawn = drawn[:, : shown.width(), :3]
    playhead = round(shown.width() * picture.plot_left)  # the playhead's line, at the start
    outside = np.r_[0 : playhead - 3, playhead + 4 : shown.width()]
    same = drawn.shape[:2] == picture.shape and np.array_equal(drawn[:, outside], picture.rgba[:, outside, :3])
    seen.append({"grab": [grabbed.width(), grabbed.height()], "wave": wave, "picture": list(picture.shape[::-1]),
                 "fits": view.spectrogram_fits, "same_pixels": bool(same)})
print(json.dumps({"ratio": view.devicePixelRatioF(), "sizes": seen}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["1.25", "1.5"])
def test_on_a_scaled_screen_the_waveform_and_spectrogram_are_drawn_in_device_pixels(scale):
    """A laptop at 125 % or 150 %: the waveform and the spectrogram were drawn for the widget's logical pixels and
    stretched, the spectrogram's axis labels blurred. Now both are made in the widget's device pixels (as Qt rounds
    them) and shown pixel for pixel, at odd sizes too; and a spectrogram counts as fitting when it was drawn for
    the widget's size and ratio — judged by its pixels, one pixel off at odd sizes sent the Rating page into
    drawing it again five times a second. A widget narrower than the spectrogram's least width (200) fits too."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QT_SCALE_FACTOR": scale}
    done = subprocess.run([sys.executable, "-c", SCALED_SCREEN], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["ratio"] == float(scale)
    for size in seen["sizes"]:
        assert size["fits"], size
        if size["grab"][0] >= 200 * float(scale):  # drawn at the widget's size: pixel for pixel
            assert size["wave"] == size["picture"] == size["grab"] and size["same_pixels"], size


@pytest.mark.parametrize(("size", "text_scale"), [((900, 80), 2.0), ((900, 80), 1.0), ((900, 120), 1.5)])
def test_a_low_spectrogram_names_its_axes_in_short_rather_than_cut_at_its_edges(size, text_scale):
    """The Rating page at 200 % on a laptop leaves the picture 80 pixels high: 'frequency (kHz)' ran off its top and
    bottom and 'time (s)' off its bottom edge. The names go short ('kHz', 's') or away, never cut."""
    from spokenbench.widgets.waveform import spectrogram_image

    rate = 16_000
    samples = (0.5 * np.sin(2 * np.pi * 300 * np.arange(rate * 3) / rate)).astype(np.float32)
    picture = spectrogram_image(samples, rate, size, 1.0, text_scale)
    assert picture.shape == size[::-1]  # drawn for the height asked (100 at least before: squashed into 80)
    lit = picture.rgba[:, :, :3].max(axis=2) > 150  # light text on the dark margins
    margin = lit[:, : round(picture.shape[1] * picture.plot_left) - 3]
    assert not margin[0].any() and not margin[-1].any(), "a name on the left cut at the picture's top or bottom"
    assert not lit[-1].any(), "text cut at the picture's bottom"
    assert margin.any(), "the frequency axis keeps its numbers"
