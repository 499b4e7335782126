"""A local engine on every core (issue 28 item 1): clips rendered in spawned worker processes, their files made
durable in groups and their rows committed in batches. The pooled path must store exactly what the one-at-a-time
path stores, stop quickly and cleanly on a cancel or a kill, and leave no process behind."""

import asyncio
import hashlib
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from audio_support import MINI_ITEMS, LocalToneBackend, ToneBackend
from support import write_jsonl

from spokenbench.core.audio import clip_workers
from spokenbench.core.audio.clip_workers import ClipWorkers
from spokenbench.core.audio.io import Audio, as_stored, decode_audio, encode_audio, encode_wav
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts.base import SynthesisRequest, VoiceSpec
from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.processes import usable_cores
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.store import Project

CLIP_COLUMNS = (
    "coalesce(item_id, 0), part, text, language, accent, voice, speaker_gender, neutralization, backend, model, "
    "prompt, cache_key, sha256, audio_format, duration_s, sample_rate, speech_level_db, status, failure"
)
SILENT_ITEM = {
    "id": "q3",
    "language": "en",
    "question": "SILENT question?",
    "options": ["One", "Two", "Three", "Four"],
    "answer": "A",
}
SLOW_ITEM = {  # its question renders last: the workers finish out of the plan's order
    "id": "q4",
    "language": "en",
    "question": "SLOW question, the first one planned?",
    "options": ["One", "Two", "Three", "Four"],
    "answer": "A",
}


def stored_clips(project: Project) -> list[tuple]:
    return sorted((tuple(row) for row in project.conn.execute(f"SELECT {CLIP_COLUMNS} FROM clips")), key=repr)


def in_plan_order(plan) -> list[tuple]:
    """(item id or 0, part, recipe) of the plan's clips in the order one-at-a-time synthesis stores them: a recipe
    when first needed, with every part needing it."""
    groups = {}
    for job in plan.jobs:
        groups.setdefault(job.cache_key, []).append((job.item_id or 0, job.part, job.cache_key))
    return [clip for group in groups.values() for clip in group]


def stored_files(project: Project) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in project.audio.root.glob("*/*.flac")}


def assert_every_good_row_has_its_whole_file(project: Project) -> int:
    rows = project.conn.execute("SELECT sha256, audio_format FROM clips WHERE status = 'ok'").fetchall()
    for sha, audio_format in rows:
        data = project.audio.path_for(sha, audio_format).read_bytes()  # FileNotFoundError if missing
        assert hashlib.sha256(data).hexdigest() == sha, "a stored row refers to a damaged file"
    return len(rows)


def project_with(tmp_path, name: str, items: list[dict]) -> Project:
    project = Project.create(tmp_path / name)
    import_files(project, [write_jsonl(tmp_path / f"{name}.jsonl", items)], "mcq", ImportOptions(source="mini"))
    return project


@pytest.mark.slow
def test_pooled_synthesis_stores_the_rows_and_bytes_of_the_one_at_a_time_path(tmp_path):
    """Same plan, same deterministic engine: the worker processes (grouped files, batched commits) and the path
    that stores each clip on its own store identical rows — failed clips included — and identical files; and though
    the workers finish out of order, the clips' ids follow the plan, as they do one at a time."""
    items = [SLOW_ITEM] + MINI_ITEMS + [SILENT_ITEM]
    with project_with(tmp_path, "serial", items) as serial, project_with(tmp_path, "pooled", items) as pooled:
        one_at_a_time = ToneBackend()
        one_at_a_time.max_concurrency = 1
        plan = plan_synthesis(serial.conn, one_at_a_time)
        serial_report = asyncio.run(run_synthesis(serial, plan))

        local = LocalToneBackend()
        pooled_plan = plan_synthesis(pooled.conn, local)
        with ClipWorkers(local, in_processes=True) as workers:
            assert workers.processes >= 1
            pooled_report = asyncio.run(run_synthesis(pooled, pooled_plan, workers=workers))
        assert multiprocessing.active_children() == []  # the pool is shut down

        assert local.calls == [], "every clip was rendered in a worker process"
        assert serial_report.failed == pooled_report.failed == 4  # its question: two accents, two voices
        assert (pooled_report.synthesized, pooled_report.reused) == (serial_report.synthesized, serial_report.reused)
        assert stored_clips(pooled) == stored_clips(serial)
        by_id = "SELECT coalesce(item_id, 0), part, cache_key FROM clips ORDER BY id"
        assert [tuple(row) for row in pooled.conn.execute(by_id)] == in_plan_order(pooled_plan)
        assert stored_files(pooled) == stored_files(serial) and len(stored_files(serial)) > 40
        failures = [row[-1] for row in stored_clips(pooled) if row[-2] == "failed"]
        assert all("silent" in failure for failure in failures)


