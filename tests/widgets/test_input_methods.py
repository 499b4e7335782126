"""The desktop's input method as the app asks Qt for it (app/input_methods.py): PySide6's Qt carries IBus's plugin
only, so Fcitx 5 (QT_IM_MODULE=fcitx) is reached through its IBus portal, and an input method with no way in is
named in the status bar. The real input methods on a real desktop: tests/widgets/test_real_input_method.py."""

import pytest
from PySide6.QtCore import QSettings

from spokenbench.app.input_methods import choose_input_method, prepare_input_method, shipped_input_methods

PYSIDE_PLUGINS = frozenset({"ibus", "compose", "qtvirtualkeyboard"})
THROUGH_FCITX = {"QT_IM_MODULES": "fcitx;wayland;ibus", "IBUS_USE_PORTAL": "1"}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"QT_IM_MODULE": "fcitx", "XMODIFIERS": "@im=fcitx"}, THROUGH_FCITX),  # Fcitx 5 as im-config sets it
        ({"QT_IM_MODULE": "Fcitx5"}, {"QT_IM_MODULES": "fcitx5;wayland;ibus", "IBUS_USE_PORTAL": "1"}),
        ({"QT_IM_MODULE": "xim", "XMODIFIERS": "@im=fcitx"}, {"QT_IM_MODULES": "wayland;ibus", "IBUS_USE_PORTAL": "1"}),
        ({"XMODIFIERS": "@im=fcitx"}, {"QT_IM_MODULES": "wayland;ibus", "IBUS_USE_PORTAL": "1"}),
        ({"QT_IM_MODULE": "fcitx", "IBUS_USE_PORTAL": "0"}, {"QT_IM_MODULES": "fcitx;wayland;ibus"}),  # kept
        ({"QT_IM_MODULE": "xim", "XMODIFIERS": "@im=ibus"}, {"QT_IM_MODULES": "wayland;ibus"}),  # no portal: IBus's own
        ({"QT_IM_MODULE": "ibus", "XMODIFIERS": "@im=ibus"}, {}),  # Qt has it
        ({"QT_IM_MODULE": "fcitx", "QT_IM_MODULES": "fcitx"}, {}),  # the person's own list
        ({"XMODIFIERS": "@im=none"}, {}),
        ({}, {}),  # no input method: Qt's default (Wayland's own, or dead keys on X11)
    ],
)
def test_the_variables_set_before_qt_starts(environ, expected):
    setup = choose_input_method(environ, PYSIDE_PLUGINS, platform="linux")
    assert setup.environment == expected
    assert setup.unsupported is None and setup.advice is None


def test_an_input_method_without_a_way_in_is_named_with_what_to_do():
    setup = choose_input_method({"QT_IM_MODULE": "kime", "XMODIFIERS": "@im=kime"}, PYSIDE_PLUGINS, platform="linux")
    assert setup.environment == {} and setup.unsupported == "kime"
    assert "kime, has no plugin in this app's Qt (it has: compose, ibus, qtvirtualkeyboard)" in setup.advice
    assert "IBus or Fcitx 5" in setup.advice and "paste" in setup.advice
    assert (
        choose_input_method({"QT_IM_MODULE": "xim", "XMODIFIERS": "@im=uim"}, PYSIDE_PLUGINS, "linux").unsupported
        == "uim"
    )
    assert choose_input_method({"QT_IM_MODULE": "fcitx"}, frozenset({"compose"}), "linux").unsupported == "fcitx"


def test_windows_and_macos_are_left_to_qt():
    for platform in ("win32", "darwin"):
        assert choose_input_method({"QT_IM_MODULE": "kime"}, PYSIDE_PLUGINS, platform=platform).environment == {}


def test_the_plugins_are_read_from_qt_s_plugin_folder(tmp_path):
    folder = tmp_path / "platforminputcontexts"
    folder.mkdir()
    for name in ("libibusplatforminputcontextplugin.so", "libcomposeplatforminputcontextplugin.so", "README"):
        (folder / name).touch()
    assert shipped_input_methods(tmp_path) == {"ibus", "compose"}
    assert shipped_input_methods(tmp_path / "missing") == frozenset()
    assert "ibus" in shipped_input_methods()  # PySide6's own Qt


def test_prepare_sets_the_variables_in_the_environment_given():
    environ = {"QT_IM_MODULE": "fcitx"}
    setup = prepare_input_method(environ)
    assert environ == {"QT_IM_MODULE": "fcitx", **THROUGH_FCITX} and setup.environment == THROUGH_FCITX


def test_the_status_bar_names_an_input_method_qt_cannot_reach(qtbot, tmp_path):
    from spokenbench.app.main_window import MainWindow

    window = MainWindow(
        audio_message="off",
        poll_interval_s=0.1,
        settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat),
    )
    qtbot.addWidget(window)
    window.show()
    try:
        window.show_input_method(choose_input_method({"QT_IM_MODULE": "kime"}, PYSIDE_PLUGINS, platform="linux"))
        assert window.input_method_label.isVisible() and window.input_method_label.text() == "No input method: kime"
        assert "cannot be typed" in window.input_method_label.toolTip()
        window.show_input_method(choose_input_method({"QT_IM_MODULE": "fcitx"}, PYSIDE_PLUGINS, platform="linux"))
        assert not window.input_method_label.isVisible()
    finally:
        window.shutdown()
