"""A guard against a PySide6 6.12 bug that crashes long sessions on CPython 3.11.

PySide6 6.12.0 drops a reference to `True` on every call of a Python slot, and to `None` on every
`QTimer.singleShot(…, callable)` and `QThreadPool.start(QRunnable)`. On CPython ≥ 3.12 these objects are
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
