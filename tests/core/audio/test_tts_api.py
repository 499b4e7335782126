"""Gemini and OpenAI TTS through the official SDKs, pointed at a loopback stub server."""

import asyncio
import base64

import numpy as np
import pytest
from stub_server import Reply, StubServer
from support import tone, write_jsonl

from spokenbench.core.audio.io import decode_audio, encode_wav
from spokenbench.core.audio.synthesis import plan_synthesis, run_synthesis
from spokenbench.core.audio.tts import SynthesisRequest, get_backend
from spokenbench.core.domain.conditions import DEFAULT_ACCENT
from spokenbench.core.foundation.credentials import MissingCredentialError
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.jobs.remote import RemoteAuthError, RetryPolicy

FAST_RETRIES = RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.05)
GEMINI_ROUTE = r"/models/[^/]+:generateContent"
SECRET = "sk-test-secret-value-123"


def pcm_reply(seconds: float = 1.0, rate: int = 24_000) -> Reply:
    pcm = (tone(220, seconds, 0.3, rate) * 32767).astype("<i2").tobytes()
    part = {"inlineData": {"mimeType": f"audio/L16;codec=pcm;rate={rate}", "data": base64.b64encode(pcm).decode()}}
    return Reply(200, {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]})


def gemini(server: StubServer):
    return get_backend("gemini", base_url=server.url, key=SECRET)


@pytest.mark.slow
def test_gemini_request_carries_voice_language_and_accent_prompt():
    with StubServer() as server:
        server.script("POST", GEMINI_ROUTE, pcm_reply(1.0))
        backend = gemini(server)
        request = SynthesisRequest(
            "Which gas do plants take in?",
            "en",
            "indian",
            backend.voice("Orus"),
            backend.render_prompt("Which gas do plants take in?", "en", "indian"),
        )
        audio = decode_audio(asyncio.run(backend.synthesize(request)), "stub")
        [sent] = server.requests_to(GEMINI_ROUTE)
    assert audio.rate == 24_000 and audio.duration == pytest.approx(1.0, abs=0.01)
    body = sent.json()
    assert backend.model in sent.path
    speech = body["generationConfig"]["speechConfig"]
    # the SDK serializes this nested config in snake_case; accept either spelling
    voice = speech.get("voiceConfig") or speech["voice_config"]
    prebuilt = voice.get("prebuiltVoiceConfig") or voice["prebuilt_voice_config"]
    assert (prebuilt.get("voiceName") or prebuilt["voice_name"]) == "Orus"
    assert (speech.get("languageCode") or speech["language_code"]) == "en-IN"
    prompt = body["contents"][0]["parts"][0]["text"]
    assert "Indian English" in prompt and "Which gas do plants take in?" in prompt


@pytest.mark.slow
def test_gemini_429_with_retry_delay_is_retried_then_succeeds(mini_project):
    retry_info = {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "message": "quota",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.2s"}],
        }
    }
    with StubServer() as server:
        server.script(
            "POST",
            GEMINI_ROUTE,
            Reply(429, retry_info),
            Reply(500, {"error": {"code": 500, "message": "boom"}}),
            pcm_reply(2.5),
        )
        backend = gemini(server)
        plan = plan_synthesis(
            mini_project.conn, backend, languages=["en"], voices=["Zephyr"], accents=["american"], parts=("questions",)
        )
        report = asyncio.run(run_synthesis(mini_project, plan, retry_policy=FAST_RETRIES))
        attempts = len(server.requests_to(GEMINI_ROUTE))
    assert report.synthesized == 2 and report.failed == 0
    assert attempts == 4  # one 429, one 500, then a success for each of the two questions


@pytest.mark.slow
@pytest.mark.parametrize(
    "reply, expected",
    [
        (Reply(500, {"error": {"code": 500, "message": "internal"}}), "500"),
        (Reply(200, "this is not json at all"), ""),
        (Reply(200, {"candidates": [{"content": {"parts": [{"text": "I cannot do audio"}]}}]}), "no audio"),
    ],
)
def test_gemini_failures_mark_the_clip_failed_and_never_leak_the_key(mini_project, reply, expected):
    with StubServer() as server:
        server.script("POST", GEMINI_ROUTE, reply)
        backend = gemini(server)
        plan = plan_synthesis(
            mini_project.conn, backend, languages=["en"], voices=["Orus"], accents=["british"], parts=("questions",)
        )
        report = asyncio.run(run_synthesis(mini_project, plan, retry_policy=FAST_RETRIES))
    assert report.failed == 2 and report.synthesized == 0
    assert expected in report.failures[0] and "(en) question, british, Orus" in report.failures[0]
    stored = mini_project.conn.execute("SELECT group_concat(failure) FROM clips").fetchone()[0]
    assert SECRET not in stored and SECRET not in " ".join(report.failures)
    assert mini_project.conn.execute("SELECT count(*) FROM clips WHERE status = 'ok'").fetchone()[0] == 0


