"""Offline TTS: libespeak-ng shipped by the `espeakng-loader` wheel, driven through ctypes (no system
install). The library is not thread-safe, so every call holds one process-wide lock. It is initialised with
the shipped data path and the don't-exit option, without which a bad path would end the whole process."""

from __future__ import annotations

import asyncio
import ctypes
import threading

import numpy as np

from spokenbench.core.audio.io import Audio, AudioError, as_stored, encode_wav
from spokenbench.core.audio.neutralize import METHOD as NEUTRALIZATION_METHOD
from spokenbench.core.audio.neutralize import neutralize_approximation
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, VoiceSpec
from spokenbench.core.domain.conditions import DEFAULT_ACCENT
from spokenbench.core.foundation.errors import MissingDependencyError

AUDIO_OUTPUT_SYNCHRONOUS = 2
ESPEAK_INITIALIZE_DONT_EXIT = 0x8000
ESPEAK_CHARS_UTF8 = 1
POSITION_CHARACTER = 1
EE_OK = 0
# Milliseconds of audio espeak-ng hands over per callback. Its default (0: 60 ms) calls back into Python ~40 times
# for a clip of the demo (~0.2 ms of a worker's CPU a clip); 500 ms, 6 times. The samples do not depend on it
# while it stays well below a few seconds: at 500 and 1,000 ms the deterministic (male) voices' demo clips are
# byte-identical to the default's, at 2,000 ms most are not (tests/core/audio/test_tts_espeak.py).
BUFFER_MS = 500

# (language, accent) -> espeak-ng voice. There is no Indian-English voice offline, and none is faked.
STUDY_VOICES = {
    ("en", "american"): "en-us",
    ("en", "british"): "en-gb-x-rp",
    ("zh", "beijing"): "cmn",
    ("ko", "seoul"): "ko",
}
# Beyond the studies' three languages: every Global-MMLU language espeak-ng has a voice for, in that voice's own
# accent, named DEFAULT_ACCENT ('default', a factor level like any other: `metrics --factors accent` and the Results page
# group by it), so a benchmark in Arabic, Hindi or Swahili gets offline clips too. Left out: Japanese (espeak-ng reads kana only: kanji are spelled out as "Chinese letter", a 11-character
# question took 6.2 s against 1.6 s in kana) and the languages espeak-ng has no voice for (Filipino, Hausa, Igbo,
# Malagasy, Chichewa, Shona, Somali, Yoruba: `synthesize` says so and names a backend to use).
DEFAULT_ACCENT_VOICES = {
    "am": "am", "ar": "ar", "bn": "bn", "cs": "cs", "de": "de", "el": "el", "es": "es", "fa": "fa", "fr": "fr",
    "he": "he", "hi": "hi", "id": "id", "it": "it", "ky": "ky", "lt": "lt", "ms": "ms", "ne": "ne", "nl": "nl",
    "pl": "pl", "pt": "pt", "pt-br": "pt-br", "ro": "ro", "ru": "ru", "si": "si", "sr": "sr", "sv": "sv",
    "sw": "sw", "te": "te", "tr": "tr", "uk": "uk", "vi": "vi",
}  # fmt: skip
ESPEAK_VOICES = {
    **STUDY_VOICES,
    **{(language, DEFAULT_ACCENT): voice for language, voice in DEFAULT_ACCENT_VOICES.items()},
}
# Global-MMLU languages without an offline voice, and why: said by `synthesize` instead of "cannot speak"
NO_OFFLINE_VOICE = {
    "ja": "espeak-ng reads Japanese kana only (kanji are spelled out as Chinese letters); use Gemini or OpenAI TTS",
    "fil": "espeak-ng has no Filipino voice; OpenAI TTS speaks it (as Tagalog)",
    **{
        language: "espeak-ng has no voice for this language, and neither Gemini's nor OpenAI's TTS lists it: record "
        "real speakers (the Speakers page) for it"
        for language in ("ha", "ig", "mg", "ny", "sn", "so", "yo")
    },
}
# voice name -> (espeak-ng variant, speaker gender). Two per gender for the gender probes; the variants were
# chosen by their measured median F0 (core/audio/pitch.py), clear of the ambiguous band in en, zh and ko: m3
# 100-114 Hz, m6 93-107 Hz, f3 186-226 Hz, f5 186-215 Hz (f1, f4 fall to 163 Hz in Mandarin). In the other
# languages f3 falls to 169-172 Hz in Malay and Vietnamese; f5 stays above 176 Hz (docs/voices.md).
VARIANTS = {
    "espeak-male": ("m3", "male"),
    "espeak-female": ("f3", "female"),
    "espeak-male-2": ("m6", "male"),
    "espeak-female-2": ("f5", "female"),
}
DEFAULT_VOICES = ("espeak-male", "espeak-female")  # what `synthesize` speaks when no voice is chosen
# Each voice also has a gender-neutralized APPROXIMATION (core/audio/neutralize.py: the synthesized clip's pitch
# and formants shifted toward the ambiguous range), named '<voice>-neutral-approx'; the paper's own method
# (averaged speaker embeddings) needs Kokoro.
NEUTRAL_SUFFIX = "-neutral-approx"
TYPICAL_F0_HZ = {"male": 105.0, "female": 205.0}  # for clips too short to measure (a spoken letter)
MISSING_ACCENT_NOTES = {
    "en:indian": "espeak-ng has no Indian-English voice; use Gemini or OpenAI TTS for Indian English",
    "zh:northeastern": "espeak-ng has no Northeastern Mandarin voice; use Gemini TTS",
    "ko:jeolla": "espeak-ng has no Jeolla Korean voice; use Gemini TTS",
}

