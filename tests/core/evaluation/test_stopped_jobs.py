"""An evaluation stopped with Ctrl+Z (SIGSTOP) for longer than a heartbeat stays fresh, while another evaluation of
the same requests runs, and then continued (`fg`): it must not pay again for a request the other took over. Before
the fix the stopped run, waiting out a 429's Retry-After when it was stopped, sent that request again once it went
on, after the other run had already been answered for it."""

import json
import signal
import sqlite3
import subprocess
import time
from collections import Counter

import pytest
from model_stub import Scripted, StubServer
from test_identical_runs import _env, _evaluate_args, _project

from spokenbench.core.jobs.registry import STALE_AFTER_S

pytestmark = pytest.mark.slow  # real processes, stopped for longer than STALE_AFTER_S

ITEMS = 6  # two orders: 12 requests


def _answers_per_request(stub) -> Counter:
    return Counter(r["sha256"] for r in stub.requests if r["status"] == 200)


def _stop_during_the_backoff(project_dir, stub) -> subprocess.Popen:
    """A first run whose first request gets a 429 with a 4 s Retry-After: stopped while it waits."""
    stub.script(Scripted("429", retry_after=4))
    first = subprocess.Popen(
        _evaluate_args(project_dir, stub.openai_url, "--concurrency", "1"),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not any(r["status"] == 429 for r in stub.requests):  # a 429 notifies no waiter: look for it
        assert time.monotonic() < deadline and first.poll() is None, first.stderr.read() if first.poll() else ""
        time.sleep(0.01)
    first.send_signal(signal.SIGSTOP)  # during the 4 s it waits before sending the request again
    time.sleep(STALE_AFTER_S + 1.5)  # its heartbeat is stale: its claim may be taken over
    return first


def test_a_run_continued_after_another_took_its_request_over_does_not_send_it_again(tmp_path):
    project_dir = _project(tmp_path, items=ITEMS)
    with StubServer() as stub:
        first = _stop_during_the_backoff(project_dir, stub)
        second = subprocess.run(
            _evaluate_args(project_dir, stub.openai_url, "--concurrency", "1"),
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 0, second.stderr
        first.send_signal(signal.SIGCONT)
        out, err = first.communicate(timeout=120)
        per_request = _answers_per_request(stub)
    assert first.returncode == 0, err
    assert len(per_request) == ITEMS * 2
    assert max(per_request.values()) == 1, f"{sum(per_request.values())} answers paid for {len(per_request)}"
    continued = json.loads(out)
    assert continued["answered"] == ITEMS * 2 and continued["fresh_requests"] == 0, continued


def test_a_run_continued_after_a_resume_took_it_over_stops_and_says_why(tmp_path):
    project_dir = _project(tmp_path, items=ITEMS)
    with StubServer(delay_s=0.3) as stub:
        first = _stop_during_the_backoff(project_dir, stub)
        resumed = subprocess.Popen(
            _evaluate_args(project_dir, stub.openai_url, "--concurrency", "1", "--resume"),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert stub.state.wait_for(lambda s: s.answered >= 1, timeout=60), "the resume took the run over"
        first.send_signal(signal.SIGCONT)
        _out, err = first.communicate(timeout=60)
        resumed_out, resumed_err = resumed.communicate(timeout=120)
        per_request = _answers_per_request(stub)
    assert first.returncode == 130, err
    assert "stopped: another job took over its work while its process was stopped" in err, err
    assert resumed.returncode == 0, resumed_err
    assert max(per_request.values()) == 1, f"{sum(per_request.values())} answers paid for {len(per_request)}"
    assert json.loads(resumed_out)["answered"] == ITEMS * 2
    with sqlite3.connect(project_dir / "project.sqlite") as conn:
        status, reason = conn.execute("SELECT status, stop_reason FROM jobs ORDER BY id LIMIT 1").fetchone()
        assert conn.execute("SELECT count(*) FROM work_claims").fetchone()[0] == 0
        runs = conn.execute("SELECT status FROM runs").fetchall()
    assert runs == [("finished",)], "the stopped job left the run, which the resume finished, as it was"
    assert status == "interrupted" and reason.startswith("another job took over its work"), (status, reason)
