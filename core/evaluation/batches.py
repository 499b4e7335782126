"""Large runs: provider batch jobs (the OpenAI Batch API, Gemini's batch mode) at half the online price, and the
OpenAI batch-format request file for vLLM's offline `run_batch` (or any compatible runner), imported back.

Every batched request is a planned request of a run, exactly as online: the same prepared plan
(`prepare_evaluation`), the same request built by the online adapter (`OpenAICompatibleAdapter.chat_body`,
`GeminiAdapter.request_parts`), the same request key (the response-cache key, and each line's `custom_id` /
`key`), the same parsing, and the answers land in the same `responses` and `response_cache` tables — so a later
online `--resume` sends nothing a batch answered, and a batch never carries what the cache already holds.
Costs are recorded at the batch price (BATCH_DISCOUNT of the preset's, or of --price-*).

- `submit_batches(project, prepared, provider, progress)` creates (or continues) the run, stores the answers
  the cache already has, splits the rest into batch jobs by the provider's limits, uploads and creates each,
  and records each job (`batch_jobs`, with one `batch_requests` row per planned request). Requests waiting in a
  batch of any run that may still answer them, or claimed by a live job, are never submitted twice (see
  `_submit_parts`; once that batch is collected, `collect_batches` fills the waiting run from the response cache).
- `batch_states(project, refresh=True)` asks the providers where each unfinished job is.
- `collect_batches(project, ids, progress)` downloads what finished jobs answered and commits each job's
  results, failed lines included (stored with their error, as online failures: `--resume` retries them), in
  one transaction, inside a tracked job claiming `batch:<id>`: a killed collect is simply run again.
- `cancel_batches(project, ids)` asks the providers to cancel.
- `write_batch_file(project, prepared, path, progress)` (batch_files.py) streams the request file (audio inline as base64) in
  bounded memory and records it as a batch of provider 'file'; `import_results(project, path, progress)` (batch_results.py)
  validates every line of a `run_batch` output first (unknown custom_id, wrong model, malformed body: an
  InputError naming each line) and then imports all of it in one transaction.

Functions take a Project and a Progress like the other long operations (core/jobs/registry.py), so the app can run
them as operations."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import (
    GeminiAdapter,
    ModelAdapter,
    OpenAICompatibleAdapter,
    credential_for,
    gemini_reply,
)
from spokenbench.core.evaluation.batch_files import (
    OPENAI_ENDPOINT,
    _sink_for,
    _Writer,
)
from spokenbench.core.evaluation.batch_records import (
    _check_batchable,
    _ensure_run,
    _Line,
    _plan_lines,
    _price_from,
    _price_json,
    _request_rows,
    _settle_run,
    _settle_run_in,
    _store_cached,
    batch_price,
)
from spokenbench.core.evaluation.batch_results import (
    _BadLine,
    _gemini_result,
    _key_of,
    _Result,
    _store_results,
    openai_result,
)
from spokenbench.core.evaluation.preparation import (
    EvaluationPreparation,
    RunSettings,
    prepare_evaluation,
    run_claim,
)
from spokenbench.core.evaluation.request_claims import Waits, claim_name, held_elsewhere
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.registry import JobClaimed, get_job, parse_stored_time, tracked_job
from spokenbench.core.jobs.remote import classify_error, redact, strip_url_credentials
from spokenbench.core.store import Project
from spokenbench.core.store import batches as batch_store
from spokenbench.core.store import jobs as job_store
from spokenbench.core.store.database import utc_now

PROVIDERS = ("openai", "gemini")
OPENAI_MAX_REQUESTS = 50_000  # per batch input file (the SDK's documentation of batches.create)
OPENAI_MAX_BYTES = 200_000_000  # per batch input file
GEMINI_INLINE_MAX_BYTES = 20_000_000  # inline requests of one batch, in total; larger parts go as a JSONL file
GEMINI_FILE_MAX_BYTES = 2_000_000_000  # a JSONL input file through the File API
GEMINI_MAX_REQUESTS = 50_000  # requests per job: a part bigger than this is split as well (keeps jobs restartable)
LINE_SLACK = 512  # bytes a line may take beyond its base64 audio and texts (field names, the model, parameters)
JOB_KIND_SUBMIT, JOB_KIND_COLLECT = "batch-submit", "batch-collect"
TERMINAL = ("completed", "failed", "expired", "cancelled")
ORPHAN_SEARCH_PAGES = 20  # pages of the provider's batch list searched for a killed submitter's part
ORPHAN_PAGE_SIZE = 100
ORPHAN_CLOCK_MARGIN_S = 3600  # OpenAI's list is newest first: it is searched back to the part's creation minus this
ORPHAN_GRACE_S = 30.0  # a part is declared never created only this long after its submitter's last heartbeat
WAITING = ("submitting", "pending", "running", "finalizing", "cancelling")

_OPENAI_STATES = {
    "validating": "pending",
    "in_progress": "running",
    "finalizing": "finalizing",
    "completed": "completed",
    "failed": "failed",
    "expired": "expired",
    "cancelling": "cancelling",
    "cancelled": "cancelled",
}
_GEMINI_STATES = {
    "JOB_STATE_QUEUED": "pending",
    "JOB_STATE_PENDING": "pending",
    "JOB_STATE_RUNNING": "running",
    "JOB_STATE_UPDATING": "running",
    "JOB_STATE_PAUSED": "running",
    "JOB_STATE_SUCCEEDED": "completed",
    "JOB_STATE_PARTIALLY_SUCCEEDED": "completed",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_CANCELLING": "cancelling",
    "JOB_STATE_CANCELLED": "cancelled",
    "JOB_STATE_EXPIRED": "expired",
}


# --------------------------------------------------------------------------------------------------
# Summaries


@dataclass
class BatchSubmission:
    run_id: int
    provider: str
    batch_ids: list[int]
    requests: int  # planned requests of the run
    submitted: int  # planned requests put into batches
    lines: int  # unique requests sent (identical requests share one line)
    cached: int  # answered from the response cache at submission, not sent
    already_stored: int
    waiting_elsewhere: int  # waiting in an in-flight batch (of any run) or being sent by a live job: not sent
    bytes: int
    estimated_cost_usd: float | None  # at most, at the batch price
    waiting_on: list[dict] = field(default_factory=list)  # where they wait: request_claims.Waits.entries
    orphans: list[dict] = field(default_factory=list)  # killed submitters' parts looked for first (OrphanOutcome)
    not_sent: int = 0  # left to a batch collected while this submit held the run, which did not answer them

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class OrphanOutcome:
    """What became of a part whose submitter was killed before it stored the provider's id."""

    batch_id: int
    run_id: int
    outcome: str  # 'adopted' (found at the provider by its tag), 'released' (never created), 'kept' (cannot tell)
    requests: int
    note: str

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class CollectSummary:
    collected: list[int] = field(default_factory=list)  # batch ids whose results were stored now
    not_ready: list[tuple[int, str]] = field(default_factory=list)  # (batch id, state)
    answered: int = 0
    failed: int = 0
    cost_usd: float = 0.0
    failed_examples: list[dict] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    orphans: list[dict] = field(default_factory=list)  # killed submitters' parts: OrphanOutcome.as_dict
    filled: list[dict] = field(default_factory=list)  # other runs filled from the cache: {"run_id", "results"}
    still_incomplete: list[dict] = field(default_factory=list)  # {"run_id", "remaining", "why"}: resume them

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["cost_usd"] = round(self.cost_usd, 6)
        return data


