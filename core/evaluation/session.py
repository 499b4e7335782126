"""One session of one evaluation run, on the shared job loop (core.jobs.loop.JobLoop).

The loop brings the bounded concurrency, cooperative cancel (polled every 50 ms), the writer thread that
commits in batches without blocking the event loop, and progress that counts committed answers only. This
module brings what is particular to evaluation, per planned request:
- the response cache first (keyed by model, parameters, prompt and audio sha256), then identical requests
  in flight in this run (they share one call), then requests other live jobs are sending (claimed across
  processes in request_claims.py: waited for and their answers reused, so two processes that need the same
  request send it once; one pending in a provider batch is not sent at all: WaitingInBatch), and only then
  the model, through `loop.remote` (the provider's limits, retries honouring the server's wait);
- the budget: the worst case is reserved before sending; a request the budget cannot cover stops the loop
  (`StopLoop('budget')`) before the cap is crossed;
- the answer parsed and stored as a `ResponseRecord`. A paid answer is saved at once (`JobLoop.save_now`:
  the row, its cache entry and its cost committed and fsynced together) before it is counted and before its
  worker sends anything else, so a SIGKILL never makes a resume pay for a reply that was read — pipeline
  mode's transcript is saved as soon as it arrives, before its answer is asked. A failed request is
  stored with its error and counted by kind (`failure_kind`: connection failed, timed out, HTTP 400, ...) for
  the run's summary (a resume retries it); a rejected key (RemoteAuthError) stops the run."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import ModelAdapter, ModelRequest, create_adapter
from spokenbench.core.evaluation.budget import Budget, reply_cost, worst_case_cost
from spokenbench.core.evaluation.parsing import map_to_original, parse_answer
from spokenbench.core.evaluation.preparation import EvaluationPreparation, Job, RequestBuilder, asr_params
from spokenbench.core.evaluation.presets import Price
from spokenbench.core.evaluation.request_claims import RequestClaims, WaitingInBatch
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.batch_writer import DurableWriteFailed
from spokenbench.core.jobs.loop import ClaimLost, JobLoop, LoopResult, UnitResult, before_next_request, working_under
from spokenbench.core.jobs.registry import JobProgress
from spokenbench.core.jobs.remote import (
    ClassifiedError,
    ProviderLimiter,
    RemoteAuthError,
    RemoteCallFailed,
    hide_in_library_logs,
    redact,
    url_secrets,
)
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now

# The first wave of requests leaves this far apart: the provider never sees the whole concurrency as one
# burst, and replies do not come back in lock-step waves that queue for the event loop.
RAMP_STEP_S = 0.005


@dataclass(frozen=True)
class Credentials:
    """Keys read by run_evaluation just before the session; held in memory only, handed to the SDK clients."""

    model: str | None = field(repr=False)
    asr: str | None = field(default=None, repr=False)


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
    finish_reason: str | None = None
    entry: store.CacheEntry | None = None  # a fresh, paid reply: what the response cache keeps of it


@dataclass(frozen=True)
class _Committed:
    """What a committed answer tells the session's counters."""

    failed: bool
    parse_status: str | None
    error_kind: str | None = None
    error: str | None = None
    waiting: bool = False  # not sent: it waits in a provider batch (nothing stored; a resume fills it)


# A failure's kind is the start of its classified message (core.jobs.remote.classify_error) when it is one of these.
_MESSAGE_KINDS = ("connection failed", "timed out", "malformed reply")
NOT_SENT = "not sent"  # refused before sending (e.g. an input over the host's limit, a setting the model rejects)


def failure_kind(error: ClassifiedError) -> str:
    """What a failed request's summary groups it under: 'HTTP 404', 'connection failed', 'timed out', ..."""
    if error.status is not None:
        return f"HTTP {error.status}"
    head = error.message.split(" (", 1)[0]
    if head in _MESSAGE_KINDS:
        return head
    return error.message.split(":", 1)[0][:60] or "error"


