"""The simulated listener: an offline, deterministic stand-in for an audio language model, answering from a
condition's metadata only (never from audio). It is labelled "simulated" everywhere: model ids are
`simulated:<profile>`, runs have mode 'simulated'. The demo, the tests and `spokenbench power` use it.

Model of one answer, for a question q under condition c:
- accuracy p = clip(sigmoid(logit(base_accuracy) - difficulty_q) + sum of the profile's shifts for c's
  factor levels, in points; factors are the condition's (language, accent, gender, order, speed, ...)
  plus gold_position (presented letter of the gold answer) and cultural_label;
- correct iff z < Φ⁻¹(p), where z mixes a per-question latent (weight `consistency`) with per-condition
  noise, so a question is answered consistently across conditions the way real models are;
- a wrong answer picks a presented position by the profile's position preference, leaning to the
  question's favourite distractor; gender probes pick by position and a male-orientation preference.
All randomness is a hash of (seed, profile, question, condition): the same run gives the same answers."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import NormalDist

from spokenbench.core.domain.items import LETTERS
from spokenbench.core.evaluation.adapters import GenerationParams, ModelAdapter, ModelReply, ModelRequest
from spokenbench.core.evaluation.presets import ModelPreset
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.safe_files import display_name, read_regular_text

_NORMAL = NormalDist()


@dataclass(frozen=True)
class ListenerProfile:
    name: str
    base_accuracy: float = 0.7
    position_preference: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)  # relative weights of presented positions A, B, ...
    shifts: dict[str, dict[str, float]] = field(default_factory=dict)  # factor → level → accuracy points
    consistency: float = 0.7  # share of the correctness latent common to all conditions of a question
    difficulty_spread: float = 1.0  # sd of question difficulty, in logits
    distractor_pull: float = 2.0  # extra weight of a question's favourite distractor
    male_preference: float = 0.0  # gender probes: extra relative weight of the male-oriented option
    neutral_rate: float = 0.0  # with the neutral prompt: share of 'cannot be determined' answers
    refusal_rate: float = 0.0
    failure_rate: float = 0.0  # replies with no parseable answer
    description: str = ""

    def __post_init__(self):
        if not 0.0 < self.base_accuracy < 1.0:
            raise SpokenBenchError(f"listener profile {self.name}: base_accuracy must be between 0 and 1")
        if not 0.0 <= self.consistency < 1.0:
            raise SpokenBenchError(f"listener profile {self.name}: consistency must be in [0, 1)")

    def shift_points(self, levels: dict[str, str]) -> float:
        return sum(self.shifts.get(factor, {}).get(str(level), 0.0) for factor, level in levels.items())

    def to_dict(self) -> dict:
        data = asdict(self)
        data["position_preference"] = list(self.position_preference)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ListenerProfile:
        known = set(cls.__dataclass_fields__)
        unknown = set(data) - known
        if unknown:
            raise SpokenBenchError(f"listener profile: unknown field(s) {', '.join(sorted(unknown))}")
        data = dict(data)
        if "position_preference" in data:
            data["position_preference"] = tuple(float(w) for w in data["position_preference"])
        data["shifts"] = {
            str(f): {str(level): float(v) for level, v in levels.items()}
            for f, levels in data.get("shifts", {}).items()
        }
        return cls(**data)


# Three listeners with different bias profiles (the demo holds one run of each).
BUILTIN_PROFILES = {
    "steady": ListenerProfile(
        "steady",
        base_accuracy=0.82,
        position_preference=(1.0, 1.0, 1.0, 1.0),
        consistency=0.85,
        shifts={"order": {"reversed": -1.0}, "language": {"zh": -3.0, "ko": -4.0}},
        description="strong, little bias: a text-pipeline-like listener",
    ),
    "order-sensitive": ListenerProfile(
        "order-sensitive",
        base_accuracy=0.70,
        position_preference=(2.2, 1.0, 0.8, 0.6),
        consistency=0.6,
        shifts={
            "order": {"reversed": -8.0, "token-backward": -6.0, "order-backward": -3.0},
            "gold_position": {"A": 6.0, "D": -6.0},
        },
        description="prefers early positions; loses accuracy when options are reversed",
    ),
    "accent-sensitive": ListenerProfile(
        "accent-sensitive",
        base_accuracy=0.66,
        position_preference=(1.0, 1.2, 1.0, 0.9),
        consistency=0.7,
        shifts={
            "order": {"reversed": -3.0},
            "language": {"ko": -15.0, "zh": -8.0},
            "accent": {"indian": -5.0, "jeolla": -4.0},
            "gender": {"female": -1.0},
        },
        male_preference=0.4,
        neutral_rate=0.05,
        description="the issue's example: reversed -3, Korean -15, female -1; some accent effects",
    ),
    # the gender study (the acoustic gender differentiation paper): listeners with and without a male-oriented
    # preference; they answer gender probes the same whatever the voice, as the paper's SpeechLMs mostly did
    "male-leaning": ListenerProfile(
        "male-leaning",
        base_accuracy=0.75,
        consistency=0.7,
        male_preference=1.5,
        neutral_rate=0.15,
        refusal_rate=0.02,
        failure_rate=0.02,
        description="gender probes: prefers the male-oriented option 2.5 : 1 whatever the voice; some neutral "
        "answers, refusals and unparseable replies",
    ),
    "gender-balanced": ListenerProfile(
        "gender-balanced",
        base_accuracy=0.75,
        consistency=0.7,
        male_preference=0.0,
        neutral_rate=0.15,
        refusal_rate=0.02,
        failure_rate=0.02,
        description="gender probes: no preference between the male- and female-oriented options",
    ),
}
DEMO_PROFILES = ("steady", "order-sensitive", "accent-sensitive")
GENDER_PROFILES = ("male-leaning", "gender-balanced")
GENDER_STUDY_PROMPTS = ("gender-paper", "gender-paper-neutral", "gender-paper-open")


def load_profile(name: str, profile_file: str | Path | None = None) -> ListenerProfile:
    """A built-in profile by name, or one from a JSON file (a single profile object or a list of them)."""
    if profile_file:
        shown = display_name(profile_file)
        try:
            data = json.loads(read_regular_text(profile_file))
        except FileNotFoundError:
            raise SpokenBenchError(f"listener profile file {shown}: no such file") from None
        except (ValueError, RecursionError) as error:  # not JSON, a 4,300-digit number, nesting too deep
            raise SpokenBenchError(f"listener profile file {shown}: not valid JSON ({str(error)[:120]})") from None
        entries = data if isinstance(data, list) else [data]
        if not entries or not all(isinstance(entry, dict) for entry in entries):
            raise SpokenBenchError(
                f"listener profile file {shown}: expected a profile object or a list of profile objects"
            )
        for entry in entries:
            if entry.get("name") == name or len(entries) == 1:
                try:
                    return ListenerProfile.from_dict({**entry, "name": entry.get("name", name)})
                except (TypeError, ValueError, AttributeError) as error:
                    raise SpokenBenchError(f"listener profile file {shown}: invalid profile ({error})") from None
        raise SpokenBenchError(f"listener profile file {profile_file} has no profile named '{name}'")
    if name not in BUILTIN_PROFILES:
        raise SpokenBenchError(
            f"unknown simulated listener '{name}'; built in: {', '.join(BUILTIN_PROFILES)} "
            "(or give --listener-profile FILE.json)"
        )
    return BUILTIN_PROFILES[name]


def _uniform(*parts) -> float:
    digest = hashlib.blake2b("|".join(str(p) for p in parts).encode("utf-8"), digest_size=8).digest()
    return (int.from_bytes(digest, "big") >> 11) / float(1 << 53)


def _normal(*parts) -> float:
    return _NORMAL.inv_cdf(min(max(_uniform(*parts), 1e-12), 1 - 1e-12))


def accuracy(profile: ListenerProfile, difficulty: float, levels: dict[str, str]) -> float:
    """Probability of a correct answer for a question of `difficulty` (logits) under factor `levels`."""
    base = profile.base_accuracy
    p = 1.0 / (1.0 + math.exp(-(math.log(base / (1 - base)) - difficulty)))
    return min(0.999, max(0.001, p + profile.shift_points(levels) / 100.0))


@dataclass(frozen=True)
class ListenerQuestion:
    """What the listener may know: the condition's metadata, never audio."""

    question_id: str  # shared across languages (items.source_id)
    gold: str | None  # original letter; None for gender probes
    option_order: str  # original letter at each presented letter
    levels: dict[str, str]  # condition factors (+ cultural_label)
    orientations: tuple[str | None, ...] = ()  # per original option, for gender probes
    condition_key: str = ""


