"""The clip's picture: a waveform (min/max per pixel column) with a moving playhead, or its spectrogram.
Everything numeric is computed off the UI thread by `prepare_clip` (decode, speed rendering, peaks,
spectrogram); the widget only paints arrays it was handed. The waveform is drawn as one image made with numpy
(remade only when the clip or the size changes), not a line per pixel column: each Qt call lets a busy worker
thread take the GIL for up to the switch interval, so a thousand calls per paint stalled the UI thread by tens of
milliseconds while an import ran (tests/benchmarks/bench_rating.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QEvent, QPointF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPen, qRgb
from PySide6.QtWidgets import QSizePolicy, QWidget

from spokenbench.core.audio.dsp import time_stretch
from spokenbench.core.audio.io import decode_audio, encode_wav
from spokenbench.widgets import text_size

PEAK_COLUMNS = 2048  # enough for any window width; painting groups them per pixel column
BACKGROUND = (0x1E, 0x24, 0x30)
WAVE = (0x7F, 0xB3, 0xFF)


@dataclass(frozen=True)
class ClipAudio:
    """A clip ready to show and play at one speed."""

    peaks: np.ndarray  # (columns, 2) min and max of the original clip
    duration_s: float  # of the playback (after the speed change)
    playback: bytes  # WAV at the requested speed (pitch kept)
    speed: float
    spectrogram: SpectrogramPicture | None = None


def device_size(widget: QWidget) -> tuple[int, int]:
    """(height, width) of the widget in device pixels, rounded as Qt rounds them (halves away from zero): 1.5
    times its logical size on a 150 % screen."""
    size = widget.size() * widget.devicePixelRatioF()
    return size.height(), size.width()


def peaks(samples: np.ndarray, columns: int = PEAK_COLUMNS) -> np.ndarray:
    """Min and max of the samples in `columns` equal slices (fewer when the clip is shorter)."""
    columns = max(1, min(columns, len(samples)))
    edges = np.linspace(0, len(samples), columns + 1).astype(np.int64)[:-1]
    return np.stack([np.minimum.reduceat(samples, edges), np.maximum.reduceat(samples, edges)], axis=1)


@dataclass(frozen=True)
class SpectrogramPicture:
    """The spectrogram drawn with its axes (time in s, frequency in kHz) as RGBA pixels, and where its plot area
    lies across the width, so the playhead moves over the time axis rather than over the labels."""

    rgba: np.ndarray  # (height, width, 4) uint8, in device pixels
    plot_left: float  # fractions of the width
    plot_right: float
    drawn_for: tuple[int, int, float, float] = (0, 0, 1.0, 1.0)  # logical (width, height), pixel ratio, text scale

    @property
    def shape(self) -> tuple[int, int]:
        return self.rgba.shape[:2]


SPECTROGRAM_SIZE = (960, 200)  # pixels, when the widget's size is not known
SPECTROGRAM_LEAST_HEIGHT = 80  # the waveform's least on the Rating page and the recorder: drawn for it, not squashed


def spectrogram_image(
    samples: np.ndarray,
    rate: int,
    size: tuple[int, int] = SPECTROGRAM_SIZE,
    pixel_ratio: float = 1.0,
    text_scale: float = 1.0,
) -> SpectrogramPicture:
    """A log-magnitude spectrogram (80 dB range) with labelled axes, drawn by matplotlib's Agg renderer (no
    pyplot, no GUI backend) for `size` logical pixels on a screen of `pixel_ratio` (its device pixels, text and
    lines as large as at 1×, sharp rather than stretched), its labels `text_scale` times as large (View → Larger
    text): runs on a worker thread, the widget only paints it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from scipy.signal import spectrogram

    frequencies, times, power = spectrogram(samples, fs=rate, nperseg=512, noverlap=384, mode="magnitude")
    level = 20 * np.log10(power + 1e-9)
    width, height = max(int(size[0]), 200), max(int(size[1]), SPECTROGRAM_LEAST_HEIGHT)
    dpi = 100 * pixel_ratio * text_scale
    background, ink = tuple(c / 255 for c in BACKGROUND), "#c8ccd4"
    device_width, device_height = int(width * pixel_ratio + 0.5), int(height * pixel_ratio + 0.5)  # as Qt rounds
    # half a pixel more, so matplotlib's truncation gives these exact device pixels
    figure = Figure(figsize=((device_width + 0.5) / dpi, (device_height + 0.5) / dpi), dpi=dpi, facecolor=background)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    duration = len(samples) / rate
    axes.imshow(
        level,
        origin="lower",
        aspect="auto",
        cmap="magma",
        vmin=level.max() - 80.0,
        vmax=level.max(),
        extent=(0.0, duration, 0.0, frequencies[-1] / 1000 if len(frequencies) else rate / 2000),
        interpolation="nearest",
    )
    axes.set_xlabel("time (s)", color=ink, fontsize=8, labelpad=1)
    axes.set_ylabel("frequency (kHz)", color=ink, fontsize=8, labelpad=2)
    axes.tick_params(colors=ink, labelsize=7, length=3, pad=1)
    for spine in axes.spines.values():
        spine.set_color(ink)
    margin = text_scale * np.array([58, 8, 32, 6]) / [width, width, height, height]  # room for the labels
    margin = np.minimum(margin, 0.45)  # the plot keeps a tenth of the picture however large the text
    figure.subplots_adjust(left=margin[0], right=1 - margin[1], bottom=margin[2], top=1 - margin[3])
    figure.canvas.draw()
    if _shorten_cut_labels(figure, axes):
        figure.canvas.draw()
    rgba = np.ascontiguousarray(np.asarray(figure.canvas.buffer_rgba()))
    box = axes.get_position()
    drawn_for = (int(size[0]), int(size[1]), pixel_ratio, text_scale)
    return SpectrogramPicture(rgba, float(box.x0), float(box.x1), drawn_for)


