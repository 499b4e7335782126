"""`spokenbench-studio [PROJECT] [--demo] [--smoke]`: the desktop app's entry point. Without a project it
reopens the one used last, on the page shown last, in the window's remembered size and place (QSettings).

`--demo` opens the demo project kept in the user's data folder (built the first time, app/demo_mode.py) with the
guided tour; `--smoke` renders every screen once and exits 0, or 1 with the message (app/smoke.py)."""

from __future__ import annotations

import argparse
import ctypes.util
import logging
import os
import sys
from pathlib import Path


def audio_problem() -> str | None:
    """What keeps playback or recording from working here, or None. The app starts either way."""
    from spokenbench.app.audio import playback_problem, recording_problem

    playback, recording = playback_problem(), recording_problem()
    if playback and recording and recording in playback:  # no PortAudio: one cause, said once
        recording = None
    return " ".join(problem for problem in (playback, recording) if problem) or None


# Libraries Qt's X11 plugin loads at start; without them Qt aborts with a cryptic message, so check first.
X11_LIBRARIES = {"xcb-cursor": "libxcb-cursor0", "xcb-icccm": "libxcb-icccm4", "xcb-keysyms": "libxcb-keysyms1"}


def missing_x11_packages() -> list[str]:
    """Debian packages missing for an X11 session on Linux (empty elsewhere or with another Qt platform)."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM") or not os.environ.get("DISPLAY"):
        return []
    return [package for library, package in X11_LIBRARIES.items() if ctypes.util.find_library(library) is None]


def keep_the_ui_responsive() -> None:
    """While a worker thread is CPU-bound (an import, assembly), the UI thread waits for the GIL up to the
    switch interval and for full garbage collections of everything loaded at start. Measured with
    tests/benchmarks/bench_rating.py: the largest UI-loop gap during a 20,000-item import falls from ~80-120 ms
    to ~30-45 ms with both changes (quiet machine)."""
    import gc

    gc.freeze()  # the objects of startup are never garbage: keep them out of every later collection
    sys.setswitchinterval(0.001)


def keep_module_sources_out_of_memory() -> None:
    """PySide6 replaces `__import__` and asks of every Python module imported after it whether its source mentions
    PySide6 (`shibokensupport.feature._mod_uses_pyside`, for its `__feature__` switches) through
    `inspect.getsource`, which keeps every line of every module in `linecache`: ~50 MiB of strings for the app's
    ~800 modules (issue 28). The same question is answered here from the module's loader, keeping nothing."""
    import linecache

    feature = sys.modules.get("shibokensupport.feature")
    if feature is not None and callable(getattr(feature, "_mod_uses_pyside", None)):
        feature._mod_uses_pyside = source_mentions_pyside
    linecache.clearcache()  # what was read before (a traceback reads its files again)


def source_mentions_pyside(module) -> bool:
    """shiboken's answer (the source contains "PySide6"; False without a readable source), on every import."""
    spec = getattr(module, "__spec__", None)
    try:
        source = spec.loader.get_source(spec.name)
    except Exception:  # noqa: BLE001 - no spec, no loader, a built-in or unreadable module: no source, as shiboken
        return False
    return bool(source) and "PySide6" in source


HEARTBEAT_ENV = "SPOKENBENCH_HEARTBEAT_FILE"


def start_heartbeat(window, path: str):
    """For the real-desktop tests (tests/widgets/test_real_device_session.py, test_real_recording.py and the other
    tests/real_device.py sessions): every 100 ms the UI thread
    rewrites `path` with its monotonic time, the Rating page's acknowledged saves, its ignored keys,
    whether a session is open, the page shown,
    whether a save or step is in flight and the Speakers page's recorder state (`heartbeat_state`: what a
    speaker is told about the input), so a watchdog in another
    process sees at once when the event loop stops answering; `watch_for_stalls` writes down what it was doing
    then. Only when the variable is set; the tests put the file on tmpfs (`tests/real_device.beat_file`)."""
    import time

    from PySide6.QtCore import QTimer

    def beat() -> None:
        rating = window.page_widgets.get("rating")
        in_session = int(getattr(rating, "rating", None) is not None)
        recorder = getattr(window.page_widgets.get("speakers"), "heartbeat_state", "-")
        line = (
            f"{time.monotonic():.3f} {getattr(rating, 'saves', 0)} {getattr(rating, 'ignored_keys', 0)} {in_session}"
            f" {window.sidebar.current_key() or '-'} {int(not getattr(rating, 'idle', True))} {recorder}\n"
        )
        with open(path, "w", encoding="utf-8") as handle:  # a few bytes on a test's temporary folder
            handle.write(line)

    timer = QTimer(window)
    timer.setInterval(100)
    timer.timeout.connect(beat)
    timer.start()
    beat()
    watch_for_stalls(path + ".stalls", timer)
    return timer


