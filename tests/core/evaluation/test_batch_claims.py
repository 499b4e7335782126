"""Batch submissions never pay for a request twice across runs and processes: a request pending in an in-flight
provider batch of any run, or claimed by a live job, is neither submitted again (`evaluate --batch`) nor sent
online; the run waiting for it is filled from the response cache, at no cost, when that batch is collected.
Requests are counted per request key at the loopback batch stub (the real openai SDK talks to it)."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from eval_support import TEST_KEYS, add_assembled, add_items

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.evaluation.request_claims import claim_name
from spokenbench.core.evaluation.runner import list_runs
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.store import jobs as job_store

pytestmark = pytest.mark.slow  # real SDK round trips through the batch stub, real processes

OPENAI = "openai:gpt-audio-mini"
SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))
CHAT = "/v1/chat/completions"


def _assemble(project, items):
    """`items` items in two orders, each with a tone of its own (distinct requests)."""
    for number, item_id in enumerate(add_items(project, items)):
        for offset, order in enumerate(("original", "reversed")):
            condition = Condition(language="en", accent="american", voice="Zephyr", gender="female", order=order)
            add_assembled(project, item_id, condition, frequency=200 + 20 * number + 10 * offset)


def _evaluate_args(project, url, *extra, model=OPENAI):
    return ["evaluate", str(project.path), "--model", model, "--base-url", url, "--mode", "audio"] + [
        "--prompt",
        "standard",
        *extra,
    ]


def _uploaded_keys(bstub) -> Counter:
    """custom_id → how many provider batches were created with it (what would be paid for)."""
    with bstub.state.lock:
        return Counter(key for batch in bstub.state.batches.values() for key, _body in batch["lines"])


def _run(project, run_id):
    return next(run for run in list_runs(project.conn) if run["id"] == run_id)


def _responses(project, run_id):
    return project.conn.execute("SELECT error, cost_usd, cached FROM responses WHERE run_id = ?", (run_id,)).fetchall()


def test_a_second_runs_batch_waits_for_the_first_and_the_collect_fills_it_at_no_cost(audio_project, bstub, cli):
    first = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--json"))
    assert first.code == 0, first.err
    assert first.json()["lines"] == 6
    second = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--json"))
    assert second.code == 0, second.err
    summary = second.json()
    assert summary["run_id"] == 2 and summary["lines"] == 0 and summary["batch_ids"] == []
    assert summary["waiting_elsewhere"] == 6
    assert summary["waiting_on"] == [{"batch_id": 1, "run_id": 1, "job_id": None, "job": None, "requests": 6}]
    assert "6 request(s) wait in batch 1 (run 1)" in second.err and "--collect` fills run 2" in second.err
    assert max(_uploaded_keys(bstub).values()) == 1 and len(_uploaded_keys(bstub)) == 6
    assert _run(audio_project, 2)["status"] == "created"
    # the first batch's collect also fills the waiting run from the response cache, at no cost
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    assert collected.json()["filled"] == [{"run_id": 2, "results": 6}] and collected.json()["still_incomplete"] == []
    rows = _responses(audio_project, 2)
    assert len(rows) == 6 and all(r["error"] is None and r["cached"] and not r["cost_usd"] for r in rows)
    assert _run(audio_project, 2)["status"] == "finished" and _run(audio_project, 2)["cost_usd"] == 0
    resumed = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--run", "2", "--json"))
    assert resumed.code == 0, resumed.err
    assert resumed.json()["cached"] == 0 and resumed.json()["lines"] == 0 and resumed.json()["already_stored"] == 6
    assert len(_uploaded_keys(bstub)) == 6 and max(_uploaded_keys(bstub).values()) == 1


def test_a_live_run_leaves_requests_in_flight_in_a_batch_to_it_and_resumes_at_no_cost(audio_project, bstub, cli):
    assert cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai")).code == 0
    live = cli(*_evaluate_args(audio_project, bstub.openai_url, "--json"))
    assert live.code == 3, live.err  # incomplete: resume once the batch is collected
    summary = live.json()
    assert summary["run_id"] == 2 and summary["fresh_requests"] == 0 and summary["waiting_elsewhere"] == 6
    assert summary["status"] == "created" and summary["stop_reason"] == "batch pending"
    assert summary["waiting_on"][0]["batch_id"] == 1 and summary["waiting_on"][0]["run_id"] == 1
    assert "6 request(s) wait in batch 1 (run 1)" in live.err and "--collect" in live.err and "--run 2" in live.err
    assert bstub.paths("POST").count(CHAT) == 0, "no request sent online"
    assert _responses(audio_project, 2) == [] and _run(audio_project, 2)["status"] == "created"
    # the batch's own run resumed online while its batch is in flight: nothing sent either
    own = cli(*_evaluate_args(audio_project, bstub.openai_url, "--run", "1", "--json"))
    assert own.code == 3 and own.json()["fresh_requests"] == 0 and bstub.paths("POST").count(CHAT) == 0
    assert cli("batches", audio_project.path, "--collect").code == 0
    resumed = cli(*_evaluate_args(audio_project, bstub.openai_url, "--run", "2", "--json"))
    assert resumed.code == 0, resumed.err
    result = resumed.json()
    assert result["answered"] == 6 and result["fresh_requests"] == 0 and result["cost_usd"] == 0
    assert result["waiting_on"] == [] and result["status"] == "finished"
    assert bstub.paths("POST").count(CHAT) == 0


def test_a_request_a_live_job_is_sending_is_not_submitted(audio_project, bstub, cli):
    """A submit finds a request claimed by a live job (an online run sending it now): it counts it as waiting on
    that job and submits the rest."""
    first = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch-file", str(audio_project.path / "f.jsonl")))
    assert first.code == 0, first.err
    keys = [json.loads(line)["custom_id"] for line in (audio_project.path / "f.jsonl").read_text().splitlines()]
    with tracked_job(audio_project.path, "evaluate", "an online run") as job:
        with audio_project.transaction() as conn:
            job_store.claim_units(conn, [claim_name(keys[0])], job.job_id)
        submitted = cli(*_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--json"))
    assert submitted.code == 0, submitted.err
    summary = submitted.json()
    assert summary["lines"] == 5 and summary["waiting_elsewhere"] == 1
    assert summary["waiting_on"] == [
        {"batch_id": None, "run_id": None, "job_id": job.job_id, "job": "an online run", "requests": 1}
    ]
    assert keys[0] not in _uploaded_keys(bstub) and len(_uploaded_keys(bstub)) == 5
    assert f"1 request(s) are being sent by job {job.job_id} (an online run)" in submitted.err


@pytest.mark.slow
def test_two_submitters_started_together_submit_each_request_once(project, bstub):
    _assemble(project, 12)  # 24 requests
    env = {**os.environ, **TEST_KEYS}
    started = [
        subprocess.Popen(
            [SPOKENBENCH, *_evaluate_args(project, bstub.openai_url, "--batch", "openai", "--json")],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=120) for process in started]
    assert [process.returncode for process in started] == [0, 0], [err for _, err in outputs]
    uploaded = _uploaded_keys(bstub)
    assert len(uploaded) == 24 and max(uploaded.values()) == 1, f"{sum(uploaded.values())} lines for 24 requests"
    summaries = [json.loads(out) for out, _ in outputs]
    assert sorted(s["run_id"] for s in summaries) == [1, 2]
    assert sum(s["lines"] for s in summaries) == 24
    assert all(s["lines"] + s["waiting_elsewhere"] == 24 for s in summaries)
    for summary, (_, err) in zip(summaries, outputs):
        if summary["waiting_elsewhere"]:
            other = 3 - summary["run_id"]
            for entry in summary["waiting_on"]:  # the other's batch, or the other submitter while it submits
                assert entry["run_id"] == other or entry["job"].endswith(f"batch (openai) of run {other}"), entry
            assert f"run {other})" in err and f"--run {summary['run_id']}" in err, err


@pytest.mark.slow
def test_a_submitter_killed_mid_submit_blocks_no_request(project, bstub, cli, monkeypatch):
    """Killed (SIGKILL) while its second part uploads, after its first part was created: the first part's requests
    stay in flight, the second part's (recorded 'submitting', claimed by the dead job; the next submit searches the
    provider for its tag and releases it) and the third's (never recorded) are submitted by the next submitter, each
    once; the killed run's resume then needs nothing sent."""
    from spokenbench.core.evaluation import batches

    monkeypatch.setattr(batches, "ORPHAN_GRACE_S", 0.0)  # released at once, not 30 s after the kill
    _assemble(project, 3)  # 6 requests, parts of 2
    bstub.state.upload_budget = 1
    script = (
        "import sys; from spokenbench.core.evaluation import batches; batches.OPENAI_MAX_REQUESTS = 2; "
        "from spokenbench.core.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    killed = subprocess.Popen(
        [sys.executable, "-c", script, *_evaluate_args(project, bstub.openai_url, "--batch", "openai")],
        env={**os.environ, **TEST_KEYS},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while bstub.state.uploads_hanging < 1:
            assert time.monotonic() < deadline and killed.poll() is None, "the second part's upload never started"
            time.sleep(0.02)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=10)
        bstub.state.upload_budget = None
        bstub.release()  # the dead submitter's hanging upload ends
    states = [row["state"] for row in project.conn.execute("SELECT state FROM batch_jobs ORDER BY id")]
    assert states == ["pending", "submitting"]
    first_part = set(_uploaded_keys(bstub))
    assert len(first_part) == 2
    second = cli(*_evaluate_args(project, bstub.openai_url, "--batch", "openai", "--json"))
    assert second.code == 0, second.err
    assert second.json()["lines"] == 4 and second.json()["waiting_elsewhere"] == 2
    uploaded = _uploaded_keys(bstub)
    assert len(uploaded) == 6 and max(uploaded.values()) == 1
    # the killed run: its unsubmitted part is dropped, the rest waits in the second run's batch
    resumed = cli(*_evaluate_args(project, bstub.openai_url, "--batch", "openai", "--run", "1", "--json"))
    assert resumed.code == 0, resumed.err
    assert resumed.json()["lines"] == 0 and resumed.json()["waiting_elsewhere"] == 6
    assert [entry["run_id"] for entry in resumed.json()["waiting_on"]] == [1, 2]
    collected = cli("batches", project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    # each run's own batch is stored, and the rest of each (4 of run 1's, run 2's 2 from batch 1) filled from the cache
    assert collected.json()["filled"] == [{"run_id": 1, "results": 4}, {"run_id": 2, "results": 2}]
    assert _run(project, 1)["status"] == "finished" and _run(project, 2)["status"] == "finished"
    again = cli(*_evaluate_args(project, bstub.openai_url, "--batch", "openai", "--run", "1", "--json"))
    assert again.code == 0 and again.json()["cached"] == 0 and again.json()["already_stored"] == 6
    assert len(_uploaded_keys(bstub)) == 6 and max(_uploaded_keys(bstub).values()) == 1


def test_a_live_run_started_while_a_batch_is_being_submitted_waits_for_it_and_sends_nothing(audio_project, bstub):
    """The submitter holds its part's requests (claimed) while it uploads: a live run of the same plan started then
    waits for them instead of sending them, and once the provider has the batch leaves them to it (exit 3)."""
    bstub.state.upload_budget = 0
    env = {**os.environ, **TEST_KEYS}
    submitter = subprocess.Popen(
        [SPOKENBENCH, *_evaluate_args(audio_project, bstub.openai_url, "--batch", "openai", "--json")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while bstub.state.uploads_hanging < 1:
        assert time.monotonic() < deadline and submitter.poll() is None, "the upload never started"
        time.sleep(0.02)
    live = subprocess.Popen(
        [SPOKENBENCH, *_evaluate_args(audio_project, bstub.openai_url, "--json")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    waiting = live.stderr.readline()
    assert "being sent by job 1" in waiting, waiting
    assert live.poll() is None and bstub.paths("POST").count(CHAT) == 0
    bstub.release()
    submitted, submit_err = submitter.communicate(timeout=60)
    out, err = live.communicate(timeout=60)
    assert submitter.returncode == 0, submit_err
    assert json.loads(submitted)["lines"] == 6
    assert live.returncode == 3, err
    summary = json.loads(out)
    assert summary["fresh_requests"] == 0 and summary["waiting_elsewhere"] == 6
    assert "6 request(s) wait in batch 1 (run 1)" in err
    assert bstub.paths("POST").count(CHAT) == 0, "no request sent online"
