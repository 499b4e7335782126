"""A real desktop for the app: an X server (Xvfb) and a PulseAudio server with a null sink, started here for
one test or benchmark and stopped after it, and the keyboard-only sessions driven with xdotool against
`spokenbench-studio`: rating (tests/widgets/test_real_device_session.py, tests/benchmarks/bench_real_device_session.py),
recording a speaker's takes (`recording_session`: tests/widgets/test_real_recording.py,
docs/screenshots/recording_walk.py), typing through an input method (`typed_session`) and others.

The app's UI thread rewrites a heartbeat file every 100 ms (SPOKENBENCH_HEARTBEAT_FILE, app/main.py); a watchdog
thread here reads it every 20 ms and stops the session when the event loop has not answered for `FREEZE_S` or
the process died. Both servers are private (their own display number and runtime folder) so parallel runs do not
share them; every process started here is ended by its own id."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import random
import re
import selectors
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

PACKAGES = {
    "Xvfb": "xvfb",
    "setxkbmap": "x11-xkb-utils",
    "pulseaudio": "pulseaudio",
    "pactl": "pulseaudio-utils",
    "xdotool": "xdotool",
}
# window managers a walk can run under (SPOKENBENCH_WALK_WM=xfwm4; apt-get install --no-install-recommends xfwm4):
# xfwm4 needs a session bus for its settings (the desktop's own, `RealDesktop.session_bus`)
WINDOW_MANAGERS = {
    "xfwm4": ["xfwm4", "--compositor=off"],
}
BUS_START_S = 10.0  # for a session bus to print its address
# A panel along the bottom of the screen (a Tk window of the dock type reserving its height through
# _NET_WM_STRUT_PARTIAL), as a taskbar or an Xfce or KDE panel keeps windows out of it: the window manager takes it
# out of the work area, which is what Qt's availableGeometry reports (SPOKENBENCH_WALK_PANEL pixels, 40 by default)
PANEL_SCRIPT = """
import sys, tkinter
height = int(sys.argv[1])
root = tkinter.Tk(className="spokenbench-walk-panel")
root.geometry(f"{root.winfo_screenwidth()}x{height}+0+{root.winfo_screenheight() - height}")
root.attributes("-type", "dock")
root.configure(background="#303030")
root.mainloop()
"""
FREEZE_S = 2.0
ANNOTATOR = "stress-tester"
QUEUE = "stress"
QUEUE_CLIPS = 260  # more than the rounds: every rating key lands on a new clip


def app_command() -> list[str]:
    """The installed `spokenbench-studio` of this interpreter's environment."""
    script = Path(sys.executable).parent / "spokenbench-studio"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "spokenbench.app.main"]


def missing_tools() -> str | None:
    """Install Xvfb, PulseAudio and xdotool when missing (as root, with apt-get); why not, when they cannot be."""
    missing = sorted({package for tool, package in PACKAGES.items() if shutil.which(tool) is None})
    if not missing:
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"needs {' '.join(missing)} (apt-get install -y {' '.join(missing)}; not root here)"
    quiet = {
        "stdout": subprocess.DEVNULL,
        "stderr": subprocess.DEVNULL,
        "env": {**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    }
    subprocess.run(["apt-get", "update", "-qq"], check=False, timeout=300, **quiet)
    subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=False, timeout=600, **quiet)
    still = sorted({package for tool, package in PACKAGES.items() if shutil.which(tool) is None})
    return f"could not install {' '.join(still)} with apt-get" if still else None


def missing_window_manager() -> str | None:
    """Install xfwm4 (without its recommended packages: they bring a Chinese font, and the font tests need a
    machine without one), xwininfo and xprop when missing; why not, when they cannot be. The panel needs tkinter."""
    try:
        import tkinter  # noqa: F401 - the panel's window
    except ImportError:
        return "the walk's panel needs tkinter (apt-get install python3-tk)"
    tools = {"xfwm4": "xfwm4", "dbus-daemon": "dbus-daemon", "xwininfo": "x11-utils", "xprop": "x11-utils"}
    return install_missing(lambda: sorted({package for tool, package in tools.items() if shutil.which(tool) is None}))


def install_missing(missing_packages) -> str | None:
    """Install the packages `missing_packages()` names, as root with apt-get and without their recommended
    packages, then ask it again; why not, when they cannot be."""
    missing = missing_packages()
    if not missing:
        return None
    wanted = " ".join(missing)
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"needs {wanted} (apt-get install --no-install-recommends {wanted}; not root here)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    command = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]
    subprocess.run(command, check=False, timeout=900, env=env, capture_output=True)
    still = missing_packages()
    return f"could not install {' '.join(still)} with apt-get" if still else None


def start_session_bus(env: dict[str, str] | None = None, processes: list | None = None) -> tuple[subprocess.Popen, str]:
    """A private D-Bus session bus (dbus-daemon) and its address, waited for at most BUS_START_S; the process is
    added to `processes` at once, so whoever ends those ends it even when it never answered. The address comes
    on a pipe of its own, closed once read; the daemon's output (and its services') goes nowhere."""
    read, write = os.pipe()
    bus = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--print-address={write}"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(write)
    if processes is not None:
        processes.append(bus)
    with os.fdopen(read) as printed, selectors.DefaultSelector() as ready:
        ready.register(printed, selectors.EVENT_READ)
        address = printed.readline().strip() if ready.select(BUS_START_S) else ""
    if not address:
        raise RuntimeError(f"the session bus printed no address within {BUS_START_S:g} s")
    return bus, address


