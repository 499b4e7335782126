import asyncio
import concurrent.futures

import numpy as np
import pytest
from support import pitch, write_jsonl

from spokenbench.core.audio.io import decode_audio
from spokenbench.core.audio.pitch import median_f0
from spokenbench.core.audio.synthesis import plan_synthesis
from spokenbench.core.audio.tts import SynthesisRequest, get_backend
from spokenbench.core.audio.tts.base import UnsupportedRequest
from spokenbench.core.audio.tts.espeak import DEFAULT_ACCENT_VOICES
from spokenbench.core.domain.conditions import DEFAULT_ACCENT
from spokenbench.core.importers import ImportOptions, import_files


@pytest.fixture(scope="module")
def espeak():
    return get_backend("espeak")


def speak(backend, text, language, accent, voice):
    return asyncio.run(backend.synthesize(SynthesisRequest(text, language, accent, backend.voice(voice))))


@pytest.mark.parametrize(
    "language, accent, text",
    [
        ("en", "american", "What is the capital of France?"),
        ("en", "british", "Which planet is largest?"),
        ("zh", "beijing", "中国的首都是哪里？"),
        ("ko", "seoul", "한국의 수도는 어디입니까?"),
    ],
)
def test_every_offline_language_speaks_in_both_voices(espeak, language, accent, text):
    pitches = {}
    for voice in ("espeak-male", "espeak-female"):
        audio = decode_audio(speak(espeak, text, language, accent, voice), f"{language} {voice}")
        assert audio.rate == espeak.output_rate and 0.5 < audio.duration < 10
        assert np.abs(audio.samples).max() > 0.05
        voiced = audio.samples[int(0.2 * audio.rate) :]
        pitches[voice] = pitch(voiced, audio.rate)
    assert pitches["espeak-female"] > pitches["espeak-male"] * 1.2


def test_missing_accents_and_languages_are_refused_with_a_reason(espeak):
    with pytest.raises(UnsupportedRequest, match="no Indian-English voice"):
        speak(espeak, "Hello", "en", "indian", "espeak-male")
    with pytest.raises(UnsupportedRequest, match="cannot speak language 'ja'"):
        speak(espeak, "日本の首都はどこですか", "ja", None, "espeak-male")
    with pytest.raises(UnsupportedRequest, match="no american accent for ar .offers default."):
        speak(espeak, "مرحبا", "ar", "american", "espeak-male")
    with pytest.raises(UnsupportedRequest, match="empty text"):
        speak(espeak, "   ", "en", "american", "espeak-male")
    with pytest.raises(UnsupportedRequest, match="no voice 'Orus'"):
        espeak.voice("Orus")


@pytest.mark.parametrize("language", sorted(DEFAULT_ACCENT_VOICES))  # ~0.05 s each
def test_every_global_mmlu_language_espeak_ng_has_is_spoken_in_its_default_accent_by_a_male_and_a_female_voice(
    espeak, language
):
    """Beyond en/zh/ko: each language's own reading of the digits (its dictionary, not English letter names), in
    the 'default' accent, at a speaking rate, the male voice below the pitch band's 145 Hz and the female one above
    its 175 Hz (espeak-female-2: espeak-female falls to 169-172 Hz in Malay and Vietnamese; docs/voices.md)."""
    assert language in espeak.languages and espeak.accents[language] == (DEFAULT_ACCENT,)
    durations, pitches = {}, {}
    for voice in ("espeak-male", "espeak-female-2"):
        audio = decode_audio(speak(espeak, "1, 2, 3, 4, 5, 6, 7, 8, 9, 10?", language, DEFAULT_ACCENT, voice), language)
        assert np.abs(audio.samples).max() > 0.05
        durations[voice], pitches[voice] = audio.duration, median_f0(audio.samples, audio.rate)
    assert all(1.5 < seconds < 12 for seconds in durations.values()), durations
    assert pitches["espeak-male"] < 145 < 175 < pitches["espeak-female-2"], pitches


