"""Text-to-speech backends behind one interface (`TTSBackend`), looked up by name."""

from __future__ import annotations

from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, VoiceSpec
from spokenbench.core.foundation.errors import SpokenBenchError

BACKEND_NAMES = ("espeak", "gemini", "openai", "clone", "kokoro")


def get_backend(name: str, **options) -> TTSBackend:
    """Backends are imported on demand so an optional one's absence only matters when it is chosen."""
    if name == "espeak":
        from spokenbench.core.audio.tts.espeak import EspeakBackend

        return EspeakBackend(**options)
    if name == "gemini":
        from spokenbench.core.audio.tts.gemini import GeminiTTSBackend

        return GeminiTTSBackend(**options)
    if name == "openai":
        from spokenbench.core.audio.tts.openai_tts import OpenAITTSBackend

        return OpenAITTSBackend(**options)
    if name == "clone":
        from spokenbench.core.audio.tts.clone import CloneBackend

        return CloneBackend(**options)
    if name == "kokoro":
        from spokenbench.core.audio.tts.kokoro import KokoroBackend

        return KokoroBackend(**options)
    raise SpokenBenchError(f"unknown TTS backend '{name}'; choose one of {', '.join(BACKEND_NAMES)}")


__all__ = ["BACKEND_NAMES", "SynthesisRequest", "TTSBackend", "VoiceSpec", "get_backend"]
