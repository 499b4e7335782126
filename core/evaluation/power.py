"""Power analysis for benchmark design: how many questions are needed to detect an accuracy, APES or
Fleiss' κ difference with a given power — by simulation with the simulated listener's answer model.

The design: every question is answered under `conditions` combinations of the other factors (accents ×
orders, say) at each of the factor's two levels. Per question we compute
- accuracy: the accuracy difference between the levels (the effect is a shift in points at one level);
- APES: |H(level 1) − H(level 2)| of the normalised answer entropy across the conditions (BiasInEar);
- κ: Fleiss' κ over the conditions as subjects and the two levels as raters (BiasInEar's Appendix C.4).
For accuracy the listener itself has the effect. For APES and κ two listeners are compared on the same
questions — one without a factor effect, one whose accuracy shift at the second level is calibrated so
the expected per-question metric differs by the requested amount. Each candidate question count is
simulated `simulations` times; power is the share of paired t-tests (two-sided) with p < alpha. The
smallest count reaching the target power is found by bisection. Draws use numpy with the same answer
model as `simulated.choose` (difficulty, a per-question latent shared across conditions, position
preference and a favourite distractor); the numbers are estimates with Monte-Carlo error."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy import stats

from spokenbench.core.foundation.errors import Cancelled, SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress

METRICS = ("accuracy", "apes", "kappa")


@dataclass(frozen=True)
class PowerDesign:
    metric: str = "accuracy"
    effect: float = 5.0  # accuracy: points; apes/kappa: difference of the per-question mean
    power: float = 0.8
    alpha: float = 0.05
    conditions: int = 6  # combinations of the other factors per level
    options: int = 4
    base_accuracy: float = 0.7
    consistency: float = 0.7
    difficulty_spread: float = 1.0
    position_preference: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)
    distractor_pull: float = 2.0
    simulations: int = 200
    max_questions: int = 20000
    seed: int = 0

    def check(self) -> None:
        if self.metric not in METRICS:
            raise SpokenBenchError(f"--metric must be one of {', '.join(METRICS)}")
        if not 0 < self.power < 1 or not 0 < self.alpha < 1:
            raise SpokenBenchError("--power and --alpha must be between 0 and 1")
        if self.metric in ("apes", "kappa") and self.conditions < 2:
            raise SpokenBenchError("APES and kappa need at least 2 conditions per level (--conditions)")
        if self.effect == 0:
            raise SpokenBenchError("--effect must not be 0")
        if not 0 < self.base_accuracy < 1:
            raise SpokenBenchError("--base-accuracy must be between 0 and 1")


@dataclass(frozen=True)
class PowerResult:
    design: PowerDesign
    questions: int | None  # None: not reachable within max_questions
    achieved_power: float | None
    shift_points: float  # the accuracy shift that produces the effect
    curve: list[tuple[int, float]]  # (questions, estimated power) evaluated during the search
    note: str

    def as_dict(self) -> dict:
        data = asdict(self)
        data["design"]["position_preference"] = list(self.design.position_preference)
        data["curve"] = [{"questions": n, "power": round(p, 4)} for n, p in self.curve]
        return data


def simulate_answers(
    design: PowerDesign,
    shift_points: float,
    n_questions: int,
    n_sims: int,
    rng: np.random.Generator,
    shared: dict | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Answers (option index) and gold (index), shaped (sims, questions, 2 levels, conditions).
    `shared` carries question draws so two listeners can be compared on the same questions."""
    k, c = design.options, design.conditions
    shape_q = (n_sims, n_questions)
    if shared is None:
        shared = {
            "difficulty": rng.normal(0, design.difficulty_spread, shape_q),
            "gold": rng.integers(0, k, shape_q),
            "favourite_offset": rng.integers(1, k, shape_q),
        }
    logit = math.log(design.base_accuracy / (1 - design.base_accuracy))
    p = 1 / (1 + np.exp(-(logit - shared["difficulty"])))
    p_levels = np.stack([p, p + shift_points / 100.0], axis=-1).clip(0.001, 0.999)  # (s, q, 2)
    latent = rng.normal(size=shape_q)[..., None, None]
    noise = rng.normal(size=(*shape_q, 2, c))
    z = math.sqrt(design.consistency) * latent + math.sqrt(1 - design.consistency) * noise
    correct = z < stats.norm.ppf(p_levels)[..., None]
    gold = shared["gold"]
    favourite = (gold + shared["favourite_offset"]) % k
    weights = np.tile(
        np.asarray(design.position_preference[:k] + (1.0,) * max(0, k - len(design.position_preference)), dtype=float),
        (*shape_q, 1),
    )
    np.put_along_axis(
        weights,
        favourite[..., None],
        np.take_along_axis(weights, favourite[..., None], -1) * (1 + design.distractor_pull),
        -1,
    )
    np.put_along_axis(weights, gold[..., None], 0.0, -1)
    cumulative = np.cumsum(weights / weights.sum(-1, keepdims=True), -1)  # (s, q, k)
    u = rng.random((*shape_q, 2, c))
    wrong = (u[..., None] >= cumulative[:, :, None, None, :]).sum(-1).clip(0, k - 1)
    answers = np.where(correct, gold[..., None, None], wrong)
    return answers, gold


