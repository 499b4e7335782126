"""Ctrl-C (or SIGTERM) on a job with no request out — an offline espeak synthesis — stops it as a cancel does: exit
130, the job recorded as cancelled, every clip it stored kept. Before, asyncio's own Ctrl-C handler cancelled the
job's task under it and the job was recorded as failed with "internal error: CancelledError"."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import as_a_background_job, as_from_a_terminal, physics_items, write_jsonl

from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.store import Project

pytestmark = pytest.mark.slow  # real processes stopped by a signal

SPOKENBENCH = str(Path(sys.executable).with_name("spokenbench"))


@pytest.mark.parametrize(
    ("stop", "started"),
    [(signal.SIGINT, as_from_a_terminal), (signal.SIGTERM, as_a_background_job)],
    ids=["ctrl-c", "sigterm-background-job"],
)
def test_ctrl_c_on_an_offline_synthesis_ends_it_cancelled_not_failed(tmp_path, stop, started):
    with Project.create(tmp_path / "project") as project:
        rows = physics_items(300, "s")
        import_files(project, [write_jsonl(tmp_path / "items.jsonl", rows)], "mcq", ImportOptions(source="t"))
    command = [SPOKENBENCH, "synthesize", str(tmp_path / "project"), "--tts", "espeak", "--original-text"]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=started)
    deadline = time.monotonic() + 60
    while _clips(tmp_path / "project") < 20:  # under way
        assert run.poll() is None and time.monotonic() < deadline, run.stderr.read()
        time.sleep(0.1)
    run.send_signal(stop)
    assert run.wait(timeout=30) == 130
    said = run.stderr.read()
    assert "Traceback" not in said, said
    jobs = subprocess.run([SPOKENBENCH, "jobs", str(tmp_path / "project"), "--json"], capture_output=True, text=True)
    [job] = json.loads(jobs.stdout)
    assert (job["status"], job["stop_reason"]) == ("cancelled", "cancel requested")
    assert 20 <= _clips(tmp_path / "project") < job["total"]


def _clips(project_dir: Path) -> int:
    with Project.open(project_dir) as project:
        return project.conn.execute("SELECT count(*) FROM clips WHERE status = 'ok'").fetchone()[0]
