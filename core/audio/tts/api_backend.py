"""What the API-backed TTS services share: presets (model, price, limits), the accents they can be asked
for, a style-prompt template (the project's own or the bundled one), and a lazily created client whose key
comes from core.foundation.credentials and is redacted from every message."""

from __future__ import annotations

from spokenbench.core.audio.tts.base import TTSBackend, VoiceSpec
from spokenbench.core.audio.tts.presets import (
    LANGUAGE_CODES,
    default_accent_languages,
    default_template,
    model_settings,
    render_template,
    tts_presets,
)
from spokenbench.core.domain.conditions import DEFAULT_ACCENT
from spokenbench.core.foundation.credentials import api_key


def _prompted_accents(provider: str) -> dict[str, tuple]:
    """The studies' accents (en, zh, ko), then every other language the provider speaks, in DEFAULT_ACCENT."""
    accents: dict[str, tuple] = {}
    for language, accent in LANGUAGE_CODES:
        accents[language] = accents.get(language, ()) + (accent,)
    return accents | {language: (DEFAULT_ACCENT,) for language in default_accent_languages(provider)}


class APIBackend(TTSBackend):
    provider = ""  # key of resources/tts/presets.json and of core.foundation.credentials
    template_file = ""
    voice_genders: dict[str, str] = {}

    def __init__(
        self,
        model: str | None,
        base_url: str | None,
        prompt_template: str | None,
        voices: tuple[str, ...],
        key: str | None,
    ):
        model, settings = model_settings(self.provider, model)
        presets = tts_presets()[self.provider]
        super().__init__(
            name=self.provider,
            model=model,
            output_rate=24_000,
            accents=_prompted_accents(self.provider),
            voices=tuple(VoiceSpec(v, self.voice_genders[v]) for v in voices),
            max_concurrency=presets["concurrency"],
            requests_per_minute=presets["requests_per_minute"],
            paid_requests=True,
            price_per_million_chars=settings.get("price_per_million_chars", 0.0),
        )
        self.base_url = base_url
        self.prompt_template = prompt_template or default_template(self.template_file)
        self._key = key
        self._client = None

    def voice(self, name: str) -> VoiceSpec:
        """Any of the service's voices may be chosen, not only the default pair."""
        if name in self.voice_genders:
            return VoiceSpec(name, self.voice_genders[name])
        return super().voice(name)

    def render_prompt(self, text: str, language: str, accent: str | None) -> str:
        return render_template(self.prompt_template, text, language, accent)

    def prepare(self) -> None:
        self.client()

    def secrets(self) -> tuple[str, ...]:
        return (self._key,) if self._key else ()

    def client(self):
        if self._client is None:
            self._key = self._key or api_key(self.provider)
            self._client = self.new_client(self._key)
        return self._client

    def new_client(self, key: str):
        raise NotImplementedError
