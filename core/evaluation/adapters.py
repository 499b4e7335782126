"""Model adapters: one request in, one reply out, through the official SDKs (google-genai for Gemini, openai
for OpenAI, NVIDIA's hosted catalog, Mistral and any OpenAI-compatible server such as vLLM). Adapters do
no retrying and no rate limiting (core.jobs.remote does, once, for every provider) and never see a project.

How audio is put into a request is the preset's `convention` (see presets.CONVENTIONS): the same model on
a different host may need a different shape, so it is data, not a class."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from spokenbench.core.evaluation.presets import ModelPreset
from spokenbench.core.foundation.credentials import api_key
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.jobs.remote import DEFAULT_TIMEOUT_S, strip_url_credentials

AUDIO_MIME = {
    "wav": "audio/wav",
    "mp3": "audio/mp3",
    "flac": "audio/flac",
    "ogg": "audio/ogg",
    "aac": "audio/aac",
    "aiff": "audio/aiff",
}
AUDIO_TOKENS_PER_SECOND = {"gemini": 32.0, "openai-input-audio": 10.0}  # estimates for limits and budget only
CREDENTIAL_PROVIDER = {"gemini": "gemini", "openai": "openai", "nvidia": "nvidia", "mistral": "mistral"}


@dataclass(frozen=True, slots=True)  # slots: a large plan holds one per planned request
class AudioInput:
    data: bytes = field(repr=False)
    sha256: str
    format: str
    seconds: float


_KEY_JSON = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode  # json.dumps's output, one encoder reused


def _fingerprint_json(request: ModelRequest) -> str:
    """_KEY_JSON(request.fingerprint()), written out for the usual field types (json's own string encoder, the
    keys in sorted order, its separators): a plan keys 100,000s of requests. Any other type goes through json."""
    system, language = request.system, request.language
    if not (
        isinstance(request.kind, str)
        and isinstance(request.user, str)
        and (system is None or isinstance(system, str))
        and (language is None or isinstance(language, str))
        and all(isinstance(a.sha256, str) and isinstance(a.format, str) for a in request.audio)
    ):
        return _KEY_JSON(request.fingerprint())
    audio = fingerprint_audio_json([(a.sha256, a.format) for a in request.audio])
    return fingerprint_json(audio, fingerprint_texts_json(request.kind, language, system, request.user))


def fingerprint_json(audio_json: str, texts_json: str) -> str:
    """A fingerprint's JSON from its two parts: the audio (fingerprint_audio_json) and the texts after it
    (fingerprint_texts_json), as json.dumps(fingerprint, sort_keys=True) writes it ("audio" sorts first)."""
    return f"{_AUDIO_OPEN}{audio_json}{_AUDIO_CLOSE}{texts_json}"


_AUDIO_OPEN, _AUDIO_CLOSE = '{"audio": [', "], "  # a fingerprint's JSON around its audio list


def fingerprint_audio_json(audio: Sequence[tuple]) -> str:
    """The fingerprint's audio list, without its brackets, from (sha256, format, ...) tuples of strings."""
    text = json.encoder.encode_basestring
    if len(audio) == 1:  # the usual case, without a generator
        return f"[{text(audio[0][0])}, {text(audio[0][1])}]"
    return ", ".join(f"[{text(entry[0])}, {text(entry[1])}]" for entry in audio)


def fingerprint_texts_json(kind: str, language: str | None, system: str | None, user: str) -> str:
    """The fingerprint's JSON after its audio, from strings (None for no language or system)."""
    texts = (kind, language, system, user)
    after = _TEXTS_JSON.get(texts)
    if after is None:
        if len(_TEXTS_JSON) >= _TEXTS_JSON_MAX:
            _TEXTS_JSON.clear()
        text = json.encoder.encode_basestring
        after = _TEXTS_JSON[texts] = (
            f'"kind": {text(kind)}, "language": {"null" if language is None else text(language)}, '
            f'"system": {"null" if system is None else text(system)}, "user": {text(user)}}}'
        )
    return after


