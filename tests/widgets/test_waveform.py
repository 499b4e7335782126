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


SCALED_SCREEN = r"""
import json
import numpy as np
from PySide6.QtWidgets import QApplication
from spokenbench.core.audio.io import encode_wav
from spokenbench.widgets.waveform import WaveformView, prepare_clip, spectrogram_image

app = QApplication([])
rate = 16_000
samples = (0.8 * np.sin(2 * np.pi * 220 * np.arange(rate) / rate)).astype(np.float32)
view = WaveformView()
view.resize(300, 120)
view.show()
app.processEvents()
ratio = view.devicePixelRatioF()
view.set_clip(prepare_clip(encode_wav(samples, rate), "tone"))
view.grab()
view.show_spectrogram = True
picture = spectrogram_image(samples, rate, (view.width(), view.height()), ratio)
view.set_spectrogram(picture)
shown = view.grab().toImage().convertToFormat(view._wave_image.Format.Format_RGBA8888)
drawn = np.frombuffer(shown.constBits(), np.uint8).reshape(shown.height(), shown.bytesPerLine() // 4, 4)
playhead = round(shown.width() * picture.plot_left)  # the playhead's line, at the start
outside = np.r_[0 : playhead - 3, playhead + 4 : shown.width()]
same = drawn[:, outside, :3].shape == picture.rgba[:, outside, :3].shape and np.array_equal(
    drawn[:, outside, :3], picture.rgba[:, outside, :3]
)
print(json.dumps({"ratio": ratio, "wave": [view._wave_image.width(), view._wave_image.height()],
                  "picture": list(picture.shape), "fits": view.spectrogram_fits, "same_pixels": bool(same)}))
"""


def test_on_a_150_percent_screen_the_waveform_and_spectrogram_are_drawn_in_device_pixels():
    """A laptop at 150 %: the waveform and the spectrogram were drawn for the widget's logical pixels and stretched
    1.5 times, the spectrogram's axis labels blurred. Now both are made in device pixels and shown pixel for
    pixel, and a spectrogram drawn for another pixel ratio does not count as fitting (it is drawn again)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QT_SCALE_FACTOR": "1.5"}
    done = subprocess.run([sys.executable, "-c", SCALED_SCREEN], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"ratio": 1.5, "wave": [450, 180], "picture": [180, 450], "fits": True, "same_pixels": True}
