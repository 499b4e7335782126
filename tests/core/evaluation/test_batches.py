"""Batch jobs (issue 14): `evaluate --batch openai|gemini`, `batches [--collect|--cancel]`, `--batch-file` and
`import-results`, against a loopback stub of both providers' batch endpoints driven by the real SDKs."""

import base64
import json

import pytest
from eval_support import add_assembled, add_items

from spokenbench.core.domain.conditions import Condition
from spokenbench.core.evaluation import batch_files, batches
from spokenbench.core.evaluation.adapters import ModelReply, OpenAICompatibleAdapter
from spokenbench.core.evaluation.budget import reply_cost
from spokenbench.core.evaluation.preparation import RequestBuilder, RunSettings, prepare_evaluation

OPENAI = "openai:gpt-audio-mini"
GEMINI = "gemini:gemini-2.5-flash"
REQUEST_FORMAT_KEYS = {"custom_id", "method", "url", "body"}


def _evaluate(cli, project, model, url, *extra):
    return cli(
        "evaluate", project.path, "--model", model, "--base-url", url, "--mode", "audio", "--prompt", "standard", *extra
    )


def _poll_until_done(cli, project, polls=4):
    states = []
    for _ in range(polls):
        listed = cli("batches", project.path, "--json")
        assert listed.code == 0, listed.err
        states.append([entry["state"] for entry in listed.json()])
    return states


def _responses(project, run_id=None):
    where, args = ("WHERE run_id = ?", (run_id,)) if run_id else ("", ())
    return project.conn.execute(
        f"SELECT item_id, condition_key, raw_text, parse_status, error, request_sha256, cost_usd, cached FROM responses {where}",
        args,
    ).fetchall()


def _uploaded_lines(bstub):
    files = [
        data
        for name, data in bstub.state.files.items()
        if name.startswith("file-") and "-out-" not in name and "-err-" not in name
    ]
    return [json.loads(line) for data in files for line in data.splitlines()]


def _check_openai_batch_line(line, model):
    """One line of the OpenAI batch request format."""
    assert set(line) == REQUEST_FORMAT_KEYS
    assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
    assert isinstance(line["custom_id"], str) and len(line["custom_id"]) == 64
    body = line["body"]
    assert body["model"] == model and isinstance(body["messages"], list) and body["messages"]
    parts = body["messages"][-1]["content"]
    audio = [part for part in parts if part["type"] == "input_audio"]
    assert audio and all(set(part["input_audio"]) == {"data", "format"} for part in audio)
    assert base64.b64decode(audio[0]["input_audio"]["data"]).startswith(b"RIFF")
    assert parts[-1]["type"] == "text" and parts[-1]["text"]


@pytest.mark.slow  # a submit, polls and a collect through the openai SDK
def test_a_state_answer_arriving_after_a_collect_does_not_undo_it(audio_project, bstub, cli):
    """A state refresh asked before another process collected the part (or a kill left it without its id)
    stores nothing over what that process wrote: a collected part never reads 'completed' again."""
    from spokenbench.core.store import batches as batch_store

    bstub.state.instant = False
    submitted = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai", "--json")
    assert submitted.code == 0, submitted.err
    (batch_id,) = submitted.json()["batch_ids"]
    asked_about = batch_store.batch_row(audio_project.conn, batch_id)  # as a poll read it, before the collect
    _poll_until_done(cli, audio_project)
    assert cli("batches", audio_project.path, "--collect", "--json").json()["collected"] == [batch_id]
    batches._refresh(audio_project, asked_about, batches._client_for(asked_about))  # the poll's answer, late
    assert batch_store.batch_row(audio_project.conn, batch_id)["state"] == "collected"
    with audio_project.transaction() as conn:  # a part whose id is gone (a kill as the tests simulate it)
        conn.execute("UPDATE batch_jobs SET state = 'submitting', remote_id = NULL")
    batches._refresh(audio_project, asked_about, batches._client_for(asked_about))
    row = batch_store.batch_row(audio_project.conn, batch_id)
    assert (row["state"], row["remote_id"]) == ("submitting", None)


