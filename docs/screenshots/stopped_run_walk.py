"""Screenshots of an evaluation run cancelled from the app's jobs panel while four of its requests are out, under a
real window manager (xfwm4), driven by keys only:

    python docs/screenshots/stopped_run_walk.py OUT [--screen 1280x720]

A `spokenbench evaluate` of the demo (text mode, --concurrency 4) runs in another process against a loopback stub
that holds its answers. In the app on the same project: Ctrl+J (the jobs panel, the run's card has the keyboard),
Tab to its Cancel, Space. OUT/stopped-run-waiting.png: the card says it waits for the answers to the 4 requests
already sent, and offers Stop Now. OUT/stopped-run-evaluate-page.png: the Evaluate page (Esc, Ctrl+6), the run
selected in its list (Shift+Tab five times, Down, Up), its Cancel become Stop Now. Then the stub answers:
OUT/stopped-run-kept.png (Ctrl+1, Ctrl+J), the run cancelled with those 4 answers stored. A second run is
cancelled the same way and then stopped with Space on Stop Now: OUT/stopped-run-stop-now.png. Prints what each
run stored and what the stub was sent. Needs Xvfb, PulseAudio, xdotool and xfwm4."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "core" / "evaluation")]
from model_stub import StubServer  # noqa: E402
from real_device import RealDesktop, app_on, demo_copy_in, walk_arguments, walk_wait_until  # noqa: E402

IN_FLIGHT = 4


def start_run(project: Path, stub: StubServer) -> subprocess.Popen:
    command = ["spokenbench", "evaluate", str(project), "--model", "vllm:stub-model", "--base-url", stub.openai_url]
    command += ["--mode", "text", "--prompt", "standard", "--concurrency", str(IN_FLIGHT), "--limit", "12"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def answers(project: Path, run_id: int) -> int:
    with sqlite3.connect(project / "project.sqlite") as conn:
        return conn.execute("SELECT count(*) FROM responses WHERE run_id = ?", (run_id,)).fetchone()[0]


def newest_run(project: Path) -> int:
    with sqlite3.connect(project / "project.sqlite") as conn:
        return conn.execute("SELECT max(id) FROM runs").fetchone()[0]


def cancel_from_the_panel(desktop: RealDesktop) -> None:
    desktop.xdotool("key", "ctrl+j")  # the panel, the keyboard on the run's card
    time.sleep(1.0)
    desktop.xdotool("key", "Tab")  # the card's Cancel
    time.sleep(0.3)
    desktop.xdotool("key", "space")


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    with (
        RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop,
        StubServer() as stub,
        app_on(desktop, project, out),
    ):
        time.sleep(3.0)
        stub.state.gate.clear()  # answers are held until the walk lets them go
        run = start_run(project, stub)
        walk_wait_until(lambda: len(stub.requests) == IN_FLIGHT, "the run's first requests")
        run_id = newest_run(project)
        time.sleep(2.0)  # the panel lists the run (the app polls the jobs table)
        cancel_from_the_panel(desktop)
        time.sleep(3.0)  # the job's heartbeat sees the cancel; the app polls its message
        desktop.screenshot(out / "stopped-run-waiting.png")
        desktop.xdotool("key", "Escape")  # the panel closed, the keyboard back on the page
        desktop.xdotool("key", "ctrl+6")  # the Evaluate page
        time.sleep(2.0)
        for _ in range(5):  # back along the focus chain to the runs list
            desktop.xdotool("key", "shift+Tab")
        desktop.xdotool("key", "Down", "Up")  # the newest run (the one cancelled) selected
        time.sleep(1.0)
        desktop.screenshot(out / "stopped-run-evaluate-page.png")
        desktop.xdotool("key", "ctrl+1")
        print(f"run {run_id}: cancelled with {len(stub.requests)} requests out; still running: {run.poll() is None}")
        stub.state.gate.set()
        code = run.wait(30)
        desktop.xdotool("key", "ctrl+j")  # the jobs panel again
        time.sleep(2.0)
        desktop.screenshot(out / "stopped-run-kept.png")
        print(
            f"run {run_id}: exit {code}; {answers(project, run_id)} answers stored; the stub was sent {len(stub.requests)}"
        )
        print("  its last words:", run.stderr.read().strip().splitlines()[-1])

        stub.state.gate.clear()
        sent_before = len(stub.requests)
        second = start_run(project, stub)
        walk_wait_until(lambda: len(stub.requests) == sent_before + IN_FLIGHT, "the second run's requests")
        second_id = newest_run(project)
        time.sleep(2.0)
        desktop.xdotool("key", "Escape")  # the panel closed: Ctrl+J opens it with the keyboard on the card again
        time.sleep(0.5)
        cancel_from_the_panel(desktop)
        time.sleep(3.0)
        desktop.screenshot(out / "stopped-run-second-waiting.png")
        desktop.xdotool("key", "space")  # the button, now Stop Now, still has the keyboard
        started = time.monotonic()
        code = second.wait(30)
        stopped_after = time.monotonic() - started
        time.sleep(2.0)
        desktop.screenshot(out / "stopped-run-stop-now.png")
        print(
            f"run {second_id}: Stop Now; exit {code} {stopped_after:.1f} s after it; {answers(project, second_id)} "
            f"answers stored (from the cache: run {run_id}'s); the stub was sent {len(stub.requests) - sent_before}, "
            "abandoned"
        )
        stub.state.gate.set()


if __name__ == "__main__":
    main()