def _parts(lines: list[_Line], sizes: list[int], max_bytes: int, max_requests: int) -> Iterator[list[int]]:
    """Indexes of lines per part, each within the byte and line limits."""
    part, total = [], 0
    for index, size in enumerate(sizes):
        if part and (total + size > max_bytes or len(part) >= max_requests):
            yield part
            part, total = [], 0
        part.append(index)
        total += size
    if part:
        yield part


def _line_sizes(project: Project, lines: list[_Line]) -> list[int]:
    """Upper estimates of each line's bytes: base64 of its audio files plus its texts."""
    sizes = []
    file_sizes: dict[tuple[str, str], int] = {}
    for line in lines:
        audio = 0
        for a in line.request.audio:
            size = file_sizes.get((a.sha256, a.format))
            if size is None:
                try:
                    size = project.audio.path_for(a.sha256, a.format).stat().st_size
                except OSError:
                    size = 0
                file_sizes[(a.sha256, a.format)] = size
            audio += (size + 2) // 3 * 4
        text = len((line.request.system or "").encode()) + len(line.request.user.encode())
        sizes.append(audio + 2 * text + LINE_SLACK)  # texts may grow when escaped in JSON
    return sizes


# --------------------------------------------------------------------------------------------------
# Provider clients


def _openai_client(key: str, endpoint: str | None):
    from openai import OpenAI

    return OpenAI(api_key=key, base_url=endpoint, max_retries=2, timeout=600)


def _gemini_client(key: str, endpoint: str | None):
    from google import genai
    from google.genai import types

    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=endpoint))


def _client_for(row) -> object:
    from spokenbench.core.evaluation.presets import resolve_model

    preset = resolve_model(row["model"], row["endpoint"])
    key = credential_for(preset)
    if row["provider"] == "openai":
        return _openai_client(key, row["endpoint"])
    return _gemini_client(key, row["endpoint"])


def _explain(error: BaseException, secrets: Iterable[str] = ()) -> str:
    return redact(f"{type(error).__name__}: {error}", tuple(secrets))[:500]


# --------------------------------------------------------------------------------------------------
# Submitting


def submit_batches_for_settings(
    project: Project, settings: RunSettings, provider: str, progress: Progress | None = None
) -> BatchSubmission:
    """Plan the run from its settings and submit it: what the app's Submit does, as one picklable call for a job
    process (a preparation is a snapshot, so it is made where it is used)."""
    return submit_batches(project, prepare_evaluation(project, settings), provider, progress)


