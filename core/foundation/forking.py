"""A part of a CPU-bound computation in a forked process while this process does the rest, on two cores.

Forked, not spawned: the child starts at once with the data and the libraries already in memory (copy on write),
and only its result travels back, pickled, through a pipe. A fork is only made where it is safe: see
`fork_is_safe`. Whatever goes wrong with the child (no fork here, it died, it raised), the caller is told and
computes that part itself, so a bug raises its error from this process, as without a fork."""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from collections.abc import Callable, Iterator
from typing import Any


class ForkedCallFailed(Exception):
    """The forked process gave no result: the caller does the work itself."""


def usable_cores() -> int:
    """Cores this process may run on (its affinity, where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fork_is_safe() -> bool:
    """Whether forking here is sound and useful: the platform forks, two cores are ours, and this process runs no
    other thread (a lock another thread holds at the fork stays held forever in the child: the app's threads, a
    job process's helpers) and is not a multiprocessing worker itself (no nesting)."""
    import multiprocessing

    return (
        "fork" in multiprocessing.get_all_start_methods()
        and usable_cores() >= 2
        and threading.active_count() == 1
        and multiprocessing.parent_process() is None
    )


def a_core_is_free() -> bool:
    """Whether a second process would get a core of its own: where the load average is known, at least one of
    this process's cores idle. On a busy machine a second process only competes for the same cores and adds its
    own start and hand-over to the CPU time."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return True
    return load <= usable_cores() - 1


def _child(sender, function: Callable[..., Any], args: tuple) -> None:
    try:
        payload = pickle.dumps(function(*args), protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:  # noqa: BLE001 - nothing is sent: the parent computes this part and raises its error
        return
    sender.send_bytes(payload)


@contextlib.contextmanager
def call_in_fork(function: Callable[..., Any], *args: Any) -> Iterator[Callable[..., Any]]:
    """Start `function(*args)` in a forked process (it inherits the arguments, nothing is pickled on the way in).
    The block gets `wait(check)`, which returns the function's result, calling `check` (e.g. a cancel check)
    while it waits, or raises ForkedCallFailed. Leaving the block ends the process if it still runs, so an error
    or a cancel in this process leaves nothing behind."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(sender, function, args), daemon=True)
    try:
        process.start()
    except OSError:
        process = None
    finally:
        sender.close()  # the child holds its own copy: once it exits, a read here ends instead of waiting

    def wait(check: Callable[[], None] | None = None) -> Any:
        if process is None:
            raise ForkedCallFailed("no process could be forked")
        if check is not None:
            check()
            while not receiver.poll(0.05):
                check()
        try:
            return pickle.loads(receiver.recv_bytes())
        except (EOFError, OSError) as error:
            raise ForkedCallFailed("the forked process ended without a result") from error

    try:
        yield wait
    finally:
        receiver.close()
        if process is not None:
            if process.is_alive():
                process.terminate()
            process.join()