@pytest.mark.slow
def test_neutralized_voices_render_first_and_store_what_the_one_at_a_time_path_stores(tmp_path):
    """A neutralized voice's clips are ten times slower (signal processing after synthesis), so they are rendered
    ahead of the plan's order (ClipWorkers.render_ahead): the first calls are theirs. The rows still follow the plan
    and hold, with the files, exactly what one-at-a-time synthesis stores."""
    neutral = VoiceSpec("low-neutral", "male", "signal-approximation")
    voices = ["low", "high", neutral.name]
    with project_with(tmp_path, "serial", MINI_ITEMS) as serial, project_with(tmp_path, "ahead", MINI_ITEMS) as ahead:
        one_at_a_time = ToneBackend()
        one_at_a_time.voices += (neutral,)
        one_at_a_time.max_concurrency = 1
        asyncio.run(run_synthesis(serial, plan_synthesis(serial.conn, one_at_a_time, voices=voices)))

        local = LocalToneBackend()
        local.voices += (neutral,)
        plan = plan_synthesis(ahead.conn, local, voices=voices)
        with ClipWorkers(local, in_processes=False) as workers:  # one thread: chunks run in the order sent
            asyncio.run(run_synthesis(ahead, plan, workers=workers))

        slow = {job.cache_key for job in plan.jobs if job.request.voice == neutral}
        assert 0 < len(slow) < len(plan.jobs) and plan.jobs[0].request.voice != neutral
        assert {call.voice for call in local.calls[: len(slow)]} == {neutral}
        assert neutral not in {call.voice for call in local.calls[len(slow) :]}
        by_id = "SELECT coalesce(item_id, 0), part, cache_key FROM clips ORDER BY id"
        assert [tuple(row) for row in ahead.conn.execute(by_id)] == in_plan_order(plan)
        assert stored_clips(ahead) == stored_clips(serial)
        assert stored_files(ahead) == stored_files(serial)


