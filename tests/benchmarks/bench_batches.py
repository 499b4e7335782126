"""Benchmark of large runs (issue 14): the batch request file and importing results.

    /work/venv/bin/python tests/benchmarks/bench_batches.py [--requests 100800] [--audio-seconds 1.0] [--keep]
    /work/venv/bin/python tests/benchmarks/bench_batches.py --only import [--varied-replies] [--import-rounds 3]
    /work/venv/bin/python tests/benchmarks/bench_batches.py --audio-seconds 0.01 --dry-runs 5 [--baseline DIR ...]

Builds a project of 25,200 items x 4 option orders = 100,800 planned requests (BiasInEar's nine-model grid in
one file), each with its own assembled audio (a 16 kHz WAV tone of --audio-seconds, made distinct per request: in
audio mode the question is heard, so the audio is what tells requests apart), then:
- writes the OpenAI batch-format request file with the audio inline (`write_batch_file`, what
  `spokenbench evaluate … --batch-file FILE` runs) in a fresh process, and prints its peak RSS and the output
  rate (bytes written / seconds of the whole call: planning the lines, request keys, bodies, base64, writing);
- imports a run_batch-shaped results file answering every line (`import_results`, what
  `spokenbench import-results` runs: every line validated, parsed, and stored with its cache entry and cost in
  one transaction — the same code that `spokenbench batches --collect` commits a provider job's results with).
Targets from the issue: the file written in <= 300 MB peak RSS at >= 200 MB/s of output; 100,800 results
collected in <= 30 s. Preparing the plan is timed and printed apart (it is the same as for an online run).
`--only import` writes the request file without measuring it (use a small --audio-seconds: the audio does not
reach the results) and times only the import; `--varied-replies` answers with the parser corpus's replies
(tests/core/evaluation/parsing_corpus.jsonl, in turn) instead of "Answer: [[B]]" every time;
`--import-rounds N` imports N times into the same project as it was before importing, and prints the median.
`--compare-plain N` (issue 28) runs the writer and the plain pybase64 loop in turn, each tree first in every other
round; on a shared host read its last lines: the medians over the runs no other process disturbed (each measured
process reads /proc/stat around its timed part: other processes' CPU = the host's busy CPU - its own, under
UNDISTURBED_CPU), beside each run's disturbance."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import host_cpu  # this folder, first on the path of a script run from it
import numpy as np
import soundfile as sf

ORDERS = ("original", "reversed", "order-backward", "token-backward")
MODEL = "vllm:bench-model"
TARGET_RSS_MB, TARGET_MB_S, TARGET_COLLECT_S = 300.0, 200.0, 30.0


def wav(seconds: float, frequency: float, rate: int = 16000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    buffer = io.BytesIO()
    sf.write(buffer, (0.2 * np.sin(2 * np.pi * frequency * t)).astype(np.float32), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def build_project(path: Path, requests: int, seconds: float) -> None:
    from spokenbench.core.domain.conditions import Condition, order_strings
    from spokenbench.core.domain.items import Item, Option
    from spokenbench.core.store import Project
    from spokenbench.core.store.database import utc_now
    from spokenbench.core.store.items import insert_items

    with Project.create(path) as project:
        count = requests // len(ORDERS)
        items = [
            Item(
                "bench",
                f"q{n}",
                "en",
                f"Question {n}: which of these is the answer?",
                tuple(Option(letter, f"option {letter} {n}") for letter in "ABCD"),
                "A",
            )
            for n in range(count)
        ]
        with project.transaction() as conn:
            ids = insert_items(conn, items)
        base = bytearray(wav(seconds, 220.0))
        shas = []
        for n in range(len(ids) * len(ORDERS)):  # a distinct input per request (its last samples carry n)
            base[-4:] = n.to_bytes(4, "little")
            data = bytes(base)
            sha = hashlib.sha256(data).hexdigest()
            target = project.audio.path_for(sha, "wav")  # written directly: no fsync per file, as a bench may
            target.parent.mkdir(exist_ok=True)
            target.write_bytes(data)
            shas.append(sha)
        keys = {
            order: (
                Condition(language="en", accent="american", voice="v", gender="female", order=order).key(),
                *order_strings(order, 4),
            )
            for order in ORDERS
        }
        now = utc_now()
        rows = []
        for index, item_id in enumerate(ids):
            for number, order in enumerate(ORDERS):
                key, option_order, label_sequence = keys[order]
                sha = shas[index * len(ORDERS) + number]
                rows.append((item_id, key, option_order, label_sequence, f"{item_id}-{order}", sha, seconds, now))
        with project.transaction() as conn:
            conn.executemany(
                "INSERT INTO assembled_inputs(item_id, condition_key, option_order, label_sequence, recipe_sha256, "
                "sha256, audio_format, duration_s, sample_rate, text_rendering, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, 'wav', ?, 16000, '', ?)",
                rows,
            )


# Read in the measured process around its timed part (the writer's write_batch_file, the plain loop's loop): what
# other processes ran meanwhile tells a disturbed run from a calm one on a shared host
HOST_TICKS = inspect.getsource(host_cpu)
UNDISTURBED_CPU = 0.05  # seconds of other processes' CPU (and steal) during a timed run, below which it ran alone:
# the writer's window is ~0.5-1 s on 2 cores, so 0.05 s is under 5% of the second core

WRITER = """
import json, os, resource, sys, time
try:
    from spokenbench.core.evaluation import batch_files
