"""The worker pool behind the speech workers (core/foundation/worker_pool.py, issue 28): calls answered in order,
errors handed back, a dead worker failing its calls with a message naming its exit code instead of hanging, and a
shutdown that ends busy workers at once and leaves no process behind."""

import operator
import os
import time
from concurrent.futures import CancelledError

import pytest

from spokenbench.core.foundation.child_process import child_start_method
from spokenbench.core.foundation.worker_pool import WorkerDied, WorkerProcesses

METHOD = child_start_method() or "spawn"  # forked in a process of one thread, spawned beside pytest-xdist's


@pytest.mark.slow
def test_calls_go_to_every_worker_and_their_errors_come_back():
    with WorkerProcesses(2, METHOD) as pool:
        pids = [pool.submit(os.getpid) for _ in range(4)]  # sent together: two to each worker
        assert {future.result(timeout=60) for future in pids} == {process.pid for process in pool.processes}
        failed = pool.submit(operator.truediv, 1, 0)
        assert isinstance(failed.exception(timeout=60), ZeroDivisionError)
        assert pool.submit(operator.add, 2, 3).result(timeout=60) == 5  # an error breaks nothing
    assert not any(process.is_alive() for process in pool.processes)


@pytest.mark.slow
def test_a_worker_that_dies_fails_its_call_and_every_later_one_with_its_exit_code():
    pool = WorkerProcesses(2, METHOD)
    try:
        dying = pool.submit(os._exit, 3)
        with pytest.raises(WorkerDied, match=r"ended unexpectedly \(exit code 3\)"):
            dying.result(timeout=60)
        with pytest.raises(WorkerDied):
            pool.submit(os.getpid).result(timeout=60)
    finally:
        pool.shutdown()
    assert not any(process.is_alive() for process in pool.processes)


@pytest.mark.slow
def test_shutdown_ends_busy_workers_at_once_and_drops_their_calls():
    pool = WorkerProcesses(2, METHOD)
    busy = [pool.submit(time.sleep, 60) for _ in range(5)]  # two sent to each worker, one queued
    time.sleep(0.5)
    started = time.monotonic()
    pool.shutdown(wait=True)
    assert time.monotonic() - started < 5
    assert not any(process.is_alive() for process in pool.processes)
    with pytest.raises(CancelledError):  # dropped: waiting on it does not hang
        busy[0].result(timeout=5)
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(os.getpid)
