"""Condition plans: which (item, condition) pairs a run asks, counted before anything is sent.

Audio modes ask what was assembled: every assembled presentation (language, accent, voice, speed, ...)
of an item under every wanted option order. Text modes build conditions from the item's own language.
Orders are named orders, explicit permutations, and the permutation strategies of "Hearing the Order"
(gold answer moved to each position, cyclic, full), from core.domain.conditions. Presentations are matched on
(option_order, label_sequence), so an explicit 'DCBA' finds an input assembled as 'reversed'; each
response keeps the assembled input's own condition key."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from operator import attrgetter

from spokenbench.core.audio.store import neutralized_voices
from spokenbench.core.domain.conditions import (
    DEFAULT_ACCENT,
    Condition,
    cyclic_orders,
    full_orders,
    gold_position_orders,
    order_strings,
)
from spokenbench.core.domain.items import LETTERS, Item
from spokenbench.core.evaluation import store
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.store.items import iter_items

PERMUTATION_STRATEGIES = ("cyclic", "full", "gold-position")
AUDIO_MODES = ("audio", "pipeline")
# The BiasInEar design, used by the simulated listener when no audio exists: accents per language and
# one voice per gender (Gemini TTS voices as in the paper).
SIMULATED_ACCENTS = {
    "en": ("american", "british", "indian"),
    "zh": ("beijing", "northeastern"),
    "ko": ("seoul", "jeolla"),
}
SIMULATED_VOICES = {"female": "Zephyr", "male": "Orus"}


def simulated_accents(language: str) -> tuple[str, ...]:
    """The simulated grid's accents for an item language ('en-GB' as 'en'): BiasInEar's for en, zh and ko, one
    DEFAULT_ACCENT for any other, as espeak-ng's voice speaks it."""
    return SIMULATED_ACCENTS.get(language.split("-")[0].lower(), (DEFAULT_ACCENT,))


FACTOR_FILTERS = ("language", "accent", "voice", "gender", "speed", "volume", "snr_db", "voice_source")
# Which voices a run hears (`--voice-kind`): the original male and female voices (default), the gender-neutralized
# ones (clips.neutralization set; the gender paper's Section 5, Table 4), or both. A neutralized clip keeps the
# gender of the voice it was made from, so the default keeps it out of the male-vs-female comparison (J, Δ).
VOICE_KINDS = ("original", "neutralized", "all")
NEUTRALIZED_SOURCE = "neutralized"  # a neutralized clip's condition: voice_source (the metrics' neutralized setting)


@dataclass(frozen=True)
class PlanOptions:
    mode: str = "audio"
    orders: tuple[str, ...] | None = None  # None: audio modes take what is assembled, text modes 'original'
    permutations: str | None = None
    identifiers: tuple[bool, ...] = (True,)
    filters: dict[str, tuple[str, ...]] = field(default_factory=dict)  # factor → allowed levels (as strings)
    kind: str | None = None  # 'mcq' or 'gender-probe'
    limit: int | None = None  # first N items (by id) after filtering
    seed: int = 0
    simulated: bool = False
    text_source: str = "original"  # or 'rewritten'
    # Hearing the Order's data filter (Section 3): questions with exactly this many options, and audio inputs of
    # at most this many seconds (a question whose longest selected input is longer is left out, whole)
    option_count: int | None = None
    max_audio_s: float | None = None
    voices: str = "original"  # VOICE_KINDS

    def as_dict(self) -> dict:
        data = {
            "mode": self.mode,
            "orders": list(self.orders) if self.orders else None,
            "permutations": self.permutations,
            "identifiers": ["yes" if i else "no" for i in self.identifiers],
            "filters": {k: list(v) for k, v in sorted(self.filters.items())},
            "kind": self.kind,
            "limit": self.limit,
            "seed": self.seed,
            "simulated": self.simulated,
            "text_source": self.text_source,
            "option_count": self.option_count,
            "max_audio_s": self.max_audio_s,
        }
        if self.voices != "original":  # left out by default: runs made before the option keep their identity
            data["voices"] = self.voices
        return data

    @classmethod
    def from_dict(cls, data: dict) -> PlanOptions:
        return cls(
            mode=data["mode"],
            orders=tuple(data["orders"]) if data.get("orders") else None,
            permutations=data.get("permutations"),
            identifiers=tuple(v == "yes" for v in data.get("identifiers", ["yes"])),
            filters={k: tuple(v) for k, v in data.get("filters", {}).items()},
            kind=data.get("kind"),
            limit=data.get("limit"),
            seed=data.get("seed", 0),
            simulated=data.get("simulated", False),
            text_source=data.get("text_source", "original"),
            option_count=data.get("option_count"),
            max_audio_s=data.get("max_audio_s"),
            voices=data.get("voices", "original"),
        )


