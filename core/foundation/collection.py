"""The cyclic garbage collector paused around work that allocates many acyclic objects at once."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def automatic_collection_paused() -> Iterator[None]:
    """Pause the collector's automatic passes for the block, when they are on. Work that makes a few hundred
    thousand small acyclic objects (a plan of 100,000 requests; a screening of 44,800 clips, where the passes cost about as much as the scoring) pays for a pass over all of them
    every few thousand allocations; reference counting frees them all the same. The app runs collection itself
    between Qt events (automatic passes off), so there it stays off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
