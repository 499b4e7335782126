"""A guard against a PySide6 6.12 bug that crashes long sessions on CPython 3.11.

PySide6 6.12.0 drops a reference to `True` on every call of a Python slot, and to `None` on every
`QTimer.singleShot(…, callable)` and `QThreadPool.start(QRunnable)` — and on every call of a method that returns
nothing (measured again 2026-12-05: 1,000 `QTableWidget.setItem` or `QLabel.setText` calls take 999-1,000
references to None on 6.12.0, none on 6.11.3 or 6.10.3). On CPython ≥ 3.12 these objects are
immortal and nothing happens; on 3.11 their reference counts reach zero after a few thousand signals and the
interpreter aborts ("Fatal Python error: bool_dealloc / none_dealloc") — minutes into a job with a progress bar.
Until PySide is fixed (or the project requires Python ≥ 3.12), give the three singletons a reference count no
session can exhaust, which is what 3.12 does for them anyway."""

from __future__ import annotations

import ctypes
import sys

HEADROOM = 1 << 40  # ~10^12 slot calls


def make_singletons_immortal() -> bool:
    """Raise the reference counts of None, True and False out of reach on CPython < 3.12. True if it did."""
    if sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    for singleton in (None, True, False):
        refcount = ctypes.c_ssize_t.from_address(id(singleton))  # ob_refcnt is a PyObject's first field
        if refcount.value < HEADROOM:
            refcount.value += HEADROOM
    return True


def collect_garbage_at_safe_points(app, interval_ms: int = 50, busy_interval_ms: int = 10):
    """Run Python's cyclic garbage collector only from the top of the Qt event loop.

    Automatic collection can start at any allocation — in the middle of a PySide signal dispatch, while Qt
    holds raw pointers to the Python objects being delivered — and freeing a QObject wrapper there crashed the
    interpreter (a segmentation fault with "Garbage-collecting" on the UI thread, seen in the widget tests).
    Here automatic collection is switched off and a timer applies the same thresholds between events, where
    nothing is being dispatched. While something allocates fast (a worker importing 20,000 items) the timer
    ticks every `busy_interval_ms`, so each collection has fewer young objects to go through: at 50 ms a
    first-generation collection during such an import paused the UI thread for ~100 ms, at 10 ms for ~20 ms
    (tests/benchmarks/bench_rating.py). Returns the timer (kept alive by its parent, `app`)."""
    import gc

    from PySide6.QtCore import QTimer

    gc.disable()
    timer = QTimer(app)

    def collect() -> None:
        counts, thresholds = gc.get_count(), gc.get_threshold()
        generation = -1
        for level in range(3):
            if counts[level] > thresholds[level]:
                generation = level
        if generation >= 0:
            gc.collect(generation)
        wanted = busy_interval_ms if generation >= 0 else interval_ms
        if timer.interval() != wanted:
            timer.setInterval(wanted)

    timer.setInterval(interval_ms)
    timer.timeout.connect(collect)
    timer.start()
    return timer
