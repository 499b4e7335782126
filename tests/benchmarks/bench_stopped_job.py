"""What a job stopped and continued pays twice (not a test: pytest does not collect it).

    python tests/benchmarks/bench_stopped_job.py [--items 60] [--concurrency 1,2] [--repeats 3] [--baseline DIR]

A real `spokenbench rewrite` against a stub OpenAI server (each reply after 0.2 s) is stopped (SIGSTOP, as Ctrl+Z
or a suspended laptop) after its 3rd request, for longer than its heartbeat stays fresh; a second `rewrite` of
the same project then takes its claims over and rewrites every item; the first is continued (SIGCONT) and runs
to its end. Prints, per concurrency, the median number of chat requests both sent for the items (each item
needs one: the excess is what was paid twice) and that every item was rewritten once.

With --baseline DIR (an older tree as DIR/spokenbench/core, e.g. `git archive 872538b^ core | tar -x -C
DIR/spokenbench`), the same runs with that tree's commands, interleaved with this tree's. Before the claim lease
(872538b) the continued job sent again every item it had claimed before the stop."""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "core" / "qc")]

from qc_support import CHAT_ROUTE, SECRET, StubServer, chat_reply, rewrite_json  # noqa: E402
from support import physics_items, write_jsonl  # noqa: E402

from spokenbench.core.importers import ImportOptions, import_files  # noqa: E402
from spokenbench.core.jobs.registry import STALE_AFTER_S  # noqa: E402
from spokenbench.core.store import Project  # noqa: E402

GOOD = rewrite_json("What is this speed in kilometers per hour?", ["one", "two", "three", "four"])
STOP_AFTER_REQUESTS = 3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--concurrency", default="1,2", help="the stopped job's --concurrency, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline", help="a folder holding an older tree as spokenbench/core")
    args = parser.parse_args()
    trees = {"this tree": None, **({"baseline": args.baseline} if args.baseline else {})}
    print(f"{args.items} items; the first job stopped after {STOP_AFTER_REQUESTS} requests for {STALE_AFTER_S + 1.5} s")
    for concurrency in [int(c) for c in args.concurrency.split(",")]:
        counts: dict[str, list[int]] = {name: [] for name in trees}
        for _ in range(args.repeats):  # interleaved: machine noise hits both alike
            for name, tree in trees.items():
                counts[name].append(stopped_beside_another(args.items, concurrency, tree))
        for name, sent in counts.items():
            print(
                f"concurrency {concurrency}, {name}: median {statistics.median(sent):g} requests for {args.items} "
                f"items (runs: {', '.join(map(str, sent))}); paid twice: {statistics.median(sent) - args.items:g}"
            )


def stopped_beside_another(items: int, concurrency: int, tree: str | None) -> int:
    """Requests both jobs sent; checks every item ended rewritten."""
    env = dict(os.environ, NVIDIA_API_KEY=SECRET)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    rows = physics_items(items, "s")
    with tempfile.TemporaryDirectory() as tmp, StubServer() as server:
        with Project.create(Path(tmp) / "project") as project:
            import_files(project, [write_jsonl(Path(tmp) / "items.jsonl", rows)], "mcq", ImportOptions(source="b"))
        server.script("POST", CHAT_ROUTE, replace(chat_reply(GOOD), delay_s=0.2))
        command = [
            str(Path(sys.executable).with_name("spokenbench")),
            "rewrite",
            str(Path(tmp) / "project"),
            "--base-url",
            f"{server.url}/v1",
            "--concurrency",
            str(concurrency),
        ]
        first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(server.requests_to(CHAT_ROUTE)) < STOP_AFTER_REQUESTS:
            if time.monotonic() > deadline or first.poll() is not None:
                raise SystemExit(f"the first rewrite did not start: {first.communicate()[1]}")
            time.sleep(0.01)
        time.sleep(0.05)  # its previous answer committed: stopped while it waits for a reply, not while it writes
        first.send_signal(signal.SIGSTOP)  # (stopped while it writes, it keeps the write lock: the second waits 15 s
        # for it, then stops with exit code 2 naming the stopped process — tests/core/test_write_lock_held.py)
        time.sleep(STALE_AFTER_S + 1.5)
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        first.send_signal(signal.SIGCONT)
        _out, err = first.communicate(timeout=300)
        if second.returncode != 0:
            raise SystemExit(f"the second rewrite failed: {second.stderr}")
        if first.returncode != 0:
            raise SystemExit(f"the continued rewrite failed ({first.returncode}): {err}")
        with Project.open(Path(tmp) / "project") as project:
            done = project.conn.execute("SELECT count(*) FROM rewrite_outcomes WHERE status = 'done'").fetchone()[0]
        if done != items:
            raise SystemExit(f"{done} of {items} items rewritten")
        return len(server.requests_to(CHAT_ROUTE))


if __name__ == "__main__":
    main()
