"""Keys by name, on any keyboard layout. A key is first named as typed ('1', 'R', '?', 'Ctrl+Z'); where the layout
puts something else on a digit or letter key, the key is also named by its place on a US keyboard, as Qt's own
shortcuts and browsers' `KeyboardEvent.code` do. So the key labelled 1 rates on a French AZERTY or a Czech layout
(where it types '&' or '+' without Shift), and R replays and Ctrl+Z undoes on a Russian, Greek, Arabic or Hebrew
layout (where those keys type letters of another script). A layout's own Latin letters and punctuation keep their
meaning: Z on a German keyboard is the key labelled Z, and ',' never stands in for the US key at its place."""

from __future__ import annotations

import time
import unicodedata

from PySide6.QtCore import QCoreApplication, QEvent, QKeyCombination, QObject, Qt
from PySide6.QtGui import QGuiApplication, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QDockWidget, QWidget

from spokenbench.widgets.wheel_guard import install_application_filter

_SHIFTED_OK = Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.KeypadModifier

DIGIT_ROW = "1234567890"
# Linux input codes of the digit and letter keys, which are also the PC's set-1 scan codes (Windows): X11 and
# Wayland report them plus 8 (the XKB keycode), Windows as they are
_PC_SCAN_CODES = {
    **{2 + index: digit for index, digit in enumerate(DIGIT_ROW)},
    **{16 + index: letter for index, letter in enumerate("QWERTYUIOP")},
    **{30 + index: letter for index, letter in enumerate("ASDFGHJKL")},
    **{44 + index: letter for index, letter in enumerate("ZXCVBNM")},
}
XKB_KEYCODE_OFFSET = 8
# macOS reports no scan code; its virtual key codes name the place on an ANSI (US) keyboard (kVK_ANSI_* in
# Carbon's Events.h)
_MAC_VIRTUAL_KEYS = dict(
    zip(
        (0x12, 0x13, 0x14, 0x15, 0x17, 0x16, 0x1A, 0x1C, 0x19, 0x1D, 0x0C, 0x0D, 0x0E, 0x0F, 0x11, 0x10, 0x20,
         0x22, 0x1F, 0x23, 0x00, 0x01, 0x02, 0x03, 0x05, 0x04, 0x26, 0x28, 0x25, 0x06, 0x07, 0x08, 0x09, 0x0B,
         0x2D, 0x2E),
        DIGIT_ROW + "QWERTYUIOP" + "ASDFGHJKL" + "ZXCVBNM",
        strict=True,
    )
)  # fmt: skip


def us_place(scan_code: int, virtual_key: int, platform: str) -> str | None:
    """The digit or letter a US keyboard has where this key is ('1', 'R'), from the platform's native codes;
    None for any other key or an unknown code. Platforms other than Windows and macOS (X11, Wayland, and the
    offscreen platform of tests) report XKB keycodes."""
    if platform == "cocoa":
        return _MAC_VIRTUAL_KEYS.get(virtual_key)
    if platform == "windows":
        return _PC_SCAN_CODES.get(scan_code)
    return _PC_SCAN_CODES.get(scan_code - XKB_KEYCODE_OFFSET)


def typed_key_name(event: QKeyEvent) -> str:
    """The key's name as typed and as a key map spells it: '1', 'Space', 'Left', '?', '[', 'Ctrl+Z'."""
    modifiers = event.modifiers()
    text = event.text()
    if text and text.isprintable() and not text.isspace() and not (modifiers & ~_SHIFTED_OK):
        return text  # '?' and '[' as typed, whatever Shift it took
    return QKeySequence(event.keyCombination()).toString()


