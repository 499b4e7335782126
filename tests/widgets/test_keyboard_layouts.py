"""Keys on other keyboard layouts (widgets/keys.py): the key labelled 1 rates on AZERTY, where it types '&'; the
keys at US R and Z replay and undo on a Russian layout, where they type Cyrillic; a layout's own Latin letters
and punctuation keep their meaning. Events carry the native codes the platform reports (XKB keycodes here, as
under X11 and Wayland); the real X server with French and Russian layouts is in test_real_device_session.py."""

import pytest
from PySide6.QtCore import QEvent, QSettings, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QComboBox, QDialog, QPushButton, QScrollArea

from spokenbench.core.rewriting.flagging import FlaggedRewrite
from spokenbench.widgets.keys import key_names, us_place
from spokenbench.widgets.rating_view import RatingView
from spokenbench.widgets.recording_view import RecorderView
from spokenbench.widgets.rewrite_review import RewriteReviewView

NONE, SHIFT = Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ShiftModifier
CTRL, ALT = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.AltModifier
ALTGR = Qt.KeyboardModifier.GroupSwitchModifier
# XKB keycodes (Linux input code + 8) of the keys used below
KEY_1, KEY_2, KEY_7, KEY_Q, KEY_R, KEY_A, KEY_Z, KEY_N, KEY_M = 10, 11, 16, 24, 27, 38, 52, 57, 58


def key_event(key: int, modifiers, scan_code: int, text: str) -> QKeyEvent:
    return QKeyEvent(QEvent.Type.KeyPress, key, modifiers, scan_code, 0, 0, text)


@pytest.mark.parametrize(
    ("platform", "scan_code", "virtual_key", "place"),
    [
        ("xcb", 10, 0x26, "1"),  # X11: XKB keycode
        ("wayland", 52, 0, "Z"),
        ("xcb", 9, 0xFF1B, None),  # Escape: not a digit or letter key
        ("windows", 0x02, 0x31, "1"),  # Windows: the set-1 scan code
        ("windows", 0x2C, 0x5A, "Z"),
        ("cocoa", 0, 0x12, "1"),  # macOS: no scan code, the ANSI virtual key
        ("cocoa", 0, 0x06, "Z"),
        ("cocoa", 0, 0x00, "A"),
        ("cocoa", 0, 0x35, None),  # kVK_Escape
    ],
)
def test_each_platform_s_native_codes_name_the_key_s_place_on_a_us_keyboard(platform, scan_code, virtual_key, place):
    assert us_place(scan_code, virtual_key, platform) == place


@pytest.mark.parametrize(
    ("layout", "event", "names"),
    [
        ("AZERTY 1 without Shift", (Qt.Key.Key_Ampersand, NONE, KEY_1, "&"), ("&", "1")),
        ("AZERTY 2 without Shift", (Qt.Key.Key_Eacute, NONE, KEY_2, "é"), ("é", "2")),
        ("AZERTY 1 with Shift", (Qt.Key.Key_1, SHIFT, KEY_1, "1"), ("1",)),
        ("AZERTY Ctrl and 1", (Qt.Key.Key_Ampersand, CTRL, KEY_1, ""), ("Ctrl+&", "Ctrl+1")),
        ("Czech 1 without Shift", (Qt.Key.Key_Plus, NONE, KEY_1, "+"), ("+", "1")),
        ("US Shift+1", (Qt.Key.Key_Exclam, SHIFT, KEY_1, "!"), ("!", "Shift+1")),
        ("US Shift+7", (Qt.Key.Key_Ampersand, SHIFT, KEY_7, "&"), ("&", "Shift+7")),
        ("Russian R", (0x41A, NONE, KEY_R, "к"), ("к", "R")),
        ("Russian Shift+R", (0x41A, SHIFT, KEY_R, "К"), ("К", "R")),
        ("Russian Ctrl+Z", (0x42F, CTRL, KEY_Z, "\x1a"), ("Ctrl+Я", "Ctrl+Z")),
        ("Greek R", (0x3A1, NONE, KEY_R, "ρ"), ("ρ", "R")),
        ("AZERTY comma at US M", (Qt.Key.Key_Comma, NONE, KEY_M, ","), (",",)),
        ("AZERTY a at US Q", (Qt.Key.Key_A, NONE, KEY_Q, "a"), ("a",)),
        ("German z at US Y", (Qt.Key.Key_Z, NONE, 29, "z"), ("z",)),
        ("Turkish F ı at US R", (0x131, NONE, KEY_R, "ı"), ("ı",)),
        ("US n", (Qt.Key.Key_N, NONE, KEY_N, "n"), ("n",)),
        ("keypad 1", (Qt.Key.Key_1, Qt.KeyboardModifier.KeypadModifier, 87, "1"), ("1",)),
        ("Space", (Qt.Key.Key_Space, NONE, 65, " "), ("Space",)),
        ("Russian Ctrl+Z, its text as X11 gives it", (0x42F, CTRL, KEY_Z, "я"), ("Ctrl+Я", "Ctrl+Z")),
        ("German AltGr+2 (X11)", (Qt.Key.Key_twosuperior, ALTGR, KEY_2, "²"), ("²",)),
        ("AZERTY AltGr+3 (X11)", (Qt.Key.Key_NumberSign, ALTGR, 12, "#"), ("#",)),
        ("German AltGr+7 (Windows: Ctrl+Alt)", (Qt.Key.Key_BraceLeft, CTRL | ALT, KEY_7, "{"), ("Ctrl+Alt+{",)),
    ],
)
def test_a_key_is_named_as_typed_then_by_its_place_only_where_the_layout_has_no_such_key(qapp, layout, event, names):
    assert key_names(key_event(*event)) == names, layout


