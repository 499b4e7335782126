"""Text drawn larger than the application's font (a clip's text, a prompt, a page's title) as a share of it, kept
so when the application's font changes while the app runs (View → Larger text): a size fixed in pixels or points
in a style sheet stayed as it was while every other text grew, and a style sheet's font size cannot follow the
application's font at all."""

from __future__ import annotations

from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication, QWidget

_SHARE_PROPERTY = "spokenbench_font_share"
_WEIGHT_PROPERTY = "spokenbench_font_weight"
_text_scale = 1.0  # the app's text size as a share of the desktop's (`set_text_scale`)


def text_scale() -> float:
    """The app's text size as a share of the desktop's font (1.0 at the normal size): for text Qt's fonts do not
    reach, such as the figures matplotlib draws in points of its own (the Results panels, the spectrogram)."""
    return _text_scale


def set_text_scale(share: float) -> None:
    """Set by View → Larger text before the application's font changes, so each widget's FontChange sees it."""
    global _text_scale
    _text_scale = float(share)


def set_font_share(widget: QWidget, share: float, weight: QFont.Weight | None = None) -> None:
    """Give the widget the application's font times `share` (and `weight`), kept so by `follow_text_size`."""
    widget.setProperty(_SHARE_PROPERTY, share)
    widget.setProperty(_WEIGHT_PROPERTY, None if weight is None else int(weight.value))
    _apply(widget)


def follow_text_size(root: QWidget) -> None:
    """Size again, for the application's font now, every widget under root (root included) given a share."""
    for widget in (root, *root.findChildren(QWidget)):
        if widget.property(_SHARE_PROPERTY) is not None:
            _apply(widget)


def scaled_font(font: QFont, share: float, base: QFont | None = None) -> QFont:
    """`font` at `base`'s size (by default its own) times `share`: in points, or in pixels where the desktop gives
    its font in pixels."""
    base = base or font
    scaled = QFont(font)
    if base.pointSizeF() > 0:
        scaled.setPointSizeF(base.pointSizeF() * share)
    else:
        scaled.setPixelSize(max(1, round(base.pixelSize() * share)))
    return scaled


def _apply(widget: QWidget) -> None:
    font = scaled_font(widget.font(), float(widget.property(_SHARE_PROPERTY)), QApplication.font())
    weight = widget.property(_WEIGHT_PROPERTY)
    if weight is not None:
        font.setWeight(QFont.Weight(weight))
    widget.setFont(font)
