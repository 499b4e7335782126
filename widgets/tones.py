"""Colours for text that says something (an error, a warning, a pass, a hint), readable on whichever palette the
desktop gives the app. Windows, macOS and GNOME (through Qt's gtk3 theme) hand Qt a dark palette when the user
chose dark mode: a colour fixed for a light window (#444 hints, white text on a light-green diff) then all but
vanishes. Each tone has a light and a dark value, each at least WCAG AA's 4.5:1 against the window and base
colours of the common light and dark palettes (tests/widgets/test_dark_palette.py), and style sheets written with
them are written again when the palette changes while the app runs (`retone`)."""

from __future__ import annotations

from string import Template

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QWidget

# tone → (on a light window, on a dark window)
TONES = {
    "error": ("#b00020", "#ff8a80"),
    "warning": ("#8a4b00", "#ffb74d"),
    "success": ("#1b5e20", "#81c784"),
    "focus": ("#1a73e8", "#8ab4f8"),  # the keyboard focus ring (a line, not text: WCAG's 3:1 for non-text)
    "removed_bg": ("#f8c9c4", "#5e2a26"),  # a diff's removed text: background, then its own text colour
    "removed_text": ("#1a1a1a", "#ffdad6"),
    "added_bg": ("#c6efce", "#1f4d2c"),
    "added_text": ("#1a1a1a", "#d6f5dd"),
}
MUTED_SHARE = 0.33  # a hint's text: this far from the palette's text colour towards its window colour
_SHEET_PROPERTY = "spokenbench_toned_sheet"


def is_dark(palette: QPalette) -> bool:
    """Whether the palette's windows are dark (dark mode), judged by the window colour's lightness."""
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def tone(name: str, palette: QPalette | None = None) -> str:
    """A tone's colour (#rrggbb) for the palette: one of TONES, or 'muted'. By default the application's palette,
    never a widget's own, which its toned sheet has changed already."""
    palette = palette or QApplication.palette()
    if name == "muted":
        text, window = palette.color(QPalette.ColorRole.WindowText), palette.color(QPalette.ColorRole.Window)
        mixed = [round(a + (b - a) * MUTED_SHARE) for a, b in zip(text.getRgb()[:3], window.getRgb()[:3])]
        return QColor(*mixed).name()
    light, dark = TONES[name]
    return dark if is_dark(palette) else light


def tones(palette: QPalette | None = None) -> dict[str, str]:
    """Every tone by name, for a style sheet or an HTML fragment."""
    return {name: tone(name, palette) for name in (*TONES, "muted")}


def toned(text: str, palette: QPalette | None = None) -> str:
    """A style sheet or an HTML style with its $error, $muted, $added_bg … replaced by the palette's tones."""
    return Template(text).substitute(tones(palette))


def set_toned_sheet(widget: QWidget, sheet: str) -> None:
    """Give the widget a style sheet whose $error, $warning, $success, $muted, $added_bg … are the palette's tones,
    kept so when the palette changes (`retone`)."""
    widget.setProperty(_SHEET_PROPERTY, sheet)
    widget.setStyleSheet(toned(sheet))


def retone(root: QWidget) -> None:
    """Write again, for the palette now, every toned style sheet under root (root included), and apply every other
    style sheet again: Qt works a widget's palette out when its sheet is applied (even `font-family: monospace`)
    and keeps it when the application palette changes, so such a widget kept black text on a dark window after
    the desktop switched while the app ran."""
    for widget in (root, *root.findChildren(QWidget)):
        sheet = widget.property(_SHEET_PROPERTY)
        if isinstance(sheet, str):
            widget.setStyleSheet(toned(sheet))
        elif widget.styleSheet():
            widget.setStyleSheet(widget.styleSheet())
