"""The runner end to end against the loopback stub through the official SDKs: modes, cache, resume,
retries, errors, budget, cancel, input checks."""

import base64
import json
import threading
import time

import pytest
from eval_support import add_assembled, add_items
from model_stub import Scripted

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.evaluation.adapters import GenerationParams
from spokenbench.core.evaluation.plans import PlanOptions
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
from spokenbench.core.evaluation.presets import Price
from spokenbench.core.evaluation.runner import evaluate, list_runs, run_evaluation
from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.registry import JobClaimed, list_jobs, request_cancel, tracked_job
from spokenbench.core.jobs.remote import RemoteAuthError, RetryPolicy
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.rewrites import add_rewrite

FAST_RETRY = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05)


def settings(stub, **changes):
    base = dict(
        model="openai:gpt-audio-mini",
        mode="audio",
        prompt="standard",
        base_url=stub.openai_url,
        concurrency=4,
        retry=FAST_RETRY,
        params=GenerationParams(timeout_s=5.0),
    )
    base.update(changes)
    return RunSettings(**base)


def responses(project, run_id=None):
    query = "SELECT * FROM responses" + (" WHERE run_id = ?" if run_id else "") + " ORDER BY item_id, condition_key"
    return [dict(r) for r in project.conn.execute(query, (run_id,) if run_id else ())]


def test_audio_run_stores_parsed_answers_and_sends_audio(audio_project, stub):
    summary = evaluate(audio_project, settings(stub))
    assert summary.status == "finished" and summary.answered == 6 and summary.errors == 0
    rows = responses(audio_project)
    assert len(rows) == 6 and all(r["parse_status"] == "ok" for r in rows)
    for row in rows:
        assert row["raw_text"].startswith("Answer: [[") and row["input_tokens"] == 100 and row["output_tokens"] == 5
        # the letter maps back through the stored permutation
        presented = row["parsed_letter"]
        assert row["mapped_option"] == row["option_order"]["ABCD".index(presented)]
        assert Condition.from_key(row["condition_key"]).key() == row["condition_key"]
    body = stub.answered_bodies()[0]
    assert body["temperature"] == 0 and body["max_completion_tokens"] == 4096
    audio_part = body["messages"][1]["content"][0]
    assert audio_part["type"] == "input_audio" and audio_part["input_audio"]["format"] == "wav"
    assert base64.b64decode(audio_part["input_audio"]["data"]).startswith(b"RIFF")
    assert body["messages"][0]["role"] == "system"
    run = audio_project.conn.execute("SELECT * FROM runs").fetchone()
    assert (
        run["mode"] == "audio"
        and run["status"] == "finished"
        and json.loads(run["parameters_json"])["generation"]
        == {"temperature": 0.0, "max_output_tokens": 4096, "thinking": None}
    )
    assert run["cost_usd"] > 0  # gpt-audio-mini has a price in the presets


@pytest.mark.slow
def test_rerun_and_resume_never_pay_twice(audio_project, stub):
    first = evaluate(audio_project, settings(stub))
    sent = len(stub.requests)
    second = evaluate(audio_project, settings(stub))  # a new run: answered from the cache
    assert len(stub.requests) == sent and second.cache_hits == 6 and second.fresh_requests == 0
    assert second.run_id != first.run_id and second.cost_usd == 0
    assert [r["raw_text"] for r in responses(audio_project, first.run_id)] == [
        r["raw_text"] for r in responses(audio_project, second.run_id)
    ]
    third = evaluate(audio_project, settings(stub, resume=True))  # resume: nothing left to do
    assert third.run_id == second.run_id and third.answered == 6 and len(stub.requests) == sent


def test_429_with_retry_after_then_success(audio_project, stub):
    stub.script(Scripted("429", retry_after=0.3), Scripted("500"))
    started = time.monotonic()
    summary = evaluate(audio_project, settings(stub, concurrency=1, plan=PlanOptions(limit=1, orders=("original",))))
    assert summary.answered == 1 and summary.retries == 2 and time.monotonic() - started >= 0.3
    assert responses(audio_project)[0]["attempts"] == 3


def test_gemini_retry_info_delay_is_honoured(audio_project, stub):
    stub.script(Scripted("429", retry_after=0.4))
    started = time.monotonic()
    summary = evaluate(
        audio_project,
        settings(
            stub,
            model="gemini:gemini-2.5-flash",
            base_url=stub.gemini_url,
            concurrency=1,
            plan=PlanOptions(limit=1, orders=("original",)),
        ),
    )
    assert summary.answered == 1 and time.monotonic() - started >= 0.4
    row = responses(audio_project)[0]
    assert row["attempts"] == 2 and row["input_tokens"] == 120 and row["output_tokens"] == 6
    assert summary.cost_usd == pytest.approx((40 * 0.30 + 80 * 1.00 + 6 * 2.50) / 1e6)


