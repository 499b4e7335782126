"""The evaluation runner: every planned (item, condition) put to one model, concurrently, within rate limits
and budget, never paying twice, surviving crashes.

- Workers (asyncio tasks, as many as the concurrency) take planned requests in order. Each request is
  looked up in the response cache (keyed by model, parameters, prompt and audio sha256) first; a miss
  goes through core.remote (limits, retries, Retry-After) to the adapter. Identical requests within a run
  share one call.
- One writer thread owns its own connection and commits results in batches (each answer is committed with
  its cache entry in the same transaction); progress counts only committed answers, so whatever was
  reported survives a SIGKILL, and a resumed run skips every answer already stored.
- A budget guard reserves each request's worst case (estimated input × 1.5 + the maximum output) before
  sending it, so the run stops before the cap is crossed.
- Cancel (Progress.cancel) is polled every 50 ms and cancels the workers at once; an authentication
  error stops the run with a clear message; any other failure is stored with its response and the run goes on."""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import random
import threading
import time
from dataclasses import dataclass, field, replace

from spokenbench.core.errors import Cancelled, SpokenBenchError
from spokenbench.core.evaluation import records
from spokenbench.core.evaluation.adapters import (
    AudioInput,
    GenerationParams,
    ModelAdapter,
    ModelReply,
    ModelRequest,
    create_adapter,
)
from spokenbench.core.evaluation.parsing import map_to_original, parse_answer
from spokenbench.core.evaluation.plans import AUDIO_MODES, EvaluationPlan, PlannedRequest, PlanOptions, build_plan
from spokenbench.core.evaluation.presets import ModelPreset, Price, resolve_model, transcription_presets
from spokenbench.core.evaluation.prompts import (
    PROMPTS,
    RenderedPrompt,
    render_prompt,
    render_transcription_prompt,
    template_fingerprint,
)
from spokenbench.core.items import Item, option_part
from spokenbench.core.progress import Progress, no_progress
from spokenbench.core.remote import (
    ProviderLimiter,
    RemoteAuthError,
    RemoteCallFailed,
    RetryPolicy,
    call_with_retries,
    redact,
    strip_url_credentials,
)
from spokenbench.core.store import Project, database
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.rewrites import latest_rewrites

log = logging.getLogger("spokenbench.evaluation")
CANCEL_POLL_S = 0.05
WORKER_RAMP_S = 0.005
WRITER_LINGER_S = 0.01  # the longest an answer waits before its commit; bounds what a SIGKILL can lose
INPUT_RESERVE_FACTOR = 1.5
EXIT_BUDGET = "budget"


@dataclass
class RunSettings:
    model: str  # PROVIDER:NAME
    mode: str = "audio"
    prompt: str = "standard"
    plan: PlanOptions = field(default_factory=PlanOptions)
    params: GenerationParams = field(default_factory=GenerationParams)
    system_variant: str = "separate"
    base_url: str | None = None
    convention: str | None = None
    asr: str | None = None  # pipeline: 'self' (the evaluated model transcribes) or PROVIDER:MODEL
    asr_base_url: str | None = None  # default: --base-url when the ASR model has the same provider
    concurrency: int = 8
    rpm: float | None = None
    tpm: float | None = None
    budget_usd: float | None = None
    price: Price | None = None  # overrides the preset's price
    resume: bool = False
    run_id: int | None = None
    name: str | None = None
    listener_profile_file: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass
class RunSummary:
    run_id: int
    status: str
    stop_reason: str | None
    model: str
    mode: str
    total: int
    answered: int  # stored without error, including earlier sessions of a resumed run
    errors: int
    fresh_requests: int  # sent to the model in this session
    cache_hits: int
    retries: int
    cost_usd: float  # whole run
    elapsed_s: float
    parse_counts: dict[str, int]
    plan: dict

    @property
    def requests_per_s(self) -> float:
        return self.fresh_requests / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def as_dict(self) -> dict:
        data = dict(self.__dict__)
        data["requests_per_s"] = round(self.requests_per_s, 2)
        data["cost_usd"] = round(self.cost_usd, 6)
        data["elapsed_s"] = round(self.elapsed_s, 3)
        return data


class BudgetExhausted(Exception):
    pass


# --------------------------------------------------------------------------------------------------
# Preparation: everything is checked before a run row exists or a request is sent.