@dataclass(frozen=True, slots=True)  # slots: a large plan holds 100,000s of them
class PlannedRequest:
    item_id: int
    condition: Condition
    condition_key: str
    option_order: str
    label_sequence: str
    input_id: int | None = None  # assembled_inputs.id for audio modes


@dataclass
class EvaluationPlan:
    options: PlanOptions
    items: dict[int, Item]
    requests: list[PlannedRequest]
    warnings: list[str] = field(default_factory=list)
    # assembled input id → (sha256, format, seconds), read with an audio mode's plan for its jobs (empty in other
    # modes, and once the preparation has made the jobs, which hold it)
    input_audio: dict[int, tuple[str, str, float]] = field(default_factory=dict, repr=False)

    def summary(self) -> dict:
        """Counts per factor level, for the user to check before paying for anything."""
        counts: dict[str, Counter] = defaultdict(Counter)
        # a plan has few conditions and many requests: each condition's factors are read once, with its count
        # (counted by key, a string that keeps its hash, not by the Condition, hashed field by field each time)
        keys = list(map(attrgetter("condition_key"), self.requests))
        conditions = dict(zip(keys, map(attrgetter("condition"), self.requests)))  # equal conditions, equal keys
        for key, requests in Counter(keys).items():
            for factor, level in conditions[key].factors().items():
                counts[factor][str(level)] += requests
        counts["option_order"].update(request.option_order for request in self.requests)
        varying = {f: dict(sorted(c.items())) for f, c in counts.items() if len(c) > 1 or f in ("language", "order")}
        return {
            "items": len({r.item_id for r in self.requests}),
            "requests": len(self.requests),
            "conditions": len({r.condition_key for r in self.requests}),
            "by_factor": varying,
            "warnings": self.warnings,
        }


def build_plan(conn: sqlite3.Connection, options: PlanOptions) -> EvaluationPlan:
    if options.permutations and options.permutations not in PERMUTATION_STRATEGIES:
        raise SpokenBenchError(f"--permutations must be one of {', '.join(PERMUTATION_STRATEGIES)}")
    if options.voices not in VOICE_KINDS:
        raise SpokenBenchError(f"--voice-kind must be one of {', '.join(VOICE_KINDS)}, not '{options.voices}'")
    if options.voices != "original" and options.mode not in AUDIO_MODES + ("audio+text-options",):
        raise SpokenBenchError(f"--voice-kind {options.voices} needs an audio mode (the voices are heard)")
    if options.voices != "original" and options.simulated and options.mode != "audio+text-options":
        raise SpokenBenchError(
            f"--voice-kind {options.voices} with a simulated listener needs --mode audio+text-options (it answers "
            "for the project's neutralized question clips)"
        )
    items = _select_items(conn, options)
    warnings: list[str] = []
    input_audio: dict[int, tuple[str, str, float]] = {}
    if not items:
        raise SpokenBenchError(
            "no items match the selection (check --languages, --kind, --option-count and --limit); import items first"
        )
    if options.simulated and options.mode == "audio+text-options" and options.voices != "original":
        # the neutralized voices are the project's clips (metadata only: the listener never hears audio); 'all'
        # adds them to the listener's grid of original voices
        requests = _simulated_requests(items, options) if options.voices == "all" else []
        requests += _spoken_question_requests(conn, items, replace(options, voices="neutralized"))
    elif options.simulated and options.mode in AUDIO_MODES + ("audio+text-options",):
        requests = _simulated_requests(items, options)
    elif options.mode in AUDIO_MODES:
        requests, too_long, input_audio = _assembled_requests(conn, items, options)
        if too_long:
            warnings.append(
                f"{too_long} question(s) left out: an input is longer than {options.max_audio_s:g} s "
                "(--max-audio-seconds)"
            )
    elif options.mode == "audio+text-options":
        requests = _spoken_question_requests(conn, items, options)
    elif options.mode == "text":
        requests = _text_requests(items, options)
    else:
        raise SpokenBenchError(f"unknown mode '{options.mode}'")
    if not requests:
        raise SpokenBenchError("the plan is empty: no condition matches the selection")
    return EvaluationPlan(options, items, requests, warnings, input_audio)


