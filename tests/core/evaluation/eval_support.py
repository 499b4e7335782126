"""Helpers for the evaluation tests: projects with items and assembled inputs written directly (audio
assembly itself belongs to core/audio), test keys, small WAVs."""

import hashlib
import io

import numpy as np
import soundfile as sf

from spokenbench.core.domain.conditions import Condition, order_strings
from spokenbench.core.domain.items import Item, Option
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.items import insert_items

TEST_KEYS = {
    "OPENAI_API_KEY": "sk-test-openai-0123456789abcdef",
    "GEMINI_API_KEY": "AIzaTestGeminiKey0123456789abcdefghij",
    "NVIDIA_API_KEY": "nvapi-test-0123456789",
    "MISTRAL_API_KEY": "mistral-test-0123456789",
}


def wav_bytes(seconds: float = 0.3, frequency: float = 440.0, rate: int = 16000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    buffer = io.BytesIO()
    sf.write(buffer, (0.2 * np.sin(2 * np.pi * frequency * t)).astype(np.float32), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def make_items(count: int = 3, language: str = "en", source: str = "t") -> list[Item]:
    return [
        Item(
            source=source,
            source_id=f"q{n}",
            language=language,
            question=f"What is {n} plus {n}?",
            options=tuple(
                Option(letter, f"{value}") for letter, value in zip("ABCD", (2 * n + 1, 2 * n, 2 * n + 2, 2 * n + 3))
            ),
            answer="B",
            cultural_label="CA",
        )
        for n in range(count)
    ]


def add_items(project, count: int = 3, language: str = "en") -> list[int]:
    with project.transaction() as conn:
        return insert_items(conn, make_items(count, language))


def add_assembled(
    project,
    item_id: int,
    condition: Condition,
    seconds: float = 0.3,
    chunks: dict | None = None,
    frequency: float | None = None,
) -> int:
    """An assembled input for (item, condition): a generated tone stored content-addressed, plus optional
    chunk sets {max_seconds: [seconds, ...]}. The tone differs per condition so hashes differ."""
    option_count = 4
    option_order, label_sequence = order_strings(condition.order, option_count)
    key = condition.key()
    frequency = frequency or 200 + int(hashlib.sha256(f"{item_id}{key}".encode()).hexdigest()[:3], 16) % 600
    data = wav_bytes(min(seconds, 0.3), frequency)  # durations are declared; the bytes stay small
    sha = project.audio.put_bytes(data, "wav")
    with project.transaction() as conn:
        input_id = conn.execute(
            "INSERT INTO assembled_inputs(item_id, condition_key, option_order, label_sequence, recipe_sha256, sha256, "
            "audio_format, duration_s, sample_rate, text_rendering, created_at) VALUES (?, ?, ?, ?, ?, ?, 'wav', ?, 16000, ?, ?)",
            (item_id, key, option_order, label_sequence, sha, sha, seconds, "text", utc_now()),
        ).lastrowid
        for max_seconds, parts in (chunks or {}).items():
            for position, part_seconds in enumerate(parts):
                part_sha = project.audio.put_bytes(wav_bytes(0.2, frequency + position + 1), "wav")
                conn.execute(
                    "INSERT INTO input_chunks(input_id, max_seconds, position, sha256, duration_s) VALUES (?, ?, ?, ?, ?)",
                    (input_id, max_seconds, position, part_sha, part_seconds),
                )
    return input_id