@dataclass(frozen=True)
class Job:
    planned: PlannedRequest
    item: Item
    question: str
    option_texts: tuple[str, ...]  # original order
    audio: tuple[AudioInput, ...]  # without bytes; loaded when a request is really sent


def _unloaded(sha: str, fmt: str, seconds: float) -> AudioInput:
    return AudioInput(data=b"", sha256=sha, format=fmt, seconds=seconds)


def prepare_jobs(project: Project, plan: EvaluationPlan, preset: ModelPreset) -> list[Job]:
    conn, options = project.conn, plan.options
    rewrites: dict[int, dict] = {}
    fallbacks = 0
    if options.text_source == "rewritten":
        for item_id in plan.items:
            rewrites[item_id] = {
                part: row["text"]
                for part, row in latest_rewrites(conn, item_id).items()
                if row["status"] in ("accepted", "edited")
            }
    audio_rows: dict[int, tuple] = {}
    chunk_rows: dict[int, list[tuple]] = {}
    needs_audio = options.mode in AUDIO_MODES and not options.simulated
    if needs_audio:
        ids = sorted({r.input_id for r in plan.requests if r.input_id is not None})
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in conn.execute(
                f"SELECT id, sha256, audio_format, duration_s FROM assembled_inputs WHERE id IN ({marks})", batch
            ):
                audio_rows[row[0]] = (row[1], row[2], row[3])
            for row in conn.execute(
                f"SELECT input_id, max_seconds, position, sha256, duration_s FROM input_chunks WHERE input_id IN ({marks}) "
                "ORDER BY input_id, max_seconds, position",
                batch,
            ):
                chunk_rows.setdefault(row[0], []).append(tuple(row[1:]))
    clip_rows: dict[int, tuple] = {}
    if options.mode == "audio+text-options" and not options.simulated:
        ids = sorted({r.input_id for r in plan.requests})
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            for row in conn.execute(
                f"SELECT id, sha256, audio_format, duration_s FROM clips WHERE id IN ({','.join('?' * len(batch))})",
                batch,
            ):
                clip_rows[row[0]] = (row[1], row[2], row[3] or 0.0)
    jobs, too_long = [], []
    limit = preset.max_audio_seconds
    for planned in plan.requests:
        item = plan.items[planned.item_id]
        texts = rewrites.get(planned.item_id, {})
        question = texts.get("question", item.question)
        option_texts = tuple(texts.get(option_part(o.letter), o.text) for o in item.options)
        if options.text_source == "rewritten" and (len(texts) < 1 + len(item.options)):
            fallbacks += 1
        audio: tuple[AudioInput, ...] = ()
        if planned.input_id is not None and needs_audio:
            sha, fmt, seconds = audio_rows[planned.input_id]
            audio = (_unloaded(sha, fmt, seconds),)
            if limit and seconds > limit:
                chunked = _chunks_within(chunk_rows.get(planned.input_id, []), limit)
                if chunked is None:
                    too_long.append((item, planned, seconds))
                else:
                    audio = tuple(_unloaded(c_sha, fmt, c_seconds) for c_sha, c_seconds in chunked)
        elif planned.input_id is not None and clip_rows:
            sha, fmt, seconds = clip_rows[planned.input_id]
            audio = (_unloaded(sha, fmt, seconds),)
            if limit and seconds > limit:
                too_long.append((item, planned, seconds))
        jobs.append(Job(planned, item, question, option_texts, audio))
    inline_limit = preset.max_inline_base64_chars
    if inline_limit:
        too_big = []
        for job in jobs:
            size = sum(_file_size(project, a) for a in job.audio)
            if (size + 2) // 3 * 4 > inline_limit:
                too_big.append((job, size))
        if too_big:
            job, size = too_big[0]
            raise SpokenBenchError(
                f"{len(too_big)} input(s) are too large for {preset.spec}'s inline audio (at most {inline_limit:,} "
                f"base64 characters, about {inline_limit * 3 // 4 // 1000} kB; e.g. item {job.item.source_id} is "
                f"{size // 1000} kB): assemble shorter chunks or a lower sample rate, or serve the model yourself "
                "(--base-url with --convention openai-input-audio)"
            )
    if too_long:
        item, planned, seconds = too_long[0]
        raise SpokenBenchError(
            f"{len(too_long)} input(s) are longer than {preset.spec}'s limit of {limit:g} s and have no chunks within it "
            f"(e.g. item {item.source_id}, {seconds:.1f} s); audio is never cut silently: run "
            f"`spokenbench assemble DIR --chunk-seconds {int(limit)}` first"
        )
    if fallbacks:
        plan.warnings.append(f"{fallbacks} request(s) use original text where no accepted rewrite exists")
    return jobs


