"""A run killed with SIGKILL and resumed repeats no request the stub already answered and ends with the
same results as an uninterrupted run."""

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from eval_support import add_assembled, add_items
from model_stub import StubServer

from spokenbench.core.conditions import Condition
from spokenbench.core.store import Project

ITEMS, ORDERS = 8, ("original", "reversed")


def _evaluate_args(project_dir, url, *extra):
    return [
        str(Path(sys.executable).with_name("spokenbench")),
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
        "3",
        "--retries",
        "2",
        *extra,
    ]


def _results(project_dir):
    with sqlite3.connect(Path(project_dir) / "project.sqlite") as conn:
        return sorted(
            conn.execute("SELECT item_id, condition_key, raw_text, parsed_letter, mapped_option, error FROM responses")
        )


def _committed(project_dir) -> int:
    try:
        with sqlite3.connect(Path(project_dir) / "project.sqlite", timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM responses").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigkill_then_resume_repeats_no_answered_request(tmp_path):
    source = tmp_path / "source"
    with Project.create(source) as project:
        for item_id in add_items(project, ITEMS):
            for order in ORDERS:
                add_assembled(project, item_id, Condition(language="en", voice="Zephyr", order=order))
    killed_copy, clean_copy = tmp_path / "killed", tmp_path / "clean"
    shutil.copytree(source, killed_copy)
    shutil.copytree(source, clean_copy)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    answered_before_kill = 5

    with StubServer(hold_after=answered_before_kill) as stub:
        process = subprocess.Popen(
            _evaluate_args(killed_copy, stub.openai_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 60
        # wait until the stub has answered its quota and the runner has committed every answer it got
        while time.monotonic() < deadline and not (
            stub.state.answered >= answered_before_kill and _committed(killed_copy) >= answered_before_kill
        ):
            assert process.poll() is None, process.stderr.read().decode()
            time.sleep(0.02)
        assert _committed(killed_copy) == answered_before_kill
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        answered_then = {r["sha256"] for r in stub.requests if r["status"] == 200}
        assert len(answered_then) == answered_before_kill

        stub.state.hold_after = None
        stub.state.release.set()  # the held requests are dropped, never answered
        resumed = subprocess.run(
            _evaluate_args(killed_copy, stub.openai_url, "--resume"),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
        answered = [r["sha256"] for r in stub.requests if r["status"] == 200]
        assert len(answered) == len(set(answered)) == ITEMS * len(ORDERS), "a request was answered twice"
        assert answered_then <= set(answered)

    with StubServer() as stub:
        clean = subprocess.run(
            _evaluate_args(clean_copy, stub.openai_url), env=env, capture_output=True, text=True, timeout=120
        )
        assert clean.returncode == 0, clean.stderr

    killed_results, clean_results = _results(killed_copy), _results(clean_copy)
    assert len(killed_results) == ITEMS * len(ORDERS)
    assert killed_results == clean_results
    with sqlite3.connect(killed_copy / "project.sqlite") as conn:
        runs = conn.execute("SELECT id, status FROM runs").fetchall()
    assert runs == [(1, "finished")]  # the resumed run is the killed one
