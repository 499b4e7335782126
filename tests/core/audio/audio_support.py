"""Helpers for the audio tests: a deterministic stand-in TTS backend and a small item set."""

import asyncio
import time

import numpy as np
from support import tone

from spokenbench.core.audio.checks import plausible_duration
from spokenbench.core.audio.io import Audio, decode_audio, encode_wav
from spokenbench.core.audio.tts.base import SynthesisRequest, TTSBackend, VoiceSpec

TONE_RATE = 16_000


class ToneBackend(TTSBackend):
    """A deterministic stand-in for a TTS service: each text becomes a tone whose pitch encodes the text, with a
    duration plausible for it. Text containing 'SILENT' comes back silent, to exercise the arrival checks."""

    def __init__(self):
        super().__init__(
            name="tone",
            model="tone-1",
            output_rate=TONE_RATE,
            accents={"en": ("american", "british"), "ko": ("seoul",)},
            voices=(VoiceSpec("low", "male"), VoiceSpec("high", "female")),
            max_concurrency=4,
        )
        self.calls: list[SynthesisRequest] = []

    def frequency(self, request: SynthesisRequest) -> float:
        base = 150 if request.voice.name == "low" else 300
        return base + (sum(map(ord, request.text)) % 40) * 5

    async def synthesize(self, request: SynthesisRequest) -> bytes:
        self.check(request)
        self.calls.append(request)
        await asyncio.sleep(0)
        seconds = sum(plausible_duration(request.text)) / 4  # a believable speaking rate
        samples = tone(self.frequency(request), seconds, 0.3, TONE_RATE)
        if "SILENT" in request.text:
            samples = np.zeros_like(samples)
        return encode_wav(samples, TONE_RATE)


MINI_ITEMS = [
    {
        "id": "q1",
        "language": "en",
        "question": "Which gas do plants take in?",
        "options": ["Oxygen", "Carbon dioxide", "Nitrogen", "Helium"],
        "answer": "B",
    },
    {
        "id": "q2",
        "language": "en",
        "question": "How many legs has a spider?",
        "options": ["Six", "Eight", "Ten", "Twelve"],
        "answer": "B",
    },
    {
        "id": "q1",
        "language": "ko",
        "question": "식물은 어떤 기체를 흡수합니까?",
        "options": ["산소", "이산화탄소", "질소", "헬륨"],
        "answer": "B",
    },
]


class LocalToneBackend(ToneBackend):
    """The tone backend as a local engine (core/audio/clip_workers.py): rendered in worker processes, made there by
    calling this class. Deterministic, so the pooled path can be compared byte for byte with the one-at-a-time path.
    Text containing 'SLOW' takes 50 ms, so a test can stop the job midway."""

    def __init__(self):
        super().__init__()
        self.synthesizes_in_processes = True

    def speak_audio(self, request: SynthesisRequest) -> Audio:
        if "SLOW" in request.text:
            time.sleep(0.05)
        return decode_audio(asyncio.run(ToneBackend.synthesize(self, request)), "tone")