def wanted_orders(item: Item, options: PlanOptions) -> list[str]:
    """The item's orders: explicit ones first, then the permutation strategy's, without duplicates. Two orders
    with the same (option_order, label_sequence) are the same input, asked once under the first name: a
    gold-position order that comes out as the identity is the 'original' request when that is asked too. The
    metrics reuse that answer in its gold-at-p setting (core.metrics.selection_bias.presentations), so no
    question drops out of a setting and nothing is asked twice."""
    count = len(item.options)
    orders = list(options.orders or [])
    if options.permutations == "cyclic":
        orders += cyclic_orders(count)
    elif options.permutations == "full":
        orders += full_orders(count)
    elif options.permutations == "gold-position":
        if not item.answer:
            raise SpokenBenchError(f"item {item.source_id} has no gold answer: gold-position permutations need one")
        orders += gold_position_orders(item.answer, count, f"{options.seed}:{item.source_id}")
    unique, seen = [], set()
    for order in orders:
        strings = order_strings(order, count)
        if strings not in seen:
            seen.add(strings)
            unique.append(order)
    return unique


def _select_items(conn: sqlite3.Connection, options: PlanOptions) -> dict[int, Item]:
    where, params = ["1"], []
    languages = options.filters.get("language")
    if languages:
        where.append(f"language IN ({','.join('?' * len(languages))})")
        params += list(languages)
    if options.kind:
        where.append("kind = ?")
        params.append(options.kind)
    items = {}
    for item_id, item in iter_items(conn, where=" AND ".join(where), params=tuple(params)):
        if options.option_count and len(item.options) != options.option_count:
            continue
        items[item_id] = item
        if options.limit and len(items) >= options.limit:
            break
    return items


def _matches(condition: Condition, filters: dict[str, tuple[str, ...]], identifiers: tuple[bool, ...]) -> bool:
    factors = condition.factors()
    for factor, allowed in filters.items():
        if factor == "language":
            continue  # applied to items
        value = factors.get(factor)
        if str(value) not in allowed and not _same_number(value, allowed):
            return False
    return condition.spoken_labels in identifiers


def _same_number(value, allowed: tuple[str, ...]) -> bool:
    try:
        return any(float(value) == float(a) for a in allowed)
    except (TypeError, ValueError):
        return False