@pytest.mark.slow
def test_openai_batch_submit_poll_collect_at_half_price(audio_project, bstub, cli):
    bstub.state.instant = False
    submitted = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai", "--json")
    assert submitted.code == 0, submitted.err
    summary = submitted.json()
    assert summary["submitted"] == 6 and summary["lines"] == 6 and len(summary["batch_ids"]) == 1
    assert summary["estimated_cost_usd"] > 0
    # nothing answered yet; the run waits for its batch
    assert _responses(audio_project) == []
    assert cli("runs", audio_project.path, "--json").json()[0]["status"] == "created"
    assert _poll_until_done(cli, audio_project) == [["running"], ["finalizing"], ["completed"], ["completed"]]
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 0, collected.err
    result = collected.json()
    assert result["answered"] == 6 and result["failed"] == 0 and result["collected"] == summary["batch_ids"]
    rows = _responses(audio_project)
    assert len(rows) == 6 and all(row["error"] is None and row["parse_status"] == "ok" for row in rows)
    # each line's custom_id is the project's request key (the response-cache key)
    lines = _uploaded_lines(bstub)
    assert {row["request_sha256"] for row in rows} == {line["custom_id"] for line in lines}
    cached = audio_project.conn.execute("SELECT count(*) FROM response_cache").fetchone()[0]
    assert cached == 6
    # the batch price: half of what the same usage costs online
    prepared = prepare_evaluation(audio_project, RunSettings(model=OPENAI, base_url=bstub.openai_url))
    online = sum(
        reply_cost(
            prepared.price,
            OpenAICompatibleAdapter(prepared.preset, prepared.settings.params, None),
            RequestBuilder(prepared.settings, prepared.preset, None).answer(job),
            ModelReply("x", 100, 5),
            prepared.settings.params.max_output_tokens,
        )
        for job in prepared.jobs
    )
    run = cli("runs", audio_project.path, "--json").json()[0]
    assert run["status"] == "finished" and run["cost_usd"] == pytest.approx(online / 2, rel=1e-4)
    # collecting again stores nothing twice
    again = cli("batches", audio_project.path, "--collect", "--json").json()
    assert again["collected"] == [] and len(_responses(audio_project)) == 6
    # a later online --resume sends nothing: every answer is stored (and cached)
    posts_before = bstub.paths("POST")
    resumed = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--resume", "--json")
    assert resumed.code == 0, resumed.err
    assert resumed.json()["fresh_requests"] == 0 and bstub.paths("POST") == posts_before


def test_request_lines_are_the_online_adapters_bodies(audio_project, bstub, cli):
    assert _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai").code == 0
    lines = _uploaded_lines(bstub)
    assert len(lines) == 6 and len({line["custom_id"] for line in lines}) == 6
    for line in lines:
        _check_openai_batch_line(line, "gpt-audio-mini")
    prepared = prepare_evaluation(audio_project, RunSettings(model=OPENAI, base_url=bstub.openai_url))
    builder = RequestBuilder(prepared.settings, prepared.preset, None)
    adapter = OpenAICompatibleAdapter(prepared.preset, prepared.settings.params, None)
    by_key = {line["custom_id"]: line["body"] for line in lines}
    for job in prepared.jobs:
        request = builder.answer(job)
        loaded = batch_files._Writer(audio_project, adapter).loaded(request)
        assert by_key[adapter.request_key(request)] == adapter.chat_body(loaded)


@pytest.mark.slow
def test_partial_failure_then_resubmission(audio_project, bstub, cli):
    assert _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai").code == 0
    keys = [line["custom_id"] for line in _uploaded_lines(bstub)]
    bstub.state.fail_keys = set(keys[:2])
    collected = cli("batches", audio_project.path, "--collect")
    assert collected.code == 5
    assert "2 request(s) failed" in collected.err and "--resume" in collected.err
    assert "HTTP 400: stub: audio input rejected" in collected.err
    rows = _responses(audio_project)
    assert sum(row["error"] is not None for row in rows) == 2 and len(rows) == 6
    # re-submitted: only the failed lines go into the new batch
    bstub.state.fail_keys = set()
    again = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai", "--resume", "--json")
    assert again.code == 0, again.err
    assert again.json()["lines"] == 2 and again.json()["already_stored"] == 4
    resubmitted = [line["custom_id"] for line in _uploaded_lines(bstub)][6:]
    assert sorted(resubmitted) == sorted(keys[:2])
    assert cli("batches", audio_project.path, "--collect").code == 0
    rows = _responses(audio_project)
    assert len(rows) == 6 and all(row["error"] is None for row in rows)
    assert cli("runs", audio_project.path, "--json").json()[0]["status"] == "finished"


