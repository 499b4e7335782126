"""Transcription through the real openai and google-genai SDKs against loopback stubs, the local faster-whisper
glue, failures that do not stop a batch, and the CLI."""

import asyncio
import base64
import sys
import types

import pytest
from qc_support import FAST_RETRIES, StubServer, add_clip, item_id, tone_wav
from stub_server import Reply

from spokenbench.core.asr.backends import get_asr_backend, parse_asr_spec
from spokenbench.core.asr.transcribe import plan_transcription, run_transcription
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError
from spokenbench.core.jobs.remote import RemoteAuthError

OPENAI_ROUTE = r"/v1/audio/transcriptions$"
GEMINI_ROUTE = r"/models/[^/]+:generateContent"
KEY = "sk-test-transcribe-key-456"


def gemini_text(text: str) -> Reply:
    return Reply(
        200,
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 5, "totalTokenCount": 15},
        },
    )


@pytest.fixture
def clips(qc_project):
    """Three English clips (two of them the same audio) and one Korean clip, all with real WAV audio."""
    en, ko = item_id(qc_project, "q3", "en"), item_id(qc_project, "q1", "ko")
    same = tone_wav(220)
    ids = [
        add_clip(qc_project, en, "question", "Which holiday is in November?", "en", voice="v1", audio=same),
        add_clip(qc_project, en, "option_A", "Thanksgiving", "en", voice="v1", audio=tone_wav(330)),
        add_clip(
            qc_project, en, "question", "Which holiday is in November?", "en", accent="british", voice="v2", audio=same
        ),
        add_clip(
            qc_project, ko, "question", "황산의 몰 질량은 약 얼마입니까?", "ko", accent="seoul", audio=tone_wav(440)
        ),
    ]
    add_clip(qc_project, en, "option_B", "Easter", "en", status="failed")  # never transcribed
    return ids


def transcripts(project, asr):
    return dict(project.conn.execute("SELECT clip_id, text FROM transcripts WHERE asr = ?", (asr,)).fetchall())


@pytest.mark.slow
def test_openai_transcription_is_multipart_with_language_and_dedups_identical_audio(qc_project, clips):
    with StubServer() as server:
        server.script("POST", OPENAI_ROUTE, Reply(200, {"text": " Which holiday is in November? "}))
        backend = get_asr_backend(f"openai:whisper-1@{server.url}/v1", key=KEY)
        plan = plan_transcription(qc_project.conn, [backend])
        report = asyncio.run(run_transcription(qc_project, plan, retry_policy=FAST_RETRIES))
        sent = server.requests_to(OPENAI_ROUTE)
    assert len(plan.jobs) == 3 and report.requests == 3 and report.transcripts == 4, "identical audio is sent once"
    assert transcripts(qc_project, "openai:whisper-1")[clips[0]] == "Which holiday is in November?"
    first = sent[0]
    assert first.headers["content-type"].startswith("multipart/form-data")
    assert first.headers["authorization"] == f"Bearer {KEY}"
    body = first.body
    assert b'name="model"' in body and b"whisper-1" in body and b'filename="clip.wav"' in body and b"RIFF" in body
    languages = sorted(r.body.split(b'name="language"')[1].split(b"\r\n")[2] for r in sent)
    assert languages == [b"en", b"en", b"ko"]
    again = plan_transcription(qc_project.conn, [backend])
    assert again.jobs == [] and again.already_done == {"openai:whisper-1": 4}


@pytest.mark.slow
def test_gemini_transcription_sends_inline_audio_and_an_instruction(qc_project, clips):
    with StubServer() as server:
        server.script("POST", GEMINI_ROUTE, gemini_text("Thanksgiving"))
        backend = get_asr_backend(f"gemini:gemini-2.5-flash@{server.url}", key=KEY)
        report = asyncio.run(
            run_transcription(
                qc_project, plan_transcription(qc_project.conn, [backend], ["en"]), retry_policy=FAST_RETRIES
            )
        )
        sent = server.requests_to(GEMINI_ROUTE)
    assert report.transcripts == 3 and len(sent) == 2
    assert "gemini-2.5-flash" in sent[0].path and sent[0].headers["x-goog-api-key"] == KEY
    body = sent[0].json()
    parts = body["contents"][0]["parts"]
    inline = parts[0].get("inlineData") or parts[0]["inline_data"]
    assert (inline.get("mimeType") or inline["mime_type"]) == "audio/wav"
    assert base64.urlsafe_b64decode(inline["data"] + "==")[:4] == b"RIFF"  # the SDK sends URL-safe base64
    assert "Transcribe" in parts[1]["text"] and "English" in parts[1]["text"]
    thinking = body["generationConfig"].get("thinkingConfig") or body["generationConfig"]["thinking_config"]
    assert (thinking.get("thinkingBudget") if "thinkingBudget" in thinking else thinking["thinking_budget"]) == 0
    assert set(transcripts(qc_project, "gemini:gemini-2.5-flash").values()) == {"Thanksgiving"}


