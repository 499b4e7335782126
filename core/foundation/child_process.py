"""Parts of a CPU-bound computation in other processes while this process does the rest, on two cores or more
(screening's second half, the report's tables and figures). One way to do it: `ChildCalls` (several calls), or
`call_in_child` (one).

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
    """How a second process starts here: 'fork' on Linux where this process runs no other thread (a lock another
    thread holds at the fork stays held forever in the child), else 'spawn'; None with one core, inside a
    multiprocessing worker (no nesting), or in a frozen app, which cannot spawn Python. Answered without
    importing multiprocessing (25 ms): a worker has it imported already."""
    if usable_cores() < 2:
        return None
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and multiprocessing.parent_process() is not None:
        return None
    if threading.active_count() == 1 and sys.platform.startswith("linux"):  # macOS: forking after numpy's
        return "fork"  # Accelerate can crash (why CPython spawns there by default); Windows has no fork
    return None if getattr(sys, "frozen", False) else "spawn"


def settle_helper_process() -> None:
    """What a helper process (a child call, a speech worker) does first: ignore Ctrl-C, which reaches the whole
    process group (its parent ends it), and send its stdout to stderr (a job process's stdout is its frame
    channel) by raw descriptors (a caller's sys.stderr may be a StringIO, without one)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.dup2(2, 1)


def _child(sender, function: Callable[..., Any], args: tuple, mask: set | None) -> None:
    settle_helper_process()
    if mask is not None:  # held back since before the start (ChildCalls.start): a Ctrl-C then is dropped here
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
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


class ChildCalls:
    """Calls each in a process of its own, started by `method` ('fork': it inherits the arguments; 'spawn': they
    are pickled, and the function must be importable), several at once if asked, started whenever the caller has
    their data: `start` one, then `finished` gives each call's result as its process ends. Used as a context
    manager: leaving it ends every process still running, so an error, a cancel or a Ctrl-C here leaves nothing
    behind. Ctrl-C is held back while a process starts, and the child ignores it from then on (the parent, which
    gets it too, ends the children): without that, a Ctrl-C during the start prints the child's traceback."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.calls: list[tuple[Any, Any]] = []  # (process or None where none started, its pipe's reading end)
        self.reported: set[int] = set()

    def __enter__(self) -> ChildCalls:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self, function: Callable[..., Any], *args: Any) -> int:
        """Start `function(*args)` in a new process; its index among this object's calls. When no process can
        start (resources, or arguments a spawn cannot pickle), `finished` says so as for any failed call."""
        import multiprocessing

        context = multiprocessing.get_context(self.method)
        receiver, sender = context.Pipe(duplex=False)
        self.calls.append((None, receiver))
        index = len(self.calls) - 1
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if _CAN_MASK else None
        try:
            process = context.Process(target=_child, args=(sender, function, args, mask), daemon=True)
            with main_script_hidden() if self.method == "spawn" else contextlib.nullcontext():
                process.start()
            self.calls[index] = (process, receiver)
        except Exception:  # noqa: BLE001 - no process: the caller does this call's work itself
            pass
        finally:
            sender.close()  # the child holds its own copy: once it exits, a read here ends instead of waiting
            if mask is not None:  # a Ctrl-C held back is raised here, once the process is known to `stop`
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return index

    def finished(self, check: Callable[[], None] | None = None) -> Iterator[tuple[int, Any]]:
        """(index, result) of each call not given yet, as their processes end: the function's result, or a
        ChildCallFailed where the process gave none (could not start, died, raised). `check` (e.g. a cancel
        check) is called while waiting."""
        import multiprocessing.connection

        pending = {}
        for index, (process, receiver) in enumerate(self.calls):
            if index in self.reported:
                continue
            if process is None:
                self.reported.add(index)
                yield index, ChildCallFailed("no second process could be started")
            else:
                pending[receiver] = index
        while pending:
            if check is not None:
                check()
            for receiver in multiprocessing.connection.wait(list(pending), None if check is None else 0.05):
                index = pending.pop(receiver)
                try:
                    result = pickle.loads(receiver.recv_bytes())
                except (EOFError, OSError) as error:
                    result = ChildCallFailed("the second process ended without a result")
                    result.__cause__ = error
                self.reported.add(index)
                yield index, result

    def stop(self) -> None:
        """End every process still running, and close the pipes."""
        for process, receiver in self.calls:
            receiver.close()
            if process is not None:
                if process.is_alive():
                    process.terminate()
                process.join()


_CAN_MASK = hasattr(signal, "pthread_sigmask")  # not on Windows, where Ctrl-C reaches no child the same way


@contextlib.contextmanager
def call_in_child(method: str, function: Callable[..., Any], *args: Any) -> Iterator[Callable[..., Any]]:
    """`function(*args)` in a second process (ChildCalls, one call). The block gets `wait(check)`, which returns
    the function's result, calling `check` (e.g. a cancel check) while it waits, or raises ChildCallFailed."""
    with ChildCalls(method) as child:
        child.start(function, *args)

        def wait(check: Callable[[], None] | None = None) -> Any:
            for _, result in child.finished(check):
                if isinstance(result, ChildCallFailed):
                    raise result
                return result
            raise ChildCallFailed("the result was taken already")

        yield wait
