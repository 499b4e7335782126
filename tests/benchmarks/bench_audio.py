"""Audio assembly benchmark (issues 4 and 13). Run by hand: `python tests/benchmarks/bench_audio.py [--skip-demo]`.

Measures, on 200 conditions of about 40 s each built from espeak-ng clips (numpy/BLAS on one core):
1. plain assembly (decode, concatenate with pauses, encode) vs the reference package's pydub-based
   `biasinear.utils.concat_audio` on identical inputs, in the same run;
2. assembly with loudness matching and resampling (22.05 kHz -> 16 kHz), as a real-time factor, with the
   prepared-clip cache of `assemble_wav_bytes` (now) and without it (before issue 13), side by side;
3. speed perturbation with pitch preserved (WSOLA), as a real-time factor;
4. the project pipeline (clips read from the store, chunked at 30 s, written to disk): before issue 13 (one
   fsync per file and per folder, one input at a time) and now (inputs built on RENDER_THREADS, files made
   durable in groups, one transaction per group), alternating; fsync calls counted; its peak memory, and what
   that means for BiasInEar's 11,200 inputs;
5. `spokenbench assemble DEMO --orders original,reversed,order-backward,token-backward` as a whole process on
   copies of the demo project (960 inputs, 4 h of audio), before vs now alternating: wall time, x real time
   (target >= 3,000x), CPU time, fsync calls, the job writer's transactions and the 1-minute load average at
   the start of each pass (both resample through scipy.signal's resample_poly, imported on first use); the stored
   inputs must be identical. On a shared machine CPU time is the steadier figure: wall time follows the other users' load.
Figures are medians of repeated passes; the machine is shared, so read ratios rather than absolutes."""

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"  # one core, as the issue asks

import argparse
import asyncio
import json
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections import OrderedDict
from pathlib import Path

import numpy as np

from spokenbench.core.audio import assembly, dsp
from spokenbench.core.audio.assembly import (
    SEGMENT_CACHE_BYTES,
    AssemblyJob,
    AssemblyReport,
    AssemblySettings,
    ClipRef,
    assemble_wav_bytes,
    chunk_bounds,
    plan_assembly,
    prepare_segment,
    render,
    run_assembly,
)
from spokenbench.core.audio.io import AudioError, decode_audio, encode_audio
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import SynthesisRequest, get_backend
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.jobs.batch_writer import Write
from spokenbench.core.jobs.loop import JobLoop, UnitClaims
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.store import Project

ITEMS = 20
CONDITIONS = 200
REPEATS = 3
QUESTION = (
    "In a study of {n} coastal towns, researchers compared the average annual rainfall, the number of sunny days, "
    "the mean summer temperature and the distance to the nearest river delta. Considering all of these "
    "measurements together, which of the following statements best describes the relationship they found?"
)
OPTIONS = [
    "Rainfall rose steadily with distance from the delta in every town they visited",
    "Sunny days and summer temperature moved together, but rainfall did not follow either",
    "None of the measurements showed any consistent pattern across the towns in the sample",
    "Towns nearest the delta had the most rain and the fewest sunny days of all the towns",
]


