"""Audio assembly benchmark (issue 4). Run by hand: `python tests/benchmarks/bench_audio.py`.

Measures, on 200 conditions of about 40 s each built from espeak-ng clips, on one core:
1. plain assembly (decode, concatenate with pauses, encode) vs the reference package's pydub-based
   `biasinear.utils.concat_audio` on identical inputs, in the same run;
2. assembly with loudness matching and resampling (22.05 kHz -> 16 kHz), as a real-time factor;
3. speed perturbation with pitch preserved (WSOLA), as a real-time factor;
4. the project pipeline end to end (clips read from the store, chunked at 30 s, written to disk), its
   peak memory, and what that means for BiasInEar's 11,200 inputs.
Figures are medians of repeated passes; the machine is shared, so read ratios rather than absolutes."""

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"  # one core, as the issue asks

import asyncio
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from spokenbench.core.audio import dsp
from spokenbench.core.audio.assembly import AssemblySettings, assemble_wav_bytes, plan_assembly, run_assembly
from spokenbench.core.audio.io import decode_audio
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import SynthesisRequest, get_backend
from spokenbench.core.importers import ImportOptions, import_files
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


def main() -> None:
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

    ours_full = median_time(lambda: [assemble_wav_bytes(q, o, labels, resampled, match_levels=True) for q, o in inputs])
    print("\n2. with loudness matching and resampling 22.05 -> 16 kHz")
    print(f"   {ours_full:.3f} s  -> {audio_seconds / ours_full:,.0f}x real time  (target >= 2,000x)")

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
        assembly = plan_assembly(project.conn, orders, settings=resampled)  # 20 items x 2 voices x 5 orders
        start = time.perf_counter()
        report = run_assembly(project, assembly, [30.0], resampled)
        elapsed = time.perf_counter() - start
        per_input = elapsed / report.assembled
        print(
            f"\n4. project pipeline: {report.assembled} inputs ({report.seconds_of_audio / report.assembled:.1f} s each), "
            f"read from the store, chunked at 30 s, written to disk"
        )
        print(
            f"   {elapsed:.2f} s -> {per_input * 1000:.1f} ms per input, {report.seconds_of_audio / elapsed:,.0f}x real time"
        )
        print(f"   BiasInEar's 11,200 inputs at this rate: {11_200 * per_input / 60:.1f} min")
        cap = 32 * 2**20  # a small clip cache, so that 200 inputs overflow it and any growth would show
        peaks = {}
        for count in (20, 200):  # memory must not grow with the number of inputs: they are streamed to disk
            settings = AssemblySettings(sample_rate=16_000, pause_s=0.4 + count / 1000)  # new recipes, so all rebuild
            plan = plan_assembly(project.conn, orders, settings=settings)
            plan.jobs = plan.jobs[:count]
            tracemalloc.start()
            run_assembly(project, plan, [30.0], settings, cache_bytes=cap)
            peaks[count] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        print(
            f"   peak traced memory with a 32 MiB clip cache: {peaks[20]:.0f} MiB for 20 inputs, "
            f"{peaks[200]:.0f} MiB for 200 (default cache cap 256 MiB)"
        )
        project.close()


if __name__ == "__main__":
    main()
