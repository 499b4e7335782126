"""Helpers for the quality-control tests: clips inserted directly (with real tone audio where a test transcribes
them), transcripts, and an OpenAI-style chat reply builder for the rewriting stub."""

import hashlib
import json

import numpy as np
from stub_server import StubServer  # noqa: F401  (re-exported for the tests)
from support import tone

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.jobs.remote import RetryPolicy
from spokenbench.core.store.database import utc_now

FAST_RETRIES = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05)
CHAT_ROUTE = r"/v1/chat/completions$"
SECRET = "nvapi-test-secret-value-123"

QC_ITEMS = [
    {
        "id": "q1",
        "language": "en",
        "subject": "high_school_chemistry",
        "question": "What is the molar mass of H2SO4?",
        "options": ["96 g/mol", "98 g/mol", "82 g/mol", "49 g/mol"],
        "answer": "B",
    },
    {
        "id": "q2",
        "language": "en",
        "subject": "high_school_physics",
        "question": "A ball falls for 2 s. How far?",
        "options": ["19.6 m", "9.8 m", "4.9 m", "39.2 m"],
        "answer": "A",
    },
    {
        "id": "q3",
        "language": "en",
        "subject": "miscellaneous",
        "question": "Which holiday is in November?",
        "options": ["Thanksgiving", "Easter", "Halloween", "Labor Day"],
        "answer": "A",
    },
    {
        "id": "q1",
        "language": "zh",
        "subject": "high_school_chemistry",
        "question": "H2SO4（硫酸）的摩尔质量约为多少？",
        "options": ["96 g/mol", "98 g/mol", "82 g/mol", "49 g/mol"],
        "answer": "B",
    },
    {
        "id": "q1",
        "language": "ko",
        "subject": "high_school_chemistry",
        "question": "H2SO4(황산)의 몰 질량은 약 얼마입니까?",
        "options": ["96 g/mol", "98 g/mol", "82 g/mol", "49 g/mol"],
        "answer": "B",
    },
]


def item_id(project, source_id: str, language: str) -> int:
    return project.conn.execute(
        "SELECT id FROM items WHERE source_id = ? AND language = ?", (source_id, language)
    ).fetchone()[0]


def add_clip(
    project,
    item,
    part: str,
    text: str,
    language: str,
    accent: str | None = "american",
    voice: str = "v1",
    audio: bytes | None = None,
    status: str = "ok",
) -> int:
    """A clip row as synthesis would leave it. With `audio`, the bytes go to the audio store."""
    sha = (
        project.audio.put_bytes(audio, "wav")
        if audio
        else hashlib.sha256(f"{item}{part}{voice}{accent}{text}".encode()).hexdigest()
    )
    key = hashlib.sha256(f"{item}|{part}|{voice}|{accent}|{text}".encode()).hexdigest()
    with project.transaction() as conn:
        cursor = conn.execute(
            "INSERT INTO clips(item_id, part, text, language, accent, voice, backend, cache_key, sha256, audio_format, "
            "duration_s, sample_rate, status, created_at) VALUES (?, ?, ?, ?, ?, ?, 'test', ?, ?, 'wav', 1.0, 16000, ?, ?)",
            (item, part, text, language, accent, voice, key, sha if status == "ok" else None, status, utc_now()),
        )
    return cursor.lastrowid


def tone_wav(frequency: float = 220, seconds: float = 0.5) -> bytes:
    return encode_wav(tone(frequency, seconds, 0.3, 16_000), 16_000)


def add_transcript(project, clip_id: int, asr: str, text: str) -> None:
    with project.transaction() as conn:
        conn.execute(
            "INSERT INTO transcripts(clip_id, asr, model, text, created_at) VALUES (?, ?, ?, ?, ?)",
            (clip_id, asr, asr, text, utc_now()),
        )


def chat_reply(content: str, status: int = 200):
    from stub_server import Reply

    return Reply(
        status,
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def rewrite_json(question: str, options: list[str]) -> str:
    return json.dumps({"question": question, "options": options}, ensure_ascii=False)


def speechlike(seconds=2.0):
    """A 180 Hz tone whose loudness rises and falls four times a second, with short pauses: syllables."""
    t = np.arange(int(seconds * 16_000)) / 16_000
    envelope = np.clip(np.sin(2 * np.pi * 2 * t), 0, None) ** 0.5
    return (0.4 * envelope * np.sin(2 * np.pi * 180 * t)).astype(np.float32)
