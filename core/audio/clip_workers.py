"""Local speech engines on every core (issue 28): a library that is CPU-bound and not thread-safe (espeak-ng through
ctypes) runs in a small pool of worker processes, each loading it once, instead of one request at a time behind a
lock on the job's thread. A worker synthesizes, checks and encodes a clip — the same calls in the same order as
before, so the stored bytes are the same — and hands back the encoded file; the parent writes files and rows in
groups (core/audio/synthesis.py). Requests travel CHUNK at a time (one message per chunk, fewer only while a
worker could run dry) to amortize pickling and each message's hand-offs between threads and processes.

Workers are forked where this process runs no other thread (`child_start_method`; the CLI's `spokenbench demo`
starts them first): they start at once with numpy, soundfile and this module loaded, and end without tearing down
an interpreter — about 0.3 s of CPU less per worker than a spawned one. Elsewhere (a job process's helper threads,
the app) they are spawned: a lock another thread held at a fork would stay held forever in the child. Either way
they ignore Ctrl-C (the parent stops the pool itself) and write nothing to standard output (a job process's stdout
carries its frames, core/jobs/host.py).
A plan too small to repay starting processes renders on one thread of this process, through the same function."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass

from spokenbench.core.audio.checks import check_audio
from spokenbench.core.audio.io import AudioError, encode_audio
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, UnsupportedRequest
from spokenbench.core.foundation.child_process import child_start_method, main_script_hidden, settle_helper_process
from spokenbench.core.foundation.errors import SpokenBenchError

MAX_WORKERS = 4  # beyond this the parent's file writing, not synthesis, is the limit
CHUNK = 8  # requests per message to a worker
SLOW_CHUNK = 32  # requests sent ahead (`render_ahead`) per message: one worker loads what they need for this many
PARENT_POLL_S = 0.2
BLAS_THREADS = "OPENBLAS_NUM_THREADS"
MIN_CLIPS_FOR_PROCESSES = 48  # below this, starting the processes (~0.3 s of imports each) costs more than it saves


def worker_count() -> int:
    """Processes for the pool: the cores this process may use, at most MAX_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


@dataclass(frozen=True)
class RenderedClip:
    """One request's encoded clip and what the clips table says of it, or why it failed."""

    data: bytes | None
    duration_s: float | None = None
    sample_rate: int | None = None
    speech_level_db: float | None = None
    failure: str | None = None


_factory: Callable[[], TTSBackend] | None = None  # a worker process's backend maker, given when it starts
_backend: TTSBackend | None = None


def _worker_backend() -> TTSBackend:
    """The backend of this worker process, made once (its engine loads on first use and stays)."""
    global _backend
    if _backend is None:
        _backend = _factory()
    return _backend


def render_clips(
    requests: list[tuple[SynthesisRequest, str]], audio_format: str, backend: TTSBackend | None = None
) -> list[RenderedClip]:
    """Synthesize, check and encode each (request, label): in a worker process (its own backend), or on a thread
    of this one (`backend` given) for a small plan."""
    backend = backend or _worker_backend()
    rendered = []
    for request, label in requests:
        try:
            audio = backend.speak_audio(request)
            if audio.rate != backend.output_rate:  # as check_clip refuses it
                raise AudioError(
                    f"{label}: the audio's sample rate is {audio.rate} Hz; {backend.output_rate} Hz expected"
                )
            level = check_audio(audio, request.text, label)
        except (AudioError, UnsupportedRequest) as error:
            rendered.append(RenderedClip(None, failure=str(error)))
            continue
        encoded = encode_audio(audio.samples, audio.rate, audio_format)
        rendered.append(RenderedClip(encoded, audio.duration, audio.rate, level))
    return rendered


def _load_engine() -> None:
    """Sent once per worker when the pool starts, so engines load while the parent plans."""
    _worker_backend().prepare()


@contextlib.contextmanager
def _one_blas_thread():
    """A worker is one core's worth of work beside the others: OpenBLAS's own threads (one per core, started when
    numpy is imported) would only compete with them, and spin while idle (~0.07 s of CPU in a demo build). Set
    for the processes started meanwhile; this process keeps its own setting."""
    saved = os.environ.get(BLAS_THREADS)
    os.environ[BLAS_THREADS] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(BLAS_THREADS, None)
        else:
            os.environ[BLAS_THREADS] = saved