except ImportError:  # a tree from before batches.py was split (--baseline)
    from spokenbench.core.evaluation import batches as batch_files
write_batch_file = batch_files.write_batch_file
if sys.argv[5] != "auto":  # told whether a core is free: a second core used (a second process, a reader thread, or an older tree's forked sink) or not
    batch_files.a_core_is_free = lambda: sys.argv[5] == "fork"
if sys.argv[4] == "stdlib":  # the standard library's base64 (identical bytes), for comparison
    import base64
    batch_files._b64encode = base64.b64encode
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
from spokenbench.core.store import opened

HOST_TICKS

def rss_mb():
    with open("/proc/self/status") as status:
        return int(status.read().split("VmRSS:")[1].split()[0]) / 1024

with opened(sys.argv[1]) as project:
    started = time.perf_counter()
    prepared = prepare_evaluation(project, RunSettings(model=sys.argv[3], mode="audio", prompt="standard"))
    prepared_s = time.perf_counter() - started
    peak_prepare = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rss_before = rss_mb()
    print("writing", flush=True)  # the parent samples this process's RSS from here on
    host_before, before, started = host_ticks(), os.times(), time.perf_counter()
    summary = write_batch_file(project, prepared, sys.argv[2])
    written_s, after, host_after = time.perf_counter() - started, os.times(), host_ticks()
    cpu_s = after.user + after.system - before.user - before.system
    child_cpu_s = after.children_user + after.children_system - before.children_user - before.children_system
