"""Reading batch results: one line of an OpenAI, vLLM `run_batch` or Gemini output file, storing what results
say about the planned requests (the same response rows, cache entries and costs as online), and importing a
`run_batch` output file (`import_results`), validated whole before anything is stored."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import (
    MalformedReply,
    ModelReply,
    chat_reply,
    gemini_reply,
)
from spokenbench.core.evaluation.batch_records import (
    _cost,
    _price_from,
    _record,
    _settle_run_in,
)
from spokenbench.core.foundation.errors import InputError, InputProblem, Problems, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.safe_files import MAX_BATCH_RESULTS_BYTES, open_regular_file
from spokenbench.core.store import Project
from spokenbench.core.store import batches as batch_store
from spokenbench.core.store.database import utc_now


@dataclass
class ImportSummary:
    lines: int
    answered: int
    failed: int
    skipped: int  # lines whose requests were already answered
    runs: list[int]
    cost_usd: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# --------------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class _Result:
    reply: ModelReply | None
    error: str | None


class _BadLine(ValueError):
    """A result line that is not a result (not JSON, no custom_id, a body without choices)."""


def openai_result(record, expected_model: str | None = None) -> tuple[str, _Result]:
    """One line of an OpenAI batch output or error file, or of vLLM's run_batch output: (custom_id, result).
    Raises _BadLine for a line that is not a result, or (with `expected_model`) answers another model."""
    if not isinstance(record, dict):
        raise _BadLine("not a JSON object")
    custom_id = record.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        raise _BadLine("no custom_id")
    error = record.get("error")
    response = record.get("response")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
        return custom_id, _Result(None, f"batch error{f' {code}' if code else ''}: {message}"[:500])
    if not isinstance(response, dict):
        raise _BadLine("neither a response nor an error")
    status = response.get("status_code")
    body = response.get("body")
    if status != 200:
        detail = body.get("error") if isinstance(body, dict) else body
        if isinstance(detail, dict):
            detail = detail.get("message") or json.dumps(detail)
        return custom_id, _Result(None, f"HTTP {status}: {detail}"[:500])
    if not isinstance(body, dict):
        raise _BadLine("the response has no body object")
    if expected_model is not None and body.get("model") != expected_model:
        raise _BadLine(f"the answer is from model {body.get('model')!r}, the request was for {expected_model!r}")
    try:
        return custom_id, _Result(chat_reply(body), None)
    except MalformedReply as problem:
        raise _BadLine(f"malformed body: {problem}") from None


def _gemini_result(record) -> tuple[str, _Result]:
    """One line of a Gemini batch output file: {"key", "response"} or {"key", "error"/"status"}."""
    from google.genai import types

    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        raise _BadLine("no key")
    if isinstance(record.get("response"), dict):
        try:
            return record["key"], _Result(
                gemini_reply(types.GenerateContentResponse.model_validate(record["response"])), None
            )
        except Exception as problem:  # noqa: BLE001 - the SDK's validation error
            raise _BadLine(f"malformed response: {problem}") from None
    status = record.get("error") or record.get("status") or {}
    message = status.get("message") if isinstance(status, dict) else str(status)
    return record["key"], _Result(None, f"batch error: {message}"[:500])


def _key_of(raw: bytes) -> str | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if isinstance(record, dict):
        key = record.get("custom_id") or record.get("key")
        return key if isinstance(key, str) else None
    return None


RESULTS_CHUNK = 4096  # result rows built and stored per step of the one transaction that stores them all


def _store_results(
    conn, rows: list, results: dict[str, _Result], run_of, model_of, price_of, max_output_of, why_missing: str
) -> tuple[dict[int, float], list[dict], dict[int, list[int]]]:
    """Store what `results` say about `rows` (batch_requests) in the caller's transaction — each planned
    request's response row and request status, and each request key's cache entry — built and written a chunk
    at a time (no list of 100,000 records in memory). Returns costs by batch, failure examples and [answered,
    failed] counts by batch. A request key's cost is counted once (identical requests share one line); a
    planned request already answered (online, or by another batch) keeps its answer."""
    costs: dict[int, float] = {}
    failures: list[dict] = []
    counts: dict[int, list[int]] = {}
    paid: set[str] = set()
    done_by_run = {run_id: store.done_keys(conn, run_id) for run_id in {run_of(row) for row in rows}}
    now = utc_now()  # the rows are stored together, in one transaction
    for start in range(0, len(rows), RESULTS_CHUNK):
        records, statuses, entries = [], [], []
        for row in rows[start : start + RESULTS_CHUNK]:
            run_id, batch_id, key = run_of(row), row["batch_id"], row["request_key"]
            item_id, condition_key = row["item_id"], row["condition_key"]
            stored = (item_id, condition_key) in done_by_run[run_id]
            result = results.get(key)
            count = counts.setdefault(batch_id, [0, 0])
            if result is None or result.reply is None:
                error = result.error if result is not None else why_missing
                statuses.append(("failed", error, batch_id, item_id, condition_key))
                count[1] += 1
                if not stored:
                    records.append(
                        _record(
                            run_id,
                            item_id,
                            condition_key,
                            row["option_order"],
                            key,
                            row["context_json"],
                            None,
                            error,
                            created_at=now,
                        )
                    )
                if len(failures) < 5:
                    failures.append({"batch_id": batch_id, "custom_id": key, "item_id": item_id, "error": error})
                continue
            reply = result.reply
            context = json.loads(row["context_json"])  # parsed once for parsing, costing and caching
            cost = 0.0
            first = key not in paid
            if first:
                paid.add(key)
                cost = _cost(price_of(row), context, reply, max_output_of(row))
                costs[batch_id] = costs.get(batch_id, 0.0) + cost
                entries.append(
                    store.CacheEntry(
                        key,
                        model_of(row),
                        store.CachedReply(
                            reply.text, reply.input_tokens, reply.output_tokens, context["audio_s"], None, cost
                        ),
                        reply.finish_reason,
                    )
                )
            statuses.append(("answered", None, batch_id, item_id, condition_key))
            count[0] += 1
            if not stored:
                record = _record(
                    run_id, item_id, condition_key, row["option_order"], key, context, reply, cost=cost, created_at=now
                )
                if not first:
                    record = dataclasses.replace(record, cached=True, attempts=0)
                records.append(record)
        store.store_cached_replies(conn, entries)
        store.upsert_responses(conn, records)
        batch_store.set_request_statuses(conn, statuses)
    return costs, failures, counts


def import_results(project: Project, path: str | os.PathLike, progress: Progress | None = None) -> ImportSummary:
    """Import a `run_batch` (or OpenAI batch) output file written for this project's batch files. Every line is
    validated first — JSON, a custom_id this project wrote, the model it was written for, a chat completion
    body — and any problem raises InputError naming each line, with nothing imported; then all of it is stored
    in one transaction. Lines whose request failed (`error`, a status other than 200) are stored as failed
    requests (`--resume` retries them online); requests already answered keep their answer."""
    progress = progress or no_progress()
    source = Path(path)
    try:  # a regular file of bounded size, checked before a byte is read (a FIFO would wait forever)
        handle = open_regular_file(source, MAX_BATCH_RESULTS_BYTES)
    except FileNotFoundError:
        raise SpokenBenchError(f"no results file {source}") from None
    by_key: dict[str, list] = {}
    for row in batch_store.file_request_rows(project.conn):
        by_key.setdefault(row["request_key"], []).append(row)
    if not by_key:
        handle.close()
        raise SpokenBenchError(
            "this project has written no batch file (spokenbench evaluate DIR ... --batch-file FILE) whose results "
            "could be imported"
        )
    problems = Problems()
    results: dict[str, _Result] = {}
    seen_at: dict[str, int] = {}
    lines = 0
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            lines += 1
            if number % 4096 == 0:
                progress.check_cancelled()
            try:
                record = json.loads(raw)
            except ValueError as error:
                problems.append(InputProblem(str(source), f"line {number}: not JSON ({error})"))
                continue
            custom_id = record.get("custom_id") if isinstance(record, dict) else None
            rows = by_key.get(custom_id) if isinstance(custom_id, str) else None
            if rows is None:
                what = "no custom_id" if not custom_id else f"unknown custom_id {str(custom_id)[:80]!r}"
                problems.append(
                    InputProblem(str(source), f"line {number}: {what} (not a request of this project's batch files)")
                )
                continue
            if custom_id in seen_at:
                problems.append(
                    InputProblem(
                        str(source),
                        f"line {number}: custom_id {custom_id[:16]}… again (first on line {seen_at[custom_id]})",
                    )
                )
                continue
            seen_at[custom_id] = number
            try:
                _key, result = openai_result(record, expected_model=rows[0]["api_model"])
            except _BadLine as problem:
                problems.append(InputProblem(str(source), f"line {number}: {problem}"))
                continue
            results[custom_id] = result
    if problems:
        raise InputError(problems)
    if not results:
        raise SpokenBenchError(f"{source} holds no results")
    rows = [row for key in results for row in by_key[key] if row["status"] != "answered"]
    prices = functools.lru_cache(maxsize=None)(_price_from)  # a few batches: each price read once
    skipped = sum(1 for key in results if all(row["status"] == "answered" for row in by_key[key]))
    with batch_store.roomy_cache(project.conn), project.transaction() as conn:
        costs, _failures, counts = _store_results(
            conn,
            rows,
            results,
            run_of=lambda r: r["run_id"],
            model_of=lambda r: r["model"],
            price_of=lambda r: prices(r["price_json"]),
            max_output_of=lambda r: r["max_output_tokens"] or 0,
            why_missing="no result",
        )
        for batch_id, (answered, failed) in counts.items():
            row = batch_store.batch_row(conn, batch_id)
            store.add_run_cost(conn, row["run_id"], costs.get(batch_id, 0.0))
            left = batch_store.request_counts(conn, batch_id).get("pending", 0)
            batch_store.update_batch(
                conn,
                batch_id,
                answered=(row["answered"] or 0) + answered,
                failed=(row["failed"] or 0) + failed,
                state="exported" if left else "imported",
                collected_at=utc_now(),
                cost_usd=(row["cost_usd"] or 0.0) + costs.get(batch_id, 0.0),
            )
        runs = sorted({row["run_id"] for row in rows})
        for run_id in runs:
            _settle_run_in(conn, run_id)
    answered = sum(a for a, _f in counts.values())
    failed = sum(f for _a, f in counts.values())
    return ImportSummary(
        lines=lines,
        answered=answered,
        failed=failed,
        skipped=skipped,
        runs=runs,
        cost_usd=round(sum(costs.values()), 6),
    )
