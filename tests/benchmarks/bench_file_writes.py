"""Why a batch file's second process helps only with reading and encoding (issue 28, round 8): two processes
writing parts of one file are no faster than one process writing it all, while two writing two files are.

    python tests/benchmarks/bench_file_writes.py [--rounds 7] [--lines 20000] [--dir /var/tmp]

Writes lines shaped like the batch file's (a 300-byte head, 58,000 bytes of base64, a 51-byte tail: 1.17 GB for
20,000) with `pwritev`, 32 lines a call, as `_write_share` does: in one process; in two processes at planned offsets
of one file (the parent's half of each 512-line unit and the child's, as `_SplitSink` splits them); and in two
processes each writing its own file (what one file cannot have). Each mode in turn every round; medians of wall time
and CPU (both processes). On Linux, buffered writes to one file take its inode's lock, so the two writers' copies
into the page cache run one at a time."""

from __future__ import annotations

import argparse
import os
import statistics
import time

HEAD, BASE64, TAIL = b"h" * 300, b"x" * 58_000, b"t" * 50 + b"\n"
LINE = len(HEAD) + len(BASE64) + len(TAIL)
UNIT, CALL = 512, 32


def write_lines(fd: int, offset: int, count: int) -> None:
    for first in range(0, count, CALL):
        lines = min(CALL, count - first)
        os.pwritev(fd, [HEAD, BASE64, TAIL] * lines, offset)
        offset += lines * LINE


def timed(mode: str, lines: int, folder: str) -> tuple[float, float]:
    paths = [os.path.join(folder, f"bench-file-writes-{n}") for n in (0, 1)]
    for path in paths:
        if os.path.exists(path):
            os.unlink(path)
    started, before = time.perf_counter(), os.times()
    fd = os.open(paths[0], os.O_WRONLY | os.O_CREAT, 0o600)
    if mode == "one process":
        write_lines(fd, 0, lines)
    else:
        pid = os.fork()
        if pid == 0:  # the child: the second half of each unit, in this file or its own
            child_fd = fd if mode == "two processes, one file" else os.open(paths[1], os.O_WRONLY | os.O_CREAT, 0o600)
            for unit in range(0, lines, UNIT):
                count = min(UNIT, lines - unit)
                write_lines(child_fd, (unit + count // 2) * LINE, count - count // 2)
            os._exit(0)
        for unit in range(0, lines, UNIT):
            write_lines(fd, unit * LINE, min(UNIT, lines - unit) // 2)
        os.waitpid(pid, 0)
    os.close(fd)
    after = os.times()
    cpu = sum(after[:4]) - sum(before[:4])
    wall = time.perf_counter() - started
    for path in paths:
        if os.path.exists(path):
            os.unlink(path)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--dir", default="/var/tmp")
    args = parser.parse_args()
    modes = ("one process", "two processes, one file", "two processes, two files")
    results: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    for _ in range(args.rounds):
        for mode in modes:
            results[mode].append(timed(mode, args.lines, args.dir))
    print(f"{args.lines} lines, {args.lines * LINE / 1e9:.2f} GB, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    one = statistics.median(wall for wall, _ in results["one process"])
    for mode in modes:
        wall = statistics.median(w for w, _ in results[mode])
        cpu = statistics.median(c for _, c in results[mode])
        print(f"{mode:26s} wall {wall:.3f} s  CPU {cpu:.3f} s  {one / wall:.2f}x one process")


if __name__ == "__main__":
    main()