def _assembled_requests(
    conn: sqlite3.Connection, items: dict[int, Item], options: PlanOptions
) -> tuple[list[PlannedRequest], int, dict[int, tuple[str, str, float]]]:
    """The requests, how many questions --max-audio-seconds left out, and each planned input's audio as
    (sha256, format, seconds): read here with the plan, in its one query, so preparing its jobs reads no more."""
    # (id, item_id, condition_key, option_order, label_sequence, seconds, sha256, format), by id
    rows = store.planned_inputs(conn)
    by_item: dict[int, list[tuple]] = defaultdict(list)  # each item's inputs, by id
    for row in rows:
        if row[1] in items:
            by_item[row[1]].append(row)
    if not rows or not by_item:
        raise SpokenBenchError(
            f"no assembled audio for the selected items: --mode {options.mode} needs the audio each model hears; "
            "run `spokenbench assemble DIR --orders ...` first (or use --mode text, or a simulated: model)"
        )
    requests, missing, too_long = [], [], 0
    audio: dict[int, tuple[str, str, float]] = {}
    neutralized = neutralized_voices(conn) if options.voices != "all" else set()
    wanted_voice = options.voices == "neutralized"
    # One Condition (and one key string) per distinct condition key, parsed and matched once and shared by
    # every request under it: a plan of 100,000 requests holds a handful of conditions, not 100,000 copies.
    conditions: dict[str, tuple[str, Condition, bool]] = {}
    bases: dict[str, str] = {}
    strings: dict[str, str] = {}  # order strings ('ABCD'), formats: repeated across requests, one object each

    def condition_of(key: str) -> tuple[str, Condition, bool]:
        known = conditions.get(key)
        if known is None:
            condition = Condition.from_key(key)
            usable = _matches(condition, options.filters, options.identifiers) and (
                options.voices == "all" or (condition.voice in neutralized) == wanted_voice
            )
            known = conditions[key] = (key, condition, usable)
        return known

    def planned(item_id: int, row: tuple, key: str, condition: Condition) -> PlannedRequest:
        input_id, _, _, option_order, label_sequence, seconds, sha, fmt = row
        audio[input_id] = (sha, strings.setdefault(fmt, fmt), seconds)
        return PlannedRequest(
            item_id,
            condition,
            key,
            strings.setdefault(option_order, option_order),
            strings.setdefault(label_sequence, label_sequence),
            input_id,
        )

    for item_id, item in items.items():
        available = []
        for row in by_item.get(item_id, ()):
            key, condition, usable = conditions.get(row[2]) or condition_of(row[2])
            if usable:
                available.append((row, key, condition))
        if options.max_audio_s and any(row[5] > options.max_audio_s for row, _, _ in available):
            too_long += 1
            continue
        orders = wanted_orders(item, options)
        if not orders:  # take whatever was assembled
            requests += [planned(item_id, row, key, c) for row, key, c in available]
            if not available:
                missing.append(f"item {item.source_id} ({item.language}): no assembled input matches the filters")
            continue
        presentations: dict[tuple, dict[tuple[str, str], tuple]] = defaultdict(dict)
        for row, key, condition in available:
            base = bases.get(key)
            if base is None:  # the condition's key in the original order, made once per condition
                base = bases[key] = replace(condition, order="original").key()
            presentations[base][(row[3], row[4])] = (row, key, condition)
        if not presentations:
            missing.append(f"item {item.source_id} ({item.language}): no assembled input matches the filters")
        for base, by_strings in presentations.items():
            for order in orders:
                found = by_strings.get(order_strings(order, len(item.options)))
                if found is None:
                    missing.append(f"item {item.source_id} ({item.language}), order {order}, {_describe(base)}")
                    continue
                requests.append(planned(item_id, *found))
    if missing:
        shown = "\n  ".join(missing[:5]) + (f"\n  ... and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise SpokenBenchError(
            f"{len(missing)} requested condition(s) have no assembled audio:\n  {shown}\n"
            "run `spokenbench assemble DIR --orders ...` for them first (or narrow --orders / the filters)"
        )
    return requests, too_long, audio


def _describe(base_key: str) -> str:
    factors = json.loads(base_key)
    return ", ".join(
        f"{k} {v}" for k, v in factors.items() if k not in ("order",) and v not in (None, "direct", "clean", 1.0, "yes")
    )


def _spoken_question_requests(
    conn: sqlite3.Connection, items: dict[int, Item], options: PlanOptions
) -> list[PlannedRequest]:
    """The gender paper's setup: the question clip is heard, the options are read. One presentation per
    question clip (language, accent, voice) of the item."""
    requests, missing = [], []
    conditions = _Conditions(options.filters, options.identifiers)
    for item_id, item in items.items():
        clips = [c for c in store.question_clips(conn, item_id) if _voice_kind_wanted(c["neutralization"], options)]
        if not clips:
            missing.append(f"item {item.source_id} ({item.language})")
            continue
        for clip in clips:
            for order in wanted_orders(item, options) or ["original"]:
                option_order, label_sequence = order_strings(order, len(item.options))
                for labelled in options.identifiers:
                    condition, key, kept = conditions(
                        language=clip["language"],
                        accent=clip["accent"],
                        voice=clip["voice"],
                        gender=clip["speaker_gender"],
                        order=order,
                        spoken_labels=labelled,
                        voice_source=_voice_source(clip),
                    )
                    if kept:
                        requests.append(
                            PlannedRequest(item_id, condition, key, option_order, label_sequence, clip["id"])
                        )
    if missing and options.voices == "neutralized":
        raise SpokenBenchError(
            f"{len(missing)} item(s) have no gender-neutralized question clip (e.g. {missing[0]}); --voice-kind "
            "neutralized plays them: synthesize them first (e.g. `spokenbench synthesize DIR --kinds gender-probe "
            "--parts questions --voices espeak-male-neutral-approx,espeak-female-neutral-approx`, docs/voices.md)"
        )
    if missing:
        raise SpokenBenchError(
            f"{len(missing)} item(s) have no question audio (e.g. {missing[0]}); --mode audio+text-options plays the "
            "question clip: run `spokenbench synthesize DIR --parts questions` first"
        )
    return requests


