"""Typing Chinese and Korean into the app's text fields (a rating's note, an edited rewrite, a search, a speaker's
name) through the desktop's input method, chosen before Qt starts.

PySide6's wheels carry one input-method plugin of Qt's, IBus's (and the dead-key `compose` one); a plugin built for
the system's Qt cannot load into them (it needs that exact Qt). On an Fcitx 5 desktop, whose environment says
QT_IM_MODULE=fcitx, Qt found no plugin and every key arrived as a Latin letter: a Chinese annotator's note was
"nihao", not 你好. Fcitx 5 also answers IBus's protocol through the IBus portal on the session bus (its
`ibusfrontend`, on by default), so Qt is asked to try the module named, then its own Wayland one (a Wayland
compositor's text input, where there is one), then IBus through that portal (QT_IM_MODULES, a list that newer Qt 6
releases read, PySide6's 6.12 among them). Where nothing answers on the portal (Fcitx 4, Fcitx 5 with that add-on
off) or the input method has no such door (kime, uim, nimf …), the status bar says so instead of the keys turning
silently into Latin letters. What the person set themselves (QT_IM_MODULES, IBUS_USE_PORTAL, QT_IM_MODULE=none or
compose) is kept."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

# input methods that answer IBus's protocol on the session bus's IBus portal (Fcitx 5's ibusfrontend)
SPEAKS_IBUS = frozenset({"fcitx", "fcitx5"})
IBUS_PORTAL = "org.freedesktop.portal.IBus"
PORTAL_CHECK_MS = 1000  # a bus daemon that stopped answering holds the window no longer than this
# QT_IM_MODULE values that leave the choice to XMODIFIERS=@im=NAME: none set, or Qt 6's "xim", which is the
# compose plugin (Qt 6 has no XIM); "none" and "compose" are a choice of no input method, kept
FROM_XMODIFIERS = frozenset({"", "xim"})
STILL_WORKS = "the rating, review and recording keys work as usual."
PLUGIN_FILE = re.compile(r"^(?:lib)?(\w+?)(?:platforminputcontext)?plugin\.(?:so|dll|dylib)$")


@dataclass(frozen=True)
class InputMethodSetup:
    """What `choose_input_method` decided: variables to set before Qt starts, and what the status bar says."""

    environment: dict[str, str] = field(default_factory=dict)
    unsupported: str | None = None  # the input method Qt cannot reach here (None: it can, or none is used)
    advice: str | None = None  # why, and what to do, for the status bar's tooltip
    through_portal: str | None = None  # the input method reached through the IBus portal, to check once Qt runs


def shipped_input_methods(plugins: Path | None = None) -> frozenset[str]:
    """Names of the input-method plugins this Qt carries (ibus, compose …), from its plugin folder."""
    if plugins is None:
        from PySide6.QtCore import QLibraryInfo

        plugins = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))
    try:
        names = [entry.name for entry in (plugins / "platforminputcontexts").iterdir()]
    except OSError:
        return frozenset()
    return frozenset(match.group(1).lower() for name in names if (match := PLUGIN_FILE.match(name)))


def _module_name(value: str | None) -> str:
    """'fcitx' of QT_IM_MODULE=fcitx (or 'Fcitx:param'); '' when unset."""
    return (value or "").split(":", 1)[0].strip().lower()


def choose_input_method(
    environ: Mapping[str, str], shipped: frozenset[str], platform: str = sys.platform
) -> InputMethodSetup:
    """The input method the desktop asks for, made reachable from this Qt where it can be (see the module).
    Windows and macOS need nothing: Qt talks to their input methods itself."""
    if not platform.startswith("linux") or environ.get("QT_IM_MODULES"):  # the person chose the list
        return InputMethodSetup()
    requested = _module_name(environ.get("QT_IM_MODULE"))
    wanted = requested
    if requested in FROM_XMODIFIERS:
        wanted = _module_name(environ.get("XMODIFIERS", "").partition("@im=")[2])
    if wanted in {"", "none", "compose"} or (wanted == requested and wanted in shipped):
        return InputMethodSetup()
    if (wanted == "ibus" or wanted in SPEAKS_IBUS) and "ibus" in shipped:
        tried = [] if requested in FROM_XMODIFIERS else [requested]  # a plugin put there by hand goes first
        environment = {"QT_IM_MODULES": ";".join([*tried, "wayland", "ibus"])}
        if wanted == "ibus":  # QT_IM_MODULE unset or xim under IBus: Qt 6 alone gave compose (no IBus) on X11
            return InputMethodSetup(environment)
        if "IBUS_USE_PORTAL" not in environ:  # Qt takes it set at all ('', 0) as on; the person's own is kept
            environment["IBUS_USE_PORTAL"] = "1"  # the portal needs no ibus-daemon installed, as Fcitx alone has
        return InputMethodSetup(environment, through_portal=wanted)
    plugins = ", ".join(sorted(shipped)) or "none"
    advice = (
        f"The desktop's input method, {wanted}, has no plugin in this app's Qt (it has: {plugins}), so Chinese or "
        f"Korean cannot be typed into the app's text fields; {STILL_WORKS} Under IBus or Fcitx 5 they can (Fcitx 5 "
        "through its IBus portal: keep its IBus Frontend add-on on): switch the desktop to one of them, or type the "
        "text elsewhere and paste it."
    )
    return InputMethodSetup(unsupported=wanted, advice=advice)


def prepare_input_method(environ: MutableMapping[str, str] | None = None) -> InputMethodSetup:
    """Decide and set the variables in `environ` (os.environ) before the QApplication is made."""
    environ = os.environ if environ is None else environ
    setup = choose_input_method(environ, shipped_input_methods())
    environ.update(setup.environment)
    return setup


def portal_answers(bus=None) -> bool:
    """Whether something owns the IBus portal's name on the session bus (`bus`: a QDBusConnection, the session
    bus by default): one call to the bus daemon, at most PORTAL_CHECK_MS. IBus installs a service file for that
    name, so Qt's IBus plugin's own call may have started IBus's portal by then: an answer, all the same."""
    from PySide6.QtDBus import QDBusConnection

    bus = QDBusConnection.sessionBus() if bus is None else bus
    if not bus.isConnected():
        return False
    daemon = bus.interface()
    daemon.setTimeout(PORTAL_CHECK_MS)
    reply = daemon.isServiceRegistered(IBUS_PORTAL)
    return reply.isValid() and bool(reply.value())


def checked_input_method(setup: InputMethodSetup, platform_name: str, bus=None) -> InputMethodSetup:
    """`setup`, with the status bar's warning when the input method it reaches through the IBus portal does not
    answer there. On X11 only (`platform_name`, Qt's, is 'xcb'): on Wayland a compositor's text input may reach
    it without the portal, and offscreen (tests, --smoke) no input method is used."""
    if setup.through_portal is None or platform_name != "xcb" or portal_answers(bus):
        return setup
    advice = (
        f"The desktop's input method, {setup.through_portal}, does not answer on the session bus's IBus portal, "
        "through which this app's Qt reaches it (Fcitx 4 has no portal; Fcitx 5 answers there while its IBus "
        f"Frontend add-on is on), so Chinese or Korean cannot be typed into the app's text fields; {STILL_WORKS} "
        "Turn Fcitx 5's IBus Frontend on (Fcitx configuration → Addons) and start the app again, or type the text "
        "elsewhere and paste it."
    )
    return dataclasses.replace(setup, unsupported=setup.through_portal, advice=advice)
