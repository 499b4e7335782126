"""How much disk a command uses at its peak and leaves behind (not a test: pytest does not collect it):

    python tests/benchmarks/bench_disk_use.py [--path /tmp] -- COMMAND [ARG...]

e.g. `QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_disk_use.py -- python -m pytest -n auto` or
`... -- bash .ci/run`. Samples the used bytes of the file system holding --path every 0.5 s while the command
runs and prints the peak and what is still used after it, both above the use at the start, and its wall time.
The whole file system is sampled: other work on it counts too (a quiet machine gives the command's own figures).
Measured with it (round 46): the default test run peaked at 5,927 MB and left all of it before
`tmp_path_retention_policy = failed` and the hard-linked demo copies (tests/demo_copies.py), 214 MB and 0 after;
a whole `.ci/run` 17,436 MB peak and left before, 2,021 MB peak and 1,261 MB left (its .ci-venv) after."""

from __future__ import annotations

import argparse
import os
import subprocess
import threading
import time


def used_mb(path: str) -> float:
    status = os.statvfs(path)
    return (status.f_blocks - status.f_bfree) * status.f_frsize / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default="/tmp", help="a folder on the file system to sample")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command after --")
    start = used_mb(args.path)
    peak = [start]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            peak[0] = max(peak[0], used_mb(args.path))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    began = time.monotonic()
    code = subprocess.call(command)
    seconds = time.monotonic() - began
    done.set()
    sampler.join()
    end = used_mb(args.path)
    peak[0] = max(peak[0], end)
    print(
        f"exit {code} in {seconds:.0f} s; disk used above the start: peak {peak[0] - start:,.0f} MB, "
        f"left after {end - start:,.0f} MB"
    )


if __name__ == "__main__":
    main()
