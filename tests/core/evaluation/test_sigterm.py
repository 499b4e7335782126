"""SIGTERM — what a service manager, `timeout` or `kill` sends — stops a run exactly as Ctrl-C does (issue 23,
defect 12): the answers received are kept, the run and its job are marked cancelled, no claim stays held, and the
exit code is Ctrl-C's 130; resuming sends only the requests still unanswered."""

import os
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
from eval_support import add_assembled, add_items
from model_stub import StubServer
from support import as_a_background_job, as_from_a_terminal
from test_kill_resume import _cli_json, _committed, _evaluate_args, _wait_for_answers, _wait_until

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.store import Project

pytestmark = pytest.mark.slow  # real processes stopped by a signal


@pytest.mark.parametrize(
    ("stop", "started"),
    [
        (signal.SIGINT, as_from_a_terminal),
        (signal.SIGTERM, as_from_a_terminal),
        (signal.SIGTERM, as_a_background_job),  # SIGINT ignored: SIGTERM used to be turned into it, and lost
    ],
    ids=["ctrl-c", "sigterm", "sigterm-background-job"],
)
def test_a_run_stopped_by_sigterm_ends_as_after_ctrl_c(tmp_path, stop, started):
    project_dir = tmp_path / "project"
    with Project.create(project_dir) as project:
        for item_id in add_items(project, 4):
            add_assembled(project, item_id, Condition(language="en", voice="Zephyr", order="original"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    with StubServer(hold_after=2) as stub:
        run = subprocess.Popen(
            _evaluate_args(project_dir, stub.openai_url),
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=started,
        )
        _wait_for_answers(run, stub, project_dir, 2)
        _wait_until(lambda: len(stub.requests) == 4)  # the other two are in flight, held by the stub
        run.send_signal(stop)
        assert run.wait(timeout=20) == 130, run.stderr.read().decode()
    assert _committed(project_dir) == 2  # the answers received are kept
    [job] = _cli_json("jobs", project_dir)
    assert job["status"] == "cancelled"
    with sqlite3.connect(Path(project_dir) / "project.sqlite") as conn:
        held = conn.execute("SELECT count(*) FROM jobs WHERE status = 'running'").fetchone()[0]
        run_status = conn.execute("SELECT status FROM runs").fetchone()[0]
    conn.close()
    assert held == 0 and run_status == "cancelled"
