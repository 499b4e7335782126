"""The app's settings (annotator, window place, recent projects, column widths, the tour) as the UI thread sees them:
read once into memory, written to disk by a thread of their own.

QSettings writes its file on the thread of the object that was set — the UI thread — with two fdatasyncs (its lock
file and the new file) and a wait for any other instance's lock. With another process's writes in flight (a
backup, a copy, a colleague's evaluation on the same disk) that sync took 0.5 s in one case of ten and up to
1.1 s (tests/benchmarks/bench_disk_writeback.py; up to 1.8 s under a `dd` loop): the window froze at every
project opened (the recent list), column dragged and window closed. Two QSettings objects on one file share its
state and its mutex inside a process, so a second object synced by a thread would still hold the UI thread's reads
during the write; the UI thread therefore keeps no QSettings after the start at all. And PySide6 keeps Python's GIL through a call into Qt (QSettings.sync
included), so the writer thread calls Qt's own QSettings::sync through ctypes, which lets go of it for the call
(`sync_letting_go_of_the_gil`): with `settings.sync()` there, the UI thread waited as long as before."""

from __future__ import annotations

import copy
import ctypes
import functools
import logging
import queue
import sys
import threading
import weakref
from typing import Any

import shiboken6
from PySide6 import QtCore
from PySide6.QtCore import QCoreApplication, QEvent, QSettings

log = logging.getLogger("spokenbench.app.settings")

_STOP = object()
_IN_USE: weakref.WeakValueDictionary[str, AppSettings] = weakref.WeakValueDictionary()


class AppSettings:
    """`value` and `setValue` as QSettings has them, for the UI thread: `value` answers from memory (what the file
    held at the start, then what was set), `setValue` changes memory and hands the change to the writer thread,
    which sets it on a QSettings of its own and syncs; `flush` waits until what was set is on disk (tests, the
    quit). Values read back are what QSettings gives: as set in this run, as text from the file."""

    @classmethod
    def on(cls, settings: QSettings) -> AppSettings:
        """The app's settings in `settings`' file: the same object for the same file while one is in use, so a
        second window in one process (tests) reads what the first set, as two QSettings on one file do."""
        shared = _IN_USE.get(settings.fileName())
        if shared is None:
            shared = _IN_USE[settings.fileName()] = cls(settings)
        return shared

    def __init__(self, settings: QSettings):
        self.file_name, self.file_format = settings.fileName(), settings.format()
        # the writer's QSettings is made as this one was: by organization and application where it was (macOS keeps
        # those in the system's preferences service, not in the file its fileName() names), else by file
        self._made_by = (settings.format(), settings.scope(), settings.organizationName(), settings.applicationName())
        self.abandoned = False  # `close` gave up waiting for the disk: the process should end without Qt's teardown
        self._values: dict[str, Any] = {key: settings.value(key) for key in settings.allKeys()}
        self._changes: queue.SimpleQueue = queue.SimpleQueue()
        self._progress = threading.Condition()
        self._handed = self._written = 0  # changes handed to the writer, and written
        self._thread: threading.Thread | None = None
        self._start_writer()

    def _start_writer(self) -> None:
        self._thread = threading.Thread(target=self._write, name="spokenbench-settings-writer", daemon=True)
        self._thread.start()

    def value(self, key: str, default: Any = None) -> Any:
        return copy.deepcopy(self._values.get(key, default))  # a copy, as QSettings gives

    def setValue(self, key: str, value: Any) -> None:  # noqa: N802 - QSettings' name, so either may be passed
        value = copy.deepcopy(value)  # a list changed by its caller later is not changed here
        self._values[key] = value
        if not self._thread.is_alive():  # set after `close` (a window's state saved once more): a writer again
            self._start_writer()
        with self._progress:
            self._handed += 1
        self._changes.put((key, value))

    def fileName(self) -> str:  # noqa: N802 - QSettings' name
        return self.file_name

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every change set so far is on disk (False when that took more than `timeout_s`)."""
        with self._progress:
            target = self._handed
            return self._progress.wait_for(lambda: self._written >= target, timeout_s)

    def close(self, timeout_s: float = 5.0) -> bool:
        """Write what is left and end the writer (the quit). False when the disk did not answer in `timeout_s`:
        the writer is left running (`abandoned`), and the app ends its process without Qt's teardown
        (app/main.py), which would delete the writer's QSettings under the sync still running; the file keeps
        what it held (QSettings replaces it whole), without the last changes (the window's place)."""
        if not self._thread.is_alive():
            return True
        if not self.flush(timeout_s):
            self.abandoned = True
            return False
        self._changes.put(_STOP)  # nothing left to write: it ends at once
        self._thread.join(timeout_s)
        self.abandoned = self._thread.is_alive()
        return not self.abandoned

    def _write(self) -> None:
        made_by, scope, organization, application = self._made_by
        if organization or application:  # made on this thread, used by it alone
            settings = QSettings(made_by, scope, organization, application)
        else:
            settings = QSettings(self.file_name, self.file_format)
        stopping = False
        while not stopping:
            batch = [self._changes.get()]
            while True:  # the changes set while the last sync waited, in one sync
                try:
                    batch.append(self._changes.get_nowait())
                except queue.Empty:
                    break
            stopping = _STOP in batch
            changes = [change for change in batch if change is not _STOP]
            try:
                for key, value in changes:
                    settings.setValue(key, value)
                sync_letting_go_of_the_gil(settings)
                # the UpdateRequest each first change posted to this thread, which runs no event loop: never delivered
                QCoreApplication.removePostedEvents(settings, QEvent.Type.UpdateRequest)
                if settings.status() != QSettings.Status.NoError:
                    log.warning("settings not written to %s: %s", self.file_name, settings.status().name)
            except Exception:  # noqa: BLE001 - a value QSettings cannot take: logged; the writer goes on
                log.exception("settings not written to %s", self.file_name)
            with self._progress:
                self._written += len(changes)
                self._progress.notify_all()


QT_SYNC_SYMBOL = "_ZN9QSettings4syncEv"  # QSettings::sync() as the Itanium C++ ABI names it (Linux, macOS)
QT_SYNC_SYMBOL_MSVC = "?sync@QSettings@@QEAAXXZ"  # and as MSVC does (Windows x64)


@functools.cache
def _qt_sync():
    """Qt's QSettings::sync as a ctypes function (ctypes lets go of the GIL while it runs), looked up only in the Qt
    already loaded — through PySide6's QtCore module, whose lookups reach the Qt library it links; on Windows the
    loaded Qt6Core.dll by name — never another Qt on the machine. None where it is not found: then
    `settings.sync()`, as before, and the UI thread may wait."""
    try:
        if sys.platform == "win32":
            function = getattr(ctypes.WinDLL("Qt6Core.dll"), QT_SYNC_SYMBOL_MSVC)
        else:
            function = getattr(ctypes.CDLL(QtCore.__file__), QT_SYNC_SYMBOL)
    except (OSError, AttributeError):
        log.warning("QSettings::sync not found in the loaded Qt: settings are synced holding the GIL")
        return None
    function.argtypes, function.restype = [ctypes.c_void_p], None
    return function


def sync_letting_go_of_the_gil(settings: QSettings) -> None:
    """`settings.sync()`, with the GIL released while Qt writes (its lock file, two fdatasyncs, a wait for another
    instance's lock), so the UI thread runs meanwhile."""
    function = _qt_sync()
    if function is None:
        settings.sync()
        return
    function(shiboken6.getCppPointer(settings)[0])
