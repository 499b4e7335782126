"""What a paid job pays twice when the disk fills while its requests are out (not a test: pytest does not collect
it). Needs root (a real small disk: a tmpfs).

    python tests/benchmarks/bench_full_disk.py [--items 24] [--concurrency 8] [--repeats 3] [--baseline DIR]

For each paid job kind of tests/paid_commands.py — `rewrite`, `synthesize --tts openai`, `evaluate` — the
project lies on a 64 MB tmpfs; a real command runs against a loopback stub whose every answer takes 1.5 s. Once
--concurrency requests are out the disk is filled to the last byte (a download filling a laptop's disk), and
emptied again FULL_S later (the user freeing some space). The command is then left to end on its own and, if it
did not finish, run again to finish. Each request the stub received for the same body more than once was paid
twice. Prints, per kind, the first command's exit code, the median paid twice and the requests received.

With --baseline DIR (an older tree as DIR/spokenbench), the same runs with that tree's commands, interleaved."""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "core" / "qc"), str(TESTS / "core" / "evaluation")]

from paid_commands import KINDS, SPOKENBENCH  # noqa: E402
from qc_support import SECRET  # noqa: E402
from stub_server import StubServer  # noqa: E402
from support import fill_disk, tmpfs  # noqa: E402

ANSWER_S = 1.5
FULL_S = 4.0  # how long the disk stays full


def filled_then_freed(kind: str, items: int, concurrency: int, tree: str | None) -> tuple[int, int, int, str]:
    """(the first command's exit code, requests paid twice, requests received in all, its last line)."""
    env = dict(os.environ, NVIDIA_API_KEY=SECRET, OPENAI_API_KEY=SECRET)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp, tmpfs(Path(tmp) / "disk", "64m") as disk, StubServer() as server:
        command, route = KINDS[kind](disk, items, server, concurrency, ANSWER_S)
        first = subprocess.Popen(
            [SPOKENBENCH, *command], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 60
        while len(server.requests_to(route)) < concurrency:
            if time.monotonic() > deadline or first.poll() is not None:
                raise SystemExit(f"{kind} did not start: {first.communicate()[1]}")
            time.sleep(0.01)
        filler = fill_disk(disk)
        time.sleep(FULL_S)
        filler.unlink()
        _out, err = first.communicate(timeout=300)
        if first.returncode != 0:
            finished = subprocess.run([SPOKENBENCH, *command], env=env, capture_output=True, text=True, timeout=600)
            if finished.returncode != 0:
                raise SystemExit(f"the second {kind} failed ({finished.returncode}): {finished.stderr}")
        bodies = collections.Counter(request.body for request in server.requests_to(route))
        last_line = (err.strip().splitlines() or [""])[-1]
    return first.returncode, sum(count - 1 for count in bodies.values()), sum(bodies.values()), last_line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=8, help="requests out when the disk fills")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--baseline", help="a folder holding an older tree as spokenbench")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("mounting the small disk (a tmpfs) needs root")
    trees = {"this tree": None, **({"baseline": args.baseline} if args.baseline else {})}
    print(f"{args.items} items; the disk filled once {args.concurrency} requests are out, emptied {FULL_S:g} s later")
    for kind in args.kinds.split(","):
        runs: dict[str, list[tuple[int, int, int, str]]] = {name: [] for name in trees}
        for _ in range(args.repeats):  # interleaved: machine noise hits both alike
            for name, tree in trees.items():
                runs[name].append(filled_then_freed(kind, args.items, args.concurrency, tree))
        for name, results in runs.items():
            codes = ", ".join(str(r[0]) for r in results)
            twice = statistics.median(r[1] for r in results)
            sent = statistics.median(r[2] for r in results)
            print(
                f"{kind:<10} {name:<9}: first run exit {codes}; paid twice {twice:g} (runs: "
                f"{', '.join(str(r[1]) for r in results)}); received {sent:g} requests"
            )
            with contextlib.suppress(IndexError):
                print(f"{'':<10} {name:<9}  its last line: {results[-1][3][:160]}")


if __name__ == "__main__":
    main()