def _voice_kind_wanted(neutralization, options: PlanOptions) -> bool:
    if options.voices == "all":
        return True
    return bool(neutralization) == (options.voices == "neutralized")


def _voice_source(clip) -> str:
    """A neutralized clip's condition says so (voice_source 'neutralized'; its gender stays the source voice's),
    so its answers are the gender study's neutralized-voice setting wherever they go."""
    if clip["neutralization"]:
        return NEUTRALIZED_SOURCE
    return "cloned" if clip["speaker_id"] else "direct"


class _Conditions:
    """One Condition, its key, and whether the plan's filters keep it, per distinct set of factors: a plan of
    100,000 requests holds a handful of conditions, each made, keyed and matched once, shared by its requests."""

    def __init__(self, filters: dict[str, tuple[str, ...]], identifiers: tuple[bool, ...]):
        self.filters, self.identifiers = filters, identifiers
        self._known: dict[tuple, tuple[Condition, str, bool]] = {}

    def __call__(self, **factors) -> tuple[Condition, str, bool]:
        signature = tuple(factors.items())
        known = self._known.get(signature)
        if known is None:
            condition = Condition(**factors)
            kept = _matches(condition, self.filters, self.identifiers)
            known = self._known[signature] = (condition, condition.key(), kept)
        return known


def _text_requests(items: dict[int, Item], options: PlanOptions) -> list[PlannedRequest]:
    requests = []
    conditions = _Conditions(options.filters, options.identifiers)
    for item_id, item in items.items():
        for order in wanted_orders(item, options) or ["original"]:
            option_order, label_sequence = order_strings(order, len(item.options))
            for labelled in options.identifiers:
                condition, key, _kept = conditions(language=item.language, order=order, spoken_labels=labelled)
                requests.append(PlannedRequest(item_id, condition, key, option_order, label_sequence))
    return requests


def _simulated_requests(items: dict[int, Item], options: PlanOptions) -> list[PlannedRequest]:
    """A BiasInEar-like grid from metadata only (no audio): accents of the item's language × both genders."""
    accents_filter = options.filters.get("accent")
    genders_filter = options.filters.get("gender")
    requests = []
    conditions = _Conditions(
        {k: v for k, v in options.filters.items() if k not in ("accent", "voice")}, options.identifiers
    )
    for item_id, item in items.items():
        accents = simulated_accents(item.language)
        if accents_filter:  # an item in none of the chosen accents is left out, never heard in another's
            accents = tuple(a for a in accents if a in accents_filter)
        for accent in accents:
            for gender, voice in SIMULATED_VOICES.items():
                if genders_filter and gender not in genders_filter:
                    continue
                for order in wanted_orders(item, options) or ["original"]:
                    option_order, label_sequence = order_strings(order, len(item.options))
                    for labelled in options.identifiers:
                        condition, key, kept = conditions(
                            language=item.language,
                            accent=accent,
                            voice=voice,
                            gender=gender,
                            order=order,
                            spoken_labels=labelled,
                        )
                        if kept:
                            requests.append(PlannedRequest(item_id, condition, key, option_order, label_sequence))
    return requests


def presented_letters(option_order: str) -> str:
    return LETTERS[: len(option_order)]