def test_requests_waiting_in_a_batch_are_not_submitted_again(audio_project, bstub, cli):
    assert _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai").code == 0
    again = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai", "--resume", "--json").json()
    assert again["lines"] == 0 and again["waiting_elsewhere"] == 6 and again["batch_ids"] == []
    assert len(_uploaded_lines(bstub)) == 6


@pytest.mark.slow
def test_cancel_keeps_what_was_answered(audio_project, bstub, cli):
    assert _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai").code == 0
    cancelled = cli("batches", audio_project.path, "--cancel", "--json")
    assert cancelled.code == 0 and cancelled.json()[0]["state"] == "cancelling"
    assert any(path.endswith("/cancel") for path in bstub.paths("POST"))
    assert _poll_until_done(cli, audio_project, 1) == [["cancelled"]]
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 5
    assert collected.json()["answered"] == 3 and collected.json()["failed"] == 3
    errors = [row["error"] for row in _responses(audio_project) if row["error"]]
    assert errors == ["not answered by the batch (it ended cancelled)"] * 3
    listed = cli("batches", audio_project.path, "--json").json()
    assert listed[0]["state"] == "collected" and listed[0]["remote_state"] == "cancelled"


@pytest.mark.slow
def test_failed_batch_is_collected_as_failures(audio_project, bstub, cli):
    bstub.state.fail_next_batch = True
    assert _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai").code == 0
    listed = cli("batches", audio_project.path, "--json").json()
    assert listed[0]["state"] == "failed" and "validation failed" in listed[0]["error"]
    assert cli("batches", audio_project.path, "--collect").code == 5
    # nothing waits any more: a resume submits all six again
    again = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai", "--resume", "--json").json()
    assert again["lines"] == 6


@pytest.mark.slow
def test_split_by_the_providers_limits(audio_project, bstub, cli, monkeypatch):
    monkeypatch.setattr(batches, "OPENAI_MAX_REQUESTS", 4)
    submitted = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai", "--json").json()
    assert len(submitted["batch_ids"]) == 2
    parts = cli("batches", audio_project.path, "--json", "--no-refresh").json()
    assert [(p["part"], p["requests"]) for p in parts] == [(1, 4), (2, 2)]
    assert cli("batches", audio_project.path, "--collect", "--json").json()["answered"] == 6


@pytest.mark.slow
@pytest.mark.parametrize("as_file", [False, True], ids=["inline", "file"])
def test_gemini_batch(audio_project, bstub, cli, monkeypatch, as_file):
    bstub.state.instant = False
    if as_file:
        monkeypatch.setattr(batches, "GEMINI_INLINE_MAX_BYTES", 0)
    submitted = _evaluate(cli, audio_project, GEMINI, bstub.gemini_url, "--batch", "gemini", "--json")
    assert submitted.code == 0, submitted.err
    assert any(path.endswith(":batchGenerateContent") for path in bstub.paths("POST"))
    assert any(path.startswith("/upload/") for path in bstub.paths("POST")) == as_file
    batch = next(iter(bstub.state.batches.values()))
    key, request = batch["lines"][0]
    parts = request["contents"][0]["parts"]
    data = parts[0]["inlineData"]["data"]  # the SDK writes bytes as url-safe base64
    assert base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).startswith(b"RIFF") and parts[-1]["text"]
    assert request["systemInstruction"]["parts"][0]["text"] and request["generationConfig"]["temperature"] == 0
    bstub.state.fail_keys = {key}
    assert _poll_until_done(cli, audio_project, 3)[-1] == ["completed"]
    collected = cli("batches", audio_project.path, "--collect", "--json")
    assert collected.code == 5 and collected.json()["answered"] == 5 and collected.json()["failed"] == 1
    rows = _responses(audio_project)
    assert sum(row["error"] is None for row in rows) == 5
    assert any(row["error"] == "batch error: stub: audio input rejected" for row in rows)
    assert all(row["cost_usd"] > 0 for row in rows if row["error"] is None)


