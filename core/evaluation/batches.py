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
  batch that may still answer them are never submitted twice.
- `batch_states(project, refresh=True)` asks the providers where each unfinished job is.
- `collect_batches(project, ids, progress)` downloads what finished jobs answered and commits each job's
  results, failed lines included (stored with their error, as online failures: `--resume` retries them), in
  one transaction, inside a tracked job claiming `batch:<id>`: a killed collect is simply run again.
- `cancel_batches(project, ids)` asks the providers to cancel.
- `write_batch_file(project, prepared, path, progress)` streams the request file (audio inline as base64) in
  bounded memory and records it as a batch of provider 'file'; `import_results(project, path, progress)`
  validates every line of a `run_batch` output first (unknown custom_id, wrong model, malformed body: an
  InputError naming each line) and then imports all of it in one transaction.

Functions take a Project and a Progress like the other long operations (core/jobs/registry.py), so the app can run
them as operations."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import (
    AudioInput,
    GeminiAdapter,
    MalformedReply,
    ModelAdapter,
    ModelReply,
    ModelRequest,
    OpenAICompatibleAdapter,
    chat_reply,
    credential_for,
    gemini_reply,
)
from spokenbench.core.evaluation.budget import reply_cost
from spokenbench.core.evaluation.parsing import map_to_original, parse_answer
from spokenbench.core.evaluation.preparation import (
    EvaluationPreparation,
    Job,
    RequestBuilder,
    RunSettings,
    prepare_evaluation,
    run_claim,
)
from spokenbench.core.evaluation.presets import Price
from spokenbench.core.evaluation.runner import create_prepared_run
from spokenbench.core.foundation.errors import InputError, InputProblem, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.safe_files import MAX_BATCH_RESULTS_BYTES, open_regular_file
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.jobs.remote import redact, strip_url_credentials
from spokenbench.core.store import Project
from spokenbench.core.store import batches as batch_store
from spokenbench.core.store.database import utc_now

try:  # SIMD base64 (a dependency): the same bytes as the standard library's at ~20x its speed
    from pybase64 import b64encode as _b64encode
except ImportError:  # an install without it (a platform with no wheel): the standard library's encoder
    _b64encode = base64.b64encode

BATCH_DISCOUNT = 0.5  # both providers bill batch requests at half the online price
PROVIDERS = ("openai", "gemini")
OPENAI_ENDPOINT = "/v1/chat/completions"
OPENAI_MAX_REQUESTS = 50_000  # per batch input file (the SDK's documentation of batches.create)
OPENAI_MAX_BYTES = 200_000_000  # per batch input file
GEMINI_INLINE_MAX_BYTES = 20_000_000  # inline requests of one batch, in total; larger parts go as a JSONL file
GEMINI_FILE_MAX_BYTES = 2_000_000_000  # a JSONL input file through the File API
GEMINI_MAX_REQUESTS = 50_000  # requests per job: a part bigger than this is split as well (keeps jobs restartable)
LINE_SLACK = 512  # bytes a line may take beyond its base64 audio and texts (field names, the model, parameters)
JOB_KIND_SUBMIT, JOB_KIND_COLLECT = "batch-submit", "batch-collect"
TERMINAL = ("completed", "failed", "expired", "cancelled")
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


def batch_price(price: Price | None) -> Price | None:
    """The price a batch request is billed at."""
    if price is None:
        return None
    scale = BATCH_DISCOUNT
    return dataclasses.replace(
        price,
        input=price.input * scale,
        output=price.output * scale,
        audio_input=None if price.audio_input is None else price.audio_input * scale,
        audio_per_minute=None if price.audio_per_minute is None else price.audio_per_minute * scale,
    )


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
    waiting_elsewhere: int  # already waiting in an earlier batch of this run
    bytes: int
    estimated_cost_usd: float | None  # at most, at the batch price

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class BatchFileSummary:
    run_id: int
    batch_id: int
    path: str
    lines: int
    requests: int
    cached: int
    bytes: int
    elapsed_s: float

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

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["cost_usd"] = round(self.cost_usd, 6)
        return data


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
# What goes into a batch


