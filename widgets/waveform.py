"""The clip's picture: a waveform (min/max per pixel column) with a moving playhead, or its spectrogram.
Everything numeric is computed off the UI thread by `prepare_clip` (decode, speed rendering, peaks,
spectrogram); the widget only paints arrays it was handed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from spokenbench.core.audio.dsp import time_stretch
from spokenbench.core.audio.io import decode_audio, encode_wav

PEAK_COLUMNS = 2048  # enough for any window width; painting groups them per pixel column


@dataclass(frozen=True)
class ClipAudio:
    """A clip ready to show and play at one speed."""

    peaks: np.ndarray  # (columns, 2) min and max of the original clip
    duration_s: float  # of the playback (after the speed change)
    playback: bytes  # WAV at the requested speed (pitch kept)
    speed: float
    spectrogram: np.ndarray | None = None  # uint8 (frequency rows, time columns), low frequencies last


def peaks(samples: np.ndarray, columns: int = PEAK_COLUMNS) -> np.ndarray:
    """Min and max of the samples in `columns` equal slices (fewer when the clip is shorter)."""
    columns = max(1, min(columns, len(samples)))
    edges = np.linspace(0, len(samples), columns + 1).astype(np.int64)[:-1]
    return np.stack([np.minimum.reduceat(samples, edges), np.maximum.reduceat(samples, edges)], axis=1)


def spectrogram_image(samples: np.ndarray, rate: int) -> np.ndarray:
    """A log-magnitude spectrogram as 8-bit grey levels, highest frequencies in the first row (as drawn)."""
    from scipy.signal import spectrogram

    _f, _t, power = spectrogram(samples, fs=rate, nperseg=512, noverlap=384, mode="magnitude")
    level = 20 * np.log10(power + 1e-9)
    top = level.max()
    scaled = np.clip((level - (top - 80.0)) / 80.0, 0.0, 1.0)
    return np.ascontiguousarray((scaled[::-1] * 255).astype(np.uint8))


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


class WaveformView(QWidget):
    """Paints a clip's waveform (or spectrogram) and a playhead at `set_playhead(fraction)`."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self._peaks: np.ndarray | None = None
        self._image: QImage | None = None
        self._spectrogram: np.ndarray | None = None
        self.show_spectrogram = False
        self.playhead = 0.0
        self.message = "No clip"

    def set_clip(self, clip: ClipAudio | None, message: str = "") -> None:
        self._peaks = None if clip is None else clip.peaks
        self.set_spectrogram(None if clip is None else clip.spectrogram)
        self.playhead = 0.0
        self.message = message
        self.update()

    def set_spectrogram(self, image: np.ndarray | None) -> None:
        self._spectrogram = image
        if image is None:
            self._image = None
        else:
            rows, columns = image.shape
            self._image = QImage(image.data, columns, rows, columns, QImage.Format.Format_Grayscale8).copy()
        self.update()

    @property
    def has_spectrogram(self) -> bool:
        return self._image is not None

    def set_playhead(self, fraction: float) -> None:
        self.playhead = min(max(fraction, 0.0), 1.0)
        self.update()

    def column_peaks(self, width: int) -> np.ndarray | None:
        """The stored peaks grouped into `width` pixel columns (min of mins, max of maxes)."""
        if self._peaks is None or width <= 0:
            return None
        edges = np.linspace(0, len(self._peaks), min(width, len(self._peaks)) + 1).astype(np.int64)[:-1]
        return np.stack(
            [np.minimum.reduceat(self._peaks[:, 0], edges), np.maximum.reduceat(self._peaks[:, 1], edges)], axis=1
        )

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        rect = self.rect()
        painter.fillRect(rect, QColor("#1e2430"))
        if self.show_spectrogram and self._image is not None:
            painter.drawImage(rect, self._image)
        elif self._peaks is not None:
            columns = self.column_peaks(rect.width())
            middle, half = rect.height() / 2, rect.height() / 2 - 4
            step = rect.width() / len(columns)
            painter.setPen(QPen(QColor("#7fb3ff"), max(1.0, step)))
            for index, (low, high) in enumerate(columns):
                x = index * step + step / 2
                painter.drawLine(QPointF(x, middle - high * half), QPointF(x, middle - low * half))
        else:
            painter.setPen(QColor("#c8ccd4"))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, self.message or "No clip")
            return
        if self.show_spectrogram and self._image is None:
            painter.setPen(QColor("#c8ccd4"))
            painter.drawText(rect.adjusted(8, 4, 0, 0), "computing the spectrogram…")
        x = rect.width() * self.playhead
        painter.setPen(QPen(QColor("#ffb347"), 2))
        painter.drawLine(QPointF(x, 0), QPointF(x, rect.height()))
