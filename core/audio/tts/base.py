"""The TTS backend interface. A backend declares what it can speak (languages, accents, voices) and turns one
`SynthesisRequest` into WAV bytes; jobs, caching, retries and checks live in core.audio.synthesis."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from spokenbench.core.foundation.errors import SpokenBenchError


@dataclass(frozen=True)
class VoiceSpec:
    """One voice as the project names it: the backend's voice id plus the speaker gender it presents. A
    gender-neutralized voice keeps the gender of the voice it was made from (the paper's ground truth for its
    Table 7) and names its method in `neutralization` ('embedding-average' or 'signal-approximation')."""

    name: str
    gender: str  # male / female
    neutralization: str | None = None


@dataclass(frozen=True)
class SynthesisRequest:
    text: str
    language: str
    accent: str | None
    voice: VoiceSpec
    prompt: str | None = None  # the rendered style prompt, for backends steered by text

    def cache_key(self, backend: str, model: str | None) -> str:
        """Identity of a clip: equal keys mean identical requests, so the audio is reused, never paid twice."""
        recipe = [backend, model, self.voice.name, self.language, self.accent, self.prompt, self.text]
        return hashlib.sha256(json.dumps(recipe, ensure_ascii=False).encode()).hexdigest()


class UnsupportedRequest(SpokenBenchError):
    """The backend cannot speak this language, accent or voice."""


@dataclass
class TTSBackend:
    """Subclasses fill the fields and implement `synthesize`; transient failures raise, the job retries."""

    name: str = "base"
    model: str | None = None
    output_rate: int = 24_000
    # language -> accents this backend can render for it (None = the language's default accent)
    accents: dict[str, tuple[str | None, ...]] = field(default_factory=dict)
    voices: tuple[VoiceSpec, ...] = ()
    # the voices a plan uses when none is chosen (None: all of `voices`)
    default_voice_names: tuple[str, ...] | None = None
    max_concurrency: int = 1
    # a local engine that is CPU-bound and not thread-safe, with `speak_audio` (the decoded clip): synthesized in
    # worker processes (core/audio/clip_workers.py), its files and rows stored in groups
    synthesizes_in_processes: bool = False
    requests_per_minute: int | None = None
    price_per_million_chars: float = 0.0
    paid_requests: bool = False  # a service that bills each request (APIBackend): a cancel waits for its answers
    notes: dict[str, str] = field(default_factory=dict)  # e.g. why an accent is missing

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.accents)

    def spoken_as(self, language: str) -> str | None:
        """The language this backend speaks an item language as: itself ('pt-br'), else its base language ('ar'
        for 'ar-eg', 'es' for 'es-419'); None when it speaks neither."""
        if language in self.accents:
            return language
        base = language.split("-")[0]
        return base if base in self.accents else None

    def voice(self, name: str) -> VoiceSpec:
        for voice in self.voices:
            if voice.name == name:
                return voice
        known = ", ".join(v.name for v in self.voices)
        raise UnsupportedRequest(f"{self.name} has no voice '{name}'; available: {known}")

    @property
    def default_voices(self) -> tuple[VoiceSpec, ...]:
        if self.default_voice_names is None:
            return self.voices
        return tuple(self.voice(name) for name in self.default_voice_names)

    def voice_speaks(self, voice: VoiceSpec, language: str, accent: str | None) -> bool:
        """Whether the voice is meant to speak this language and accent (Kokoro's voices each have one accent);
        a plan leaves the other combinations out instead of recording them as failures."""
        return True

    def check(self, request: SynthesisRequest) -> None:
        language = self.spoken_as(request.language)
        if language is None:
            raise UnsupportedRequest(
                f"{self.name} cannot speak language '{request.language}'; it speaks {', '.join(self.languages)}"
            )
        if request.accent not in self.accents[language]:
            note = self.notes.get(f"{language}:{request.accent}", "")
            offered = ", ".join(a or "default" for a in self.accents[language])
            raise UnsupportedRequest(
                f"{self.name} has no {request.accent} accent for {request.language} (offers {offered}){'; ' + note if note else ''}"
            )
        if not request.text.strip():
            raise UnsupportedRequest("empty text cannot be synthesized")

    def render_prompt(self, text: str, language: str, accent: str | None) -> str | None:
        """The style prompt sent with the text (None for backends without one)."""
        return None

    def prepare(self) -> None:
        """Fail fast before any job runs (missing key or package), so no clip is marked failed for it."""

    def secrets(self) -> tuple[str, ...]:
        """Values never to show in messages (the API key), for error redaction."""
        return ()

    def estimate_cost(self, characters: int) -> float:
        return characters / 1_000_000 * self.price_per_million_chars

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        """WAV bytes for the request. Async so API backends overlap requests; local ones run in a thread."""
        raise NotImplementedError
