"""Screenshots of a paid evaluation run whose disk fills while its requests are out, seen from the app's jobs panel
under a real window manager (xfwm4), driven by keys only. Needs root (the small disk is a tmpfs), Xvfb,
PulseAudio, xdotool and xfwm4:

    python docs/screenshots/full_disk_job_walk.py OUT [--screen 1280x720]

The demo is copied onto a 160 MB tmpfs at OUT/disk, and the app opened on it. A `spokenbench evaluate` of the demo
(text mode, --concurrency 4) runs in another process against a loopback stub that holds its answers; once its 4
requests are out, the disk is filled to the last byte and the answers let go. OUT/full-disk-job-paused.png
(Ctrl+J, after the job's heartbeat has been stopped for longer than STALE_AFTER_S): the run's card says the disk
is full and that the job goes on once there is room. Then the filler is deleted: OUT/full-disk-job-finished.png
(Esc, Ctrl+J), the run finished. Prints what the stub was sent and what the run stored."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "core" / "evaluation")]
from model_stub import StubServer  # noqa: E402
from real_device import RealDesktop, app_on, demo_in, walk_arguments, walk_wait_until  # noqa: E402
from support import fill_disk, tmpfs  # noqa: E402

from spokenbench.core.jobs.registry import STALE_AFTER_S  # noqa: E402

IN_FLIGHT, ITEMS = 4, 12


def answers_of_the_newest_run(project: Path) -> int:
    with contextlib.closing(sqlite3.connect(project / "project.sqlite")) as conn:
        return conn.execute("SELECT count(*) FROM responses WHERE run_id = (SELECT max(id) FROM runs)").fetchone()[0]


def main() -> None:
    out, screen = walk_arguments(__doc__)
    demo = demo_in(out)
    with tmpfs(out / "disk", "160m") as disk:
        project = disk / "project"
        subprocess.run(["cp", "-r", str(demo), str(project)], check=True)
        with (
            RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop,
            StubServer() as stub,
            app_on(desktop, project, out),
        ):
            time.sleep(3.0)
            stub.state.gate.clear()  # answers are held until the disk is full
            command = ["spokenbench", "evaluate", str(project), "--model", "vllm:stub-model"]
            command += ["--base-url", stub.openai_url, "--mode", "text", "--prompt", "standard"]
            command += ["--concurrency", str(IN_FLIGHT), "--limit", str(ITEMS)]
            run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            walk_wait_until(lambda: len(stub.requests) == IN_FLIGHT, "the run's first requests", timeout=60.0)
            filler = fill_disk(disk)
            stub.state.gate.set()
            time.sleep(STALE_AFTER_S + 4.0)  # the job's heartbeat cannot be written: others see it stop
            desktop.xdotool("key", "ctrl+j")  # the jobs panel, the keyboard on the run's card
            time.sleep(2.0)
            desktop.screenshot(out / "full-disk-job-paused.png")
            sent_while_full = len(stub.requests)
            print(f"disk full: the stub was sent {sent_while_full}; the run still going: {run.poll() is None}")
            filler.unlink()
            code = run.wait(60)
            desktop.xdotool("key", "Escape")
            time.sleep(1.0)
            desktop.xdotool("key", "ctrl+j")
            time.sleep(2.0)
            desktop.screenshot(out / "full-disk-job-finished.png")
            print(
                f"room again: exit {code}; {answers_of_the_newest_run(project)} answers stored; the stub was sent {len(stub.requests)}"
            )
            print("  what the run said:", " | ".join(run.stderr.read().strip().splitlines()[-4:]))
            desktop.xdotool("key", "Escape")


if __name__ == "__main__":
    main()
