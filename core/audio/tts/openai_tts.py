"""OpenAI TTS (gpt-4o-mini-tts, as in "Hearing the Order"): the accent goes into `instructions`, which the
older tts-1 models ignore — the presets file says so."""
from __future__ import annotations

from spokenbench.core.audio.io import AudioError
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, VoiceSpec
from spokenbench.core.audio.tts.presets import LANGUAGE_CODES, default_template, model_settings, render_template, tts_presets
from spokenbench.core.credentials import api_key

OPENAI_VOICES = {"onyx": "male", "echo": "male", "ash": "male", "fable": "male",
                 "nova": "female", "shimmer": "female", "coral": "female", "sage": "female"}  # fmt: skip
DEFAULT_VOICES = ("onyx", "nova")
INSTRUCTIONS_FILE = "openai_instructions.txt"
MAX_INPUT_CHARS = 4096


class OpenAITTSBackend(TTSBackend):
    def __init__(self, model: str | None = None, base_url: str | None = None, prompt_template: str | None = None,
                 voices: tuple[str, ...] = DEFAULT_VOICES, key: str | None = None):  # fmt: skip
        model, settings = model_settings("openai", model)
        presets = tts_presets()["openai"]
        accents: dict[str, tuple] = {}
        for language, accent in LANGUAGE_CODES:
            accents.setdefault(language, ())
            accents[language] += (accent,)
        super().__init__(
            name="openai", model=model, output_rate=24_000, accents=accents,
            voices=tuple(VoiceSpec(v, OPENAI_VOICES[v]) for v in voices),
            max_concurrency=presets["concurrency"], requests_per_minute=presets["requests_per_minute"],
            price_per_million_chars=settings.get("price_per_million_chars", 0.0),
        )  # fmt: skip
        self.all_voices = {name: VoiceSpec(name, gender) for name, gender in OPENAI_VOICES.items()}
        self.base_url = base_url
        self.prompt_template = prompt_template or default_template(INSTRUCTIONS_FILE)
        self._key = key
        self._client = None

    def voice(self, name: str) -> VoiceSpec:
        return self.all_voices.get(name) or super().voice(name)

    def render_prompt(self, text: str, language: str, accent: str | None) -> str:
        return render_template(self.prompt_template, text, language, accent)

    def prepare(self) -> None:
        self._client_for_requests()

    def secrets(self) -> tuple[str, ...]:
        return (self._key,) if self._key else ()

    def _client_for_requests(self):
        if self._client is None:
            from openai import AsyncOpenAI

            self._key = self._key or api_key("openai")
            # The synthesis job owns retries (with Retry-After and a shared limiter), so the SDK's are off.
            self._client = AsyncOpenAI(api_key=self._key, base_url=self.base_url, max_retries=0, timeout=120)
        return self._client

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        self.check(request)
        if len(request.text) > MAX_INPUT_CHARS:
            raise AudioError(f"OpenAI TTS takes at most {MAX_INPUT_CHARS} characters; this text has {len(request.text)}")
        response = await self._client_for_requests().audio.speech.create(
            model=self.model, voice=request.voice.name, input=request.text, instructions=request.prompt,
            response_format="wav",
        )  # fmt: skip
        data = response.content
        if not data:
            raise AudioError("OpenAI returned an empty audio reply")
        return data