def send(widget, event: QKeyEvent) -> QKeyEvent:
    QApplication.sendEvent(widget, event)
    return event


def test_the_rating_view_rates_with_the_key_labelled_1_on_azerty_and_undoes_with_ctrl_z_on_russian(qtbot):
    view = RatingView()
    qtbot.addWidget(view)
    pressed = []
    view.key_pressed.connect(pressed.append)
    send(view, key_event(Qt.Key.Key_Ampersand, NONE, KEY_1, "&"))
    send(view, key_event(0x42F, CTRL, KEY_Z, "\x1a"))
    send(view, key_event(0x41A, NONE, KEY_R, "к"))
    send(view, key_event(Qt.Key.Key_2, NONE, KEY_2, "2"))  # a US layout, as before
    assert pressed == ["1", "Ctrl+Z", "R", "2"]


def test_a_ctrl_key_the_rating_view_has_no_action_for_goes_on_to_the_window(qtbot):
    """Ctrl and the key labelled 1 on AZERTY is no key of the session: left to the window (its Ctrl+1 page key).
    AZERTY's comma never stands in for the US M at its place: no action, and it stays in the view."""
    view = RatingView()
    qtbot.addWidget(view)
    pressed = []
    view.key_pressed.connect(pressed.append)
    assert not send(view, key_event(Qt.Key.Key_Ampersand, CTRL, KEY_1, "&")).isAccepted()
    assert send(view, key_event(Qt.Key.Key_Comma, NONE, KEY_M, ",")).isAccepted()
    assert send(view, key_event(Qt.Key.Key_3, NONE, 12, "3")).isAccepted()
    assert pressed == ["3"]


def test_a_key_without_an_action_never_scrolls_the_page_under_the_session(qtbot):
    """Page Down or ↓ pressed in a session stay in it (the page sits in a scroll area when the window is small);
    only keys with Ctrl, Alt or Meta go on, for the window's shortcuts."""
    area = QScrollArea()
    qtbot.addWidget(area)
    view = RatingView()
    view.setMinimumHeight(1500)
    area.setWidget(view)
    area.setWidgetResizable(True)
    area.resize(600, 300)
    area.show()
    qtbot.waitExposed(area)
    for key in (Qt.Key.Key_PageDown, Qt.Key.Key_Down, Qt.Key.Key_End):
        assert send(view, key_event(key, NONE, 0, "")).isAccepted()
    assert area.verticalScrollBar().value() == 0


def test_the_recorder_records_with_the_key_at_us_r_on_a_russian_layout(qtbot):
    view = RecorderView()
    qtbot.addWidget(view)
    actions = []
    view.action_requested.connect(actions.append)
    send(view, key_event(0x41A, NONE, KEY_R, "к"))
    send(view, key_event(Qt.Key.Key_R, NONE, KEY_R, "r"))
    assert actions == ["record", "record"]


def test_the_rewrite_review_accepts_with_the_key_at_us_a_and_undoes_with_ctrl_z_on_a_russian_layout(qtbot):
    view = RewriteReviewView()
    qtbot.addWidget(view)
    rewrite = FlaggedRewrite(1, 1, "demo/001", "en", "question", "2+2", "two plus two", "", "flagged")
    view.set_entries([rewrite, rewrite])
    decisions, undos = [], []
    view.decision_requested.connect(lambda index, decision, _text: decisions.append((index, decision)))
    view.undo_requested.connect(lambda: undos.append(True))
    send(view, key_event(0x424, NONE, KEY_A, "ф"))  # the key at US A types ф
    send(view, key_event(0x42F, CTRL, KEY_Z, "\x1a"))
    assert decisions == [(0, "accept")] and undos == [True]


