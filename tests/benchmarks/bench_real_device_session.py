"""Benchmark (run by hand, prints its figures; not part of the test run): a keyboard-only rating session in the
real app, in a real X server (Xvfb) with a real PulseAudio output (a null sink), as an annotator's fast hands
would drive it (issue 22): Ctrl+3, ↓ Enter, then `--rounds` rounds of ] [ Space R and a rating key at random
50-100 ms intervals. Prints the rounds done, the longest event-loop gap (heartbeat), whether it froze or died,
the ratings acknowledged and stored, and whether PulseAudio saw the app's playback streams.

    python tests/benchmarks/bench_real_device_session.py [--rounds 200] [--project DIR] [--screenshot FILE]

Without --project it builds the demo (`spokenbench demo`) in a temporary folder. The project gets a queue
`stress` of 260 clips. Installs xvfb, pulseaudio and xdotool with apt-get when missing (root only)."""

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

from real_device import RealDesktop, add_stress_queue, missing_tools, run_session, temporary_folder


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--project", type=Path, help="a project folder to copy (default: a fresh demo)")
    parser.add_argument("--screenshot", type=Path, help="a screenshot of the screen half-way through")
    parser.add_argument("--app", nargs="+", help="the app's command (default: spokenbench-studio)")
    args = parser.parse_args()
    problem = missing_tools()
    if problem:
        print(f"cannot run: {problem}")
        return 2
    work = temporary_folder()
    try:
        project = work / "project"
        if args.project:
            shutil.copytree(args.project, project)
        else:
            subprocess.run(["spokenbench", "demo", str(project)], check=True, stdout=subprocess.DEVNULL)
        clips = add_stress_queue(project)
        with RealDesktop(work / "desktop") as desktop:
            figures = run_session(
                desktop, project, work, rounds=args.rounds, screenshot=args.screenshot, app_command=args.app
            )
        print(f"queue: {clips} clips; display {desktop.display}; PulseAudio null sink")
        for line in figures.lines():
            print(line)
        log = (work / "app.log").read_text(errors="replace").strip()
        if log:
            print("app output (last 15 lines):")
            print("\n".join(log.splitlines()[-15:]))
        return 1 if figures.froze or figures.died else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
