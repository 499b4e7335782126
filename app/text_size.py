"""The app's text size (View → Larger text Ctrl+=, Smaller text Ctrl+-, Normal text size Ctrl+0): the desktop's
own font times 100–200 %, applied at once and kept for the next start. An annotator who rates for hours, or whose
sight is poor, makes the text larger here without scaling the whole desktop (which on a 1280×720 laptop at 150 %
leaves the app 853×480 pixels) — as Anki, Zotero and browsers let their users. Every page fits a 1280×720 laptop's
maximized window at every size without scrolling sideways, the Rating page without scrolling at all (above 150 %
where no warning stands above the session: a sound device and the fonts found; tests/widgets/test_text_size.py)."""

from __future__ import annotations

from PySide6.QtGui import QFont, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget

from spokenbench.widgets.text_size import follow_text_size, scaled_font, set_font_share, set_text_scale
from spokenbench.widgets.tones import retone

TEXT_SIZES = (100, 110, 125, 150, 175, 200)  # percent of the desktop's font
TEXT_SIZE_KEY = "view/text_size"
_desktop_font: QFont | None = None  # the application's font before any change: the desktop's, once per process
# the classes a platform theme may give fonts of their own (QApplicationPrivate::initializeWidgetFontHash): macOS's
# smaller menus, tooltips and headers, KDE's. QApplication.setFont(font) drops them all, so each is kept, scaled
THEME_FONT_CLASSES = (
    "QMenu", "QMenuBar", "QMenuItem", "QMessageBox", "QLabel", "QTipLabel", "QStatusBar", "QMdiSubWindowTitleBar",
    "QDockWidgetTitle", "QPushButton", "QCheckBox", "QRadioButton", "QToolButton", "QAbstractItemView",
    "QListView", "QHeaderView", "QListBox", "QComboMenuItem", "QComboLineEdit", "QSmallFont", "QMiniFont",
)  # fmt: skip
_desktop_class_fonts: dict[str, QFont] = {}


def desktop_font() -> QFont:
    """The font the desktop gave the app, taken before the first change: every size is a share of it, never of the
    size before (150 % then 125 % is 125 % of the desktop's). A desktop font changed while the app runs is seen at
    its next start."""
    global _desktop_font
    if _desktop_font is None:
        _desktop_font = QFont(QApplication.font())
        _desktop_class_fonts.clear()
        for name in THEME_FONT_CLASSES:
            if QApplication.font(name) != _desktop_font:
                _desktop_class_fonts[name] = QFont(QApplication.font(name))
    return _desktop_font


def stored_text_size(value) -> int:
    """The text size kept in the settings, or 100 for anything else (the file is plain text anyone can edit)."""
    try:
        percent = int(str(value).strip())
    except (TypeError, ValueError):
        return 100
    return percent if percent in TEXT_SIZES else 100


def apply_text_size(percent: int) -> None:
    """Set the application's font to the desktop's times `percent`, and every share of it (widgets.text_size) in
    every window after it, and the scale figures are drawn at (widgets.text_size.text_scale)."""
    set_text_scale(percent / 100)
    QApplication.setFont(scaled_font(desktop_font(), percent / 100))
    for name, font in _desktop_class_fonts.items():  # the theme's own, dropped by the line above
        QApplication.setFont(scaled_font(font, percent / 100), name)
    # a dock's title is drawn in the font its QDockWidget took when it was made, unless the dock's own font differs
    # from the application's font for docks: that one stays the desktop's, each dock's is set (the tour's title
    # stayed small while its text grew). A dock made after this takes the desktop's: the window applies the size
    # once its docks are made.
    QApplication.setFont(desktop_font(), "QDockWidget")
    for window in QApplication.topLevelWidgets():
        for dock in window.findChildren(QDockWidget):  # a floating dock is a top-level window and a child
            set_font_share(dock, 1.0)
        retone(window)  # a widget with a style sheet keeps the font it had when its sheet was applied
        follow_text_size(window)


def text_size_keys(own: str, standard: QKeySequence.StandardKey) -> list[QKeySequence]:
    """`own` (Ctrl+= is Ctrl and the key that types + with Shift, pressed without it) and the platform's zoom
    keys for the same (Ctrl++ ; on macOS ⌘+), once each."""
    keys = [QKeySequence(own)]
    for key in QKeySequence.keyBindings(standard):
        if key not in keys:
            keys.append(key)
    return keys


def step(percent: int, by: int) -> int:
    """The text size one step larger (by=1) or smaller (by=-1) than `percent`, kept within TEXT_SIZES."""
    index = TEXT_SIZES.index(percent) if percent in TEXT_SIZES else 0
    return TEXT_SIZES[min(len(TEXT_SIZES) - 1, max(0, index + by))]
