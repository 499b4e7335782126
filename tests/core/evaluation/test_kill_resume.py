"""A run killed with SIGKILL is shown as interrupted (by `spokenbench runs` and `spokenbench jobs`), and resumed
with the command the jobs table keeps it repeats no request the stub already answered and ends with the same
results as an uninterrupted run. A run a live process works on cannot be taken by another (with --wait the
other waits for it, then continues with only what is still missing), and a cancel requested from another
process stops it."""

import json
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

pytestmark = pytest.mark.slow  # real processes killed and resumed

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


SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))


def _cli_json(*args):
    done = subprocess.run([SPOKENBENCH, *map(str, args), "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _statuses(project_dir):
    return [(run["id"], run["status"], run["recorded_status"]) for run in _cli_json("runs", project_dir)]


def _wait_for_answers(process, stub, project_dir, count):
    """Until the stub has answered `count` requests and the runner has committed them all."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (stub.state.answered >= count and _committed(project_dir) >= count):
        assert process.poll() is None, process.stderr.read().decode()
        time.sleep(0.02)
    assert _committed(project_dir) == count


def _wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


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
        _wait_for_answers(process, stub, killed_copy, answered_before_kill)
        assert _statuses(killed_copy) == [(1, "running", "running")]  # a live job holds it
        _wait_until(lambda: _cli_json("jobs", killed_copy)[0]["done"] == answered_before_kill)  # its heartbeat
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        answered_then = {r["sha256"] for r in stub.requests if r["status"] == 200}
        assert len(answered_then) == answered_before_kill

        assert _statuses(killed_copy) == [(1, "interrupted", "running")]
        listed = subprocess.run([SPOKENBENCH, "runs", str(killed_copy)], capture_output=True, text=True, timeout=60)
        assert "interrupted" in listed.stdout and "--resume" in listed.stderr
        [job] = _cli_json("jobs", killed_copy)
        assert (job["kind"], job["status"], job["claim"], job["pid"]) == (
            "evaluate",
            "interrupted",
            "run:1",
            process.pid,
        )
        assert job["done"] == answered_before_kill and job["total"] == ITEMS * len(ORDERS)
        assert job["resume_argv"][-1] == "--resume"

        stub.state.hold_after = None
        stub.state.release.set()  # the held requests are dropped, never answered
        resumed = subprocess.run(  # the command the jobs table gives for continuing the job
            [SPOKENBENCH, *job["resume_argv"]], env=env, capture_output=True, text=True, timeout=120
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
    assert _statuses(killed_copy) == [(1, "finished", "finished")]  # the resumed run is the killed one
    jobs = _cli_json("jobs", killed_copy)
    assert [(j["status"], j["claim"]) for j in jobs] == [("finished", "run:1"), ("interrupted", "run:1")]


def test_a_live_run_cannot_be_taken_and_stops_when_cancelled_from_elsewhere(tmp_path):
    project_dir = tmp_path / "project"
    with Project.create(project_dir) as project:
        for item_id in add_items(project, 4):
            add_assembled(project, item_id, Condition(language="en", voice="Zephyr", order="original"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with StubServer(hold_after=2) as stub:
        holder = subprocess.Popen(
            _evaluate_args(project_dir, stub.openai_url), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        _wait_for_answers(holder, stub, project_dir, 2)
        _wait_until(lambda: len(stub.requests) == 4)  # the other two are in flight, held by the stub
        sent = len(stub.requests)

        second = subprocess.run(
            _evaluate_args(project_dir, stub.openai_url, "--resume"),
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert second.returncode == 2, second.stderr
        assert "run:1 is being worked on by job 1" in second.stderr and f"pid {holder.pid}" in second.stderr
        assert len(stub.requests) == sent  # the refused process sent nothing

        [job] = _cli_json("jobs", project_dir)
        # --now: the two requests the stub holds are never answered, and a plain cancel waits for their answers
        cancel = subprocess.run(
            [SPOKENBENCH, "jobs", str(project_dir), "--cancel", str(job["id"]), "--now"], capture_output=True, text=True
        )
        assert cancel.returncode == 0, cancel.stderr
        assert cancel.stdout.strip() == (
            f"job {job['id']} asked to stop now; answers to requests it has already sent are abandoned"
        )
        asked = time.monotonic()
        assert holder.wait(timeout=10) == 130
        assert time.monotonic() - asked < 3.0  # the heartbeat sees the request within a second
    assert _statuses(project_dir) == [(1, "cancelled", "cancelled")]
    assert _cli_json("jobs", project_dir)[0]["status"] == "cancelled"
    assert _committed(project_dir) == 2


def _one_run_project(tmp_path, items=ITEMS):
    project_dir = tmp_path / "project"
    with Project.create(project_dir) as project:
        for item_id in add_items(project, items):
            for order in ORDERS:
                add_assembled(project, item_id, Condition(language="en", voice="Zephyr", order=order))
    return project_dir


def _running_claims(project_dir):
    try:
        with sqlite3.connect(Path(project_dir) / "project.sqlite", timeout=5) as conn:
            return [row[0] for row in conn.execute("SELECT claim FROM jobs WHERE status = 'running'")]
    except sqlite3.OperationalError:
        return []


def _wait_for_text(path, text, process, timeout=30.0):
    deadline = time.monotonic() + timeout
    while text not in path.read_text():
        assert process.poll() is None, path.read_text()
        assert time.monotonic() < deadline, path.read_text()
        time.sleep(0.05)


def _start(args, env, stderr_path):
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=stderr_path.open("wb"), text=True)


def test_a_second_resume_with_wait_waits_for_the_holder_and_sends_nothing_twice(tmp_path):
    """Two `evaluate --resume` of the same run used to send every remaining request twice; with --wait the
    second one waits until the first finishes, then finds nothing left: the stub gets each request once."""
    project_dir = _one_run_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    needed = ITEMS * len(ORDERS)
    with StubServer() as stub:
        stub.state.gate.clear()  # the holder's first answers wait until the second process is waiting
        holder = _start(_evaluate_args(project_dir, stub.openai_url), env, tmp_path / "holder.err")
        _wait_until(lambda: _running_claims(project_dir) == ["run:1"])
        second = _start(
            _evaluate_args(project_dir, stub.openai_url, "--resume", "--wait"), env, tmp_path / "second.err"
        )
        _wait_for_text(tmp_path / "second.err", "waiting until it ends (--wait)", second)
        assert "run:1 is being worked on by job 1" in (tmp_path / "second.err").read_text()
        time.sleep(0.6)  # a poll or two later it is still waiting
        assert second.poll() is None and len(stub.requests) <= 3
        stub.state.gate.set()
        assert holder.wait(timeout=60) == 0, (tmp_path / "holder.err").read_text()
        assert second.wait(timeout=60) == 0, (tmp_path / "second.err").read_text()
        sent = [r["sha256"] for r in stub.requests]
        assert len(sent) == len(set(sent)) == needed  # what the run needs, each once
    assert "sent 0 request(s)" in second.stdout.read() and "answered 16/16" in holder.stdout.read()
    assert _statuses(project_dir) == [(1, "finished", "finished")]
    assert [(j["status"], j["claim"]) for j in _cli_json("jobs", project_dir)] == [("finished", "run:1")] * 2


def test_a_waiting_resume_takes_over_when_the_holder_dies(tmp_path):
    """The holder is killed while the second process waits: the second takes the run over at once and sends
    only what the holder had not answered."""
    project_dir = _one_run_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    answered_by_holder = 4
    with StubServer(hold_after=answered_by_holder) as stub:
        holder = _start(_evaluate_args(project_dir, stub.openai_url), env, tmp_path / "holder.err")
        assert stub.state.wait_for(lambda s: s.answered == answered_by_holder and s.held == 3, timeout=30)
        second = _start(
            _evaluate_args(project_dir, stub.openai_url, "--resume", "--wait"), env, tmp_path / "second.err"
        )
        _wait_for_text(tmp_path / "second.err", "waiting until it ends (--wait)", second)
        before = len(stub.requests)
        stub.state.hold_after = None  # what comes next is answered; the holder's held requests never are
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
        assert second.wait(timeout=60) == 0, (tmp_path / "second.err").read_text()
        answered_first = {r["sha256"] for r in stub.requests[:before] if r["status"] == 200}
        taken_over = [r["sha256"] for r in stub.requests[before:]]
    assert len(answered_first) == answered_by_holder
    assert len(taken_over) == len(set(taken_over)) == ITEMS * len(ORDERS) - answered_by_holder
    assert not answered_first & set(taken_over)
    assert _committed(project_dir) == ITEMS * len(ORDERS)
    jobs = _cli_json("jobs", project_dir)
    assert [(j["status"], j["claim"]) for j in jobs] == [("finished", "run:1"), ("interrupted", "run:1")]
