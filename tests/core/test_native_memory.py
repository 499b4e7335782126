"""Freed C-heap pages go back to the system (issue 28: the app's peak memory): measured on a real heap, in a
process of its own, where the C library is glibc."""

import subprocess
import sys

import pytest

from spokenbench.core.foundation import native_memory

HAS_MALLOC_TRIM = native_memory._malloc_trim() is not None

FRAGMENTED_HEAP = r"""
import re, sys
from spokenbench.core.foundation.native_memory import return_freed_memory

def resident_kib():
    return int(re.search(r"VmRSS:\s+(\d+)", open("/proc/self/status").read()).group(1))

blocks = [bytearray(16_000) for _ in range(4_000)]  # 64 MB of malloc'd blocks, below the mmap threshold
kept = blocks[-1]  # the heap's top stays in use, so free() alone cannot shrink the heap
del blocks
before = resident_kib()
trimmed = return_freed_memory()
print(trimmed, before - resident_kib())
"""


@pytest.mark.skipif(not HAS_MALLOC_TRIM, reason="glibc's malloc_trim is Linux/glibc only")
def test_freed_blocks_inside_the_heap_go_back_to_the_system():
    out = subprocess.run([sys.executable, "-c", FRAGMENTED_HEAP], capture_output=True, text=True, check=True)
    trimmed, released_kib = out.stdout.split()
    assert trimmed == "True"
    assert int(released_kib) > 32_000  # most of the 64 MB freed; without the trim the process keeps it all


def test_without_malloc_trim_nothing_is_done(monkeypatch):
    monkeypatch.setattr(native_memory.sys, "platform", "darwin")
    native_memory._malloc_trim.cache_clear()
    try:
        assert native_memory.return_freed_memory() is False
    finally:
        native_memory._malloc_trim.cache_clear()
