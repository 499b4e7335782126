"""OpenAI TTS (gpt-4o-mini-tts, as in "Hearing the Order"): the accent goes into `instructions`, which the
older tts-1 models ignore — the presets file says so."""

from __future__ import annotations

from spokenbench.core.audio.io import AudioError
from spokenbench.core.audio.tts.api_backend import APIBackend
from spokenbench.core.audio.tts.base import SynthesisRequest

OPENAI_VOICES = {
    "onyx": "male",
    "echo": "male",
    "ash": "male",
    "fable": "male",
    "nova": "female",
    "shimmer": "female",
    "coral": "female",
    "sage": "female",
}
MAX_INPUT_CHARS = 4096


class OpenAITTSBackend(APIBackend):
    provider = "openai"
    template_file = "openai_instructions.txt"
    voice_genders = OPENAI_VOICES

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        prompt_template: str | None = None,
        voices: tuple[str, ...] = ("onyx", "nova"),
        key: str | None = None,
    ):
        super().__init__(model, base_url, prompt_template, voices, key)

    def new_client(self, key: str):
        from openai import AsyncOpenAI

        # The synthesis job owns retries (with Retry-After and a shared limiter), so the SDK's are off.
        return AsyncOpenAI(api_key=key, base_url=self.base_url, max_retries=0, timeout=120)

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        self.check(request)
        if len(request.text) > MAX_INPUT_CHARS:
            raise AudioError(
                f"OpenAI TTS takes at most {MAX_INPUT_CHARS} characters; this text has {len(request.text)}"
            )
        response = await self.client().audio.speech.create(
            model=self.model,
            voice=request.voice.name,
            input=request.text,
            instructions=request.prompt,
            response_format="wav",
        )
        if not response.content:
            raise AudioError("OpenAI returned an empty audio reply")
        return response.content
