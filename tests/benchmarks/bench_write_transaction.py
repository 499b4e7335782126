"""Benchmark (run by hand, prints its figures; not part of the test run): what one short write costs on the app
writer's connection (`poll_for_the_write_lock`), the path every rating takes — `transaction()`, one row, COMMIT.
Measured with the commit's fsync (synchronous FULL, as a rating) and without it (NORMAL: the code's own CPU time),
in WAL mode on the local disk; with `--baseline DIR` also an older tree's (`git archive REV core | tar -x -C
DIR/spokenbench/core`, or a worktree linked as DIR/spokenbench), its rounds interleaved with this tree's (each
tree first in every other round).

    python tests/benchmarks/bench_write_transaction.py [--writes 2000] [--rounds 7] [--baseline DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ONE_ROUND = r"""
import json, sys, time
from pathlib import Path
from spokenbench.core.store import Project, database
folder, writes = Path(sys.argv[1]), int(sys.argv[2])
Project.create(folder).close()
conn = database.connect(folder / "project.sqlite")
database.poll_for_the_write_lock(conn)
figures = {}
for synchronous in ("FULL", "NORMAL"):
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    times = []
    for n in range(writes):
        started = time.perf_counter()
        with database.transaction(conn):
            conn.execute("INSERT OR REPLACE INTO project_meta(key, value) VALUES (?, ?)", (f"k{n % 50}", str(n)))
        times.append(time.perf_counter() - started)
    times.sort()
    figures[synchronous] = times[len(times) // 2]
print(json.dumps(figures))
"""


def one_round(tree: Path | None, writes: int) -> dict:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    with tempfile.TemporaryDirectory(dir=Path.home()) as folder:  # a real disk, not a tmpfs
        done = subprocess.run(
            [sys.executable, "-c", ONE_ROUND, str(Path(folder) / "p"), str(writes)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", type=Path, help="a folder holding an older tree as spokenbench/")
    args = parser.parse_args()
    trees = {"this tree": None} | ({"baseline": args.baseline} if args.baseline else {})
    results: dict[str, list[dict]] = {name: [] for name in trees}
    for round_number in range(args.rounds):
        order = list(trees.items())
        for name, tree in order if round_number % 2 == 0 else reversed(order):  # neither tree always first
            results[name].append(one_round(tree, args.writes))
    for synchronous in ("FULL", "NORMAL"):
        medians = {name: statistics.median(r[synchronous] for r in rounds) for name, rounds in results.items()}
        line = ", ".join(f"{name} {seconds * 1e6:.0f} µs" for name, seconds in medians.items())
        ratio = f" (this tree / baseline {medians['this tree'] / medians['baseline']:.3f})" if args.baseline else ""
        print(f"one write, synchronous {synchronous}: median of {args.rounds} rounds' medians: {line}{ratio}")


if __name__ == "__main__":
    main()
