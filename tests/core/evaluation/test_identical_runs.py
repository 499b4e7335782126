"""Identical fresh evaluations started together send each request once (issue 23, defect 2): two or three
`spokenbench evaluate` processes with the same plan used to send 164 of 168 requests twice (three: 416 for
168). Each request is claimed across processes (`work_claims`, `request:<request key>`); a process that finds
a request claimed by another live job waits for that job's answer and reuses it — and says so on stderr and in
`--json` — and a killed claimer's claims are taken over."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from eval_support import add_items
from model_stub import StubServer
from support import as_from_a_terminal

from spokenbench.core.store import Project

pytestmark = pytest.mark.slow  # real processes started together

SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))
ITEMS = 24


def _project(tmp_path, items=ITEMS):
    project_dir = tmp_path / "project"
    with Project.create(project_dir) as project:
        add_items(project, items)
    return project_dir


def _evaluate_args(project_dir, url, *extra):
    return [
        SPOKENBENCH,
        "evaluate",
        str(project_dir),
        "--model",
        "vllm:stub-model",
        "--base-url",
        url,
        "--mode",
        "text",
        "--prompt",
        "standard",
        "--orders",
        "original,reversed",
        "--json",
        *extra,
    ]


def _env():
    return {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}


def _start_together(count, project_dir, url, *extra):
    return [
        subprocess.Popen(
            _evaluate_args(project_dir, url, *extra),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(count)
    ]


class _StderrLines:
    """A process's stderr, read on a thread as it comes (its stdout is read at the end)."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.thread = threading.Thread(target=lambda: self.lines.extend(process.stderr), daemon=True)
        self.thread.start()

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def text(self) -> str:
        return "".join(self.lines)

    def wait(self, process: subprocess.Popen) -> str:
        process.wait(timeout=180)
        self.thread.join(timeout=10)
        return self.text()


def _answers_per_request(stub) -> Counter:
    return Counter(r["sha256"] for r in stub.requests if r["status"] == 200)


@pytest.mark.parametrize("processes", [2, 3])
def test_identical_evaluations_started_together_send_each_request_once(tmp_path, processes):
    """The stub's answers wait until every process but the first claimer has found a request claimed by a live
    job and said so: the runs overlap however slowly the processes start (under load one used to finish before
    another planned, which then found every answer in the cache and reused none)."""
    project_dir = _project(tmp_path)
    with StubServer(delay_s=0.03) as stub:
        stub.state.gate.clear()
        started = _start_together(processes, project_dir, stub.openai_url)
        errors = [_StderrLines(process) for process in started]
        deadline = time.monotonic() + 60
        while sum(lines.has("reusing its answer") for lines in errors) < processes - 1:
            assert time.monotonic() < deadline and all(p.poll() is None for p in started), [e.text() for e in errors]
            time.sleep(0.01)
        stub.state.gate.set()
        outputs = [(process.stdout.read(), lines.wait(process)) for process, lines in zip(started, errors)]
        per_request = _answers_per_request(stub)
    assert [p.returncode for p in started] == [0] * processes, [err for _, err in outputs]
    assert len(per_request) == ITEMS * 2
    assert max(per_request.values()) == 1, f"{sum(per_request.values())} requests sent for {len(per_request)}"
    summaries = [json.loads(out) for out, _ in outputs]
    assert sum(s["fresh_requests"] for s in summaries) == ITEMS * 2
    assert all(s["answered"] == ITEMS * 2 and s["errors"] == 0 for s in summaries)
    reused = [s for s in summaries if s["reused_from_other_jobs"]]
    assert reused, "at least one process reused another's answers"
    for summary, (_, err) in zip(summaries, outputs):
        if summary["reused_from_other_jobs"]:  # and says so
            assert "being sent by job" in err and "reusing its answer" in err, err
    with sqlite3.connect(project_dir / "project.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM work_claims").fetchone()[0] == 0, "claims released"
        # every run has every answer, and equal requests got equal answers
        rows = conn.execute("SELECT run_id, item_id, condition_key, raw_text FROM responses").fetchall()
    assert len(rows) == processes * ITEMS * 2
    by_request = {}
    for _run, item, condition, text in rows:
        by_request.setdefault((item, condition), set()).add(text)
    assert all(len(texts) == 1 for texts in by_request.values())


def test_a_killed_claimers_requests_are_taken_over(tmp_path):
    """The first process is killed while it holds claims on requests the stub never answers: the second
    takes them over once the dead job's claims are stale, and sends each missing request once."""
    project_dir = _project(tmp_path, items=6)
    with StubServer(hold_after=3) as stub:
        first = subprocess.Popen(
            _evaluate_args(project_dir, stub.openai_url, "--concurrency", "3"),
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert stub.state.wait_for(lambda s: s.answered >= 3 and s.held >= 3, timeout=60)
        time.sleep(0.5)  # its answers are committed (save_now) before more requests go out
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        held = {r["sha256"] for r in stub.requests if r["status"] is None}
        stub.state.hold_after = None
        stub.release()
        second = subprocess.run(
            _evaluate_args(project_dir, stub.openai_url), env=_env(), capture_output=True, text=True, timeout=120
        )
        assert second.returncode == 0, second.stderr
        per_request = _answers_per_request(stub)
    assert len(per_request) == 12 and max(per_request.values()) == 1
    assert held <= set(per_request), "the killed claimer's requests were sent by the second process"
    summary = json.loads(second.stdout)
    assert summary["answered"] == 12 and summary["cache_hits"] == 3


def test_ctrl_c_while_waiting_for_another_jobs_requests_stops_at_once_and_releases_its_claims(tmp_path):
    """A process waiting for requests another live job holds (the stub never answers them) stops on Ctrl-C like any
    run (exit 130, within seconds), sends none of the held requests, and leaves no claim behind."""
    project_dir = _project(tmp_path, items=4)
    with StubServer(hold_after=0) as stub:
        holder = subprocess.Popen(
            _evaluate_args(project_dir, stub.openai_url, "--concurrency", "8"),
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert stub.state.wait_for(lambda s: s.held == 8, timeout=60), "the holder sends every request"
        planned = subprocess.run(
            _evaluate_args(project_dir, stub.openai_url, "--dry-run"), env=_env(), capture_output=True, timeout=60
        )
        warnings = json.loads(planned.stdout)["warnings"]
        assert any(f"job 1 (pid {holder.pid}" in w and "reused here, not sent twice" in w for w in warnings), warnings
        waiting = subprocess.Popen(
            _evaluate_args(project_dir, stub.openai_url),
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=as_from_a_terminal,  # stopped with Ctrl-C below, wherever this test run was started
        )
        deadline = time.monotonic() + 30
        while "reusing its answer" not in (note := _read_stderr_line(waiting)):
            assert time.monotonic() < deadline, note
        waiting.send_signal(signal.SIGINT)
        asked = time.monotonic()
        assert waiting.wait(timeout=10) == 130
        assert time.monotonic() - asked < 5
        assert len(stub.requests) == 8, "the waiting process sent none of the held requests"
        with sqlite3.connect(project_dir / "project.sqlite") as conn:
            holders = {row[0] for row in conn.execute("SELECT DISTINCT job_id FROM work_claims")}
        assert holders == {1}, "only the live holder still holds claims"
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)


def _read_stderr_line(process) -> str:
    line = process.stderr.readline().decode(errors="replace")
    assert line or process.poll() is None, "the waiting process ended"
    return line