def choose(profile: ListenerProfile, seed: int, q: ListenerQuestion, neutral_letter: str | None = None) -> str | None:
    """The presented letter the listener answers, 'neutral', 'refusal' or None (an unparseable reply)."""
    key = (seed, profile.name, q.question_id, q.condition_key)
    if _uniform(*key, "fail") < profile.failure_rate:
        return None
    if _uniform(*key, "refuse") < profile.refusal_rate:
        return "refusal"
    if neutral_letter and _uniform(*key, "neutral") < profile.neutral_rate:
        return "neutral"
    count = len(q.option_order)
    presented = LETTERS[:count]
    weights = [profile.position_preference[i] if i < len(profile.position_preference) else 1.0 for i in range(count)]
    if q.gold is None:  # gender probe: no right answer, only preferences
        for i, original in enumerate(q.option_order):
            index = LETTERS.index(original)
            if index < len(q.orientations) and q.orientations[index] == "male":
                weights[i] *= 1.0 + profile.male_preference
        return presented[_pick(weights, _uniform(*key, "probe"))]
    gold_position = q.option_order.index(q.gold)
    levels = {**q.levels, "gold_position": presented[gold_position]}
    difficulty = profile.difficulty_spread * _normal(seed, "difficulty", q.question_id)
    p = accuracy(profile, difficulty, levels)
    c = profile.consistency
    z = math.sqrt(c) * _normal(seed, profile.name, "latent", q.question_id) + math.sqrt(1 - c) * _normal(*key, "noise")
    if z < _NORMAL.inv_cdf(p):
        return presented[gold_position]
    favourite = _favourite_distractor(seed, q.question_id, q.gold, count)
    for i, original in enumerate(q.option_order):
        if i == gold_position:
            weights[i] = 0.0
        elif original == favourite:
            weights[i] *= 1.0 + profile.distractor_pull
    return presented[_pick(weights, _uniform(*key, "wrong"))]


