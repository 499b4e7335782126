"""Everything that happens before a run: settings checked, presets resolved, the plan built, each planned
request prepared with its audio, and what running it would reuse, send and cost — without creating a run
row, sending a request or reading a credential. The app shows an `EvaluationPreparation` before the user
pays for anything; `spokenbench evaluate --dry-run` prints it; `runner.run_evaluation` runs it."""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from spokenbench.core.domain.items import Item, option_part
from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import (
    AudioInput,
    GenerationParams,
    ModelAdapter,
    ModelRequest,
    fingerprint_audio_json,
    fingerprint_texts_json,
)
from spokenbench.core.evaluation.budget import input_cost, input_cost_of, worst_case_cost, worst_case_cost_of
from spokenbench.core.evaluation.plans import AUDIO_MODES, EvaluationPlan, PlannedRequest, PlanOptions, build_plan
from spokenbench.core.evaluation.presets import ModelPreset, Price, resolve_model, transcription_presets
from spokenbench.core.evaluation.prompts import (
    MODES,
    PROMPTS,
    SYSTEM_PROMPT_VARIANTS,
    RenderedPrompt,
    presentation_texts,
    render_prompt,
    render_texts,
    render_transcription_prompt,
    template_fingerprint,
)
from spokenbench.core.foundation.collection import automatic_collection_paused
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.jobs.registry import list_jobs
from spokenbench.core.jobs.remote import (
    DEFAULT_CONCURRENCY,
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_TIMEOUT_S,
    RetryPolicy,
    strip_url_credentials,
)
from spokenbench.core.store import Project
from spokenbench.core.store.rewrites import latest_rewrites


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
    concurrency: int = DEFAULT_CONCURRENCY
    rpm: float | None = None
    tpm: float | None = None
    budget_usd: float | None = None
    price: Price | None = None  # overrides the preset's price
    resume: bool = False
    run_id: int | None = None
    name: str | None = None
    listener_profile_file: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)


@dataclass(frozen=True, slots=True)  # slots: a large plan holds 100,000s of them
class Job:
    """One planned (item, condition) with the texts and audio its requests are built from."""

    planned: PlannedRequest
    item: Item
    question: str
    option_texts: tuple[str, ...]  # original order
    audio: tuple[AudioInput, ...]  # without bytes; loaded when a request is really sent

    @property
    def key(self) -> tuple[int, str]:
        """What a stored response is keyed by within a run."""
        return self.planned.item_id, self.planned.condition_key


# A Job's fields, in its order (planned, item, question, option texts, audio)
JobParts = tuple[PlannedRequest, Item, str, tuple[str, ...], tuple[AudioInput, ...]]