@pytest.fixture
def window(shown_window, tmp_path):
    return shown_window(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat), size=None)


def test_the_window_s_page_keys_work_with_ctrl_and_the_digit_row_on_azerty(window, qtbot):
    """Ctrl+1 … Ctrl+7 as an AZERTY keyboard sends them (Ctrl+&, Ctrl+é …), wherever the keyboard is."""
    window.sidebar.select("rating")
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not None)
    send(QApplication.focusWidget(), key_event(Qt.Key.Key_Ampersand, CTRL, KEY_1, ""))
    assert window.sidebar.current_key() == "items"
    send(QApplication.focusWidget(), key_event(Qt.Key.Key_QuoteDbl, CTRL, 12, ""))
    assert window.sidebar.current_key() == "rating"
    send(QApplication.focusWidget(), key_event(Qt.Key.Key_Comma, CTRL, KEY_M, ""))  # Ctrl+, is Settings'
    assert window.sidebar.current_key() == "rating"


def test_the_tour_s_alt_n_and_the_menus_alt_letters_work_on_a_russian_layout(window, qtbot):
    """Alt and the key at US N (it types т) goes to the tour's next step, as Alt+N does; Alt and the key at US V
    (м) opens the View menu."""
    window.tour.start()
    qtbot.waitUntil(lambda: window.tour.is_open())
    step = window.tour.index
    send(QApplication.focusWidget() or window, key_event(0x442, ALT, KEY_N, "т"))
    assert window.tour.index == step + 1
    window.tour.skip()
    send(QApplication.focusWidget() or window, key_event(0x43C, ALT, 55, "м"))
    assert window.menuBar().activeAction() is not None and window.menuBar().activeAction().text() == "&View"
    window.menuBar().activeAction().menu().close()


def test_a_mnemonic_two_buttons_share_or_one_in_another_window_is_not_pressed_by_place(window, qtbot):
    """As Qt does with mnemonics: two buttons with one letter are ambiguous, and a dialog's buttons are its own."""
    clicked = []
    for name in ("first", "second"):
        button = QPushButton("&Zap")
        button.clicked.connect(lambda _=False, n=name: clicked.append(n))
        window.statusBar().addWidget(button)
    dialog = QDialog(window)
    other = QPushButton("&Quux", dialog)
    other.clicked.connect(lambda: clicked.append("dialog"))
    dialog.show()
    window.activateWindow()
    send(window, key_event(0x44F, ALT, KEY_Z, "я"))
    send(window, key_event(0x439, ALT, KEY_Q, "й"))
    assert clicked == []
    dialog.close()


def override(receiver, key, scan_code: int) -> bool:
    """Whether a ShortcutOverride for Ctrl and `key` (its native code `scan_code`; 0: none) is taken as no shortcut."""
    event = QKeyEvent(QEvent.Type.ShortcutOverride, key, CTRL, scan_code, 0, 0, "")
    event.ignore()
    QApplication.sendEvent(receiver, event)
    return event.isAccepted()


def test_ctrl_and_azerty_s_key_labelled_6_overrides_the_smaller_text_shortcut_and_the_us_minus_key_does_not(
    window, qtbot, request
):
    """On AZERTY the key labelled 6 types '-': with Ctrl, Qt's shortcut map took it as View → Smaller text
    (Ctrl+-) before the window could name it Ctrl+6 by its place. Its shortcut is overridden, also when Qt asks
    again without the native codes (a press handed back, as a screen reader's bridge does); its press goes to the
    window even from a combo box, which took Ctrl+- for its type-ahead; the key that types '-' on a US keyboard
    still makes the text smaller."""
    from spokenbench.widgets.keys import install_page_keys_by_place

    handler = install_page_keys_by_place()
    handler._overridden = None  # no press of an earlier test within its repeat time
    request.addfinalizer(lambda: setattr(handler, "_overridden", None))  # nor of this one for the next test
    box = QComboBox()
    box.addItems(["first", "-second"])
    window.statusBar().addWidget(box)
    box.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is box)
    assert not override(box, Qt.Key.Key_Minus, 20)  # the US '-' key: Smaller text
    assert not override(box, Qt.Key.Key_Minus, 0)  # asked again without codes, for that one: still Smaller text
    assert override(box, Qt.Key.Key_Minus, 15)  # AZERTY's key labelled 6
    assert override(box, Qt.Key.Key_Minus, 0)  # the same press handed back without its codes
    assert not override(box, Qt.Key.Key_Equal, 0)  # another key
    send(box, key_event(Qt.Key.Key_Minus, CTRL, 15, "-"))
    assert window.sidebar.current_key() == "evaluate"
    assert box.currentIndex() == 0, "the combo box took the key for its type-ahead"
    assert window.text_size == 100