@pytest.mark.slow
def test_gemini_cancel(audio_project, bstub, cli):
    assert _evaluate(cli, audio_project, GEMINI, bstub.gemini_url, "--batch", "gemini").code == 0
    assert cli("batches", audio_project.path, "--cancel").code == 0
    assert any(path.endswith(":cancel") for path in bstub.paths("POST"))
    collected = cli("batches", audio_project.path, "--collect", "--json").json()
    assert collected["answered"] == 3 and collected["failed"] == 3


def test_what_a_batch_cannot_run_is_refused_before_anything_is_written(audio_project, bstub, cli, monkeypatch):
    wrong = _evaluate(cli, audio_project, GEMINI, bstub.gemini_url, "--batch", "openai")
    assert wrong.code == 2 and "use --batch gemini" in wrong.err
    pipeline = cli(
        "evaluate", audio_project.path, "--model", OPENAI, "--base-url", bstub.openai_url, "--mode", "pipeline",
        "--prompt", "standard", "--batch", "openai",
    )  # fmt: skip
    assert pipeline.code == 2 and "pipeline mode" in pipeline.err
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setattr("spokenbench.core.foundation.credentials._from_keyring", lambda variable: None)
    keyless = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai")
    assert keyless.code == 2 and "OPENAI_API_KEY" in keyless.err
    with pytest.raises(SystemExit) as both:
        _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai", "--batch-file", "x.jsonl")
    assert both.value.code == 2
    assert audio_project.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert bstub.paths() == []


# --------------------------------------------------------------------------------------------------
# Batch files for vLLM's run_batch, and importing its output


def _vllm_output(request_file, *, model=None, fail=(), edit=None) -> list[dict]:
    """What `python -m vllm.entrypoints.openai.run_batch` writes for the request file."""
    out = []
    for number, raw in enumerate(request_file.read_text().splitlines(), start=1):
        line = json.loads(raw)
        key = line["custom_id"]
        if key in fail:
            record = {
                "id": f"vllm-{number}",
                "custom_id": key,
                "response": None,
                "error": {"message": "CUDA out of memory"},
            }
        else:
            body = {
                "id": f"cmpl-{number}",
                "object": "chat.completion",
                "created": 0,
                "model": model or line["body"]["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "Answer: [[B]]"}, "finish_reason": "stop"}
                ],
                "usage": {"prompt_tokens": 90, "completion_tokens": 4, "total_tokens": 94},
            }
            record = {
                "id": f"vllm-{number}",
                "custom_id": key,
                "response": {"status_code": 200, "request_id": f"r{number}", "body": body},
                "error": None,
            }
        out.append(edit(number, record) if edit else record)
    return out


