"""The desktop's input method as the app asks Qt for it (app/input_methods.py): PySide6's Qt carries IBus's plugin
only, so Fcitx 5 (QT_IM_MODULE=fcitx) is reached through its IBus portal, and an input method with no way in, or
a portal nobody answers, is named in the status bar (tests/widgets/test_main_window.py). The real input methods
on a real desktop:
tests/widgets/test_real_input_method.py."""

import shutil

import pytest
from PySide6.QtDBus import QDBusConnection
from real_device import start_session_bus

from spokenbench.app.input_methods import (
    IBUS_PORTAL,
    InputMethodSetup,
    checked_input_method,
    choose_input_method,
    portal_answers,
    prepare_input_method,
    shipped_input_methods,
)

PYSIDE_PLUGINS = frozenset({"ibus", "compose", "qtvirtualkeyboard"})
THROUGH_FCITX = {"QT_IM_MODULES": "fcitx;wayland;ibus", "IBUS_USE_PORTAL": "1"}
FROM_XMODIFIERS = {"QT_IM_MODULES": "wayland;ibus", "IBUS_USE_PORTAL": "1"}


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"QT_IM_MODULE": "fcitx", "XMODIFIERS": "@im=fcitx"}, InputMethodSetup(THROUGH_FCITX, through_portal="fcitx")),
        (
            {"QT_IM_MODULE": "Fcitx5:x"},
            InputMethodSetup({"QT_IM_MODULES": "fcitx5;wayland;ibus", "IBUS_USE_PORTAL": "1"}, through_portal="fcitx5"),
        ),
        ({"QT_IM_MODULE": "xim", "XMODIFIERS": "@im=fcitx"}, InputMethodSetup(FROM_XMODIFIERS, through_portal="fcitx")),
        ({"XMODIFIERS": "@im=fcitx"}, InputMethodSetup(FROM_XMODIFIERS, through_portal="fcitx")),
        # the person's IBUS_USE_PORTAL is kept (Qt takes it set at all, '' or 0 too, as on)
        (
            {"QT_IM_MODULE": "fcitx", "IBUS_USE_PORTAL": "0"},
            InputMethodSetup({"QT_IM_MODULES": "fcitx;wayland;ibus"}, through_portal="fcitx"),
        ),
        # IBus named by XMODIFIERS only: Qt 6 alone gave X11 the compose plugin, which types no Chinese or Korean
        ({"QT_IM_MODULE": "xim", "XMODIFIERS": "@im=ibus"}, InputMethodSetup({"QT_IM_MODULES": "wayland;ibus"})),
        ({"QT_IM_MODULE": "ibus", "XMODIFIERS": "@im=ibus"}, InputMethodSetup()),  # Qt has it
        ({"QT_IM_MODULE": "fcitx", "QT_IM_MODULES": "fcitx"}, InputMethodSetup()),  # the person's own list
        ({"QT_IM_MODULE": "none", "XMODIFIERS": "@im=ibus"}, InputMethodSetup()),  # no input method, chosen
        ({"QT_IM_MODULE": "compose", "XMODIFIERS": "@im=fcitx"}, InputMethodSetup()),  # dead keys only, chosen
        ({"XMODIFIERS": "@im=none"}, InputMethodSetup()),
        ({}, InputMethodSetup()),  # no input method: Qt's default (Wayland's own, or dead keys on X11)
    ],
)
def test_the_variables_set_before_qt_starts(environ, expected):
    assert choose_input_method(environ, PYSIDE_PLUGINS, platform="linux") == expected


def test_an_input_method_without_a_way_in_is_named_with_what_to_do():
    setup = choose_input_method({"QT_IM_MODULE": "kime", "XMODIFIERS": "@im=kime"}, PYSIDE_PLUGINS, platform="linux")
    assert setup.environment == {} and setup.unsupported == "kime" and setup.through_portal is None
    assert "kime, has no plugin in this app's Qt (it has: compose, ibus, qtvirtualkeyboard)" in setup.advice
    assert "IBus or Fcitx 5" in setup.advice and "paste" in setup.advice
    assert (
        choose_input_method({"QT_IM_MODULE": "xim", "XMODIFIERS": "@im=uim"}, PYSIDE_PLUGINS, "linux").unsupported
        == "uim"
    )
    assert choose_input_method({"QT_IM_MODULE": "fcitx"}, frozenset({"compose"}), "linux").unsupported == "fcitx"


def test_windows_and_macos_are_left_to_qt():
    for platform in ("win32", "darwin"):
        assert choose_input_method({"QT_IM_MODULE": "kime"}, PYSIDE_PLUGINS, platform=platform) == InputMethodSetup()


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


@pytest.fixture
def session_bus(qapp, tmp_path):
    """A private session bus (a real dbus-daemon, tests/real_device.py's `start_session_bus`) and a connection of
    this process to it."""
    if shutil.which("dbus-daemon") is None:
        pytest.skip("needs dbus-daemon (apt-get install dbus-daemon)")
    daemon, address = start_session_bus()
    name = f"bus-{tmp_path.name}"
    try:
        yield address, QDBusConnection.connectToBus(address, name)
    finally:
        QDBusConnection.disconnectFromBus(name)
        daemon.terminate()
        daemon.wait(10)


def test_a_portal_nobody_answers_is_said_and_one_that_answers_is_not(session_bus):
    address, bus = session_bus
    setup = choose_input_method({"QT_IM_MODULE": "fcitx"}, PYSIDE_PLUGINS, platform="linux")
    assert not portal_answers(bus)
    checked = checked_input_method(setup, "xcb", bus)
    assert checked.unsupported == "fcitx" and checked.environment == setup.environment
    assert "does not answer on the session bus's IBus portal" in checked.advice and "IBus Frontend" in checked.advice
    assert checked_input_method(setup, "wayland", bus) == setup  # a compositor's text input may reach it there
    assert checked_input_method(setup, "offscreen", bus) == setup  # no input method used

    owner = f"fcitx-{address.rsplit('=', 1)[-1]}"
    fcitx = QDBusConnection.connectToBus(address, owner)  # a second client takes the portal's name
    try:
        assert fcitx.registerService(IBUS_PORTAL)
        assert portal_answers(bus)
        assert checked_input_method(setup, "xcb", bus) == setup
    finally:
        QDBusConnection.disconnectFromBus(owner)


def test_no_session_bus_counts_as_no_portal(qapp, tmp_path):
    gone = QDBusConnection.connectToBus(f"unix:path={tmp_path / 'no-bus'}", f"gone-{tmp_path.name}")
    try:
        assert not portal_answers(gone)
        fcitx = choose_input_method({"QT_IM_MODULE": "fcitx"}, PYSIDE_PLUGINS, platform="linux")
        assert checked_input_method(fcitx, "xcb", gone).unsupported == "fcitx"
        ibus = InputMethodSetup({"QT_IM_MODULES": "ibus"})
        assert checked_input_method(ibus, "xcb", gone) == ibus  # not reached through the portal: nothing to check
    finally:
        QDBusConnection.disconnectFromBus(f"gone-{tmp_path.name}")