def test_the_languages_without_an_offline_voice_are_named_with_the_reason_and_a_backend_to_use(project, tmp_path):
    """Japanese (kanji would be spelled out) and the Global-MMLU languages espeak-ng has no voice for are said by
    `synthesize`'s plan, not planned; an Arabic item is planned in the default accent."""
    items = [
        {"id": f"{language}-1", "language": language, "question": question, "options": ["1", "2"], "answer": "A"}
        for language, question in (
            ("ja", "日本の首都はどこですか"),
            ("yo", "Kí ni olú ìlú?"),
            ("ar", "ما هي عاصمة فرنسا؟"),
        )
    ]
    import_files(project, [write_jsonl(tmp_path / "items.jsonl", items)], "mcq", ImportOptions(source="t"))
    plan = plan_synthesis(project.conn, get_backend("espeak"), parts=("questions",))
    assert {(job.request.language, job.request.accent) for job in plan.jobs} == {("ar", DEFAULT_ACCENT)}
    notes = " | ".join(sorted(plan.unsupported))
    assert "espeak cannot speak ja: espeak-ng reads Japanese kana only" in notes
    assert "espeak cannot speak yo: espeak-ng has no voice for this language, and neither Gemini" in notes


def test_concurrent_calls_are_serialized(espeak):
    """libespeak-ng is not thread-safe: without the process-wide lock, utterances would interleave."""
    texts = [f"Option number {n} is {'very ' * n}long" for n in range(8)]
    sequential = [decode_audio(speak(espeak, t, "en", "american", "espeak-male"), t).duration for t in texts]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        parallel = list(
            pool.map(lambda t: decode_audio(speak(espeak, t, "en", "american", "espeak-male"), t).duration, texts)
        )
    assert parallel == pytest.approx(sequential, abs=0.05)
    assert sorted(sequential) == sequential  # longer text, longer audio: each clip holds its own utterance


def test_the_voice_is_loaded_again_only_when_it_changes_and_every_change_is_heard(espeak, monkeypatch):
    """The engine loads a voice only when the next clip's differs (issue 28): clips in one voice, then another,
    then the first again each sound in their own voice, and a refused voice name leaves nothing half-loaded."""
    from spokenbench.core.audio.io import AudioError
    from spokenbench.core.audio.tts import espeak as espeak_module

    engine = espeak_module._engine_locked()
    loads = []
    real_load = engine.lib.espeak_SetVoiceByName
    monkeypatch.setattr(engine.lib, "espeak_SetVoiceByName", lambda name: loads.append(name) or real_load(name))
    monkeypatch.setattr(engine, "_voice", None)  # whatever an earlier test spoke last
    text = "What is the capital of France?"
    voices = ["espeak-male", "espeak-male", "espeak-female", "espeak-female", "espeak-male"]
    pitches = []
    for voice in voices:
        audio = decode_audio(speak(espeak, text, "en", "american", voice), voice)
        pitches.append(pitch(audio.samples[int(0.2 * audio.rate) :], audio.rate))
    assert loads == [b"en-us+m3", b"en-us+f3", b"en-us+m3"]
    assert min(pitches[2:4]) > max(pitches[0], pitches[1], pitches[4]) * 1.2
    with pytest.raises(AudioError, match="no voice 'nonesuch'"):
        engine.speak(text, "nonesuch")
    engine.speak(text, "en-us+m3")
    assert loads[-2:] == [b"nonesuch", b"en-us+m3"]  # loaded again after the refusal


BUFFER_PROBE = """
import hashlib, json, sys
from spokenbench.core.audio.tts import espeak
engine = espeak._Engine(int(sys.argv[1]))
spoken = [engine.speak(text, voice) for text, voice in json.loads(sys.stdin.read())]
print(json.dumps([hashlib.sha256(samples.tobytes()).hexdigest() for samples in spoken]))
"""