def _write_jsonl(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


VLLM = (
    "--model",
    "vllm:my-audio-model",
    "--base-url",
    "http://127.0.0.1:9/v1",
    "--mode",
    "audio",
    "--prompt",
    "standard",
)


@pytest.mark.slow
def test_batch_file_for_vllm_and_import(audio_project, cli, tmp_path):
    target = tmp_path / "requests.jsonl"
    written = cli("evaluate", audio_project.path, *VLLM, "--batch-file", target, "--json")
    assert written.code == 0, written.err
    assert written.json()["lines"] == 6 and written.json()["bytes"] == target.stat().st_size
    lines = [json.loads(raw) for raw in target.read_text().splitlines()]
    for line in lines:
        _check_openai_batch_line(line, "my-audio-model")
    assert not list(tmp_path.glob(".requests.jsonl.*"))  # written under a temporary name, then renamed
    text = cli("batches", audio_project.path, "--json").json()
    assert text[0]["provider"] == "file" and text[0]["state"] == "exported" and text[0]["pending"] == 6
    results = _write_jsonl(tmp_path / "results.jsonl", _vllm_output(target, fail={lines[0]["custom_id"]}))
    imported = cli("import-results", audio_project.path, results, "--json")
    assert imported.code == 5, imported.err
    assert imported.json() | {"runs": None} == {
        "lines": 6, "answered": 5, "failed": 1, "skipped": 0, "runs": None, "cost_usd": 0.0,
    }  # fmt: skip
    rows = _responses(audio_project)
    assert len(rows) == 6 and sum(row["parse_status"] == "ok" for row in rows) == 5
    assert [row["error"] for row in rows if row["error"]] == ["batch error: CUDA out of memory"]
    assert {row["request_sha256"] for row in rows if row["error"] is None} == {line["custom_id"] for line in lines[1:]}
    # importing again changes nothing already answered
    again = cli("import-results", audio_project.path, results, "--json").json()
    assert again["skipped"] == 5 and len(_responses(audio_project)) == 6


def test_import_names_every_bad_line_and_imports_nothing(audio_project, cli, tmp_path):
    target = tmp_path / "requests.jsonl"
    assert cli("evaluate", audio_project.path, *VLLM, "--batch-file", target).code == 0

    def spoil(number, record):
        if number == 2:
            record["custom_id"] = "f" * 64
        elif number == 3:
            record["response"]["body"]["model"] = "another-model"
        elif number == 4:
            record["response"]["body"]["choices"] = []
        return record

    records = _vllm_output(target, edit=spoil)
    records.insert(4, "{not json")
    records.append(dict(records[0]))  # the same custom_id twice
    results = _write_jsonl(tmp_path / "results.jsonl", records)
    refused = cli("import-results", audio_project.path, results)
    assert refused.code == 2
    assert "line 2: unknown custom_id 'ffff" in refused.err
    assert "line 3: the answer is from model 'another-model', the request was for 'my-audio-model'" in refused.err
    assert "line 4: malformed body: the reply has no choices" in refused.err
    assert "line 5: not JSON" in refused.err
    assert "line 8: custom_id" in refused.err and "again (first on line 1)" in refused.err
    assert _responses(audio_project) == []
    assert cli("batches", audio_project.path, "--json").json()[0]["pending"] == 6
    assert cli("import-results", audio_project.path, tmp_path / "missing.jsonl").code == 2


@pytest.mark.slow
def test_batch_file_leaves_out_cached_answers(audio_project, bstub, cli, tmp_path):
    assert _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch", "openai").code == 0
    assert cli("batches", audio_project.path, "--collect").code == 0
    target = tmp_path / "requests.jsonl"
    again = _evaluate(cli, audio_project, OPENAI, bstub.openai_url, "--batch-file", target, "--json").json()
    assert again["lines"] == 0 and again["cached"] == 6 and target.read_text() == ""
    rows = _responses(audio_project, again["run_id"])
    assert len(rows) == 6 and all(row["cached"] and row["cost_usd"] == 0 for row in rows)


@pytest.mark.slow
def test_identical_requests_share_one_line(project, bstub, cli):
    item = add_items(project, 1)[0]
    for voice in ("Zephyr", "Puck"):  # the same audio bytes under two conditions: one request key
        add_assembled(
            project, item, Condition(language="en", accent="american", voice=voice, gender="female"), frequency=300
        )
    submitted = _evaluate(cli, project, OPENAI, bstub.openai_url, "--batch", "openai", "--json").json()
    assert submitted["submitted"] == 2 and submitted["lines"] == 1
    assert cli("batches", project.path, "--collect", "--json").json()["answered"] == 2
    rows = _responses(project)
    assert len(rows) == 2 and sorted(row["cached"] for row in rows) == [0, 1]
    assert sum(row["cost_usd"] for row in rows) == pytest.approx(rows[0]["cost_usd"] + rows[1]["cost_usd"])
    assert min(row["cost_usd"] for row in rows) == 0