@pytest.mark.slow
def test_a_pool_let_go_early_has_no_process_left_once_closed(mini_project, monkeypatch):
    """`close_soon` after the synthesis lets the demo build go on while the workers exit; leaving the pool still
    waits for every one of them."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    backend = LocalToneBackend()
    plan = plan_synthesis(mini_project.conn, backend, languages=["en"])
    with ClipWorkers(backend, in_processes=True) as workers:
        report = asyncio.run(run_synthesis(mini_project, plan, workers=workers))
        started = multiprocessing.active_children()
        # one BLAS thread in each worker (they compete with one another), this process's setting untouched
        assert workers.executor.submit(os.getenv, "OPENBLAS_NUM_THREADS").result() == "1"
        assert os.environ["OPENBLAS_NUM_THREADS"] == "3"
        workers.close_soon()
        workers.close_soon()  # once is enough
    assert report.synthesized == len(plan.jobs) and started
    assert multiprocessing.active_children() == [] and not any(process.is_alive() for process in started)


def test_the_workers_check_and_store_exactly_what_the_wav_a_backend_returns_decodes_to():
    """Workers skip the WAV between synthesis and check (`as_stored`): the samples must be those decoding it gives,
    at full scale and beyond it (clipped) too, so the FLAC written from them holds the same bytes."""
    rng = np.random.default_rng(0)
    samples = np.concatenate([rng.uniform(-1.3, 1.3, 5000), [-1.0, 1.0, 0.0, 1 / 32768, -1 / 32768]])
    samples = samples.astype(np.float32)
    decoded = decode_audio(encode_wav(samples, 22_050), "x").samples
    assert np.array_equal(as_stored(samples), decoded)
    assert encode_audio(as_stored(samples), 22_050, "flac") == encode_audio(decoded, 22_050, "flac")


def test_a_small_plan_renders_on_a_thread_of_this_process(mini_project, monkeypatch):
    """Starting processes costs more than a few clips: below MIN_CLIPS_FOR_PROCESSES none is started."""

    def no_processes(*args, **kwargs):
        raise AssertionError("a small plan started worker processes")

    monkeypatch.setattr(clip_workers, "ProcessPoolExecutor", no_processes)
    backend = LocalToneBackend()
    plan = plan_synthesis(mini_project.conn, backend, languages=["en"], voices=["low"], parts=("questions",))
    assert 0 < len(plan.jobs) < clip_workers.MIN_CLIPS_FOR_PROCESSES
    report = asyncio.run(run_synthesis(mini_project, plan))
    assert report.synthesized == len(plan.jobs) == len(backend.calls)
    assert assert_every_good_row_has_its_whole_file(mini_project) == len(plan.jobs)
    assert plan_synthesis(mini_project.conn, backend, languages=["en"], voices=["low"], parts=("questions",)).jobs == []


class GatedToneBackend(LocalToneBackend):
    """Holds a request whose text contains 'GATE' until `gate` is set: its chunk stays out, the others queue."""

    def __init__(self):
        super().__init__()
        self.gate = threading.Event()

    def speak_audio(self, request: SynthesisRequest) -> Audio:
        if "GATE" in request.text:
            assert self.gate.wait(10), "the gate was never opened"
        return super().speak_audio(request)


def test_requests_arriving_one_by_one_travel_in_whole_chunks_while_the_workers_have_work(monkeypatch):
    """Units finishing one by one ask for one clip each; sent as they come, the demo's 1,162 clips took 419
    messages (~0.5 ms of CPU each across both processes). While two chunks per worker are out, requests wait to fill
    a chunk; fewer, and what waits is sent at once, so no worker runs dry — and the last, partial chunk goes when a
    chunk comes back. Every request gets its own clip."""
    sent: list[int] = []
    render_clips = clip_workers.render_clips

    def counted(requests, audio_format, backend=None):
        sent.append(len(requests))
        return render_clips(requests, audio_format, backend)

    monkeypatch.setattr(clip_workers, "render_clips", counted)
    backend = GatedToneBackend()
    voice = backend.default_voices[0]
    texts = ["GATE question?"] + [f"Question number {number}?" for number in range(1, 2 + 3 * clip_workers.CHUNK + 3)]

    async def one_per_turn(workers: ClipWorkers) -> list:
        asked = []
        for text in texts:  # each in its own turn of the event loop, as units finishing one by one ask
            asked.append(
                asyncio.ensure_future(workers.render(SynthesisRequest(text, "en", "american", voice), text, "flac"))
            )
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        backend.gate.set()
        return await asyncio.wait_for(asyncio.gather(*asked), 10)

    with ClipWorkers(backend, in_processes=False) as workers:  # one thread: two chunks out are enough
        clips = asyncio.run(one_per_turn(workers))
    assert sent[:2] == [1, 1], "the first requests went at once, while the worker had little to do"
    assert sent[2:] == [clip_workers.CHUNK] * 3 + [3], "whole chunks, then the rest once a chunk came back"
    here = clip_workers.render_clips(
        [(SynthesisRequest(text, "en", "american", voice), text) for text in texts], "flac", LocalToneBackend()
    )
    assert clips == here


class CrashingToneBackend(LocalToneBackend):
    """Its worker process dies (as one killed for memory would) on a text containing 'CRASH', a moment in; a text
    containing 'HOLD' keeps the other worker busy meanwhile."""

    def speak_audio(self, request: SynthesisRequest) -> Audio:
        if "CRASH" in request.text:
            time.sleep(0.3)
            os._exit(1)
        if "HOLD" in request.text:
            time.sleep(2)
        return super().speak_audio(request)


@pytest.mark.slow
def test_requests_waiting_for_a_chunk_fail_clearly_when_a_worker_dies(monkeypatch):
    """A worker dies while the other renders, four chunks are out and more requests wait for one to come back: every
    request fails with the message naming the stopped worker — those still waiting too, sent to the broken pool —
    and none waits forever."""
    monkeypatch.setattr(clip_workers, "child_start_method", lambda: "fork")
    backend = CrashingToneBackend()
    voice = backend.default_voices[0]
    texts = ["CRASH question?", "HOLD question?"] + [f"Question number {number}?" for number in range(1, 8)]

    async def one_per_turn(workers: ClipWorkers) -> list:
        asked = []
        for text in texts:
            request = SynthesisRequest(text, "en", "american", voice)
            asked.append(asyncio.ensure_future(workers.render(request, text, "flac")))
            await asyncio.sleep(0)
            await asyncio.sleep(0)
        assert workers._waiting, "requests wait for a chunk to come back"
        return await asyncio.wait_for(asyncio.gather(*asked, return_exceptions=True), 10)

    with ClipWorkers(backend, in_processes=True) as workers:
        outcomes = asyncio.run(one_per_turn(workers))
    assert len(outcomes) == len(texts)
    assert all(isinstance(outcome, SpokenBenchError) for outcome in outcomes), outcomes
    assert all("a speech worker process stopped unexpectedly" in str(outcome) for outcome in outcomes)


@pytest.mark.slow
def test_a_cancel_stops_the_workers_at_once_and_keeps_only_whole_clips(tmp_path):
    """Cancelled after the first commit, with many slow clips queued: the job stops within a second, the pool
    is gone, every stored row has its whole file, and a rerun synthesizes exactly the rest."""
    items = [
        {
            "id": f"s{n}",
            "language": "en",
            "question": f"SLOW question number {n}?",
            "options": ["A a", "B b"],
            "answer": "A",
        }
        for n in range(40)
    ]
    with project_with(tmp_path, "slow", items) as project:
        backend = LocalToneBackend()
        plan = plan_synthesis(project.conn, backend, accents=["american"])
        total = len(plan.jobs)
        cancelled_at = []

        def cancel_after_first_commit(done, _total, _message):
            if done >= 1 and not cancelled_at:
                cancelled_at.append(time.monotonic())
                progress.cancel()

        progress = Progress(cancel_after_first_commit)
        with pytest.raises(Cancelled):
            asyncio.run(run_synthesis(project, plan, progress))
        assert time.monotonic() - cancelled_at[0] < 2.0
        assert multiprocessing.active_children() == []
        assert list(project.audio.temp_dir.iterdir()) == []
        stored = assert_every_good_row_has_its_whole_file(project)
        assert 0 < stored < total
        rest = plan_synthesis(project.conn, backend, accents=["american"])
        assert len(rest.jobs) == total - stored
        asyncio.run(run_synthesis(project, rest))
        assert assert_every_good_row_has_its_whole_file(project) == total


def _children(pid: int) -> set[int]:
    children = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                children.update(int(child) for child in handle.read().split())
        except FileNotFoundError:  # a thread that ended since the listing (seen once in CI under load)
            continue
    return children


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def start_demo_build(target):
    """`spokenbench demo TARGET` in a process of its own, once it has stored 200 clips (a few groups committed:
    well into its speech), with the pids of its worker processes."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys; from spokenbench.core.cli.main import main; sys.exit(main())", "demo"]
        + [str(target)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    staging = target.with_name(f".{target.name}.building-{process.pid}")
    deadline = time.monotonic() + 120
    stored = 0
    while stored < 200:
        assert process.poll() is None and time.monotonic() < deadline, process.stderr.read()
        time.sleep(0.02)
        try:
            with sqlite3.connect(f"file:{staging / 'project.sqlite'}?mode=ro", uri=True, timeout=0.1) as conn:
                stored = conn.execute("SELECT count(*) FROM clips WHERE status = 'ok'").fetchone()[0]
        except sqlite3.Error:  # not created yet, or no clips table yet
            continue
    return process, staging, _children(process.pid)


def assert_gone(pids: set[int]) -> None:
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids), "a worker outlived the build"


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the worker processes")
def test_sigkill_during_the_demo_build_leaves_a_sound_project_and_no_workers(tmp_path, cli):
    """`spokenbench demo` killed midway through its speech: its workers exit, the unfinished build's project
    holds no row whose file is missing or partial (`spokenbench check` is clean), `synthesize` resumes it, and
    building the demo again completes."""
    target = tmp_path / "demo"
    process, staging, workers = start_demo_build(target)
    assert len(workers) >= 1
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    process.stderr.close()
    assert_gone(workers)

    checked = cli("check", str(staging))
    assert checked.code == 0 and "0 missing, 0 damaged" in checked.out, checked.out + checked.err
    with Project.open(staging) as project:  # reopening removes the killed process's temp files
        assert list(project.audio.temp_dir.iterdir()) == []
        before = assert_every_good_row_has_its_whole_file(project)
    assert before >= 200
    resumed = cli("synthesize", str(staging), "--tts", "espeak")
    assert resumed.code == 0, resumed.err
    with Project.open(staging) as project:
        assert assert_every_good_row_has_its_whole_file(project) > before
        assert project.conn.execute("SELECT count(*) FROM clips WHERE status != 'ok'").fetchone()[0] == 0

    rebuilt = cli("demo", str(target))
    assert rebuilt.code == 0, rebuilt.err
    assert cli("check", str(target)).code == 0


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the worker processes")
def test_sigterm_during_the_demo_build_stops_it_as_ctrl_c_does(tmp_path):
    """SIGTERM midway through the speech: the build stops within seconds with exit code 130 and a one-line
    message (no traceback), the workers are gone, and no demo folder is left half-built."""
    target = tmp_path / "demo"
    process, staging, workers = start_demo_build(target)
    stopped_at = time.monotonic()
    os.kill(process.pid, signal.SIGTERM)
    code = process.wait(30)
    took = time.monotonic() - stopped_at
    errors = process.stderr.read()
    process.stderr.close()
    assert code == 130, errors
    assert "Traceback" not in errors and "everything reported saved is kept" in errors
    assert took < 10
    assert_gone(workers)
    assert not target.exists() and not staging.exists()