print(json.dumps({"prepare_s": prepared_s, "write_s": written_s, "write_cpu_s": cpu_s + child_cpu_s,
                  "writer_child_cpu_s": child_cpu_s, "bytes": summary.bytes,
                  **others(host_before, host_after, cpu_s + child_cpu_s),
                  "lines": summary.lines, "peak_prepare_mb": peak_prepare, "rss_before_write_mb": rss_before,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "child_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
""".replace("HOST_TICKS\n", HOST_TICKS)


PLAIN = """
import json, os, sqlite3, sys, time
from pybase64 import b64encode
project, target, check = sys.argv[1], sys.argv[2], sys.argv[3] == "sha256"
if check:
    import hashlib
conn = sqlite3.connect(os.path.join(project, "project.sqlite"))
HOST_TICKS

host_before, cpu, started = host_ticks(), time.process_time(), time.perf_counter()
written = 0
with open(target, "wb", buffering=1 << 20) as out:
    for sha, fmt in conn.execute("SELECT sha256, audio_format FROM assembled_inputs ORDER BY id"):
        fd = os.open(os.path.join(project, "audio", sha[:2], sha + "." + fmt), os.O_RDONLY)
        try:
            data = os.read(fd, os.fstat(fd).st_size)
        finally:
            os.close(fd)
        if check and hashlib.sha256(data).hexdigest() != sha:
            raise SystemExit("damaged")
        line = b'{"custom_id":"' + sha.encode() + b'","body":"' + b64encode(data) + b'"}\\n'
        out.write(line)
        written += len(line)
write_s, cpu, host_after = time.perf_counter() - started, time.process_time() - cpu, host_ticks()
print(json.dumps({"write_s": write_s, "write_cpu_s": cpu, "bytes": written, **others(host_before, host_after, cpu)}))
""".replace("HOST_TICKS\n", HOST_TICKS)


def plain_loop(project_dir: Path, target: Path, check: str) -> dict:
    """The plain pybase64 loop in a fresh process: each clip read, encoded and written as one line, nothing
    planned (`check` 'sha256': each clip also checked against its name, as the batch writer must)."""
    done = subprocess.run(
        [sys.executable, "-c", PLAIN, str(project_dir), str(target), check], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


# How the writer may use a second core: as it decides (auto), told a core is free (fork: a second process writing
# part of the lines since issue 28's round 6; a reader thread beside the writing one in rounds 3-5; a forked sink
# before round 3) or that none is (here: everything in one thread)
WRITER_SINKS = {"auto": "writer", "fork": "writer, 2 cores", "here": "writer, 1 core"}
# Each tree's writer is run twice in a row per round on a fresh cache of verified clips: cold (the cache empty,
# every clip hashed: the first model's batch file) then warm (the same clips again: the next model's)
CACHE_STATES = ("cold", "warm")


def compare_plain(
    rounds: int, project_dir: Path, request_file: Path, baseline: str | None, sinks: tuple[str, ...] = ("auto",)
) -> int:
    """The batch writer against the plain pybase64 loop (and, with `baseline`, the older tree's writer), run in
    turn `rounds` times on the same clips; medians of MB/s (wall and per CPU-second) and the ratios (issue 28:
    the writer at >= 90% of the plain loop's MB/s). `sinks`: the writer as it decides ('auto'), and/or forced to
    a second core ('fork': its second process; an older tree's reader thread or forked sink) or to one core ('here'), each a run of
    its own (with `baseline`, the older tree's writer told the same). Each tree's writer runs cold (an empty cache of
    verified clips: every clip hashed, the first model's file) then warm (the next model's: no clip hashed again)."""
    import shutil
    import statistics

    writers = {f"{WRITER_SINKS[sink]}, {state}": (sink, None) for sink in sinks for state in CACHE_STATES}
    if baseline:  # the older tree's writer told the same about the cores, cold then warm too (trees from before
        # the cache of verified clips are the same twice)
        writers |= {
            f"baseline {WRITER_SINKS[sink]}, {state}": (sink, baseline) for sink in sinks for state in CACHE_STATES
        }
    runs: dict[str, list[dict]] = {name: [] for name in writers} | {"plain loop": [], "plain + sha256": []}
    # what is run together, in turn: the plain loops, and each tree's cold + warm pairs
    steps = [(name,) for name in runs if not name.endswith(CACHE_STATES)]
    steps += [tuple(f"{WRITER_SINKS[sink]}, {state}" for state in CACHE_STATES) for sink in sinks]
    if baseline:
        steps += [tuple(f"baseline {WRITER_SINKS[sink]}, {state}" for state in CACHE_STATES) for sink in sinks]
    time.sleep(2.5)  # the clips older than the cache's racily-clean margin, as clips of an earlier day are
    verified_cache = request_file.parent / "verified-clips"
    for n in range(rounds):
        for step in steps if n % 2 == 0 else list(reversed(steps)):
            shutil.rmtree(verified_cache, ignore_errors=True)  # each cold run starts from an empty cache
            verified_cache.mkdir()
            for name in step:
                request_file.unlink(missing_ok=True)
                if name == "plain loop":
                    figures = plain_loop(project_dir, request_file, "none")
                elif name == "plain + sha256":
                    figures = plain_loop(project_dir, request_file, "sha256")
                else:
                    sink, tree = writers[name]
                    project = project_for_tree(project_dir, tree) if tree else project_dir
                    figures = write_file(project, request_file, "pybase64", tree, sink, verified_cache)
                    if figures is None:
                        return 1
                    reset_batches(project)
                runs[name].append(figures)
    request_file.unlink(missing_ok=True)
    medians = {}
    print(
        f"batch writer vs the plain pybase64 loop, {rounds} runs each in turn, medians; load {os.getloadavg()[0]:.1f}:"
    )
    for name, figures in runs.items():
        wall = statistics.median(f["bytes"] / 1e6 / f["write_s"] for f in figures)
        cpu = statistics.median(f["bytes"] / 1e6 / f["write_cpu_s"] for f in figures)
        medians[name] = (wall, cpu)
        print(
            f"  {name:<34} {wall:6.0f} MB/s wall {cpu:6.0f} MB per CPU-second ({figures[0]['bytes'] / 1e6:.0f} MB)"
            f"{_writer_detail(figures)}"
        )
    for name in writers:
        if name in medians:
            wall, cpu = medians[name]
            print(
                f"  {name} / plain loop: {wall / medians['plain loop'][0]:.0%} wall, {cpu / medians['plain loop'][1]:.0%} "
                f"CPU (target >= 90%); / plain + sha256: {wall / medians['plain + sha256'][0]:.0%} wall, "
                f"{cpu / medians['plain + sha256'][1]:.0%} CPU"
            )
    for name in writers:
        older = f"baseline {name}"
        if older in medians:
            (wall, cpu), (old_wall, old_cpu) = medians[name], medians[older]
            print(f"  {name} / baseline: {wall / old_wall:.2f}x wall, {cpu / old_cpu:.2f}x MB per CPU-second")
    _print_undisturbed(runs, writers)
    return 0


def _print_undisturbed(runs: dict[str, list[dict]], writers: dict) -> None:
    """Beside the medians over all runs: the same over the runs no other process disturbed (under UNDISTURBED_CPU
    seconds of other processes' CPU in the timed part, read from /proc/stat), each run's disturbance, and the
    ratios to the plain loop's undisturbed median."""
    import statistics

    if any("others_cpu_s" not in f for figures in runs.values() for f in figures):
        return  # not Linux: no way to tell
    calm_medians = {}
    print(f"  the same over the undisturbed runs (other processes' CPU under {UNDISTURBED_CPU} s in the timed part):")
    for name, figures in runs.items():
        calm = [f for f in figures if f["others_cpu_s"] < UNDISTURBED_CPU]
        disturbance = ", ".join(f"{f['others_cpu_s']:.2f}" for f in figures)
        steal = max(f["steal_s"] for f in figures)
        if calm:
            wall = statistics.median(f["bytes"] / 1e6 / f["write_s"] for f in calm)
            calm_medians[name] = wall
            figure = f"{wall:6.0f} MB/s wall, {statistics.median(f['write_s'] for f in calm):.2f} s"
        else:
            figure = "    no undisturbed run"
        print(
            f"  {name:<34} {figure} ({len(calm)} of {len(figures)} runs; others' CPU per run {disturbance} s; "
            f"steal at most {steal:.2f} s)"
        )
    for name in writers:
        if name in calm_medians and "plain loop" in calm_medians:
            print(f"  {name} / plain loop, undisturbed: {calm_medians[name] / calm_medians['plain loop']:.0%} wall")


def _writer_detail(figures: list[dict]) -> str:
    """A writer's medians of wall and CPU seconds, the CPU of its second process (counted in MB per CPU-second) and
    the peak RSS of each process."""
    import statistics

    if "peak_rss_mb" not in figures[0]:
        return f"; {statistics.median(f['write_s'] for f in figures):.2f} s, {statistics.median(f['write_cpu_s'] for f in figures):.2f} s CPU"
    return (
        f"; {statistics.median(f['write_s'] for f in figures):.2f} s, "
        f"{statistics.median(f['write_cpu_s'] for f in figures):.2f} s CPU (of which a second process "
        f"{statistics.median(f.get('writer_child_cpu_s', 0.0) for f in figures):.2f} s), peak RSS "
        f"{statistics.median(f['peak_rss_mb'] for f in figures):.0f} MB (second process "
        f"{statistics.median(f.get('child_peak_rss_mb', 0.0) for f in figures):.0f} MB)"
    )


def reset_batches(project_dir: Path) -> None:
    """Forget the written batch files and their run (each writer then writes every line again). Plain sqlite3:
    an older tree's copy (project_for_tree) is marked at a schema this tree's store would refuse."""
    import sqlite3

    with contextlib.closing(sqlite3.connect(project_dir / "project.sqlite")) as conn, conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM batch_requests")
        conn.execute("DELETE FROM batch_jobs")
        conn.execute("DELETE FROM runs")


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            return int(status.read().split("VmRSS:")[1].split()[0]) / 1024
    except (OSError, IndexError):
        return 0.0


CORPUS = Path(__file__).resolve().parents[1] / "core" / "evaluation" / "parsing_corpus.jsonl"


def corpus_replies() -> list[str]:
    """The raw replies of the parser corpus: the styles public models answer in, several languages, refusals."""
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["raw"] for line in lines if line.strip()]


def write_results(request_file: Path, results_file: Path, replies: list[str] | None = None) -> int:
    """A run_batch output answering every line (custom_ids read from the start of each request line), with
    "Answer: [[B]]" or `replies` in turn."""
    replies = replies or ["Answer: [[B]]"]
    count = 0
    with open(request_file, "rb") as source, open(results_file, "w") as out:
        for raw in source:
            custom_id = raw[len(b'{"custom_id":"') :][:64].decode()
            body = {
                "id": f"cmpl-{count}",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL.split(":", 1)[1],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": replies[count % len(replies)]},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 90, "completion_tokens": 4, "total_tokens": 94},
            }
            record = {
                "id": f"vllm-{count}",
                "custom_id": custom_id,
                "response": {"status_code": 200, "body": body},
                "error": None,
            }
            out.write(json.dumps(record) + "\n")
            count += 1
    return count


def write_file(
    project_dir: Path,
    request_file: Path,
    encoder: str,
    tree: str | None = None,
    sink: str = "auto",
    verified_cache: Path | None = None,
) -> dict | None:
    """write_batch_file in a fresh process (its own peak RSS); `encoder` 'pybase64' (the default) or 'stdlib';
    `tree`: an older tree to run instead (PYTHONPATH); `sink`: 'auto' (a second core used when one is idle), 'fork'
    (told one is) or 'here' (told none is); `verified_cache`: the folder of its cache of verified clips (default: a
    new, empty one: every clip hashed; never the user's own). Its RSS while writing is sampled from here, every
    50 ms (no sampling thread in the measured process)."""
    verified_cache = verified_cache or Path(tempfile.mkdtemp(prefix="verified-", dir=request_file.parent))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "SPOKENBENCH_CACHE_DIR": str(verified_cache)}
    if tree:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(project_dir), str(request_file), MODEL, encoder, sink],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    sampled = [0.0]
    if child.stdout.readline().strip() == "writing":
        while child.poll() is None:
            sampled.append(_rss_mb(child.pid))
            time.sleep(0.05)
    out, err = child.communicate()
    if child.returncode != 0:
        print(err)
        return None
    figures = json.loads(out.strip().splitlines()[-1])
    figures["rss_max_while_writing_mb"] = max(max(sampled), figures["rss_before_write_mb"])
    return figures


def compare_base64(rounds: int, project_dir: Path, request_file: Path) -> int:
    """Alternate writes with pybase64 and the standard library's base64; print each and the medians."""
    import statistics

    results: dict[str, list[dict]] = {"pybase64": [], "stdlib": []}
    for n in range(rounds):
        for encoder in ("pybase64", "stdlib") if n % 2 == 0 else ("stdlib", "pybase64"):
            figures = write_file(project_dir, request_file, encoder)
            if figures is None:
                return 1
            results[encoder].append(figures)
            print(
                f"  {encoder:8s} {figures['bytes'] / 1e6 / figures['write_s']:6.0f} MB/s wall, "
                f"{figures['bytes'] / 1e6 / figures['write_cpu_s']:6.0f} MB per CPU-second, "
                f"{figures['write_s']:.1f} s ({figures['write_cpu_s']:.1f} s CPU), peak RSS {figures['peak_rss_mb']:.0f} MB, "
                f"load {os.getloadavg()[0]:.1f}"
            )
    for encoder, runs in results.items():
        wall = statistics.median(f["bytes"] / 1e6 / f["write_s"] for f in runs)
        cpu = statistics.median(f["bytes"] / 1e6 / f["write_cpu_s"] for f in runs)
        rss = statistics.median(f["peak_rss_mb"] for f in runs)
        print(
            f"median of {len(runs)} ({encoder}): {wall:.0f} MB/s wall (target >= {TARGET_MB_S:.0f}), {cpu:.0f} MB per "
            f"CPU-second, peak RSS {rss:.0f} MB (target <= {TARGET_RSS_MB:.0f}); prepare "
            f"{statistics.median(f['prepare_s'] for f in runs):.1f} s"
        )
    return 0


def collect(
    project_dir: Path, request_file: Path, results_file: Path, requests: int, varied: bool, rounds: int
) -> None:
    """Import the results `rounds` times, each into the project as it was before importing; print each and the
    median (wall and CPU seconds, load average)."""
    import shutil
    import statistics

    from spokenbench.core.evaluation.batch_results import import_results
    from spokenbench.core.store import opened

    count = write_results(request_file, results_file, corpus_replies() if varied else None)
    request_file.unlink()
    replies = "varied replies (the parser corpus's)" if varied else 'identical replies ("Answer: [[B]]")'
    with opened(project_dir) as project:
        database = project.db_path
        project.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the whole project in its one file
    before = results_file.with_name("before-import.sqlite")
    shutil.copyfile(database, before)
    measured = []
    for round_ in range(rounds):
        if round_:
            shutil.copyfile(before, database)
        with opened(project_dir) as project:
            cpu, started = time.process_time(), time.perf_counter()
            summary = import_results(project, results_file)
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert summary.answered == count == requests, summary
        load = os.getloadavg()[0]
        measured.append((elapsed, cpu, load))
        print(
            f"collect: {count:,} results validated, parsed and stored in {elapsed:.1f} s (target <= {TARGET_COLLECT_S:.0f}) "
            f"{'OK' if elapsed <= TARGET_COLLECT_S else 'ABOVE TARGET'}; {cpu:.1f} s of CPU; {replies}; "
            f"load {load:.1f} on {os.cpu_count()} CPU(s)"
        )
    if rounds > 1:
        wall, cpu, load = (statistics.median(figures) for figures in zip(*measured))
        print(f"collect, median of {rounds}: {wall:.1f} s, {cpu:.1f} s of CPU, load {load:.1f}")


SCHEMA_OF_TREE = (
    "try:\n    from spokenbench.core.store.migrations import SCHEMA_VERSION\n"
    "except ImportError:\n    from spokenbench.core.migrations import SCHEMA_VERSION\n"
    "print(SCHEMA_VERSION)"
)
# Migrations after 12 that change nothing a dry run or the batch writer reads in this benchmark's project: 13 only moved
# clip_screening's change counting into its writers; 14 hides the items of imports still being copied (the
# project has none, so an older tree reading `items` itself sees the same rows); 15 adds batch_jobs columns no plan reads;
# 16 adds transcripts' edit counts and their triggers (the project has no transcripts; no plan reads them); 17 leaves
# batch files' rows out of the request-key index (an older tree's rows get the default: indexed, as it wrote them)
PLANNING_NEUTRAL_MIGRATIONS = {13, 14, 15, 16, 17, 18}


def project_for_tree(project_dir: Path, tree: str) -> Path:
    """The project as an older tree can open it: a tree that knows fewer migrations refuses a newer schema, so it
    gets a copy of the database marked at its own schema (the audio shared by a link) when the migrations it
    lacks change nothing a plan reads (PLANNING_NEUTRAL_MIGRATIONS); otherwise the run fails with the tree's
    own message."""
    import shutil
    import sqlite3

    env = {**os.environ, "PYTHONPATH": tree + os.pathsep + os.environ.get("PYTHONPATH", "")}
    known = int(
        subprocess.run(
            [sys.executable, "-c", SCHEMA_OF_TREE], env=env, capture_output=True, text=True, check=True
        ).stdout
    )
    with sqlite3.connect(project_dir / "project.sqlite") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        current = conn.execute("PRAGMA user_version").fetchone()[0]
    if known >= current or not set(range(known + 1, current + 1)) <= PLANNING_NEUTRAL_MIGRATIONS:
        return project_dir
    copy = project_dir.with_name(f"{project_dir.name}-schema{known}")
    if not copy.exists():
        copy.mkdir()
        (copy / "audio").symlink_to(project_dir / "audio")
        shutil.copyfile(project_dir / "project.sqlite", copy / "project.sqlite")
        with sqlite3.connect(copy / "project.sqlite") as conn:
            conn.execute(f"PRAGMA user_version = {known}")
    return copy


def compare_dry_runs(rounds: int, project_dir: Path, baselines: list[str], orders: str | None = None) -> int:
    """`spokenbench evaluate --dry-run` (plan, prompts, request keys, cache lookups, cost) as whole processes,
    this tree and each `baselines` tree (PYTHONPATH) in turn, the order of the trees reversed every other round;
    wall and CPU medians, and every output must be the same text (issue 28: >= 3x faster than ccf8dc9)."""
    import statistics

    options = ["--model", MODEL, "--base-url", "http://127.0.0.1:9/v1", "--mode", "audio", "--prompt", "standard"]
    options += ["--dry-run"] + (["--orders", orders] if orders else [])
    trees = {"this tree": None} | {Path(tree).name or tree: tree for tree in baselines}
    projects = {name: project_for_tree(project_dir, tree) if tree else project_dir for name, tree in trees.items()}
    wall: dict[str, list[float]] = {name: [] for name in trees}
    cpu: dict[str, list[float]] = {name: [] for name in trees}
    outputs = {}
    for round_ in range(rounds):
        for name in list(trees) if round_ % 2 == 0 else list(reversed(trees)):
            env = dict(os.environ)
            if trees[name]:
                env["PYTHONPATH"] = trees[name] + os.pathsep + env.get("PYTHONPATH", "")
            argv = [sys.executable, "-m", "spokenbench.core.cli.main", "evaluate", str(projects[name]), *options]
            before = os.times()
            started = time.perf_counter()
            done = subprocess.run(argv, env=env, capture_output=True, text=True)
            wall[name].append(time.perf_counter() - started)
            after = os.times()
            cpu[name].append(
                after.children_user + after.children_system - before.children_user - before.children_system
            )
            if done.returncode != 0:
                print(f"{name}: {done.stderr}")
                return 1
            outputs[name] = done.stdout.replace(str(projects[name]), str(project_dir))
    print(
        f"evaluate --dry-run{' --orders ' + orders if orders else ''}, {rounds} rounds of the trees in turn, medians; "
        f"load average {os.getloadavg()[0]:.1f}:"
    )
    for name in trees:
        print(
            f"  {name:<24} {statistics.median(wall[name]):6.2f} s wall {statistics.median(cpu[name]):6.2f} s CPU   "
            f"(wall: {', '.join(f'{t:.2f}' for t in wall[name])})"
        )
    for name in list(trees)[1:]:
        assert outputs[name] == outputs["this tree"], f"{name} prints a different plan"
        print(
            f"  {name} / this tree: {statistics.median(wall[name]) / statistics.median(wall['this tree']):.2f}x "
            f"wall, {statistics.median(cpu[name]) / statistics.median(cpu['this tree']):.2f}x CPU "
            "(target >= 3x against ccf8dc9; the same output)"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100_800)
    parser.add_argument("--audio-seconds", type=float, default=1.0)
    parser.add_argument("--keep", action="store_true", help="keep the project and files (printed)")
    parser.add_argument(
        "--compare-base64",
        type=int,
        default=0,
        metavar="N",
        help="write the file N times with pybase64 and N times with the standard library's base64, alternated; "
        "print the medians (no import)",
    )
    parser.add_argument(
        "--compare-plain",
        type=int,
        default=0,
        metavar="N",
        help="write the file N times and run the plain pybase64 loop N times (and --baseline's writer), in turn; "
        "print the medians and ratios (no import)",
    )
    parser.add_argument("--only", choices=("all", "import"), default="all", help="import: time only the import")
    parser.add_argument(
        "--dry-runs",
        type=int,
        default=0,
        metavar="N",
        help="time `evaluate --dry-run` N times (against --baseline too, alternately); nothing else",
    )
    parser.add_argument(
        "--sinks",
        default="auto",
        help="with --compare-plain: the writer as it decides (auto), told a core is free (fork: a second process; an "
        "older tree's reader thread or forked sink) or that none is (here: one core, one thread); a comma-separated list measures "
        "each, in turn",
    )
    parser.add_argument(
        "--baseline",
        action="append",
        default=[],
        help="a folder holding an older tree as spokenbench/core (--dry-runs: repeat for several trees; "
        "--compare-plain: the first)",
    )
    parser.add_argument("--dry-run-orders", help="--orders for the dry runs (default: what was assembled)")
    parser.add_argument(
        "--project",
        type=Path,
        help="--dry-runs only: a project this benchmark built before (--keep) with the same --requests, used "
        "instead of building one (it is not changed)",
    )
    parser.add_argument("--varied-replies", action="store_true", help="answer with the parser corpus's replies")
    parser.add_argument("--import-rounds", type=int, default=1, metavar="N", help="import N times; print the median")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-batches-"))
    project_dir, request_file, results_file = folder / "project", folder / "requests.jsonl", folder / "results.jsonl"
    try:
        if args.project and args.dry_runs:
            return compare_dry_runs(args.dry_runs, args.project, args.baseline, args.dry_run_orders)
        started = time.perf_counter()
        build_project(project_dir, args.requests, args.audio_seconds)
        print(
            f"project: {args.requests:,} planned requests, {args.audio_seconds:g} s audio each, built in {time.perf_counter() - started:.1f} s"
        )
        if args.dry_runs:
            return compare_dry_runs(args.dry_runs, project_dir, args.baseline, args.dry_run_orders)
        if args.compare_plain:
            sinks = tuple(args.sinks.split(","))
            return compare_plain(args.compare_plain, project_dir, request_file, (args.baseline or [None])[0], sinks)
        if args.compare_base64:
            return compare_base64(args.compare_base64, project_dir, request_file)
        if args.only == "import":  # the file written as below, in a process of its own, not measured
            if write_file(project_dir, request_file, "pybase64") is None:
                return 1
            collect(project_dir, request_file, results_file, args.requests, args.varied_replies, args.import_rounds)
            return 0
        figures = write_file(project_dir, request_file, "pybase64")
        if figures is None:
            return 1
        rate = figures["bytes"] / 1e6 / figures["write_s"]
        cpu_rate = figures["bytes"] / 1e6 / figures["write_cpu_s"]
        print(
            f"prepare_evaluation: {figures['prepare_s']:.1f} s, peak RSS {figures['peak_prepare_mb']:.0f} MB "
            "(the plan, as for an online run)"
        )
        print(
            f"batch file: {figures['lines']:,} lines, {figures['bytes'] / 1e9:.2f} GB in {figures['write_s']:.1f} s = "
            f"{rate:.0f} MB/s (target >= {TARGET_MB_S:.0f}) {'OK' if rate >= TARGET_MB_S else 'BELOW TARGET'}; "
            f"{figures['write_cpu_s']:.1f} s of CPU = {cpu_rate:.0f} MB per CPU-second (what an idle core would give)"
        )
        print(f"CPU: {figures['write_cpu_s'] / (figures['bytes'] / 1e9):.2f} CPU-seconds per GB written")
        grown = figures["rss_max_while_writing_mb"] - figures["rss_before_write_mb"]
        print(
            f"RSS while writing: {figures['rss_before_write_mb']:.0f} MB before, at most "
            f"{figures['rss_max_while_writing_mb']:.0f} MB (+{grown:.0f} MB: the writing streams)"
        )
        print(
            f"peak RSS of the process: {figures['peak_rss_mb']:.0f} MB (target <= {TARGET_RSS_MB:.0f}) "
            f"{'OK' if figures['peak_rss_mb'] <= TARGET_RSS_MB else 'ABOVE TARGET'}"
        )
        print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPU(s)")
        collect(project_dir, request_file, results_file, args.requests, args.varied_replies, args.import_rounds)
    finally:
        if args.keep:
            print(f"kept in {folder}")
        else:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
