"""Benchmark (run by hand, prints its figures; not part of the test run): the peak memory of
`spokenbench-studio --demo --smoke`, this code against a baseline tree, interleaved, medians (issue 28).

Two figures per run: the app's own process (its ru_maxrss, read when the smoke test ends — the issue's 402 MiB
is this one) and the whole tree (wait4's ru_maxrss: the largest of the app and every job process it ran and
reaped, e.g. the one that embeds free-form answers). The demo in the data folder is built once first and shared.

    git archive 562acf0 core app widgets | tar -x -C /tmp/base-tree      # the baseline tree, once
    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_smoke_memory.py --baseline /tmp/base-tree [--runs 3]

Target (issue 28): the app's peak <= 300 MiB.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET_MIB = 300
APP = (
    "import resource, sys\n"
    "from spokenbench.app.main import main\n"
    "code = main(['--demo', '--smoke'])\n"
    "print(f'APP_PEAK_KIB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', flush=True)\n"
    "sys.exit(code)\n"
)


def package_dir(tree: Path) -> Path:
    """A folder whose `spokenbench` package is `tree` (core, app, widgets), to put first on PYTHONPATH."""
    root = Path(tempfile.mkdtemp(prefix="bench-smoke-pkg-"))
    (root / "spokenbench").mkdir()
    for part in ("core", "app", "widgets"):
        (root / "spokenbench" / part).symlink_to(tree.resolve() / part)
    return root


def tree_peak(env: dict) -> tuple[float, float]:
    """(the app's peak, the largest process of its tree) in MiB for one `--demo --smoke`: the child is reaped
    with wait4, whose ru_maxrss covers it and the job processes it reaped."""
    process = subprocess.Popen([sys.executable, "-c", APP], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = process.stdout.read()
    process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"smoke failed with exit code {process.returncode}")
    app_kib = int(out.decode().split("APP_PEAK_KIB ")[1].split()[0])
    return app_kib / 1024, usage.ru_maxrss / 1024


def main(baseline: Path, runs: int) -> None:
    data = Path(tempfile.mkdtemp(prefix="bench-smoke-data-"))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", SPOKENBENCH_DATA_DIR=str(data))
    trees = {"baseline": dict(env, PYTHONPATH=str(package_dir(baseline))), "this tree": env}
    tree_peak(trees["this tree"])  # builds the demo once; both read the same current copy after
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for run in range(runs):
        for name, tree_env in trees.items():
            figures[name].append(tree_peak(tree_env))
            app, whole = figures[name][-1]
            print(f"run {run + 1}, {name:9s}: app {app:6.0f} MiB, app and its job processes {whole:6.0f} MiB")
    for name, values in figures.items():
        app = statistics.median(v[0] for v in values)
        whole = statistics.median(v[1] for v in values)
        print(
            f"{name:9s}: median peak, the app {app:.0f} MiB (target <= {TARGET_MIB}); largest process {whole:.0f} MiB"
        )
    ratio = statistics.median(v[0] for v in figures["this tree"]) / statistics.median(v[0] for v in figures["baseline"])
    print(f"the app's peak, this tree / baseline: {ratio:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="a tree with core/, app/, widgets/")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    main(args.baseline, args.runs)
