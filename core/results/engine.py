"""Shared preparation of the panels: the engine's input columns, the metrics context every panel family
reads, and the joint question-level bootstrap."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from spokenbench.core.metrics import mcq
from spokenbench.core.metrics.analysis import mcq_interval_columns
from spokenbench.core.metrics.bootstrap import (
    CHUNK,
    CONFIDENCE,
    ColumnBuilder,
    question_weights,
)
from spokenbench.core.metrics.encoding import representative_row
from spokenbench.core.metrics.responses import McqResponses
from spokenbench.core.metrics.selection_bias import (
    ckld_interval,
    setting_votes,
)
from spokenbench.core.results.model import BOOTSTRAP, MAX_DENSE_SUMS, MAX_KEPT_WEIGHTS, PANEL_FACTORS, Z95

# --------------------------------------------------------------------------------------------------
# Shared preparation


@dataclass
class _Context:
    data: McqResponses
    metrics: mcq.McqMetrics
    selection: object
    summary: pd.DataFrame
    intervals: list[dict]
    n_resamples: int
    seed: int
    simulated: dict[str, bool]
    infinite_shares: dict[str, np.ndarray] = field(default_factory=dict)  # CKLD name -> per model (`ckld_interval`)
    # factors some rows leave empty (a text run has no accent or voice gender): (codes, levels), the empty rows
    # coded len(levels); only "Accuracy by level" shows them, over the rows that have them (_partial_factors)
    partial_factors: dict[str, tuple[np.ndarray, list[str]]] = field(default_factory=dict)

    def source(self, model: str) -> str:
        return "yours (simulated)" if self.simulated.get(model) else "yours"

    def ci(self, model_index: int, key: str) -> tuple[float, float]:
        if not self.intervals:
            return (math.nan, math.nan)
        return self.intervals[model_index].get(key, (math.nan, math.nan))

    def infinite_share(self, model_index: int, key: str) -> float:
        """The share of resamples where CKLD `key` was infinite (0 when none was)."""
        shares = self.infinite_shares.get(key)
        return 0.0 if shares is None else float(shares[model_index])

    def interval_text(self, model_index: int, key: str) -> str:
        """How a point's interval was made; for a CKLD that some resamples make infinite, says how many."""
        share = self.infinite_share(model_index, key)
        if not share > 0:
            return BOOTSTRAP
        return (
            f"{BOOTSTRAP} over the {100 * (1 - share):.3g}% of resamples where CKLD is finite; infinite in "
            f"{100 * share:.3g}% (a position chosen but never gold in them: Eq. 1 has no finite value)"
        )

    @functools.cached_property
    def question_names(self) -> np.ndarray:
        return np.asarray(self.data.questions, dtype=object)

    def questions(self, rows: np.ndarray) -> Callable[[], tuple[str, ...]]:
        """The question ids of some rows, in id order, when first asked for (a bincount, not a sort)."""
        codes, names = self.data.question, self.question_names

        def work() -> tuple[str, ...]:
            if len(rows) == 0:
                return ()
            return tuple(names[np.flatnonzero(np.bincount(codes[rows], minlength=len(names)))])

        return work

    @functools.cached_property
    def units(self) -> np.ndarray:
        """The engine's vote units (model, question and every factor the presentation does not fix)."""
        return self.selection.presentation.units

    @functools.cached_property
    def votes(self) -> dict[str, dict[str, np.ndarray]]:
        return _vote_group_counts(self.data, self.selection)

    @functools.cached_property
    def weight_matrix(self) -> np.ndarray | None:
        """The resamples' question weights (resamples × questions), drawn in the same chunks and order as the
        engine's `bootstrap_intervals`, so a statistic's interval here equals the engine's for the same seed.
        None when that matrix would be large (many questions): `weight_chunks` then draws them chunk by chunk."""
        if self.n_resamples * len(self.data.questions) > MAX_KEPT_WEIGHTS:
            return None
        return resample_weights(len(self.data.questions), self.n_resamples, self.seed)

    def weight_chunks(self):
        """The same weights as `weight_matrix`, in one piece when it is kept, else in the engine's chunks."""
        if self.weight_matrix is not None:
            yield self.weight_matrix
            return
        rng = np.random.default_rng(self.seed)
        done = 0
        while done < self.n_resamples:
            size = min(CHUNK, self.n_resamples - done)
            yield question_weights(len(self.data.questions), size, rng)
            done += size

    def bootstrap(self, columns: ColumnBuilder, finalize) -> list[dict]:
        """Percentile intervals per model, like core.metrics.bootstrap.bootstrap_intervals, but for all models and
        resamples in one matrix product: the per-group sums are laid out densely as (question, model, column)."""
        data = self.data
        n_models = len(data.models)
        if not self.n_resamples:
            return [{} for _ in range(n_models)]
        matrix = np.nan_to_num(np.asarray(columns.matrix(), dtype=float))
        width = matrix.shape[1]
        n_questions = len(data.questions)
        dense_fits = n_questions * n_models * width <= MAX_DENSE_SUMS
        if dense_fits:  # every model side by side: one product per chunk of resamples
            dense = np.zeros((n_questions, n_models, width))
            dense[data.group_question, data.group_model] = matrix
            flat = dense.reshape(n_questions, n_models * width)
        else:  # many questions: model by model, over that model's groups only (as the engine does)
            members = split_rows(data.group_model, n_models)
        parts: dict[str, list[np.ndarray]] = {}
        for weights in self.weight_chunks():
            if dense_fits:
                sums = weights @ flat
            else:
                sums = np.stack([weights[:, data.group_question[g]] @ matrix[g] for g in members], axis=1)
            sums = sums.reshape(len(weights) * n_models, width)
            with np.errstate(invalid="ignore", divide="ignore"):
                for name, values in finalize(sums).items():
                    parts.setdefault(name, []).append(np.asarray(values, dtype=float).reshape(len(weights), n_models))
        draws = {name: np.concatenate(chunks) for name, chunks in parts.items()}
        tail = 100 * (1 - CONFIDENCE) / 2
        bounds: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for name in [n for n, values in draws.items() if n.rsplit(".", 1)[-1] == "ckld" and np.isinf(values).any()]:
            low, high, self.infinite_shares[name] = ckld_interval(draws.pop(name), CONFIDENCE)
            bounds[name] = (low, high)
        complete = [name for name, values in draws.items() if not np.isnan(values).any()]
        if complete:  # the common case: one percentile call for every statistic defined in every resample
            with warnings.catch_warnings(), np.errstate(invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)  # inf − inf between infinite draws
                low, high = np.percentile(np.stack([draws[n] for n in complete]), [tail, 100 - tail], axis=1)
            bounds.update({name: (low[i], high[i]) for i, name in enumerate(complete)})
        for name in draws.keys() - set(complete):  # undefined in some resamples: left out, as the engine does
            with warnings.catch_warnings(), np.errstate(invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)  # a model whose statistic is never defined
                bounds[name] = tuple(np.nanpercentile(draws[name], [tail, 100 - tail], axis=0))
        intervals: list[dict] = [{} for _ in range(n_models)]
        for name, (low, high) in bounds.items():
            for m in range(n_models):
                intervals[m][name] = (float(low[m]), float(high[m]))
        return intervals


