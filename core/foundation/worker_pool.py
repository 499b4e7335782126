"""A few long-lived worker processes for many small CPU-bound calls in a row (a demo build's ~500 chunks of clips),
each fed through a pipe of its own. concurrent.futures' ProcessPoolExecutor hands every call and result through a
manager thread and a feeder thread: two thread switches per message, ~0.2-0.3 s of CPU in a demo build, on a core
the workers need. Here a call is pickled and written straight to a worker with fewer than IN_FLIGHT calls
outstanding, and results (in order, per worker) are read on the caller's event loop (`attach`: one callback per
message, no thread) or, without one, by the caller waiting for a result.

Guarantees: a worker that dies fails every call not answered yet with WorkerDied (a BrokenExecutor, naming its
exit code) and the pool takes no more; `shutdown` ends every worker at once (a worker holds nothing to lose: what
it makes goes to the caller) and waits for them, so nothing is left behind. Forked or spawned as the caller says
(core/foundation/child_process.child_start_method); a forked worker closes the pipes of the workers started before
it, so each pipe's end sees the other go."""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future, InvalidStateError
from typing import Any

IN_FLIGHT = 2  # calls outstanding per worker: the next one waits in its pipe while it works on one


class WorkerDied(BrokenExecutor):
    """A worker process ended without answering: its calls, and every call after, fail with this."""