STALL_REPORT_S = 1.0  # a beat this late is written down with what the UI thread was doing


def watch_for_stalls(path: str, timer):
    """For the real-desktop tests: a thread that writes to `path` what each thread was doing (faulthandler's
    tracebacks of every thread, which hold no reference to their frames, so no object of the UI thread ends on this
    one) when the UI thread's beat is STALL_REPORT_S late, so a watchdog's "froze" comes with its cause
    (`tests/real_device.close_app` adds it to the session's notes). It also writes when it slept that much too long
    itself: then the whole process was held (the GIL kept by C code, or the process not scheduled), and the stacks
    it finds after are not the stall's. Returns the event that stops it."""
    import faulthandler
    import threading
    import time

    ui_thread = threading.main_thread().ident
    last_beat = [time.monotonic()]
    timer.timeout.connect(lambda: last_beat.__setitem__(0, time.monotonic()))
    stopping = threading.Event()

    def watch() -> None:
        reported_beat = None
        while True:
            asleep_at = time.monotonic()
            if stopping.wait(0.2):
                return
            now = time.monotonic()
            lines = []
            if now - asleep_at > STALL_REPORT_S:
                lines.append(f"{now:.3f} the stall watcher itself slept {now - asleep_at:.3f} s (asked 0.2 s)\n")
            late = now - last_beat[0]
            stalled = late > STALL_REPORT_S and reported_beat != last_beat[0]
            if stalled:
                reported_beat = last_beat[0]
                where = f"the UI thread: {ui_thread:#018x}, as faulthandler names it"
                lines.append(f"{now:.3f} the UI thread's beat is {late:.3f} s late ({where})\n")
            if lines:
                with open(path, "a", encoding="utf-8") as handle:
                    handle.writelines(lines)
                    handle.flush()
                    if stalled:
                        faulthandler.dump_traceback(handle, all_threads=True)

    threading.Thread(target=watch, name="stall watcher", daemon=True).start()
    return stopping


class EndSignals:
    """SIGTERM (a logout, a shutdown, `kill`) and SIGINT (Ctrl+C where it was started) close the window as Ctrl+Q
    does (`MainWindow.close_when_told`), with nobody there to answer: a take being recorded is kept. Before, either
    signal ended the process at once (SIGINT once Python code ran), and a take in hand was lost. A second one ends
    it at once, as before: counted in the handler, which Python runs between bytecodes whatever the UI thread does
    (a quit's wait for its threads, the exit hooks). Qt's event loop runs no bytecode while it waits, so the
    signal's number is also written to a socket (`signal.set_wakeup_fd`) whose notifier wakes it. A signal ignored
    at the start (SIGINT in a background job) stays ignored; `restore()` (once the event loop has ended) and a
    process forked from the app put back the handlers from before."""

    def __init__(self, window):
        import signal
        import socket

        from PySide6.QtCore import QSocketNotifier

        self.window, self.told, self.closing = window, [], False
        self.reader, self.writer = socket.socketpair()
        self.reader.setblocking(False)
        self.writer.setblocking(False)
        self.before = {
            number: signal.getsignal(number)
            for number in (signal.SIGTERM, signal.SIGINT)
            if signal.getsignal(number) is not signal.SIG_IGN
        }
        signal.set_wakeup_fd(self.writer.fileno(), warn_on_full_buffer=False)
        for number in self.before:
            signal.signal(number, self._handle)
        os.register_at_fork(after_in_child=self.restore)
        self.notifier = QSocketNotifier(self.reader.fileno(), QSocketNotifier.Type.Read, window)
        self.notifier.activated.connect(self._woken)

    def _handle(self, number: int, _frame) -> None:
        import signal

        from PySide6.QtCore import QTimer

        self.told.append(number)
        if len(self.told) > 1:  # told twice: end now, as the signal does by default
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        QTimer.singleShot(0, self._close)  # on the event loop, never inside whatever code the signal interrupted

    def _woken(self) -> None:
        """The socket woke the event loop: Python has run (or is about to run) the handler."""
        try:
            while self.reader.recv(64):
                pass
        except BlockingIOError:
            pass
        self._close()

    def _close(self) -> None:
        if self.told and not self.closing:
            self.closing = True
            self.window.close_when_told()

    def restore(self) -> None:
        import signal

        if threading_main():
            signal.set_wakeup_fd(-1)
            for number, handler in self.before.items():
                signal.signal(number, handler)


