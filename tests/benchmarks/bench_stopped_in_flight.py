"""What a job stopped with Ctrl-C pays twice: the requests it had sent when it was stopped (not a test: pytest
does not collect it).

    python tests/benchmarks/bench_stopped_in_flight.py [--items 24] [--concurrency 8] [--repeats 3] [--baseline DIR]

For each paid job kind — `rewrite` (chat), `synthesize --tts openai` (speech) and `evaluate` (a model's answers)
— a real command runs against a loopback stub whose every answer takes 1.5 s, is sent SIGINT (Ctrl-C) once
--concurrency requests are out, and is then run again to finish. A provider bills a request it received whether
or not the client waits for the answer, so each request the stub received for the same body more than once was
paid twice. Prints, per kind, the median number paid twice, the requests received in all, and how long the
stopped command took to exit after the signal.

With --baseline DIR (an older tree as DIR/spokenbench, e.g. `git worktree add /var/tmp/old 3787f0b; ln -s
/var/tmp/old DIR/spokenbench`), the same runs with that tree's commands, interleaved with this tree's. Before
3787f0b's successor a stop abandoned the requests in flight, and the next run sent them all again."""

from __future__ import annotations

import argparse
import collections
import os
import signal
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
from support import as_from_a_terminal  # noqa: E402

ANSWER_S = 1.5


def stopped_then_finished(kind: str, items: int, concurrency: int, tree: str | None) -> tuple[int, int, float]:
    """(requests paid twice, requests received in all, seconds from the signal to the exit)."""
    env = dict(os.environ, NVIDIA_API_KEY=SECRET, OPENAI_API_KEY=SECRET)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp, StubServer() as server:
        command, route = KINDS[kind](Path(tmp), items, server, concurrency, ANSWER_S)
        stopped = subprocess.Popen(
            [SPOKENBENCH, *command],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=as_from_a_terminal,
        )
        deadline = time.monotonic() + 60
        while len(server.requests_to(route)) < concurrency:
            if time.monotonic() > deadline or stopped.poll() is not None:
                raise SystemExit(f"{kind} did not start: {stopped.communicate()[1]}")
            time.sleep(0.01)
        time.sleep(0.2)  # every one of them is out, none answered yet
        signalled = time.monotonic()
        stopped.send_signal(signal.SIGINT)
        _out, err = stopped.communicate(timeout=120)
        exited_after = time.monotonic() - signalled
        if stopped.returncode != 130:
            raise SystemExit(f"the stopped {kind} exited {stopped.returncode}: {err}")
        finished = subprocess.run([SPOKENBENCH, *command], env=env, capture_output=True, text=True, timeout=600)
        if finished.returncode != 0:
            raise SystemExit(f"the second {kind} failed ({finished.returncode}): {finished.stderr}")
        bodies = collections.Counter(request.body for request in server.requests_to(route))
    return sum(count - 1 for count in bodies.values()), sum(bodies.values()), exited_after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=24)
    parser.add_argument("--concurrency", type=int, default=8, help="requests out when Ctrl-C comes")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--baseline", help="a folder holding an older tree as spokenbench")
    args = parser.parse_args()
    trees = {"this tree": None, **({"baseline": args.baseline} if args.baseline else {})}
    print(f"{args.items} items; Ctrl-C once {args.concurrency} requests are out; each answer takes {ANSWER_S} s")
    for kind in args.kinds.split(","):
        runs: dict[str, list[tuple[int, int, float]]] = {name: [] for name in trees}
        for _ in range(args.repeats):  # interleaved: machine noise hits both alike
            for name, tree in trees.items():
                runs[name].append(stopped_then_finished(kind, args.items, args.concurrency, tree))
        for name, results in runs.items():
            twice = statistics.median(r[0] for r in results)
            sent = statistics.median(r[1] for r in results)
            exit_s = statistics.median(r[2] for r in results)
            print(
                f"{kind:<10} {name:<9}: paid twice {twice:g} (runs: {', '.join(str(r[0]) for r in results)}); "
                f"received {sent:g} requests; exit {exit_s:.2f} s after Ctrl-C (median of {len(results)})"
            )


if __name__ == "__main__":
    main()
