"""The keyboard back to the window under a dialog that closes. The offscreen platform, like an X server without a
window manager, gives the focus to no window when a focused dialog goes: every key after went nowhere (on Xvfb,
Ctrl+Q after OK on a *Not opening …* box left the app open 20 s, until it was killed)."""

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QMainWindow, QMessageBox, QWidget

from spokenbench.app.keys_back import KeysBack


@pytest.fixture
def main_window(qtbot):
    window = QMainWindow()
    qtbot.addWidget(window)
    window.resize(400, 300)
    return with_the_keys(qtbot, window)


def with_the_keys(qtbot, window: QWidget) -> QWidget:
    """`window` shown (a dialog opened window-modal) and given the focus."""
    if isinstance(window, QDialog):
        window.open()
    else:
        window.show()
        window.activateWindow()
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is window.windowHandle())
    return window


def focused_by_a_box(qtbot, parent: QWidget) -> QMessageBox:
    box = QMessageBox(
        QMessageBox.Icon.Warning, "Not saved", "Not opening other: …", QMessageBox.StandardButton.Ok, parent
    )
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)  # as show_error's
    box.open()
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is box.windowHandle())
    return box


def test_without_it_the_keys_go_nowhere_after_a_box_closes(qtbot, main_window):
    """What KeysBack mends, on this platform: the test's premise."""
    box = focused_by_a_box(qtbot, main_window)
    qtbot.keyClick(box, Qt.Key.Key_Return)
    qtbot.wait(300)
    assert QGuiApplication.focusWindow() is None


def test_the_window_under_a_box_that_closes_gets_the_keys_back(qtbot, main_window):
    KeysBack(main_window)
    box = focused_by_a_box(qtbot, main_window)
    qtbot.keyClick(box, Qt.Key.Key_Return)  # OK
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is main_window.windowHandle(), timeout=2_000)


def test_a_dialog_over_a_dialog_gives_the_keys_to_the_one_under_it(qtbot, main_window):
    KeysBack(main_window)
    outer = QDialog(main_window)
    qtbot.addWidget(outer)
    with_the_keys(qtbot, outer)
    inner = focused_by_a_box(qtbot, outer)
    inner.done(0)
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is outer.windowHandle(), timeout=2_000)
    outer.reject()
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is main_window.windowHandle(), timeout=2_000)


def test_a_dialog_that_closes_while_another_window_has_the_keys_leaves_them_there(qtbot, main_window):
    KeysBack(main_window)
    box = focused_by_a_box(qtbot, main_window)
    elsewhere = QWidget()  # another application's window, as far as this goes: not under the box
    qtbot.addWidget(elsewhere)
    with_the_keys(qtbot, elsewhere)
    box.done(0)  # closed by itself (a wait that ended)
    qtbot.wait(300)
    assert QGuiApplication.focusWindow() is elsewhere.windowHandle()


def test_a_window_of_its_own_is_not_taken_for_a_dialog(qtbot, main_window):
    KeysBack(main_window)
    other = QMainWindow()  # a second top-level window, under nothing
    qtbot.addWidget(other)
    with_the_keys(qtbot, other)
    other.hide()
    qtbot.wait(300)
    assert QGuiApplication.focusWindow() is not main_window.windowHandle()


def test_a_dialog_over_another_main_window_is_left_to_that_window(qtbot, main_window):
    KeysBack(main_window)
    second = QMainWindow()  # a second project window, with no KeysBack of its own
    qtbot.addWidget(second)
    with_the_keys(qtbot, second)
    box = focused_by_a_box(qtbot, second)
    box.done(0)
    qtbot.wait(300)
    assert QGuiApplication.focusWindow() is None  # first's KeysBack activated neither window


def test_a_box_closing_beside_a_modal_dialog_gives_the_keys_to_that_dialog(qtbot, main_window):
    """A box over the window while a window-modal dialog is open (a failure told during a quit's wait): the keys went
    to the window, which that dialog blocks, so no key reached anything."""
    KeysBack(main_window)
    waiting = QDialog(main_window)  # as the quit's wait, opened window-modal
    qtbot.addWidget(waiting)
    with_the_keys(qtbot, waiting)
    box = focused_by_a_box(qtbot, main_window)
    box.done(0)
    qtbot.waitUntil(lambda: QGuiApplication.focusWindow() is waiting.windowHandle(), timeout=2_000)