def threading_main() -> bool:
    """Whether this is the main thread, the only one that may set signal handlers."""
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="spokenbench-studio", description="SpokenBench Studio desktop app")
    parser.add_argument("project", nargs="?", help="project folder to open")
    parser.add_argument(
        "--demo",
        action="store_true",
        help="open the offline demo project with the guided tour (built in your data folder the first time, "
        "reused after)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="open the project (or --demo), render every screen once and exit: 0 when all rendered, 1 otherwise",
    )
    args = parser.parse_args(argv)
    from spokenbench.app.audio import sound_check

    check = sound_check()  # started now, on its own thread: it overlaps Qt's start, and may never answer
    if args.demo and args.project:
        parser.error("give a project folder or --demo, not both")
    if args.smoke and not (args.demo or args.project):
        parser.error("--smoke needs a project folder or --demo")
    missing = missing_x11_packages()
    if missing:
        print(
            "error: the desktop app needs X11 libraries that are not installed: "
            f"{', '.join(missing)} (Debian/Ubuntu: apt-get install {' '.join(missing)}). "
            "The headless `spokenbench` command works without them.",
            file=sys.stderr,
        )
        return 2

    from PySide6.QtWidgets import QApplication

    from spokenbench.app.input_methods import checked_input_method, prepare_input_method

    input_method = prepare_input_method()  # before Qt starts: it reads the variables once
    keep_module_sources_out_of_memory()  # before the app's own imports
    from spokenbench.app.main_window import MainWindow
    from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("SpokenBench Studio")
    collect_garbage_at_safe_points(app)
    settings = None
    if args.smoke:  # a throwaway settings file: the smoke test leaves the user's recent projects and tour alone
        import tempfile

        from PySide6.QtCore import QSettings

        smoke_dir = tempfile.mkdtemp(prefix="spokenbench-smoke-")
        settings = QSettings(str(Path(smoke_dir) / "settings.ini"), QSettings.Format.IniFormat)
    if check.answered_at_start():  # ~0.1-0.3 s when the sound server answers: the window opens knowing
        window = MainWindow(audio_message=check.playback, recording_message=check.recording, settings=settings)
    else:  # a server that does not answer: the window opens anyway, and says so once it has waited STALL_S
        window = MainWindow(settings=settings)
        window.follow_sound_check(check)
    # after Qt's start, whose IBus plugin has asked the portal: whether anything answers there
    window.show_input_method(checked_input_method(input_method, app.platformName()))
    if not args.smoke:
        window.restore_window_state()  # size and place as left, fitted to this screen
    window.show()
    if os.environ.get(HEARTBEAT_ENV):
        start_heartbeat(window, os.environ[HEARTBEAT_ENV])
    end_signals = None if args.smoke else EndSignals(window)
    keep_the_ui_responsive()
    # The sentence encoder, scipy and pandas stay out of the app: the gender-probe detail that uses them is
    # computed in a job process (core/results/gender_views.py compute_gender_view), as the panels are.
    opening = None
    if args.demo:
        opening = window.open_demo(tour=not args.smoke)
    elif args.project:
        opening = window.open_project(Path(args.project))
    else:  # the project used last, on the page shown last (or the launcher, saying why not)
        opening = window.reopen_last_project()
    if args.smoke:
        from spokenbench.app.smoke import run_smoke

        code = run_smoke(app, window, opening)
        window.shutdown()
        import shutil

        shutil.rmtree(smoke_dir, ignore_errors=True)
        return code
    code = app.exec()
    if end_signals is not None:  # before its socket goes: the exit hooks end as the signals did before
        end_signals.restore()
    if window.settings.abandoned:  # the disk held the settings' last write past the quit's wait (AppSettings.close)
        logging.getLogger("spokenbench.app").warning("ending without the settings' last write: the disk did not answer")
        logging.shutdown()
        os._exit(code)  # Qt's teardown would delete the QSettings the writer thread is still syncing
    return code


if __name__ == "__main__":
    sys.exit(main())