class EvaluationSession:
    """Runs the prepared requests of run `run_id` that are not stored yet (`stored`: their keys)."""

    def __init__(
        self,
        project: Project,
        prepared: EvaluationPreparation,
        run_id: int,
        stored: set[tuple[int, str]],
        spent: float,
        progress: Progress,
        credentials: Credentials,
        on_note: Callable[[str], None] | None = None,
    ):
        self.project, self.prepared, self.run_id = project, prepared, run_id
        self.settings = prepared.settings
        self.progress, self.credentials = progress, credentials
        self.jobs = [job for job in prepared.jobs if job.key not in stored]
        self.total = len(prepared.jobs)
        self.answered = self.total - len(self.jobs)  # stored without error, earlier sessions included
        self.errors = self.fresh = self.hits = 0
        self.succeeded = 0  # answered in this session (from the model or the cache)
        self.parse_counts: dict[str, int] = {}
        self.error_kinds: dict[str, int] = {}  # this session's failed requests by kind
        self.error_examples: dict[str, str] = {}  # the first message of each kind
        self.waiting_in_batches: dict[tuple[int, int], int] = {}  # (batch id, run id) → requests not sent for it
        self.budget = Budget(self.settings.budget_usd, spent)
        self.price: Price | None = prepared.price
        self.asr_price: Price | None = prepared.asr_preset.price if prepared.asr_preset else prepared.price
        self.pipeline = self.settings.mode == "pipeline" and not prepared.simulated
        self.builder = RequestBuilder(self.settings, prepared.preset, prepared.asr_preset)
        self.cache: dict[str, store.CachedReply] = {}
        self.inflight: dict[str, asyncio.Future] = {}
        urls = (self.settings.base_url, self.settings.asr_base_url, prepared.preset.base_url)
        self.url_secrets = tuple(secret for url in urls for secret in url_secrets(url))  # tokens in query strings
        self.secrets = tuple(s for s in (credentials.model, credentials.asr, *self.url_secrets) if s)
        self.adapter: ModelAdapter | None = None
        self.asr_adapter: ModelAdapter | None = None
        self.limiters: dict[str, ProviderLimiter] = {}
        self.loop: JobLoop[Job] | None = None
        self._ramp_slots = 0 if prepared.simulated else self.settings.concurrency
        self._ramped = 0
        self._audio_bytes = functools.lru_cache(maxsize=64)(project.audio.read_bytes)
        self.claims = (  # requests claimed across processes: only a tracked job can hold claims
            RequestClaims(project.db_path, progress.job_id, progress.lease, on_note)
            if isinstance(progress, JobProgress)
            else None
        )

    @property
    def reused_from_other_jobs(self) -> int:
        """Answers another job sent while this one needed the same request (waited for, not sent again)."""
        return self.claims.reused if self.claims is not None else 0

    @property
    def reused_from_jobs(self) -> list[int]:
        return sorted(self.claims.reused_from) if self.claims is not None else []

    @property
    def retries(self) -> int:
        return self.loop.retries if self.loop is not None else 0

    # -- running ------------------------------------------------------------------------------------

    async def run(self) -> LoopResult:
        """Raises Cancelled after a cancel and RemoteAuthError after a rejected key; whatever finished before
        is committed either way. A budget stop returns with stop_reason 'budget'."""
        self._make_adapters()
        self.cache = store.cached_replies(self.project.conn, self.prepared.cache_keys)
        self.loop = JobLoop(
            self.project.db_path,
            self.progress,
            concurrency=1 if self.prepared.simulated else self.settings.concurrency,  # simulated: no I/O to overlap
            describe=self._describe,
            on_committed=self._committed,
            wait_for_room=any(a.paid_requests for a in filter(None, (self.adapter, self.asr_adapter))),
        )
        try:
            return await self.loop.run(self.jobs, self._process, total=self.total, already_done=self.answered)
        finally:
            if self.claims is not None:
                await self.claims.close()
            for adapter in filter(None, (self.adapter, self.asr_adapter)):
                try:
                    await asyncio.wait_for(adapter.aclose(), timeout=1.0)
                except Exception:  # noqa: BLE001 - closing is best effort
                    pass

    def _make_adapters(self) -> None:
        prepared, params = self.prepared, self.settings.params
        if prepared.simulated:
            from spokenbench.core.evaluation.simulated import SimulatedAdapter

            self.adapter = SimulatedAdapter(prepared.preset, params, prepared.profile, self.settings.plan.seed)
        else:
            self.adapter = create_adapter(prepared.preset, params, self.credentials.model)
        if prepared.asr_preset is not None:
            self.asr_adapter = create_adapter(prepared.asr_preset, asr_params(params), self.credentials.asr)
        hide_in_library_logs(self.url_secrets)  # httpx logs every request's URL, query string included
        for adapter in filter(None, (self.adapter, self.asr_adapter)):
            self.limiters.setdefault(
                adapter.limiter_key,
                ProviderLimiter(
                    adapter.limiter_key,
                    concurrency=self.settings.concurrency,
                    requests_per_minute=self.settings.rpm,
                    tokens_per_minute=self.settings.tpm,
                ),
            )

    # -- one planned request ------------------------------------------------------------------------

    async def _process(self, job: Job) -> UnitResult:
        cost = unstored_cost = 0.0  # unstored: not saved yet
        paid: list[store.CacheEntry] = []  # replies paid for and not stored yet
        transcript = obtained = error_text = error_kind = None
        try:
            if self.pipeline:
                heard = await self._obtain(self.asr_adapter or self.adapter, self.builder.transcription(job))
                transcript, cost = heard.text, heard.cost
                if heard.entry is not None:  # kept now: the answer may fail, hit the budget or be killed
                    await self.loop.save_now(
                        self._releasing(
                            functools.partial(
                                store.store_paid_step, run_id=self.run_id, entries=(heard.entry,), cost=heard.cost
                            ),
                            (heard.entry,),
                        )
                    )
                else:
                    unstored_cost += heard.cost
                before_next_request()  # a cancel kept the transcript: the answer is a resume's to ask
            obtained = await self._obtain(self.adapter, self.builder.answer(job, transcript))
            cost += obtained.cost
            unstored_cost += obtained.cost
            paid.extend(filter(None, [obtained.entry]))
        except RemoteCallFailed as failure:
            error_text = f"{failure.error.message} (after {failure.attempts} attempt(s))"
            error_kind = failure_kind(failure.error)
        except WaitingInBatch as waiting:  # a provider batch may still answer it: stored by a resume, not sent
            place = (waiting.batch_id, waiting.run_id)
            self.waiting_in_batches[place] = self.waiting_in_batches.get(place, 0) + 1
            return UnitResult(None, _Committed(failed=False, parse_status=None, waiting=True))
        except (RemoteAuthError, DurableWriteFailed):  # stop the run, not just this request
            raise
        except SpokenBenchError as problem:  # e.g. inline audio over the host's limit: this request only
            error_text = redact(str(problem), self.secrets)
            error_kind = NOT_SENT
        try:
            record, outcome = self._record(job, obtained, transcript, cost, error_text, error_kind)
        except BaseException:
            if paid:  # a bug in parsing stops the run, but must not lose what was paid for
                await self.loop.save_now(
                    self._releasing(
                        functools.partial(store.store_paid_step, run_id=self.run_id, entries=paid, cost=unstored_cost),
                        paid,
                    )
                )
            raise
        write = functools.partial(store.store_answer, record=record, cache_entries=tuple(paid), cost=unstored_cost)
        if paid:  # on disk before it is counted, and before this worker sends anything else
            await self.loop.save_now(self._releasing(write, paid))
            return UnitResult(None, outcome)
        return UnitResult(write, outcome)  # nothing paid (failed, cached, shared, simulated): the batch writer

    def _releasing(self, write, entries):
        """The write storing paid replies, releasing their request claims in the same transaction."""
        if self.claims is None:
            return write
        return self.claims.releasing(write, [entry.key for entry in entries])

    def _record(self, job: Job, obtained, transcript, cost, error_text, error_kind) -> tuple:
        """The response row of one planned request, and what its commit tells the counters."""
        planned = job.planned
        if obtained is None:
            record = store.ResponseRecord(
                run_id=self.run_id,
                item_id=planned.item_id,
                condition_key=planned.condition_key,
                option_order=planned.option_order,
                created_at=utc_now(),
                error=error_text,
                cost_usd=cost or None,
                transcript=transcript,
            )
            return record, _Committed(failed=True, parse_status=None, error_kind=error_kind, error=error_text)
        rendered = self.builder.render(job, transcript)
        parsed = parse_answer(
            obtained.text,
            rendered.presented_letters,
            rendered.option_texts,
            rendered.neutral_letter,
            rendered.neutral_text,
        )
        record = store.ResponseRecord(
            run_id=self.run_id,
            item_id=planned.item_id,
            condition_key=planned.condition_key,
            option_order=planned.option_order,
            created_at=utc_now(),
            raw_text=obtained.text,
            parsed_letter=parsed.letter,
            parse_status=parsed.status,
            mapped_option=map_to_original(parsed.letter, planned.option_order),
            latency_ms=obtained.latency_ms,
            input_tokens=obtained.input_tokens,
            output_tokens=obtained.output_tokens,
            request_sha256=obtained.key,
            cached=obtained.cached,
            attempts=obtained.attempts,
            cost_usd=cost,
            parse_detail=parsed.detail,
            transcript=transcript,
        )
        return record, _Committed(failed=False, parse_status=parsed.status)

    async def _obtain(self, adapter: ModelAdapter, request: ModelRequest) -> _Obtained:
        """The reply to one request: from the cache, from an identical request in flight, or from the model
        (then with the cache `entry` the caller journals). Raises StopLoop('budget') when the budget cannot
        cover it."""
        key = adapter.request_key(request) if adapter.cacheable else None
        if key is not None:
            hit = self.cache.get(key)
            if hit is None and self.pipeline:  # answers depend on fresh transcripts: not all keys were known
                hit = store.cached_replies(self.project.conn, [key]).get(key)
            if hit is not None:
                self.hits += 1
                return _Obtained(hit.raw_text, hit.input_tokens, hit.output_tokens, hit.latency_ms, 0.0, True, 0, key)
            if key in self.inflight:  # the same request is being answered for another condition
                obtained = await asyncio.shield(self.inflight[key])
                self.hits += 1
                return replace(obtained, cost=0.0, cached=True, attempts=0, entry=None)
            future = asyncio.get_running_loop().create_future()
            future.add_done_callback(lambda f: f.cancelled() or f.exception())
            self.inflight[key] = future
        claimed = False
        try:
            while True:
                if key is not None and self.claims is not None:
                    reused = await self.loop.with_room(lambda: self.claims.acquire(key))
                    if reused is not None:  # another job sent it (while this one waited, or just before)
                        self.hits += 1
                        self.cache[key] = reused
                        text, tokens_in, tokens_out = reused.raw_text, reused.input_tokens, reused.output_tokens
                        obtained = _Obtained(text, tokens_in, tokens_out, reused.latency_ms, 0.0, True, 0, key)
                        self.inflight.pop(key).set_result(obtained)
                        return obtained
                    claimed = True
                try:
                    with working_under(self.claims.in_hand(key) if claimed else None):
                        obtained = await self._send(adapter, request, key)
                    break
                except ClaimLost:  # taken over while this job was stopped: its new holder sends it
                    claimed = False
            if key is not None:
                cached = store.CachedReply(
                    obtained.text,
                    obtained.input_tokens,
                    obtained.output_tokens,
                    sum(a.seconds for a in request.audio),
                    obtained.latency_ms,
                    obtained.cost,
                )
                obtained = replace(obtained, entry=store.CacheEntry(key, adapter.spec, cached, obtained.finish_reason))
                self.cache[key] = cached
                self.inflight.pop(key).set_result(obtained)
            return obtained
        except BaseException as error:
            if key is not None and key in self.inflight:
                future = self.inflight.pop(key)
                if isinstance(error, asyncio.CancelledError):
                    future.cancel()
                else:
                    future.set_exception(error)
            if claimed and not isinstance(error, asyncio.CancelledError):
                await self.loop.with_room(lambda: self.claims.release(key))  # failed: one waiting for it sends it
            raise

    async def _send(self, adapter: ModelAdapter, request: ModelRequest, key: str | None) -> _Obtained:
        if self._ramped < self._ramp_slots:
            delay = self._ramped * RAMP_STEP_S
            self._ramped += 1
            if delay:
                await asyncio.sleep(delay)
        price = self.price if adapter is self.adapter else self.asr_price
        max_output = self.settings.params.max_output_tokens
        reservation = await self.budget.reserve(worst_case_cost(price, adapter, request, max_output))
        try:
            sent = self._loaded(request)
            text_est, audio_est = adapter.estimate_tokens(request)
            started = time.monotonic()
            reply, attempts = await self.loop.remote(
                lambda: adapter.generate(sent),
                self.limiters[adapter.limiter_key],
                self.settings.retry,
                tokens=text_est + audio_est,
                secrets=self.secrets,
                paid=adapter.paid_requests,
            )
        except BaseException:
            self.budget.settle(reservation, 0.0)
            raise
        latency_ms = (time.monotonic() - started) * 1000.0
        cost = reply_cost(price, adapter, request, reply, max_output)
        self.budget.settle(reservation, cost)
        self.fresh += 1
        return _Obtained(
            reply.text,
            reply.input_tokens,
            reply.output_tokens,
            latency_ms,
            cost,
            False,
            attempts,
            key,
            reply.finish_reason,
        )

    def _loaded(self, request: ModelRequest) -> ModelRequest:
        if not request.audio:
            return request
        audio = tuple(replace(a, data=self._audio_bytes(a.sha256, a.format)) for a in request.audio)
        return replace(request, audio=audio)

    # -- progress -----------------------------------------------------------------------------------

    def _committed(self, outcomes: list[_Committed]) -> None:
        """Called by the loop once answers are committed: only committed answers are counted."""
        for outcome in outcomes:
            if outcome.waiting:
                continue
            if outcome.failed:
                self.errors += 1
                kind = outcome.error_kind or "error"
                self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
                self.error_examples.setdefault(kind, outcome.error or "")
            else:
                self.answered += 1
                self.succeeded += 1
                if outcome.parse_status:
                    self.parse_counts[outcome.parse_status] = self.parse_counts.get(outcome.parse_status, 0) + 1

    def _describe(self, _job: Job) -> str:
        """The tail of the progress message: errors and money so far."""
        errors = f"{self.errors} err " if self.errors else ""
        cost = f"${self.budget.spent:.4f}" if self.price else ""
        return (errors + cost).strip()
