"""Benchmark (run by hand, prints its figures; not part of the test run): how long the `spokenbench` command
takes to start, as a whole process, next to Python itself — issue 13's command-line targets (`--help` ≤ 0.3 s,
`info` ≤ 0.5 s). Medians of fresh processes, measured side by side.

    python tests/benchmarks/bench_cli.py [--runs 9]
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"--help": 0.3, "info": 0.5}


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    spokenbench = shutil.which("spokenbench") or sys.exit("install the project first (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "p"
        subprocess.run([spokenbench, "init", str(project)], capture_output=True, check=True)
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "spokenbench --help": [spokenbench, "--help"],
            "spokenbench info": [spokenbench, "info", str(project)],
            "spokenbench evaluate --help": [spokenbench, "evaluate", "--help"],
        }
        times = {name: [] for name in cases}
        for _ in range(args.runs):  # interleaved, so machine noise hits every case alike
            for name, argv in cases.items():
                times[name].append(timed(argv))
    print(f"command start-up, {args.runs} fresh processes each (median, max):")
    for name, values in times.items():
        target = next((t for key, t in TARGETS.items() if name.endswith(key)), None)
        note = f"  target ≤ {target:.1f} s" if target else ""
        print(f"  {name:<30} {statistics.median(values):6.3f} s  {max(values):6.3f} s{note}")


if __name__ == "__main__":
    main()
