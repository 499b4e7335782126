"""Gemini TTS through google-genai. Accent and pace are steered by the prompt (a template naming language,
accent and text); the voice is a prebuilt voice (the BiasInEar paper used Orus = male, Zephyr = female)."""
from __future__ import annotations

import re

from spokenbench.core.audio.io import AudioError, pcm16_to_wav
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, VoiceSpec
from spokenbench.core.audio.tts.presets import (
    ACCENT_NAMES, LANGUAGE_CODES, default_template, model_settings, render_template, tts_presets,
)  # fmt: skip
from spokenbench.core.credentials import api_key

# The prebuilt voices and the speaker gender each presents.
GEMINI_VOICES = {
    "Orus": "male", "Zephyr": "female", "Puck": "male", "Charon": "male", "Kore": "female", "Fenrir": "male",
    "Leda": "female", "Aoede": "female", "Callirrhoe": "female", "Autonoe": "female", "Enceladus": "male",
    "Iapetus": "male", "Umbriel": "male", "Algieba": "male", "Despina": "female", "Erinome": "female",
    "Algenib": "male", "Rasalgethi": "male", "Laomedeia": "female", "Achernar": "female", "Alnilam": "male",
    "Schedar": "male", "Gacrux": "female", "Pulcherrima": "female", "Achird": "male", "Zubenelgenubi": "male",
    "Vindemiatrix": "female", "Sadachbia": "male", "Sadaltager": "male", "Sulafat": "female",
}  # fmt: skip
DEFAULT_VOICES = ("Orus", "Zephyr")
PROMPT_TEMPLATE_FILE = "gemini_prompt.txt"


class GeminiTTSBackend(TTSBackend):
    def __init__(self, model: str | None = None, base_url: str | None = None, prompt_template: str | None = None,
                 voices: tuple[str, ...] = DEFAULT_VOICES, key: str | None = None):  # fmt: skip
        model, settings = model_settings("gemini", model)
        presets = tts_presets()["gemini"]
        accents: dict[str, tuple] = {}
        for language, accent in LANGUAGE_CODES:
            accents.setdefault(language, ())
            accents[language] += (accent,)
        super().__init__(
            name="gemini", model=model, output_rate=24_000, accents=accents,
            voices=tuple(VoiceSpec(v, GEMINI_VOICES[v]) for v in GEMINI_VOICES if v in voices or not voices),
            max_concurrency=presets["concurrency"], requests_per_minute=presets["requests_per_minute"],
            price_per_million_chars=settings.get("price_per_million_chars", 0.0),
        )  # fmt: skip
        self.all_voices = {name: VoiceSpec(name, gender) for name, gender in GEMINI_VOICES.items()}
        self.base_url = base_url
        self.prompt_template = prompt_template or default_template(PROMPT_TEMPLATE_FILE)
        self._key = key
        self._client = None

    def voice(self, name: str) -> VoiceSpec:
        """Any prebuilt voice may be chosen, not only the default pair."""
        return self.all_voices.get(name) or super().voice(name)

    def render_prompt(self, text: str, language: str, accent: str | None) -> str:
        return render_template(self.prompt_template, text, language, accent)

    def prepare(self) -> None:
        self._client_for_requests()

    def secrets(self) -> tuple[str, ...]:
        return (self._key,) if self._key else ()

    def _client_for_requests(self):
        if self._client is None:
            from google import genai
            from google.genai import types

            self._key = self._key or api_key("gemini")
            options = types.HttpOptions(base_url=self.base_url) if self.base_url else None
            self._client = genai.Client(api_key=self._key, http_options=options)
        return self._client

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        from google.genai import types

        self.check(request)
        config = types.GenerateContentConfig(
            response_modalities=["AUDIO"],
            speech_config=types.SpeechConfig(
                language_code=LANGUAGE_CODES.get((request.language, request.accent)),
                voice_config=types.VoiceConfig(prebuilt_voice_config=types.PrebuiltVoiceConfig(voice_name=request.voice.name)),
            ),
        )
        response = await self._client_for_requests().aio.models.generate_content(
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


__all__ = ["ACCENT_NAMES", "GeminiTTSBackend", "audio_from_response"]
