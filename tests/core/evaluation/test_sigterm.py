"""Stopping a run from outside — Ctrl-C, or SIGTERM as a service manager, `timeout` or `kill` sends it — keeps
what is paid for: the requests already sent are waited for and their answers stored (the provider bills them
whether or not anyone reads them, so a resume would pay twice), the run and its job are marked cancelled, no
claim stays held, and the exit code is Ctrl-C's 130. A second signal abandons those requests at once."""

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from eval_support import add_assembled, add_items
from model_stub import StubServer
from support import as_a_background_job, as_from_a_terminal
from test_kill_resume import _cli_json, _committed, _evaluate_args, _wait_until

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.store import Project

pytestmark = pytest.mark.slow  # real processes stopped by a signal

STOPS = [
    (signal.SIGINT, as_from_a_terminal),
    (signal.SIGTERM, as_from_a_terminal),
    (signal.SIGTERM, as_a_background_job),  # SIGINT ignored: SIGTERM used to be turned into it, and lost
]
STOP_IDS = ["ctrl-c", "sigterm", "sigterm-background-job"]
IN_FLIGHT = 3  # the run's --concurrency


def _started_with_answers_held(tmp_path, stub, started) -> tuple[Path, subprocess.Popen]:
    """A run of 4 requests whose first 3 reached the stub, which holds their answers (its gate is shut)."""
    project_dir = tmp_path / "project"
    with Project.create(project_dir) as project:
        for item_id in add_items(project, 4):
            add_assembled(project, item_id, Condition(language="en", voice="Zephyr", order="original"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    stub.state.gate.clear()
    run = subprocess.Popen(
        _evaluate_args(project_dir, stub.openai_url),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=started,
    )
    _wait_until(lambda: len(stub.requests) == IN_FLIGHT, timeout=30)
    time.sleep(0.3)  # the requests are out; their answers are held
    return project_dir, run


def _ended_cancelled(project_dir, what_it_did: str) -> None:
    """The run and its job cancelled, nothing left held, the job's stop reason saying what it did."""
    [job] = _cli_json("jobs", project_dir)
    assert job["status"] == "cancelled" and job["stop_reason"] == f"cancel requested; {what_it_did}"
    with sqlite3.connect(Path(project_dir) / "project.sqlite") as conn:
        held = conn.execute("SELECT count(*) FROM jobs WHERE status = 'running'").fetchone()[0]
        run_status = conn.execute("SELECT status FROM runs").fetchone()[0]
    conn.close()
    assert held == 0 and run_status == "cancelled"


@pytest.mark.parametrize(("stop", "started"), STOPS, ids=STOP_IDS)
def test_a_stopped_run_waits_for_the_answers_already_sent_and_keeps_them(tmp_path, stop, started):
    with StubServer() as stub:
        project_dir, run = _started_with_answers_held(tmp_path, stub, started)
        run.send_signal(stop)
        time.sleep(1.0)
        assert run.poll() is None  # waiting for the answers it has paid for
        stub.state.gate.set()
        assert run.wait(timeout=20) == 130
        said = run.stderr.read().decode()
        assert len(stub.requests) == IN_FLIGHT  # nothing more was sent after the signal
    assert f"waiting for the answers to {IN_FLIGHT} request(s) already sent (paid for)" in said, said
    assert f"the answers to {IN_FLIGHT} request(s) already sent were waited for and kept" in said, said
    assert _committed(project_dir) == IN_FLIGHT
    _ended_cancelled(project_dir, f"the answers to {IN_FLIGHT} request(s) already sent were waited for and kept")


@pytest.mark.parametrize(("stop", "started"), STOPS, ids=STOP_IDS)
def test_a_second_signal_abandons_the_requests_already_sent(tmp_path, stop, started):
    with StubServer() as stub:
        project_dir, run = _started_with_answers_held(tmp_path, stub, started)
        run.send_signal(stop)
        time.sleep(0.5)
        run.send_signal(stop)
        started_waiting = time.monotonic()
        assert run.wait(timeout=20) == 130
        assert time.monotonic() - started_waiting < 3.0
        said = run.stderr.read().decode()
        stub.state.gate.set()
    assert f"abandoning {IN_FLIGHT} request(s) already sent" in said, said
    assert _committed(project_dir) == 0
    _ended_cancelled(project_dir, f"{IN_FLIGHT} request(s) already sent were abandoned; a resume sends them again")
