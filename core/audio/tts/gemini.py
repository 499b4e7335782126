"""Gemini TTS through google-genai. Accent and pace are steered by the prompt (a template naming language,
accent and text); the voice is a prebuilt voice (the BiasInEar paper used Orus = male, Zephyr = female)."""

from __future__ import annotations

import re

from spokenbench.core.audio.io import AudioError, pcm16_to_wav
from spokenbench.core.audio.tts.api_backend import APIBackend
from spokenbench.core.audio.tts.base import SynthesisRequest
from spokenbench.core.audio.tts.presets import LANGUAGE_CODES, default_accent_languages

# The prebuilt voices and the speaker gender each presents.
GEMINI_VOICES = {
    "Orus": "male",
    "Zephyr": "female",
    "Puck": "male",
    "Charon": "male",
    "Kore": "female",
    "Fenrir": "male",
    "Leda": "female",
    "Aoede": "female",
    "Callirrhoe": "female",
    "Autonoe": "female",
    "Enceladus": "male",
    "Iapetus": "male",
    "Umbriel": "male",
    "Algieba": "male",
    "Despina": "female",
    "Erinome": "female",
    "Algenib": "male",
    "Rasalgethi": "male",
    "Laomedeia": "female",
    "Achernar": "female",
    "Alnilam": "male",
    "Schedar": "male",
    "Gacrux": "female",
    "Pulcherrima": "female",
    "Achird": "male",
    "Zubenelgenubi": "male",
    "Vindemiatrix": "female",
    "Sadachbia": "male",
    "Sadaltager": "male",
    "Sulafat": "female",
}


TIMEOUT_MS = 120_000  # as the OpenAI speech client's 120 s


class GeminiTTSBackend(APIBackend):
    provider = "gemini"
    template_file = "gemini_prompt.txt"
    voice_genders = GEMINI_VOICES

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        prompt_template: str | None = None,
        voices: tuple[str, ...] = ("Orus", "Zephyr"),
        key: str | None = None,
    ):
        super().__init__(model, base_url, prompt_template, voices, key)

    def new_client(self, key: str):
        from google import genai
        from google.genai import types

        # No SDK retries: the synthesis job retries, honouring the server's RetryInfo delay. A timeout, as OpenAI's
        # speech has: without one a request the server never answers holds the job (and a cancel waiting for it).
        return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=self.base_url, timeout=TIMEOUT_MS))

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        from google.genai import types

        self.check(request)
        language = self.spoken_as(request.language)
        config = types.GenerateContentConfig(
            response_modalities=["AUDIO"],
            speech_config=types.SpeechConfig(
                language_code=LANGUAGE_CODES.get((language, request.accent))
                or default_accent_languages("gemini").get(language),
                voice_config=types.VoiceConfig(
                    prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=request.voice.name)
                ),
            ),
        )
        response = await self.client().aio.models.generate_content(
            model=self.model, contents=request.prompt or request.text, config=config
        )
        return audio_from_response(response)


def audio_from_response(response) -> bytes:
    """WAV bytes from a TTS reply: raw L16 PCM is wrapped using its rate=, a WAV is passed through."""
    try:
        inline = response.candidates[0].content.parts[0].inline_data
    except (AttributeError, IndexError, TypeError):
        inline = None
    if inline is None or not inline.data:
        raise AudioError("Gemini returned no audio (the reply had no inline audio data)")
    mime = (inline.mime_type or "").lower()
    if mime.startswith("audio/l16") or mime.startswith("audio/pcm"):
        match = re.search(r"rate=(\d+)", mime)
        return pcm16_to_wav(inline.data, int(match.group(1)) if match else 24_000)
    if "wav" in mime:
        return inline.data
    raise AudioError(f"Gemini returned audio of an unexpected type '{inline.mime_type}'")