def _serve(connection, inherited: list[int], initializer: Callable | None, initargs: tuple) -> None:
    """A worker's life: answer each (function, args) message with (True, result) or (False, exception), in order,
    until an empty message or the pipe's end."""
    for descriptor in inherited:  # other workers' pipe ends, copied by a fork: kept, they would hide a parent's end
        with contextlib.suppress(OSError):
            os.close(descriptor)
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            message = connection.recv_bytes()
        except (EOFError, OSError):
            return
        if not message:
            return
        try:
            function, args = pickle.loads(message)
            reply = pickle.dumps((True, function(*args)), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: BLE001 - handed to the caller, as an executor does
            try:
                reply = pickle.dumps((False, error), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - an exception that cannot travel is described instead
                reply = pickle.dumps((False, RuntimeError(repr(error))), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            connection.send_bytes(reply)
        except OSError:
            return


class _Worker:
    def __init__(self, process, connection):
        self.process = process
        self.connection = connection
        self.outstanding: deque[Future] = deque()


class _Call(Future):
    """A call's future: a caller waiting on it without an attached event loop reads the workers' answers itself."""

    def __init__(self, pool: WorkerProcesses):
        super().__init__()
        self._pool = pool

    def result(self, timeout: float | None = None) -> Any:
        self._pool._read_until(self, timeout)
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._pool._read_until(self, timeout)
        return super().exception(timeout)


class WorkerProcesses(Executor):
    """`count` processes started by `method` ('fork' or 'spawn'), each running `initializer(*initargs)` first.
    `submit` from any thread; `attach` an event loop to have answers read there (callbacks of the calls' futures
    then run on that loop's thread). Shut down from the attaching thread, or after its loop has closed."""

    def __init__(self, count: int, method: str, initializer: Callable | None = None, initargs: tuple = ()):
        import multiprocessing

        context = multiprocessing.get_context(method)
        self.method = method
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._workers: list[_Worker] = []
        self._queued: deque[tuple[bytes, Future]] = deque()
        self._broken: str | None = None
        self._closed = False
        self._loop = None
        try:
            for _ in range(count):
                mine, theirs = context.Pipe()
                inherited = [worker.connection.fileno() for worker in self._workers] + [mine.fileno()]
                process = context.Process(
                    target=_serve,
                    args=(theirs, inherited if method == "fork" else [], initializer, initargs),
                    name="spokenbench-worker",
                    daemon=True,
                )
                try:
                    process.start()
                finally:
                    theirs.close()
                self._workers.append(_Worker(process, mine))
        except BaseException:
            self.shutdown()
            raise

    @property
    def processes(self) -> list:
        return [worker.process for worker in self._workers]

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        if kwargs:
            raise TypeError("WorkerProcesses.submit takes positional arguments only")
        future = _Call(self)
        message = pickle.dumps((fn, args), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            if self._broken is None:
                self._queued.append((message, future))
                self._send_queued()
        if self._broken is not None and not future.done():
            future.set_exception(WorkerDied(self._broken))
        return future

    def attach(self, loop) -> None:
        """Read answers on `loop` (its thread calls this): one reader callback per worker's pipe."""
        if self._loop is loop or self._closed:
            return
        self._loop = loop
        for worker in self._workers:
            loop.add_reader(worker.connection.fileno(), self._read, worker)

    def _detach(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            for worker in self._workers:
                loop.remove_reader(worker.connection.fileno())

    def _send_queued(self) -> None:
        """Hand queued calls to the least busy workers, up to IN_FLIGHT each (under the lock)."""
        while self._queued and self._broken is None:
            worker = min(self._workers, key=lambda candidate: len(candidate.outstanding))
            if len(worker.outstanding) >= IN_FLIGHT:
                return
            message, future = self._queued.popleft()
            try:
                worker.connection.send_bytes(message)
            except OSError:
                self._queued.appendleft((message, future))
                self._broken = self._died(worker)
                return
            worker.outstanding.append(future)

    def _read(self, worker: _Worker) -> None:
        """One answer of `worker` (readable): its oldest call settled, the next queued call sent."""
        try:
            ok, value = pickle.loads(worker.connection.recv_bytes())
        except (EOFError, OSError):
            self._fail_all(self._died(worker))
            return
        with self._lock:
            future = worker.outstanding.popleft()
            self._send_queued()
            broken = self._broken
        with contextlib.suppress(InvalidStateError):  # cancelled by its caller meanwhile
            future.set_result(value) if ok else future.set_exception(value)
        if broken is not None:
            self._fail_all(broken)

    def _read_until(self, future: Future, timeout: float | None) -> None:
        """Read answers here until `future` is settled, unless an open event loop reads them."""
        if future.done() or (self._loop is not None and not self._loop.is_closed()):
            return
        if self._closed:  # dropped by `shutdown`: nothing will answer it
            future.cancel()
            return
        with self._reading, selectors.DefaultSelector() as selector:
            for worker in self._workers:
                selector.register(worker.connection.fileno(), selectors.EVENT_READ, worker)
            while not future.done() and not self._closed:
                ready = selector.select(timeout)
                if not ready:
                    return  # the caller's own wait raises TimeoutError
                for key, _ in ready:
                    if key.data.outstanding:
                        self._read(key.data)
                    else:  # a worker with nothing to answer is readable only when it has ended
                        self._fail_all(self._died(key.data))
                        return

    def _died(self, worker: _Worker) -> str:
        worker.process.join(1.0)
        return f"a worker process (pid {worker.process.pid}) ended unexpectedly (exit code {worker.process.exitcode})"

    def _fail_all(self, reason: str) -> None:
        """A worker died: every call not answered yet fails, and so does every call after."""
        with self._lock:
            self._broken = self._broken or reason
            failed = [future for worker in self._workers for future in worker.outstanding]
            failed += [future for _, future in self._queued]
            for worker in self._workers:
                worker.outstanding.clear()
            self._queued.clear()
        self._detach()
        for future in failed:
            with contextlib.suppress(InvalidStateError):
                future.set_exception(WorkerDied(self._broken))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """End every worker now (calls not answered are dropped, never settled) and, with `wait`, reap them."""
        with self._lock:
            first = not self._closed
            self._closed = True
            self._queued.clear()
            for worker in self._workers:
                worker.outstanding.clear()
        if first:
            self._detach()
            for worker in self._workers:
                if worker.process.is_alive():
                    worker.process.terminate()
        if wait:
            for worker in self._workers:
                worker.process.join()
                worker.connection.close()