def _shorten_cut_labels(figure, axes) -> bool:
    """The axes' names in short ('kHz', 's'), or none, where the picture is too low for them whole: 80 pixels high
    with the text at 200 %, 'frequency (kHz)' and 'time (s)' were cut at the picture's edges. Whether any changed."""
    renderer, bounds = figure.canvas.get_renderer(), figure.bbox
    changed = False
    for label, short in ((axes.yaxis.label, "kHz"), (axes.xaxis.label, "s")):
        for text in (short, ""):
            extent = label.get_window_extent(renderer)
            if not label.get_text() or (extent.y0 >= bounds.y0 - 0.5 and extent.y1 <= bounds.y1 + 0.5):
                break
            label.set_text(text)
            changed = True
    return changed


def prepare_clip(audio: bytes, what: str, speed: float = 1.0, with_spectrogram: bool = False) -> ClipAudio:
    """Decode a clip and render what the screen needs at `speed` (WSOLA time stretch, pitch preserved).
    Runs on a worker thread."""
    decoded = decode_audio(audio, what)
    if speed == 1.0:
        playback, length = audio, len(decoded.samples)
    else:
        stretched = time_stretch(decoded.samples, decoded.rate, speed)
        playback, length = encode_wav(stretched, decoded.rate), len(stretched)
    image = spectrogram_image(decoded.samples, decoded.rate) if with_spectrogram else None
    return ClipAudio(peaks(decoded.samples), length / decoded.rate, playback, speed, image)


def column_peaks_of(stored: np.ndarray, width: int) -> np.ndarray:
    """Stored peaks grouped into `width` pixel columns (min of mins, max of maxes); fewer when there are fewer."""
    edges = np.linspace(0, len(stored), min(width, len(stored)) + 1).astype(np.int64)[:-1]
    return np.stack([np.minimum.reduceat(stored[:, 0], edges), np.maximum.reduceat(stored[:, 1], edges)], axis=1)