@pytest.mark.slow
def test_failures_are_stored_and_retried_on_resume(audio_project, stub):
    stub.script(*[Scripted("500")] * 4, Scripted("malformed"), Scripted("garbage"))
    summary = evaluate(audio_project, settings(stub, concurrency=1))
    assert summary.errors == 1 and summary.answered == 5
    failed = [r for r in responses(audio_project) if r["error"]]
    assert len(failed) == 1 and "HTTP 500" in failed[0]["error"] and "4 attempt" in failed[0]["error"]
    garbage = [r for r in responses(audio_project) if r["raw_text"] and "lorem" in r["raw_text"]]
    assert len(garbage) == 1 and garbage[0]["parse_status"] == "failed"
    resumed = evaluate(audio_project, settings(stub, resume=True))
    assert resumed.run_id == summary.run_id and resumed.errors == 0 and resumed.fresh_requests == 1
    assert all(r["error"] is None for r in responses(audio_project))


def test_timeout_is_retried(audio_project, stub):
    stub.script(Scripted("timeout", hang_s=1.0))
    summary = evaluate(
        audio_project,
        settings(
            stub, concurrency=1, params=GenerationParams(timeout_s=0.3), plan=PlanOptions(limit=1, orders=("original",))
        ),
    )
    assert summary.answered == 1 and summary.retries == 1


def test_authentication_error_stops_the_run_clearly(audio_project, stub):
    stub.script(Scripted("401"))
    with pytest.raises(RemoteAuthError) as caught:
        evaluate(audio_project, settings(stub, concurrency=1))
    assert "rejected the API key" in str(caught.value)
    assert len(stub.requests) == 1  # nothing else was sent
    run = audio_project.conn.execute("SELECT status, stop_reason FROM runs").fetchone()
    assert tuple(run) == ("failed", "auth")


@pytest.mark.slow
def test_budget_cap_stops_before_exceeding(audio_project, stub):
    # worst case per request: 1.5 x estimated input + 50 output tokens at $1/1M each ≈ $0.00006..., actual ≈ $0.000105
    price = Price(input=1.0, output=1.0)
    summary = evaluate(
        audio_project,
        settings(
            stub,
            budget_usd=0.00035,
            price=price,
            concurrency=1,
            params=GenerationParams(max_output_tokens=50, timeout_s=5),
        ),
    )
    assert summary.status == "cancelled" and summary.stop_reason == "budget"
    assert 0 < summary.answered < 6 and summary.cost_usd <= 0.00035
    [job] = list_jobs(audio_project.conn)
    assert job.status == "cancelled" and job.stop_reason.startswith("budget") and job.argv is None  # no CLI
    resumed = evaluate(
        audio_project,
        settings(
            stub, resume=True, budget_usd=1.0, price=price, params=GenerationParams(max_output_tokens=50, timeout_s=5)
        ),
    )
    assert resumed.status == "finished" and resumed.answered == 6


def test_budget_without_price_is_refused(audio_project, stub):
    with pytest.raises(SpokenBenchError, match="needs a price"):
        evaluate(audio_project, settings(stub, model="vllm:some-model", budget_usd=1.0))


def _wait_for_requests(stub, count: int) -> None:
    deadline = time.monotonic() + 10
    while len(stub.requests) < count and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.slow
def test_a_cancel_waits_for_the_requests_already_sent_and_keeps_their_answers(audio_project, stub):
    stub.state.delay_s = 1.0  # every answer takes a second: the cancel comes while 4 are out
    progress = Progress()

    def cancel_once_four_are_out():
        _wait_for_requests(stub, 4)
        progress.cancel()

    threading.Thread(target=cancel_once_four_are_out).start()
    with pytest.raises(Cancelled, match="the answers to 4 request.s. already sent were waited for and kept"):
        evaluate(audio_project, settings(stub), progress)
    assert len(stub.requests) == 4 and len(responses(audio_project)) == 4  # sent before the cancel, kept
    run = audio_project.conn.execute("SELECT status, stop_reason FROM runs").fetchone()
    assert tuple(run) == ("cancelled", "cancelled")
    stub.state.delay_s = 0.0
    resumed = evaluate(audio_project, settings(stub, resume=True))
    assert resumed.status == "finished" and resumed.fresh_requests == 2 and len(stub.requests) == 6  # none twice