def per_question_metric(metric: str, answers: np.ndarray, gold: np.ndarray, k: int) -> np.ndarray:
    """(sims, questions) values of the metric."""
    if metric == "accuracy":
        correct = answers == gold[..., None, None]
        return correct[..., 1, :].mean(-1) - correct[..., 0, :].mean(-1)
    counts = np.stack([(answers == option).sum(-1) for option in range(k)], axis=-1)  # (s, q, 2, k)
    if metric == "apes":
        share = counts / answers.shape[-1]
        with np.errstate(divide="ignore", invalid="ignore"):
            entropy = -np.where(share > 0, share * np.log(share) / math.log(k), 0.0).sum(-1)  # (s, q, 2)
        return np.abs(entropy[..., 0] - entropy[..., 1])
    # kappa: subjects = conditions, raters = the 2 levels, categories = options
    per_subject = np.stack([(answers == option).sum(-2) for option in range(k)], axis=-1)  # (s, q, c, k)
    raters = 2
    agreement = ((per_subject * (per_subject - 1)).sum(-1) / (raters * (raters - 1))).mean(-1)  # (s, q)
    marginals = per_subject.sum(-2) / (per_subject.shape[-2] * raters)  # (s, q, k)
    expected = (marginals**2).sum(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(expected < 1 - 1e-12, (agreement - expected) / (1 - expected), 1.0)
    return kappa


def _metric_difference(
    design: PowerDesign, shift: float, n_questions: int, n_sims: int, seed: int
) -> tuple[np.ndarray, float]:
    """Per-question differences (sims, questions) that the test sees, and their expected mean."""
    rng = np.random.default_rng(seed)
    if design.metric == "accuracy":
        answers, gold = simulate_answers(design, shift, n_questions, n_sims, rng)
        values = per_question_metric("accuracy", answers, gold, design.options)
        return values, float(values.mean())
    answers_ref, gold = simulate_answers(design, 0.0, n_questions, n_sims, rng)
    shared_rng = np.random.default_rng(seed)  # same question draws for the second listener
    shared = {
        "difficulty": shared_rng.normal(0, design.difficulty_spread, (n_sims, n_questions)),
        "gold": shared_rng.integers(0, design.options, (n_sims, n_questions)),
        "favourite_offset": shared_rng.integers(1, design.options, (n_sims, n_questions)),
    }
    answers_alt, _ = simulate_answers(design, shift, n_questions, n_sims, rng, shared)
    ref = per_question_metric(design.metric, answers_ref, gold, design.options)
    alt = per_question_metric(design.metric, answers_alt, gold, design.options)
    values = alt - ref
    return values, float(np.nanmean(values))


def calibrate_shift(design: PowerDesign) -> float:
    """The accuracy shift (points) at the second level whose expected metric difference equals `effect`."""
    if design.metric == "accuracy":
        return float(design.effect)
    target = abs(design.effect)
    sign = -1.0  # losing accuracy at one level changes the answer spread
    low, high = 0.0, 95.0
    _, at_high = _metric_difference(design, sign * high, 3000, 1, design.seed + 7)
    if abs(at_high) < target:
        raise SpokenBenchError(
            f"an {design.metric} difference of {design.effect} is beyond what this listener model produces "
            f"(at most about {abs(at_high):.3f}); choose a smaller --effect or change --conditions"
        )
    for _ in range(12):
        middle = (low + high) / 2
        _, value = _metric_difference(design, sign * middle, 3000, 1, design.seed + 7)
        if abs(value) < target:
            low = middle
        else:
            high = middle
    return sign * (low + high) / 2


def estimate_power(design: PowerDesign, shift: float, n_questions: int, seed: int, direction: float) -> float:
    """Share of simulated benchmarks whose two-sided paired test finds the difference, in its true direction."""
    values, _ = _metric_difference(design, shift, n_questions, design.simulations, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = stats.ttest_1samp(values, 0.0, axis=1, nan_policy="omit")
    p = np.asarray(result.pvalue, dtype=float)
    significant = (p < design.alpha) & (np.sign(np.nanmean(values, axis=1)) == direction)
    return float(np.mean(np.where(np.isnan(p), False, significant)))


def questions_needed(design: PowerDesign, progress: Progress | None = None) -> PowerResult:
    """The smallest number of questions that reaches `design.power`, by bisection on simulated power."""
    design.check()
    progress = progress or no_progress()
    shift = calibrate_shift(design)
    _, expected = _metric_difference(design, shift, 3000, 1, design.seed + 11)
    direction = 1.0 if expected >= 0 else -1.0
    curve: list[tuple[int, float]] = []

    def power_at(n: int) -> float:
        if progress.cancelled:
            raise Cancelled()
        value = estimate_power(design, shift, n, design.seed + n, direction)
        curve.append((n, value))
        progress.report(len(curve), None, f"{n} questions: power {value:.2f}")
        return value

    low, high = 2, 8
    while power_at(high) < design.power:
        low = high
        high *= 2
        if high > design.max_questions:
            if power_at(design.max_questions) < design.power:
                return PowerResult(
                    design, None, None, shift, sorted(curve), f"not reachable with {design.max_questions} questions"
                )
            high = design.max_questions
            break
    while high - low > max(1, low // 50):  # within 2%
        middle = (low + high) // 2
        if power_at(middle) >= design.power:
            high = middle
        else:
            low = middle
    achieved = next(p for n, p in reversed(curve) if n == high)
    note = (
        f"{design.simulations} simulated benchmarks per size; power estimates carry about "
        f"±{1.96 * math.sqrt(design.power * (1 - design.power) / design.simulations):.2f} Monte-Carlo error"
    )
    return PowerResult(design, high, achieved, shift, sorted(curve), note)