@functools.lru_cache(maxsize=4)
def resample_weights(n_questions: int, n_resamples: int, seed: int) -> np.ndarray:
    """Kept between refreshes (read-only): the same table size and seed always draw the same weights."""
    rng = np.random.default_rng(seed)
    chunks, done = [], 0
    while done < n_resamples:
        size = min(CHUNK, n_resamples - done)
        chunks.append(question_weights(n_questions, size, rng))
        done += size
    weights = np.vstack(chunks) if chunks else np.zeros((0, n_questions))
    weights.setflags(write=False)
    return weights


def _engine_intervals(ctx: _Context) -> list[dict]:
    """The engine's headline intervals (core.metrics.analysis.mcq_intervals: accuracy, mean entropy, APES and
    κ per factor, RSD, CKLD) from the same columns and the same resamples, through the joint bootstrap."""
    columns, finalize = mcq_interval_columns(ctx.metrics, ctx.selection)
    return ctx.bootstrap(columns, finalize)


def _probe_mask(frame: pd.DataFrame) -> np.ndarray:
    if "category" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    category = frame["category"]
    return (category.notna() & (category.astype(str).str.strip() != "")).to_numpy()


ENGINE_COLUMNS = ("question_id", "model", "answer", "prediction", "option_order", "cultural_label", "subject")


def _engine_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in ENGINE_COLUMNS if c in frame.columns] + [c for c in PANEL_FACTORS if c in frame.columns]