@pytest.mark.slow
def test_a_cancel_now_abandons_the_requests_already_sent_within_a_second(audio_project, stub):
    stub.state.delay_s = 5.0  # every request hangs far longer than the cancel allowance
    progress = Progress()

    stopped_now = []

    def cancel_then_stop_now():
        _wait_for_requests(stub, 4)
        progress.cancel()
        time.sleep(0.3)
        stopped_now.append(time.monotonic())
        progress.cancel(now=True)

    threading.Thread(target=cancel_then_stop_now).start()
    with pytest.raises(Cancelled, match="4 request.s. already sent were abandoned"):
        evaluate(audio_project, settings(stub), progress)
    assert time.monotonic() - stopped_now[0] < 1.0  # the answers would take 5 s
    assert responses(audio_project) == [] and len(stub.requests) == 4
    run = audio_project.conn.execute("SELECT status, stop_reason FROM runs").fetchone()
    assert tuple(run) == ("cancelled", "cancelled")


def test_missing_assembled_audio_says_how_to_make_it(project, stub):
    add_items(project, 2)
    with pytest.raises(SpokenBenchError, match="spokenbench assemble"):
        evaluate(project, settings(stub))


def test_missing_order_is_named(audio_project, stub):
    with pytest.raises(SpokenBenchError, match="token-backward.*|spokenbench assemble") as caught:
        evaluate(audio_project, settings(stub, plan=PlanOptions(orders=("original", "token-backward"))))
    assert "spokenbench assemble" in str(caught.value)
    assert stub.requests == []


@pytest.mark.slow
def test_long_audio_uses_chunks_within_the_model_limit(project, stub):
    [item_id] = add_items(project, 1)
    add_assembled(
        project,
        item_id,
        Condition(language="en", order="original"),
        seconds=40.0,
        chunks={30.0: [25.0, 15.0], 60.0: [40.0]},
    )
    evaluate(project, settings(stub, model="nvidia:gemma-3n-e4b", base_url=stub.openai_url))
    body = stub.answered_bodies()[0]
    user = body["messages"][-1]["content"]
    assert isinstance(user, str) and user.count('<audio src="data:audio/wav;base64,') == 2


def test_long_audio_without_chunks_is_refused(project, stub):
    [item_id] = add_items(project, 1)
    add_assembled(project, item_id, Condition(language="en", order="original"), seconds=40.0)
    with pytest.raises(SpokenBenchError, match="--chunk-seconds 30"):
        evaluate(project, settings(stub, model="nvidia:gemma-3n-e4b", base_url=stub.openai_url))


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, convention_check",
    [
        (
            "mistral:voxtral-small-latest",
            lambda part: part["type"] == "input_audio" and isinstance(part["input_audio"], str),
        ),
        (
            "vllm:Qwen/Qwen2.5-Omni-7B",
            lambda part: part["type"] == "audio_url" and part["audio_url"]["url"].startswith("data:audio/wav;base64,"),
        ),
    ],
)
def test_audio_conventions(audio_project, stub, model, convention_check):
    evaluate(audio_project, settings(stub, model=model, plan=PlanOptions(limit=1, orders=("original",))))
    body = stub.answered_bodies()[0]
    assert convention_check(body["messages"][-1]["content"][0])


@pytest.mark.slow
def test_phi_inline_convention(audio_project, stub):
    evaluate(
        audio_project, settings(stub, model="nvidia:phi-4-multimodal", plan=PlanOptions(limit=1, orders=("original",)))
    )
    content = stub.answered_bodies()[0]["messages"][-1]["content"]
    assert content.startswith('<|audio_1|> <audio src="data:audio/wav;base64,')


@pytest.mark.slow
def test_text_mode_uses_accepted_rewrites_and_order(project, stub):
    [item_id] = add_items(project, 1)
    with project.transaction() as conn:
        add_rewrite(conn, item_id, "question", "What is zero plus zero, spoken?", "manual", "accepted", "me")
    evaluate(project, settings(stub, mode="text", plan=PlanOptions(orders=("reversed",), text_source="rewritten")))
    body = stub.answered_bodies()[0]
    user = body["messages"][-1]["content"]
    assert "zero plus zero, spoken" in user
    assert "A. 3\nB. 2\nC. 0\nD. 1" in user  # reversed: A presents original D
    assert "Answer: [[X]]" in user


