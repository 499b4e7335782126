"""A paid reply is on disk before the runner does anything else with it: a `spokenbench evaluate` killed with
SIGKILL at any moment after it read a reply — right after the first one, mid-run with requests in flight, right
after a burst of simultaneous replies — is resumed without sending any answered request again, and ends with
the results of an uninterrupted run.

The kill comes as soon as the stub has answered N requests and every worker has sent its next request (the
stub holds those unanswered): the runner has read all N replies, and before the fix the last of them were
still waiting for the batch writer's commit."""

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from eval_support import add_assembled, add_items
from model_stub import StubServer

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.store import Project

pytestmark = pytest.mark.slow  # real processes killed at three moments

ITEMS, ORDERS, CONCURRENCY = 8, ("original", "reversed"), 4
SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))
MOMENTS = {  # name: (answers before the kill, the first answers leave together)
    "after the first reply": (1, False),
    "mid-run, requests in flight": (7, False),
    "right after a burst of replies": (CONCURRENCY, True),
}


def _evaluate_args(project_dir, url):
    return [
        "evaluate",
        str(project_dir),
        "--model",
        "vllm:stub-model",
        "--base-url",
        url,
        "--mode",
        "audio",
        "--prompt",
        "standard",
        "--concurrency",
        str(CONCURRENCY),
        "--retries",
        "2",
        "--price-input",
        "1",
        "--price-output",
        "1",
    ]


def _results(project_dir):
    """The stored answers, and the run's cost."""
    with sqlite3.connect(Path(project_dir) / "project.sqlite") as conn:
        rows = conn.execute(
            "SELECT item_id, condition_key, raw_text, parsed_letter, mapped_option, error FROM responses"
        )
        return sorted(rows), conn.execute("SELECT cost_usd FROM runs").fetchone()[0]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A project to copy, and the results of an uninterrupted run of it."""
    folder = tmp_path_factory.mktemp("durable")
    with Project.create(folder / "source") as project:
        for item_id in add_items(project, ITEMS):
            for order in ORDERS:
                add_assembled(project, item_id, Condition(language="en", voice="Zephyr", order=order))
    clean = folder / "clean"
    shutil.copytree(folder / "source", clean)
    with StubServer() as stub:
        done = subprocess.run([SPOKENBENCH, *_evaluate_args(clean, stub.openai_url)], capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr
    return folder / "source", _results(clean)


@pytest.mark.parametrize("moment", MOMENTS)
def test_sigkill_after_a_reply_resends_nothing_answered(source, tmp_path, cli, moment):
    source_dir, clean_results = source
    project_dir = tmp_path / "killed"
    shutil.copytree(source_dir, project_dir)
    answers, burst = MOMENTS[moment]
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with StubServer(hold_after=answers, burst=answers if burst else 0) as stub:
        process = subprocess.Popen(
            [SPOKENBENCH, *_evaluate_args(project_dir, stub.openai_url)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(tmp_path / "stderr").open("wb"),
        )
        try:
            deadline = time.monotonic() + 60
            while not (moved_on := stub.state.wait_for(lambda s: s.held >= CONCURRENCY, timeout=0.1)):
                if process.poll() is not None or time.monotonic() > deadline:
                    break
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait(timeout=10)
        state = f"answered {stub.state.answered}, held {stub.state.held}: {(tmp_path / 'stderr').read_text()[-2000:]}"
        assert moved_on and (stub.state.answered, stub.state.held) == (answers, CONCURRENCY), state
        before = len(stub.requests)
        answered_before = {r["sha256"] for r in stub.requests if r["status"] == 200}
        assert len(answered_before) == answers

        stub.state.hold_after = None
        stub.state.release.set()  # the held requests are dropped, never answered
        resumed = cli(*_evaluate_args(project_dir, stub.openai_url), "--resume")
        assert resumed.code == 0, resumed.err
        sent_again = {r["sha256"] for r in stub.requests[before:]}
        resent = answered_before & sent_again
        print(f"{moment}: {answers} answered before the kill, {len(resent)} of them sent again")
        assert not resent, f"{len(resent)} answered request(s) sent again after the kill"
        answered = [r["sha256"] for r in stub.requests if r["status"] == 200]
        assert len(answered) == len(set(answered)) == ITEMS * len(ORDERS)
    (rows, cost), (clean_rows, clean_cost) = _results(project_dir), clean_results
    assert len(rows) == ITEMS * len(ORDERS) and rows == clean_rows
    assert clean_cost > 0 and cost == pytest.approx(clean_cost)  # the killed session's cost was kept, once
