"""Benchmark (run by hand, prints its figures; not part of the test run): `spokenbench demo DIR`, the whole build
as a fresh process — its wall time, its CPU time with its children's (the speech workers; the build process's own
is printed too), and the cores it used on average (CPU / wall). Target (issue 28 item 1): ≥ 1.4 cores used and
≤ 4 s on a calm 2-core machine.

The machine is shared, so `--baseline` times an older tree in the same run, the two alternating, and compares
medians (a ratio holds where absolute figures drift with the load, printed before and after):

    mkdir -p /tmp/base-demobuild/spokenbench && git archive 562acf0 core | tar -x -C /tmp/base-demobuild/spokenbench
    python tests/benchmarks/bench_demo_build.py [--repeats 5] [--baseline /tmp/base-demobuild] [--phases]

`--phases` adds one build of each tree that prints its timeline, in the order `spokenbench demo` goes (speech
workers first): each step and each job recorded (the synthesis job, then the simulated listeners' runs, on the
thread alongside it or after it) as it starts, with the wall time and the build process's own CPU time (its
workers' are not in it) — what stays serial (before the synthesis job, after step 4/6) is what to shorten.

The build folder is a temp folder (TMPDIR decides where). The build creates ~1,200 files, and what creating a file
costs depends on the host, not on the code: on the shared 2-core host of issue 28 it varied from 20 µs to 1 ms of
CPU (kernel) within an hour, with what the other users' processes did (0.02-1.2 s per build), so the figures are
framed by that cost, measured in the builds' folder before and after.

Why creating a file costs so much more at some times: the host's root file system is ext4 without a journal, and there
ext4 will not reuse an inode freed less than 60 s before (6 min while its inode table block is unwritten): each new
file's allocation walks past every such inode of its block group (`recently_deleted` in `find_inode_bit`, seen with
`perf record -g`), so a creation costs in proportion to the files deleted in the last minutes near the build's folder
— by other users, and by this benchmark itself, which deletes each build (~1,200 files) just before the next starts.
`--keep-builds` keeps every build (and the probe's files) until all are timed: each build then meets only the other
users' deletions, as a first `spokenbench demo` does, instead of its predecessor's as well. The other users' deletions
are /tmp's: a folder's new subfolders stay in its block group, and every test run on the host deletes there. At one
moment of 2026-12-02, creating a file cost 258 µs of CPU below /tmp and 18-23 µs below /var/tmp, /root or /work,
all on the same file system: `TMPDIR=/var/tmp` times the build where a project in a home folder would be.

`--bytecode-cache` runs every build as an installed package runs: with compiled bytecode (in a temp folder, written
by one untimed build of each tree first). Without it, where PYTHONDONTWRITEBYTECODE is set and the tree has no
__pycache__ (a git archive, an editable checkout under that setting), every build compiles the modules it imports
— ~0.2 s of CPU in the build process, and formerly in each spawned worker too; the figures say which was measured.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_WALL_S = 4.0
TARGET_CORES = 1.4
BUILD = """import os, sys
from spokenbench.core.cli.main import main
sys.argv = ["spokenbench", "demo", sys.argv[1]]  # run as the `spokenbench` console script runs it, exit included
try:
    code = main()
finally:
    print(f"build process CPU {sum(os.times()[:2]):.3f}", file=sys.stderr)
sys.exit(code)
"""
PHASES = """import os, sys, threading, time
started = time.perf_counter()
def step(done, total, message):
    where = f"{done}/{total} " if total else ""
    thread = threading.current_thread().name.removeprefix("spokenbench-")
    print(f"{time.perf_counter() - started:6.2f} s wall {sum(os.times()[:2]):5.2f} s CPU  [{thread}] {where}{message}")
def recorded(job, _claim):
    step(None, None, f"job {job} recorded" + (" (the synthesis: its first clips are sent)" if job == 1 else ""))