@pytest.mark.slow
def test_text_mode_without_identifiers_parses_echoed_text(project, stub):
    add_items(project, 1)
    stub.state.answer_fn = lambda body: "Answer: [[0]]"  # the gold option's text (q0: B = "0")
    summary = evaluate(project, settings(stub, mode="text", plan=PlanOptions(identifiers=(False,))))
    row = responses(project)[0]
    assert summary.answered == 1 and row["parse_status"] == "ok" and row["mapped_option"] == "B"
    assert "- 1\n- 0" in stub.answered_bodies()[0]["messages"][-1]["content"]


@pytest.mark.slow
def test_neutral_prompt_records_neutral_answers(project, stub):
    add_items(project, 1)
    stub.state.answer_fn = lambda body: "Answer: [[E]]"
    evaluate(project, settings(stub, mode="text", prompt="neutral"))
    row = responses(project)[0]
    assert (row["parse_status"], row["parse_detail"], row["parsed_letter"]) == ("refusal", "neutral", None)
    assert "E. Cannot be determined" in stub.answered_bodies()[0]["messages"][-1]["content"]


@pytest.mark.slow
def test_pipeline_transcribes_then_answers(audio_project, stub):
    summary = evaluate(audio_project, settings(stub, mode="pipeline", plan=PlanOptions(limit=1, orders=("original",))))
    assert summary.answered == 1
    first, second = stub.answered_bodies()
    assert "Transcribe" in first["messages"][-1]["content"][-1]["text"]
    assert first["messages"][-1]["content"][0]["type"] == "input_audio"
    assert isinstance(second["messages"][-1]["content"], str) and "Transcript:" in second["messages"][-1]["content"]
    row = responses(audio_project)[0]
    assert row["transcript"].startswith("Answer: [[")  # the stub's reply to the transcription request


@pytest.mark.slow
def test_pipeline_with_a_transcription_endpoint(audio_project, stub):
    evaluate(
        audio_project,
        settings(stub, mode="pipeline", asr="openai:whisper-1", plan=PlanOptions(limit=1, orders=("original",))),
    )
    paths = [r["path"] for r in stub.requests]
    assert paths == ["/v1/audio/transcriptions", "/v1/chat/completions"]
    assert "two plus two" in responses(audio_project)[0]["transcript"]


@pytest.mark.slow
def test_spoken_question_with_text_options_uses_question_clips(project, stub):
    [item_id] = add_items(project, 1)
    from eval_support import wav_bytes

    sha = project.audio.put_bytes(wav_bytes(0.2), "wav")
    with project.transaction() as conn:
        conn.execute(
            "INSERT INTO clips(item_id, part, text, language, accent, voice, speaker_gender, backend, cache_key, "
            "sha256, audio_format, duration_s, sample_rate, created_at) VALUES (?, 'question', 'q', 'en', 'american', "
            "'Orus', 'male', 'espeak', 'k1', ?, 'wav', 0.2, 16000, ?)",
            (item_id, sha, utc_now()),
        )
    evaluate(project, settings(stub, mode="audio+text-options"))
    body = stub.answered_bodies()[0]
    parts = body["messages"][-1]["content"]
    assert parts[0]["type"] == "input_audio" and "Options:\nA. 1\nB. 0" in parts[1]["text"]
    assert json.loads(responses(project)[0]["condition_key"])["gender"] == "male"


def test_retired_model_is_refused_with_its_successor(audio_project, stub):
    with pytest.raises(SpokenBenchError, match="retired on 2026-05-07; use openai:gpt-audio-mini"):
        evaluate(audio_project, RunSettings(model="openai:gpt-4o-audio-preview", mode="audio"))


