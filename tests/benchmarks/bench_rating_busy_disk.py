"""Benchmark (run by hand, prints its figures; not part of the test run): a rater's wait for the next clip while
another program writes a lot to the same disk (a backup, a sync client, a copy of clips), where a rating's commit
waits for SQLite's fsync.

    python tests/benchmarks/bench_rating_busy_disk.py [--seconds 40] [--rounds 3] [--baseline DIR] [--folder DIR]
        [--pace S]

Each round runs, in a fresh interpreter per tree (this one, and with `--baseline` an older tree as DIR/spokenbench,
alternating, each first in every other round), the Rating page (offscreen) on a copy of the demo with a queue of
all its 1,172 clips (up to 288650b a 74-clip sample, which 40 s of rating used up), rating one clip 0.4 s after the
last was drawn, for SECONDS: per rating, the key → the next clip drawn (what the rater waits for) and the key → the
writer's commit acknowledged ("Saved"). First with `disk_writing` (3 GiB files and a sync, in a loop, into FOLDER),
then one round of each with the disk idle. Medians, 90th percentiles and worst cases in milliseconds, pooled over the rounds; and the keys ignored, as a double press would be.

With `--pace S`, a rating key every S seconds whatever is drawn (a quick rater who knows the clips, as the real-desktop
walk `docs/screenshots/rating_saved_ahead_walk.py` presses them): the keys pressed, the ratings stored and the keys
ignored (pressed while the next clip was not drawn yet, or while a rating waited for the ones in flight)."""

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for bench_disk_writeback.py

from bench_disk_writeback import disk_writing  # noqa: E402

ONE_TREE = r"""
import json, os, sys, time
from pathlib import Path
from types import SimpleNamespace
os.environ["QT_QPA_PLATFORM"] = "offscreen"
sys.path.insert(0, sys.argv[3])  # tests/, for support.py
from PySide6.QtCore import QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support import run_event_loop_until
from spokenbench.app.operations import OperationRunner, ProjectSession
from spokenbench.app.rating_page import RatingPage
from spokenbench.core.qc.queues import create_queue
from spokenbench.core.qc.sampling import SampleResult, load_clip_records
from spokenbench.core.store import opened

project, seconds, pace = Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[4])
app = QApplication([])
with opened(project) as opened_project:
    records = sorted(load_clip_records(opened_project.conn), key=lambda record: record.clip_id)
    create_queue(opened_project, "busy", SampleResult("unscreened", records), 0, 0, {}, replace=True)
page = RatingPage(SimpleNamespace(annotator="bench"))
page.resize(1100, 700)
page.show()
page.set_session(ProjectSession(project, OperationRunner()))
page.open_queue("busy")
run_event_loop_until(lambda: page.rating is not None and not page.busy and page.rating.current is not None)
commits = []  # when the writer's answers came, in order
seen = {"saves": page.saves}

def watch():
    while seen["saves"] < page.saves:
        seen["saves"] += 1
        commits.append(time.perf_counter())

watcher = QTimer(interval=1)
watcher.timeout.connect(watch)
watcher.start()
if pace:  # keys at a fixed pace, whatever is drawn
    keys, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end and page.rating.current is not None:
        QTest.keyClick(page.view, "123"[keys % 3])
        keys += 1
        next_key = time.perf_counter() + pace
        run_event_loop_until(lambda: time.perf_counter() >= next_key)
    run_event_loop_until(lambda: page.idle, timeout_s=120)
    print(json.dumps({"keys": keys, "ignored": page.ignored_keys, "stored": page.saves}))
    sys.exit(0)
pressed, drawn = [], []
end = time.perf_counter() + seconds
while time.perf_counter() < end and page.rating.current is not None:
    at = time.perf_counter()
    pressed.append(at)
    QTest.keyClick(page.view, "1")
    run_event_loop_until(lambda: not page.busy and page.shown_at is not None and page.shown_at > at, timeout_s=60)
    drawn.append(time.perf_counter() - at)
    pause = time.perf_counter() + 0.4
    run_event_loop_until(lambda: time.perf_counter() > pause)
run_event_loop_until(lambda: len(commits) >= len(pressed), timeout_s=60)
print(json.dumps({
    "drawn": drawn,
    "saved": [commit - key for key, commit in zip(pressed, commits)],
    "ignored": page.ignored_keys,
    "stored": len(commits),
}))
"""