# The fingerprint's JSON after its audio, by (kind, language, system, user): in audio mode a plan's 100,000s of
# requests share a few texts, so each is encoded once, not once per request (bounded: text mode never repeats)
_TEXTS_JSON: dict[tuple, str] = {}
_TEXTS_JSON_MAX = 1024


@dataclass(frozen=True)
class ModelRequest:
    """Everything sent for one answer. `kind` 'transcribe' asks a transcription endpoint instead of chat."""

    system: str | None
    user: str
    audio: tuple[AudioInput, ...] = ()
    kind: str = "chat"
    language: str | None = None  # hint for transcription endpoints
    context: dict | None = field(default=None, compare=False, repr=False)  # simulated listener only; never sent

    def fingerprint(self) -> dict:
        """The request without audio bytes (their hashes stand in): part of the response-cache key."""
        return {
            "kind": self.kind,
            "system": self.system,
            "user": self.user,
            "language": self.language,
            "audio": [[a.sha256, a.format] for a in self.audio],
        }


@dataclass(frozen=True)
class GenerationParams:
    temperature: float = 0.0
    max_output_tokens: int = 4096
    thinking: str | None = None  # None/'off', 'auto', a token budget ('1024'), or a level ('low', 'high')
    timeout_s: float = DEFAULT_TIMEOUT_S

    def as_dict(self) -> dict:
        return {"temperature": self.temperature, "max_output_tokens": self.max_output_tokens, "thinking": self.thinking}


@dataclass(frozen=True)
class ModelReply:
    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    audio_tokens: int | None = None
    finish_reason: str | None = None


class ModelAdapter:
    """Base class. Subclasses implement `generate`; `identity` names everything that changes the answer."""

    cacheable = True
    paid_requests = True  # its requests go to a service that bills them: a cancel waits for their answers
    _identity_json: tuple | None = None  # (preset, params, JSON prefix) for request_key

    def __init__(self, preset: ModelPreset, params: GenerationParams):
        self.preset = preset
        self.params = params
        self.secrets: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        return self.preset.spec

    @property
    def limiter_key(self) -> str:
        return f"{self.preset.provider}@{strip_url_credentials(self.preset.base_url) or 'default'}"

    @property
    def _own_identity(self) -> bool:
        """A subclass's identity may depend on more than preset and params: made afresh for each key."""
        return type(self).identity is not ModelAdapter.identity

    def identity(self) -> dict:
        return {
            "provider": self.preset.provider,
            "model": self.preset.model,
            "endpoint": strip_url_credentials(self.preset.base_url),
            "convention": self.preset.convention,
            "params": self.params.as_dict(),
        }

    def request_key(self, request: ModelRequest) -> str:
        """sha256 of {"model": identity, "request": fingerprint} as sorted-key JSON (see fingerprint_key)."""
        return self.fingerprint_key(_fingerprint_json(request))

    def fingerprint_key(self, fingerprint: str) -> str:
        """The response-cache key of a request whose fingerprint's JSON is `fingerprint`."""
        return hashlib.sha256(f"{self._key_prefix()}{fingerprint}}}".encode()).hexdigest()

    def key_parts(self, texts_json: str) -> tuple[str, str]:
        """(head, tail): the key of a request with these texts (fingerprint_texts_json) is the sha256 of
        head + its audio's JSON (fingerprint_audio_json) + tail, as UTF-8. A plan keys 100,000s of requests that
        differ only in what is heard: the rest is joined once per presentation."""
        return self._key_prefix() + _AUDIO_OPEN, f"{_AUDIO_CLOSE}{texts_json}}}"

    def _key_prefix(self) -> str:
        """The key's JSON before the fingerprint. The identity's JSON is made once per adapter and spliced in (the
        same bytes: "model" sorts before "request", and a nested value is encoded as on its own)."""
        made = self._identity_json
        if made is None or made[0] is not self.preset or made[1] is not self.params or self._own_identity:
            made = self._identity_json = (
                self.preset,
                self.params,
                '{"model": ' + json.dumps(self.identity(), sort_keys=True, ensure_ascii=False) + ', "request": ',
            )
        return made[2]

    def estimate_tokens(self, request: ModelRequest) -> tuple[int, int]:
        """(text tokens, audio tokens) before sending: for tokens-per-minute limits and budget reservations."""
        return self.estimate_tokens_of(request.system, request.user, sum(a.seconds for a in request.audio))

    def estimate_tokens_of(self, system: str | None, user: str, audio_seconds: float) -> tuple[int, int]:
        """estimate_tokens of a request with these texts and this much audio."""
        text = (system or "") + user
        text_tokens = len(text.encode("utf-8")) / 3 + 8  # ~4 characters per token in Latin text, ~1 per CJK character
        per_second = AUDIO_TOKENS_PER_SECOND.get(self.preset.convention, 32.0)
        return int(text_tokens), int(audio_seconds * per_second)

    async def generate(self, request: ModelRequest) -> ModelReply:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