def _engine_frame(frame: pd.DataFrame, clean: bool = False) -> pd.DataFrame:
    """The engine's input: every cell as stripped text, missing as "" (what core.foundation.tables.as_clean_strings
    gives), computed on each column's distinct values and kept as plain object arrays (no Arrow strings)."""
    keep = _engine_columns(frame)
    if clean:  # already text: no conversion (pandas keeps the columns' string arrays as they are)
        return frame[keep]
    return pd.DataFrame({c: _clean_column(frame[c]) for c in keep}, index=pd.RangeIndex(len(frame)))


def _clean_column(column: pd.Series) -> np.ndarray:
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    cleaned = [_cell_text(u) for u in uniques] + [""]
    return np.asarray(cleaned, dtype=object)[codes]


def _cell_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _partial_factors(frame: pd.DataFrame, chosen: list[str]) -> dict[str, tuple[np.ndarray, list[str]]]:
    """The panel factors left out of the engine because some rows are empty there, yet with two or more levels
    in the rows that have them: a text-only run beside audio runs has no accent or voice gender, and that must
    not hide those factors for the audio runs. Each as (codes, levels), an empty cell coded len(levels)."""
    partial = {}
    for f in PANEL_FACTORS:
        if f in chosen or f not in frame.columns:
            continue
        codes, uniques = pd.factorize(frame[f].to_numpy(dtype=object), sort=True)
        levels = [str(u) for u in uniques if u != ""]
        if len(levels) < 2 or len(levels) == len(uniques):
            continue  # one level only, or no empty cell (then the engine would have taken it)
        empty = list(uniques).index("")
        codes = np.where(codes == empty, len(levels), codes - (codes > empty)).astype(np.int64)
        partial[f] = (codes, levels)
    return partial


def _levels(frame: pd.DataFrame, column: str) -> int:
    if column not in frame.columns or (frame[column] == "").any():
        return 0
    return frame[column].nunique()


def split_rows(key: np.ndarray, n_keys: int) -> list[np.ndarray]:
    """Row indices per key 0..n_keys-1 (one stable sort, no per-key scans)."""
    order = np.argsort(key, kind="stable")
    counts = np.bincount(key, minlength=n_keys)
    return np.split(order, np.cumsum(counts)[:-1])


def _counts(group: np.ndarray, code: np.ndarray, n_groups: int, width: int, weights=None) -> np.ndarray:
    flat = np.bincount(group * width + code, weights=weights, minlength=n_groups * width)
    return flat.reshape(n_groups, width).astype(float)


def wilson(successes: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (95%); NaN where n = 0."""
    successes = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = successes / n
        z2 = Z95**2
        centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        half = Z95 * np.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return np.where(n > 0, centre - half, np.nan), np.where(n > 0, centre + half, np.nan)


def _vote_group_counts(data: McqResponses, selection) -> dict[str, dict[str, np.ndarray]]:
    """Per (model, question) group and setting: gold, vote-weighted correct and voted counts per position —
    the same votes as the engine's `_voting` (the same tie rule: the default, fractional), kept per group for
    the bootstrap."""
    k = data.max_options
    n_groups = data.n_groups
    shown_rows = selection.presentation
    units = shown_rows.units
    n_units = int(units.max()) + 1
    unit_row = representative_row(units, n_units)
    unit_group, unit_gold = data.group[unit_row], data.answer[unit_row]
    out = {}
    rows = shown_rows.original
    out["original"] = {
        "gold": _counts(data.group[rows], data.gold_position[rows], n_groups, k),
        "correct": _counts(data.group[rows & data.correct], data.gold_position[rows & data.correct], n_groups, k),
        "voted": _counts(data.group[rows & data.valid], data.prediction[rows & data.valid], n_groups, k),
    }
    for name in ("cyclic", "full"):
        votes = setting_votes(data, shown_rows, name, selection.vote_ties, selection.tie_seed)
        shown = votes.shown
        g, gold, share = unit_group[shown], unit_gold[shown], votes.shares[shown]
        right = share[np.arange(len(gold)), gold]
        out[name] = {
            "gold": _counts(g, gold, n_groups, k),
            "correct": _counts(g, gold, n_groups, k, right),
            "voted": np.stack([np.bincount(g, weights=share[:, i], minlength=n_groups) for i in range(k)], axis=1),
        }
    return out