def submit_batches(
    project: Project, prepared: EvaluationPreparation, provider: str, progress: Progress | None = None
) -> BatchSubmission:
    """Submit the prepared plan as batch jobs of `provider` ('openai' or 'gemini'); see the module docstring.
    Raises SpokenBenchError before anything is written for a setup a batch cannot run (simulated, pipeline, a
    model of the other provider, a missing key), and JobClaimed while another live job works on the run."""
    if provider not in PROVIDERS:
        raise SpokenBenchError(f"--batch must be one of {', '.join(PROVIDERS)}, not {provider!r}")
    _check_batchable(prepared, provider)
    progress = progress or no_progress()
    preset = prepared.preset
    key = credential_for(preset)  # before anything is written
    run_id = _ensure_run(project, prepared)
    label = f"{prepared.model_name} batch ({provider}) of run {run_id}"
    price = batch_price(prepared.price)
    with tracked_job(project.path, JOB_KIND_SUBMIT, label, progress, claim=run_claim(run_id)) as job:
        orphans = recover_orphans(project)  # before planning: a found part holds its requests, a released one not
        with project.transaction() as conn:
            batch_store.delete_unsubmitted(conn, run_id)
        waits = Waits()
        waiting = batch_store.in_flight_requests(project.conn, run_id)
        for planned in prepared.jobs:
            if planned.key in waiting:
                waits.add(("batch", waiting[planned.key], run_id))
        lines, cached, already = _plan_lines(project, prepared, run_id, set(waiting))
        _store_cached(project, run_id, cached)
        lines = _drop_held(project.conn, lines, job.job_id, waits)  # a first look, without the write lock
        submission = BatchSubmission(
            run_id=run_id,
            provider=provider,
            batch_ids=[],
            requests=len(prepared.jobs),
            submitted=0,
            lines=0,
            cached=len(cached),
            already_stored=already,
            waiting_elsewhere=0,
            bytes=0,
            estimated_cost_usd=None,
            orphans=[outcome.as_dict() for outcome in orphans],
        )
        if price is not None:
            from spokenbench.core.evaluation.budget import worst_case_cost

            keyer = ModelAdapter(preset, prepared.settings.params)
            submission.estimated_cost_usd = sum(
                worst_case_cost(price, keyer, line.request, prepared.settings.params.max_output_tokens)
                for line in lines
            )
        try:
            _submit_parts(project, prepared, provider, key, run_id, price, lines, job, waits, submission)
        finally:
            submission.waiting_elsewhere, submission.waiting_on = waits.count, waits.entries()
        if not submission.batch_ids:
            _settle_run(project, run_id)
    collected = batch_store.collected_among(project.conn, (entry["batch_id"] for entry in submission.waiting_on))
    if collected:
        # A batch this submit left requests to was collected while it held the run, and a collect leaves a held
        # run to its holder: filled here, asked only once the run is let go (as runner.run_evaluation does).
        submission.waiting_on = [entry for entry in submission.waiting_on if entry["batch_id"] not in collected]
        submission.waiting_elsewhere = sum(entry["requests"] for entry in submission.waiting_on)
        with contextlib.suppress(JobClaimed):  # a live job holding the run now (that collect) fills it
            filled, remaining = _fill_from_cache(project, prepared, run_id, progress)
            submission.cached += filled
            submission.not_sent = max(0, remaining - submission.waiting_elsewhere)  # the batch failed them
    return submission


def _drop_held(conn, lines: list[_Line], job_id: int, waits: Waits) -> list[_Line]:
    """`lines` without those held elsewhere (held_elsewhere), which are counted in `waits` instead."""
    held = held_elsewhere(conn, [line.key for line in lines], job_id)
    for line in lines:
        if line.key in held:
            waits.add(held[line.key], len(line.jobs))
    return [line for line in lines if line.key not in held]


