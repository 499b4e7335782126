"""Importing batch results stores them a chunk at a time inside one transaction (issue 14: 100,800 results
collected in <= 30 s): every row lands as if stored at once, and a failure in a later chunk leaves nothing."""

import json

import pytest

from spokenbench.core.evaluation import batch_results, store
from spokenbench.core.evaluation.parsing import parse_answer

VLLM = ("--model", "vllm:my-audio-model", "--base-url", "http://127.0.0.1:9/v1", "--mode", "audio")
REPLIES = ["Answer: [[B]]", "The correct answer is (C).", "I'm sorry, I can't hear the audio.", "B or D", "答案是A"]


def _results(request_file, path):
    """A run_batch output: the first line failed, the others answered with REPLIES in turn."""
    records = []
    for number, raw in enumerate(request_file.read_text().splitlines()):
        key = json.loads(raw)["custom_id"]
        if number == 0:
            records.append({"custom_id": key, "response": None, "error": {"message": "CUDA out of memory"}})
            continue
        body = {
            "model": "my-audio-model",
            "choices": [{"message": {"content": REPLIES[(number - 1) % len(REPLIES)]}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 4},
        }
        records.append({"custom_id": key, "response": {"status_code": 200, "body": body}, "error": None})
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


@pytest.fixture
def exported(audio_project, cli, tmp_path):
    requests = tmp_path / "requests.jsonl"
    assert cli("evaluate", audio_project.path, *VLLM, "--prompt", "standard", "--batch-file", requests).code == 0
    return audio_project, _results(requests, tmp_path / "results.jsonl")


def _stored(project):
    rows = project.conn.execute(
        "SELECT r.raw_text, r.parsed_letter, r.parse_status, r.parse_detail, r.error, r.created_at, b.context_json "
        "FROM responses r JOIN batch_requests b ON b.item_id = r.item_id AND b.condition_key = r.condition_key"
    ).fetchall()
    statuses = project.conn.execute("SELECT status, count(*) FROM batch_requests GROUP BY status").fetchall()
    cached = project.conn.execute("SELECT count(*) FROM response_cache").fetchone()[0]
    return rows, dict(statuses), cached


def test_results_stored_a_chunk_at_a_time_are_all_stored_and_parsed(exported, monkeypatch):
    project, results = exported
    monkeypatch.setattr(batch_results, "RESULTS_CHUNK", 2)  # six requests: three chunks
    summary = batch_results.import_results(project, results)
    assert (summary.lines, summary.answered, summary.failed) == (6, 5, 1)
    rows, statuses, cached = _stored(project)
    assert len(rows) == 6 and statuses == {"answered": 5, "failed": 1} and cached == 5
    assert len({row["created_at"] for row in rows}) == 1  # stored together, in one transaction
    for row in rows:
        if row["error"]:
            assert row["error"] == "batch error: CUDA out of memory" and row["raw_text"] is None
            continue
        context = json.loads(row["context_json"])
        parsed = parse_answer(
            row["raw_text"], context["letters"], context["texts"], context["neutral_letter"], context["neutral_text"]
        )
        assert (row["parsed_letter"], row["parse_status"], row["parse_detail"]) == (
            parsed.letter,
            parsed.status,
            parsed.detail,
        )
    assert {row["parse_status"] for row in rows if not row["error"]} == {"ok", "refusal", "ambiguous"}


def test_a_failure_in_a_later_chunk_leaves_nothing_imported(exported, monkeypatch):
    project, results = exported
    monkeypatch.setattr(batch_results, "RESULTS_CHUNK", 2)
    upsert, calls = store.upsert_responses, []

    def fail_on_the_second_chunk(conn, records):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        upsert(conn, records)

    monkeypatch.setattr(store, "upsert_responses", fail_on_the_second_chunk)
    with pytest.raises(RuntimeError, match="disk full"):
        batch_results.import_results(project, results)
    assert _stored(project) == ([], {"pending": 6}, 0)
    monkeypatch.setattr(store, "upsert_responses", upsert)
    assert batch_results.import_results(project, results).answered == 5  # and it can simply be imported again
