"""A `spokenbench batches --collect` killed with SIGKILL while it downloads loses nothing and stores nothing twice:
each job's results are committed in one transaction, so the job it had finished stays collected, the one it was
downloading stays uncollected (its tracked job shows as interrupted), and collecting again stores exactly the
rest — the same results and cost as one uninterrupted collect."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_stub import BatchStub
from eval_support import TEST_KEYS, add_assembled, add_items

from spokenbench.core.domain.conditions import Condition

pytestmark = pytest.mark.slow  # a real process killed and the work resumed

SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))


def _wait(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_killed_collect_is_resumed_without_storing_anything_twice(project, cli):
    for item_id in add_items(project, 4):
        for order in ("original", "reversed"):
            add_assembled(
                project,
                item_id,
                Condition(language="en", accent="american", voice="Zephyr", gender="female", order=order),
            )
    with BatchStub() as stub:
        for order in ("original", "reversed"):  # two runs, one batch job each
            submitted = cli(
                "evaluate", project.path, "--model", "openai:gpt-audio-mini", "--base-url", stub.openai_url,
                "--mode", "audio", "--prompt", "standard", "--orders", order, "--batch", "openai",
            )  # fmt: skip
            assert submitted.code == 0, submitted.err
        for _ in range(3):
            assert cli("batches", project.path).code == 0
        stub.state.download_budget = 1  # the first job's results download, the second's hangs
        process = subprocess.Popen(
            [SPOKENBENCH, "batches", str(project.path), "--collect"],
            env={**os.environ, **TEST_KEYS},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            _wait(lambda: stub.state.downloads_waiting == 1)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)
        listed = {entry["id"]: entry for entry in cli("batches", project.path, "--json", "--no-refresh").json()}
        assert [listed[i]["state"] for i in sorted(listed)] == ["collected", "completed"]
        assert project.conn.execute("SELECT count(*) FROM responses").fetchone()[0] == 4
        jobs = cli("jobs", project.path, "--json").json()
        assert any(job["kind"] == "batch-collect" and job["status"] == "interrupted" for job in jobs)
        stub.state.downloads_open.set()
        resumed = cli("batches", project.path, "--collect", "--json")
        assert resumed.code == 0, resumed.err
        assert resumed.json()["collected"] == [2] and resumed.json()["answered"] == 4
        assert len(stub.state.downloads) == 3  # the first job's results were not downloaded (nor stored) again
    rows = project.conn.execute("SELECT run_id, error, cost_usd FROM responses").fetchall()
    assert len(rows) == 8 and all(row["error"] is None for row in rows)
    runs = cli("runs", project.path, "--json").json()
    assert [run["status"] for run in runs] == ["finished", "finished"]
    assert runs[0]["cost_usd"] == pytest.approx(runs[1]["cost_usd"]) and runs[0]["cost_usd"] > 0
    assert runs[0]["cost_usd"] == pytest.approx(sum(row["cost_usd"] for row in rows if row["run_id"] == 1))
