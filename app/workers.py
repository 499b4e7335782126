"""The app's one way to run work off the UI thread. A core function gets a `Progress` whose reports
arrive as Qt signals on the UI thread; cancelling sets the core's cancel flag, and a cancelled or
abandoned task's results are dropped instead of touching widgets."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from spokenbench.core.errors import Cancelled
from spokenbench.core.progress import Progress


class TaskSignals(QObject):
    progress = Signal(int, object, str)  # done, total (int or None), message
    finished = Signal(object)
    failed = Signal(object)  # the exception
    cancelled = Signal()


class Task(QRunnable):
    """Runs fn(*args, progress=Progress) on the pool; connect to `signals` before `start()`."""

    def __init__(self, fn: Callable[..., Any], *args: Any):
        super().__init__()
        self.setAutoDelete(False)
        self.signals = TaskSignals()
        self._fn, self._args = fn, args
        self._cancel_event = threading.Event()
        self.done = threading.Event()

    def cancel(self) -> None:
        self._cancel_event.set()

    def run(self) -> None:
        progress = Progress(lambda d, t, m: self.signals.progress.emit(d, t, m), self._cancel_event)
        try:
            result = self._fn(*self._args, progress=progress)
        except Cancelled:
            self.signals.cancelled.emit()
        except Exception as error:  # reported to the UI as a dialog, never lost
            self.signals.failed.emit(error)
        else:
            if self._cancel_event.is_set():
                self.signals.cancelled.emit()
            else:
                self.signals.finished.emit(result)
        finally:
            self.done.set()

    def start(self, pool: QThreadPool | None = None) -> Task:
        (pool or QThreadPool.globalInstance()).start(self)
        return self