def waveform_pixels(stored: np.ndarray, width: int, height: int) -> np.ndarray:
    """The waveform as colour indexes (height, width) uint8, 1 where lit: each pixel column lit from its max to
    its min, the columns spread over the width as the peaks allow, 4 pixels of margin above and below."""
    columns = column_peaks_of(stored, width)
    middle, half = height / 2, max(height / 2 - 4, 1.0)
    top = np.floor(middle - np.clip(columns[:, 1], -1, 1) * half).astype(np.int64)
    bottom = np.ceil(middle - np.clip(columns[:, 0], -1, 1) * half).astype(np.int64)
    owner = np.minimum((np.arange(width) * len(columns)) // width, len(columns) - 1)  # peak column of each x
    rows = np.arange(height)[:, None]
    lit = (rows >= top[owner][None, :]) & (rows <= np.maximum(bottom, top + 1)[owner][None, :])
    return lit.view(np.uint8)


class WaveformView(QWidget):
    """Paints a clip's waveform (or spectrogram) and a playhead at `set_playhead(fraction)`. `resized`: its size
    changed (a spectrogram is drawn for one size: the page draws it again for the new one)."""

    resized = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self._peaks: np.ndarray | None = None
        self._wave_image: QImage | None = None  # the waveform at the widget's size, remade when either changes
        self._image: QImage | None = None
        self._spectrogram: np.ndarray | None = None
        self.show_spectrogram = False
        self.playhead = 0.0
        self.message = "No clip"

    def set_clip(self, clip: ClipAudio | None, message: str = "") -> None:
        self._peaks = None if clip is None else clip.peaks
        self._wave_image = None
        self.set_spectrogram(None if clip is None else clip.spectrogram)
        self.playhead = 0.0
        self.message = message
        self.update()

    def set_spectrogram(self, picture: SpectrogramPicture | None) -> None:
        self._spectrogram = picture
        if picture is None:
            self._image = None
        else:
            rows, columns = picture.shape
            self._image = QImage(picture.rgba.data, columns, rows, columns * 4, QImage.Format.Format_RGBA8888).copy()
            self._image.setDevicePixelRatio(picture.drawn_for[2])
        self.update()

    @property
    def has_spectrogram(self) -> bool:
        return self._image is not None

    @property
    def spectrogram_fits(self) -> bool:
        """Whether the spectrogram was drawn for the size, pixel ratio and text size the widget has now (else it is
        shown stretched, or its labels at the size before): judged by what it was drawn for, not by its pixels, which
        may differ by one from the widget's device size at 125 % and, for a widget narrower than the picture's least
        width, always do."""
        asked = (self.width(), self.height(), self.devicePixelRatioF(), text_size.text_scale())
        return self._spectrogram is not None and self._spectrogram.drawn_for == asked

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.resized.emit()

    def changeEvent(self, event) -> None:
        """Moved to a screen of another scale: the same logical size, other device pixels, drawn again; the text
        made larger: the spectrogram's labels drawn again as large."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.DevicePixelRatioChange:
            self._wave_image = None
            self.resized.emit()
        elif event.type() == QEvent.Type.FontChange:
            self.resized.emit()

    def set_playhead(self, fraction: float) -> None:
        self.playhead = min(max(fraction, 0.0), 1.0)
        self.update()

    def column_peaks(self, width: int) -> np.ndarray | None:
        """The stored peaks grouped into `width` pixel columns (min of mins, max of maxes)."""
        if self._peaks is None or width <= 0:
            return None
        return column_peaks_of(self._peaks, width)

    def _waveform_image(self) -> QImage:
        """The waveform in the widget's device pixels (sharp on a scaled screen), remade when they change."""
        image = self._wave_image
        height, width = device_size(self)
        if image is None or (image.height(), image.width()) != (height, width):
            pixels = np.ascontiguousarray(waveform_pixels(self._peaks, width, height))
            image = QImage(pixels.data, width, height, width, QImage.Format.Format_Indexed8).copy()
            image.setColorTable([qRgb(*BACKGROUND), qRgb(*WAVE)])
            image.setDevicePixelRatio(self.devicePixelRatioF())
            self._wave_image = image
        return image

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        rect = self.rect()
        painter.fillRect(rect, QColor(*BACKGROUND))
        if self.show_spectrogram and self._image is not None:
            painter.drawImage(rect, self._image)
        elif self._peaks is not None:
            if not rect.isEmpty():
                painter.drawImage(0, 0, self._waveform_image())
        else:
            painter.setPen(QColor("#c8ccd4"))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, self.message or "No clip")
            return
        if self.show_spectrogram and self._image is None:
            painter.setPen(QColor("#c8ccd4"))
            painter.drawText(rect.adjusted(8, 4, 0, 0), "computing the spectrogram…")
        left, right = 0.0, 1.0
        if self.show_spectrogram and self._spectrogram is not None:  # over the time axis, not the labels
            left, right = self._spectrogram.plot_left, self._spectrogram.plot_right
        x = rect.width() * (left + (right - left) * self.playhead)
        painter.setPen(QPen(QColor("#ffb347"), 2))
        painter.drawLine(QPointF(x, 0), QPointF(x, rect.height()))