@pytest.mark.slow
def test_a_failing_clip_is_listed_and_the_batch_goes_on(qc_project, clips):
    with StubServer() as server:
        server.script(
            "POST",
            r"/v1/audio/transcriptions$",
            Reply(400, {"error": {"message": "audio too short"}}),
            Reply(200, {"text": "ok"}),
        )
        backend = get_asr_backend(f"compatible:whisper-large-v3@{server.url}/v1")  # a local server: no key needed
        plan = plan_transcription(qc_project.conn, [backend])
        report = asyncio.run(run_transcription(qc_project, plan, retry_policy=FAST_RETRIES))
        assert server.requests_to(r"transcriptions")[0].headers["authorization"] == "Bearer not-needed"
    assert report.failed_clips >= 1 and report.transcripts == 4 - report.failed_clips
    assert "audio too short" in report.failures[0] and "compatible:whisper-large-v3" in report.failures[0]
    failed = qc_project.conn.execute("SELECT clip_id, message FROM transcript_failures").fetchall()
    assert len(failed) == report.failed_clips
    # the next run retries exactly the failed clips and clears their failure records
    with StubServer() as server:
        server.script("POST", r"/v1/audio/transcriptions$", Reply(200, {"text": "fixed"}))
        backend = get_asr_backend(f"compatible:whisper-large-v3@{server.url}/v1")
        report = asyncio.run(
            run_transcription(qc_project, plan_transcription(qc_project.conn, [backend]), retry_policy=FAST_RETRIES)
        )
    assert report.transcripts == len(failed)
    assert qc_project.conn.execute("SELECT count(*) FROM transcript_failures").fetchone()[0] == 0


@pytest.mark.slow
def test_missing_audio_file_is_a_clip_failure_not_a_crash(qc_project, clips):
    sha = qc_project.conn.execute("SELECT sha256 FROM clips WHERE id = ?", (clips[1],)).fetchone()[0]
    qc_project.audio.path_for(sha, "wav").unlink()
    with StubServer() as server:
        server.script("POST", OPENAI_ROUTE, Reply(200, {"text": "x"}))
        backend = get_asr_backend(f"openai:whisper-1@{server.url}/v1", key=KEY)
        report = asyncio.run(
            run_transcription(qc_project, plan_transcription(qc_project.conn, [backend]), retry_policy=FAST_RETRIES)
        )
    assert report.failed_clips == 1 and "missing from the project" in report.failures[0]


@pytest.mark.slow
def test_401_stops_transcription_and_hides_the_key(qc_project, clips):
    with StubServer() as server:
        server.script("POST", OPENAI_ROUTE, Reply(401, {"error": {"message": f"bad key {KEY}"}}))
        backend = get_asr_backend(f"openai:whisper-1@{server.url}/v1", key=KEY)
        backend.max_concurrency = 1
        with pytest.raises(RemoteAuthError) as caught:
            asyncio.run(
                run_transcription(qc_project, plan_transcription(qc_project.conn, [backend]), retry_policy=FAST_RETRIES)
            )
        assert len(server.requests_to(OPENAI_ROUTE)) == 1
    assert KEY not in str(caught.value)
    assert qc_project.conn.execute("SELECT count(*) FROM transcripts").fetchone()[0] == 0


def test_asr_specs():
    assert parse_asr_spec("openai").name == "openai:whisper-1"
    spec = parse_asr_spec("compatible:whisper-large-v3@http://user:pw@127.0.0.1:8000/v1")
    assert (spec.name, spec.base_url) == ("compatible:whisper-large-v3", "http://user:pw@127.0.0.1:8000/v1")
    assert parse_asr_spec("mistral").base_url == "https://api.mistral.ai/v1"
    for bad in ("whisper", "compatible:whisper", "openai:@", "nope:model"):
        with pytest.raises(SpokenBenchError, match="--asr"):
            parse_asr_spec(bad)