def _file_size(project: Project, audio: AudioInput) -> int:
    try:
        return project.audio.path_for(audio.sha256, audio.format).stat().st_size
    except OSError:
        return 0


def _chunks_within(rows: list[tuple], limit: float) -> list[tuple[str, float]] | None:
    """The chunk set with the largest max_seconds not above the model's limit."""
    by_limit: dict[float, list[tuple[str, float]]] = {}
    for max_seconds, _position, sha, seconds in rows:
        by_limit.setdefault(max_seconds, []).append((sha, seconds))
    usable = [m for m in by_limit if m <= limit + 1e-9 and all(s <= limit + 1e-6 for _, s in by_limit[m])]
    return by_limit[max(usable)] if usable else None


# --------------------------------------------------------------------------------------------------
# The run


@dataclass
class _Obtained:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float | None
    cost: float
    cached: bool
    attempts: int
    key: str | None
    audio_seconds: float = 0.0
    finish_reason: str | None = None


@dataclass
class _Record:
    row: tuple
    cache_entries: list[tuple] = field(default_factory=list)  # (key, model, CachedReply, finish_reason)
    cost: float = 0.0
    failed: bool = False
    parse_status: str | None = None
    fresh: int = 0
    hits: int = 0


_STOP = object()


class _Writer(threading.Thread):
    """The one writer: its own connection, batched transactions, committed records reported back."""

    def __init__(self, db_path, run_id: int, on_commit):
        super().__init__(name="spokenbench-evaluation-writer", daemon=True)
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.db_path, self.run_id, self.on_commit = db_path, run_id, on_commit
        self.error: BaseException | None = None

    def run(self) -> None:
        conn = database.connect(self.db_path)
        try:
            stop = False
            while not stop:
                batch = [self.queue.get()]
                time.sleep(WRITER_LINGER_S)  # let a few more answers arrive: one commit (and fsync) for several
                while len(batch) < 2000:
                    try:
                        batch.append(self.queue.get_nowait())
                    except queue.Empty:
                        break
                stop = any(entry is _STOP for entry in batch)
                batch = [entry for entry in batch if entry is not _STOP]
                if not batch:
                    continue
                with database.transaction(conn):
                    for record in batch:
                        for key, model, reply, finish in record.cache_entries:
                            records.store_cached_reply(conn, key, model, reply, finish)
                    records.upsert_responses(conn, [record.row for record in batch])
                    records.add_run_cost(conn, self.run_id, sum(record.cost for record in batch))
                self.on_commit(batch)
        except BaseException as error:  # noqa: BLE001 - reported to the runner, which stops
            self.error = error
            self.on_commit(None)
        finally:
            conn.close()

    def put(self, record: _Record) -> None:
        self.queue.put(record)

    def finish(self) -> None:
        self.queue.put(_STOP)
        self.join()


class _Budget:
    def __init__(self, limit: float | None, spent: float):
        self.limit, self.spent, self.reserved = limit, spent, 0.0

    async def reserve(self, amount: float) -> float:
        if self.limit is None:
            return 0.0
        while True:
            if self.spent + self.reserved + amount <= self.limit + 1e-12:
                self.reserved += amount
                return amount
            if self.reserved <= 1e-12:
                raise BudgetExhausted()
            await asyncio.sleep(0.02)  # wait for in-flight requests to settle their reservations

    def settle(self, reservation: float, actual: float) -> None:
        self.reserved = max(0.0, self.reserved - reservation)
        self.spent += actual