@dataclass
class _Line:
    """One unique request: the planned requests it answers (identical requests share one line)."""

    key: str
    request: ModelRequest  # without audio bytes
    jobs: list[tuple[Job, str]]  # (job, context json)


def _context(rendered, keyer: ModelAdapter, request: ModelRequest) -> str:
    """What parsing and costing a result needs later, without the plan."""
    text_est, audio_est = keyer.estimate_tokens(request)
    return json.dumps(
        {
            "letters": rendered.presented_letters,
            "texts": rendered.option_texts,
            "neutral_letter": rendered.neutral_letter,
            "neutral_text": rendered.neutral_text,
            "text_est": text_est,
            "audio_est": audio_est,
            "audio_s": sum(a.seconds for a in request.audio),
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _check_batchable(prepared: EvaluationPreparation, provider: str | None) -> None:
    if prepared.simulated:
        raise SpokenBenchError("a simulated listener answers offline at once: run it without --batch/--batch-file")
    if prepared.settings.mode == "pipeline":
        raise SpokenBenchError(
            "pipeline mode asks twice per request (the transcript, then the answer): it cannot go into one batch; "
            "run it online, or batch a text run of the transcripts"
        )
    convention = prepared.preset.convention
    if provider == "gemini" and convention != "gemini":
        raise SpokenBenchError(f"--batch gemini needs a Gemini model, not {prepared.preset.spec}")
    if provider in ("openai", None) and convention == "gemini":
        option = "--batch openai" if provider else "--batch-file"
        raise SpokenBenchError(
            f"{option} writes OpenAI chat-completions requests; {prepared.preset.spec} is a Gemini model "
            "(use --batch gemini)"
        )


def _plan_lines(
    project: Project, prepared: EvaluationPreparation, run_id: int | None, skip: set[tuple[int, str]]
) -> tuple[list[_Line], list[tuple[Job, str, str]], int]:
    """(lines to send, (job, key, context) answered by the response cache, planned requests already stored)."""
    settings = prepared.settings
    builder = RequestBuilder(settings, prepared.preset, None)
    keyer = ModelAdapter(prepared.preset, settings.params)
    stored = store.done_keys(project.conn, run_id) if run_id is not None else set()
    lines: dict[str, _Line] = {}
    keyed = []
    audio_mode = settings.mode in ("audio", "audio+text-options")
    for job in prepared.jobs:
        if job.key in stored or job.key in skip:
            continue
        rendered = builder.render(job)  # RequestBuilder.answer's request, rendered once for it and the context
        request = ModelRequest(
            rendered.system, rendered.user, job.audio if audio_mode else (), language=job.item.language
        )
        key = prepared.answer_key(job) or keyer.request_key(request)  # keyed once, while preparing
        keyed.append((job, request, key, rendered))
    cache = store.cached_replies(project.conn, sorted({entry[2] for entry in keyed}))
    cached = []
    for job, request, key, rendered in keyed:
        context = _context(rendered, keyer, request)
        if key in cache:
            cached.append((job, key, context))
            continue
        line = lines.get(key)
        if line is None:
            line = lines[key] = _Line(key, request, [])
        line.jobs.append((job, context))
    already = sum(1 for job in prepared.jobs if job.key in stored)
    return list(lines.values()), cached, already


def _request_rows(line: _Line) -> list[tuple]:
    return [
        (job.planned.item_id, job.planned.condition_key, job.planned.option_order, line.key, context)
        for job, context in line.jobs
    ]


def _ensure_run(project: Project, prepared: EvaluationPreparation) -> int:
    """The run this batch belongs to: the one being resumed, or a new one (status 'created' until collected)."""
    if prepared.resume_run_id is not None:
        return prepared.resume_run_id
    with project.transaction() as conn:
        run_id = create_prepared_run(conn, prepared)
        store.mark_run(conn, run_id, "created", "batch pending")
    return run_id


def _store_cached(
    project: Project, run_id: int, cached: list[tuple[Job, str, str]], replies: dict | None = None
) -> None:
    """Planned requests the response cache answers: stored now, at no cost, as an online run stores them."""
    if not cached:
        return
    if replies is None:
        replies = store.cached_replies(project.conn, sorted({key for _job, key, _context in cached}))
    records = []
    for job, key, context in cached:
        hit = replies[key]
        reply = ModelReply(hit.raw_text, hit.input_tokens, hit.output_tokens)
        records.append(
            _record(
                run_id, job.planned.item_id, job.planned.condition_key, job.planned.option_order, key, context, reply
            )
        )
        records[-1] = dataclasses.replace(records[-1], cached=True, attempts=0, cost_usd=0.0, latency_ms=hit.latency_ms)
    with project.transaction() as conn:
        store.upsert_responses(conn, records)


def _record(
    run_id: int,
    item_id: int,
    condition_key: str,
    option_order: str,
    key: str,
    context: str | dict,
    reply: ModelReply | None,
    error: str | None = None,
    cost: float | None = None,
    created_at: str | None = None,
) -> store.ResponseRecord:
    """The response row of one planned request, parsed exactly as an online answer (`created_at`: now, unless
    the caller stores many rows at one time)."""
    created_at = created_at or utc_now()
    if reply is None:
        return store.ResponseRecord(
            run_id=run_id,
            item_id=item_id,
            condition_key=condition_key,
            option_order=option_order,
            created_at=created_at,
            error=error or "no result",
        )
    ctx = json.loads(context) if isinstance(context, str) else context
    parsed = parse_answer(reply.text, ctx["letters"], ctx["texts"], ctx["neutral_letter"], ctx["neutral_text"])
    return store.ResponseRecord(
        run_id=run_id,
        item_id=item_id,
        condition_key=condition_key,
        option_order=option_order,
        created_at=created_at,
        raw_text=reply.text,
        parsed_letter=parsed.letter,
        parse_status=parsed.status,
        mapped_option=map_to_original(parsed.letter, option_order),
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        request_sha256=key,
        cached=False,
        attempts=1,
        cost_usd=cost,
        parse_detail=parsed.detail,
    )


class _Estimates:
    """Stands in for an adapter in `reply_cost`: the estimates stored with the request."""

    def __init__(self, text_est: int, audio_est: int):
        self.estimates = (text_est, audio_est)

    def estimate_tokens(self, _request) -> tuple[int, int]:
        return self.estimates


def _cost(price: Price | None, context: str | dict, reply: ModelReply, max_output: int) -> float:
    if price is None:
        return 0.0
    ctx = json.loads(context) if isinstance(context, str) else context
    request = ModelRequest(None, "", (AudioInput(b"", "", "wav", ctx["audio_s"]),) if ctx["audio_s"] else ())
    return reply_cost(price, _Estimates(ctx["text_est"], ctx["audio_est"]), request, reply, max_output)


def _price_json(price: Price | None) -> str | None:
    return None if price is None else json.dumps(dataclasses.asdict(price), sort_keys=True)


def _price_from(text: str | None) -> Price | None:
    return None if not text else Price(**json.loads(text))


# --------------------------------------------------------------------------------------------------
# Writing request lines


# Conventions whose audio is one base64 string in the body: the body is encoded with a short placeholder there
# and the audio's base64 (which JSON never escapes) written in its place — the same bytes as encoding the whole
# body, without scanning megabytes of base64 for characters to escape. The encoded pieces around the audio depend
# only on the texts and the audio formats, so requests with the same texts (in audio mode, most of a plan) share
# them: the body is built (by the adapter, as online) and encoded once per distinct text, not once per line.
_SPLICED_CONVENTIONS = ("openai-input-audio", "mistral-input-audio", "audio-url")
_LINE_HEAD = b'{"custom_id":'
_LINE_MIDDLE = b',"method":"POST","url":' + json.dumps(OPENAI_ENDPOINT).encode() + b',"body":'
_LINE_END = b"}\n"


class _Writer:
    """Builds each line's request through the online adapter, loading each audio file when its line is written
    (a small cache keeps inputs shared by neighbouring lines), so memory stays bounded however many lines."""

    def __init__(self, project: Project, adapter: ModelAdapter):
        self.project, self.adapter = project, adapter
        self._audio = functools.lru_cache(maxsize=64)(project.audio.read_bytes)
        self._base64 = functools.lru_cache(maxsize=64)(self._encoded)
        self._body_pieces = functools.lru_cache(maxsize=256)(self._spliced_body)  # bounded: text mode never repeats
        self.splice = adapter.preset.convention in _SPLICED_CONVENTIONS

    def loaded(self, request: ModelRequest) -> ModelRequest:
        if not request.audio:
            return request
        audio = tuple(dataclasses.replace(a, data=self._audio(a.sha256, a.format)) for a in request.audio)
        return dataclasses.replace(request, audio=audio)

    def _encoded(self, sha256: str, audio_format: str) -> bytes:
        return _b64encode(self._audio(sha256, audio_format))

    def _spliced_body(self, system: str | None, user: str, formats: tuple[str, ...]) -> tuple[bytes, ...]:
        """The encoded body of a request with these texts and audio formats, in the pieces between its audios."""
        markers = [b"\xfb\xff\xbf" + b"%09d" % n for n in range(len(formats))]  # base64: '+/+/' + digits
        placeholder = ModelRequest(system, user, tuple(AudioInput(m, "", f, 0.0) for m, f in zip(markers, formats)))
        text = json.dumps(self.adapter.chat_body(placeholder), separators=(",", ":")).encode("utf-8")
        pieces, start = [], 0
        for marker in markers:
            token = base64.b64encode(marker)
            at = text.index(token, start)
            pieces.append(text[start:at])
            start = at + len(token)
        pieces.append(text[start:])
        return tuple(pieces)

    def openai_line(self, line: _Line) -> list[bytes]:
        """The line's bytes, in pieces (written with writelines: the audio is never copied into one string)."""
        request = line.request
        if not (self.splice and request.audio):
            body = self.adapter.chat_body(self.loaded(request))
            record = {"custom_id": line.key, "method": "POST", "url": OPENAI_ENDPOINT, "body": body}
            return [json.dumps(record, separators=(",", ":")).encode("utf-8"), b"\n"]
        body = self._body_pieces(request.system, request.user, tuple(a.format for a in request.audio))
        pieces = [_LINE_HEAD, json.dumps(line.key).encode(), _LINE_MIDDLE, body[0]]
        for audio, after in zip(request.audio, body[1:]):
            pieces += [self._base64(audio.sha256, audio.format), after]
        pieces.append(_LINE_END)
        return pieces


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
        waiting = batch_store.in_flight_requests(project.conn, run_id)
        lines, cached, already = _plan_lines(project, prepared, run_id, waiting)
        _store_cached(project, run_id, cached)
        submission = BatchSubmission(
            run_id=run_id,
            provider=provider,
            batch_ids=[],
            requests=len(prepared.jobs),
            submitted=sum(len(line.jobs) for line in lines),
            lines=len(lines),
            cached=len(cached),
            already_stored=already,
            waiting_elsewhere=len(waiting & {j.key for j in prepared.jobs}),
            bytes=0,
            estimated_cost_usd=None,
        )
        if price is not None:
            from spokenbench.core.evaluation.budget import worst_case_cost

            keyer = ModelAdapter(preset, prepared.settings.params)
            submission.estimated_cost_usd = sum(
                worst_case_cost(price, keyer, line.request, prepared.settings.params.max_output_tokens)
                for line in lines
            )
        if not lines:
            _settle_run(project, run_id)
            return submission
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
            part_lines = [lines[i] for i in indexes]
            with project.transaction() as conn:
                batch_id = batch_store.insert_batch(
                    conn, **common, part=number, state="submitting", requests=len(part_lines)
                )
                batch_store.insert_requests(conn, batch_id, (row for line in part_lines for row in _request_rows(line)))
            try:
                fields = submit(
                    project=project, batch_id=batch_id, lines=part_lines, size=sum(sizes[i] for i in indexes)
                )
            except BaseException as error:
                with project.transaction() as conn:  # nothing was created remotely (or we cannot know its id)
                    batch_store.delete_batch(conn, batch_id)
                if isinstance(error, SpokenBenchError | KeyboardInterrupt):
                    raise
                if isinstance(error, Exception):
                    raise SpokenBenchError(
                        f"submitting batch part {number} of {len(parts)} failed: {_explain(error, (key,))}"
                    ) from None
                raise
            with project.transaction() as conn:
                batch_store.update_batch(conn, batch_id, **fields)
            submission.batch_ids.append(batch_id)
            submission.bytes += fields.get("bytes") or 0
            done += len(part_lines)
            job.report(done, len(lines), f"batch {batch_id} submitted")
    return submission


def _submit_openai_part(project: Project, batch_id: int, lines: list[_Line], size: int, client, writer) -> dict:
    folder = project.path / "batches"
    folder.mkdir(exist_ok=True)
    path = folder / f"batch-{batch_id}-input.jsonl"
    written = 0
    with open(path, "wb", buffering=1 << 20) as out:
        for line in lines:
            pieces = writer.openai_line(line)
            out.writelines(pieces)
            written += sum(map(len, pieces))
    try:
        with open(path, "rb") as handle:
            uploaded = client.files.create(file=(path.name, handle, "application/jsonl"), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id,
            endpoint=OPENAI_ENDPOINT,
            completion_window="24h",
            metadata={"spokenbench_batch": str(batch_id)},
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
    project: Project, batch_id: int, lines: list[_Line], size: int, client, writer, model: str
) -> dict:
    from google.genai import types

    display = f"spokenbench-batch-{batch_id}"
    if size <= GEMINI_INLINE_MAX_BYTES:
        requests = []
        for line in lines:
            contents, config = writer.adapter.request_parts(writer.loaded(line.request))
            requests.append(
                types.InlinedRequest(model=model, contents=contents, config=config, metadata={"key": line.key})
            )
        job = client.batches.create(model=model, src=requests, config={"display_name": display})
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
        job = client.batches.create(model=model, src=source, config={"display_name": display})
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
    with project.transaction() as conn:
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


def _settle_run(project: Project, run_id: int) -> None:
    """A run with no batch left to collect is finished (its failed requests stay for --resume)."""
    with project.transaction() as conn:
        _settle_run_in(conn, run_id)


def _settle_run_in(conn, run_id: int) -> None:
    if batch_store.run_batches_waiting(conn, run_id):
        return
    row = store.run_row(conn, run_id)
    if row is None:
        return
    answered, failed = batch_store.run_answer_counts(conn, run_id)
    if answered + failed >= (row["total_requests"] or 0):
        store.mark_run(conn, run_id, "finished", None)


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
                summary.not_ready.append((row["id"], "never submitted (the submitting process stopped)"))
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
    return summary


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


# --------------------------------------------------------------------------------------------------
# Batch files (vLLM run_batch) and importing their results


WRITE_CHUNK = 8192  # planned requests keyed, checked against the cache and written per step (one commit each:
# their rows go into an index keyed by random hashes, and a commit writes every index page it touched)


def write_batch_file_for_settings(
    project: Project, settings: RunSettings, path: str | os.PathLike, progress: Progress | None = None
) -> tuple[BatchFileSummary, str]:
    """Plan the run from its settings and write its batch file: what the app's export does, as one picklable
    call for a job process. Returns the summary and the planned model's name."""
    prepared = prepare_evaluation(project, settings)
    return write_batch_file(project, prepared, path, progress), prepared.model_name


def write_batch_file(
    project: Project, prepared: EvaluationPreparation, path: str | os.PathLike, progress: Progress | None = None
) -> BatchFileSummary:
    """Write the OpenAI batch-format request file for the prepared plan (what the response cache already
    answers is stored, not written) and record it as a batch of provider 'file' for `import_results`. The plan
    is keyed, checked against the cache and written a chunk at a time, each line built and written on its own
    and its requests recorded as it goes (bounded memory); the file is written under a temporary name and
    renamed when complete (a failure removes it and its record)."""
    _check_batchable(prepared, None)
    progress = progress or no_progress()
    started = time.monotonic()
    target = Path(path)
    settings = prepared.settings
    run_id = _ensure_run(project, prepared)
    builder = RequestBuilder(settings, prepared.preset, None)
    keyer = ModelAdapter(prepared.preset, settings.params)
    audio_mode = settings.mode in ("audio", "audio+text-options")
    stored = store.done_keys(project.conn, run_id)
    jobs = [job for job in prepared.jobs if job.key not in stored]
    writer = _Writer(project, OpenAICompatibleAdapter(prepared.preset, settings.params, None))
    with project.transaction() as conn:
        batch_id = batch_store.insert_batch(
            conn,
            run_id=run_id,
            provider="file",
            model=prepared.model_name,
            api_model=prepared.preset.model,
            endpoint=strip_url_credentials(prepared.preset.base_url),
            input_file=str(target.resolve()),
            state="writing",
            requests=0,
            price_json=_price_json(batch_price(prepared.price)),
            max_output_tokens=settings.params.max_output_tokens,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    seen: dict[str, bool] = {}  # request key → answered by the cache (else: its line is written)
    lines = cached = written = 0
    try:
        with os.fdopen(handle, "wb", buffering=1 << 20) as out:
            for start in range(0, len(jobs), WRITE_CHUNK):
                progress.check_cancelled()
                keyed = []
                for job in jobs[start : start + WRITE_CHUNK]:
                    rendered = builder.render(job)  # RequestBuilder.answer's request, rendered once for both
                    request = ModelRequest(
                        rendered.system, rendered.user, job.audio if audio_mode else (), language=job.item.language
                    )
                    keyed.append((job, request, prepared.answer_key(job) or keyer.request_key(request), rendered))
                hits = store.cached_replies(project.conn, sorted({entry[2] for entry in keyed}))
                rows, answered = [], []
                for job, request, key, rendered in keyed:
                    context = _context(rendered, keyer, request)
                    from_cache = seen.get(key)
                    if from_cache is None:
                        from_cache = seen[key] = key in hits
                        if not from_cache:
                            pieces = writer.openai_line(_Line(key, request, []))
                            out.writelines(pieces)
                            written += sum(map(len, pieces))
                            lines += 1
                    if from_cache:
                        answered.append((job, key, context))
                    else:
                        planned = job.planned
                        rows.append((planned.item_id, planned.condition_key, planned.option_order, key, context))
                cached += len(answered)
                with project.transaction() as conn:
                    batch_store.insert_requests(conn, batch_id, rows)
                _store_cached(project, run_id, answered, hits)
                progress.report(min(start + WRITE_CHUNK, len(jobs)), len(jobs), "requests written")
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        with project.transaction() as conn:
            batch_store.delete_batch(conn, batch_id)
        raise
    with project.transaction() as conn:
        batch_store.update_batch(conn, batch_id, state="exported", requests=lines, bytes=written)
    return BatchFileSummary(
        run_id=run_id,
        batch_id=batch_id,
        path=str(target),
        lines=lines,
        requests=len(jobs) - cached,
        cached=cached,
        bytes=written,
        elapsed_s=time.monotonic() - started,
    )


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
    problems: list[InputProblem] = []
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