def test_gemini_auth_error_stops_the_job(mini_project):
    with StubServer() as server:
        server.script(
            "POST",
            GEMINI_ROUTE,
            Reply(401, {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "bad key"}}),
        )
        backend = gemini(server)
        plan = plan_synthesis(mini_project.conn, backend, languages=["en"], parts=("questions",))
        with pytest.raises(RemoteAuthError) as caught:
            asyncio.run(run_synthesis(mini_project, plan, retry_policy=FAST_RETRIES))
    assert SECRET not in str(caught.value)


def test_missing_key_names_the_variable(monkeypatch, mini_project):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setattr("spokenbench.core.foundation.credentials._from_keyring", lambda variable: None)
    backend = get_backend("gemini", base_url="http://127.0.0.1:9")
    plan = plan_synthesis(mini_project.conn, backend, languages=["en"], parts=("questions",))
    with pytest.raises(MissingCredentialError, match="GEMINI_API_KEY"):
        asyncio.run(run_synthesis(mini_project, plan))
    assert mini_project.conn.execute("SELECT count(*) FROM clips").fetchone()[0] == 0, "no clip may be marked failed"


@pytest.mark.slow
def test_openai_speech_with_accent_instructions_and_retry_after(mini_project):
    wav = encode_wav(tone(200, 2.0, 0.3, 24_000), 24_000)
    with StubServer() as server:
        server.script(
            "POST",
            r"/v1/audio/speech",
            Reply(429, {"error": {"message": "slow down", "type": "rate_limit"}}, headers={"retry-after": "0.1"}),
            Reply(200, wav, headers={"Content-Type": "audio/wav"}),
        )
        backend = get_backend("openai", base_url=f"{server.url}/v1", key=SECRET)
        plan = plan_synthesis(
            mini_project.conn, backend, languages=["en"], voices=["nova"], accents=["british"], parts=("questions",)
        )
        report = asyncio.run(run_synthesis(mini_project, plan, retry_policy=FAST_RETRIES))
        sent = server.requests_to(r"/v1/audio/speech")
    assert report.synthesized == 2 and report.failed == 0 and len(sent) == 3
    body = sent[-1].json()
    assert body["voice"] == "nova" and body["response_format"] == "wav" and body["model"] == "gpt-4o-mini-tts"
    assert "British Received Pronunciation" in body["instructions"]
    assert sent[-1].headers["authorization"] == f"Bearer {SECRET}"
    gender = mini_project.conn.execute("SELECT DISTINCT speaker_gender FROM clips").fetchone()[0]
    assert gender == "female"


