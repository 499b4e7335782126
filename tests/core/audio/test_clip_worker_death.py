"""A speech worker killed while it renders (out of memory, a signal): the clips waiting on the pool fail with a
clear error naming the exit code, nothing hangs, and no process is left (issue 28's own pool, no
ProcessPoolExecutor)."""

import asyncio
import multiprocessing
import os
import signal

import pytest
from audio_support import LocalToneBackend

from spokenbench.core.audio.clip_workers import ClipWorkers, RenderedClip
from spokenbench.core.audio.tts.base import SynthesisRequest
from spokenbench.core.foundation.errors import SpokenBenchError


@pytest.mark.slow
def test_a_killed_worker_fails_the_waiting_clips_with_a_clear_error():
    backend = LocalToneBackend()
    voice = backend.default_voices[0]

    async def render_and_kill():
        with ClipWorkers(backend, in_processes=True) as workers:
            clips = [
                asyncio.ensure_future(
                    workers.render(SynthesisRequest(f"SLOW clip {n}?", "en", "american", voice), f"c{n}", "flac")
                )
                for n in range(40)
            ]
            await asyncio.sleep(0.3)
            os.kill(workers.executor.processes[0].pid, signal.SIGKILL)
            return await asyncio.wait_for(asyncio.gather(*clips, return_exceptions=True), 60)

    results = asyncio.run(render_and_kill())
    errors = [result for result in results if not isinstance(result, RenderedClip)]
    assert errors, "every clip was rendered although a worker was killed"
    for error in errors:
        assert isinstance(error, SpokenBenchError), repr(error)
        assert "a speech worker process stopped unexpectedly" in str(error) and "exit code -9" in str(error)
    assert multiprocessing.active_children() == []