def _b64(audio: AudioInput) -> str:
    return base64.b64encode(audio.data).decode("ascii")


class OpenAICompatibleAdapter(ModelAdapter):
    """OpenAI, NVIDIA's catalog, Mistral, vLLM and other OpenAI-compatible servers via the openai SDK."""

    def __init__(self, preset: ModelPreset, params: GenerationParams, key: str | None):
        super().__init__(preset, params)
        self.secrets = (key,) if key else ()
        # max_retries=0: core.jobs.remote owns retries (and honours Retry-After once, not twice). No key: an adapter
        # that only builds request bodies (batch files, core/evaluation/batches.py) and has no client, nor the SDK
        # imported (0.4-0.7 s of a batch file's time went to importing it).
        self.client = None
        if key is not None:
            from openai import AsyncOpenAI

            self.client = AsyncOpenAI(api_key=key, base_url=preset.base_url, max_retries=0, timeout=params.timeout_s)

    def _messages(self, request: ModelRequest) -> list[dict]:
        convention = self.preset.convention
        system, user = request.system, request.user
        if system and not self.preset.system_role:
            user, system = f"{system}\n\n{user}", None
        messages = [{"role": "system", "content": system}] if system else []
        if convention in ("nvidia-inline-audio", "nvidia-inline-audio-phi"):
            tags = " ".join(
                f'<audio src="data:{AUDIO_MIME.get(a.format, "audio/wav")};base64,{_b64(a)}" />' for a in request.audio
            )
            if convention == "nvidia-inline-audio-phi" and request.audio:
                tags = "".join(f"<|audio_{n}|>" for n in range(1, len(request.audio) + 1)) + " " + tags
            if self.preset.max_inline_base64_chars and len(tags) > self.preset.max_inline_base64_chars:
                raise SpokenBenchError(
                    f"{self.spec}: the inline audio is {len(tags):,} characters of base64, over the host's limit of "
                    f"{self.preset.max_inline_base64_chars:,}; assemble shorter chunks (spokenbench assemble --chunk-seconds)"
                )
            messages.append({"role": "user", "content": f"{tags}\n{user}" if tags else user})
            return messages
        parts: list[dict] = []
        for audio in request.audio:
            if convention == "openai-input-audio":
                parts.append({"type": "input_audio", "input_audio": {"data": _b64(audio), "format": audio.format}})
            elif convention == "mistral-input-audio":
                parts.append({"type": "input_audio", "input_audio": _b64(audio)})
            elif convention == "audio-url":
                url = f"data:{AUDIO_MIME.get(audio.format, 'audio/wav')};base64,{_b64(audio)}"
                parts.append({"type": "audio_url", "audio_url": {"url": url}})
            else:
                raise SpokenBenchError(f"{self.spec}: convention '{convention}' is not an OpenAI-compatible one")
        if user or not request.audio:  # a spoken question with nothing written beside it (the free form) sends no
            parts.append({"type": "text", "text": user})  # empty text part, which providers refuse
        messages.append({"role": "user", "content": parts if request.audio else user})
        return messages

    async def generate(self, request: ModelRequest) -> ModelReply:
        if request.kind == "transcribe":
            return await self._transcribe(request)
        # The SDK's documented raw `post` (same client, auth, timeouts and error classes as
        # chat.completions.create) without its recursive TypedDict transform of `messages`, which costs about
        # 3 ms of CPU per audio request and would make the runner CPU-bound at high concurrency.
        data = await self.client.post("/chat/completions", cast_to=object, body=self.chat_body(request))
        return chat_reply(data)

    def chat_body(self, request: ModelRequest) -> dict:
        """The /chat/completions body sent for `request` (its audio loaded): online, and as each line's body of
        an OpenAI batch file (core/evaluation/batches.py)."""
        return {
            "model": self.preset.model,
            "messages": self._messages(request),
            "temperature": self.params.temperature,
            self.preset.max_tokens_param: self.params.max_output_tokens,
        }

    async def _transcribe(self, request: ModelRequest) -> ModelReply:
        texts = []
        # A long clip's chunks are one request to its job: a cancel lets the rest go out too, since a part of the
        # transcript is not stored, and a resume would pay for every chunk again (Stop Now abandons them).
        for audio in request.audio:
            kwargs = {
                "model": self.preset.model,
                "file": (f"input.{audio.format}", audio.data, AUDIO_MIME.get(audio.format, "audio/wav")),
            }
            if request.language:
                kwargs["language"] = request.language.split("-")[0]
            result = await self.client.audio.transcriptions.create(**kwargs)
            texts.append(result.text if hasattr(result, "text") else str(result))
        return ModelReply(text=" ".join(t.strip() for t in texts))

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.close()


