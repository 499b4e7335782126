"""A batch file is planned without an object per request (pieces made once per presentation), yet each line is
what the online path sends for its planned request (`RequestBuilder.answer`, keyed by the adapter, its body built by
the adapter with the audio loaded) and each recorded row holds the context `_context` gives for it: for audio and
text modes, every convention that splices the audio and one that does not, a reply the cache already holds and a
request left unkeyed by preparation."""

import json

import pytest

from spokenbench.core.evaluation import batch_files, store
from spokenbench.core.evaluation.adapters import ModelAdapter, OpenAICompatibleAdapter
from spokenbench.core.evaluation.batch_records import _context
from spokenbench.core.evaluation.preparation import Job, RequestBuilder, RunSettings, prepare_evaluation

BASE = "http://127.0.0.1:9/v1"
SETTINGS = {
    "audio": RunSettings(model="vllm:m", base_url=BASE, mode="audio"),
    "audio cot inline": RunSettings(model="vllm:m", base_url=BASE, mode="audio", prompt="cot", system_variant="inline"),
    "audio mistral": RunSettings(model="vllm:m", base_url=BASE, mode="audio", convention="mistral-input-audio"),
    "audio url": RunSettings(model="vllm:m", base_url=BASE, mode="audio", convention="audio-url"),
    "text": RunSettings(model="vllm:m", base_url=BASE, mode="text"),
}


def sent_online(project, prepared) -> tuple[list[bytes], list[tuple]]:
    """The lines and rows of every planned request as the online path makes its request, each key once."""
    builder = RequestBuilder(prepared.settings, prepared.preset, None)
    keyer = ModelAdapter(prepared.preset, prepared.settings.params)
    adapter = OpenAICompatibleAdapter(prepared.preset, prepared.settings.params, None)
    writer = batch_files._Writer(project, adapter)
    lines, rows, seen = [], [], set()
    for job in prepared.jobs:
        request = builder.answer(job)
        key = keyer.request_key(request)
        rows.append((job.planned.item_id, job.planned.condition_key, job.planned.option_order, key))
        rows[-1] += (_context(builder.render(job), keyer, request),)
        if key not in seen:
            seen.add(key)
            record = {"custom_id": key, "method": "POST", "url": "/v1/chat/completions"}
            record["body"] = adapter.chat_body(writer.loaded(request))
            lines.append(json.dumps(record, separators=(",", ":")).encode() + b"\n")
    return lines, rows


def written(project, prepared, path) -> tuple[list[bytes], list[tuple]]:
    summary = batch_files.write_batch_file(project, prepared, path)
    rows = project.conn.execute(
        "SELECT item_id, condition_key, option_order, request_key, context_json FROM batch_requests "
        "WHERE batch_id = ? ORDER BY rowid",
        (summary.batch_id,),
    ).fetchall()
    return path.read_bytes().splitlines(keepends=True), [tuple(row) for row in rows]


@pytest.mark.parametrize("name", list(SETTINGS))
def test_each_line_is_what_the_online_path_sends(audio_project, tmp_path, name):
    prepared = prepare_evaluation(audio_project, SETTINGS[name])
    expected = sent_online(audio_project, prepared)
    assert prepared.jobs and expected[0]
    assert written(audio_project, prepare_evaluation(audio_project, SETTINGS[name]), tmp_path / "r.jsonl") == expected


def test_unkeyed_requests_and_cached_replies_are_planned_as_online(audio_project, tmp_path):
    """A request preparation did not key is keyed as online; one the cache answers is stored, not written."""
    settings = SETTINGS["audio"]
    prepared = prepare_evaluation(audio_project, settings)
    lines, rows = sent_online(audio_project, prepared)
    answered = rows[1]
    reply = store.CachedReply("Answer: [[B]]", 90, 4, 0.3, 12.0, 0.0001)
    with audio_project.transaction() as conn:
        store.store_cached_replies(conn, [store.CacheEntry(answered[3], prepared.model_name, reply, "stop")])
    prepared = prepare_evaluation(audio_project, settings)
    prepared.request_keys = [None] * prepared.request_count  # as a plan made otherwise
    got_lines, got_rows = written(audio_project, prepared, tmp_path / "r.jsonl")
    assert got_lines == [line for line in lines if answered[3].encode() not in line]
    assert got_rows == [row for row in rows if row is not answered]
    stored = audio_project.conn.execute("SELECT item_id, condition_key, cached FROM responses").fetchall()
    assert [tuple(row) for row in stored] == [(answered[0], answered[1], 1)]


def test_a_batch_file_makes_no_job_per_written_request(audio_project, tmp_path, monkeypatch):
    """Planning takes each request's fields (`job_parts`): Job objects are made only for cached replies."""
    prepared = prepare_evaluation(audio_project, SETTINGS["audio"])
    made = []
    original = Job.__init__

    def counted(self, *args, **kwargs):
        made.append(args)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Job, "__init__", counted)
    summary = batch_files.write_batch_file(audio_project, prepared, tmp_path / "r.jsonl")
    assert summary.lines == prepared.request_count and made == []


@pytest.mark.parametrize("name", ["audio cot inline", "text"])
def test_a_provider_batch_plans_the_rows_a_batch_file_records(audio_project, tmp_path, name):
    """Provider batches (`_plan_lines`) take their texts and contexts from the same `_Contexts` as batch files."""
    from spokenbench.core.evaluation.batch_records import _plan_lines, _request_rows

    prepared = prepare_evaluation(audio_project, SETTINGS[name])
    planned, cached, _already = _plan_lines(audio_project, prepared, None, set())
    rows = [row for line in planned for row in _request_rows(line)]
    assert not cached and sorted(rows) == sorted(sent_online(audio_project, prepared)[1])
    assert sorted(rows) == sorted(written(audio_project, prepared, tmp_path / "r.jsonl")[1])
