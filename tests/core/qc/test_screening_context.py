"""Screening in context (issue 13 item 5a): an item's question and options heard as one clip and the transcript
split back into its parts; the transcripts are stored under `ASR+context`, one more system for the minimum."""

import asyncio
import sys
import types

import numpy as np
import pytest
from qc_support import add_clip, item_id, tone_wav

from spokenbench.core.asr.backends import get_asr_backend
from spokenbench.core.asr.context import context_groups, join_audio, split_transcript
from spokenbench.core.asr.screening import ScreeningSettings, compute_screening
from spokenbench.core.asr.transcribe import plan_transcription, run_transcription

FLAG = ["What is the flag of Korea called?", "Hinomaru", "Taegukgi", "Union Jack"]


@pytest.mark.parametrize(
    "transcript, expected",
    [
        (
            "What is the flag of Korea called? Hinomaru. Taegukgi. Union Jack.",
            ["what is the flag of korea called", "hinomaru", "taegukgi", "union jack"],
        ),
        (  # words split by the ASR stay with their part; a trailing invention lands on the last option
            "What is the flag of Korea called? Hino Maru. Tae guk gi. Union Jack. Thank you for watching.",
            ["what is the flag of korea called", "hino maru", "tae guk gi", "union jack thank you for watching"],
        ),
        (  # an option not heard at all is empty, not its neighbour's
            "What is the flag of Korea called? Taegukgi. Union Jack.",
            ["what is the flag of korea called", "", "taegukgi", "union jack"],
        ),
    ],
)
def test_english_split(transcript, expected):
    assert split_transcript(FLAG, transcript, "en") == expected


def test_chinese_and_korean_split():
    assert split_transcript(["韩国国旗叫什么", "太极旗", "日之丸"], "韩国国旗叫什么?太极旗,日之丸。谢谢观看", "zh") == [
        "韩国国旗叫什么",
        "太极旗",
        "日之丸谢谢观看",
    ]
    assert split_transcript(["세포 호흡은", "광합성"], "세포 호읍은 광합성", "ko") == ["세포 호읍은", "광합성"]


def test_groups_are_one_voice_reading_one_item():
    rows = [
        {"id": 1, "item_id": 7, "part": "option_B", "voice": "a"},
        {"id": 2, "item_id": 7, "part": "question", "voice": "a"},
        {"id": 3, "item_id": 7, "part": "option_A", "voice": "a"},
        {"id": 4, "item_id": 7, "part": "question", "voice": "b"},
        {"id": 5, "item_id": 7, "part": "option_A", "voice": "a"},  # synthesized again: a second group
        {"id": 6, "item_id": None, "part": "token", "voice": "a"},
    ]
    groups = [[(r["id"], r["part"]) for r in group] for group in context_groups(rows)]
    assert groups == [[(2, "question"), (3, "option_A"), (1, "option_B")], [(5, "option_A")], [(4, "question")]]


def test_join_audio_resamples_and_puts_silence_between():
    joined = join_audio([(np.ones(8000, np.float32), 8000), (np.ones(32000, np.float32), 32000)], gap_s=0.5)
    assert joined.dtype == np.float32 and len(joined) == 16000 + 8000 + 16000
    assert np.allclose(joined[16000:24000], 0.0)


@pytest.mark.slow
def test_in_context_transcription_and_screening(qc_project, monkeypatch, tmp_path):
    heard = {}

    class WhisperModel:
        def __init__(self, path, device, compute_type):
            pass

        def transcribe(self, samples, language, beam_size):
            heard.setdefault("seconds", []).append(len(samples) / 16000)
            text = "Which holiday is in November? Thanksgiving. Easter. Thank you for watching."
            return iter([types.SimpleNamespace(text=text, no_speech_prob=0.01)]), None

    monkeypatch.setitem(sys.modules, "faster_whisper", types.SimpleNamespace(WhisperModel=WhisperModel))
    model = tmp_path / "whisper-small"
    model.mkdir()
    en = item_id(qc_project, "q3", "en")
    question = add_clip(qc_project, en, "question", "Which holiday is in November?", "en", audio=tone_wav(220, 1.0))
    option_a = add_clip(qc_project, en, "option_A", "Thanksgiving", "en", audio=tone_wav(330, 0.5))
    option_b = add_clip(qc_project, en, "option_B", "Easter", "en", audio=tone_wav(440, 0.5))
    backend = get_asr_backend(f"local:{model}+context")
    assert backend.name == "local:whisper-small+context"
    plan = plan_transcription(qc_project.conn, [backend])
    assert len(plan.jobs) == 1 and plan.clips_to_do == {backend.name: 3}
    report = asyncio.run(run_transcription(qc_project, plan))
    assert report.requests == 1 and report.transcripts == 3
    assert heard["seconds"] == [pytest.approx(1.0 + 0.5 + 0.5 + 0.5 + 0.5)]  # three clips, two gaps
    stored = dict(
        qc_project.conn.execute("SELECT clip_id, text FROM transcripts WHERE asr = ?", (backend.name,)).fetchall()
    )
    assert stored == {
        question: "which holiday is in november",
        option_a: "thanksgiving",
        option_b: "easter thank you for watching",
    }
    assert plan_transcription(qc_project.conn, [backend]).jobs == [], "done: a rerun has nothing to do"
    result = compute_screening(qc_project.conn, ScreeningSettings(min_asr=1))
    assert result.scores[option_a].errors == 0
    assert result.hallucinated == {option_b: "local:whisper-small+context: stock phrase (thank you)"}