def _submit_parts(project, prepared, provider, key, run_id, price, lines, job, waits, submission) -> None:
    """Each part: its requests checked and recorded in one write transaction (BEGIN IMMEDIATE), so of two
    submitters started together exactly one submits a request key and the other counts it in `waits`. Recorded
    requests are claimed (`request:<key>`) until the provider has the batch (then the batch's rows hold them),
    so a live run waits instead of sending them, and a submitter killed before that blocks nothing."""
    if not lines:
        return
    preset = prepared.preset
    sizes = _line_sizes(project, lines)
    common = {
        "run_id": run_id,
        "provider": provider,
        "model": prepared.model_name,
        "api_model": preset.model,
        "endpoint": strip_url_credentials(preset.base_url),
        "price_json": _price_json(price),
        "max_output_tokens": prepared.settings.params.max_output_tokens,
    }
    if provider == "openai":
        client = _openai_client(key, preset.base_url)
        adapter = OpenAICompatibleAdapter(preset, prepared.settings.params, None)
        parts = list(_parts(lines, sizes, OPENAI_MAX_BYTES, OPENAI_MAX_REQUESTS))
        submit = functools.partial(_submit_openai_part, client=client, writer=_Writer(project, adapter))
    else:
        client = _gemini_client(key, preset.base_url)
        adapter = GeminiAdapter(preset, prepared.settings.params, None)
        parts = list(_parts(lines, sizes, GEMINI_FILE_MAX_BYTES, GEMINI_MAX_REQUESTS))
        submit = functools.partial(
            _submit_gemini_part, client=client, writer=_Writer(project, adapter), model=preset.model
        )
    done = 0
    for number, indexes in enumerate(parts, start=1):
        job.check_cancelled()
        with project.transaction() as conn:
            part_lines = _drop_held(conn, [lines[i] for i in indexes], job.job_id, waits)
            answered = store.cached_replies(conn, [line.key for line in part_lines])  # sent by a job just now
            late = [
                (planned, line.key, context)
                for line in part_lines
                if line.key in answered
                for planned, context in line.jobs
            ]
            part_lines = [line for line in part_lines if line.key not in answered]
            if part_lines:
                tag = secrets.token_hex(8)  # stored before the provider is asked: a killed submit is found by it
                batch_id = batch_store.insert_batch(
                    conn,
                    **common,
                    part=number,
                    state="submitting",
                    requests=len(part_lines),
                    part_tag=tag,
                    submit_job=job.job_id,
                )
                batch_store.insert_requests(conn, batch_id, (row for line in part_lines for row in _request_rows(line)))
                job_store.claim_units(conn, [claim_name(line.key) for line in part_lines], job.job_id)
        _store_cached(project, run_id, late, answered)
        submission.cached += len(late)
        if not part_lines:
            continue
        kept = {line.key for line in part_lines}
        try:
            fields = submit(
                project=project,
                batch_id=batch_id,
                tag=tag,
                lines=part_lines,
                size=sum(sizes[i] for i in indexes if lines[i].key in kept),
            )
        except _CreateUnconfirmed as error:  # the part may exist remotely: kept (tagged, in flight) for recovery
            job_store.release_job_claims(project.conn, job.job_id)
            if isinstance(error.__cause__, KeyboardInterrupt):
                raise error.__cause__ from None
            raise SpokenBenchError(
                f"submitting batch part {number} of {len(parts)}: the provider did not confirm batch {batch_id} "
                f"({redact(str(error), (key,))}); it is kept: `spokenbench batches DIR --collect` finds it at the "
                "provider by its tag and collects it, or frees its requests for a resume if it was never created"
            ) from None
        except BaseException as error:
            with project.transaction() as conn:  # the provider refused it, or it was never asked
                batch_store.delete_batch(conn, batch_id)
            job_store.release_job_claims(project.conn, job.job_id)
            if isinstance(error, SpokenBenchError | KeyboardInterrupt):
                raise
            if isinstance(error, Exception):
                raise SpokenBenchError(
                    f"submitting batch part {number} of {len(parts)} failed: {_explain(error, (key,))}"
                ) from None
            raise
        with project.transaction() as conn:
            batch_store.update_batch(conn, batch_id, **fields)
        job_store.release_job_claims(project.conn, job.job_id)  # after: the batch's rows hold them now
        submission.batch_ids.append(batch_id)
        submission.bytes += fields.get("bytes") or 0
        submission.lines += len(part_lines)
        submission.submitted += sum(len(line.jobs) for line in part_lines)
        done += len(indexes)
        job.report(done, len(lines), f"batch {batch_id} submitted")


def _submit_openai_part(
    project: Project, batch_id: int, tag: str, lines: list[_Line], size: int, client, writer
) -> dict:
    folder = project.path / "batches"
    folder.mkdir(exist_ok=True)
    path = folder / f"batch-{batch_id}-input.jsonl"
    try:
        with _sink_for(project.audio, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), len(lines)) as sink:
            sink.write(writer.line_spec(line) for line in lines)
        written = sink.written
        with open(path, "rb") as handle:
            uploaded = client.files.create(file=(path.name, handle, "application/jsonl"), purpose="batch")
        batch = _create_once(
            client.with_options(max_retries=0).batches.create,  # a retried create is a second batch, paid again
            input_file_id=uploaded.id,
            endpoint=OPENAI_ENDPOINT,
            completion_window="24h",
            metadata=_openai_metadata(batch_id, tag),
        )
    finally:
        path.unlink(missing_ok=True)
    return {
        "remote_id": batch.id,
        "input_file": uploaded.id,
        "state": _OPENAI_STATES.get(batch.status, "pending"),
        "remote_state": batch.status,
        "bytes": written,
    }


def _gemini_request_dict(client, writer: _Writer, line: _Line, model: str) -> dict:
    """A line of Gemini's JSONL input: the GenerateContentRequest exactly as the SDK serializes an inline one."""
    from google.genai import _common, batches, types

    contents, config = writer.adapter.request_parts(writer.loaded(line.request))
    inlined = types.InlinedRequest(model=model, contents=contents, config=config)
    request = batches._InlinedRequest_to_mldev(client._api_client, inlined)["request"]
    request.pop("model", None)
    return _common.encode_unserializable_types(_common.convert_to_dict(request))