def chat_reply(data) -> ModelReply:
    """A chat completion (a JSON object) as a ModelReply; MalformedReply when it has no choices. Online replies
    and batch results (OpenAI's output file, vLLM's run_batch) are read by this one function."""
    if not isinstance(data, dict) or not data.get("choices") or not isinstance(data["choices"], list):
        raise MalformedReply("the reply has no choices")
    choice = data["choices"][0] or {}
    if not isinstance(choice, dict):
        raise MalformedReply("the reply's first choice is not an object")
    content = (choice.get("message") or {}).get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    usage = data.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    return ModelReply(
        text=content or "",
        input_tokens=usage.get("prompt_tokens"),
        output_tokens=usage.get("completion_tokens"),
        audio_tokens=details.get("audio_tokens") if isinstance(details, dict) else None,
        finish_reason=choice.get("finish_reason"),
    )


class GeminiAdapter(ModelAdapter):
    """Gemini through google-genai's async client. The SDK retries nothing by default; keep it so."""

    def __init__(self, preset: ModelPreset, params: GenerationParams, key: str | None):
        super().__init__(preset, params)
        from google import genai
        from google.genai import types

        self.secrets = (key,) if key else ()
        self._types = types
        options = types.HttpOptions(base_url=preset.base_url, timeout=int(params.timeout_s * 1000))
        # No key: an adapter that only builds requests (batch jobs, core/evaluation/batches.py), without a client.
        self.client = None if key is None else genai.Client(api_key=key, http_options=options)

    def _thinking(self):
        types, thinking, style = self._types, self.params.thinking, self.preset.thinking
        if thinking is None or style == "none":
            return None
        if style == "budget":
            budget = {"off": 0, "auto": -1, "on": -1}.get(thinking)
            if budget is None:
                try:
                    budget = int(thinking)
                except ValueError:
                    raise SpokenBenchError(
                        f"--thinking for {self.spec}: off, on/auto or a token budget, not '{thinking}'"
                    ) from None
            return types.ThinkingConfig(thinking_budget=budget)
        level = {"off": "MINIMAL", "on": "HIGH", "auto": None}.get(thinking, thinking.upper())
        return types.ThinkingConfig(thinking_level=level) if level else None

    def request_parts(self, request: ModelRequest) -> tuple[list, object]:
        """(contents, GenerateContentConfig) sent for `request` (its audio loaded): online, and as each request
        of a Gemini batch job (core/evaluation/batches.py)."""
        types = self._types
        config = types.GenerateContentConfig(
            temperature=self.params.temperature,
            max_output_tokens=self.params.max_output_tokens,
            candidate_count=1,
            system_instruction=request.system or None,
            thinking_config=self._thinking(),
        )
        user = request.user
        if request.kind == "transcribe" and not user:
            user = "Transcribe the audio verbatim."
        contents = [
            types.Part.from_bytes(data=a.data, mime_type=AUDIO_MIME.get(a.format, "audio/wav")) for a in request.audio
        ]
        if user or not contents:  # no empty text part beside the audio (the free form's spoken question)
            contents.append(types.Part.from_text(text=user))
        return contents, config

    async def generate(self, request: ModelRequest) -> ModelReply:
        contents, config = self.request_parts(request)
        response = await self.client.aio.models.generate_content(
            model=self.preset.model, contents=contents, config=config
        )
        return gemini_reply(response)

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aio.aclose()