def place_key_name(event: QKeyEvent) -> str | None:
    """The key named by its place on a US keyboard ('1', 'Ctrl+Z', 'Shift+1'), when this layout types something
    else there that is no key of its own: a digit-row key that types no digit, a letter key that types a letter of
    another script. None otherwise (the typed name is the key's only name)."""
    place = us_place(event.nativeScanCode(), event.nativeVirtualKey(), QGuiApplication.platformName())
    if place is None or _alt_gr(event):
        return None  # AltGr types a layout's third symbol (German AltGr+2 is ²): never a key by its place
    typed = event.text() if event.text().isprintable() and event.text().strip() else ""
    if not typed and 0 < event.key() < 0x110000:
        typed = chr(event.key())  # with Ctrl the text is a control character: the key's own symbol
    if len(typed) != 1:
        return None
    if place.isdigit() and typed.isdigit() and typed.isascii():
        return None  # a digit as typed (AZERTY with Shift, a keypad)
    if place.isalpha() and not (typed.isalpha() and not unicodedata.name(typed, "").startswith("LATIN")):
        return None  # the layout's own Latin letter (ğ on Turkish F too) or punctuation: it keeps its meaning
    modifiers = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
    if place.isalpha() and modifiers == Qt.KeyboardModifier.ShiftModifier:
        modifiers = Qt.KeyboardModifier.NoModifier  # 'R' with or without Shift, as a typed letter is named
    return QKeySequence(QKeyCombination(modifiers, Qt.Key(ord(place)))).toString()


def _alt_gr(event: QKeyEvent) -> bool:
    """AltGr held: X11 reports it as the group switch; Windows as Ctrl+Alt with a printable symbol."""
    modifiers = event.modifiers()
    if modifiers & Qt.KeyboardModifier.GroupSwitchModifier:
        return True
    ctrl_alt = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier
    return (modifiers & ctrl_alt) == ctrl_alt and event.text().isprintable() and bool(event.text().strip())


def key_names(event: QKeyEvent) -> tuple[str, ...]:
    """The names to look the key up by, in order: as typed, then by its place on a US keyboard (`place_key_name`)."""
    typed = typed_key_name(event)
    place = place_key_name(event)
    return (typed,) if place is None or place == typed else (typed, place)


def shown_as_is(text: str) -> str:
    """`text` for a button's or a menu entry's label where it must show as written: an & in a name (a project called
    Q&A) otherwise made an Alt+A shortcut and vanished from the label."""
    return text.replace("&", "&&")


class PageKeysByPlace(QObject):
    """Ctrl and a digit-row key that types no digit (AZERTY: & é " ' ( - è _ ç à) is the page key its place names,
    even where what it types is another shortcut: Ctrl and the key labelled 6 types Ctrl+-, View → Smaller text's
    shortcut, which Qt's shortcut map took before the window could find Ctrl+6 by the key's place. Such a key's
    shortcut is overridden, and its press goes straight to its window (a main window's floating dock: to the main
    window), which names it by its place (`MainWindow._press_at_place`): passed up from the focused widget, a
    combo box took Ctrl+- for its type-ahead. Qt asks again, without the native codes, for a press it is handed
    back (a screen reader's bridge holds each key and posts a copy): the same key and modifiers within
    REPEAT_S of an overridden one are overridden too. One handler of the application's filter, as `WheelGuard`."""

    events = (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress)
    REPEAT_S = 2.0

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._overridden: tuple[int, int, float] | None = None  # (key, modifiers, when) of the last one

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        place = place_key_name(event)
        by_place = place is not None and place.startswith("Ctrl+") and place[len("Ctrl+") :].isdigit()
        if event.type() == QEvent.Type.ShortcutOverride:
            now = time.monotonic()
            pressed = (int(event.key()), int(event.modifiers().value))
            if by_place:
                self._overridden = (*pressed, now)
                event.accept()  # not a shortcut: a key press, named by its place
            elif event.nativeScanCode() == 0 and self._overridden is not None:
                key, modifiers, when = self._overridden
                if (key, modifiers) == pressed and now - when <= self.REPEAT_S:
                    event.accept()  # the same press handed back without its codes
            return False
        if not by_place or not isinstance(watched, QWidget):
            return False
        window = watched.window()
        while isinstance(window, QDockWidget) and window.parentWidget() is not None:
            window = window.parentWidget().window()
        if window is watched:
            return False  # delivered to the window itself: its keyPressEvent names it
        QCoreApplication.sendEvent(window, event)
        return event.isAccepted()


def install_page_keys_by_place(app=None) -> PageKeysByPlace | None:
    """Install the handler on the application once (later calls return the same one)."""
    return install_application_filter(PageKeysByPlace, app)