def _start_worker(factory: Callable[[], TTSBackend]) -> None:
    global _factory
    _factory = factory
    settle_helper_process()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked worker inherits the CLI's SIGTERM-as-Ctrl-C handler
    signal.set_wakeup_fd(-1)  # ... and an event loop's wakeup socket, which signals here must not write to
    sys.stdout = sys.stderr
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), name="parent watch", daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """A killed parent (SIGKILL) never shuts its pool down, and its workers would wait for work forever: once this
    worker is handed to another parent, it ends."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


class ClipWorkers:
    """The executor that renders clips, fed in chunks from the event loop. Use as a context manager (or call
    `close`): the pool is shut down on the way out, at most one chunk per worker finishing first."""

    def __init__(self, backend: TTSBackend, in_processes: bool):
        """Each worker makes its own backend by calling `backend`'s class without arguments (an engine with options
        would need them passed here)."""
        self.backend = backend
        in_processes = in_processes and not getattr(sys, "frozen", False)  # a frozen app cannot spawn Python
        self.processes = worker_count() if in_processes else 0
        self.executor: Executor
        self.start_method: str | None = None  # how the worker processes start, when there are any
        if in_processes:
            self.start_method = "fork" if child_start_method() == "fork" else "spawn"
            self.executor = ProcessPoolExecutor(
                self.processes,
                mp_context=multiprocessing.get_context(self.start_method),
                initializer=_start_worker,
                initargs=(type(backend),),
            )
            # forked: the first submit starts every process, before the pool's own threads; spawned: each submit
            # starts one, until all are started
            with main_script_hidden(), _one_blas_thread():
                for _ in range(self.processes):
                    self.executor.submit(_load_engine)  # its error, if any, comes again with real work
        else:
            self.executor = ThreadPoolExecutor(1, thread_name_prefix="spokenbench-synthesis")
        self._waiting: list[tuple[SynthesisRequest, str, asyncio.Future]] = []
        self._flush_scheduled = False
        self._chunks_out = 0  # sent and not yet back
        self._ahead: dict[SynthesisRequest, asyncio.Future] = {}
        self._closing: threading.Thread | None = None

    @property
    def in_flight(self) -> int:
        """Requests a caller may keep outstanding so no worker waits: two chunks per worker."""
        return max(1, self.processes) * CHUNK * 2

    async def render(self, request: SynthesisRequest, label: str, audio_format: str) -> RenderedClip:
        """The clip of one request. Requests travel CHUNK at a time; fewer only while a worker could run out of work
        (`_flush_soon`)."""
        ahead = self._ahead.pop(request, None)
        if ahead is not None:
            return await ahead
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((request, label, future))
        if len(self._waiting) >= CHUNK:
            self._send(audio_format, whole_chunks_only=True)
        self._flush_soon(audio_format)
        return await future

    def render_ahead(self, requests: list[tuple[SynthesisRequest, str]], audio_format: str) -> None:
        """Send these (request, label)s now, before the plan's order reaches them; `render` then hands over their
        clips. For the slowest requests (signal-processed voices, ten times a plain clip): sent first, they do not
        end the job with one worker busy and the others idle, and in chunks of SLOW_CHUNK only one worker in a small
        plan loads the libraries they need."""
        loop = asyncio.get_running_loop()
        for start in range(0, len(requests), SLOW_CHUNK):
            chunk = [(request, label, loop.create_future()) for request, label in requests[start : start + SLOW_CHUNK]]
            self._ahead.update((request, future) for request, _, future in chunk)
            self._submit(chunk, audio_format)

    def _flush_soon(self, audio_format: str) -> None:
        """Send what waits at the end of this turn of the event loop, if a worker could run out of work before
        more requests fill a chunk: fewer than two chunks per worker are out. Otherwise the requests wait for more,
        or for a chunk to come back (each message costs ~0.5 ms of CPU across both processes, and units finishing
        one by one would send chunks of one or two: 419 messages for the demo's 1,162 clips, not ~150)."""
        if self._waiting and not self._flush_scheduled and self._chunks_out < 2 * max(1, self.processes):
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush, audio_format)

    def _flush(self, audio_format: str) -> None:
        self._flush_scheduled = False
        if self._closing is None:  # a chunk came back as the pool was being stopped: nothing more is sent
            self._send(audio_format, whole_chunks_only=False)

    def _send(self, audio_format: str, whole_chunks_only: bool) -> None:
        while len(self._waiting) >= CHUNK or (self._waiting and not whole_chunks_only):
            chunk, self._waiting = self._waiting[:CHUNK], self._waiting[CHUNK:]
            self._submit(chunk, audio_format)

    def _submit(self, chunk: list[tuple[SynthesisRequest, str, asyncio.Future]], audio_format: str) -> None:
        requests = [(request, label) for request, label, _ in chunk]
        in_this_process = None if self.processes else self.backend
        try:
            submitted = self.executor.submit(render_clips, requests, audio_format, in_this_process)
        except BrokenExecutor as error:  # a worker died while these waited: they fail as the chunks out did
            submitted = Future()
            submitted.set_exception(error)
        done = asyncio.wrap_future(submitted)
        self._chunks_out += 1

        def returned(finished: asyncio.Future) -> None:
            self._chunks_out -= 1
            _settle([future for *_, future in chunk], finished)
            self._flush_soon(audio_format)

        done.add_done_callback(returned)

    def close(self) -> None:
        """Stop the pool: queued chunks are dropped, running ones finish (a few clips), no process is left."""
        if self._closing is None:
            self.close_soon()
        self._closing.join()

    def close_soon(self) -> None:
        """Start stopping the pool without waiting for its processes to exit (each tears down its interpreter, a
        few tenths of a second) so the caller goes on meanwhile; `close` waits for them."""
        if self._closing is not None:
            return
        self._closing = threading.Thread(
            target=self.executor.shutdown, kwargs={"wait": True, "cancel_futures": True}, name="spokenbench-pool-close"
        )
        self._closing.start()
        for unclaimed in self._ahead.values():  # rendered ahead for a clip stored meanwhile by another job
            if unclaimed.done() and not unclaimed.cancelled():
                unclaimed.exception()  # seen: not logged as never retrieved
            unclaimed.cancel()
        self._ahead.clear()

    def __enter__(self) -> ClipWorkers:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


def _settle(futures: list[asyncio.Future], finished: asyncio.Future) -> None:
    for index, future in enumerate(futures):
        if future.done():  # its worker task was cancelled meanwhile
            continue
        if finished.cancelled():
            future.cancel()
        elif isinstance(finished.exception(), BrokenExecutor):  # a worker was killed (out of memory, a signal)
            future.set_exception(
                SpokenBenchError(f"a speech worker process stopped unexpectedly: {finished.exception()}")
            )
        elif finished.exception() is not None:
            future.set_exception(finished.exception())
        else:
            future.set_result(finished.result()[index])
