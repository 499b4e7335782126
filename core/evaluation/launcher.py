"""What the app's Evaluate page needs from core, without Qt: the choices its form offers (model presets with
their retirement dates, the simulated listeners, modes, prompts, the condition levels a project has), the
form's values turned into a checked `RunSettings`, the prepared plan as text, the settings that resume a
stored run, the runs with their errors grouped by kind, and a connection test for a self-hosted
OpenAI-compatible server (GET /models). Nothing here sends a model request or reads a stored credential."""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import shlex
import sqlite3
import urllib.error
import urllib.request
from dataclasses import dataclass, replace

from spokenbench.core.domain.conditions import Condition, order_strings
from spokenbench.core.domain.languages import normalize_language
from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import GenerationParams
from spokenbench.core.evaluation.plans import (
    AUDIO_MODES,
    FACTOR_FILTERS,
    PERMUTATION_STRATEGIES,
    SIMULATED_VOICES,
    PlanOptions,
    _select_items,
    simulated_accents,
    wanted_orders,
)
from spokenbench.core.evaluation.preparation import EvaluationPreparation, RunSettings
from spokenbench.core.evaluation.presets import all_presets, resolve_model
from spokenbench.core.evaluation.prompts import MODES, PROMPTS, load_template, prompt_output_tokens
from spokenbench.core.evaluation.runner import list_runs
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.jobs.loop import offers_stop_now
from spokenbench.core.jobs.registry import PAUSED_FOR_ROOM
from spokenbench.core.jobs.remote import DEFAULT_CONCURRENCY
from spokenbench.core.store.items import item_languages

MODE_LABELS = {
    "audio": "Audio (end to end)",
    "pipeline": "Pipeline (transcribe, then answer)",
    "text": "Text only",
    "audio+text-options": "Audio question + written options",
}
PROMPT_LABELS = {
    "standard": "Standard",
    "cot": "Chain of thought (CoT)",
    "neutral": "Neutral option",
    "open": "Open-ended",
    "gender-paper": "Gender paper: binary (verbatim)",
    "gender-paper-neutral": "Gender paper: with 'Cannot be determined' (verbatim)",
    "gender-paper-open": "Gender paper: free form, no options (verbatim)",
    "simple-evals": "Hearing the Order: simple-evals, step by step (verbatim)",
}
# Self-hosted OpenAI-compatible servers and the variable a run reads their (optional) key from
# (core.evaluation.adapters._optional_key).
CUSTOM_PROVIDERS = {"vllm": "VLLM_API_KEY", "openai-compatible": "OPENAI_COMPATIBLE_API_KEY"}
CUSTOM = "custom"  # the form's model value for a custom endpoint
SIMULATED_LABEL = "simulated"
CONNECTION_TIMEOUT_S = 10.0


# --------------------------------------------------------------------------------------------------
# The form's choices


@dataclass(frozen=True)
class ModelChoice:
    spec: str  # PROVIDER:NAME as --model takes it
    label: str  # what the form shows
    provider: str
    simulated: bool = False
    retired: str | None = None  # the date it was retired, when that date has passed: not selectable
    retires: str | None = None  # an announced future retirement date
    successor: str | None = None
    tooltip: str = ""

    @property
    def available(self) -> bool:
        return self.retired is None


def model_choices(today: _dt.date | None = None) -> list[ModelChoice]:
    """The simulated listeners first (labelled simulated), then every preset of resources/models.json; a preset
    past its retirement date is marked 'retired on DATE' and is not available."""
    from spokenbench.core.evaluation.simulated import BUILTIN_PROFILES

    today = today or _dt.date.today()
    choices = [
        ModelChoice(
            spec=f"simulated:{name}",
            label=f"Simulated listener: {name} (simulated, offline, no model is asked)",
            provider="simulated",
            simulated=True,
            tooltip="Answers offline from the condition's metadata; the run is labelled 'simulated' everywhere.",
        )
        for name in BUILTIN_PROFILES
    ]
    choices += local_model_choices()
    for preset in all_presets():
        spec = f"{preset.provider}:{preset.id or preset.model}"
        retired = preset.retired_on(today)
        retires = preset.retired if preset.retired and not retired else None
        price = "no price in models.json" if preset.price is None else f"price noted {preset.price.checked or '?'}"
        label = f"{spec}"
        if retired:
            label += f" — retired on {retired}"
        elif retires:
            label += f" — retires on {retires}"
        successor = f"; successor: {preset.successor}" if preset.successor else ""
        tooltip = f"{preset.convention}; {price}{successor}" + (f"\n{preset.notes}" if preset.notes else "")
        choices.append(
            ModelChoice(spec, label, preset.provider, False, retired, retires, preset.successor, tooltip.strip())
        )
    return choices