@pytest.mark.slow
def test_identical_requests_share_one_call(project, stub):
    [item_id] = add_items(project, 1)
    # two conditions whose audio is byte-identical → the same request → one call
    add_assembled(project, item_id, Condition(language="en", voice="a", order="original"), frequency=300)
    add_assembled(project, item_id, Condition(language="en", voice="b", order="original"), frequency=300)
    summary = evaluate(project, settings(stub))
    assert summary.answered == 2 and len(stub.requests) == 1 and summary.cache_hits == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, thinking, expected",
    [
        ("gemini:gemini-2.5-flash", "off", {"thinkingBudget": 0}),
        ("gemini:gemini-2.5-flash", "512", {"thinkingBudget": 512}),
        ("gemini:gemini-2.5-flash", "auto", {"thinkingBudget": -1}),
        ("gemini:gemini-3.8-flash", "low", {"thinkingLevel": "LOW"}),
        ("gemini:gemini-2.0-flash", "off", None),  # no thinking on 2.0: nothing is sent
    ],
)
def test_gemini_request_shape_and_thinking(audio_project, stub, model, thinking, expected):
    evaluate(
        audio_project,
        settings(
            stub,
            model=model,
            base_url=stub.gemini_url,
            plan=PlanOptions(limit=1, orders=("original",)),
            params=GenerationParams(thinking=thinking, timeout_s=5),
        ),
    )
    body = stub.answered_bodies()[0]
    config = body["generationConfig"]
    assert config["temperature"] == 0 and config["maxOutputTokens"] == 4096 and config["candidateCount"] == 1
    sent = config.get("thinkingConfig", config.get("thinking_config"))
    normalized = {k.replace("_", "").lower(): v for k, v in sent.items()} if sent else None  # as the SDK spells it
    assert normalized == ({k.lower(): v for k, v in expected.items()} if expected else None)
    parts = body["contents"][0]["parts"]
    inline = parts[0].get("inlineData") or parts[0].get("inline_data")
    assert (inline.get("mimeType") or inline.get("mime_type")) == "audio/wav" and "Answer: [[X]]" in parts[1]["text"]
    system = body.get("systemInstruction") or body.get("system_instruction")
    assert "You will hear" in system["parts"][0]["text"]


# -- prepare, then run ----------------------------------------------------------------------------------


def test_prepare_reads_no_key_creates_nothing_and_sends_nothing(audio_project, stub, monkeypatch):
    def no_key(provider):
        raise AssertionError("preparation read a credential")

    monkeypatch.setattr("spokenbench.core.evaluation.adapters.api_key", no_key)
    prepared = prepare_evaluation(audio_project, settings(stub, budget_usd=1.0))
    assert (prepared.request_count, prepared.requests_to_send, prepared.already_cached) == (6, 6, 0)
    assert prepared.resume_run_id is None and prepared.already_stored == 0
    assert 0 < prepared.estimated_input_cost_usd < prepared.estimated_cost_usd
    assert prepared.conditions["by_factor"]["order"] == {"original": 3, "reversed": 3}
    assert "openai:gpt-audio-mini is announced to retire on 2027-01-20" in prepared.warnings
    assert stub.requests == [] and list_runs(audio_project.conn) == [] and list_jobs(audio_project.conn) == []
    with pytest.raises(AssertionError, match="read a credential"):  # the key is read by the run, before any row
        run_evaluation(audio_project, prepared)
    assert list_runs(audio_project.conn) == [] and stub.requests == []


@pytest.mark.slow
def test_prepared_counts_match_what_the_run_does(audio_project, stub):
    prepared = prepare_evaluation(audio_project, settings(stub))
    first = run_evaluation(audio_project, prepared)
    assert first.fresh_requests == prepared.requests_to_send == 6
    again = prepare_evaluation(audio_project, settings(stub))
    assert (again.already_cached, again.requests_to_send, again.estimated_cost_usd) == (6, 0, 0.0)
    second = run_evaluation(audio_project, again)
    assert second.cache_hits == 6 and second.fresh_requests == 0
    resumed = prepare_evaluation(audio_project, settings(stub, resume=True))
    assert resumed.resume_run_id == second.run_id and resumed.already_stored == 6 and resumed.requests_to_send == 0


def test_identical_requests_are_counted_as_shared(project, stub):
    [item_id] = add_items(project, 1)
    add_assembled(project, item_id, Condition(language="en", voice="a", order="original"), frequency=300)
    add_assembled(project, item_id, Condition(language="en", voice="b", order="original"), frequency=300)
    prepared = prepare_evaluation(project, settings(stub))
    assert (prepared.requests_to_send, prepared.shared) == (1, 1)


@pytest.mark.slow
def test_pipeline_counts_both_steps(audio_project, stub):
    prepared = prepare_evaluation(audio_project, settings(stub, mode="pipeline"))
    assert prepared.requests_to_send == 12  # a transcription and an answer per request
    run_evaluation(audio_project, prepared)
    again = prepare_evaluation(audio_project, settings(stub, mode="pipeline"))
    assert (again.already_cached, again.requests_to_send) == (6, 0)  # both steps come from the cache