@pytest.mark.slow
def test_local_asr_without_the_extra_says_what_to_install(qc_project, clips, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "faster_whisper", None)
    backend = get_asr_backend(f"local:{tmp_path}")
    with pytest.raises(MissingDependencyError, match=r"spokenbench-studio\[local-asr\]"):
        asyncio.run(run_transcription(qc_project, plan_transcription(qc_project.conn, [backend])))


@pytest.mark.slow
def test_local_asr_glue_with_a_stand_in_model(qc_project, clips, monkeypatch, tmp_path):
    """faster-whisper itself is not installed here (it needs model weights); a stand-in module with its
    interface checks what our side does: load from the folder once, 16 kHz float32 mono, the language code."""
    calls = {}

    class WhisperModel:
        def __init__(self, path, device, compute_type):
            calls["init"] = calls.get("init", 0) + 1
            calls["path"], calls["device"] = path, device

        def transcribe(self, samples, language, beam_size):
            calls.setdefault("audio", []).append((str(samples.dtype), samples.ndim, len(samples), language))
            return iter([types.SimpleNamespace(text=" hello "), types.SimpleNamespace(text="world ")]), None

    monkeypatch.setitem(sys.modules, "faster_whisper", types.SimpleNamespace(WhisperModel=WhisperModel))
    model_dir = tmp_path / "whisper-small"
    model_dir.mkdir()
    backend = get_asr_backend(f"local:{model_dir}")
    report = asyncio.run(run_transcription(qc_project, plan_transcription(qc_project.conn, [backend])))
    assert backend.name == "local:whisper-small" and report.transcripts == 4
    assert calls["init"] == 1 and calls["path"] == str(model_dir) and calls["device"] == "cpu"
    assert {(dtype, ndim, language) for dtype, ndim, _, language in calls["audio"]} == {
        ("float32", 1, "en"),
        ("float32", 1, "ko"),
    }
    assert set(transcripts(qc_project, "local:whisper-small").values()) == {"hello world"}


@pytest.mark.slow
def test_cli_transcribe_two_systems_then_screen(cli, qc_project, clips, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with StubServer() as server:
        server.script("POST", OPENAI_ROUTE, Reply(200, {"text": "Which holiday is in November?"}))
        server.script("POST", GEMINI_ROUTE, gemini_text("Which holiday is in November"))
        result = cli(
            "transcribe",
            qc_project.path,
            "--asr",
            f"openai:whisper-1@{server.url}/v1",
            "--asr",
            f"gemini:gemini-2.5-flash@{server.url}",
            "--json",
        )
    assert result.code == 0, result.err
    assert result.json()["transcripts"] == 8
    screened = cli("screen", qc_project.path, "--json").json()
    assert screened["screened"] == 4
    english_zero = next(r for r in screened["table2"] if r["language"] == "english" and r["wer_interval"] == "0")
    assert english_zero["n_samples"] == 2  # the two question clips match; "Thanksgiving" does not
    none = cli("transcribe", qc_project.path)
    assert none.code == 2 and "--asr" in none.err


@pytest.mark.slow
def test_cli_clips_out_lists_audio_for_an_external_asr(cli, qc_project, clips, tmp_path):
    out = tmp_path / "clips.csv"
    result = cli("transcribe", qc_project.path, "--clips-out", out)
    assert result.code == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "clip_id,language,accent,voice,item,part,reference_text,audio_path" and len(lines) == 5
    assert lines[1].split(",")[-1].endswith(".wav")


@pytest.mark.slow
def test_gemini_429_waits_for_retry_info_then_succeeds(qc_project, clips):
    retry_info = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "quota",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.1s"}],
        }
    }
    with StubServer() as server:
        server.script("POST", GEMINI_ROUTE, Reply(429, retry_info), gemini_text("Thanksgiving"))
        backend = get_asr_backend(f"gemini:gemini-2.5-flash@{server.url}", key=KEY)
        backend.max_concurrency = 1
        plan = plan_transcription(qc_project.conn, [backend], ["ko"])
        report = asyncio.run(run_transcription(qc_project, plan, retry_policy=FAST_RETRIES))
        assert len(server.requests_to(GEMINI_ROUTE)) == 2
    assert report.transcripts == 1 and report.failed_clips == 0


@pytest.mark.slow
def test_the_same_system_twice_is_refused(qc_project, clips):
    a = get_asr_backend("compatible:whisper@http://127.0.0.1:1/v1")
    b = get_asr_backend("compatible:whisper@http://127.0.0.1:2/v1")
    with pytest.raises(SpokenBenchError, match="named twice"):
        plan_transcription(qc_project.conn, [a, b])
