"""LLM rewriting (BiasInEar Section 2.1, Appendix B.1): each item's question and options go to an
OpenAI-compatible chat endpoint (default: NVIDIA's hosted openai/gpt-oss-120b, as in the paper) and come
back as spoken-readable text in the item's own language.

- Every answer is stored in rewrite_requests under the hash of its request the moment it arrives, so a rerun
  or a run resumed after a kill asks nothing twice (the base URL is not part of the hash: the model name
  says what answered).
- An answer that fails validation (not JSON, wrong option count, an empty option, the wrong script) is handed
  back with the reason and asked again; after `max_attempts` answers the item is marked for manual rewriting
  (rewrite_outcomes.status = 'manual') — never stored as a rewrite.
- 429/5xx/timeouts are retried by core.jobs.remote with backoff and Retry-After; a rejected key stops the run.
- A finished item's rewrites (status 'pending', origin 'llm:<model>') are committed in one short transaction.
  `spokenbench flag` then checks them against the originals."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field

from spokenbench.core.domain.items import Item, option_part
from spokenbench.core.foundation.credentials import api_key
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.jobs.batch_writer import Write
from spokenbench.core.jobs.loop import JobLoop, UnitClaims
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.jobs.remote import (
    DEFAULT_CONCURRENCY,
    DEFAULT_TIMEOUT_S,
    ProviderLimiter,
    RemoteCallFailed,
    RetryPolicy,
    redact,
)
from spokenbench.core.rewriting.prompts import RewriteTemplate, load_template, render_messages, render_retry
from spokenbench.core.rewriting.store import (
    cached_rewrite_answers,
    items_marked_manual,
    items_with_outcome_since,
    items_with_rewrites,
    manual_rewrite_items,
    store_rewrite_answer,
    store_rewrite_outcome,
)
from spokenbench.core.rewriting.validation import InvalidAnswer, validate_answer
from spokenbench.core.store import Project
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.items import iter_items
from spokenbench.core.store.rewrites import add_rewrite

DEFAULT_BASE_URL = "https://integrate.api.nvidia.com/v1"
DEFAULT_MODEL = "openai/gpt-oss-120b"
DEFAULT_KEY_PROVIDER = "nvidia"
CHAT_PARAMETERS = frozenset(
    {"temperature", "max_tokens", "max_completion_tokens", "top_p", "seed", "reasoning_effort", "response_format"}
)


class MalformedReply(Exception):
    """A 200 reply with no choices; core.jobs.remote retries it."""


@dataclass
class RewriteSettings:
    model: str = DEFAULT_MODEL
    base_url: str | None = DEFAULT_BASE_URL
    key_provider: str | None = DEFAULT_KEY_PROVIDER  # None: the endpoint needs no key (a local server)
    key: str | None = None
    max_attempts: int = 3  # answers per item: the first plus retries after an invalid answer
    concurrency: int = DEFAULT_CONCURRENCY
    requests_per_minute: float | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    languages: tuple[str, ...] = ()
    source: str | None = None
    limit: int | None = None
    redo: bool = False  # also items that already have rewrites
    retry_manual: bool = False  # also items marked for manual rewriting

    @property
    def origin(self) -> str:
        return f"llm:{self.model}"


@dataclass
class RewritePlan:
    items: list[tuple[int, Item]]
    skipped_existing: int
    skipped_manual: int

    def summary(self) -> dict:
        return {
            "to_rewrite": len(self.items),
            "skipped_with_rewrites": self.skipped_existing,
            "skipped_marked_manual": self.skipped_manual,
        }


@dataclass
class RewriteReport:
    rewritten: int = 0
    manual: int = 0
    failed: int = 0
    requests: int = 0  # answers that came over the network
    cached: int = 0  # answers replayed from rewrite_requests
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "rewritten": self.rewritten,
            "marked_manual": self.manual,
            "failed": self.failed,
            "requests": self.requests,
            "from_cache": self.cached,
            "problems": self.problems,
        }


def plan_rewrites(conn, settings: RewriteSettings) -> RewritePlan:
    where, params = ["1"], []
    if settings.languages:
        where.append(f"language IN ({','.join('?' * len(settings.languages))})")
        params += list(settings.languages)
    if settings.source:
        where.append("source = ?")
        params.append(settings.source)
    with_rewrites = items_with_rewrites(conn)
    manual = items_marked_manual(conn)
    items, existing, skipped_manual = [], 0, 0
    for item_id, item in iter_items(conn, where=" AND ".join(where), params=tuple(params)):
        if item_id in manual and not settings.retry_manual:
            skipped_manual += 1
        elif item_id in with_rewrites and not settings.redo:
            existing += 1
        else:
            items.append((item_id, item))
    if settings.limit is not None:
        items = items[: settings.limit]
    return RewritePlan(items, existing, skipped_manual)


def request_key(model: str, messages: list[dict], parameters: dict) -> str:
    canonical = json.dumps(
        {"model": model, "messages": messages, "parameters": parameters}, ensure_ascii=False, sort_keys=True
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ChatClient:
    """The OpenAI SDK against any OpenAI-compatible endpoint, SDK retries off (core.jobs.remote retries)."""

    def __init__(self, settings: RewriteSettings, parameters: dict):
        from openai import AsyncOpenAI

        key = settings.key or (api_key(settings.key_provider) if settings.key_provider else "not-needed")
        self.secrets = (key,)
        self.model = settings.model
        self.kwargs = {k: v for k, v in parameters.items() if k in CHAT_PARAMETERS}
        extra = {k: v for k, v in parameters.items() if k not in CHAT_PARAMETERS}
        if extra:
            self.kwargs["extra_body"] = extra
        self.client = AsyncOpenAI(api_key=key, base_url=settings.base_url, max_retries=0, timeout=settings.timeout_s)

    async def complete(self, messages: list[dict]) -> tuple[str, dict]:
        started = time.perf_counter()
        response = await self.client.chat.completions.create(model=self.model, messages=messages, **self.kwargs)
        if not response.choices:
            raise MalformedReply("the reply has no choices")
        usage = response.usage
        return response.choices[0].message.content or "", {
            "input_tokens": getattr(usage, "prompt_tokens", None),
            "output_tokens": getattr(usage, "completion_tokens", None),
            "latency_ms": (time.perf_counter() - started) * 1000,
        }

    async def aclose(self) -> None:
        await self.client.close()


async def run_rewrites(
    project: Project,
    plan: RewritePlan,
    settings: RewriteSettings,
    template: RewriteTemplate | None = None,
    progress: Progress | None = None,
    retry_policy: RetryPolicy | None = None,
) -> RewriteReport:
    """Rewrite the plan's items on the shared job loop (core.jobs.registry). Every answer is saved the moment it
    arrives; an item's rewrites are stored when it is finished. Raises RemoteAuthError (after keeping all
    finished items) when the endpoint rejects the key."""
    template = template or load_template(project.conn)
    report = RewriteReport()
    if not plan.items:
        return report
    if settings.max_attempts < 1:
        raise SpokenBenchError("max_attempts must be at least 1")
    parameters = dict(template.parameters)
    client = ChatClient(settings, parameters)
    limiter = ProviderLimiter(f"rewrite:{settings.model}", settings.concurrency, settings.requests_per_minute)
    cache = cached_rewrite_answers(project.conn)
    label = f"rewrite {len(plan.items)} items with {settings.model}"
    started = utc_now()  # an item whose outcome is newer was finished by another process meanwhile
    try:
        with tracked_job(project.path, "rewrite", label, progress, total=len(plan.items)) as job_progress:
            loop = JobLoop(
                project.db_path,
                job_progress,
                concurrency=settings.concurrency,
                wait_for_room=True,  # an LLM's rewrites are paid for
                describe=lambda unit: f"{unit[1].source_id} ({unit[1].language})",
                claims=UnitClaims(
                    "rewrite",
                    key=lambda unit: str(unit[0]),
                    already_done=lambda conn, keys: {
                        str(item_id) for item_id in items_with_outcome_since(conn, [int(k) for k in keys], started)
                    },
                ),
            )

            async def answer(item_id: int, attempt: int, messages: list[dict]) -> str:
                key = request_key(settings.model, messages, parameters)
                if key in cache:
                    report.cached += 1
                    return cache[key]
                (raw, usage), _ = await loop.remote(
                    lambda: client.complete(messages), limiter, retry_policy, secrets=client.secrets
                )
                cache[key] = raw
                # on disk before it is used: a kill right after never makes a resume pay for it again
                await loop.save_now(
                    lambda conn: store_rewrite_answer(conn, key, item_id, settings.model, attempt, raw, usage)
                )
                report.requests += 1
                return raw

            async def rewrite(unit: tuple[int, Item]) -> Write:
                item_id, item = unit
                label = f"{item.source_id} ({item.language})"
                messages = render_messages(template, item)
                problem, result, attempts = None, None, 0
                try:
                    for attempt in range(1, settings.max_attempts + 1):
                        attempts = attempt
                        raw = await answer(item_id, attempt, messages)
                        try:
                            result = validate_answer(raw, item)
                            break
                        except InvalidAnswer as error:
                            problem = str(error)
                            messages = messages + [
                                {"role": "assistant", "content": raw},
                                {"role": "user", "content": render_retry(template, item, problem)},
                            ]
                except RemoteCallFailed as error:
                    message = redact(str(error), client.secrets)
                    report.failed += 1
                    report.problems.append(f"{label}: request failed: {message}")
                    return lambda conn: store_rewrite_outcome(
                        conn, item_id, "failed", settings.model, attempts, message
                    )
                if result is None:
                    report.manual += 1
                    report.problems.append(f"{label}: marked for manual rewriting after {attempts} answers: {problem}")
                    return lambda conn: store_rewrite_outcome(
                        conn, item_id, "manual", settings.model, attempts, problem
                    )
                report.rewritten += 1
                return lambda conn: _store_rewrites(conn, item_id, item, result, settings, attempts)

            await loop.run(plan.items, rewrite)
    finally:
        await client.aclose()
    return report


def _store_rewrites(conn, item_id: int, item: Item, answer, settings: RewriteSettings, attempts: int) -> None:
    add_rewrite(conn, item_id, "question", answer.question, settings.origin)
    for option, text in zip(item.options, answer.options):
        add_rewrite(conn, item_id, option_part(option.letter), text, settings.origin)
    store_rewrite_outcome(conn, item_id, "done", settings.model, attempts, None)


def manual_items(conn) -> list[dict]:
    """Items whose LLM rewriting gave no usable answer: rewrite them by hand (`spokenbench review --edit`)."""
    return manual_rewrite_items(conn)
