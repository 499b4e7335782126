"""Freed C-heap memory given back to the operating system while the app is idle (issue 28).

glibc's malloc keeps the pages of freed blocks inside its heap for later allocations and only returns the top
of the heap on its own; after a screen's tables, figures and Qt images are freed, the app's resident size
stayed near its high-water mark (the `--smoke` run kept ~10-19 MiB of free heap pages, `mallinfo2`).
`malloc_trim(0)` hands those pages back (madvise), ~1 ms for the app's heap. Elsewhere (macOS, Windows, musl)
there is no such call and nothing is done."""

from __future__ import annotations

import ctypes
import functools
import sys


@functools.cache
def _malloc_trim():
    """glibc's `malloc_trim`, or None where the process's C library has none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)  # the symbols the process already has: its own C library
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def return_freed_memory() -> bool:
    """Give the C heap's free pages back to the operating system; True if some were."""
    trim = _malloc_trim()
    return bool(trim is not None and trim(0))