def median_time(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --------------------------------------------------------------------------------------------------
# The project pipeline as it was before issue 13, for side-by-side figures: one input at a time, each file
# fsynced with its folder on its own (AudioStore.put_bytes), rows committed as they come.


class SegmentCacheBefore:
    def __init__(self, project: Project, settings: AssemblySettings, max_bytes: int = SEGMENT_CACHE_BYTES):
        self.project, self.settings, self.max_bytes = project, settings, max_bytes
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._bytes = 0

    def get(self, clip: ClipRef, what: str) -> np.ndarray:
        cached = self._cache.get(clip.sha256)
        if cached is not None:
            self._cache.move_to_end(clip.sha256)
            return cached
        try:
            data = self.project.audio.read_bytes(clip.sha256, clip.audio_format)
        except SpokenBenchError as error:
            raise AudioError(f"{what}: {error}") from None
        audio = decode_audio(data, what)
        samples = prepare_segment(audio.samples, audio.rate, self.settings)
        self._cache[clip.sha256] = samples
        self._bytes += samples.nbytes
        while self._bytes > self.max_bytes and len(self._cache) > 1:
            self._bytes -= self._cache.popitem(last=False)[1].nbytes
        return samples


def run_assembly_before(
    project: Project,
    plan,
    chunk_seconds=(),
    settings: AssemblySettings = AssemblySettings(),
    progress: Progress | None = None,
    cache_bytes: int = SEGMENT_CACHE_BYTES,
) -> AssemblyReport:
    cache = SegmentCacheBefore(project, settings, cache_bytes)
    report = AssemblyReport()

    async def assemble(job: AssemblyJob) -> Write | None:
        try:
            final, cuts, clean, limited = render(job, cache, settings)
        except AudioError as error:
            report.skipped.append(f"{job.label}: {error}")
            return None
        chunks = []
        for max_seconds in chunk_seconds:
            bounds = chunk_bounds(clean, settings.sample_rate, cuts, max_seconds, job.label)
            for position, (a, b) in enumerate(zip(bounds, bounds[1:])):
                chunk = encode_audio(final[a:b], settings.sample_rate, settings.audio_format)
                chunks.append(
                    (
                        max_seconds,
                        position,
                        project.audio.put_bytes(chunk, settings.audio_format),
                        (b - a) / settings.sample_rate,
                    )
                )
        sha = project.audio.put_bytes(
            encode_audio(final, settings.sample_rate, settings.audio_format), settings.audio_format
        )
        duration = len(final) / settings.sample_rate
        report.assembled += 1
        report.limited_inputs += int(limited > 0)
        report.seconds_of_audio += duration
        return lambda conn: assembly._store(conn, job, sha, duration, limited, chunks, settings)

    async def run_all(job_progress: Progress) -> None:
        loop = JobLoop(
            project.db_path,
            job_progress,
            concurrency=1,
            describe=lambda job: job.label,
            claims=UnitClaims("assemble", key=assembly._claim_key, already_done=assembly._already_assembled),
        )
        await loop.run(plan.jobs, assemble)

    if plan.jobs:
        with tracked_job(project.path, "assemble", "bench", progress, total=len(plan.jobs)) as job_progress:
            asyncio.run(run_all(job_progress))
    return report


class FsyncCounter:
    """Counts os.fsync calls (files and folders) while active."""

    def __enter__(self):
        self.count, self.real = 0, os.fsync

        def counted(fd):
            self.count += 1
            return self.real(fd)

        os.fsync = counted
        return self

    def __exit__(self, *exc):
        os.fsync = self.real


def uncached_segment(data: bytes, what: str, settings: AssemblySettings, match_levels: bool) -> np.ndarray:
    """assemble_wav_bytes' preparation before issue 13: every clip decoded and resampled on every call."""
    audio = decode_audio(data, what)
    return prepare_segment(audio.samples, audio.rate, settings, match_levels)


def make_clips():
    """WAV bytes from espeak-ng: per item a question and four options; shared labels A-D."""
    backend = get_backend("espeak")
    voice = backend.voice("espeak-male")

    def speak(text: str) -> bytes:
        return backend.speak_sync(SynthesisRequest(text, "en", "american", voice))

    labels = [speak(letter) for letter in "ABCD"]
    items = []
    for n in range(ITEMS):
        items.append((speak(QUESTION.format(n=12 + n)), [speak(f"{o}, case {n}.") for o in OPTIONS]))
    return items, labels


def conditions(items):
    """200 (question, ordered options) inputs: each item under ten option permutations."""
    orders = ["ABCD", "DCBA", "BCDA", "CDAB", "DABC", "ACBD", "BADC", "CADB", "DBAC", "ABDC"]
    out = []
    for n in range(CONDITIONS):
        question, options = items[n % ITEMS]
        order = orders[(n // ITEMS) % len(orders)]
        out.append((question, [options["ABCD".index(letter)] for letter in order]))
    return out


def main(skip_demo: bool = False) -> None:
    print("building espeak-ng clips ...", flush=True)
    items, labels = make_clips()
    inputs = conditions(items)
    rate = decode_audio(inputs[0][0], "q").rate
    same_rate = AssemblySettings(sample_rate=rate, pause_s=0.5)
    resampled = AssemblySettings(sample_rate=16_000, pause_s=0.5)
    sample = decode_audio(assemble_wav_bytes(*inputs[0], labels, resampled), "sample")
    audio_seconds = sum(
        decode_audio(assemble_wav_bytes(q, o, labels, same_rate, False), "x").duration for q, o in inputs
    )
    print(
        f"{CONDITIONS} conditions, {audio_seconds / CONDITIONS:.1f} s each on average ({audio_seconds / 60:.0f} min of audio)"
    )

    ours_plain = median_time(
        lambda: [assemble_wav_bytes(q, o, labels, same_rate, match_levels=False) for q, o in inputs]
    )
    try:
        from biasinear.utils import concat_audio

        reference = median_time(lambda: [concat_audio(q, o, pause_ms=500, labels=labels) for q, o in inputs])
    except ImportError as error:
        reference = None
        print(f"reference package unavailable ({error}); install biasinear and pydub to compare")
    print("\n1. plain assembly (decode, concatenate, encode), 200 conditions")
    print(f"   ours:            {ours_plain:.3f} s  ({audio_seconds / ours_plain:,.0f}x real time)")
    if reference is not None:
        print(f"   biasinear/pydub: {reference:.3f} s  ({audio_seconds / reference:,.0f}x real time)")
        print(f"   ratio (reference time / ours): {reference / ours_plain:.2f}x  (target >= 1)")

    cached = assembly._prepared_clips.get
    full = {}
    for _ in range(REPEATS):  # alternating: before (no cache), now (cache, cleared first so each pass fills it)
        for name in ("before (no clip cache)", "now (clip cache)"):
            assembly._prepared_clips.clear()
            assembly._prepared_clips.get = uncached_segment if name.startswith("before") else cached
            start = time.perf_counter()
            for q, o in inputs:
                assemble_wav_bytes(q, o, labels, resampled, match_levels=True)
            full.setdefault(name, []).append(time.perf_counter() - start)
    assembly._prepared_clips.get = cached
    print("\n2. with loudness matching and resampling 22.05 -> 16 kHz (assemble_wav_bytes), 200 conditions")
    for name, times in full.items():
        seconds = statistics.median(times)
        print(f"   {name:<24} {seconds:.3f} s -> {audio_seconds / seconds:,.0f}x real time  (target >= 2,000x)")
    before, now = (statistics.median(times) for times in full.values())
    print(f"   ratio before / now: {before / now:.2f}x")

    speeds = {}
    for speed in (0.75, 1.25):
        seconds = median_time(lambda speed=speed: dsp.time_stretch(sample.samples, sample.rate, speed), repeats=5)
        speeds[speed] = sample.duration / seconds
    print(f"\n3. speed perturbation, pitch preserved (WSOLA), on a {sample.duration:.0f} s input")
    for speed, factor in speeds.items():
        print(f"   x{speed}: {factor:,.0f}x real time  (target >= 50x)")

    with tempfile.TemporaryDirectory() as folder:
        project = Project.create(Path(folder) / "bench")
        rows = [
            {
                "id": f"b{n}",
                "language": "en",
                "question": QUESTION.format(n=12 + n),
                "options": [f"{o}, case {n}." for o in OPTIONS],
                "answer": "A",
            }
            for n in range(ITEMS)
        ]
        table = Path(folder) / "items.jsonl"
        table.write_text("\n".join(__import__("json").dumps(r) for r in rows))
        import_files(project, [table], "mcq", ImportOptions(source="bench"))
        backend = get_backend("espeak")
        plan = plan_synthesis(project.conn, backend, accents=["american"])
        asyncio.run(run_synthesis(project, plan))
        orders = ["original", "reversed", "order-backward", "token-backward", "BCDA"]
        runs = {"before": [], "now": []}
        for attempt in range(REPEATS):
            for name, run in (("before", run_assembly_before), ("now", run_assembly)):
                settings = AssemblySettings(sample_rate=16_000, pause_s=0.5 + attempt / 1000 + (name == "now") / 10_000)
                assembly_plan = plan_assembly(project.conn, orders, settings=settings)  # 20 items x 2 voices x 5
                with FsyncCounter() as fsyncs:
                    start = time.perf_counter()
                    report = run(project, assembly_plan, [30.0], settings)
                    elapsed = time.perf_counter() - start
                runs[name].append((elapsed, fsyncs.count, report))
        print(
            f"\n4. project pipeline: {report.assembled} inputs ({report.seconds_of_audio / report.assembled:.1f} s each), "
            f"read from the store, chunked at 30 s, written to disk (median of {REPEATS}, alternating)"
        )
        medians = {}
        for name, results in runs.items():
            elapsed = medians[name] = statistics.median(r[0] for r in results)
            fsync_count = statistics.median(r[1] for r in results)
            audio = results[0][2].seconds_of_audio
            per_input = elapsed / results[0][2].assembled
            print(
                f"   {name:<7} {elapsed:.2f} s -> {per_input * 1000:.1f} ms per input, {audio / elapsed:,.0f}x real time, "
                f"{fsync_count:,.0f} fsync calls; BiasInEar's 11,200 inputs: {11_200 * per_input / 60:.1f} min"
            )
        print(f"   ratio before / now: {medians['before'] / medians['now']:.2f}x")
        cap = 32 * 2**20  # a small clip cache, so that 200 inputs overflow it and any growth would show
        for name, run in (("before", run_assembly_before), ("now", run_assembly)):
            peaks = {}
            for count in (20, 200):  # memory must not grow with the number of inputs: they are streamed to disk
                pause = 0.4 + count / 1000 + (name == "now") / 10_000  # new recipes, so all rebuild
                settings = AssemblySettings(sample_rate=16_000, pause_s=pause)
                plan = plan_assembly(project.conn, orders, settings=settings)
                plan.jobs = plan.jobs[:count]
                tracemalloc.start()
                run(project, plan, [30.0], settings, cache_bytes=cap)
                peaks[count] = tracemalloc.get_traced_memory()[1] / 2**20
                tracemalloc.stop()
            print(
                f"   {name:<7} peak traced memory with a 32 MiB clip cache: {peaks[20]:.0f} MiB for 20 inputs, "
                f"{peaks[200]:.0f} MiB for 200 (default cache cap 256 MiB; now also up to "
                f"{assembly.BYTES_IN_FLIGHT / 2**20:.0f} MiB of built inputs waiting to be stored)"
            )
        project.close()
    if not skip_demo:
        bench_demo()


DEMO_ORDERS = "original,reversed,order-backward,token-backward"
CLI_RUN = """
import contextlib, itertools, json, os, sys, threading
sys.path.insert(0, {bench_dir!r})
counts = {{"fsync": itertools.count(), "writer_commits": itertools.count()}}
real_fsync = os.fsync
def fsync(fd):
    next(counts["fsync"])
    return real_fsync(fd)
os.fsync = fsync
from spokenbench.core.store import database
real_transaction = database.transaction
@contextlib.contextmanager
def transaction(conn):
    with real_transaction(conn) as inside:
        yield inside
    if threading.current_thread().name == "spokenbench-job-writer":
        next(counts["writer_commits"])
database.transaction = transaction
if sys.argv[1] == "before":
    import bench_audio
    from spokenbench.core.audio import assembly
    assembly.run_assembly = bench_audio.run_assembly_before
from spokenbench.core.cli.main import main
code = main(["assemble", sys.argv[2], "--orders", {orders!r}, "--json"])
sys.stderr.write(json.dumps({{name: next(counter) for name, counter in counts.items()}}) + "\\n")
sys.exit(code)
"""


def bench_demo() -> None:
    """5. The issue's figure: the demo's four orders, end to end, as a whole `spokenbench assemble` process."""
    with tempfile.TemporaryDirectory() as folder:
        demo = Path(folder) / "demo"
        print("\nbuilding the demo project (spokenbench demo, not timed) ...", flush=True)
        subprocess.run(
            [sys.executable, "-m", "spokenbench.core.cli.main", "demo", str(demo)], check=True, capture_output=True
        )
        code = CLI_RUN.format(bench_dir=str(Path(__file__).parent), orders=DEMO_ORDERS)
        runs: dict[str, list] = {"before": [], "now": []}
        stored = {}
        for attempt in range(REPEATS):
            for name in runs:
                copy = Path(folder) / f"{name}-{attempt}"
                shutil.copytree(demo, copy)
                subprocess.run(["sync"], check=True)  # start each pass with nothing dirty in the page cache
                load = os.getloadavg()[0]  # the machine is shared: the 1-minute load average beside each pass
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-c", code, name, str(copy)], capture_output=True, text=True)
                elapsed = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
                if done.returncode != 0:
                    raise SystemExit(f"{name} failed: {done.stderr[-2000:]}")
                result = json.loads(done.stdout)
                counts = json.loads(done.stderr.strip().splitlines()[-1])
                runs[name].append(
                    (elapsed, result["seconds_of_audio"], counts["fsync"], counts["writer_commits"], cpu, load)
                )
                with sqlite3.connect(copy / "project.sqlite") as conn:
                    stored[name] = conn.execute(
                        "SELECT item_id, condition_key, recipe_sha256, sha256 FROM assembled_inputs ORDER BY 1, 2"
                    ).fetchall()
                shutil.rmtree(copy)
        assert stored["before"] == stored["now"], "the stored inputs (and their audio's sha256) must not change"
        print(
            f"5. spokenbench assemble DEMO --orders {DEMO_ORDERS}: {len(stored['now'])} inputs, "
            f"{runs['now'][0][1] / 3600:.1f} h of audio, whole process (median of {REPEATS}, alternating; "
            "identical inputs stored)"
        )
        medians = {}
        for name, results in runs.items():
            elapsed = medians[name] = statistics.median(r[0] for r in results)
            print(
                f"   {name:<7} {elapsed:.2f} s -> {results[0][1] / elapsed:,.0f}x real time (target >= 3,000x); "
                f"fsync calls {statistics.median(r[2] for r in results):,.0f}, "
                f"job writer transactions {statistics.median(r[3] for r in results):,.0f}, "
                f"CPU (user + sys) {statistics.median(r[4] for r in results):.2f} s, load average "
                f"{statistics.median(r[5] for r in results):.1f}  (passes: {', '.join(f'{r[0]:.2f}' for r in results)})"
            )
        print(f"   ratio before / now: {medians['before'] / medians['now']:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-demo", action="store_true", help="leave out section 5 (builds the demo: ~30 s)")
    parser.add_argument("--only-demo", action="store_true", help="run section 5 only")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    arguments = parser.parse_args()
    REPEATS = arguments.repeats
    if arguments.only_demo:
        bench_demo()
    else:
        main(arguments.skip_demo)