LOCAL_ASR = "local:tiny.en"  # the pipeline's transcriber for a local model chosen on the form


def local_model_choices() -> list[ModelChoice]:
    """The bundled local model, offered only when the `local-llm` extra and its model package are installed."""
    from spokenbench.core.evaluation.local_llm import local_available

    if not local_available():
        return []
    return [
        ModelChoice(
            spec="local:smollm2-135m",
            label="local:smollm2-135m — SmolLM2-135M on this machine (llama.cpp, offline, free)",
            provider="local",
            tooltip="A real 135M-parameter text model: text or pipeline mode (transcribed by local Whisper tiny.en). "
            "Near chance on knowledge; it shows selection bias.",
        )
    ]


@dataclass(frozen=True)
class PromptChoice:
    name: str
    label: str
    description: str


def prompt_choices() -> list[PromptChoice]:
    """The prompt sets of resources/prompts (the pipeline's 'transcribe' step is not one to choose)."""
    return [PromptChoice(name, PROMPT_LABELS.get(name, name), load_template(name).description) for name in PROMPTS]


def mode_choices() -> list[tuple[str, str]]:
    return [(mode, MODE_LABELS.get(mode, mode)) for mode in MODES]


def condition_levels(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """Per factor, the levels this project can be evaluated under: item languages, and what was assembled
    (accents, voices, genders, orders, speeds, volumes, noise, voice sources). Without assembled audio, the
    simulated listener's grid (BiasInEar's accents and one voice per gender)."""
    levels: dict[str, set[str]] = {"language": set(item_languages(conn))}
    rows = store.assembled_input_rows(conn)
    for condition_key in {row["condition_key"] for row in rows}:  # each condition's factors read once
        for factor, value in Condition.from_key(condition_key).factors().items():
            if factor in FACTOR_FILTERS or factor == "order":
                levels.setdefault(factor, set()).add(_level(value))
    if not rows:
        levels["accent"] = {accent for language in levels["language"] for accent in simulated_accents(language)}
        levels["voice"] = set(SIMULATED_VOICES.values())
        levels["gender"] = set(SIMULATED_VOICES)
        levels["order"] = {"original"}
        levels.update({factor: {_level(value)} for factor, value in UNPERTURBED.items()})
    return {factor: sorted(values, key=_level_order) for factor, values in levels.items() if values}


def _level(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _level_order(level: str) -> tuple:
    """Numbers in numeric order ('clean' first, as no noise), names alphabetically."""
    try:
        return (1, float(level), "")
    except ValueError:
        return (0, 0.0, level)


# --------------------------------------------------------------------------------------------------
# Perturbations and orders the project has not assembled

# The form's perturbation factors: (what a message calls it, the `spokenbench assemble` option that makes it).
PERTURBATIONS = {"speed": ("speed", "--speed"), "volume": ("volume", "--volume"), "snr_db": ("noise (SNR dB)", "--snr")}
UNPERTURBED = {"speed": 1.0, "volume": 1.0, "snr_db": "clean"}  # what an unassembled condition has


def _same_level(value: str, levels) -> bool:
    if value in levels:
        return True
    try:
        return any(float(value) == float(level) for level in levels if level != "clean")
    except ValueError:
        return False


def unassembled_selection(conn: sqlite3.Connection, settings: RunSettings, project_dir: str = "DIR") -> str | None:
    """Why the form's speeds, volumes, noise levels, orders or permutation strategy cannot be planned here, naming
    the levels that are missing, what the project has, and the `spokenbench assemble` command that makes them;
    None when nothing asked for is missing (what the plan itself checks — a missing item or presentation — it
    explains). Audio and pipeline runs of a real model hear assembled inputs; every other run has its conditions
    unperturbed (speed 1, volume 1, clean) and builds its orders itself."""
    plan = settings.plan
    if not (plan.orders or plan.permutations or any(plan.filters.get(factor) for factor in PERTURBATIONS)):
        return None  # nothing asked for that could be missing
    simulated = settings.model.startswith("simulated:")
    assembled = plan.mode in AUDIO_MODES and not simulated
    rows = store.assembled_input_rows(conn) if assembled else []
    if assembled and not rows:
        return None  # the plan says that nothing is assembled, and what to run
    problems: list[str] = []
    strategy_missing: list[str] = []  # the strategy's permutations not assembled
    if assembled:
        conditions = [Condition.from_key(key) for key in {row["condition_key"] for row in rows}]
        have = {factor: {_level(c.factors()[factor]) for c in conditions} for factor in PERTURBATIONS}
        presentations = _presentations(rows)
        strategy_missing = [order for order in _strategy_orders(conn, plan) if not _is_assembled(order, presentations)]
    else:
        have = {factor: {_level(value)} for factor, value in UNPERTURBED.items()}
    wanted_perturbations = {factor: plan.filters.get(factor, ()) for factor in PERTURBATIONS}
    for factor, wanted in wanted_perturbations.items():
        missing = [value for value in wanted if not _same_level(value, have[factor])]
        if not missing:
            continue
        field_name, option = PERTURBATIONS[factor]
        shown = ", ".join(sorted(have[factor], key=_level_order))
        if assembled:
            problems.append(f"{field_name} {', '.join(missing)} is not assembled in this project (assembled: {shown})")
        else:
            why = "the simulated listener" if simulated else f"a {plan.mode} run"
            problems.append(
                f"{field_name} {', '.join(missing)} is not available to {why}, which hears no perturbed audio "
                f"(only {shown}): perturbations need an audio or pipeline run of a real model on assembled inputs"
            )
    if assembled:
        problems += _unassembled_orders(plan, presentations, sorted({c.order for c in conditions}), strategy_missing)
    if not problems:
        return None
    command = AssemblyRequest.for_plan(plan, strategy_missing).command(project_dir)
    text = "; ".join(problems)
    return f"{text}: run `{command}` first" + ("" if assembled else " (with an audio-mode model)")


@dataclass(frozen=True)
class AssemblyRequest:
    """What `spokenbench assemble` builds for a run: its orders and perturbation levels (as the form has them;
    empty: the command's defaults, original / 1 / 1 / clean) for its languages, accents and voices. The message
    of an unassembled selection shows it as a command; the Evaluate page runs it (`assemble_for_run`)."""

    orders: tuple[str, ...] = ()
    speeds: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()
    snrs: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    accents: tuple[str, ...] = ()
    voices: tuple[str, ...] = ()

    @classmethod
    def for_plan(cls, plan: PlanOptions, strategy_orders: list[str]) -> AssemblyRequest:
        """The form's orders whole (they go with new perturbations too) and the strategy's permutations."""
        filters = plan.filters
        return cls(
            orders=tuple(dict.fromkeys([*(plan.orders or ()), *strategy_orders])),
            speeds=tuple(filters.get("speed", ())),
            volumes=tuple(filters.get("volume", ())),
            snrs=tuple(filters.get("snr_db", ())),
            languages=tuple(filters.get("language", ())),
            accents=tuple(filters.get("accent", ())),
            voices=tuple(filters.get("voice", ())),
        )

    def command(self, project_dir: str) -> str:
        command = [f"spokenbench assemble {shlex.quote(project_dir)}"]
        if self.orders:
            command.append("--orders " + ",".join(self.orders))
        for values, option in ((self.speeds, "--speed"), (self.volumes, "--volume"), (self.snrs, "--snr")):
            if values:
                command.append(f"{option} {','.join(values)}")
        for values, option in ((self.languages, "--languages"), (self.accents, "--accents"), (self.voices, "--voices")):
            if values:
                command.append(f"{option} {','.join(values)}")
        return " ".join(command)

    def describe(self) -> str:
        """'orders original, reversed · volume 1.5' for the plan text."""
        parts = [f"orders {', '.join(self.orders) or 'original'}"]
        for values, name in ((self.speeds, "speed"), (self.volumes, "volume"), (self.snrs, "noise (SNR dB)")):
            if values:
                parts.append(f"{name} {', '.join(values)}")
        return " · ".join(parts)


@dataclass(frozen=True)
class RunAssembly:
    """An audio-mode run's inputs not assembled yet: `count` to build (`missing`: those a missing clip keeps
    from being built, as `assemble` reports them)."""

    request: AssemblyRequest
    count: int
    already_done: int
    missing: tuple[str, ...]


def run_assembly_needed(conn: sqlite3.Connection, settings: RunSettings) -> RunAssembly | None:
    """What an audio or pipeline run of a real model needs assembled before it can be planned, for the items it
    asks about: nothing assembled for them yet, or orders and perturbations asked for that are not. None when
    the run hears no assembled audio or has all it asks for (the plan then says what else is missing)."""
    plan = settings.plan
    if plan.mode not in AUDIO_MODES or settings.model.startswith("simulated:"):
        return None
    items = _select_items(conn, replace(plan, orders=None))
    assembled_items = {row["item_id"] for row in store.assembled_input_rows(conn)}
    if assembled_items.isdisjoint(items):  # nothing to hear yet: the run's whole grid
        request = AssemblyRequest.for_plan(plan, _strategy_orders(conn, plan))
    elif unassembled_selection(conn, settings) is not None:  # some orders or perturbations are missing
        rows = store.assembled_input_rows(conn)
        presentations = _presentations(rows)
        missing_orders = [order for order in _strategy_orders(conn, plan) if not _is_assembled(order, presentations)]
        request = AssemblyRequest.for_plan(plan, missing_orders)
    else:
        return None
    plans = _assembly_plans(conn, settings, request, items)
    count = sum(len(p.jobs) for p in plans)
    if not count:
        return None
    missing = tuple(dict.fromkeys(m for p in plans for m in p.missing))
    return RunAssembly(request, count, sum(p.already_done for p in plans), missing)


def _assembly_plans(conn, settings: RunSettings, request: AssemblyRequest, items: dict) -> list:
    """`plan_assembly` for the request over the run's items (per option count: an explicit permutation fits
    the items with as many options; per identifier setting the run asks for), keeping only the inputs the run
    would hear (its accents, voices, genders and levels) and the missing clips of its items."""
    from spokenbench.core.audio.assembly import plan_assembly
    from spokenbench.core.evaluation.plans import _matches

    plan = settings.plan

    def numbers(values: tuple[str, ...]) -> list:
        return [None if value in ("clean", "none") else float(value) for value in values]

    def fits(order: str, count: int) -> bool:
        try:
            order_strings(order, count)
        except SpokenBenchError:
            return False
        return True

    by_count: dict[int, set[int]] = {}
    for item_id, item in items.items():
        by_count.setdefault(len(item.options), set()).add(item_id)
    names = tuple(f"{item.source_id} (" for item in items.values())
    plans = []
    for count, item_ids in sorted(by_count.items()):
        orders = [order for order in request.orders if fits(order, count)] or ([] if request.orders else ["original"])
        if not orders:
            continue
        for spoken_labels in plan.identifiers:
            assembly = plan_assembly(
                conn,
                orders,
                numbers(request.speeds) or [1.0],
                numbers(request.volumes) or [1.0],
                numbers(request.snrs) or [None],
                list(request.languages) or None,
                list(request.voices) or None,
                list(request.accents) or None,
                spoken_labels,
                item_ids=item_ids,
            )
            assembly.jobs = [job for job in assembly.jobs if _matches(job.condition, plan.filters, plan.identifiers)]
            assembly.missing = [m for m in assembly.missing if m.startswith(names)]
            plans.append(assembly)
    return plans


def assemble_for_run(project, settings: RunSettings, *, progress) -> tuple[int, list[str]]:
    """The Evaluate page's job: assemble what `run_assembly_needed` found missing, as `spokenbench assemble`
    would (a job of its own, kind 'assemble'); returns (inputs assembled, the inputs a missing clip skipped)."""
    from spokenbench.core.audio.assembly import run_assembly

    needed = run_assembly_needed(project.conn, settings)
    if needed is None:
        return 0, []
    items = _select_items(project.conn, replace(settings.plan, orders=None))
    assembled, skipped = 0, []
    for assembly in _assembly_plans(project.conn, settings, needed.request, items):
        report = run_assembly(project, assembly, progress=progress)
        assembled += report.assembled
        skipped += report.skipped
    return assembled, skipped


def _presentations(rows) -> dict[int, set[tuple[str, str]]]:
    """Per option count, the (option_order, label_sequence) pairs assembled (how the plan matches orders)."""
    found: dict[int, set[tuple[str, str]]] = {}
    for row in rows:
        found.setdefault(len(row["option_order"]), set()).add((row["option_order"], row["label_sequence"]))
    return found


def _is_assembled(order: str, presentations: dict[int, set[tuple[str, str]]]) -> bool:
    for count, pairs in presentations.items():
        try:
            if order_strings(order, count) in pairs:
                return True
        except SpokenBenchError:  # a permutation of another length
            continue
    return False


def _strategy_orders(conn: sqlite3.Connection, plan: PlanOptions) -> list[str]:
    """The permutations the plan's strategy asks of the selected items (as the plan works them out), in order."""
    if not plan.permutations:
        return []
    strategy_only = replace(plan, orders=None)
    orders: dict[str, None] = {}
    for item in _select_items(conn, strategy_only).values():
        for order in wanted_orders(item, strategy_only):
            orders.setdefault(order, None)
    return list(orders)


def _unassembled_orders(
    plan: PlanOptions, presentations: dict, assembled_orders: list[str], strategy_missing: list[str]
) -> list[str]:
    shown = ", ".join(assembled_orders)
    problems = []
    missing = [order for order in plan.orders or () if not _is_assembled(order, presentations)]
    if missing:
        problems.append(
            f"order{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"{'are' if len(missing) > 1 else 'is'} not assembled in this project (assembled orders: {shown})"
        )
    if strategy_missing:
        listed = ", ".join(strategy_missing[:6]) + (
            f" … {len(strategy_missing) - 6} more" if len(strategy_missing) > 6 else ""
        )
        problems.append(
            f"the {plan.permutations} permutations {listed} are not assembled in this project (assembled orders: "
            f"{shown})"
        )
    return problems


def check_selection(conn: sqlite3.Connection, settings: RunSettings, project_dir: str = "DIR") -> None:
    """Raise SpokenBenchError naming what the form asks for and the project has not assembled (before preparing,
    so the message says more than an empty plan would)."""
    problem = unassembled_selection(conn, settings, project_dir)
    if problem:
        raise SpokenBenchError(problem)


# --------------------------------------------------------------------------------------------------
# From the form to RunSettings


@dataclass
class LaunchForm:
    """The form's values as the user left them (text fields as typed)."""

    model: str  # a ModelChoice spec, or CUSTOM
    mode: str = "audio"
    prompt: str = "standard"
    custom_provider: str = "vllm"
    custom_base_url: str = ""
    custom_model: str = ""
    custom_key_variable: str = ""
    languages: str = ""
    accents: str = ""
    voices: str = ""
    genders: str = ""
    orders: str = ""
    permutations: str = ""  # '' or one of PERMUTATION_STRATEGIES
    identifiers: str = "yes"  # yes, no, both
    speeds: str = ""
    volumes: str = ""
    snr: str = ""
    limit: str = ""
    seed: str = "0"
    budget: str = ""
    concurrency: int = DEFAULT_CONCURRENCY
    name: str = ""


def split_list(text: str) -> tuple[str, ...]:
    """'en, zh  ko' → ('en', 'zh', 'ko')."""
    return tuple(part for part in re.split(r"[,\s]+", text.strip()) if part)


def _numbers(field: str, text: str, *, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    values = split_list(text)
    for value in values:
        if value in extra:
            continue
        try:
            number = float(value)
        except ValueError:
            raise SpokenBenchError(f"{field}: '{value}' is not a number") from None
        if not math.isfinite(number) or (field != "noise (SNR dB)" and number <= 0):
            raise SpokenBenchError(f"{field}: {value} must be a number more than 0")
    return values


def _whole(field: str, text: str, low: int) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not re.fullmatch(r"\d+", text) or int(text) < low:
        raise SpokenBenchError(f"{field} must be a whole number, {low} or more, not '{text}'")
    return int(text)


def custom_key_variable(provider: str) -> str:
    return CUSTOM_PROVIDERS[provider]


def settings_from_form(form: LaunchForm) -> RunSettings:
    """The form's values as RunSettings (prepare_evaluation checks the rest: ranges, presets, the plan).
    Raises SpokenBenchError naming the field that is wrong."""
    base_url = None
    if form.model == CUSTOM:
        if form.custom_provider not in CUSTOM_PROVIDERS:
            raise SpokenBenchError(f"custom endpoint: provider must be one of {', '.join(CUSTOM_PROVIDERS)}")
        base_url = form.custom_base_url.strip()
        if not base_url:
            raise SpokenBenchError("custom endpoint: give the server's base URL, such as http://127.0.0.1:8000/v1")
        name = form.custom_model.strip()
        if not name:
            raise SpokenBenchError("custom endpoint: give the model name the server serves (see Test connection)")
        variable = form.custom_key_variable.strip()
        expected = CUSTOM_PROVIDERS[form.custom_provider]
        if variable and variable != expected:
            raise SpokenBenchError(
                f"custom endpoint: a {form.custom_provider} run reads its key from {expected}, not {variable}: "
                f"set {expected} (or leave the key variable empty for a server without a key)"
            )
        model = f"{form.custom_provider}:{name}"
    else:
        model = form.model.strip()
        if not model:
            raise SpokenBenchError("choose a model")
    try:
        languages = tuple(normalize_language(language) for language in split_list(form.languages))
    except ValueError as error:
        raise SpokenBenchError(f"languages: {error}") from None
    genders = split_list(form.genders)
    for gender in genders:
        if gender not in ("female", "male"):
            raise SpokenBenchError(f"genders: '{gender}' is not female or male")
    filters = {
        "language": languages,
        "accent": split_list(form.accents),
        "voice": split_list(form.voices),
        "gender": genders,
        "speed": _numbers("speeds", form.speeds),
        "volume": _numbers("volumes", form.volumes),
        "snr_db": _numbers("noise (SNR dB)", form.snr, extra=("clean",)),
    }
    if form.permutations and form.permutations not in PERMUTATION_STRATEGIES:
        raise SpokenBenchError(f"permutations: one of {', '.join(PERMUTATION_STRATEGIES)}, not '{form.permutations}'")
    identifiers = {"yes": (True,), "no": (False,), "both": (True, False)}.get(form.identifiers)
    if identifiers is None:
        raise SpokenBenchError(f"identifiers: yes, no or both, not '{form.identifiers}'")
    budget = form.budget.strip().lstrip("$")
    budget_usd = None
    if budget:
        try:
            budget_usd = float(budget)
        except ValueError:
            raise SpokenBenchError(f"budget: '{form.budget}' is not an amount in USD") from None
    plan = PlanOptions(
        mode=form.mode,
        orders=split_list(form.orders) or None,
        permutations=form.permutations or None,
        identifiers=identifiers,
        filters={factor: values for factor, values in filters.items() if values},
        limit=_whole("limit", form.limit, 1),
        seed=_whole("seed", form.seed, 0) or 0,
    )
    return RunSettings(
        model=model,
        mode=form.mode,
        prompt=form.prompt,
        asr=LOCAL_ASR if model.startswith("local:") and form.mode == "pipeline" else None,
        plan=plan,
        params=GenerationParams(max_output_tokens=prompt_output_tokens(form.prompt)),
        base_url=base_url,
        budget_usd=budget_usd,
        concurrency=int(form.concurrency),
        name=form.name.strip() or None,
    )


def describe_settings(settings: RunSettings) -> str:
    """One line for the queue: model, mode, prompt, the grid's restrictions, budget."""
    parts = [settings.model, settings.mode, settings.prompt]
    plan = settings.plan
    parts += [f"{factor}={','.join(values)}" for factor, values in sorted(plan.filters.items())]
    if plan.orders:
        parts.append("orders=" + ",".join(plan.orders))
    if plan.permutations:
        parts.append(f"permutations={plan.permutations}")
    if plan.limit:
        parts.append(f"limit={plan.limit}")
    if settings.budget_usd is not None:
        parts.append(f"budget=${settings.budget_usd:g}")
    if settings.run_id is not None:
        parts.append(f"resume run {settings.run_id}")
    if settings.name:
        parts.insert(0, f"“{settings.name}”")
    return " · ".join(parts)


def plan_lines(prepared: EvaluationPreparation) -> list[str]:
    """The prepared plan as the page shows it before Start: requests, what is stored or cached, the cost, the
    warnings. A simulated run says so."""
    summary = prepared.conditions
    lines = [f"plan: {prepared.request_count} request(s) over {summary.get('items', '?')} item(s)"]
    for factor, counts in sorted((summary.get("by_factor") or {}).items()):
        if len(counts) > 1 or factor in ("language", "order"):
            lines.append(f"  {factor}: " + ", ".join(f"{level} {count}" for level, count in counts.items()))
    model = prepared.model_name + (" (simulated: no model is asked, no cost)" if prepared.simulated else "")
    lines.append(f"model: {model}; mode {prepared.settings.mode}; prompt {prepared.settings.prompt}")
    if prepared.resume_run_id is not None:
        lines.append(f"run: resumes run {prepared.resume_run_id} ({prepared.already_stored} already answered)")
    else:
        lines.append("run: a new run")
    lines.append(
        f"requests: {prepared.request_count}; already stored {prepared.already_stored}; cached "
        f"{prepared.already_cached}; shared {prepared.shared}; to send {prepared.requests_to_send}"
    )
    lines.append(f"estimated cost: {cost_text(prepared)}")
    for warning in prepared.warnings:
        lines.append(f"warning: {warning}")
    return lines


def cost_text(prepared: EvaluationPreparation) -> str:
    if prepared.simulated:
        return "$0 (simulated)"
    if prepared.estimated_cost_usd is None:
        return "unknown (no price for this model)"
    text = f"at most ${prepared.estimated_cost_usd:.4f}"
    if prepared.estimated_input_cost_usd is not None:
        text += f" (input alone about ${prepared.estimated_input_cost_usd:.4f})"
    if prepared.settings.budget_usd is not None:
        text += f"; budget ${prepared.settings.budget_usd:g}"
    return text


# --------------------------------------------------------------------------------------------------
# Resuming a stored run


def settings_for_run(conn: sqlite3.Connection, run_id: int) -> RunSettings:
    """Settings that continue run `run_id` (its stored identity: model, endpoint, generation, plan), so a run
    started anywhere — the CLI, another window — resumes as the same run and skips what it answered.
    Raises SpokenBenchError when the stored identity cannot be turned back into settings (a redacted URL,
    a listener profile from a file)."""
    row = store.run_row(conn, run_id)
    if row is None:
        raise SpokenBenchError(f"no run {run_id} in this project")
    identity = json.loads(row["parameters_json"] or "{}")
    model = identity.get("model") or {}
    provider, name = model.get("provider"), model.get("model")
    if not provider or not name:
        raise SpokenBenchError(f"run {run_id} has no stored model identity; resume it from the command line")
    endpoint = model.get("endpoint")
    if endpoint and "[redacted]" in endpoint:
        raise SpokenBenchError(
            f"run {run_id}'s endpoint was stored with a redacted secret; resume it from the command line with "
            "the real --base-url"
        )
    spec = f"{provider}:{name}"
    base_url = None
    if provider == "simulated":
        from spokenbench.core.evaluation.simulated import BUILTIN_PROFILES

        profile = identity.get("listener_profile")
        builtin = BUILTIN_PROFILES.get(name)
        if builtin is None or (profile is not None and profile != builtin.to_dict()):
            raise SpokenBenchError(
                f"run {run_id} used a listener profile from a file; resume it from the command line with "
                "its --listener-profile"
            )
    elif endpoint and (provider in CUSTOM_PROVIDERS or endpoint != _default_endpoint(spec)):
        base_url = endpoint
    plan = PlanOptions.from_dict(identity.get("plan") or {"mode": row["mode"]})
    mode = identity.get("simulates_mode") or plan.mode
    generation = identity.get("generation") or {}
    params = GenerationParams(
        temperature=generation.get("temperature", 0.0),
        max_output_tokens=generation.get("max_output_tokens", 4096),
        thinking=generation.get("thinking"),
    )
    asr, asr_base_url = None, None
    stored_asr = identity.get("asr")
    if stored_asr == "self":
        asr = "self"
    elif isinstance(stored_asr, dict):
        asr = f"{stored_asr['provider']}:{stored_asr['model']}"
        asr_base_url = stored_asr.get("endpoint")
    convention = model.get("convention")
    return RunSettings(
        model=spec,
        mode=mode,
        prompt=row["prompt"],
        plan=plan,
        params=params,
        system_variant=identity.get("system_prompt", "separate"),
        base_url=base_url,
        convention=convention if convention and convention != "simulated" else None,
        asr=asr,
        asr_base_url=asr_base_url,
        budget_usd=row["budget_usd"],
        run_id=run_id,
        name=row["name"],
    )


def _default_endpoint(spec: str) -> str | None:
    try:
        return resolve_model(spec).base_url
    except SpokenBenchError:
        return None


def resume_settings(settings: RunSettings, run_id: int) -> RunSettings:
    """The same settings, continuing run `run_id`."""
    return replace(settings, run_id=run_id, resume=False)


# --------------------------------------------------------------------------------------------------
# Runs as the page lists them


def error_kind(message: str) -> str:
    """The kind a stored failure is counted under ('HTTP 429', 'connection failed', 'timed out', ...), as the
    runner's summary groups them."""
    found = re.search(r"\bHTTP (\d{3})\b", message)
    if found:
        return f"HTTP {found.group(1)}"
    for kind in ("connection failed", "timed out", "malformed reply", "not sent"):
        if kind in message.lower():
            return kind
    return message.split(":", 1)[0].split(" (", 1)[0][:60].strip() or "error"


def run_error_kinds(conn: sqlite3.Connection, run_id: int) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for message, count in store.run_error_counts(conn, run_id):
        kind = error_kind(message or "")
        kinds[kind] = kinds.get(kind, 0) + count
    return dict(sorted(kinds.items(), key=lambda entry: -entry[1]))


@dataclass(frozen=True)
class RunRow:
    run_id: int
    name: str
    model: str
    mode: str  # 'simulated' for the simulated listener
    simulates_mode: str | None
    prompt: str
    status: str  # as a person should see it (a killed run is 'interrupted')
    responses: int
    total: int
    errors: int
    error_kinds: dict
    cost_usd: float
    budget_usd: float | None
    created_at: str

    @property
    def simulated(self) -> bool:
        return self.mode == "simulated"

    @property
    def incomplete(self) -> bool:
        """Planned requests without a stored response."""
        return self.responses < self.total

    @property
    def shown_status(self) -> str:
        """The status, except that a 'finished' run missing responses reads 'incomplete'."""
        return "incomplete" if self.status == "finished" and self.incomplete else self.status

    @property
    def resumable(self) -> bool:
        """Stopped before the end, or with requests missing or failed: resuming sends only those."""
        return self.status in ("interrupted", "cancelled", "failed") or (
            self.status == "finished" and (self.errors > 0 or self.incomplete)
        )

    @property
    def mode_label(self) -> str:
        return f"simulated ({self.simulates_mode})" if self.simulated else self.mode


def run_rows(conn: sqlite3.Connection) -> list[RunRow]:
    """Every run, newest first, with its failures by kind (runner.list_runs decides 'interrupted')."""
    rows = []
    for run in reversed(list_runs(conn)):
        rows.append(
            RunRow(
                run_id=run["id"],
                name=run["name"] or "",
                model=run["model"],
                mode=run["mode"],
                simulates_mode=run.get("simulates_mode"),
                prompt=run["prompt"],
                status=run["status"],
                responses=int(run["responses"] or 0),
                total=int(run["total_requests"] or 0),
                errors=run["errors"],
                error_kinds=run_error_kinds(conn, run["id"]) if run["errors"] else {},
                cost_usd=run["cost_usd"] or 0.0,
                budget_usd=run["budget_usd"],
                created_at=run["created_at"] or "",
            )
        )
    return rows


def response_count(conn: sqlite3.Connection, run_id: int) -> int:
    return store.run_response_count(conn, run_id)


def progress_text(
    done: int, total: int | None, message: str | None, errors: dict | None = None, spent: float | None = None
) -> str:
    """'12/48 · 35.2/s ETA 0:01 · errors: 2 HTTP 500 · spent $0.0123' from a job's progress (its message
    carries the rate and time left) and the run's stored failures and cost."""
    parts = [f"{done}/{total if total is not None else '?'}"]
    rate = re.search(r"(\d+(?:\.\d+)?)/s", message or "")
    if rate:
        parts.append(f"{rate.group(1)}/s")
    eta = re.search(r"ETA (\d+:\d\d)", message or "")
    if eta:
        parts.append(f"ETA {eta.group(1)}")
    if errors:
        parts.append("errors: " + ", ".join(f"{count} {kind}" for kind, count in errors.items()))
    if spent is not None:
        parts.append(f"spent ${spent:.4f}")
    if offers_stop_now(message) or (message or "").startswith(PAUSED_FOR_ROOM):  # waits to keep what it paid for
        parts.append(message)
    return " · ".join(parts)


# --------------------------------------------------------------------------------------------------
# Testing a custom endpoint


def endpoint_key(variable: str | None) -> str | None:
    """The key a custom endpoint uses, from the named environment variable (as the run reads it)."""
    value = os.environ.get(variable, "").strip() if variable else ""
    return value or None


def check_connection(base_url: str, model: str | None = None, key: str | None = None) -> str:
    """GET BASE_URL/models with the key (if any); says what the server serves and whether `model` is among
    it. Raises SpokenBenchError with a clear message when the server cannot be reached, rejects the key or
    answers something else. Call it off the UI thread."""
    url = base_url.strip().rstrip("/")
    if not re.match(r"https?://[^/\s]+", url):
        raise SpokenBenchError(
            f"the base URL must be an http(s) URL such as http://127.0.0.1:8000/v1, not {base_url!r}"
        )
    headers = {"Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url + "/models", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=CONNECTION_TIMEOUT_S) as response:
            body = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            hint = "the key was rejected" if key else "the server needs a key and none was set"
            raise SpokenBenchError(f"{url}: {hint} (HTTP {error.code})") from None
        raise SpokenBenchError(
            f"{url}/models answered HTTP {error.code}: is this an OpenAI-compatible /v1 URL?"
        ) from None
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise SpokenBenchError(f"cannot reach {url} ({reason})") from None
    except ValueError:
        raise SpokenBenchError(f"{url}/models did not answer JSON: is this an OpenAI-compatible /v1 URL?") from None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise SpokenBenchError(f"{url}/models answered without a model list: is this an OpenAI-compatible /v1 URL?")
    served = [str(entry.get("id")) for entry in data if isinstance(entry, dict) and entry.get("id")]
    text = f"connected: {len(served)} model(s) served" + (f" ({', '.join(served[:5])})" if served else "")
    if model:
        text += f"; {model} is served" if model in served else f"; {model} is NOT among them"
    return text
