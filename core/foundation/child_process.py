"""A part of a CPU-bound computation in a second process while this process does the rest, on two cores.

Forked where that is safe (`child_start_method`): the child starts at once, with the libraries already loaded.
Where this process runs other threads (a job process's helpers), a fork could leave the child a lock another
thread held, so the child is spawned instead: a fresh interpreter, about 0.1 s to start. Either way only the
function's result travels back, pickled, through a pipe. Whatever goes wrong with the child (none could start, it
died, it raised), the caller is told and computes that part itself, so a bug raises its error from this process,
as without a second one."""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from spokenbench.core.foundation.processes import usable_cores


class ChildCallFailed(Exception):
    """The second process gave no result: the caller does the work itself."""


def child_start_method() -> str | None:
    """How a second process starts here: 'fork' where this process runs no other thread (a lock another thread
    holds at the fork stays held forever in the child), else 'spawn'; None with one core, inside a
    multiprocessing worker (no nesting), or in a frozen app, which cannot spawn Python. Answered without
    importing multiprocessing (25 ms): a worker has it imported already."""
    if usable_cores() < 2:
        return None
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and multiprocessing.parent_process() is not None:
        return None
    if threading.active_count() == 1 and hasattr(os, "fork"):
        return "fork"
    return None if getattr(sys, "frozen", False) else "spawn"


def _child(sender, function: Callable[..., Any], args: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent ends us
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a job process's stdout is its frame channel
    try:
        payload = pickle.dumps(function(*args), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # noqa: BLE001 - nothing is sent: the parent computes this part and raises its error
        return
    sender.send_bytes(payload)


@contextlib.contextmanager
def main_script_hidden():
    """A spawned process needs nothing of the program that started this one; told its path, it would run it again,
    and a script without an `if __name__ == "__main__":` guard would redo its work there."""
    main = sys.modules["__main__"]
    saved = {name: main.__dict__[name] for name in ("__spec__", "__file__") if name in main.__dict__}
    main.__spec__ = None
    main.__dict__.pop("__file__", None)
    try:
        yield
    finally:
        main.__dict__.update(saved)


@contextlib.contextmanager
def call_in_child(method: str, function: Callable[..., Any], *args: Any) -> Iterator[Callable[..., Any]]:
    """Start `function(*args)` in a second process started by `method` ('fork': it inherits the arguments;
    'spawn': they are pickled, and `function` must be importable). The block gets `wait(check)`, which returns the
    function's result, calling `check` (e.g. a cancel check) while it waits, or raises ChildCallFailed. Leaving
    the block ends the process if it still runs, so an error or a cancel here leaves nothing behind."""
    import multiprocessing

    context = multiprocessing.get_context(method)
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, function, args), daemon=True)
    try:
        with main_script_hidden() if method == "spawn" else contextlib.nullcontext():
            process.start()
    except Exception:  # noqa: BLE001 - no process (resources, or arguments a spawn cannot pickle): done here
        process = None
    finally:
        sender.close()  # the child holds its own copy: once it exits, a read here ends instead of waiting

    def wait(check: Callable[[], None] | None = None) -> Any:
        if process is None:
            raise ChildCallFailed("no second process could be started")
        if check is not None:
            check()
            while not receiver.poll(0.05):
                check()
        try:
            return pickle.loads(receiver.recv_bytes())
        except (EOFError, OSError) as error:
            raise ChildCallFailed("the second process ended without a result") from error

    try:
        yield wait
    finally:
        receiver.close()
        if process is not None:
            if process.is_alive():
                process.terminate()
            process.join()