_lock = threading.Lock()
_engine: _Engine | None = None


class _Engine:
    """The loaded library, its sample rate, and the callback collecting samples for the current utterance."""

    def __init__(self, buffer_ms: int = BUFFER_MS):
        try:
            import espeakng_loader
        except ImportError as error:
            raise MissingDependencyError(
                f"offline TTS needs espeakng-loader ({error}); pip install espeakng-loader"
            ) from None
        self.lib = ctypes.CDLL(espeakng_loader.get_library_path())
        self.lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        self.lib.espeak_Initialize.restype = ctypes.c_int
        self.lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        self.lib.espeak_SetVoiceByName.restype = ctypes.c_int
        self.lib.espeak_Synth.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        self.lib.espeak_Synth.restype = ctypes.c_int
        self.lib.espeak_Synchronize.restype = ctypes.c_int
        data_path = espeakng_loader.get_data_path().encode()
        self.rate = self.lib.espeak_Initialize(
            AUDIO_OUTPUT_SYNCHRONOUS, buffer_ms, data_path, ESPEAK_INITIALIZE_DONT_EXIT
        )
        if self.rate <= 0:
            raise MissingDependencyError(f"libespeak-ng failed to initialise with data at {data_path.decode()}")
        self._chunks: list[bytes] = []
        self._voice: str | None = None  # the voice loaded last
        callback_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p)
        self._callback = callback_type(self._collect)  # kept referenced for the library's lifetime
        self.lib.espeak_SetSynthCallback(self._callback)

    def _collect(self, wav, count, events) -> int:
        if wav and count > 0:  # copied as bytes: a third of the cost of a numpy view and copy per callback
            self._chunks.append(ctypes.string_at(wav, count * ctypes.sizeof(ctypes.c_short)))
        return 0

    def speak(self, text: str, voice: str) -> np.ndarray:
        """int16 samples; callers hold `_lock`. The voice is loaded only when it changes (0.13 ms a time, a tenth
        of a short clip's synthesis; a plan's clips come voice by voice)."""
        if voice != self._voice:
            self._voice = None
            status = self.lib.espeak_SetVoiceByName(voice.encode())
            if status != EE_OK:
                raise AudioError(f"espeak-ng has no voice '{voice}' (error {status})")
            self._voice = voice
        self._chunks = []
        encoded = text.encode("utf-8") + b"\0"
        status = self.lib.espeak_Synth(encoded, len(encoded), 0, POSITION_CHARACTER, 0, ESPEAK_CHARS_UTF8, None, None)
        self.lib.espeak_Synchronize()
        if status != EE_OK:
            raise AudioError(f"espeak-ng could not synthesize the text (error {status})")
        return np.frombuffer(b"".join(self._chunks), dtype=np.int16)


def _engine_locked() -> _Engine:
    global _engine
    if _engine is None:
        _engine = _Engine()
    return _engine


def espeak_rate() -> int:
    with _lock:
        return _engine_locked().rate


def espeak_voices() -> tuple[VoiceSpec, ...]:
    """Every offline voice: the variants, then each one's neutralized approximation (same source gender)."""
    plain = [VoiceSpec(name, gender) for name, (_, gender) in VARIANTS.items()]
    neutral = [VoiceSpec(v.name + NEUTRAL_SUFFIX, v.gender, NEUTRALIZATION_METHOD) for v in plain]
    return tuple(plain + neutral)


class EspeakBackend(TTSBackend):
    def __init__(self, **_ignored):
        super().__init__(
            name="espeak",
            model="espeak-ng",
            output_rate=22_050,
            accents={
                **{"en": ("american", "british"), "zh": ("beijing",), "ko": ("seoul",)},
                **{language: (DEFAULT_ACCENT,) for language in DEFAULT_ACCENT_VOICES},
            },
            voices=espeak_voices(),
            default_voice_names=DEFAULT_VOICES,
            max_concurrency=1,
            synthesizes_in_processes=True,
            notes={**MISSING_ACCENT_NOTES, **NO_OFFLINE_VOICE},
        )

    def prepare(self) -> None:
        espeak_rate()  # loads the library: a missing package is said before any clip is tried

    def espeak_voice(self, request: SynthesisRequest) -> str:
        variant, _ = VARIANTS[request.voice.name.removesuffix(NEUTRAL_SUFFIX)]
        return f"{ESPEAK_VOICES[(self.spoken_as(request.language), request.accent)]}+{variant}"

    def speak_sync(self, request: SynthesisRequest) -> bytes:
        return encode_wav(*self._speak(request))

    def speak_audio(self, request: SynthesisRequest) -> Audio:
        """What `speak_sync`'s WAV decodes to, without writing and reading it: the speech workers' way."""
        samples, rate = self._speak(request)
        return Audio(as_stored(samples), rate)

    def _speak(self, request: SynthesisRequest) -> tuple[np.ndarray, int]:
        self.check(request)
        voice = self.espeak_voice(request)
        with _lock:
            engine = _engine_locked()
            samples = engine.speak(request.text, voice)
            rate = engine.rate
        audio = samples.astype(np.float32) / 32768.0
        if request.voice.neutralization == NEUTRALIZATION_METHOD:  # outside the lock: pure numpy
            fallback = TYPICAL_F0_HZ[request.voice.gender]
            audio = neutralize_approximation(audio, rate, fallback_f0=fallback).samples
        return audio, rate

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        return await asyncio.to_thread(self.speak_sync, request)