from spokenbench.core.audio.clip_workers import ClipWorkers
from spokenbench.core.audio.tts import get_backend
workers = ClipWorkers(get_backend("espeak"), in_processes=True)
step(None, None, "speech workers started (as `spokenbench demo` starts them, before importing the build)")
from spokenbench.core.demo.project import build_demo
from spokenbench.core.foundation.progress import Progress
step(None, None, "imported")
build_demo(sys.argv[1], Progress(step, None, recorded), workers=workers)
step(None, None, "built")
"""
# One more build, run as `spokenbench demo` runs, whose CPU is split: the build process's by thread (each thread's
# CPU read as it ends, and from /proc every 50 ms and at the end for those still running; the reading thread's own
# CPU is shown as "cpu sampler"), its speech workers' by part (the parts' functions wrapped
# in the workers, which report their running totals after each chunk on stderr).
BREAKDOWN = """import collections, functools, os, re, sys, threading, time
from spokenbench.core.audio import clip_workers
from spokenbench.core.audio.tts import espeak
totals = collections.Counter()
def timed(part, function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            totals[part] += time.thread_time() - started
    return wrapper
espeak._Engine.speak = timed("espeak-ng (synthesis and its callbacks)", espeak._Engine.speak)
espeak.neutralize_approximation = timed("neutralized voices' signal processing", espeak.neutralize_approximation)
espeak.as_stored = timed("samples as stored (16-bit round trip)", espeak.as_stored)
clip_workers.check_audio = timed("clip check (speech level)", clip_workers.check_audio)
clip_workers.encode_audio = timed("FLAC encoding", clip_workers.encode_audio)
render_clips = clip_workers.render_clips
@functools.wraps(render_clips)
def reporting(*args, **kwargs):
    try:
        return render_clips(*args, **kwargs)
    finally:
        parts = ";".join(f"{part}={cpu:.4f}" for part, cpu in totals.items())
        print(f"WORKER {os.getpid()} {sum(os.times()[:2]):.4f} {parts}", file=sys.stderr, flush=True)
clip_workers.render_clips = reporting
tick, names, seen, done = os.sysconf("SC_CLK_TCK"), {}, {}, threading.Event()
def read_threads():
    for thread in threading.enumerate():
        if thread.native_id:
            names[thread.native_id] = re.sub(r"\\d+", "N", thread.name).removeprefix("spokenbench-")
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        seen[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
def sample():
    while not done.wait(0.05):
        read_threads()
run_thread = threading.Thread._bootstrap_inner
def run_thread_and_record(self):  # a thread's CPU as it ends, however briefly it ran
    try:
        run_thread(self)
    finally:
        names[self.native_id] = re.sub(r"\\d+", "N", self.name).removeprefix("spokenbench-")
        seen[self.native_id] = time.thread_time()
threading.Thread._bootstrap_inner = run_thread_and_record
start_workers = clip_workers.ClipWorkers.__init__
def start_workers_then_sampler(self, *args, **kwargs):  # started before, the sampler would make them spawned
    start_workers(self, *args, **kwargs)
    threading.Thread(target=sample, name="cpu sampler", daemon=True).start()
clip_workers.ClipWorkers.__init__ = start_workers_then_sampler
from spokenbench.core.cli.main import main
sys.argv = ["spokenbench", "demo", sys.argv[1]]
main()
done.set()
read_threads()
by_thread = collections.Counter()
for tid, cpu in seen.items():
    by_thread[names.get(tid, "(unnamed)")] += cpu
print(f"BUILD {sum(os.times()[:2]):.4f} " + " ".join(f"{n.replace(' ', '_')}={c:.2f}" for n, c in by_thread.items()), file=sys.stderr)
"""


def tree_environment(tree: str | None, bytecode_cache: Path | None) -> dict:
    """The environment of a build of `tree` (None: this tree): its folder first on PYTHONPATH, and with a bytecode
    cache, bytecode written and read there (one folder per tree, as the trees' files have the same paths)."""
    env = dict(os.environ)
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    if bytecode_cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode_cache / ("baseline" if tree else "this-tree"))
    return env


def file_creation_cost_us(folder: Path, files: int = 1000, keep: bool = False) -> float:
    """CPU (µs, kernel included) to create one empty file in a new folder below `folder`, as the build's audio
    store does for each clip; `keep`: the files are left for the caller to remove."""
    probe = folder / f"file-creation-probe-{time.monotonic_ns()}" / "audio" / "tmp"
    probe.mkdir(parents=True)
    before = resource.getrusage(resource.RUSAGE_SELF)
    for number in range(files):
        os.close(os.open(probe / f"{number}.part", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    after = resource.getrusage(resource.RUSAGE_SELF)
    if not keep:
        shutil.rmtree(probe.parents[1])
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / files * 1e6


def build_once(folder: Path, env: dict, keep: bool = False) -> dict:
    """One build in a fresh process; CPU from the rusage of this process's waited-for children (the build and,
    through it, its workers: a child's figures include its own waited-for children). `keep`: the build is left
    for the caller to remove."""
    shutil.rmtree(folder, ignore_errors=True)
    before = os.times()
    started = time.perf_counter()
    process = subprocess.run([sys.executable, "-c", BUILD, str(folder)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = os.times()
    if process.returncode != 0:
        raise SystemExit(f"the build failed ({process.returncode}): {process.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    own = float(process.stderr.rsplit("build process CPU ", 1)[1].split()[0])
    return {"wall": wall, "cpu": cpu, "cores": cpu / wall, "own": own}


def phases(folder: Path, name: str, env: dict, keep: bool = False) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    process = subprocess.run([sys.executable, "-c", PHASES, str(folder)], env=env, capture_output=True, text=True)
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{name} steps (load {os.getloadavg()[0]:.2f}):\n{process.stdout.rstrip()}{process.stderr[-2000:]}")


def breakdown(folder: Path, name: str, env: dict, keep: bool = False) -> None:
    """One build with its CPU split by thread (the build process) and by part (its speech workers)."""
    shutil.rmtree(folder, ignore_errors=True)
    process = subprocess.run([sys.executable, "-c", BREAKDOWN, str(folder)], env=env, capture_output=True, text=True)
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    lines = process.stderr.splitlines()
    build = [line.split()[1:] for line in lines if line.startswith("BUILD ")]
    if process.returncode != 0 or not build:
        print(f"{name}: the breakdown build failed ({process.returncode}): {process.stderr[-2000:]}")
        return
    workers: dict[str, tuple[str, str]] = {}
    for line in lines:  # each worker's last report holds its totals: "WORKER pid cpu part=seconds;part=seconds"
        if line.startswith("WORKER "):
            _, pid, cpu, measured = (line.split(" ", 3) + [""])[:4]
            workers[pid] = (cpu, measured)
    parts: dict[str, float] = {}
    worker_cpu = 0.0
    for cpu, measured in workers.values():
        worker_cpu += float(cpu)
        for field in filter(None, measured.split(";")):
            part, _, seconds = field.rpartition("=")
            parts[part] = parts.get(part, 0.0) + float(seconds)
    own, *threads = build[0]
    print(
        f"{name} CPU breakdown (load {os.getloadavg()[0]:.2f}): build process {float(own):.2f} s, "
        f"{len(workers)} speech workers {worker_cpu:.2f} s"
    )
    by_thread = sorted(
        ((float(c), t.replace("_", " ")) for t, _, c in (f.rpartition("=") for f in threads)), reverse=True
    )
    print("  build process by thread: " + ", ".join(f"{thread} {cpu:.2f}" for cpu, thread in by_thread if cpu >= 0.01))
    rest = worker_cpu - sum(parts.values())
    shown = sorted(parts.items(), key=lambda item: -item[1]) + [
        ("the rest (start, requests and results, Python)", rest)
    ]
    print("  workers by part: " + ", ".join(f"{part} {cpu:.2f}" for part, cpu in shown))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", help="an older tree to time alongside (PYTHONPATH), e.g. /tmp/base-demobuild")
    parser.add_argument("--phases", action="store_true", help="one more build of each tree, printing its steps")
    parser.add_argument(
        "--bytecode-cache", action="store_true", help="builds with compiled bytecode, as an installed package runs"
    )
    parser.add_argument(
        "--breakdown", action="store_true", help="one more build of each tree, its CPU split by thread and by part"
    )
    parser.add_argument(
        "--keep-builds",
        action="store_true",
        help="keep every build until all are timed, so none meets its predecessor's freshly deleted files",
    )
    args = parser.parse_args()
    kinds = {"this tree": None}
    if args.baseline:
        kinds = {"baseline": args.baseline, **kinds}
    results: dict[str, list[dict]] = {name: [] for name in kinds}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as temp:
        cache = Path(temp) / "bytecode" if args.bytecode_cache else None
        envs = {name: tree_environment(tree, cache) for name, tree in kinds.items()}
        compiling = "PYTHONDONTWRITEBYTECODE" in envs["this tree"] and "PYTHONPYCACHEPREFIX" not in envs["this tree"]
        print(
            "bytecode: "
            + (
                "compiled once, in a cache (--bytecode-cache)"
                if cache
                else "PYTHONDONTWRITEBYTECODE is set: trees without __pycache__ compile their modules in every build"
                if compiling
                else "as Python's defaults and the trees' __pycache__ give"
            )
        )
        keep = args.keep_builds
        print(
            f"creating a file in the build folder ({temp}): {file_creation_cost_us(Path(temp), keep=keep):.0f} µs of "
            f"CPU; each build {'kept until all are timed' if keep else 'deleted before the next starts'}"
        )
        if cache:
            for name in kinds:
                build_once(Path(temp) / "demo", envs[name])  # untimed: writes the bytecode
        for repeat in range(args.repeats):
            for name in kinds:
                folder = Path(temp) / (
                    f"demo-{repeat}-{len(results[name])}-{name.replace(' ', '-')}" if keep else "demo"
                )
                outcome = build_once(folder, envs[name], keep)
                results[name].append(outcome)
                print(
                    f"  {repeat + 1}/{args.repeats} {name:10s} {outcome['wall']:6.2f} s wall {outcome['cpu']:6.2f} s CPU "
                    f"{outcome['cores']:.2f} cores ({outcome['own']:.2f} s CPU in the build process, the rest in its "
                    "workers)",
                    flush=True,
                )
        if args.phases:
            for name in kinds:
                phases(Path(temp) / f"phases-{name.replace(' ', '-')}", name, envs[name], keep)
        if args.breakdown:
            for name in kinds:
                breakdown(Path(temp) / f"breakdown-{name.replace(' ', '-')}", name, envs[name], keep)
        print(
            f"creating a file in the build folder, after: {file_creation_cost_us(Path(temp), keep=keep):.0f} µs of CPU"
        )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    medians = {}
    for name, runs in results.items():
        medians[name] = {key: statistics.median(run[key] for run in runs) for key in ("wall", "cpu", "cores", "own")}
        m = medians[name]
        print(
            f"{name:10s} median: {m['wall']:.2f} s wall, {m['cpu']:.2f} s CPU ({m['own']:.2f} s in the build "
            f"process), {m['cores']:.2f} cores used"
        )
    new = medians["this tree"]
    print(
        f"target: ≤ {TARGET_WALL_S} s and ≥ {TARGET_CORES} cores on a calm 2-core machine: "
        f"{'met' if new['wall'] <= TARGET_WALL_S and new['cores'] >= TARGET_CORES else 'NOT met'} here"
    )
    if args.baseline:
        old = medians["baseline"]
        print(
            f"baseline / this tree: {old['wall'] / new['wall']:.2f}x wall, CPU {new['cpu'] / old['cpu']:.2f}x of "
            f"the baseline's (the build process's own {new['own'] / old['own']:.2f}x), cores {old['cores']:.2f} -> "
            f"{new['cores']:.2f}"
        )


if __name__ == "__main__":
    main()