@pytest.mark.slow
def test_the_run_is_a_job_holding_its_run(audio_project, stub):
    summary = evaluate(audio_project, settings(stub))
    [job] = list_jobs(audio_project.conn)
    assert (job.kind, job.claim, job.status, job.done, job.total) == (
        "evaluate",
        f"run:{summary.run_id}",
        "finished",
        6,
        6,
    )
    assert list_runs(audio_project.conn)[0]["status"] == "finished"


def test_a_run_held_by_a_live_job_is_refused_before_anything_changes(audio_project, stub):
    first = evaluate(audio_project, settings(stub, plan=PlanOptions(limit=1)))
    sent = len(stub.requests)
    with tracked_job(audio_project.path, "evaluate", "someone else", claim=f"run:{first.run_id}"):
        prepared = prepare_evaluation(audio_project, settings(stub, resume=True, plan=PlanOptions(limit=1)))
        assert any(f"run {first.run_id} is being worked on by job 2" in w for w in prepared.warnings)
        with pytest.raises(JobClaimed, match=f"run:{first.run_id} is being worked on by job 2 \\(someone else"):
            evaluate(audio_project, settings(stub, resume=True, plan=PlanOptions(limit=1)))
    assert len(stub.requests) == sent
    run = audio_project.conn.execute("SELECT status, total_requests FROM runs").fetchone()
    assert tuple(run) == ("finished", 2)


def _cancel_from_elsewhere(project_path, now: bool, when=lambda jobs: bool(jobs)) -> list[str]:
    """Cancel the project's first job from another connection (as the app or `spokenbench jobs --cancel` would)
    once `when(jobs)` holds; returns the job messages seen until it ended."""
    seen = []
    with Project.open(project_path) as other:
        deadline = time.monotonic() + 10
        while not when(list_jobs(other.conn)) and time.monotonic() < deadline:
            time.sleep(0.02)
        request_cancel(other.conn, list_jobs(other.conn)[0].id, now=now)
        while time.monotonic() < deadline and list_jobs(other.conn)[0].is_live:
            seen.append(list_jobs(other.conn)[0].message)
            time.sleep(0.1)
    return seen


@pytest.mark.slow
def test_a_cancel_now_requested_in_the_jobs_table_stops_the_run(audio_project, stub):
    stub.state.delay_s = 5.0
    thread = threading.Thread(target=_cancel_from_elsewhere, args=(audio_project.path, True))
    thread.start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        evaluate(audio_project, settings(stub))
    thread.join()
    assert time.monotonic() - started < 2.5  # the heartbeat polls once a second, the loop every 50 ms
    assert list_jobs(audio_project.conn)[0].status == "cancelled"
    assert list_runs(audio_project.conn)[0]["status"] == "cancelled"


@pytest.mark.slow
def test_a_cancel_requested_in_the_jobs_table_says_it_waits_for_answers_already_sent(audio_project, stub):
    stub.state.delay_s = 2.5
    seen = []
    thread = threading.Thread(
        target=lambda: seen.extend(_cancel_from_elsewhere(audio_project.path, False, lambda _: len(stub.requests) == 4))
    )
    thread.start()
    with pytest.raises(Cancelled):
        evaluate(audio_project, settings(stub))
    thread.join()
    assert "stopping: waiting for the answers to 4 request(s) already sent (paid for)" in seen
    assert list_jobs(audio_project.conn)[0].status == "cancelled" and len(responses(audio_project)) == 4


@pytest.mark.slow
def test_a_paid_transcript_survives_a_cancel_before_its_answer(audio_project, stub):
    stub.script(Scripted("ok"), Scripted("timeout", hang_s=3.0))  # the transcript, then an answer that hangs
    progress = Progress()

    def cancel_once_the_answer_is_asked():
        deadline = time.monotonic() + 5
        while len(stub.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        progress.cancel()

    one = dict(mode="pipeline", concurrency=1, plan=PlanOptions(limit=1, orders=("original",)))
    threading.Thread(target=cancel_once_the_answer_is_asked).start()
    with pytest.raises(Cancelled):
        evaluate(audio_project, settings(stub, **one), progress)
    assert audio_project.conn.execute("SELECT count(*) FROM response_cache").fetchone()[0] == 1
    assert responses(audio_project) == []
    summary = evaluate(audio_project, settings(stub, resume=True, **one))
    assert summary.answered == 1 and summary.cache_hits == 1 and summary.fresh_requests == 1
    transcriptions = [r for r in stub.requests if b"Transcribe" in r["body"]]
    assert len(transcriptions) == 1  # paid once