class RealDesktop:
    """Xvfb on a display it picks itself and a PulseAudio server whose only sink is a null sink."""

    def __init__(
        self, folder: Path, screen: str = "1400x900x24", window_manager: str | None = None, panel: int | None = None
    ):
        self.folder = folder
        self.screen = screen
        self.window_manager = window_manager or os.environ.get("SPOKENBENCH_WALK_WM") or None
        self.panel = int(os.environ.get("SPOKENBENCH_WALK_PANEL", "40")) if panel is None else panel
        self.processes: list[subprocess.Popen] = []
        self.display = ""
        self.pulse_server = ""
        self.bus_address = ""
        self._short_home: Path | None = None
        self._quiet = threading.Event()  # the room's noise (`room_noise`) ends
        self._room: threading.Thread | None = None

    def __enter__(self) -> RealDesktop:
        try:
            self._start_x()
            if self.window_manager:
                self._start_window_manager()
            self._start_pulse()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start_x(self) -> None:
        read, write = os.pipe()
        x = subprocess.Popen(
            [*self._x_server(), "-displayfd", str(write), "-nolisten", "tcp", "-noreset"],
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.processes.append(x)
        os.close(write)
        with os.fdopen(read) as handle:
            number = handle.readline().strip()  # written once the server accepts clients
        if not number:
            raise RuntimeError(f"{self._x_server()[0]} did not start")
        self.display = f":{number}"

    def _x_server(self) -> list[str]:
        return ["Xvfb", "-screen", "0", self.screen]

    def _start_window_manager(self) -> None:
        """A real window manager (xfwm4, Xfce's): it decorates, places and activates windows and gives
        the keyboard back to a window when a dialog closes, which nothing does on a bare X server."""
        command = WINDOW_MANAGERS[self.window_manager]
        # NO_AT_BRIDGE: GTK (xfwm4) would start the accessibility bus, a daemon of its own that outlived the
        # desktop (three left running by every test run)
        env = {**os.environ, "DISPLAY": self.display, "HOME": str(self.folder), "NO_AT_BRIDGE": "1"}
        env["DBUS_SESSION_BUS_ADDRESS"] = self.session_bus()
        self.folder.mkdir(parents=True, exist_ok=True)
        manager = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.processes.append(manager)
        deadline = time.monotonic() + 20
        while "window id" not in self.xprop("-root", "_NET_SUPPORTING_WM_CHECK"):
            if manager.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.window_manager} did not start")
            time.sleep(0.1)
        if self.panel:
            self._start_panel(env)

    def _start_panel(self, env: dict[str, str]) -> None:
        panel = subprocess.Popen([sys.executable, "-c", PANEL_SCRIPT, str(self.panel)], env=env)
        self.processes.append(panel)
        found = self.xdotool("search", "--sync", "--classname", "spokenbench-walk-panel", timeout=20).stdout.split()
        width = int(self.screen.split("x")[0])
        for window in found:
            for name, value in (
                ("_NET_WM_STRUT", f"0,0,0,{self.panel}"),
                ("_NET_WM_STRUT_PARTIAL", f"0,0,0,{self.panel},0,0,0,0,0,0,0,{width - 1}"),
            ):
                self.xprop("-id", window, "-f", name, "32c", "-set", name, value)
        deadline = time.monotonic() + 20
        while self.work_area()[3] == int(self.screen.split("x")[1]):
            if panel.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the panel did not take its place (is tkinter installed? python3-tk)")
            time.sleep(0.1)

    def session_bus(self) -> str:
        """The desktop's session bus (started the first time), as a login has one: the window manager's settings
        and the input methods live on it. Its own process, ended with the desktop, so what it started for its
        clients (xfconfd) goes with it; dbus-run-session left its bus running (two daemons per desktop)."""
        if not self.bus_address:
            # what it starts for its clients (xfconfd) gets its environment: the desktop's folder as HOME, so
            # xfwm4's settings stay there and out of the user's own
            self.folder.mkdir(parents=True, exist_ok=True)
            env = {**os.environ, "HOME": str(self.folder), "DISPLAY": self.display, "NO_AT_BRIDGE": "1"}
            _bus, self.bus_address = start_session_bus(env, self.processes)
        return self.bus_address

    def frame(self, window: str) -> tuple[int, int, int, int]:
        """A window's outer rectangle on the screen (x, y, width, height), with the title bar and borders its
        window manager added (_NET_FRAME_EXTENTS: left, right, top, bottom)."""
        env = {**os.environ, "DISPLAY": self.display}
        info = subprocess.run(["xwininfo", "-id", window], env=env, capture_output=True, text=True, timeout=10).stdout
        fields = dict(line.strip().split(": ", 1) for line in info.splitlines() if ": " in line)
        x, y = int(fields["Absolute upper-left X"]), int(fields["Absolute upper-left Y"])
        width, height = int(fields["Width"]), int(fields["Height"])
        extents = self.xprop("-id", window, "_NET_FRAME_EXTENTS").split("=")[-1].split(",")
        left, right, top, bottom = (int(value) for value in extents) if len(extents) == 4 else (0, 0, 0, 0)
        return x - left, y - top, width + left + right, height + top + bottom

    def work_area(self) -> tuple[int, int, int, int]:
        """The window manager's work area (x, y, width, height): the screen less its panels."""
        values = self.xprop("-root", "_NET_WORKAREA").split("=")[-1].split(",")[:4]
        return tuple(int(value) for value in values) if len(values) == 4 else (0, 0, 0, 0)

    def xprop(self, *args: str) -> str:
        env = {**os.environ, "DISPLAY": self.display}
        return subprocess.run(["xprop", *args], env=env, capture_output=True, text=True, timeout=10).stdout

    def set_layout(self, layout: str) -> None:
        """Give the keyboard another layout ('fr', 'ru'), as the person at it chose (the server must not reset
        when its last client leaves, hence Xvfb's -noreset: a reset brings back the US layout)."""
        subprocess.run(["setxkbmap", "-display", self.display, layout], check=True, timeout=30)

    def stop_pulse(self) -> None:
        """Kill the sound server (SIGKILL, as a crash): the app's streams break and new ones cannot open."""
        self.pulse.kill()
        self.pulse.wait(10)

    def hang_pulse(self) -> None:
        """Stop the sound server (SIGSTOP): it keeps its socket and answers nothing, as a hung PulseAudio or
        PipeWire does; `resume_pulse` lets it go on."""
        self.pulse.send_signal(signal.SIGSTOP)

    def resume_pulse(self) -> None:
        self.pulse.send_signal(signal.SIGCONT)

    def start_pulse(self) -> None:
        """Start the sound server again on the same socket (a restarted or re-plugged output)."""
        self._start_pulse()

    def _start_pulse(self) -> None:
        runtime = self.folder / "pulse"
        runtime.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "PULSE_RUNTIME_PATH": str(runtime),
            "PULSE_STATE_PATH": str(runtime),
            "HOME": str(self.folder),
        }
        pulse = subprocess.Popen(
            ["pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--disallow-exit",
             "--load=module-native-protocol-unix", "--load=module-null-sink sink_name=spokenbench_null"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.processes.append(pulse)
        self.pulse = pulse
        self.pulse_server = f"unix:{runtime / 'native'}"
        deadline = time.monotonic() + 15
        while self.pactl("info").returncode != 0:
            if pulse.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("PulseAudio did not start")
            time.sleep(0.1)

    def pactl(self, *args: str, timeout: float = 10) -> subprocess.CompletedProcess:
        """pactl's answer; exit code 124 and nothing listed when the server does not answer in `timeout`."""
        env = {**os.environ, "PULSE_SERVER": self.pulse_server}
        try:
            return subprocess.run(["pactl", *args], env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(["pactl", *args], 124, "", "the sound server did not answer")

    def app_env(self, config: Path, heartbeat: Path) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if key != "QT_QPA_PLATFORM"}
        return {
            **env,
            "DISPLAY": self.display,
            "PULSE_SERVER": self.pulse_server,  # Qt's PulseAudio backend and ALSA's pulse plugin (PortAudio) both
            "XDG_CONFIG_HOME": str(config),  # the app's settings, away from the user's
            "SPOKENBENCH_HEARTBEAT_FILE": str(heartbeat),
        }

    def xdotool(self, *args: str, timeout: float = 10) -> subprocess.CompletedProcess:
        env = {**os.environ, "DISPLAY": self.display}
        return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=timeout)

    def screenshot(self, path: Path) -> None:
        """The whole screen as a PNG: ImageMagick's import where installed, else Qt's grab of the root window."""
        env = {key: value for key, value in os.environ.items() if key != "QT_QPA_PLATFORM"}
        env["DISPLAY"] = self.display
        if shutil.which("import"):
            subprocess.run(["import", "-window", "root", str(path)], env=env, timeout=30, check=False)
            return
        grab = "import sys; from PySide6.QtGui import QGuiApplication as A; a = A([]); a.primaryScreen().grabWindow(0).save(sys.argv[1])"
        subprocess.run([sys.executable, "-c", grab, str(path)], env=env, timeout=30, check=False)

    def room_noise(self, dbfs: float = -70.0) -> None:
        """A microphone's noise floor, played into the null sink (whose monitor is the input) until `quiet_room`
        or the desktop's end. A real microphone is never exactly zero; the null sink's monitor alone is, as a muted
        input or a noise gate's pause is (core/recording/recorder.py's InputState)."""
        from spokenbench.core.audio.io import encode_wav

        rate = 16_000
        noise = np.random.default_rng(0).normal(0, 10 ** (dbfs / 20), 60 * rate).astype(np.float32)
        room = self.folder / "room-noise.wav"
        room.write_bytes(encode_wav(noise, rate))
        self._quiet.clear()
        self._room = threading.Thread(target=self._play_room, args=(room,), name="room-noise", daemon=True)
        self._room.start()

    def _play_room(self, room: Path) -> None:
        env = {**os.environ, "PULSE_SERVER": self.pulse_server}
        while not self._quiet.is_set():
            player = subprocess.Popen(
                ["paplay", str(room)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            while player.poll() is None and not self._quiet.wait(0.1):
                pass
            if player.poll() is None:
                player.kill()
            player.wait(5)
            if player.returncode not in (0, -signal.SIGKILL):  # the server gone: nothing to play into
                self._quiet.wait(0.5)

    def quiet_room(self) -> None:
        """The room's noise ends: the input is exactly zero again (as a muted input or a noise gate's pause)."""
        self._quiet.set()
        if self._room is not None:
            self._room.join(10)
            self._room = None

    def __exit__(self, *exc) -> None:
        self.quiet_room()
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
        self.processes.clear()
        if self._short_home is not None:
            shutil.rmtree(self._short_home, ignore_errors=True)
            self._short_home = None

    def short_home(self) -> Path:
        """A home folder for the desktop's daemons with a short path (made the first time, removed with the
        desktop): IBus names its socket after $HOME/.cache, and a test's folder under xdist
        (/tmp/pytest-of-root/pytest-N/popen-gw0/test_…/desktop) made that name too long for a socket (the app
        typed Latin letters under IBus in CI, 'gksrmf' for 한글)."""
        if self._short_home is None:
            self._short_home = Path(tempfile.mkdtemp(prefix="sb-home-", dir="/tmp"))
        return self._short_home


class TwoMonitorDesktop(RealDesktop):
    """A laptop's own screen (`screen`, the primary) and an external monitor (`external`) to its right, as Qt
    sees them (two QScreens from RandR 1.5 monitors); `unplug()` takes the external one away as undocking does,
    the desktop shrinking to the laptop's screen. Xvfb has one screen and no RandR monitors, so this runs Xorg with
    its dummy driver (apt-get install xserver-xorg-core xserver-xorg-video-dummy) as root."""

    def __init__(self, folder: Path, screen: str = "1280x720x24", external: str = "1400x900", **kwargs):
        super().__init__(folder, screen=screen, **kwargs)
        self.laptop = tuple(int(value) for value in screen.split("x")[:2])
        self.external = tuple(int(value) for value in external.split("x")[:2])

    def _x_server(self) -> list[str]:
        width, height = self.laptop[0] + self.external[0], max(self.laptop[1], self.external[1])
        self.folder.mkdir(parents=True, exist_ok=True)
        config = self.folder / "xorg-dummy.conf"
        config.write_text(DUMMY_XORG_CONFIG.format(width=width, height=height))
        return ["Xorg", "-config", str(config), "-logfile", str(self.folder / "xorg.log")]

    def _start_x(self) -> None:
        super()._start_x()
        laptop, external = self.laptop, self.external
        self.xrandr("--fb", f"{laptop[0] + external[0]}x{max(laptop[1], external[1])}")
        self.xrandr("--output", "DUMMY0", "--mode", f"{laptop[0]}x{laptop[1]}", "--pos", "0x0", "--primary")
        self.xrandr("--setmonitor", "EXTERNAL", f"{external[0]}/370x{external[1]}/240+{laptop[0]}+0", "none")

    def unplug(self) -> None:
        self.xrandr("--delmonitor", "EXTERNAL")
        self.xrandr("--fb", f"{self.laptop[0]}x{self.laptop[1]}")

    def xrandr(self, *args: str) -> str:
        env = {**os.environ, "DISPLAY": self.display}
        return subprocess.run(["xrandr", *args], env=env, capture_output=True, text=True, timeout=10, check=True).stdout


DUMMY_XORG_CONFIG = """
Section "Device"
    Identifier "dummy"
    Driver "dummy"
    VideoRam 256000
EndSection
Section "Monitor"
    Identifier "monitor"
    HorizSync 5.0 - 1000.0
    VertRefresh 5.0 - 200.0
EndSection
Section "Screen"
    Identifier "screen"
    Device "dummy"
    Monitor "monitor"
    DefaultDepth 24
    SubSection "Display"
        Depth 24
        Virtual {width} {height}
    EndSubSection
EndSection
"""


# Input methods as a Chinese or Korean annotator's desktop runs them: Fcitx 5 with its pinyin (the Chinese add-ons)
# and IBus with its Hangul engine; files whose presence says each is installed, and its packages
INPUT_METHOD_PACKAGES = {
    "fcitx5": ("/usr/share/fcitx5/addon/pinyin.conf", ["fcitx5", "fcitx5-chinese-addons"]),
    "ibus": ("/usr/share/ibus/component/hangul.xml", ["ibus", "ibus-hangul"]),
}
FCITX5_PROFILE = """[Groups/0]
Name=Default
Default Layout=us
DefaultIM=pinyin

[Groups/0/Items/0]
Name=keyboard-us
Layout=

[Groups/0/Items/1]
Name=pinyin
Layout=

[GroupOrder]
0=Default
"""


def missing_input_method(kind: str) -> str | None:
    """Install an input method of INPUT_METHOD_PACKAGES and the session bus's tools when missing
    (`install_missing`); why not, when they cannot be."""
    marker, packages = INPUT_METHOD_PACKAGES[kind]
    bus_tools = {"dbus-daemon": "dbus-daemon", "dbus-send": "dbus-bin"}

    def missing() -> list[str]:
        absent = [] if Path(marker).exists() else list(packages)
        return absent + [package for tool, package in bus_tools.items() if shutil.which(tool) is None]

    return install_missing(missing)


def start_input_method(desktop: RealDesktop, kind: str, config: Path) -> dict[str, str]:
    """An input method on the desktop's session bus, as the annotator's login starts it: 'fcitx5' (pinyin,
    turned on by Ctrl+Space; its environment says QT_IM_MODULE=fcitx, as im-config and Fcitx 5's own docs set it)
    or 'ibus' (the Hangul engine, Hangul mode by Shift+Space; QT_IM_MODULE=ibus). `config` is the app's
    XDG_CONFIG_HOME, where IBus leaves its address and Fcitx 5 reads its profile. Returns the app's variables."""
    config.mkdir(parents=True, exist_ok=True)
    address = desktop.session_bus()
    env = {  # a home of the desktop's: their caches and pinyin history stay there, out of the user's own
        **os.environ,
        "HOME": str(desktop.short_home()),
        "DISPLAY": desktop.display,
        "DBUS_SESSION_BUS_ADDRESS": address,
        "XDG_CONFIG_HOME": str(config),
    }
    env.pop("QT_QPA_PLATFORM", None)
    quiet = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    deadline = time.monotonic() + 30
    if kind == "fcitx5":
        (config / "fcitx5").mkdir(exist_ok=True)
        (config / "fcitx5" / "profile").write_text(FCITX5_PROFILE, encoding="utf-8")
        desktop.processes.append(subprocess.Popen(["fcitx5", "--disable=wayland"], **quiet))
        ask = ["dbus-send", "--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
               "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.portal.IBus"]  # fmt: skip
        while "boolean true" not in subprocess.run(ask, env=env, capture_output=True, text=True, timeout=10).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError("Fcitx 5 did not answer on the IBus portal")
            time.sleep(0.2)
        return {"DBUS_SESSION_BUS_ADDRESS": address, "QT_IM_MODULE": "fcitx", "XMODIFIERS": "@im=fcitx"}
    desktop.processes.append(subprocess.Popen(["ibus-daemon", "--panel=disable", "--replace"], **quiet))
    while subprocess.run(["ibus", "engine", "hangul"], **quiet, timeout=10).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("IBus did not take the Hangul engine")
        time.sleep(0.2)
    return {"DBUS_SESSION_BUS_ADDRESS": address, "QT_IM_MODULE": "ibus", "XMODIFIERS": "@im=ibus"}


# Orca, the screen reader of GNOME and most Linux desktops, and what it needs: the accessibility bus (at-spi2-core,
# started by the session bus when Qt or Orca asks for it), Orca's Python bindings, and speech-dispatcher with espeak-ng
SCREEN_READER_PACKAGES = ("orca", "at-spi2-core", "python3-pyatspi", "speech-dispatcher", "speech-dispatcher-espeak-ng")
ORCA = Path("/usr/bin/orca")
SPEECH_OUTPUT = " - SPEECH OUTPUT: '"  # Orca's debug line for each utterance: HH:MM:SS - SPEECH OUTPUT: 'text'{…}
HEADPHONES = "spokenbench_headphones"  # a null sink for what only the person hears (`ScreenReader`)
ORCA_LOCK = "/tmp/spokenbench-orca.lock"  # `ScreenReader`: one Orca at a time
SPOKEN_TEXT = re.compile(r"^(.*)' ?\{.*\}$")  # the text, without the voice settings after it


def missing_screen_reader() -> str | None:
    """Install Orca and the accessibility bus (`install_missing`); why not, when they cannot be."""

    def missing() -> list[str]:
        present = ORCA.exists() and Path("/usr/libexec/at-spi-bus-launcher").exists()
        absent = [] if present else list(SCREEN_READER_PACKAGES)
        return absent + ([] if shutil.which("dbus-daemon") else ["dbus-daemon"])

    return install_missing(missing)


class ScreenReader:
    """Orca on the desktop's session bus, started before the app as a blind annotator's login starts it. What it
    says is read from its debug output, one 'SPEECH OUTPUT' line per utterance (speech-dispatcher also speaks it,
    into the null sink, with the clips). Orca writes that output to a file it opens itself, block-buffered unless
    the file is a terminal: it gets a pseudo-terminal, read here line by line as Orca writes. `close` ends Orca,
    the speech-dispatcher it started and the reading. `headphones`: its speech goes to a sink of its own, as into
    a recordist's headphones, not into the null sink whose monitor is the microphone."""

    def __init__(self, desktop: RealDesktop, folder: Path, headphones: bool = False):
        self.desktop = desktop
        self.lines: list[str] = []
        # one Orca at a time on the machine: two at once (xdist's workers) failed to start ("Orca did not start",
        # 4 of 5 real-Orca tests with -n 2), as Orca's --replace ends another; the second waits for the first
        self.only_one = open(ORCA_LOCK, "a")  # noqa: SIM115 - held until `close`
        fcntl.flock(self.only_one, fcntl.LOCK_EX)
        folder.mkdir(parents=True, exist_ok=True)
        self.log = (folder / "orca-debug.out").open("w", encoding="utf-8")  # the whole output, kept for a failure
        home = desktop.short_home()  # speech-dispatcher's socket is named after $HOME
        self.env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "QT_QPA_PLATFORM")}
        self.env.update(
            HOME=str(home), DISPLAY=desktop.display, DBUS_SESSION_BUS_ADDRESS=desktop.session_bus(),
            PULSE_SERVER=desktop.pulse_server, XDG_RUNTIME_DIR=str(home),
        )  # fmt: skip
        if headphones:
            desktop.pactl("load-module", "module-null-sink", f"sink_name={HEADPHONES}")
            self.env["PULSE_SINK"] = HEADPHONES  # libpulse's default sink for speech-dispatcher's output
        # the follower side stays open here until `close`: closed before Orca opened it, the terminal hung up
        self.terminal, self.follower = os.openpty()
        self.process: subprocess.Popen | None = None
        self.reading = threading.Thread(target=self._read, daemon=True)
        self.reading.start()
        try:
            settings = folder / "orca-settings"
            command = [str(ORCA), "--replace", "-u", str(settings), "--debug-file", os.ttyname(self.follower)]
            self.process = subprocess.Popen(command, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            desktop.processes.append(self.process)
            if not self.wait_for("Screen reader on", 0, 60):
                raise RuntimeError("Orca did not start (no 'Screen reader on' in its debug output)")
        except BaseException:
            self.close()
            raise

    def _read(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self.terminal, 65536)
            except OSError:  # EIO: Orca has ended and `close` closed the follower side
                break
            if not chunk:
                break
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                line = raw.decode("utf-8", errors="replace").rstrip("\r")
                self.log.write(line + "\n")
                if SPEECH_OUTPUT in line:
                    self.lines.append(spoken_text(line.split(SPEECH_OUTPUT, 1)[1]))
        os.close(self.terminal)
        self.log.close()

    def said(self) -> list[str]:
        """Every utterance so far, in order."""
        return list(self.lines)

    def wait_for(self, text: str, since: int, timeout: float = 10.0) -> str | None:
        """The first utterance after the first `since` that contains `text`, waited for; None if none came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = next((line for line in self.said()[since:] if text in line), None)
            if match is not None:
                return match
            time.sleep(0.05)
        return None

    def close(self) -> None:
        """End Orca and the speech-dispatcher it started (which outlives it; found by this reader's HOME, a folder
        of its own), waited for, then the reading of Orca's output."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        marker = f"HOME={self.env['HOME']}".encode()
        ended = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and marker in (entry / "environ").read_bytes().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGTERM)
                    ended.append(entry)
            except (OSError, ValueError):
                continue
        deadline = time.monotonic() + 10
        while any(entry.exists() for entry in ended) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.close(self.follower)
        self.reading.join(10)
        self.only_one.close()  # the next Orca may start


def spoken_text(logged: str) -> str:
    """An utterance from Orca's debug line after "SPEECH OUTPUT: '": the text up to its closing quote, without
    the voice settings Orca logs after it ({'established': False} …); the text may hold quotes itself."""
    match = SPOKEN_TEXT.match(logged)
    return match.group(1) if match else logged.removesuffix("'")


@contextlib.contextmanager
def screen_reader_session(
    project: Path,
    work: Path,
    screen: str = "1400x900x24",
    command: list[str] | None = None,
    headphones: bool = False,
):
    """Orca (into `headphones`, `ScreenReader`), then the app (`command`, the installed one by default) on the
    project's Rating page with its first queue open (Enter), on a desktop under xfwm4; yields (desktop, reader,
    figures); the app closed by Ctrl+Q after, which completes the figures."""
    figures = SessionFigures(0)
    with RealDesktop(work / "desktop", screen=screen, window_manager="xfwm4") as desktop:
        reader = ScreenReader(desktop, work / "orca", headphones)  # it ends what it started, when it cannot start
        try:
            env = {"DBUS_SESSION_BUS_ADDRESS": desktop.session_bus()}  # Qt finds the accessibility bus through it
            process, heart, log = launch_rating_session(
                desktop, project, work, figures, command, queue_keys=("Return",), env=env
            )
            if process is None:
                raise RuntimeError("the app's rating session did not open: " + "; ".join(figures.notes))
            try:
                yield desktop, reader, figures
            finally:
                close_app(desktop, process, heart, log, figures)
        finally:
            reader.close()


OPENS = frozenset({"n", "e", "ctrl+2", "ctrl+3"})  # keys that open a dialog or a page: a longer pause after them


def type_keys(desktop: RealDesktop, *keys: str) -> None:
    """xdotool's keys one by one, paused after each as a person types (longer after one that opens something)."""
    for key in keys:
        desktop.xdotool("key", key)
        time.sleep(1.5 if key in OPENS else 0.3)


def typed_session(
    project: Path,
    work: Path,
    kind: str | None,
    keys: list[str],
    env: dict[str, str] | None = None,
    steps=None,
    screen: str = "1400x900x24",
) -> SessionFigures:
    """The app on the project's stress queue (added here) on a real desktop under xfwm4 (which gives the keyboard
    back to the window when a dialog closes) and the input method `kind` (`start_input_method`; None: the session
    bus alone), its variables changed by `env`; `keys` typed, then `steps(desktop, process)` when given; its
    figures once it is closed. RuntimeError when the app's rating session never opened (why in its message)."""
    add_stress_queue(project)
    figures = SessionFigures(0)
    with RealDesktop(work / "desktop", screen=screen, window_manager="xfwm4") as desktop:
        started = {"DBUS_SESSION_BUS_ADDRESS": desktop.session_bus()}
        if kind is not None:
            started = start_input_method(desktop, kind, work / "config")
        app_env = {**started, **(env or {})}
        process, heart, log = launch_rating_session(desktop, project, work, figures, app_command(), env=app_env)
        if process is None:
            raise RuntimeError("the app's rating session did not open: " + "; ".join(figures.notes))
        try:
            type_keys(desktop, *keys)
            if steps is not None:
                steps(desktop, process)
            settle(heart)
        finally:
            close_app(desktop, process, heart, log, figures)
    return figures


SPEAKER = "Ana"
SPOKEN = "The quick brown fox jumps over the lazy dog near the river bank."


def add_consented_speaker(project_folder: Path, name: str = SPEAKER) -> None:
    """An English speaker with consent in force, so the Speakers page records their takes."""
    from spokenbench.core.recording.speakers import add_speaker, give_consent
    from spokenbench.core.store import opened

    with opened(project_folder) as project:
        add_speaker(project, name, "en", "american", "woman")
        give_consent(project, name, "I agree to be recorded.", "tester")


def speech_file(path: Path, text: str = SPOKEN) -> Path:
    """`text` spoken by the offline voice (espeak-ng) into a WAV file: what the speaker reads."""
    from spokenbench.core.audio.tts.base import SynthesisRequest
    from spokenbench.core.audio.tts.espeak import EspeakBackend

    backend = EspeakBackend()
    request = SynthesisRequest(text, "en", "american", backend.voices[0])
    path.write_bytes(backend.speak_sync(request))
    return path


def louder(wav: Path, db: float) -> Path:
    """`wav` `db` louder (negative: quieter) into a file beside it, clipped at full scale as an input's converter
    clips: a speaker too close to the microphone or too far from it."""
    import soundfile

    samples, rate = soundfile.read(wav, dtype="float32")
    out = wav.with_name(f"{wav.stem}{db:+.0f}dB.wav")
    soundfile.write(out, np.clip(samples * 10 ** (db / 20), -1.0, 1.0), rate, subtype="FLOAT")
    return out


def read_aloud(desktop: RealDesktop, wav: Path, wait: bool = True) -> subprocess.Popen:
    """Play `wav` into the null sink, whose monitor is the desktop's default input: the app's microphone hears
    it as a speaker reading. `wait`: return once it has been played."""
    env = {**os.environ, "PULSE_SERVER": desktop.pulse_server}
    player = subprocess.Popen(["paplay", str(wav)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    desktop.processes.append(player)
    if wait:
        player.wait(60)
    return player


def recording_session(
    project: Path,
    work: Path,
    steps,
    screen: str = "1400x900x24",
    command: list[str] | None = None,
    enter: bool = True,
    room: bool = True,
) -> SessionFigures:
    """The app on a real desktop under xfwm4, its Speakers page open (Ctrl+5) with the first speaker's recorder
    given the keys (Enter); then `steps(desktop, heart)`, its figures once it is closed. The project needs a
    consented speaker (`add_consented_speaker`); `command` runs another tree's app (`app_trees`); `enter=False`
    leaves Enter unpressed (a question the page opens at once is the steps' to answer). `room`: the input has a
    microphone's noise floor (`RealDesktop.room_noise`); without it, it sends exact zeros until something is played.
    Either way its first block comes late (1-2 s after the stream's start, measured): PulseAudio's null sink
    renders in long blocks, as a suspended microphone wakes. RuntimeError when the app or the page did not open."""
    figures = SessionFigures(0)
    with RealDesktop(work / "desktop", screen=screen, window_manager="xfwm4") as desktop:
        if room:
            desktop.room_noise()
        env = {"DBUS_SESSION_BUS_ADDRESS": desktop.session_bus()}
        process, heart, log = launch_app(desktop, project, work, figures, command or app_command(), env=env)
        if process is None:
            raise RuntimeError("the app did not open: " + "; ".join(figures.notes))
        heart.watching = True
        heart.start()
        try:
            type_keys(desktop, "ctrl+5")
            if not heart.wait_for(lambda *_: heart.recorder == "idle", 30):  # its input devices found
                raise RuntimeError(f"the Speakers page did not open: {heart.recorder}")
            if enter:
                type_keys(desktop, "Return")
            steps(desktop, heart)
            settle(heart)
        finally:
            close_app(desktop, process, heart, log, figures)
    return figures


RECORDING_SHOWN = ("recording-sound", "recording-silent")  # the page shows ● Recording (SpeakersPage.heartbeat_state)
READ_AFTER_SHOWN_S = 0.3  # a speaker reads this long after ● Recording shows


@dataclass
class WakingTake:
    """What one take through an input waking with zeros (`take_through_a_waking_input`) went through, in seconds."""

    shown_after_r: float | None = None  # from R to ● Recording
    first_block_after_r: float | None = None  # from R to the take's first samples on disk (its spool)
    zeros: float | None = None  # the exact zeros the take begins with (read from its spool before the stop)
    read_before_heard: float = 0.0  # how long the speaker read while the input still sent zeros: that is lost


def spool_samples(project_folder: Path) -> np.ndarray | None:
    """The samples of the take being recorded, from the project's spool (core/recording/spool.py), or None."""
    pcms = sorted((project_folder / "recording-spool").glob("*.pcm"), key=lambda pcm: pcm.stat().st_mtime)
    return np.frombuffer(pcms[-1].read_bytes(), dtype="<i2") if pcms else None  # the newest: a failed save's stays


def take_through_a_waking_input(
    desktop: RealDesktop, heart: Heartbeat, project_folder: Path, speaking: Path, zeros_s: float | None
) -> WakingTake:
    """R on an input that wakes with zeros, as WASAPI's first buffers, a USB microphone leaving its power saving or
    a Bluetooth headset changing profile do: the default source is muted (PulseAudio then sends exact zeros) from
    before R until `zeros_s` after the take's first samples reached its spool (None: not muted). The speaker reads
    READ_AFTER_SHOWN_S after ● Recording shows; R once the sentence has been read and a pause taken."""
    figures = WakingTake()
    if zeros_s is not None:
        desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "1")
    type_keys(desktop, "r")
    pressed = time.monotonic()
    unmute_at = read_at = unmuted = None
    player = None
    deadline = pressed + 15
    while time.monotonic() < deadline and (player is None or (zeros_s is not None and unmuted is None)):
        now = time.monotonic()
        heart.read()
        if figures.shown_after_r is None and heart.recorder in RECORDING_SHOWN:
            figures.shown_after_r = now - pressed
            read_at = now + READ_AFTER_SHOWN_S
        if figures.first_block_after_r is None:
            samples = spool_samples(project_folder)
            if samples is not None and len(samples):
                figures.first_block_after_r = now - pressed
                unmute_at = now + (zeros_s or 0.0)
        if zeros_s is not None and unmuted is None and unmute_at is not None and now >= unmute_at:
            desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "0")
            unmuted = time.monotonic()
        if player is None and read_at is not None and now >= read_at:
            player = read_aloud(desktop, speaking, wait=False)
            read_at = time.monotonic()
        time.sleep(0.01)
    if player is None:
        raise RuntimeError(f"● Recording never showed: {heart.recorder_states}")
    if unmuted is not None:
        figures.read_before_heard = max(0.0, unmuted - read_at)
    player.wait(30)
    time.sleep(0.8)  # a pause after the last word; the spool is written four times a second
    samples = spool_samples(project_folder)
    if samples is not None and len(samples):
        rate = 48_000
        with contextlib.suppress(OSError, ValueError, KeyError, StopIteration):
            description = next((project_folder / "recording-spool").glob("*.json"))  # every take here: one rate
            rate = int(json.loads(description.read_text())["rate"])
        sounding = np.flatnonzero(samples)
        figures.zeros = (int(sounding[0]) if len(sounding) else len(samples)) / rate
    type_keys(desktop, "r")
    if not heart.wait_for(lambda *_: heart.recorder == "idle", 15):
        raise RuntimeError(f"the take was not saved: {heart.recorder_states}")
    return figures


def recorded_takes(project_folder: Path) -> list[dict]:
    """The takes recorded, oldest first: their length, whether they passed and their checks by name."""
    import json

    with sqlite3.connect(f"file:{project_folder / 'project.sqlite'}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT duration_s, passed, checks_json FROM recordings ORDER BY id").fetchall()
    return [
        {"duration_s": duration, "passed": bool(passed), **{check["name"]: check for check in json.loads(checks)}}
        for duration, passed, checks in rows
    ]


def stored_notes(project_folder: Path, annotator: str = ANNOTATOR) -> list[str]:
    """The notes of the annotator's ratings, oldest first."""
    with sqlite3.connect(f"file:{project_folder / 'project.sqlite'}?mode=ro", uri=True) as conn:
        query = "SELECT note FROM ratings WHERE annotator = ? AND note IS NOT NULL ORDER BY id"
        return [note for (note,) in conn.execute(query, (annotator,))]


def stored_edits(project_folder: Path, annotator: str = ANNOTATOR) -> list[str]:
    """The texts of the rewrites the annotator edited in review, oldest first."""
    with sqlite3.connect(f"file:{project_folder / 'project.sqlite'}?mode=ro", uri=True) as conn:
        query = "SELECT text FROM rewrites WHERE status = 'edited' AND reviewer = ? ORDER BY id"
        return [text for (text,) in conn.execute(query, (annotator,))]


def add_stress_queue(project_folder: Path, clips: int = QUEUE_CLIPS) -> int:
    """A queue of `clips` clips in clip order (the demo's own queues are smaller than 200 rounds)."""
    from spokenbench.core.qc.queues import create_queue
    from spokenbench.core.qc.sampling import SampleResult, load_clip_records
    from spokenbench.core.store import opened

    with opened(project_folder) as project:
        records = sorted(load_clip_records(project.conn), key=lambda r: r.clip_id)[:clips]
        create_queue(
            project, QUEUE, SampleResult("unscreened", records), 0, 0, {"note": "real-device stress test"}, replace=True
        )
    return len(records)


def stored_ratings(project_folder: Path, annotator: str = ANNOTATOR) -> int:
    with sqlite3.connect(f"file:{project_folder / 'project.sqlite'}?mode=ro", uri=True) as conn:
        query = "SELECT count(*) FROM ratings WHERE annotator = ? AND undone_at IS NULL"
        return conn.execute(query, (annotator,)).fetchone()[0]


@dataclass
class SessionFigures:
    rounds_planned: int
    rounds_done: int = 0
    longest_gap_s: float = 0.0
    froze: bool = False
    died: bool = False
    exit_code: int | None = None
    saves_acknowledged: int = 0
    ignored_keys: int = 0
    ratings_stored: int = 0
    sink_inputs_seen: int = 0  # most PulseAudio playback streams seen at once
    polls_with_stream: int = 0
    polls: int = 0
    seconds: float = 0.0
    started: float = 0.0  # monotonic time the app was started
    round_keys: str = "] [ Space R and a rating key"  # what one round presses
    back_after_s: float | None = None  # run_output_outage: a stream open this long after the restart
    window_after_s: float | None = None  # the app's window visible this long after its start (None: never)
    quit_after_s: float | None = None  # run_hung_server_session: Ctrl+Q with the server hung ended it this soon
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [
            f"rounds: {self.rounds_done} of {self.rounds_planned} (each {self.round_keys})",
            f"longest event-loop gap: {self.longest_gap_s:.3f} s (watchdog limit {FREEZE_S:.0f} s)"
            + (" — FROZE" if self.froze else ""),
            f"process: {'died' if self.died else 'alive to the end'}; exit code {self.exit_code}",
            f"ratings: {self.saves_acknowledged} acknowledged by the app, {self.ratings_stored} in the database;"
            f" {self.ignored_keys} keys ignored while a save or step was in flight",
            f"PulseAudio: up to {self.sink_inputs_seen} playback stream(s) at once; a stream open in "
            f"{self.polls_with_stream} of {self.polls} polls",
            f"session time: {self.seconds:.1f} s",
            *self.notes,
        ]


class Heartbeat:
    """The app's heartbeat file, read by a watchdog thread."""

    def __init__(self, path: Path, process: subprocess.Popen, desktop: RealDesktop):
        self.path, self.process, self.desktop = path, process, desktop
        self.longest_gap = 0.0
        self.froze = self.died = False
        self.values = (0.0, 0, 0, 0)
        self.page = ""
        self.busy = False
        self.recorder = "-"  # the Speakers page's recorder state (SpeakersPage.heartbeat_state)
        self.recorder_states: list[str] = []  # each state the watchdog saw, in order (repeats left out)
        self.sink_inputs = 0
        self.polls = self.polls_with_stream = 0
        self.watching = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def read(self) -> tuple[float, int, int, int] | None:
        """(beat, saves acknowledged, keys ignored, session open); `page` is set to the page shown, `busy` to
        whether a save or step is in flight (keys pressed then are ignored by design) and `recorder` to the Speakers
        page's recorder state."""
        try:
            beat, saves, ignored, session, page, busy, *rest = self.path.read_text().split()
            recorder = rest[0] if rest else "-"  # the Speakers page's, written by the app since it records
            values = float(beat), int(saves), int(ignored), int(session)
            self.busy = bool(int(busy))
        except (OSError, ValueError):
            return None  # not written yet, or caught mid-write
        self.page, self.recorder = page, recorder
        return values

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.ident is not None:  # started
            self._thread.join(10)

    def _watch(self) -> None:
        last_pulse_poll = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            values = self.read()
            if values is not None:
                self.values = values
                if not self.recorder_states or self.recorder_states[-1] != self.recorder:
                    self.recorder_states.append(self.recorder)
            if self.watching and self.values[0] > 0:  # measured from the first beat read, never from 0
                gap = now - self.values[0]
                self.longest_gap = max(self.longest_gap, gap)
                if gap > FREEZE_S:
                    self.froze = True
                if self.process.poll() is not None:
                    self.died = True
                if now - last_pulse_poll > 0.5:
                    last_pulse_poll = now
                    listed = self.desktop.pactl("list", "short", "sink-inputs", timeout=1).stdout.strip().splitlines()
                    self.sink_inputs = max(self.sink_inputs, len(listed))
                    self.polls += 1
                    self.polls_with_stream += bool(listed)
            time.sleep(0.02)

    def wait_for(self, condition, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            values = self.read()
            if values is not None:
                self.values = values  # the watchdog starts from the last beat seen here, not from nothing
                if condition(*values):
                    return True
            time.sleep(0.05)
        return False


def run_session(
    desktop: RealDesktop,
    project_folder: Path,
    work: Path,
    rounds: int = 200,
    delay_ms: tuple[int, int] = (50, 100),
    seed: int = 22,
    screenshot: Path | None = None,
    app_command: list[str] | None = None,
) -> SessionFigures:
    """Start the app on the project, open the Rating page (Ctrl+3), choose the stress queue (↓) and press
    Enter, then `rounds` rounds of ] [ Space R and a rating key (1/2/3) at random 50-100 ms intervals; stop at
    a freeze or death; close the app (Ctrl+Q) and count the ratings stored."""
    figures = SessionFigures(rounds)
    process, heart, log = launch_rating_session(desktop, project_folder, work, figures, app_command)
    try:
        if process is None:
            return figures
        chooser = random.Random(seed)
        for index in range(rounds):
            if heart.froze or heart.died:
                break
            delay = chooser.randint(*delay_ms)
            rate = chooser.choice("123")
            desktop.xdotool("key", "--delay", str(delay), "bracketright", "bracketleft", "space", "r", rate)
            figures.rounds_done = index + 1
            time.sleep(delay / 1000)
            if screenshot is not None and index == rounds // 2:
                desktop.screenshot(screenshot)
        settle(heart)
    finally:
        close_app(desktop, process, heart, log, figures)
    figures.ratings_stored = stored_ratings(project_folder)
    return figures


def press_space_until_heard(desktop: RealDesktop, within: float) -> float | None:
    """Space pressed once a second until PulseAudio lists a playback stream: the seconds that took, None when
    none came `within` seconds."""
    since = time.monotonic()
    while time.monotonic() - since < within:
        desktop.xdotool("key", "space")
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if desktop.pactl("list", "short", "sink-inputs", timeout=1).stdout.strip():
                return time.monotonic() - since
            time.sleep(0.05)
    return None


def run_output_outage(
    desktop: RealDesktop,
    project_folder: Path,
    work: Path,
    rounds: int = 20,
    app_command: list[str] | None = None,
    shots: Path | None = None,
) -> SessionFigures:
    """A rating session whose sound server dies and comes back: a few rounds with sound, then the server killed
    and `rounds` rounds of Space and a rating key without one, then the server started again and Space pressed
    until PulseAudio sees the app's stream (`notes` says how long that took). `shots`: screenshots
    (sound-output-lost.png, sound-output-back.png) into that folder."""
    figures = SessionFigures(rounds, round_keys="Space and a rating key, with no sound server")
    process, heart, log = launch_rating_session(desktop, project_folder, work, figures, app_command)
    try:
        if process is None:
            return figures
        for _round in range(3):  # with sound
            desktop.xdotool("key", "--delay", "80", "space", "1")
            time.sleep(0.3)
        desktop.stop_pulse()
        time.sleep(0.5)
        for index in range(rounds):
            if heart.froze or heart.died:
                break
            desktop.xdotool("key", "--delay", "80", "space", "2")
            figures.rounds_done = index + 1
            time.sleep(0.1)
        desktop.xdotool("key", "space")
        time.sleep(1.0)
        if shots is not None:
            desktop.screenshot(shots / "sound-output-lost.png")
        desktop.start_pulse()  # a new server: it has seen no stream yet
        figures.back_after_s = press_space_until_heard(desktop, 15)
        figures.notes.append(
            f"playback back {figures.back_after_s:.1f} s after the sound server restarted"
            if figures.back_after_s is not None
            else "no playback stream within 15 s of the sound server's restart"
        )
        if shots is not None:
            time.sleep(0.5)
            desktop.screenshot(shots / "sound-output-back.png")
        settle(heart)
    finally:
        close_app(desktop, process, heart, log, figures)
    figures.ratings_stored = stored_ratings(project_folder)
    return figures


def run_hung_server_session(
    desktop: RealDesktop,
    project_folder: Path,
    work: Path,
    rounds: int = 5,
    app_command: list[str] | None = None,
    shots: Path | None = None,
    suffix: str = "",
) -> SessionFigures:
    """The app started while the sound server answers nothing (`hang_pulse`): its Rating page opened, Space
    pressed and 6.5 s waited (past the player's STALL_S), `rounds` rating keys (1 2 3 …), then the server let go on
    and Space pressed until PulseAudio sees the app's stream (`back_after_s`); then the server stopped again
    mid-clip, Space and 1 pressed, and Ctrl+Q (`quit_after_s`, None when it did not end the app with 0). `shots`:
    screenshots
    studio-sound-hung{suffix}.png and studio-sound-hung-back{suffix}.png into that folder."""
    figures = SessionFigures(rounds, round_keys="a rating key, the sound server stopped")
    desktop.hang_pulse()
    process, heart, log = launch_rating_session(desktop, project_folder, work, figures, app_command)
    try:
        if process is None:
            return figures
        desktop.xdotool("key", "space")
        time.sleep(6.5)
        if shots is not None:
            desktop.screenshot(shots / f"studio-sound-hung{suffix}.png")
        for index in range(rounds):
            desktop.xdotool("key", "123"[index % 3])
            figures.rounds_done = index + 1
            time.sleep(0.5)
        time.sleep(1.0)
        figures.notes.append(f"ratings stored while the sound server was stopped: {stored_ratings(project_folder)}")
        desktop.resume_pulse()
        figures.back_after_s = press_space_until_heard(desktop, 20)
        if shots is not None:
            time.sleep(1.0)
            desktop.screenshot(shots / f"studio-sound-hung-back{suffix}.png")
        settle(heart)
        desktop.hang_pulse()  # hung again, mid-clip: Space, a rating, then Ctrl+Q
        desktop.xdotool("key", "space")
        time.sleep(1.0)
        saved = heart.values[1]
        desktop.xdotool("key", "1")
        heart.wait_for(lambda beat, saves, ignored, session: saves > saved, 5)  # acknowledged before the quit
        time.sleep(0.5)
        quit_at = time.monotonic()
        close_app(desktop, process, heart, log, figures)
        figures.quit_after_s = time.monotonic() - quit_at if figures.exit_code == 0 else None
    finally:
        desktop.resume_pulse()
        close_app(desktop, process, heart, log, figures)
    figures.ratings_stored = stored_ratings(project_folder)
    return figures


def launch_app(
    desktop: RealDesktop,
    project_folder: Path,
    work: Path,
    figures: SessionFigures,
    app_command: list[str] | None,
    keep_settings: bool = False,
    env: dict[str, str] | None = None,
):
    """The app started on the project with the annotator set (a fresh settings file unless `keep_settings`) and
    `env` added to its environment, its window focused and the project open: (process, heartbeat, log); process
    None when that did not happen (`notes` says why)."""
    config, heartbeat_path = work / "config", beat_file(work)
    settings = config / "SpokenBench" / "SpokenBench Studio.conf"
    settings.parent.mkdir(parents=True, exist_ok=True)
    if not (keep_settings and settings.exists()):  # kept: a second start as the first left it (its geometry)
        settings.write_text(f"[annotator]\nname={ANNOTATOR}\n", encoding="utf-8")
    log = (work / "app.log").open("w")
    command = app_command or [shutil.which("spokenbench-studio") or "spokenbench-studio"]
    process = subprocess.Popen(
        [*command, str(project_folder)],
        env={**desktop.app_env(config, heartbeat_path), **(env or {})},
        stdout=log,
        stderr=log,
    )
    heart = Heartbeat(heartbeat_path, process, desktop)
    figures.started = time.monotonic()
    try:
        found = desktop.xdotool("search", "--sync", "--onlyvisible", "--pid", str(process.pid), timeout=60)
    except subprocess.TimeoutExpired:
        found = subprocess.CompletedProcess([], 1, "", "")
    window = found.stdout.split()[0] if found.returncode == 0 and found.stdout.split() else None
    figures.window_after_s = time.monotonic() - figures.started if window else None
    if window is None or not heart.wait_for(lambda *_: True, 30):
        figures.notes.append("the app's window or heartbeat never appeared; see app.log")
        close_app(desktop, process, heart, log, figures)
        return None, heart, log
    desktop.xdotool("windowfocus", "--sync", window)
    time.sleep(3.0)  # the project opens on the read pool
    return process, heart, log


def launch_rating_session(
    desktop: RealDesktop,
    project_folder: Path,
    work: Path,
    figures: SessionFigures,
    app_command: list[str] | None,
    keep_settings: bool = False,
    queue_keys: tuple[str, ...] = ("Down", "Return"),
    env: dict[str, str] | None = None,
):
    """The app started on the project with the annotator set (a fresh settings file unless `keep_settings`) and
    `env` added to its environment, its Rating page open (Ctrl+3) on the stress queue (↓ Enter; `queue_keys` for
    another), the watchdog on: (process, heartbeat, log); process None when that did not happen (`notes` says
    why)."""
    process, heart, log = launch_app(desktop, project_folder, work, figures, app_command, keep_settings, env)
    if process is None:
        return None, heart, log
    desktop.xdotool("key", "ctrl+3")
    time.sleep(2.0)  # the Rating page is built and reads its queues
    desktop.xdotool("key", *queue_keys)  # the second queue (the stress queue), started by Enter
    if not heart.wait_for(lambda beat, saves, ignored, session: session == 1, 30):
        figures.notes.append("Enter did not open the rating session")
        close_app(desktop, process, heart, log, figures)
        return None, heart, log
    time.sleep(1.0)
    heart.watching = True
    heart.start()
    return process, heart, log


def beat_file(work: Path) -> Path:
    """Where the app's heartbeat for a session in `work` goes: on tmpfs (/dev/shm) where there is one, named for
    `work`, removed when the session closes (`close_app`). A beat on the disk waits with the disk: with another
    process's writes in flight, truncating it took 0.55 s in a probe, the file read empty for 3.1-3.4 s in the
    real-desktop tests (up to 0.4 s in tests/benchmarks/bench_disk_writeback.py), and the watchdog took that for the
    event loop stopping."""
    shared_memory = Path("/dev/shm")
    if not shared_memory.is_dir():
        return work / "heartbeat"
    digest = hashlib.sha256(str(work.resolve()).encode()).hexdigest()[:16]
    return shared_memory / f"spokenbench-heartbeat-{os.getpid()}-{digest}"


def walk_app(
    desktop: RealDesktop, project: Path, out: Path, command: list[str] | None = None, name: str = "walk"
) -> tuple[subprocess.Popen, Heartbeat]:
    """A screenshot walk's app on `project` (this tree's `spokenbench-studio`, or `command` as `app_trees` gives
    it), its settings in OUT/config-NAME, its window focused and its heartbeat (on tmpfs) watched from the first
    beat; `walk_app_ended` quits it."""
    beat = beat_file(out / name)
    app = subprocess.Popen(
        [*(command or ["spokenbench-studio"]), str(project)],
        env=desktop.app_env(out / f"config-{name}", beat),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    desktop.xdotool("windowfocus", "--sync", app_window(desktop, app))
    heart = Heartbeat(beat, app, desktop)
    heart.wait_for(lambda *_: True, 90)
    heart.watching = True
    heart.start()
    return app, heart


def walk_app_ended(desktop: RealDesktop, app: subprocess.Popen, heart: Heartbeat) -> float:
    """Ctrl+Q, the app waited for and its heartbeat removed: the longest event-loop gap seen."""
    heart.stop()
    desktop.xdotool("key", "ctrl+q")
    app.wait(60)
    heart.path.unlink(missing_ok=True)
    return heart.longest_gap


def drop_page_cache() -> bool:
    """Written pages to disk and every clean page dropped, as after a reboot; False without the right (not root)."""
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def settle(heart: Heartbeat) -> None:
    """Let the last save and step settle, still watched."""
    if not (heart.froze or heart.died):
        heart.wait_for(lambda beat, saves, ignored, session: time.monotonic() - beat < 0.3, 5)
        time.sleep(2.0)


def close_app(desktop: RealDesktop, process: subprocess.Popen, heart: Heartbeat, log, figures: SessionFigures) -> None:
    """Stop the watchdog, take its figures, close the app with Ctrl+Q (SIGKILL when it cannot answer)."""
    if log.closed:
        return
    heart.stop()
    figures.seconds = time.monotonic() - figures.started
    figures.longest_gap_s, figures.froze, figures.died = heart.longest_gap, heart.froze, heart.died
    figures.saves_acknowledged, figures.ignored_keys = heart.values[1], heart.values[2]
    figures.sink_inputs_seen = max(figures.sink_inputs_seen, heart.sink_inputs)
    figures.polls, figures.polls_with_stream = heart.polls, heart.polls_with_stream
    if heart.froze and process.poll() is None:  # a deadlock never answers again; a long stall does
        recovered = heart.wait_for(lambda beat, *_: time.monotonic() - beat < 0.5, 10)
        figures.notes.append(
            "the event loop answered again later" if recovered else "still frozen 10 s after the watchdog fired"
        )
    stalls = heart.path.with_name(heart.path.name + ".stalls")  # app/main.py watch_for_stalls
    if stalls.is_file():
        figures.notes.append(
            "what the app's threads were doing when its beat was late:\n" + stalls.read_text()[-20000:]
        )
    if process.poll() is None and not heart.froze:
        desktop.xdotool("key", "ctrl+q")
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            figures.notes.append("Ctrl+Q did not close the app within 20 s")
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)  # frozen: nothing else can end it
        process.wait(10)
        figures.notes.append("the app was killed (SIGKILL) at the end")
    figures.exit_code = process.returncode
    log.close()
    if heart.path.parent == Path("/dev/shm"):  # beat_file's: gone with the session
        heart.path.unlink(missing_ok=True)
        stalls.unlink(missing_ok=True)


def frame_inside(frame: tuple[int, int, int, int], area: tuple[int, int, int, int]) -> bool:
    """Whether a window's frame (`RealDesktop.frame`) lies within an area (`RealDesktop.work_area`)."""
    x, y, width, height = frame
    left, top, area_width, area_height = area
    return x >= left and y >= top and x + width <= left + area_width and y + height <= top + area_height


def app_window(desktop: RealDesktop, process: subprocess.Popen) -> str:
    """The app's visible window (waited for)."""
    found = desktop.xdotool("search", "--sync", "--onlyvisible", "--pid", str(process.pid), timeout=60)
    return found.stdout.split()[0]


@contextlib.contextmanager
def app_on(
    desktop: RealDesktop,
    opened: Path,
    out: Path,
    fresh: bool = True,
    env: dict[str, str] | None = None,
    command: list[str] | None = None,
):
    """`spokenbench-studio OPENED` on the desktop with settings in OUT/config (fresh ones unless `fresh` is
    False), and `env` added to its environment; its window shown; ended (SIGTERM) after. `command`: another
    tree's app (`app_trees`)."""
    if fresh:
        shutil.rmtree(out / "config", ignore_errors=True)
    app = subprocess.Popen(
        [*(command or ["spokenbench-studio"]), str(opened)],
        env={**desktop.app_env(out / "config", out / "heartbeat"), **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        app_window(desktop, app)
        yield app
    finally:
        app.terminate()
        app.wait(20)


def app_trees(baseline: Path | None) -> list[tuple[str, list[str] | None]]:
    """A benchmark's apps by name: this tree's installed one (None: `launch_app`'s default) and, with `baseline`
    (a folder holding an older tree as spokenbench/, e.g. a link to a `git worktree`), that tree's app run from it
    through PYTHONPATH."""
    trees: list[tuple[str, list[str] | None]] = [("this tree", None)]
    if baseline:
        module = [sys.executable, "-m", "spokenbench.app.main"]
        trees.append((f"baseline {baseline}", ["env", f"PYTHONPATH={baseline.resolve()}", *module]))
    return trees


def temporary_folder() -> Path:
    return Path(tempfile.mkdtemp(prefix="spokenbench-real-device-"))


def walk_wait_until(condition, what: str, timeout: float = 30.0) -> None:
    """A screenshot walk waits for `condition()` (a request sent, a run stored), or stops saying what it awaited."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.1)


def walk_arguments(doc: str) -> tuple[Path, str]:
    """A screenshot walk's command line (docs/screenshots/*_walk.py): OUT [--screen WxH] → (OUT made, 'WxHx24')."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--screen", default="1400x900")
    args = parser.parse_args()
    out = args.out.resolve()  # absolute: the sound server's socket path and HOME are taken from it
    out.mkdir(parents=True, exist_ok=True)
    return out, f"{args.screen}x24"


class SpeakerWalk(NamedTuple):
    """What a recording walk (docs/screenshots/*_walk.py on the Speakers page) starts from (`speaker_walk`)."""

    out: Path
    screen: str  # 'WxHx24'
    suffix: str  # of a screenshot's name: '' at 1400x900, else '-WxH'
    project: Path  # the demo's copy, with a consented speaker
    speech: Path  # the sentence the speaker reads (espeak-ng)


def speaker_walk(doc: str) -> SpeakerWalk:
    """A recording walk's command line (`walk_arguments`), the demo copied into OUT/project with a consented
    speaker, and the sentence they read."""
    out, screen = walk_arguments(doc)
    project = demo_copy_in(out)
    add_consented_speaker(project)
    suffix = "" if screen == "1400x900x24" else f"-{screen.removesuffix('x24')}"
    return SpeakerWalk(out, screen, suffix, project, speech_file(out / "speech.wav"))


def demo_in(out: Path) -> Path:
    """OUT/demo, built by `spokenbench demo` the first time."""
    project = out / "demo"
    if not project.exists():
        subprocess.run(["spokenbench", "demo", str(project)], check=True, capture_output=True)
    return project


def demo_copy_in(out: Path, name: str = "project") -> Path:
    """A fresh copy of OUT/demo (`demo_in`) at OUT/NAME, for a walk to change."""
    project = out / name
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(demo_in(out), project)
    return project


@contextlib.contextmanager
def walked_session(out: Path, screen: str, project: Path, queue_keys: tuple[str, ...] = ("Down", "Return")):
    """A screenshot walk's desktop and app: Xvfb and PulseAudio started, the app on `project` with its Rating page
    open on a session (`launch_rating_session`, the queue chosen by `queue_keys`); yields (desktop, app process,
    figures); the app closed by Ctrl+Q after, which completes the figures."""
    figures = SessionFigures(0)
    with RealDesktop(out / "desktop", screen=screen) as desktop:
        process, heart, log = launch_rating_session(desktop, project, out, figures, None, queue_keys=queue_keys)
        if process is None:
            raise SystemExit("\n".join(figures.notes))
        try:
            yield desktop, process, figures
        finally:
            close_app(desktop, process, heart, log, figures)