class EvaluationRun:
    """One session of one run. Use `evaluate()`; this class holds the session's state."""

    def __init__(
        self,
        project: Project,
        settings: RunSettings,
        preset: ModelPreset,
        plan: EvaluationPlan,
        jobs: list[Job],
        run_id: int,
        already_done: set,
        spent: float,
        progress: Progress,
        key: str | None,
        asr_preset: ModelPreset | None,
        asr_key: str | None,
        profile=None,
    ):
        self.project, self.settings, self.preset, self.plan = project, settings, preset, plan
        self.run_id, self.progress, self.key = run_id, progress, key
        self.asr_preset, self.asr_key, self.profile = asr_preset, asr_key, profile
        self.jobs = [job for job in jobs if (job.planned.item_id, job.planned.condition_key) not in already_done]
        self.total = len(jobs)
        self.committed = len(jobs) - len(self.jobs)
        self.errors = self.fresh = self.hits = self.retries = 0
        self.parse_counts: dict[str, int] = {}
        self.budget = _Budget(settings.budget_usd, spent)
        self.price = settings.price or preset.price
        self.stop_reason: str | None = None
        self.fatal: BaseException | None = None
        self.cache: dict[str, records.CachedReply] = {}
        self.inflight: dict[str, asyncio.Future] = {}
        self.rng = random.Random(f"{run_id}")
        self.started = time.monotonic()
        self._last_report = 0.0

    # -- setup --------------------------------------------------------------------------------------

    def _make_adapters(self) -> None:
        if self.preset.provider == "simulated":
            from spokenbench.core.evaluation.simulated import SimulatedAdapter

            self.adapter = SimulatedAdapter(self.preset, self.settings.params, self.profile, self.settings.plan.seed)
        else:
            self.adapter = create_adapter(self.preset, self.settings.params, self.key)
        self.asr_adapter: ModelAdapter | None = None
        if self.asr_preset is not None:
            self.asr_adapter = create_adapter(
                self.asr_preset, replace(self.settings.params, thinking=None), self.asr_key
            )
        limiters: dict[str, ProviderLimiter] = {}
        for adapter in filter(None, (self.adapter, self.asr_adapter)):
            limiters.setdefault(
                adapter.limiter_key,
                ProviderLimiter(
                    adapter.limiter_key,
                    concurrency=self.settings.concurrency,
                    requests_per_minute=self.settings.rpm,
                    tokens_per_minute=self.settings.tpm,
                ),
            )
        self.limiters = limiters
        self.secrets = tuple(s for s in (self.key, self.asr_key) if s)

    def _preload_cache(self) -> None:
        if not self.adapter.cacheable or self.settings.mode == "pipeline":
            keys = []
        else:
            keys = [self.adapter.request_key(self._answer_request(job)) for job in self.jobs]
        if self.asr_adapter is not None and self.asr_adapter.cacheable:
            keys += [self.asr_adapter.request_key(self._asr_request(job)) for job in self.jobs]
        self.cache = records.cached_replies(self.project.conn, keys)

    # -- requests -----------------------------------------------------------------------------------

    def _render(self, job: Job, mode: str, transcript: str | None = None) -> RenderedPrompt:
        planned = job.planned
        return render_prompt(
            self.settings.prompt,
            mode,
            job.question,
            list(job.option_texts),
            planned.option_order,
            planned.label_sequence,
            planned.condition.spoken_labels,
            job.item.language,
            self.settings.system_variant,
            transcript,
        )

    def _answer_request(self, job: Job, transcript: str | None = None) -> ModelRequest:
        mode = self.settings.mode
        rendered = self._render(job, mode, transcript)
        audio = job.audio if mode in ("audio", "audio+text-options") else ()
        context = None
        if self.preset.provider == "simulated":
            context = self._listener_context(job, rendered)
        request = ModelRequest(rendered.system, rendered.user, audio, language=job.item.language, context=context)
        return request

    def _asr_request(self, job: Job) -> ModelRequest:
        system, user = render_transcription_prompt(self.settings.system_variant)
        if self.asr_preset is not None and _is_transcription_endpoint(self.asr_preset):
            return ModelRequest(None, "", job.audio, kind="transcribe", language=job.item.language)
        return ModelRequest(system, user, job.audio, language=job.item.language)

    def _listener_context(self, job: Job, rendered: RenderedPrompt) -> dict:
        from spokenbench.core.evaluation.simulated import ListenerQuestion

        condition = job.planned.condition
        levels = {k: str(v) for k, v in condition.factors().items()}
        if job.item.cultural_label:
            levels["cultural_label"] = job.item.cultural_label
        levels["language"] = job.item.language
        question = ListenerQuestion(
            job.item.source_id,
            job.item.answer,
            job.planned.option_order,
            levels,
            tuple(o.orientation for o in job.item.options),
            job.planned.condition_key,
        )
        return {
            "question": question,
            "prompt": self.settings.prompt,
            "labelled": condition.spoken_labels,
            "option_texts": rendered.option_texts,
            "neutral_letter": rendered.neutral_letter,
            "neutral_text": rendered.neutral_text,
        }

    @functools.lru_cache(maxsize=64)  # noqa: B019 - one session object per run, freed with it
    def _audio_bytes(self, sha: str, fmt: str) -> bytes:
        return self.project.audio.read_bytes(sha, fmt)

    def _loaded(self, request: ModelRequest) -> ModelRequest:
        if not request.audio:
            return request
        audio = tuple(replace(a, data=self._audio_bytes(a.sha256, a.format)) for a in request.audio)
        return replace(request, audio=audio)

    def _cost(self, adapter: ModelAdapter, request: ModelRequest, reply: ModelReply | None) -> float:
        price = self.price if adapter is self.adapter else (self.asr_preset.price if self.asr_preset else None)
        if price is None:
            return 0.0
        text_est, audio_est = adapter.estimate_tokens(request)
        seconds = sum(a.seconds for a in request.audio)
        if reply is None:  # the worst case, reserved before sending
            return price.cost(
                int(text_est * INPUT_RESERVE_FACTOR),
                int(audio_est * INPUT_RESERVE_FACTOR),
                self.settings.params.max_output_tokens,
                seconds,
            )
        audio_tokens = (
            reply.audio_tokens if reply.audio_tokens is not None else (audio_est if reply.input_tokens is None else 0)
        )
        input_tokens = reply.input_tokens if reply.input_tokens is not None else text_est + audio_est
        text_tokens = max(0, input_tokens - (reply.audio_tokens or 0))
        if reply.audio_tokens is None and reply.input_tokens is None:
            text_tokens = text_est
        output_tokens = (
            reply.output_tokens if reply.output_tokens is not None else self.settings.params.max_output_tokens
        )
        return price.cost(text_tokens, audio_tokens, output_tokens, seconds)

    async def _obtain(self, adapter: ModelAdapter, request: ModelRequest, record: _Record) -> _Obtained:
        key = adapter.request_key(request) if adapter.cacheable else None
        if key is not None:
            hit = self.cache.get(key)
            if hit is None and self.settings.mode == "pipeline" and adapter is self.adapter:
                hit = records.cached_replies(self.project.conn, [key]).get(key)
            if hit is not None:
                record.hits += 1
                return _Obtained(hit.raw_text, hit.input_tokens, hit.output_tokens, hit.latency_ms, 0.0, True, 0, key)
            if key in self.inflight:  # the same request is being answered for another condition
                obtained = await asyncio.shield(self.inflight[key])
                record.hits += 1
                return replace(obtained, cost=0.0, cached=True, attempts=0)
            future = asyncio.get_running_loop().create_future()
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
            self.inflight[key] = future
        try:
            sent = self._loaded(request)
            reservation = await self.budget.reserve(self._cost(adapter, request, None))
            text_est, audio_est = adapter.estimate_tokens(request)
            limiter = self.limiters[adapter.limiter_key]
            started = time.monotonic()
            try:
                reply, attempts = await call_with_retries(
                    lambda: adapter.generate(sent),
                    limiter,
                    self.settings.retry,
                    tokens=text_est + audio_est,
                    secrets=self.secrets,
                    rng=self.rng,
                    on_retry=self._on_retry,
                )
            except BaseException:
                self.budget.settle(reservation, 0.0)
                raise
            latency_ms = (time.monotonic() - started) * 1000.0
            cost = self._cost(adapter, request, reply)
            self.budget.settle(reservation, cost)
            record.fresh += 1
            obtained = _Obtained(
                reply.text,
                reply.input_tokens,
                reply.output_tokens,
                latency_ms,
                cost,
                False,
                attempts,
                key,
                sum(a.seconds for a in request.audio),
                reply.finish_reason,
            )
            if key is not None:
                cached = records.CachedReply(
                    reply.text, reply.input_tokens, reply.output_tokens, obtained.audio_seconds, latency_ms, cost
                )
                self.cache[key] = cached
                record.cache_entries.append((key, adapter.spec, cached, reply.finish_reason))
                self.inflight.pop(key).set_result(obtained)
            return obtained
        except BaseException as error:
            if key is not None and key in self.inflight:
                future = self.inflight.pop(key)
                if isinstance(error, asyncio.CancelledError):
                    future.cancel()
                else:
                    future.set_exception(error)
            raise

    def _on_retry(self, attempt, classified, delay) -> None:
        self.retries += 1

    # -- one job ------------------------------------------------------------------------------------

    async def _process(self, job: Job) -> None:
        planned = job.planned
        record = _Record(row=())
        transcript = None
        obtained = None
        error_text = None
        try:
            if self.settings.mode == "pipeline" and self.preset.provider != "simulated":
                asr_adapter = self.asr_adapter or self.adapter
                heard = await self._obtain(asr_adapter, self._asr_request(job), record)
                transcript = heard.text
                record.cost += heard.cost
            request = self._answer_request(job, transcript)
            obtained = await self._obtain(self.adapter, request, record)
            record.cost += obtained.cost
        except RemoteCallFailed as failure:
            error_text = f"{failure.error.message} (after {failure.attempts} attempt(s))"
        except BudgetExhausted:
            self._stop("budget")
            return
        except RemoteAuthError:
            raise
        except SpokenBenchError as problem:  # e.g. inline audio over the host's limit: this request only
            error_text = redact(str(problem), self.secrets)
        now = utc_now()
        if obtained is None:
            record.failed = True
            record.row = (
                self.run_id,
                planned.item_id,
                planned.condition_key,
                planned.option_order,
                None,
                None,
                None,
                None,
                None,
                None,
                None,
                error_text,
                now,
                None,
                0,
                None,
                record.cost or None,
                None,
                transcript,
            )
        else:
            rendered = self._render(job, self.settings.mode, transcript)
            parsed = parse_answer(
                obtained.text,
                rendered.presented_letters,
                rendered.option_texts,
                rendered.neutral_letter,
                rendered.neutral_text,
            )
            record.parse_status = parsed.status
            record.row = (
                self.run_id,
                planned.item_id,
                planned.condition_key,
                planned.option_order,
                obtained.text,
                parsed.letter,
                parsed.status,
                map_to_original(parsed.letter, planned.option_order),
                obtained.latency_ms,
                obtained.input_tokens,
                obtained.output_tokens,
                None,
                now,
                obtained.key,
                1 if obtained.cached else 0,
                obtained.attempts,
                obtained.cost,
                parsed.detail,
                transcript,
            )
        self.writer.put(record)

    def _stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason

    async def _worker(self, jobs, start_delay: float = 0.0) -> None:
        if start_delay:
            await asyncio.sleep(start_delay)
        for job in jobs:
            if self.stop_reason is not None:
                return
            try:
                await self._process(job)
            except RemoteAuthError as error:
                self.fatal = error
                self._stop("auth")
                self._cancel_workers()
                return

    def _cancel_workers(self) -> None:
        for task in self.workers:
            if task is not asyncio.current_task():
                task.cancel()

    async def _watch_cancel(self) -> None:
        while True:
            if self.progress.cancelled:
                self._stop("cancelled")
                self._cancel_workers()
                return
            await asyncio.sleep(CANCEL_POLL_S)

    # -- progress -----------------------------------------------------------------------------------

    def _on_commit(self, batch) -> None:
        """Called in the writer thread after each commit; hops to the event loop."""
        self.loop.call_soon_threadsafe(self._committed, batch)

    def _committed(self, batch) -> None:
        if batch is None:  # the writer died
            self._stop("error")
            self._cancel_workers()
            return
        for record in batch:
            self.committed += 0 if record.failed else 1
            self.errors += 1 if record.failed else 0
            self.fresh += record.fresh
            self.hits += record.hits
            if record.parse_status:
                self.parse_counts[record.parse_status] = self.parse_counts.get(record.parse_status, 0) + 1
        self._report()

    def _report(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_report < 0.1 and self.committed + self.errors < self.total:
            return
        self._last_report = now
        elapsed = max(now - self.started, 1e-6)
        handled = self.committed + self.errors
        session_done = handled - (self.total - len(self.jobs))
        rate = session_done / elapsed
        remaining = self.total - handled
        eta = (
            f"ETA {int(remaining / rate // 60)}:{int(remaining / rate % 60):02d}" if rate > 0 and remaining else "ETA -"
        )
        cost = f" ${self.budget.spent:.4f}" if self.price else ""
        errors = f" {self.errors} err" if self.errors else ""
        self.progress.report(handled, self.total, f"{rate:.1f}/s {eta}{errors}{cost}")

    # -- main ---------------------------------------------------------------------------------------

    async def run(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._make_adapters()
        self._preload_cache()
        self.writer = _Writer(self.project.db_path, self.run_id, self._on_commit)
        self.writer.start()
        shared = iter(self.jobs)
        count = max(1, min(self.settings.concurrency, len(self.jobs) or 1))
        if self.preset.provider == "simulated":
            count = 1  # no I/O to overlap
        # Workers start WORKER_RAMP_S apart: the provider never sees the whole concurrency as one burst, and
        # replies do not come back in lock-step waves that make requests queue for the event loop.
        self.workers = [asyncio.create_task(self._worker(shared, n * WORKER_RAMP_S)) for n in range(count)]
        watcher = asyncio.create_task(self._watch_cancel())
        self._report(force=True)
        try:
            await asyncio.gather(*self.workers, return_exceptions=True)
        finally:
            watcher.cancel()
            await asyncio.get_running_loop().run_in_executor(None, self.writer.finish)
            await asyncio.sleep(0)  # deliver the writer's last commit callback
            for adapter in filter(None, (self.adapter, self.asr_adapter)):
                try:
                    await asyncio.wait_for(adapter.aclose(), timeout=1.0)
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass
        self._report(force=True)


def _is_transcription_endpoint(preset: ModelPreset) -> bool:
    names = {entry["model"] for entry in transcription_presets()} | {entry["id"] for entry in transcription_presets()}
    return preset.model in names or "whisper" in preset.model or "transcribe" in preset.model


def run_identity(settings: RunSettings, preset: ModelPreset, asr_preset: ModelPreset | None, profile) -> dict:
    """What makes two sessions the same run (what changes answers), stored as runs.parameters_json.
    Concurrency, rate limits and budget are left out: they change speed and stopping, not answers."""
    identity = {
        "model": {
            "provider": preset.provider,
            "model": preset.model,
            "convention": preset.convention,
            "endpoint": strip_url_credentials(preset.base_url),
        },
        "generation": settings.params.as_dict(),
        "system_prompt": settings.system_variant,
        "plan": settings.plan.as_dict(),
    }
    if asr_preset is not None:
        identity["asr"] = {
            "provider": asr_preset.provider,
            "model": asr_preset.model,
            "endpoint": strip_url_credentials(asr_preset.base_url),
        }
    elif settings.mode == "pipeline":
        identity["asr"] = "self"
    if profile is not None:
        identity["listener_profile"] = profile.to_dict()
    return identity


def evaluate(project: Project, settings: RunSettings, progress: Progress | None = None, on_plan=None) -> RunSummary:
    """Plan, check and run (or resume) one evaluation. `on_plan(summary)` sees the plan's counts before
    anything is sent. Raises Cancelled after a cancel, RemoteAuthError after an authentication failure;
    both leave every stored answer in place and the run resumable."""
    progress = progress or no_progress()
    if settings.prompt not in PROMPTS:
        raise SpokenBenchError(f"unknown prompt '{settings.prompt}'; prompts: {', '.join(PROMPTS)}")
    if settings.concurrency < 1:
        raise SpokenBenchError("--concurrency must be at least 1")
    preset = resolve_model(settings.model, settings.base_url, settings.convention)
    simulated = preset.provider == "simulated"
    profile = None
    if simulated:
        from spokenbench.core.evaluation.simulated import load_profile

        profile = load_profile(preset.model, settings.listener_profile_file)
    settings.plan = replace(settings.plan, mode=settings.mode, simulated=simulated)
    asr_preset = None
    if settings.mode == "pipeline" and not simulated and settings.asr and settings.asr != "self":
        asr_provider = settings.asr.partition(":")[0].strip().lower()
        same_host = settings.asr_base_url or (settings.base_url if asr_provider == preset.provider else None)
        asr_preset = resolve_model(settings.asr, same_host)
    if settings.budget_usd is not None and (settings.price or preset.price) is None and not simulated:
        raise SpokenBenchError(
            f"--budget needs a price for {preset.spec}; none is in resources/models.json, so give "
            "--price-input/--price-output (USD per 1M tokens)"
        )
    plan = build_plan(project.conn, settings.plan)
    jobs = prepare_jobs(project, plan, preset)
    if on_plan is not None:
        on_plan(plan.summary())
    key = asr_key = None
    if not simulated:
        key = _credential(preset)
        if asr_preset is not None:
            asr_key = _credential(asr_preset)
    identity = run_identity(settings, preset, asr_preset, profile)
    run_mode = "simulated" if simulated else settings.mode
    if simulated:
        identity["simulates_mode"] = settings.mode
    model_name = f"simulated:{preset.model}" if simulated else preset.spec
    prompt_text = records.canonical_json(template_fingerprint(settings.prompt))
    run_row = None
    if settings.run_id is not None:
        run_row = project.conn.execute("SELECT * FROM runs WHERE id = ?", (settings.run_id,)).fetchone()
        if run_row is None:
            raise SpokenBenchError(f"no run {settings.run_id} in this project (see `spokenbench runs DIR`)")
        if run_row["parameters_json"] != records.canonical_json(identity) or run_row["model"] != model_name:
            raise SpokenBenchError(
                f"run {settings.run_id} was made with other settings; resume it with the same "
                "--model, --mode, --prompt and plan options, or start a new run"
            )
    elif settings.resume:
        run_row = records.find_resumable_run(project.conn, model_name, run_mode, settings.prompt, identity)
    with project.transaction() as conn:
        if run_row is None:
            name = settings.name or f"{model_name} {settings.mode} {settings.prompt}"
            run_id = records.create_run(
                conn,
                name,
                model_name,
                preset.provider,
                run_mode,
                settings.prompt,
                prompt_text,
                identity,
                len(jobs),
                settings.budget_usd,
            )
            spent = 0.0
        else:
            run_id = run_row["id"]
            spent = run_row["cost_usd"] or 0.0
            records.mark_run(conn, run_id, "running", None, len(jobs), settings.budget_usd)
    already = records.done_keys(project.conn, run_id)
    session = EvaluationRun(
        project, settings, preset, plan, jobs, run_id, already, spent, progress, key, asr_preset, asr_key, profile
    )
    started = time.monotonic()
    try:
        asyncio.run(session.run())
    except KeyboardInterrupt:
        with project.transaction() as conn:
            records.mark_run(conn, run_id, "cancelled", "interrupted")
        raise
    except BaseException:
        with project.transaction() as conn:
            records.mark_run(conn, run_id, "failed", "error")
        raise
    elapsed = time.monotonic() - started
    if session.writer.error is not None:
        with project.transaction() as conn:
            records.mark_run(conn, run_id, "failed", "error")
        raise SpokenBenchError(f"storing answers failed: {session.writer.error}")
    stop = session.stop_reason
    status = {"auth": "failed", "cancelled": "cancelled", EXIT_BUDGET: "cancelled", "error": "failed"}.get(
        stop, "finished"
    )
    with project.transaction() as conn:
        records.mark_run(conn, run_id, status, stop)
    cost = project.conn.execute("SELECT cost_usd FROM runs WHERE id = ?", (run_id,)).fetchone()[0] or 0.0
    summary = RunSummary(
        run_id,
        status,
        stop,
        model_name,
        run_mode,
        session.total,
        session.committed,
        session.errors,
        session.fresh,
        session.hits,
        session.retries,
        cost,
        elapsed,
        session.parse_counts,
        plan.summary(),
    )
    if stop == "auth":
        raise session.fatal
    if stop == "cancelled":
        raise Cancelled()
    return summary


def _credential(preset: ModelPreset) -> str | None:
    """The key is read once, kept in memory only, and handed to the SDK client; never stored."""
    from spokenbench.core.credentials import api_key
    from spokenbench.core.evaluation.adapters import CREDENTIAL_PROVIDER, _optional_key

    provider = CREDENTIAL_PROVIDER.get(preset.provider)
    return api_key(provider) if provider else (_optional_key(preset.provider) or "not-needed")
