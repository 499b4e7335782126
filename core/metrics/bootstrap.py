"""Question-level bootstrap: 95% percentile intervals for the headline numbers.

Each resample draws the table's questions with replacement (a multinomial count per question, fixed
seed). Every headline number is a function of per-question sums (correct answers, entropies, position
counts, contingency tables), so a resample is one matrix product of the weights with those sums: 1,000
resamples cost about as much as a few passes over the data, not 1,000 recomputations."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spokenbench.core.foundation.progress import Progress, no_progress

DEFAULT_SEED = 20240521
CONFIDENCE = 0.95
CHUNK = 250


def question_weights(n_questions: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(n_resamples, n_questions) multinomial counts: how often each question is drawn in each resample."""
    return rng.multinomial(n_questions, np.full(n_questions, 1.0 / n_questions), size=n_resamples).astype(float)


def bootstrap_intervals(
    group_question: np.ndarray,
    group_unit: np.ndarray,
    n_units: int,
    columns: np.ndarray,
    finalize: Callable[[np.ndarray], dict[str, np.ndarray]],
    n_questions: int,
    n_resamples: int,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
) -> list[dict[str, tuple[float, float]]]:
    """Percentile intervals per unit (a model, or a model × category).

    `columns` holds per-group sums (groups × S); a resample's statistic for a unit is `finalize` applied
    to the weighted sum of its groups' columns (shape resamples × S), returning named arrays (resamples,).
    Resamples where a statistic is undefined (NaN) are left out of its percentiles."""
    progress = progress or no_progress()
    rng = np.random.default_rng(seed)
    columns = np.nan_to_num(np.asarray(columns, dtype=float))
    members = [np.flatnonzero(group_unit == u) for u in range(n_units)]
    draws: list[dict[str, list[np.ndarray]]] = [dict() for _ in range(n_units)]
    done = 0
    while done < n_resamples:
        progress.check_cancelled()
        size = min(CHUNK, n_resamples - done)
        weights = question_weights(n_questions, size, rng)
        for unit, groups in enumerate(members):
            if len(groups) == 0:
                continue
            sums = weights[:, group_question[groups]] @ columns[groups]
            with np.errstate(invalid="ignore", divide="ignore"):
                for name, values in finalize(sums).items():
                    draws[unit].setdefault(name, []).append(values)
        done += size
        progress.report(done, n_resamples, "bootstrap resamples")
    tail = 100 * (1 - CONFIDENCE) / 2
    intervals = []
    for unit_draws in draws:
        unit_ci = {}
        for name, parts in unit_draws.items():
            values = np.concatenate(parts)
            values = values[~np.isnan(values)]  # undefined in that resample; an infinite CKLD stays
            if len(values) == 0:
                unit_ci[name] = (float("nan"), float("nan"))
            else:
                with np.errstate(invalid="ignore"):  # inf - inf while interpolating between infinite draws
                    lo, hi = np.percentile(values, [tail, 100 - tail])
                unit_ci[name] = (float(lo), float(hi))
        intervals.append(unit_ci)
    return intervals


class ColumnBuilder:
    """Collects named per-group columns and remembers where each block starts."""

    def __init__(self) -> None:
        self.blocks: list[np.ndarray] = []
        self.index: dict[str, slice] = {}
        self.width = 0

    def add(self, name: str, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=float)
        if values.ndim == 1:
            values = values[:, None]
        self.index[name] = slice(self.width, self.width + values.shape[1])
        self.width += values.shape[1]
        self.blocks.append(values)

    def add_mean(self, name: str, values: np.ndarray) -> None:
        """A per-question value whose statistic is its mean over the questions where it is defined."""
        defined = ~np.isnan(values)
        self.add(f"{name}#sum", np.where(defined, values, 0.0))
        self.add(f"{name}#count", defined)

    def matrix(self) -> np.ndarray:
        return np.hstack(self.blocks)

    def get(self, sums: np.ndarray, name: str) -> np.ndarray:
        part = sums[:, self.index[name]]
        return part[:, 0] if part.shape[1] == 1 else part

    def mean(self, sums: np.ndarray, name: str) -> np.ndarray:
        return self.get(sums, f"{name}#sum") / self.get(sums, f"{name}#count")