def test_project_prompt_template_is_saved_and_used(cli, mini_project, tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    template = tmp_path / "prompt.txt"
    template.write_text("Say it like a newsreader from {accent_name}, in {language_name}: {text}", encoding="utf-8")
    with StubServer() as server:
        server.script("POST", GEMINI_ROUTE, pcm_reply(2.5))
        result = cli(
            "synthesize",
            mini_project.path,
            "--tts",
            "gemini",
            "--base-url",
            server.url,
            "--languages",
            "en",
            "--voices",
            "Orus",
            "--accents",
            "american",
            "--parts",
            "questions",
            "--prompt-file",
            template,
        )
        sent = sorted(r.json()["contents"][0]["parts"][0]["text"] for r in server.requests_to(GEMINI_ROUTE))
    assert result.code == 0, result.err
    assert sent == [
        "Say it like a newsreader from General American, in English: How many legs has a spider?",
        "Say it like a newsreader from General American, in English: Which gas do plants take in?",
    ]
    bad = tmp_path / "bad.txt"
    bad.write_text("Read {txt}", encoding="utf-8")
    refused = cli("synthesize", mini_project.path, "--tts", "gemini", "--prompt-file", bad, "--dry-run")
    assert refused.code == 2 and "template is invalid" in refused.err


def test_clone_without_the_extra_says_what_to_install(cli, mini_project, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "chatterbox", None)
    monkeypatch.setitem(sys.modules, "chatterbox.mtl_tts", None)
    from spokenbench.core.audio.tts import get_backend

    backend = get_backend("clone", references={"ana": ("female", mini_project.path / "ref.wav")})
    with pytest.raises(Exception, match=r"spokenbench-studio\[cloning\]"):
        backend.prepare()


def test_corrupt_or_stereo_audio_from_a_backend_is_named_and_not_stored(mini_project):
    import io

    import soundfile

    stereo = io.BytesIO()
    soundfile.write(stereo, np.zeros((24_000, 2), np.float32) + 0.1, 24_000, format="WAV")
    telephone = encode_wav(tone(200, 2.0, 0.3, 8_000), 8_000)
    with StubServer() as server:
        server.script(
            "POST",
            r"/v1/audio/speech",
            Reply(200, b"RIFF\x00\x00garbage", headers={"Content-Type": "audio/wav"}),
            Reply(200, stereo.getvalue(), headers={"Content-Type": "audio/wav"}),
            Reply(200, telephone, headers={"Content-Type": "audio/wav"}),
        )
        backend = get_backend("openai", base_url=f"{server.url}/v1", key=SECRET)
        plan = plan_synthesis(
            mini_project.conn,
            backend,
            languages=["en"],
            voices=["onyx", "nova"],
            accents=["american"],
            parts=("questions",),
        )
        backend.max_concurrency = 1  # replies in script order
        report = asyncio.run(run_synthesis(mini_project, plan, retry_policy=FAST_RETRIES))
    failures = report.failures
    assert report.failed == 4
    assert "unreadable or corrupt" in failures[0] and "2 channels" in failures[1]
    assert "sample rate is 8000 Hz; 24000 Hz expected" in failures[2]
    assert all("(en) question, american, " in f for f in failures)
    assert mini_project.conn.execute("SELECT count(*) FROM clips WHERE status = 'ok'").fetchone()[0] == 0


def _import_items(project, tmp_path, items):
    rows = [
        {"id": f"{language}-1", "language": language, "question": question, "options": ["1", "2"], "answer": "A"}
        for language, question in items
    ]
    import_files(project, [write_jsonl(tmp_path / "items.jsonl", rows)], "mcq", ImportOptions(source="t"))


def test_gemini_speaks_a_language_beyond_the_studies_in_its_default_accent_with_its_language_code(project, tmp_path):
    """Arabic through Gemini: the documented code ar-EG in the speech config, the prompt naming Arabic and a
    standard accent, the clip stored under accent 'default'; Yoruba, which Gemini TTS does not list, said."""
    _import_items(project, tmp_path, [("ar", "ما هي عاصمة فرنسا؟"), ("yo", "Kí ni olú ìlú Faranse?")])
    with StubServer() as server:
        server.script("POST", GEMINI_ROUTE, pcm_reply(1.0))
        backend = gemini(server)
        plan = plan_synthesis(project.conn, backend, voices=["Orus"], parts=("questions",))
        report = asyncio.run(run_synthesis(project, plan, retry_policy=FAST_RETRIES))
        [sent] = server.requests_to(GEMINI_ROUTE)
    assert report.synthesized == 1 and report.failed == 0
    assert plan.unsupported == ["gemini cannot speak yo"]
    body = sent.json()
    speech = body["generationConfig"]["speechConfig"]
    assert (speech.get("languageCode") or speech["language_code"]) == "ar-EG"
    prompt = body["contents"][0]["parts"][0]["text"]
    assert "in Arabic, spoken with a natural standard accent" in prompt and "ما هي عاصمة فرنسا؟" in prompt
    stored = project.conn.execute("SELECT language, accent FROM clips WHERE status = 'ok'").fetchall()
    assert [tuple(row) for row in stored] == [("ar", DEFAULT_ACCENT)]


def test_openai_speaks_hebrew_naming_it_in_the_instructions(project, tmp_path):
    _import_items(project, tmp_path, [("he", "מהי בירת יפן?")])
    wav = encode_wav(tone(200, 1.5, 0.3, 24_000), 24_000)
    with StubServer() as server:
        server.script("POST", r"/v1/audio/speech", Reply(200, wav, headers={"Content-Type": "audio/wav"}))
        backend = get_backend("openai", base_url=f"{server.url}/v1", key=SECRET)
        plan = plan_synthesis(project.conn, backend, voices=["nova"], parts=("questions",))
        report = asyncio.run(run_synthesis(project, plan, retry_policy=FAST_RETRIES))
        [sent] = server.requests_to(r"/v1/audio/speech")
    assert report.synthesized == 1 and not plan.unsupported
    body = sent.json()
    assert body["input"] == "מהי בירת יפן?" and "Speak Hebrew with a natural standard accent" in body["instructions"]


def test_a_gemini_speech_request_the_server_never_answers_times_out(mini_project, monkeypatch):
    """Its client had no timeout: a request the server held kept the job (and a cancel waiting for it) forever."""
    from spokenbench.core.audio.tts import gemini as gemini_tts

    monkeypatch.setattr(gemini_tts, "TIMEOUT_MS", 500)
    with StubServer() as server:
        server.script("POST", GEMINI_ROUTE, Reply(200, b"{}", delay_s=5.0))
        backend = gemini(server)
        plan = plan_synthesis(
            mini_project.conn, backend, languages=["en"], voices=["Orus"], accents=["british"], parts=("questions",)
        )
        report = asyncio.run(run_synthesis(mini_project, plan, retry_policy=RetryPolicy(max_attempts=1)))
    assert report.failed == 2 and "timed out" in report.failures[0]  # not the 5 s reply's "no audio"
