"""`ChildCalls`, the one way to run parts of a computation in other processes (screening, the report; issue 28):
several calls at once, each result as its process ends, a failed call said as such, nothing left running, and a
Ctrl-C that arrives while a process starts neither kills the child with a traceback nor is lost by the parent."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import time

import pytest

from spokenbench.core.foundation.child_process import ChildCallFailed, ChildCalls, call_in_child, child_start_method
from spokenbench.core.foundation.processes import usable_cores

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")


def _sleep_then(seconds: float, value):
    time.sleep(seconds)
    return value


def _when_told(path, value):
    deadline = time.monotonic() + 30
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.005)
    return value


def test_several_calls_give_each_result_as_its_process_ends_and_failures_as_such(tmp_path):
    go = tmp_path / "go"
    results = []
    with ChildCalls("fork") as children:
        slow = children.start(_when_told, go, "slow")
        fast = children.start(_sleep_then, 0.0, "fast")
        dies = children.start(os._exit, 3)
        for index, result in children.finished(lambda: None):
            results.append((index, result))
            if len(results) == 2:  # the slow one ends only once the other two have been given
                go.touch()
    assert [index for index, _ in results][-1] == slow
    outcome = dict(results)
    assert outcome[slow] == "slow" and outcome[fast] == "fast"
    assert isinstance(outcome[dies], ChildCallFailed)
    assert not multiprocessing.active_children()


def test_leaving_the_block_ends_the_processes_still_running():
    with pytest.raises(RuntimeError), ChildCalls("fork") as children:
        children.start(_sleep_then, 60, None)
        assert multiprocessing.active_children()
        raise RuntimeError("an error while the child runs")
    assert not multiprocessing.active_children()


def test_a_call_started_later_is_waited_for_and_none_is_given_twice():
    with ChildCalls("fork") as children:
        first = children.start(_sleep_then, 0.0, 1)
        assert list(children.finished()) == [(first, 1)]
        second = children.start(_sleep_then, 0.0, 2)
        assert list(children.finished()) == [(second, 2)]


# Python as started from a terminal: a test run started in the background (a CI job, `cmd &`) inherits SIGINT
# ignored, and Python then installs no handler of its own
AS_FROM_A_TERMINAL = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"

CTRL_C_AT_THE_FORK = (
    AS_FROM_A_TERMINAL
    + """
import os, signal, sys
from spokenbench.core.foundation.child_process import call_in_child

# a Ctrl-C in the child's first instant, before any code of ours runs there: the window the mask closes
os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGINT))
with call_in_child("fork", sum, [1, 2, 3]) as wait:
    print("result", wait())
print("SIGINT still handled here:", signal.getsignal(signal.SIGINT) is signal.default_int_handler)
print("SIGINT unblocked here:", signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, []))
"""
)


def test_a_ctrl_c_as_the_child_starts_is_dropped_there_quietly():
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_AT_THE_FORK], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
    assert done.stdout.split("\n")[:3] == [
        "result 6",
        "SIGINT still handled here: True",
        "SIGINT unblocked here: True",
    ]


CTRL_C_WHILE_STARTING = (
    AS_FROM_A_TERMINAL
    + """
import signal, sys, time
from spokenbench.core.foundation import child_process

real_process = None
def start_then_ctrl_c(self):  # a Ctrl-C reaching this process while its child starts
    real_start(self)
    signal.raise_signal(signal.SIGINT)

import multiprocessing.context
real_start = multiprocessing.context.ForkProcess.start
multiprocessing.context.ForkProcess.start = start_then_ctrl_c
try:
    with child_process.ChildCalls("fork") as children:
        children.start(time.sleep, 60)
        print("not interrupted")
except KeyboardInterrupt:
    import multiprocessing
    print("interrupted; children left:", len(multiprocessing.active_children()))
"""
)


def test_a_ctrl_c_while_the_child_starts_reaches_this_process_once_it_can_end_the_child():
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_WHILE_STARTING], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "interrupted; children left: 0", done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr


# Moved from tests/core/qc/test_screening_parallel.py when screening stopped forking (issue 28, round 5).
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_call_in_a_child_returns_its_result_or_says_it_failed(method):
    with call_in_child(method, sorted, [3, 1, 2]) as wait:
        assert wait() == [1, 2, 3]
    # it raises; it dies; what it is given or gives back cannot be pickled (spawn: given, fork: given back)
    for function, args in ((int, ("not a number",)), (os._exit, (3,)), (sorted, [lambda: 0])):
        with call_in_child(method, function, *args) as wait, pytest.raises(ChildCallFailed):
            wait(lambda: None)
    assert not multiprocessing.active_children()


@pytest.fixture
def another_thread():
    """A thread running in this process, as in a job process (its cancel watch and progress flusher)."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    yield
    stop.set()
    other.join()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
def test_no_fork_while_another_thread_runs(another_thread):
    assert child_start_method() == ("spawn" if usable_cores() >= 2 else None)