def gemini_reply(response) -> ModelReply:
    """A google-genai GenerateContentResponse as a ModelReply (online replies and batch results alike)."""
    candidates = response.candidates or []
    text = "".join(
        part.text
        for part in ((candidates[0].content.parts or []) if candidates and candidates[0].content else [])
        if getattr(part, "text", None) and not getattr(part, "thought", False)
    )
    usage = response.usage_metadata
    audio_tokens = None
    if usage is not None and usage.prompt_tokens_details:
        audio_tokens = sum(
            d.token_count or 0
            for d in usage.prompt_tokens_details
            if str(getattr(d.modality, "value", d.modality)).upper() == "AUDIO"
        )
    output_tokens = None
    if usage is not None and (usage.candidates_token_count is not None or usage.thoughts_token_count is not None):
        output_tokens = (usage.candidates_token_count or 0) + (
            usage.thoughts_token_count or 0
        )  # thoughts bill as output
    finish = candidates[0].finish_reason if candidates else None
    return ModelReply(
        text=text,
        input_tokens=usage.prompt_token_count if usage else None,
        output_tokens=output_tokens,
        audio_tokens=audio_tokens,
        finish_reason=str(getattr(finish, "value", finish)) if finish is not None else None,
    )


class MalformedReply(Exception):
    """A 200 reply without the expected content; retried like a garbled body."""


def create_adapter(preset: ModelPreset, params: GenerationParams, key: str | None = None) -> ModelAdapter:
    """The adapter for a preset. The key comes from the environment or keyring unless given (tests)."""
    if preset.provider == "simulated":
        from spokenbench.core.evaluation.simulated import SimulatedAdapter

        return SimulatedAdapter(preset, params)
    if preset.provider == "local":
        from spokenbench.core.evaluation.local_llm import create_local_adapter

        return create_local_adapter(preset, params)
    if key is None:
        key = credential_for(preset)
    if preset.convention == "gemini":
        return GeminiAdapter(preset, params, key)
    return OpenAICompatibleAdapter(preset, params, key)


def credential_for(preset: ModelPreset) -> str:
    """The key for a preset's provider, read from the environment or the OS keyring (raises a clear error when
    a hosted provider's key is missing). Read once per run, kept in memory only, handed to the SDK client."""
    credential = CREDENTIAL_PROVIDER.get(preset.provider)
    return api_key(credential) if credential else (_optional_key(preset.provider) or "not-needed")


OPTIONAL_KEY_VARIABLES = {"vllm": "VLLM_API_KEY", "openai-compatible": "OPENAI_COMPATIBLE_API_KEY"}


def optional_key_variable(provider: str) -> str | None:
    """The variable of a self-hosted server's key when it is set: such servers usually need none."""
    import os

    variable = OPTIONAL_KEY_VARIABLES.get(provider)
    return variable if variable and os.environ.get(variable, "").strip() else None


def _optional_key(provider: str) -> str | None:
    """Self-hosted servers usually need no key; VLLM_API_KEY / OPENAI_COMPATIBLE_API_KEY are used when set."""
    import os

    variable = optional_key_variable(provider)
    return os.environ[variable].strip() if variable else None
