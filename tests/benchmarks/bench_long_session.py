"""Benchmark (run by hand, prints its figures; not part of the test run): an annotator's long session in the real
app — a real X server (Xvfb) with a window manager (xfwm4) and a panel, a PulseAudio null sink, keys only through
xdotool — with the app's resident memory, memory maps, open files and threads read from /proc every `--every`
rounds. What grows with the clips rated is what an annotator's hours would pile up.

    python tests/benchmarks/bench_long_session.py [--rounds 1000] [--every 100] [--screen 1280x720]
        [--baseline DIR] [--no-window-manager]

Each round presses a rating key (1/2/3); on the way, as an annotator does now and then: ] every 3rd round, [ every
4th, S (spectrogram) every 5th, T (transcripts) every 7th, R every 9th, Ctrl+Z every 11th, ← ← → → every 13th,
and a note every 17th (N, a few words, Enter). The demo (`spokenbench demo`) gets a queue of all its 1,152 clips.
`--baseline DIR` runs the same session on an older tree too (`git worktree add X REV` and a link
`DIR/spokenbench` → X, given to its app as PYTHONPATH), this tree first, and prints both. Installs xvfb,
pulseaudio, xdotool and xfwm4 with apt-get when missing (root only)."""

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

from real_device import (
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    app_trees,
    close_app,
    demo_in,
    launch_rating_session,
    missing_tools,
    missing_window_manager,
    settle,
    stored_ratings,
    temporary_folder,
)

ALL_CLIPS = 100_000  # the stress queue takes every clip the project has


def resources(pid: int) -> dict[str, float]:
    """The app's resident memory (MiB), memory maps, open files and threads."""
    status = Path(f"/proc/{pid}/status").read_text()
    field = {line.split(":")[0]: line.split(":")[1].split() for line in status.splitlines() if ":" in line}
    return {
        "rss_mib": int(field["VmRSS"][0]) / 1024,
        "maps": len(Path(f"/proc/{pid}/maps").read_text().splitlines()),
        "files": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(field["Threads"][0]),
    }


def round_keys(index: int, chooser: random.Random) -> list[str]:
    keys = []
    for every, pressed in ((3, ["bracketright"]), (4, ["bracketleft"]), (5, ["s"]), (7, ["t"]), (9, ["r"])):
        if index % every == 0:
            keys += pressed
    if index % 13 == 0:
        keys += ["Left", "Left", "Right", "Right"]
    return [*keys, chooser.choice("123")]


def session(
    desktop: RealDesktop, demo: Path, work: Path, rounds: int, every: int, app_command: list[str] | None
) -> tuple[list[dict], SessionFigures, int]:
    project = work / "project"
    shutil.copytree(demo, project)
    add_stress_queue(project, clips=ALL_CLIPS)
    figures = SessionFigures(rounds)
    samples: list[dict] = []
    process, heart, log = launch_rating_session(desktop, project, work, figures, app_command)
    if process is None:
        raise SystemExit("\n".join(figures.notes))
    try:
        chooser = random.Random(5)
        samples.append({"round": 0, **resources(process.pid)})
        for index in range(1, rounds + 1):
            if heart.froze or heart.died:
                break
            desktop.xdotool("key", "--delay", "60", *round_keys(index, chooser))
            if index % 11 == 0:
                desktop.xdotool("key", "ctrl+z")
            if index % 17 == 0:
                desktop.xdotool("key", "n")
                time.sleep(0.3)
                desktop.xdotool("type", "--delay", "20", f"note {index}")
                desktop.xdotool("key", "Return")
                time.sleep(0.2)
            time.sleep(0.08)
            figures.rounds_done = index
            if index % every == 0:
                samples.append({"round": index, **resources(process.pid)})
        settle(heart)
    finally:
        close_app(desktop, process, heart, log, figures)
    figures.ratings_stored = stored_ratings(project)
    return samples, figures, figures.ratings_stored


def growth(samples: list[dict], key: str) -> float:
    """Per 100 rounds, from the first sample after warm-up (a fifth of the rounds) to the last."""
    start = samples[max(1, len(samples) // 5)]
    end = samples[-1]
    return (end[key] - start[key]) * 100 / max(end["round"] - start["round"], 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--screen", default="1280x720")
    parser.add_argument("--baseline", type=Path, help="a folder holding an older tree as spokenbench/")
    parser.add_argument("--no-window-manager", action="store_true", help="a bare X server, as the older walks")
    args = parser.parse_args()
    problem = missing_tools() or (None if args.no_window_manager else missing_window_manager())
    if problem:
        print(f"cannot run: {problem}")
        return 2
    work = temporary_folder()
    trees = app_trees(args.baseline)
    try:
        demo = demo_in(work)
        for name, command in trees:
            folder = work / name.split()[0]
            folder.mkdir()
            manager = None if args.no_window_manager else "xfwm4"
            with RealDesktop(folder / "desktop", screen=f"{args.screen}x24", window_manager=manager) as desktop:
                samples, figures, stored = session(desktop, demo, folder, args.rounds, args.every, command)
            print(f"== {name}: {figures.rounds_done} rounds in {figures.seconds:.0f} s, {stored} live ratings stored")
            for sample in samples:
                print("  " + json.dumps(sample))
            print(
                "  per 100 rounds after warm-up: "
                + ", ".join(f"{key} {growth(samples, key):+.2f}" for key in ("rss_mib", "maps", "files", "threads"))
            )
            print("  " + "\n  ".join(figures.lines()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