@pytest.mark.slow
def test_the_callback_buffer_changes_no_sample():
    """espeak-ng hands its samples over in buffers of BUFFER_MS (fewer calls into Python than its default 60 ms):
    a fresh process speaking the demo's questions and options in the deterministic (male) voices of every offline
    language, in one order, gets the same samples either way — while a buffer of seconds would change them, so
    the comparison can tell."""
    import json
    import subprocess
    import sys

    from spokenbench.core.audio.tts.espeak import BUFFER_MS
    from spokenbench.core.demo.project import DEMO_MCQ, demo_file

    with demo_file(DEMO_MCQ) as path:
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    voices = {"en": ("en-us+m3", "en-gb-x-rp+m6"), "zh": ("cmn+m3",), "ko": ("ko+m3",)}
    texts = [
        (text, voice)
        for row in rows[::4]
        for voice in voices[row["language"]]
        for text in [row["rewrite"]["question"], *row["rewrite"]["options"]]
    ]

    def sample_digests(buffer_ms: int) -> list[str]:
        probe = [sys.executable, "-c", BUFFER_PROBE, str(buffer_ms)]
        done = subprocess.run(probe, input=json.dumps(texts), capture_output=True, text=True, check=True, timeout=300)
        return json.loads(done.stdout)

    default = sample_digests(0)
    assert len(default) == len(texts) >= 40
    assert sample_digests(BUFFER_MS) == default
    assert sample_digests(5000) != default


def test_native_instruction_tokens_are_left_out_with_a_note_where_no_native_word_is_known(project, tmp_path):
    """Before, an Arabic voice read the English word 'Question' as if it were Arabic's."""
    items = [{"id": "ar-1", "language": "ar", "question": "ما هي عاصمة فرنسا؟", "options": ["1", "2"], "answer": "A"}]
    import_files(project, [write_jsonl(tmp_path / "items.jsonl", items)], "mcq", ImportOptions(source="t"))
    native = plan_synthesis(project.conn, get_backend("espeak"), parts=("tokens",), token_language="native")
    assert not native.jobs
    assert native.unsupported == [
        "no native word for 'question' is known in ar (only en, zh, ko): its instruction tokens are left out; use "
        "--token-language english, as the paper did"
    ]
    english = plan_synthesis(project.conn, get_backend("espeak"), parts=("tokens",))
    assert {job.request.text for job in english.jobs} == {"Question", "A", "B"} and not english.unsupported


def test_an_item_language_with_a_region_is_spoken_in_its_base_language_s_voice(project, tmp_path):
    """'ar-EG' and 'es-419' items (stored lower case) are spoken by the ar and es voices and keep their own codes;
    before, espeak said it 'cannot speak ar-eg'."""
    items = [
        {"id": "ar-1", "language": "ar-EG", "question": "ما هي عاصمة فرنسا؟", "options": ["1", "2"], "answer": "A"},
        {"id": "es-1", "language": "es-419", "question": "¿Cuál es la capital?", "options": ["1", "2"], "answer": "A"},
    ]
    import_files(project, [write_jsonl(tmp_path / "items.jsonl", items)], "mcq", ImportOptions(source="t"))
    backend = get_backend("espeak")
    plan = plan_synthesis(project.conn, backend, parts=("questions",), voices=["espeak-male"])
    assert not plan.unsupported
    assert sorted((job.request.language, job.request.accent) for job in plan.jobs) == [
        ("ar-eg", DEFAULT_ACCENT),
        ("es-419", DEFAULT_ACCENT),
    ]
    assert {backend.espeak_voice(job.request) for job in plan.jobs} == {"ar+m3", "es+m3"}
    assert (
        decode_audio(speak(backend, "¿Cuál es la capital?", "es-419", DEFAULT_ACCENT, "espeak-male"), "es").duration
        > 0.5
    )