FORK_OR_SPAWN = """import threading
from spokenbench.core.audio.clip_workers import ClipWorkers
from spokenbench.core.audio.tts import get_backend

with ClipWorkers(get_backend("espeak"), in_processes=True) as alone:
    print(alone.start_method)
busy = threading.Event()
helper = threading.Thread(target=busy.wait)
helper.start()
with ClipWorkers(get_backend("espeak"), in_processes=True) as beside_a_thread:
    print(beside_a_thread.start_method)
busy.set()
"""


@pytest.mark.slow
def test_workers_are_forked_where_no_other_thread_runs_and_spawned_elsewhere():
    """A fork copies locks other threads hold: workers are forked only from a process of one thread (the CLI's
    `spokenbench demo`), spawned beside any other thread (a job process, the app)."""
    ran = subprocess.run([sys.executable, "-c", FORK_OR_SPAWN], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    expected = "fork" if usable_cores() >= 2 else "spawn"
    assert ran.stdout.split() == [expected, "spawn"]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_forked_and_spawned_workers_render_what_this_process_renders(method, monkeypatch):
    """Whichever way the workers start, a clip's bytes, duration, rate and level are those rendering it here gives
    (failures too). A forked worker must not keep this process's SIGTERM handler (the CLI turns SIGTERM into a
    Ctrl-C, which workers ignore): the pool ends a broken worker with SIGTERM."""
    monkeypatch.setattr(clip_workers, "child_start_method", lambda: method)
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    requests = [
        (SynthesisRequest(text, "en", "american", voice), text)
        for text in ("One question?", "SILENT question?", "Another, longer question to speak?")
        for voice in LocalToneBackend().default_voices
    ]
    try:
        with ClipWorkers(LocalToneBackend(), in_processes=True) as workers:
            assert workers.start_method == method
            rendered = workers.executor.submit(clip_workers.render_clips, requests, "flac").result()
            assert workers.executor.submit(signal.getsignal, signal.SIGTERM).result() == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)
    here = clip_workers.render_clips(requests, "flac", LocalToneBackend())
    assert rendered == here
    assert sum(clip.failure is not None for clip in here) == 2 and all(clip.data for clip in here[:2])


FORKED_BESIDE_A_STRINGIO = """import contextlib, io
from spokenbench.core.audio import clip_workers
from spokenbench.core.audio.tts import SynthesisRequest, get_backend

clip_workers.child_start_method = lambda: "fork"
request = SynthesisRequest("One question?", "en", "american", get_backend("espeak").default_voices[0])
with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
    with clip_workers.ClipWorkers(get_backend("espeak"), in_processes=True) as workers:
        [clip] = workers.executor.submit(clip_workers.render_clips, [(request, "q")], "flac").result()
print(workers.start_method, clip.failure is None and len(clip.data) > 0)
"""


@pytest.mark.slow
def test_forked_workers_start_where_the_caller_redirected_stderr_to_a_stringio():
    """A caller that captures output (a test's CLI runner, a notebook) has sys.stderr without a file descriptor:
    a forked worker must still start (it used to die in its initializer: a broken pool)."""
    ran = subprocess.run([sys.executable, "-c", FORKED_BESIDE_A_STRINGIO], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["fork", "True"]