def _submit_gemini_part(
    project: Project, batch_id: int, tag: str, lines: list[_Line], size: int, client, writer, model: str
) -> dict:
    from google.genai import types

    display = _gemini_display_name(batch_id, tag)
    if size <= GEMINI_INLINE_MAX_BYTES:
        requests = []
        for line in lines:
            contents, config = writer.adapter.request_parts(writer.loaded(line.request))
            requests.append(
                types.InlinedRequest(model=model, contents=contents, config=config, metadata={"key": line.key})
            )
        job = _create_once(client.batches.create, model=model, src=requests, config={"display_name": display})
        written, source = size, None
    else:
        folder = project.path / "batches"
        folder.mkdir(exist_ok=True)
        path = folder / f"batch-{batch_id}-input.jsonl"
        written = 0
        try:
            with open(path, "wb", buffering=1 << 20) as out:
                for line in lines:
                    record = {"key": line.key, "request": _gemini_request_dict(client, writer, line, model)}
                    written += out.write(json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n")
            uploaded = client.files.upload(
                file=str(path), config=types.UploadFileConfig(display_name=display, mime_type="application/jsonl")
            )
        finally:
            path.unlink(missing_ok=True)
        source = uploaded.name
        job = _create_once(client.batches.create, model=model, src=source, config={"display_name": display})
    state = _gemini_state(job)
    return {
        "remote_id": job.name,
        "input_file": source,
        "state": state,
        "remote_state": _raw_state(job),
        "bytes": written,
    }


def _raw_state(job) -> str | None:
    state = getattr(job, "state", None)
    return None if state is None else str(getattr(state, "value", state))


def _gemini_state(job) -> str:
    return _GEMINI_STATES.get(_raw_state(job) or "", "pending")


class _CreateUnconfirmed(Exception):
    """The provider's batch create failed without saying it made no batch (a timeout, a dropped connection, a 5xx, a
    reply that is not one): the part is kept, to be found by its tag, rather than released and paid for again."""


def _create_once(create, **kwargs):
    """One batch create call, never retried (see _CreateUnconfirmed)."""
    try:
        return create(**kwargs)
    except KeyboardInterrupt as interrupt:  # Ctrl-C or SIGTERM while the provider may be making it
        raise _CreateUnconfirmed("interrupted") from interrupt
    except Exception as error:
        status = classify_error(error).status
        if status is None or status >= 500 or status in (408, 409, 425):
            raise _CreateUnconfirmed(_explain(error)) from error
        raise


def _openai_metadata(batch_id: int, tag: str) -> dict[str, str]:
    """The local row id alone is not unique across projects on one account: the part's random tag is."""
    return {"spokenbench_batch": str(batch_id), "spokenbench_part": tag}


def _gemini_display_name(batch_id: int, tag: str) -> str:
    return f"spokenbench-batch-{batch_id}-{tag}"


# --------------------------------------------------------------------------------------------------
# Killed submissions: a part the provider may have created before its id was stored


class _SearchIncomplete(Exception):
    """The bounded search of the provider's batches ended before it could tell the part was never created."""


def _find_openai_part(row, client) -> dict | None:
    """The found batch's fields, or None when the provider's list (newest first) reached batches created well
    before the part without it. Provider errors propagate."""
    wanted = _openai_metadata(row["id"], row["part_tag"])
    oldest = parse_stored_time(row["created_at"]) - ORPHAN_CLOCK_MARGIN_S
    after = None
    for _page in range(ORPHAN_SEARCH_PAGES):
        page = client.batches.list(limit=ORPHAN_PAGE_SIZE, **({"after": after} if after else {}))
        batches = list(page.data or [])
        for batch in batches:
            metadata = batch.metadata if isinstance(batch.metadata, dict) else {}
            if isinstance(batch.id, str) and batch.id and all(metadata.get(k) == v for k, v in wanted.items()):
                return {
                    "remote_id": batch.id,
                    "input_file": batch.input_file_id if isinstance(batch.input_file_id, str) else None,
                    "state": _OPENAI_STATES.get(batch.status, "pending"),
                    "remote_state": str(batch.status),
                }
        if not batches or not page.has_more or any(_number(batch.created_at) < oldest for batch in batches):
            return None
        after = batches[-1].id
    raise _SearchIncomplete(f"not in the newest {ORPHAN_SEARCH_PAGES} page(s) of the provider's batch list")


def _find_gemini_part(row, client) -> dict | None:
    """As _find_openai_part, by display name; Gemini's list has no documented order, so it is read to its end
    (within the page bound)."""
    wanted = _gemini_display_name(row["id"], row["part_tag"])
    pager = client.batches.list(config={"page_size": ORPHAN_PAGE_SIZE})
    for _page in range(ORPHAN_SEARCH_PAGES):
        for job in pager.page:
            if getattr(job, "display_name", None) == wanted and isinstance(job.name, str):
                source = getattr(job, "src", None)
                file_name = getattr(source, "file_name", None) if source is not None else None
                return {
                    "remote_id": job.name,
                    "input_file": file_name if isinstance(file_name, str) else None,
                    "state": _gemini_state(job),
                    "remote_state": _raw_state(job),
                }
        if not pager.config.get("page_token"):
            return None
        pager.next_page()
    raise _SearchIncomplete(f"not in the first {ORPHAN_SEARCH_PAGES} page(s) of the provider's batch list")


def _number(value) -> float:
    """A provider's creation time; one that is not a number never ends the search early (it could free a part)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.inf


def _submitter(conn, row):
    """The job that recorded this part (a JobInfo), or None when it is not known."""
    return get_job(conn, row["submit_job"]) if row["submit_job"] is not None else None


def _submitter_alive(conn, row) -> bool:
    """Whether the job that recorded this part may still be creating it (then it stores the id itself)."""
    info = _submitter(conn, row)
    return info is not None and info.is_live


def is_orphan(conn, row) -> bool:
    """A tagged part left 'submitting' without the provider's id by a submitter that is dead: collect looks for it."""
    return (
        row["provider"] != "file"
        and row["state"] == "submitting"
        and row["remote_id"] is None
        and row["part_tag"] is not None
        and not _submitter_alive(conn, row)
    )


def _recover_orphan(project: Project, row) -> OrphanOutcome | None:
    """Look for a tagged part left 'submitting' without an id at its provider, once its submitter is dead (the
    caller holds `batch:<id>`): found → adopted (its id stored, collected as usual); not there after a complete
    search → the row is deleted and its requests are free for a resume; anything uncertain (the provider cannot
    be asked, the search hit its bound, the submitter died moments ago) → kept. None: the submitter is alive."""
    info = _submitter(project.conn, row)
    if info is not None and info.is_live:
        return None

    def outcome(kind: str, note: str) -> OrphanOutcome:
        return OrphanOutcome(row["id"], row["run_id"], kind, row["requests"], note)

    try:
        client = _client_for(row)
        find = _find_openai_part if row["provider"] == "openai" else _find_gemini_part
        fields = find(row, client)
    except SpokenBenchError as error:
        return outcome("kept", f"its submitter stopped; it cannot be looked for at the provider: {error}")
    except _SearchIncomplete as error:
        return outcome("kept", f"its submitter stopped and it is {error}: it may still exist; not submitted again")
    except Exception as error:  # noqa: BLE001 - a provider error must never read as 'never created'
        return outcome(
            "kept",
            f"its submitter stopped; the provider's batch list cannot be read ({_explain(error)}); collect again later",
        )
    with project.transaction() as conn:
        current = batch_store.batch_row(conn, row["id"])
        if current is None or current["remote_id"] is not None or current["state"] != "submitting":
            return None  # settled meanwhile
        if fields is not None:
            batch_store.update_batch(conn, row["id"], **fields)
            return outcome("adopted", f"found at the provider by its tag as {fields['remote_id']} ({fields['state']})")
        silent_for = info.heartbeat_age_s if info is not None else float("inf")
        if silent_for < ORPHAN_GRACE_S:
            return outcome("kept", "its submitter stopped moments ago and it is not at the provider yet; collect again")
        batch_store.delete_batch(conn, row["id"])
        _settle_run_in(conn, row["run_id"])
    return outcome(
        "released",
        f"never created at the provider (its submitter stopped first): its {row['requests']} request(s) are free; "
        f"resume run {row['run_id']} to submit them",
    )


def recover_orphans(project: Project) -> list[OrphanOutcome]:
    """`_recover_orphan` for every tagged part still 'submitting' without an id whose submitter is dead, each
    under its `batch:<id>` claim (a part another job is looking at is left to it)."""
    outcomes = []
    for row in batch_store.orphan_rows(project.conn):
        if _submitter_alive(project.conn, row):
            continue
        label = f"find batch {row['id']} (run {row['run_id']}) at {row['provider']}"
        try:
            with tracked_job(project.path, JOB_KIND_COLLECT, label, claim=f"batch:{row['id']}"):
                current = batch_store.batch_row(project.conn, row["id"])
                found = (
                    None if current is None or current["remote_id"] is not None else _recover_orphan(project, current)
                )
        except JobClaimed:
            continue
        if found is not None:
            outcomes.append(found)
    return outcomes


# --------------------------------------------------------------------------------------------------
# States, cancel


def _refresh(project: Project, row, client) -> dict:
    """Ask the provider where the job is; store and return the new fields."""
    if row["provider"] == "openai":
        batch = client.batches.retrieve(row["remote_id"])
        fields = {
            "state": _OPENAI_STATES.get(batch.status, row["state"]),
            "remote_state": batch.status,
            "output_file": batch.output_file_id,
            "error_file": batch.error_file_id,
        }
        if batch.errors is not None and getattr(batch.errors, "data", None):
            fields["error"] = "; ".join(f"{e.code}: {e.message}" for e in batch.errors.data[:3])[:500]
    else:
        job = client.batches.get(name=row["remote_id"])
        fields = {"state": _gemini_state(job), "remote_state": _raw_state(job)}
        dest = getattr(job, "dest", None)
        if dest is not None and getattr(dest, "file_name", None):
            fields["output_file"] = dest.file_name
        if getattr(job, "error", None):
            fields["error"] = str(job.error)[:500]
    with project.transaction() as conn:  # only onto the row as it was asked about: a collect (or a colleague's
        # script) may have settled it while the provider answered, and a collected part never goes back
        current = batch_store.batch_row(conn, row["id"])
        if current is not None and current["remote_id"] == row["remote_id"] and current["state"] != "collected":
            batch_store.update_batch(conn, row["id"], **fields)
    return fields


def batch_states(project: Project, *, refresh: bool = True, run_id: int | None = None) -> list[dict]:
    """Every batch job of the project (or of one run), oldest first. With `refresh`, the providers are asked
    about the unfinished ones first (a job whose provider cannot be reached keeps its stored state and says why
    in `note`)."""
    notes: dict[int, str] = {}
    if refresh:
        for row in batch_store.batch_rows(project.conn, run_id):
            if row["provider"] == "file" or row["remote_id"] is None or row["state"] not in WAITING:
                continue
            try:
                _refresh(project, row, _client_for(row))
            except SpokenBenchError as error:
                notes[row["id"]] = str(error)
            except Exception as error:  # noqa: BLE001 - a provider unreachable: say so, show the stored state
                notes[row["id"]] = f"state not refreshed: {_explain(error)}"
    result = []
    for row in batch_store.batch_rows(project.conn, run_id):
        entry = {
            key: row[key]
            for key in (
                "id",
                "run_id",
                "provider",
                "model",
                "part",
                "remote_id",
                "state",
                "remote_state",
                "requests",
                "answered",
                "failed",
                "bytes",
                "created_at",
                "collected_at",
                "error",
            )
        }
        entry["cost_usd"] = round(row["cost_usd"] or 0.0, 6)
        entry["input_file"] = row["input_file"]
        entry["note"] = notes.get(row["id"])
        entry["orphaned"] = is_orphan(project.conn, row)  # collect looks for it at the provider
        if row["provider"] == "file" and row["state"] == "exported":
            entry["pending"] = batch_store.request_counts(project.conn, row["id"]).get("pending", 0)
        result.append(entry)
    return result


def cancel_batches(project: Project, batch_ids: Iterable[int] | None = None) -> list[dict]:
    """Ask the providers to cancel unfinished jobs (all, or `batch_ids`); returns their new states. What a
    cancelled job answered before it stopped is still collected by `collect_batches`."""
    wanted = None if batch_ids is None else set(batch_ids)
    changed = []
    for row in batch_store.batch_rows(project.conn):
        if wanted is not None and row["id"] not in wanted:
            continue
        if row["provider"] == "file" or row["remote_id"] is None or row["state"] not in WAITING:
            if wanted is not None:
                changed.append({"id": row["id"], "state": row["state"], "note": "not running: nothing to cancel"})
            continue
        client = _client_for(row)
        try:
            if row["provider"] == "openai":
                batch = client.batches.cancel(row["remote_id"])
                fields = {"state": _OPENAI_STATES.get(batch.status, "cancelling"), "remote_state": batch.status}
            else:
                client.batches.cancel(name=row["remote_id"])
                job = client.batches.get(name=row["remote_id"])
                fields = {"state": _gemini_state(job), "remote_state": _raw_state(job)}
        except Exception as error:  # noqa: BLE001
            raise SpokenBenchError(f"cancelling batch {row['id']} failed: {_explain(error)}") from None
        with project.transaction() as conn:
            batch_store.update_batch(conn, row["id"], **fields)
        changed.append({"id": row["id"], "state": fields["state"], "note": None})
    return changed


def _download_results(row, client) -> dict[str, _Result]:
    """The results of a finished job, by request key (lines that are not results become failures)."""
    results: dict[str, _Result] = {}

    def take(lines: Iterable[bytes], parse) -> None:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                key, result = parse(json.loads(raw))
            except (ValueError, _BadLine) as problem:
                key = _key_of(raw)
                if key is None:
                    continue
                result = _Result(None, f"malformed reply: line {number}: {problem}"[:500])
            if key not in results or results[key].reply is None:
                results[key] = result

    if row["provider"] == "openai":
        for file_id in (row["output_file"], row["error_file"]):
            if file_id:
                take(client.files.content(file_id).content.splitlines(), openai_result)
        return results
    if row["output_file"]:
        take(client.files.download(file=row["output_file"]).splitlines(), _gemini_result)
        return results
    job = client.batches.get(name=row["remote_id"])
    for inlined in (getattr(job.dest, "inlined_responses", None) or []) if job.dest else []:
        key = (inlined.metadata or {}).get("key")
        if not key:
            continue
        if inlined.response is not None:
            results[key] = _Result(gemini_reply(inlined.response), None)
        else:
            error = inlined.error
            message = getattr(error, "message", None) or str(error)
            results[key] = _Result(None, f"batch error: {message}"[:500])
    return results


def collect_batches(
    project: Project, batch_ids: Iterable[int] | None = None, progress: Progress | None = None
) -> CollectSummary:
    """Store the results of every finished, uncollected job (all, or `batch_ids`); see the module docstring.
    Each job is collected inside a tracked job claiming `batch:<id>` and committed in one transaction, so a
    collect that is killed, or runs twice at once, stores each result once."""
    progress = progress or no_progress()
    wanted = None if batch_ids is None else set(batch_ids)
    summary = CollectSummary()
    rows = [
        row
        for row in batch_store.batch_rows(project.conn)
        if row["provider"] != "file" and (wanted is None or row["id"] in wanted)
    ]
    todo = [row for row in rows if row["state"] != "collected"]
    for done, row in enumerate(todo):
        progress.check_cancelled()
        label = f"collect batch {row['id']} ({row['model']}, run {row['run_id']})"
        with tracked_job(project.path, JOB_KIND_COLLECT, label, progress, claim=f"batch:{row['id']}") as job:
            row = batch_store.batch_row(project.conn, row["id"])  # as it is now that this job holds it
            if row is None or row["state"] == "collected":
                continue
            if row["remote_id"] is None:
                row = _adopt_orphan(project, row, summary)
                if row is None:
                    continue
            client = _client_for(row)
            try:
                fields = _refresh(project, row, client)
            except Exception as error:  # noqa: BLE001
                raise SpokenBenchError(f"batch {row['id']}: the provider cannot be asked ({_explain(error)})") from None
            if fields["state"] not in TERMINAL:
                summary.not_ready.append((row["id"], fields["state"]))
                continue
            row = batch_store.batch_row(project.conn, row["id"])
            try:
                results = _download_results(row, client)
            except Exception as error:  # noqa: BLE001
                raise SpokenBenchError(
                    f"batch {row['id']}: its results cannot be downloaded ({_explain(error)}); collect again later"
                ) from None
            job.check_cancelled()
            _commit_results(project, row, results, summary)
            job.report(done + 1, len(todo), f"batch {row['id']} collected")
    if summary.collected:
        _fill_waiting_runs(project, summary, progress)
    return summary


def _fill_waiting_runs(project: Project, summary: CollectSummary, progress: Progress) -> None:
    """Every unfinished run of a collected batch's model gets the planned requests the response cache now
    answers, stored as a resume stores them (`_plan_lines`, `_store_cached`: no provider call, no cost), under
    the run's claim: a run a live job holds (being resumed now) is left to that job, and a run the user
    cancelled stays as they left it. Said in `summary`."""
    from spokenbench.core.evaluation.launcher import settings_for_run

    models = {row["model"] for row in batch_store.batch_rows(project.conn) if row["id"] in summary.collected}
    runs = store.runs_left_to_fill(project.conn, models)
    for run_id in runs:
        progress.check_cancelled()
        try:
            prepared = prepare_evaluation(project, settings_for_run(project.conn, run_id))
        except SpokenBenchError as error:
            summary.still_incomplete.append({"run_id": run_id, "remaining": None, "why": f"not planned ({error})"})
            continue
        if not _plan_lines(project, prepared, run_id, set())[1]:
            continue  # the cache answers nothing of this run: not one waiting on these batches
        try:
            filled, remaining = _fill_from_cache(project, prepared, run_id, progress)
        except JobClaimed as claimed:
            why = f"held by a live job, which fills it ({str(claimed).split(';')[0]})"
            summary.still_incomplete.append({"run_id": run_id, "remaining": None, "why": why})
            continue
        if filled:
            summary.filled.append({"run_id": run_id, "results": filled})
        if remaining:
            why = "requests still wait in another batch or were never sent"
            summary.still_incomplete.append({"run_id": run_id, "remaining": remaining, "why": why})


def _fill_from_cache(
    project: Project, prepared: EvaluationPreparation, run_id: int, progress: Progress
) -> tuple[int, int]:
    """Store the planned requests of run `run_id` the response cache answers, under the run's claim (JobClaimed
    while a live job holds it: that job fills it): (results stored, requests still missing)."""
    label = f"fill run {run_id} from the response cache"
    with tracked_job(project.path, JOB_KIND_COLLECT, label, progress, claim=run_claim(run_id)):
        waiting = batch_store.in_flight_requests(project.conn, run_id)  # again, now that the run is held
        lines, cached, _already = _plan_lines(project, prepared, run_id, set(waiting))
        _store_cached(project, run_id, cached)
        _settle_run(project, run_id)
    return len(cached), len(waiting) + sum(len(line.jobs) for line in lines)


def _adopt_orphan(project: Project, row, summary: CollectSummary):
    """A part still 'submitting' without an id (the caller holds `batch:<id>`): the row again once it was found at
    the provider, or None (released, kept, or its live submitter is still at it), said in `summary`."""
    if row["part_tag"] is None:  # submitted before parts were tagged: cannot be found again
        summary.not_ready.append((row["id"], "never submitted (the submitting process stopped)"))
        return None
    found = _recover_orphan(project, row)
    if found is not None:
        summary.orphans.append(found.as_dict())
    row = batch_store.batch_row(project.conn, row["id"])
    if row is None or row["remote_id"] is not None:
        return row
    why = found.note if found is not None else f"being submitted by job {row['submit_job']}"
    summary.not_ready.append((row["id"], f"submitting: {why}"))
    return None


def _commit_results(project: Project, row, results: dict[str, _Result], summary: CollectSummary) -> None:
    price = _price_from(row["price_json"])
    why = f"not answered by the batch (it ended {row['state']})"
    with batch_store.roomy_cache(project.conn), project.transaction() as conn:
        pending = batch_store.request_rows(conn, row["id"])
        costs, failures, counts = _store_results(
            conn,
            pending,
            results,
            run_of=lambda _r: row["run_id"],
            model_of=lambda _r: row["model"],
            price_of=lambda _r: price,
            max_output_of=lambda _r: row["max_output_tokens"] or 0,
            why_missing=why,
        )
        cost = costs.get(row["id"], 0.0)
        store.add_run_cost(conn, row["run_id"], cost)
        answered, failed = counts.get(row["id"], (0, 0))
        batch_store.update_batch(
            conn,
            row["id"],
            state="collected",
            answered=(row["answered"] or 0) + answered,
            failed=(row["failed"] or 0) + failed,
            cost_usd=(row["cost_usd"] or 0.0) + cost,
            collected_at=utc_now(),
        )
        _settle_run_in(conn, row["run_id"])
    summary.collected.append(row["id"])
    summary.answered += answered
    summary.failed += failed
    summary.cost_usd += cost
    summary.failed_examples.extend(failures[: max(0, 5 - len(summary.failed_examples))])
    if row["run_id"] not in summary.runs:
        summary.runs.append(row["run_id"])