def one_tree(project: Path, seconds: float, tree: Path | None, pace: float) -> dict:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    tests = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", ONE_TREE, str(project), str(seconds), tests, str(pace)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def quantile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def figures(values: list[float]) -> str:
    ms = [1000 * value for value in values]
    return f"median {statistics.median(ms):6.0f}  p90 {quantile(ms, 0.9):6.0f}  worst {max(ms):6.0f}"


def rounds(
    demo: Path, work: Path, trees: list[tuple[str, Path | None]], count: int, seconds: float, pace: float
) -> dict:
    pooled: dict[str, dict[str, list]] = {
        name: {"drawn": [], "saved": [], "ignored": [], "stored": [], "keys": []} for name, _ in trees
    }
    for index in range(count):
        for name, tree in trees if index % 2 == 0 else list(reversed(trees)):
            project = work / f"project-{index}-{name.split()[0]}"
            shutil.copytree(demo, project)
            result = one_tree(project, seconds, tree, pace)
            for key in ("drawn", "saved"):
                pooled[name][key].extend(result.get(key, []))
            for key in ("ignored", "stored", "keys"):
                pooled[name][key].append(result.get(key, 0))
            print(f"  round {index + 1}, {name}: {result['stored']} ratings", flush=True)
            shutil.rmtree(project)
    return pooled


def report(title: str, pooled: dict) -> None:
    print(title)
    if not any(values["drawn"] for values in pooled.values()):  # --pace: what was taken of the keys pressed
        for name, values in pooled.items():
            keys, stored, ignored = (sum(values[key]) for key in ("keys", "stored", "ignored"))
            print(f"  {name}: {stored} ratings stored of {keys} keys pressed, {ignored} ignored")
            print(f"    per round: stored {values['stored']} of {values['keys']}")
        return
    for name, values in pooled.items():
        print(f"  {name} ({len(values['drawn'])} ratings; keys ignored {sum(values['ignored'])}):")
        print(f"    next clip drawn after the key   {figures(values['drawn'])}")
        print(f"    commit acknowledged after it    {figures(values['saved'])}")
    if len(pooled) == 2:
        (_, this), (_, base) = pooled.items()
        ratio = statistics.median(base["drawn"]) / statistics.median(this["drawn"])
        p90 = quantile(base["drawn"], 0.9) / quantile(this["drawn"], 0.9)
        print(f"  the wait for the next clip, baseline / this tree: median {ratio:.1f}x, p90 {p90:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=40.0, help="of rating per round and tree (default 40)")
    parser.add_argument("--rounds", type=int, default=3, help="with the disk busy (default 3)")
    parser.add_argument("--baseline", type=Path, help="an older tree as DIR/spokenbench")
    parser.add_argument("--folder", type=Path, default=Path("/var/tmp"), help="on the disk measured")
    parser.add_argument("--pace", type=float, default=0.0, help="a key every S seconds, whatever is drawn")
    args = parser.parse_args()
    trees = [("this tree", None)] + ([("baseline", args.baseline)] if args.baseline else [])
    with tempfile.TemporaryDirectory(dir=args.folder, prefix="bench-rating-busy-") as work:
        work = Path(work)
        demo = work / "demo"
        subprocess.run(["spokenbench", "demo", str(demo)], check=True, capture_output=True)
        with disk_writing(work):
            busy = rounds(demo, work, trees, args.rounds, args.seconds, args.pace)
        subprocess.run(["sync"], check=False)
        idle = rounds(demo, work, trees, 1, min(args.seconds, 15.0), args.pace)
    report(f"with another process writing 3 GiB files to {args.folder} (milliseconds):", busy)
    report("with the disk idle (milliseconds):", idle)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
