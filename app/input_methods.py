"""Typing Chinese and Korean into the app's text fields (a rating's note, an edited rewrite, a search, a speaker's
name) through the desktop's input method, chosen before Qt starts.

PySide6's wheels carry one input-method plugin of Qt's, IBus's (and the dead-key `compose` one); a plugin built
for the system's Qt cannot load into them (it needs that exact Qt). On an Fcitx 5 desktop, whose environment
says QT_IM_MODULE=fcitx, Qt found no plugin and every key arrived as a Latin letter: a Chinese annotator's note
was "nihao", not 你好. Fcitx 5 also answers IBus's protocol through the IBus portal on the session bus (its
`ibusfrontend`, on by default), so Qt is asked to try the module named, then its own Wayland one, then IBus
through that portal (QT_IM_MODULES, Qt ≥ 6.7). An input method with no such door (kime, uim, nimf …) is named
in the status bar instead of failing silently. What the person set themselves (QT_IM_MODULES, IBUS_USE_PORTAL)
is kept."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# input methods that answer IBus's protocol on the session bus's IBus portal (Fcitx 5's ibusfrontend)
SPEAKS_IBUS = frozenset({"fcitx", "fcitx5"})
# modules that type no Chinese or Korean themselves: Qt 6's "xim" is the compose plugin (it has no XIM), so the
# input method is the one XMODIFIERS names
NAMES_NO_INPUT_METHOD = frozenset({"", "none", "xim", "compose"})
PLUGIN_FILE = re.compile(r"^(?:lib)?(\w+?)(?:platforminputcontext)?plugin\.(?:so|dll|dylib)$")


@dataclass(frozen=True)
class InputMethodSetup:
    """What `choose_input_method` decided: variables to set before Qt starts, and what the status bar says."""

    environment: dict[str, str] = field(default_factory=dict)
    unsupported: str | None = None  # the input method Qt cannot reach here (None: it can, or none is used)
    advice: str | None = None  # why, and what to do, for the status bar's tooltip


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
    if requested in NAMES_NO_INPUT_METHOD:  # the X input method named by XMODIFIERS=@im=NAME, if any
        wanted = _module_name(environ.get("XMODIFIERS", "").partition("@im=")[2])
    if wanted in NAMES_NO_INPUT_METHOD or (wanted == requested and wanted in shipped):
        return InputMethodSetup()
    if (wanted == "ibus" or wanted in SPEAKS_IBUS) and "ibus" in shipped:
        tried = [] if requested in NAMES_NO_INPUT_METHOD else [requested]  # a plugin put there by hand goes first
        environment = {"QT_IM_MODULES": ";".join([*tried, "wayland", "ibus"])}  # Wayland's own, on Wayland
        if wanted in SPEAKS_IBUS and "IBUS_USE_PORTAL" not in environ:  # the portal needs no ibus-daemon
            environment["IBUS_USE_PORTAL"] = "1"  # installed (Qt's IBus plugin wants one on the PATH otherwise)
        return InputMethodSetup(environment)
    plugins = ", ".join(sorted(shipped)) or "none"
    advice = (
        f"The desktop's input method, {wanted}, has no plugin in this app's Qt (it has: {plugins}), so Chinese or "
        "Korean cannot be typed into the app's text fields; the rating, review and recording keys work as usual. "
        "Under IBus or Fcitx 5 they can (Fcitx 5 through its IBus portal: keep its IBus Frontend add-on on): switch "
        "the desktop to one of them, or type the text elsewhere and paste it."
    )
    return InputMethodSetup(unsupported=wanted, advice=advice)


def prepare_input_method(environ=None) -> InputMethodSetup:
    """Decide and set the variables in `environ` (os.environ) before the QApplication is made."""
    import os

    environ = os.environ if environ is None else environ
    setup = choose_input_method(environ, shipped_input_methods())
    environ.update(setup.environment)
    return setup