@dataclass
class EvaluationPreparation:
    """A checked, costed plan, ready for `run_evaluation`. A snapshot: run it soon, or prepare again."""

    settings: RunSettings  # as resolved (the plan options carry the mode and whether the model is simulated)
    preset: ModelPreset
    asr_preset: ModelPreset | None  # pipeline mode with a separate transcription model
    profile: object | None  # the simulated listener's ListenerProfile
    plan: EvaluationPlan = field(repr=False)
    # what the jobs are made of when first asked for (a dry run never asks); let go once they are made
    job_source: JobSource | None = field(repr=False)
    identity: dict  # what makes two sessions the same run (runs.parameters_json)
    model_name: str  # as stored with the run: PROVIDER:MODEL, or simulated:PROFILE
    run_mode: str  # as stored with the run ('simulated' for the simulated listener)
    prompt_text: str
    price: Price | None
    resume_run_id: int | None  # the run this continues; None: a new run
    already_stored: int  # planned requests the resumed run already answered without error
    already_cached: int  # planned requests answered from the response cache at no cost
    shared: int  # planned requests answered by an identical request of the same run
    requests_to_send: int  # model calls expected (pipeline: the transcription and the answer each count)
    estimated_cost_usd: float | None  # at most this (each call's worst case, what --budget reserves); None: no price
    estimated_input_cost_usd: float | None  # the input part alone, at our estimate: a floor
    warnings: list[str]
    spent_usd: float = 0.0  # what the resumed run has already cost
    cache_keys: tuple[str, ...] = field(default=(), repr=False)  # response-cache keys the session preloads
    # the answer request's cache key of each planned request, as counted here (None: not keyed), by plan position
    request_keys: list[str | None] = field(default_factory=list, repr=False)
    _jobs: list[Job] | None = field(default=None, init=False, repr=False)
    _answer_keys: dict[int, tuple[Job, str]] | None = field(default=None, init=False, repr=False)

    @property
    def jobs(self) -> list[Job]:
        """One Job per planned request, in plan order, made on first use: a run and a batch file need them, the
        counts shown before a run (and a dry run) do not."""
        if self._jobs is None:
            self._jobs = self.job_source.jobs()
            self.job_source = None  # the jobs hold what it read: its copies go (about 12 MB for 100,800 inputs)
            self.plan.input_audio.clear()
        return self._jobs

    def job_parts(self) -> Iterator[JobParts]:
        """Each planned request's Job as its fields, in plan order: from the jobs once made, else from their
        source without making them (a batch file needs no object per request)."""
        if self._jobs is not None:
            return ((job.planned, job.item, job.question, job.option_texts, job.audio) for job in self._jobs)
        return self.job_source.parts()

    @property
    def answer_keys(self) -> dict[int, tuple[Job, str]]:
        """id(job) → (job, its answer request's cache key) as counted here, so a batch file does not key it again."""
        if self._answer_keys is None:
            self._answer_keys = {
                id(job): (job, key) for job, key in zip(self.jobs, self.request_keys) if key is not None
            }
        return self._answer_keys

    def answer_key(self, job: Job) -> str | None:
        """The cache key preparation computed for `job`'s answer request (modes without a transcript), or None."""
        found = self.answer_keys.get(id(job))
        return found[1] if found is not None and found[0] is job else None

    @property
    def request_count(self) -> int:
        return len(self.plan.requests)

    @property
    def simulated(self) -> bool:
        return self.preset.provider == "simulated"

    @property
    def conditions(self) -> dict:
        """Counts per factor level (items, requests, conditions, by_factor)."""
        return self.plan.summary()

    def as_dict(self) -> dict:
        settings = self.settings
        return {
            "plan": self.conditions,
            "model": self.model_name,
            "mode": settings.mode,
            "run_mode": self.run_mode,
            "prompt": settings.prompt,
            "preset": _preset_dict(self.preset, self.price),
            "asr_preset": _preset_dict(self.asr_preset, self.asr_preset.price) if self.asr_preset else None,
            "resume_run_id": self.resume_run_id,
            "requests": self.request_count,
            "already_stored": self.already_stored,
            "already_cached": self.already_cached,
            "shared": self.shared,
            "requests_to_send": self.requests_to_send,
            "estimated_cost_usd": _rounded(self.estimated_cost_usd),
            "estimated_input_cost_usd": _rounded(self.estimated_input_cost_usd),
            "budget_usd": settings.budget_usd,
            "spent_usd": _rounded(self.spent_usd),
            "warnings": list(self.warnings),
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _preset_dict(preset: ModelPreset, price: Price | None) -> dict:
    return {
        "spec": preset.spec,
        "id": preset.id,
        "convention": preset.convention,
        "endpoint": strip_url_credentials(preset.base_url),
        "max_audio_seconds": preset.max_audio_seconds,
        "price": None if price is None else {k: v for k, v in price.__dict__.items() if v is not None},
        "retired": preset.retired,
        "successor": preset.successor,
    }


# --------------------------------------------------------------------------------------------------
# Requests


def is_transcription_endpoint(preset: ModelPreset) -> bool:
    if preset.convention == "local-whisper":
        return True
    names = {entry["model"] for entry in transcription_presets()} | {entry["id"] for entry in transcription_presets()}
    return preset.model in names or "whisper" in preset.model or "transcribe" in preset.model


class RequestBuilder:
    """How a job becomes the requests sent for it; the same for preparation (cache keys, estimates) and the
    session (sending, parsing)."""

    def __init__(self, settings: RunSettings, preset: ModelPreset, asr_preset: ModelPreset | None):
        self.settings, self.preset, self.asr_preset = settings, preset, asr_preset
        self.simulated = preset.provider == "simulated"
        self.transcription_endpoint = asr_preset is not None and is_transcription_endpoint(asr_preset)
        self._levels: dict = {}  # condition → its factor levels as strings, read once per condition

    def render(self, job: Job, transcript: str | None = None) -> RenderedPrompt:
        return render_prompt(*self._prompt_arguments(job, transcript))

    def answer(self, job: Job, transcript: str | None = None) -> ModelRequest:
        audio = job.audio if self.settings.mode in ("audio", "audio+text-options") else ()
        if self.simulated:
            rendered = self.render(job, transcript)
            context = self._listener_context(job, rendered)
            return ModelRequest(rendered.system, rendered.user, audio, language=job.item.language, context=context)
        # only the texts sent: in audio mode made once per presentation, not per request
        system, user = render_texts(*self._prompt_arguments(job, transcript))
        return ModelRequest(system, user, audio, language=job.item.language)

    def _prompt_arguments(self, job: Job, transcript: str | None) -> tuple:
        """What render_prompt and render_texts take for `job`."""
        planned = job.planned
        return (
            self.settings.prompt,
            self.settings.mode,
            job.question,
            list(job.option_texts),
            planned.option_order,
            planned.label_sequence,
            planned.condition.spoken_labels,
            job.item.language,
            self.settings.system_variant,
            transcript,
        )

    def transcription(self, job: Job) -> ModelRequest:
        if self.transcription_endpoint:
            return ModelRequest(None, "", job.audio, kind="transcribe", language=job.item.language)
        system, user = render_transcription_prompt(self.settings.system_variant)
        return ModelRequest(system, user, job.audio, language=job.item.language)

    def _listener_context(self, job: Job, rendered: RenderedPrompt) -> dict:
        from spokenbench.core.evaluation.simulated import ListenerQuestion

        condition = job.planned.condition
        levels = self._levels.get(condition)
        if levels is None:
            levels = self._levels[condition] = {k: str(v) for k, v in condition.factors().items()}
        levels = dict(levels)
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


def asr_params(params: GenerationParams) -> GenerationParams:
    """A transcription step never thinks."""
    return replace(params, thinking=None)


# --------------------------------------------------------------------------------------------------
# Jobs


class JobSource:
    """What a plan's jobs are made of, read from the project and checked while preparing: the texts of each item
    and the audio of each input. The jobs themselves (objects per request) are made from it without reading
    anything more, only when a run or a batch file asks for them."""

    def __init__(
        self,
        plan: EvaluationPlan,
        rewrites: dict[int, dict[str, str]],
        audio: dict[int, tuple[str, str, float]],
        chunked: dict[int, tuple[tuple[str, str, float], ...]],
    ):
        self.plan = plan
        self.rewrites = rewrites  # item id → its accepted rewrites by part (text source 'rewritten')
        self.audio = audio  # input id → (sha256, format, seconds) of what the request hears; absent: nothing
        self.chunked = chunked  # input id → its chunks within the model's limit, heard instead of the whole input
        self._texts: dict[int, tuple[str, tuple[str, ...], bool]] = {}

    def texts(self, item_id: int) -> tuple[str, tuple[str, ...], bool]:
        """(question, option texts in the original order, whether a rewrite was missing), one copy per item."""
        known = self._texts.get(item_id)
        if known is None:
            item = self.plan.items[item_id]
            texts = self.rewrites.get(item_id, {})
            known = self._texts[item_id] = (
                texts.get("question", item.question),
                tuple(texts.get(option_part(o.letter), o.text) for o in item.options),
                self.plan.options.text_source == "rewritten" and len(texts) < 1 + len(item.options),
            )
        return known

    def audio_of(self, input_id: int | None) -> tuple[tuple[str, str, float], ...]:
        """The (sha256, format, seconds) of each audio file a request on this input hears."""
        chunks = self.chunked.get(input_id) if self.chunked else None
        if chunks is not None:
            return chunks
        whole = self.audio.get(input_id)
        return () if whole is None else (whole,)

    def jobs(self) -> list[Job]:
        with automatic_collection_paused():  # one Job per request: 100,000s of acyclic objects
            return self._jobs()

    def _jobs(self) -> list[Job]:
        return [Job(*parts) for parts in self.parts()]

    def parts(self) -> Iterator[JobParts]:
        """What each planned request's Job holds, in plan order, without the Job (a batch file's planning makes
        no object per request); one audio tuple per input, shared by its requests."""
        made: dict[int | None, tuple[AudioInput, ...]] = {}
        items, texts = self.plan.items, self._texts
        for planned in self.plan.requests:
            item_id = planned.item_id
            known = texts.get(item_id) or self.texts(item_id)
            audio = made.get(planned.input_id)
            if audio is None:
                entries = self.audio_of(planned.input_id)  # (sha256, format, seconds): the bytes loaded when sent
                audio = made[planned.input_id] = tuple([AudioInput(b"", *entry) for entry in entries])
            yield planned, items[item_id], known[0], known[1], audio


def read_job_source(project: Project, plan: EvaluationPlan, preset: ModelPreset) -> JobSource:
    """The plan's texts (rewrites where asked) and audio (chunks where the model's limit needs them). Refuses,
    before anything is sent, inputs the model cannot take whole."""
    conn, options = project.conn, plan.options
    rewrites: dict[int, dict] = {}
    if options.text_source == "rewritten":
        for item_id in plan.items:
            rewrites[item_id] = {
                part: row["text"]
                for part, row in latest_rewrites(conn, item_id).items()
                if row["status"] in ("accepted", "edited")
            }
    audio: dict[int, tuple[str, str, float]] = {}
    if options.mode in AUDIO_MODES and not options.simulated:
        audio = plan.input_audio  # read with the plan
    elif options.mode == "audio+text-options" and not options.simulated:
        audio = store.clip_audio(conn, sorted({r.input_id for r in plan.requests}))
    limit = preset.max_audio_seconds
    chunked: dict[int, tuple[tuple[str, str, float], ...]] = {}
    too_long = []
    if limit and audio:
        over = {input_id for input_id, (_, _, seconds) in audio.items() if seconds > limit}
        chunk_rows = store.input_chunks(conn, sorted(over)) if options.mode in AUDIO_MODES else {}
        for input_id in over:
            found = _chunks_within(chunk_rows.get(input_id, []), limit) if chunk_rows else None
            if found is not None:
                fmt = audio[input_id][1]
                chunked[input_id] = tuple((sha, fmt, seconds) for sha, seconds in found)
        for planned in plan.requests:
            if planned.input_id in over and planned.input_id not in chunked:
                too_long.append((plan.items[planned.item_id], planned, audio[planned.input_id][2]))
    source = JobSource(plan, rewrites, audio, chunked)
    inline_limit = preset.max_inline_base64_chars
    if inline_limit and audio:
        sizes: dict[int, int] = {}
        too_big = []
        for planned in plan.requests:
            if planned.input_id not in audio:
                continue
            size = sizes.get(planned.input_id)
            if size is None:
                entries = source.audio_of(planned.input_id)
                size = sizes[planned.input_id] = sum(_file_size(project, sha, fmt) for sha, fmt, _ in entries)
            if (size + 2) // 3 * 4 > inline_limit:
                too_big.append((planned, size))
        if too_big:
            planned, size = too_big[0]
            raise SpokenBenchError(
                f"{len(too_big)} input(s) are too large for {preset.spec}'s inline audio (at most {inline_limit:,} "
                f"base64 characters, about {inline_limit * 3 // 4 // 1000} kB; e.g. item "
                f"{plan.items[planned.item_id].source_id} is {size // 1000} kB): assemble shorter chunks or a lower "
                "sample rate, or serve the model yourself (--base-url with --convention openai-input-audio)"
            )
    if too_long:
        item, planned, seconds = too_long[0]
        raise SpokenBenchError(
            f"{len(too_long)} input(s) are longer than {preset.spec}'s limit of {limit:g} s and have no chunks within it "
            f"(e.g. item {item.source_id}, {seconds:.1f} s); audio is never cut silently: run "
            f"`spokenbench assemble DIR --chunk-seconds {int(limit)}` first"
        )
    if rewrites:
        fallbacks = sum(source.texts(planned.item_id)[2] for planned in plan.requests)
        if fallbacks:
            plan.warnings.append(f"{fallbacks} request(s) use original text where no accepted rewrite exists")
    return source


def _file_size(project: Project, sha: str, fmt: str) -> int:
    try:
        return project.audio.path_for(sha, fmt).stat().st_size
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
# Preparing a run


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


def run_claim(run_id: int) -> str:
    """The claim a live job holds on a run while it works on it (core.jobs.registry)."""
    return f"run:{run_id}"


def claimed_run(claim: str | None) -> int | None:
    """The run a job's claim is on (the inverse of `run_claim`), or None for a claim on something else."""
    prefix = run_claim(0)[:-1]
    if not claim or not claim.startswith(prefix) or not claim[len(prefix) :].isdigit():
        return None
    return int(claim[len(prefix) :])


# The ranges of a run's settings: checked here (for the app and scripts) and by the CLI's option types, whose
# help texts show them. A value outside them would make every request fail, or the run meaningless.
MAX_TEMPERATURE = 2.0
MAX_OUTPUT_TOKENS = 1_000_000
MAX_SEED = 2**63 - 1  # stored in SQLite (signed 64-bit)
THINKING_WORDS = ("off", "on", "auto", "minimal", "low", "medium", "high", "xhigh")
MAX_THINKING_BUDGET = 32768


def check_thinking(value: str) -> str:
    """A --thinking value: one of THINKING_WORDS (any case; returned lower-case) or a token budget
    0–MAX_THINKING_BUDGET. Raises ValueError otherwise."""
    text = value.strip().lower()
    if text in THINKING_WORDS:
        return text
    if text.isdigit() and int(text) <= MAX_THINKING_BUDGET:
        return str(int(text))
    raise ValueError(
        f"--thinking must be {', '.join(THINKING_WORDS)} or a token budget 0 to {MAX_THINKING_BUDGET}, not {value!r}"
    )


def _check_thinking_for(preset: ModelPreset, thinking: str | None) -> None:
    """Thinking as the model takes it: Gemini 2.5 a token budget (or off/on/auto), Gemini 3 a level."""
    if thinking is None or preset.thinking not in ("budget", "level"):
        return
    value = check_thinking(thinking)
    if preset.thinking == "budget" and not (value.isdigit() or value in ("off", "on", "auto")):
        raise SpokenBenchError(f"--thinking for {preset.spec}: off, on, auto or a token budget, not '{thinking}'")
    if preset.thinking == "level" and value.isdigit():
        levels = ", ".join(word for word in THINKING_WORDS if word not in ("on", "off", "auto"))
        raise SpokenBenchError(f"--thinking for {preset.spec}: off, on, auto or a level ({levels}), not '{thinking}'")


def _check_url(option: str, url: str | None) -> None:
    if url is None:
        return
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SpokenBenchError(f"{option} must be an http(s) URL such as http://127.0.0.1:8000/v1, not {url!r}")


def _check_number(option: str, value, low: float, high: float | None = None, *, above: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpokenBenchError(f"{option} must be a finite number, not {value!r}")
    if (value <= low if above else value < low) or (high is not None and value > high):
        bounds = f"more than {low:g}" if above else f"at least {low:g}"
        raise SpokenBenchError(
            f"{option} must be {bounds}" + (f" and at most {high:g}" if high else "") + f", not {value}"
        )


def _check_settings(settings: RunSettings) -> None:
    """Every setting within its range before anything is planned: a run whose every request would fail (a
    malformed URL, a zero timeout, a NaN temperature) is refused here with the option's name."""
    if settings.prompt not in PROMPTS:
        raise SpokenBenchError(f"unknown prompt '{settings.prompt}'; prompts: {', '.join(PROMPTS)}")
    if settings.mode not in MODES:
        raise SpokenBenchError(f"unknown mode '{settings.mode}'; modes: {', '.join(MODES)}")
    if settings.system_variant not in SYSTEM_PROMPT_VARIANTS:
        raise SpokenBenchError(
            f"unknown --system-prompt '{settings.system_variant}'; use {', '.join(SYSTEM_PROMPT_VARIANTS)}"
        )
    for option, value in (("--concurrency", settings.concurrency), ("--retries", settings.retry.max_attempts)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpokenBenchError(f"{option} must be a whole number, not {value!r}")
    _check_number("--concurrency", settings.concurrency, 1, MAX_CONCURRENCY)
    _check_number("--retries", settings.retry.max_attempts, 1, MAX_ATTEMPTS)
    for option, value in (("--rpm", settings.rpm), ("--tpm", settings.tpm), ("--budget", settings.budget_usd)):
        _check_number(option, value, 0, above=True)
    params = settings.params
    _check_number("--temperature", params.temperature, 0, MAX_TEMPERATURE)
    _check_number("--timeout", params.timeout_s, 0, MAX_TIMEOUT_S, above=True)
    if isinstance(params.max_output_tokens, bool) or not isinstance(params.max_output_tokens, int):
        raise SpokenBenchError(f"--max-output-tokens must be a whole number, not {params.max_output_tokens!r}")
    _check_number("--max-output-tokens", params.max_output_tokens, 1, MAX_OUTPUT_TOKENS)
    if params.thinking is not None:
        try:
            check_thinking(str(params.thinking))
        except ValueError as error:
            raise SpokenBenchError(str(error)) from None
    if settings.price is not None:
        for option, name in (
            ("--price-input", "input"),
            ("--price-output", "output"),
            ("--price-audio-input", "audio_input"),
            ("price per audio minute", "audio_per_minute"),
        ):
            _check_number(option, getattr(settings.price, name), 0)
    _check_url("--base-url", settings.base_url)
    _check_url("--asr-base-url", settings.asr_base_url)
    plan = settings.plan
    if plan.limit is not None:
        _check_number("--limit", plan.limit, 1)
    _check_number("--seed", plan.seed, 0, MAX_SEED)


def _check_local_mode(preset: ModelPreset, settings: RunSettings) -> None:
    """A local llama.cpp model reads text only: text mode, or pipeline mode with a transcriber (local Whisper)."""
    if preset.convention == "local-whisper":
        raise SpokenBenchError(f"--model {preset.spec} is a Whisper model; give it as --asr in pipeline mode")
    if preset.convention != "local-llama":
        return
    if settings.mode not in ("text", "pipeline"):
        raise SpokenBenchError(
            f"--model {preset.spec} reads text only: use --mode text, or --mode pipeline --asr local:tiny.en"
        )
    if settings.mode == "pipeline" and (not settings.asr or settings.asr == "self"):
        raise SpokenBenchError(
            f"--model {preset.spec} cannot transcribe: give the pipeline a transcriber, e.g. --asr local:tiny.en"
        )


def prepare_evaluation(project: Project, settings: RunSettings) -> EvaluationPreparation:
    """Check, plan and cost one evaluation (see the module docstring). Raises SpokenBenchError for anything
    that would make the run fail before its first answer (bad settings, retired model, missing audio, inputs
    over the model's limits, a budget without a price, a run to resume made with other settings)."""
    with automatic_collection_paused():  # a plan is 100,000s of acyclic objects
        return _prepare_evaluation(project, settings)


def _prepare_evaluation(project: Project, settings: RunSettings) -> EvaluationPreparation:
    _check_settings(settings)
    preset = resolve_model(settings.model, settings.base_url, settings.convention)
    _check_thinking_for(preset, settings.params.thinking)
    simulated = preset.provider == "simulated"
    profile = None
    if simulated:
        from spokenbench.core.evaluation.simulated import load_profile

        profile = load_profile(preset.model, settings.listener_profile_file)
    settings = replace(settings, plan=replace(settings.plan, mode=settings.mode, simulated=simulated))
    _check_local_mode(preset, settings)
    asr_preset = None
    if settings.mode == "pipeline" and not simulated and settings.asr and settings.asr != "self":
        asr_provider = settings.asr.partition(":")[0].strip().lower()
        same_host = settings.asr_base_url or (settings.base_url if asr_provider == preset.provider else None)
        asr_preset = resolve_model(settings.asr, same_host)
    price = settings.price or preset.price
    if settings.budget_usd is not None and price is None and not simulated:
        raise SpokenBenchError(
            f"--budget needs a price for {preset.spec}; none is in resources/models.json, so give "
            "--price-input/--price-output (USD per 1M tokens)"
        )
    plan = build_plan(project.conn, settings.plan)
    source = read_job_source(project, plan, preset)
    identity = run_identity(settings, preset, asr_preset, profile)
    if simulated:
        identity["simulates_mode"] = settings.mode
    model_name = f"simulated:{preset.model}" if simulated else preset.spec
    run_mode = "simulated" if simulated else settings.mode
    resume_row = _run_to_resume(project, settings, identity, model_name, run_mode)
    stored = store.done_keys(project.conn, resume_row["id"]) if resume_row is not None else set()
    requests = plan.requests
    if stored:
        remaining = [n for n, r in enumerate(requests) if (r.item_id, r.condition_key) not in stored]  # Job.key
    else:
        remaining = range(len(requests))
    prepared = EvaluationPreparation(
        settings=settings,
        preset=preset,
        asr_preset=asr_preset,
        profile=profile,
        plan=plan,
        job_source=source,
        identity=identity,
        model_name=model_name,
        run_mode=run_mode,
        prompt_text=store.canonical_json(template_fingerprint(settings.prompt)),
        price=price,
        resume_run_id=resume_row["id"] if resume_row is not None else None,
        already_stored=len(requests) - len(remaining),
        already_cached=0,
        shared=0,
        requests_to_send=len(remaining),
        estimated_cost_usd=0.0 if simulated else None,
        estimated_input_cost_usd=0.0 if simulated else None,
        warnings=[],
        spent_usd=(resume_row["cost_usd"] or 0.0) if resume_row is not None else 0.0,
    )
    if not simulated:
        _count_reuse_and_cost(project, prepared, remaining)
    prepared.warnings = _warnings(prepared, plan)
    for job in list_jobs(project.conn, include_finished=False):
        if prepared.resume_run_id is not None and job.claim == run_claim(prepared.resume_run_id):
            prepared.warnings.append(
                f"run {prepared.resume_run_id} is being worked on by job {job.id} (pid {job.pid} on {job.host}); "
                "running it here is refused until that job ends (or waits for it with --wait)"
            )
        elif job.kind == "evaluate" and job.label.startswith(f"{model_name} ") and not simulated:
            prepared.warnings.append(
                f"job {job.id} (pid {job.pid} on {job.host}) is evaluating {model_name} now: requests it is sending "
                "are waited for and its answers reused here, not sent twice"
            )
    return prepared


def _run_to_resume(project: Project, settings: RunSettings, identity: dict, model_name: str, run_mode: str):
    if settings.run_id is not None:
        row = store.run_row(project.conn, settings.run_id)
        if row is None:
            raise SpokenBenchError(f"no run {settings.run_id} in this project (see `spokenbench runs DIR`)")
        if row["parameters_json"] != store.canonical_json(identity) or row["model"] != model_name:
            raise SpokenBenchError(
                f"run {settings.run_id} was made with other settings; resume it with the same "
                "--model, --mode, --prompt and plan options, or start a new run"
            )
        return row
    if settings.resume:
        return store.find_resumable_run(project.conn, model_name, run_mode, settings.prompt, identity)
    return None


def _count_reuse_and_cost(project: Project, prepared: EvaluationPreparation, remaining: Sequence[int]) -> None:
    """Which remaining requests (plan positions) the response cache or an identical request answers, how many
    calls remain, and what they cost at most. Cache keys come from adapters without a client: no credential is
    read."""
    settings = prepared.settings
    answerer = ModelAdapter(prepared.preset, settings.params)
    transcriber = ModelAdapter(prepared.asr_preset, asr_params(settings.params)) if prepared.asr_preset else answerer
    max_output = settings.params.max_output_tokens
    asr_price = prepared.asr_preset.price if prepared.asr_preset else prepared.price
    ceiling = floor = 0.0
    cached = shared = calls = 0
    seen: set[str] = set()  # requests of this run already counted as sent

    def send(adapter: ModelAdapter, request: ModelRequest, key: str | None, price: Price | None) -> None:
        nonlocal ceiling, floor, calls
        if key is not None:
            seen.add(key)
        calls += 1
        ceiling += worst_case_cost(price, adapter, request, max_output)
        floor += input_cost(price, adapter, request)

    if settings.mode == "pipeline":
        builder = RequestBuilder(settings, prepared.preset, prepared.asr_preset)
        jobs = [prepared.jobs[n] for n in remaining]
        transcriptions = [builder.transcription(job) for job in jobs]
        asr_keys = [transcriber.request_key(request) for request in transcriptions]
        hits = store.cached_replies(project.conn, sorted(set(asr_keys)))
        answers = []
        for job, request, key in zip(jobs, transcriptions, asr_keys):
            heard = hits.get(key)
            if heard is None:
                if key not in seen:
                    send(transcriber, request, key, asr_price)
                answers.append((job, builder.answer(job), None))  # the answer depends on a transcript not yet made
            else:
                answer = builder.answer(job, heard.raw_text)
                answers.append((job, answer, answerer.request_key(answer)))
        known = store.cached_replies(project.conn, sorted({key for _job, _request, key in answers if key}))
        for _job, request, key in answers:
            if key is not None and key in known:
                cached += 1
            elif key is not None and key in seen:
                shared += 1
            else:
                send(answerer, request, key, prepared.price)
        cache_keys = sorted(set(asr_keys) | {key for _job, _request, key in answers if key})
    else:  # keyed without a request object per planned request; counted in plan order as they would be sent
        price = prepared.price
        keys, estimates = _answer_keys(prepared, answerer, remaining, price is not None)
        cache_keys = sorted(set(keys))
        known = store.cached_keys(project.conn, cache_keys)
        for n, key in enumerate(keys):
            if key in known:
                cached += 1
            elif key in seen:
                shared += 1
            else:
                seen.add(key)
                calls += 1
                if price is not None:
                    estimate, seconds = estimates[n]
                    ceiling += worst_case_cost_of(price, estimate, max_output, seconds)
                    floor += input_cost_of(price, estimate, seconds)
        request_keys: list[str | None] = [None] * len(prepared.plan.requests)
        for n, key in zip(remaining, keys):
            request_keys[n] = key
        prepared.request_keys = request_keys
    prepared.already_cached, prepared.shared, prepared.requests_to_send = cached, shared, calls
    prepared.cache_keys = tuple(cache_keys)
    if prepared.price is not None and asr_price is not None:
        prepared.estimated_cost_usd, prepared.estimated_input_cost_usd = ceiling, floor


_UNSEEN = object()


def _answer_keys(
    prepared: EvaluationPreparation, answerer: ModelAdapter, remaining: Sequence[int], estimate: bool
) -> tuple[list[str], list[tuple[tuple[int, int], float]]]:
    """The response-cache key of each remaining request's answer, the key ModelAdapter.request_key gives
    RequestBuilder.answer's request, and with `estimate` its token estimate and seconds of audio; made without
    a Job or a request object per planned request. A presentation's texts and their JSON are made once when
    no question goes into them (audio mode), so each request costs a string and a sha256."""
    settings, source = prepared.settings, prepared.job_source
    requests, items = prepared.plan.requests, prepared.plan.items
    prompt, mode, variant = settings.prompt, settings.mode, settings.system_variant
    heard = mode in ("audio", "audio+text-options")  # RequestBuilder.answer: the audio the answer request carries
    presentations: dict[tuple, tuple[str, str, tuple[str | None, str]] | None] = {}
    audio_of, sha256 = source.audio_of, hashlib.sha256
    keys: list[str] = []
    estimates: list[tuple[tuple[int, int], float]] = []
    for n in remaining:
        planned = requests[n]
        language = items[planned.item_id].language
        presentation = (planned.option_order, planned.label_sequence, planned.condition.spoken_labels, language)
        shared = presentations.get(presentation, _UNSEEN)
        if shared is _UNSEEN:
            texts = presentation_texts(prompt, mode, *presentation, variant)
            shared = presentations[presentation] = (
                None
                if texts is None
                else (*answerer.key_parts(fingerprint_texts_json("chat", language, *texts)), texts)
            )
        if shared is None:  # the question goes into the texts: rendered for this request
            question, option_texts, _ = source.texts(planned.item_id)
            texts = render_texts(prompt, mode, question, option_texts, *presentation[:3], language, variant)
            head, tail = answerer.key_parts(fingerprint_texts_json("chat", language, *texts))
        else:
            head, tail, texts = shared
        audio = audio_of(planned.input_id) if heard else ()
        keys.append(sha256(f"{head}{fingerprint_audio_json(audio)}{tail}".encode()).hexdigest())
        if estimate:
            seconds = sum(entry[2] for entry in audio)
            estimates.append((answerer.estimate_tokens_of(*texts, seconds), seconds))
    return keys, estimates


def _warnings(prepared: EvaluationPreparation, plan: EvaluationPlan) -> list[str]:
    """What the user should know before paying: plan fallbacks, model retirement, unknown or old prices, a
    budget the run may not fit in."""
    warnings = list(plan.warnings)
    today = _dt.date.today()
    for preset in filter(None, (prepared.preset, prepared.asr_preset)):
        if not preset.retired:
            continue
        successor = f" (successor: {preset.successor})" if preset.successor else ""
        if preset.retired_on(today):
            warnings.append(
                f"{preset.spec} was retired by its provider on {preset.retired}{successor}; it is used here only "
                "because --base-url points at a server of your own"
            )
        elif _dt.date.fromisoformat(preset.retired) <= today + _dt.timedelta(days=183):
            warnings.append(f"{preset.spec} is announced to retire on {preset.retired}{successor}")
    if prepared.simulated:
        return warnings
    if prepared.price is None:
        warnings.append(
            f"no price is known for {prepared.preset.spec}: cost is not estimated (give --price-input/--price-output)"
        )
    elif prepared.settings.budget_usd is not None:
        if prepared.price.checked:
            warnings.append(
                f"the price of {prepared.preset.spec} was noted by hand in {prepared.price.checked}: check it "
                "before trusting the budget"
            )
        left = prepared.settings.budget_usd - prepared.spent_usd
        if prepared.estimated_cost_usd is not None and prepared.estimated_cost_usd > left:
            warnings.append(
                f"the worst case (${prepared.estimated_cost_usd:.4f}) is above what is left of the budget "
                f"(${max(left, 0.0):.4f}): the run may stop early (exit code 3); resume with a larger --budget"
            )
    if prepared.asr_preset is not None and prepared.asr_preset.price is None and prepared.price is not None:
        warnings.append(f"no price is known for {prepared.asr_preset.spec}: cost is not estimated")
    return warnings