def _favourite_distractor(seed: int, question_id: str, gold: str, count: int) -> str:
    others = [letter for letter in LETTERS[:count] if letter != gold]
    return others[int(_uniform(seed, "favourite", question_id) * len(others))]


def _pick(weights: list[float], u: float) -> int:
    total = sum(weights)
    threshold, running = u * total, 0.0
    for index, weight in enumerate(weights):
        running += weight
        if threshold < running:
            return index
    return max(range(len(weights)), key=lambda i: weights[i])


def reply_text(
    choice: str | None,
    prompt: str,
    labelled: bool,
    option_texts: dict[str, str],
    neutral_letter: str | None,
    neutral_text: str | None,
) -> str:
    """The raw text the listener 'says', in the prompt's format, so it goes through the real parser."""
    if _is_free_form(prompt) and prompt != "open":  # free form without options (gender-paper-open): free text
        if choice is None:
            return "Hmm, that is an interesting question."
        if choice == "refusal":
            return "I'm sorry, I cannot answer this question."
        if choice == "neutral":
            return "That cannot be determined from the question alone."
        return f"I would suggest this: {option_texts.get(choice, choice)}."
    if choice is None:
        return "Hmm, that is an interesting question."
    if choice == "refusal":
        return "I'm sorry, I cannot answer this question."
    if choice == "neutral":
        answer = neutral_letter if labelled else neutral_text
    else:
        answer = choice if labelled else option_texts.get(choice, choice)
    if prompt == "cot":
        return f"Let me consider each option in turn before deciding.\nAnswer: [[{answer}]]"
    if prompt == "open":
        return f"I would go with {answer}." if not labelled else f"The answer is ({answer})."
    if prompt.startswith("gender-paper"):  # "only the symbol or letter of the chosen option"
        return f"{answer}"
    return f"Answer: [[{answer}]]"


def _is_free_form(prompt: str) -> bool:
    from spokenbench.core.evaluation.prompts import load_template

    try:
        return load_template(prompt).free_form
    except SpokenBenchError:
        return False


ANSWER_DELAY_ENV = "SPOKENBENCH_SIMULATED_DELAY_S"


def answer_delay_s() -> float:
    """Seconds the simulated listener waits before each answer (default 0): set SPOKENBENCH_SIMULATED_DELAY_S to
    rehearse a live run offline — its progress, rate, time left and cancel — as a real model's would look. An
    environment variable, so it reaches the job process an app's run goes to."""
    text = os.environ.get(ANSWER_DELAY_ENV, "").strip()
    try:
        delay = float(text) if text else 0.0
    except ValueError:
        raise SpokenBenchError(f"{ANSWER_DELAY_ENV}={text!r}: give seconds, e.g. 0.1") from None
    if not 0.0 <= delay <= 60.0:
        raise SpokenBenchError(f"{ANSWER_DELAY_ENV}={text!r}: give seconds between 0 and 60")
    return delay


class SimulatedAdapter(ModelAdapter):
    """The listener behind the common adapter interface, so simulated runs use the same runner, parser,
    store and exports as real ones. Free and offline, so nothing is cached."""

    cacheable = False
    paid_requests = False

    def __init__(
        self, preset: ModelPreset, params: GenerationParams, profile: ListenerProfile | None = None, seed: int = 0
    ):
        super().__init__(preset, params)
        self.profile = profile or load_profile(preset.model)
        self.seed = seed
        self.delay_s = answer_delay_s()

    def identity(self) -> dict:
        return {
            "provider": "simulated",
            "model": self.preset.model,
            "profile": self.profile.to_dict(),
            "seed": self.seed,
        }

    def estimate_tokens(self, request: ModelRequest) -> tuple[int, int]:
        return 0, 0

    async def generate(self, request: ModelRequest) -> ModelReply:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        context = request.context or {}
        question: ListenerQuestion = context["question"]
        choice = choose(self.profile, self.seed, question, context.get("neutral_letter"))
        text = reply_text(
            choice,
            context.get("prompt", "standard"),
            context.get("labelled", True),
            context.get("option_texts", {}),
            context.get("neutral_letter"),
            context.get("neutral_text"),
        )
        return ModelReply(text=text, input_tokens=0, output_tokens=0)


def simulated_preset(name: str) -> ModelPreset:
    return ModelPreset(provider="simulated", model=name, convention="simulated", id=f"simulated:{name}")


def builtin_profiles_json() -> str:
    return json.dumps({name: p.to_dict() for name, p in BUILTIN_PROFILES.items()}, indent=2)
