"""Selection bias, after "Hearing the Order": accuracy by gold position, Δ accuracy against the original
order, RSD and CKLD (its Eq. 1), the distribution of predicted positions, majority voting over cyclic and
full permutations, model rankings across settings, and a paired McNemar test of original vs reversed
order. Position metrics use presented letters; voting works on original options.

A row's presentation is its option_order and, when the table has an `order` column (the project's
condition factor), whether that order speaks the labels backwards (order-backward, token-backward keep or
reverse option_order but read the pairs D→A): an order-backward row is not an original-order row."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import cached_property
from math import factorial
from typing import TYPE_CHECKING

import numpy as np

from spokenbench.core.domain.conditions import NAMED_ORDERS, order_strings
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.metrics.agreement import exact_mcnemar_p, kendall_tau_b
from spokenbench.core.metrics.encoding import combine, determines, letters, representative_row
from spokenbench.core.metrics.responses import McqResponses

if TYPE_CHECKING:
    import pandas as pd

Columns = dict  # column name -> values (a list or an array), one entry per table row, in column order

FACTORIALS = np.array([float(factorial(n)) for n in range(27)])  # orders of n options (float: 26! > int64)
ORDER_FACTOR = "order"  # the condition factor naming the presented order (the project's exports have it)
# named orders whose labels are spoken backwards (core.domain.conditions: label_sequence D→A)
BACKWARD_LABEL_ORDERS = frozenset(name for name in NAMED_ORDERS if order_strings(name, 4)[1] != "ABCD")
# Permutation votes: what a tie between t options earns (the paper gives no rule)
VOTE_TIE_RULES = ("fractional", "first", "random")
DEFAULT_VOTE_TIES = "fractional"
DEFAULT_TIE_SEED = 20240521  # the bootstrap's default seed (core.metrics.bootstrap.DEFAULT_SEED)


def rsd_from_counts(correct: np.ndarray, total: np.ndarray) -> np.ndarray:
    """RSD over positions (last axis): population standard deviation of the per-position accuracies s_i
    divided by their mean. Positions that are never gold are left out; NaN if the mean accuracy is 0."""
    correct = np.asarray(correct, dtype=float)
    total = np.asarray(total, dtype=float)
    present = total > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(present, correct / np.where(present, total, 1), 0.0)
        k = present.sum(axis=-1)
        mean = s.sum(axis=-1) / k
        variance = (np.where(present, (s - mean[..., None]) ** 2, 0.0)).sum(axis=-1) / k
        return np.where((k > 0) & (mean > 0), np.sqrt(variance) / mean, np.nan)


def ckld_from_counts(predicted: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """CKLD = sum_i p_i ln(p_i / q_i), p = shares of predicted positions (parse failures left out),
    q = shares of gold positions. Infinite when a position is predicted but never gold."""
    predicted = np.asarray(predicted, dtype=float)
    gold = np.asarray(gold, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = predicted / predicted.sum(axis=-1, keepdims=True)
        q = gold / gold.sum(axis=-1, keepdims=True)
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0) / q), 0.0)
        value = terms.sum(axis=-1)
    defined = (predicted.sum(axis=-1) > 0) & (gold.sum(axis=-1) > 0)
    return np.where(defined, value, np.nan)


def ckld_interval(draws: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CKLD's bootstrap interval along the first axis (resamples): (low, high, share of infinite resamples).
    Eq. 1 has no finite value in a resample that has a position predicted but never gold (q_i = 0), which is
    common on small tables; the point estimate keeps the paper's definition (no smoothing), so the interval is
    the percentile interval over the finite resamples and the share of infinite ones is stated beside it.
    Undefined (NaN) resamples count in neither; NaN where no resample is finite."""
    draws = np.asarray(draws, dtype=float)
    infinite = np.isinf(draws)
    defined = (~np.isnan(draws)).sum(axis=0)
    finite = np.where(infinite, np.nan, draws)
    tail = 100 * (1 - confidence) / 2
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no finite resample: an all-NaN slice
        low, high = np.nanpercentile(finite, [tail, 100 - tail], axis=0)
        share = np.where(defined > 0, infinite.sum(axis=0) / np.maximum(defined, 1), np.nan)
    return low, high, share


@dataclass
class Presentations:
    """How each row was presented, and which rows each setting uses. Computed once per table
    (`presentations`) and shared by the metrics, the bootstrap and the app's panels."""

    code: np.ndarray  # presentation per row: (option_order, labels spoken backwards)
    original: np.ndarray  # option_order is the identity and the labels are read in letter order
    reversed: np.ndarray  # option_order exactly reversed, labels in letter order
    cyclic: np.ndarray  # option_order a rotation of the original, labels in letter order (identity included)
    order_factors: list[str]  # factors whose level follows from the presentation (e.g. `order`)
    units: np.ndarray  # (model, question, every factor the presentation does not fix)
    gold_setting: np.ndarray  # the row counts in the gold-at-p setting of its own gold position p
    reused_original: np.ndarray  # original-order rows reused in a gold-at-p setting (subset of gold_setting)
    comparison_rows: str  # which rows the gold-position settings use, in words


def labels_backward(data: McqResponses) -> np.ndarray:
    """Per row: the table's `order` column names an order that speaks the labels backwards (order-backward,
    token-backward; spelling of case, spaces and underscores aside). False without an `order` factor."""
    if ORDER_FACTOR not in data.factor_codes:
        return np.zeros(data.n_rows, dtype=bool)
    levels = data.factor_levels[ORDER_FACTOR]
    flags = np.array(
        [level.strip().lower().replace("_", "-").replace(" ", "-") in BACKWARD_LABEL_ORDERS for level in levels]
    )
    return flags[data.factor_codes[ORDER_FACTOR]]


def presentations(data: McqResponses) -> Presentations:
    """The rows of each setting, told apart by the full presentation (not option_order alone).

    Gold at p (Hearing the Order Fig. 1): the rows not in the original order that put the gold answer at p
    (all rows when the table has no other order). A unit (model, question, configuration) whose other orders
    put the gold at every position but one, the one where the original order has it, reuses its original-order
    answer there: that is the gold-at-p input itself (a plan does not ask the same input twice), so every
    question stays in every gold-at-p setting."""
    backward = labels_backward(data)
    code, n_codes = combine(data.order_code, backward.astype(np.int64))
    letter_order = ~backward
    original = data.is_identity & letter_order
    order_factors = []
    if n_codes > 1:
        order_factors = [f for f in data.factors if determines(code, data.factor_codes[f])]
    keys = [data.model, data.question] + [data.factor_codes[f] for f in data.factors if f not in order_factors]
    units, n_units = combine(*keys)
    others = ~original
    if not others.any():
        gold_setting = np.ones(data.n_rows, dtype=bool)
        reused = np.zeros(data.n_rows, dtype=bool)
        described = "all rows"
    else:
        k = data.max_options
        covered = np.bincount(units[others] * k + data.gold_position[others], minlength=n_units * k)
        covered = covered.reshape(n_units, k) > 0
        unit_row = representative_row(units, n_units)
        unit_gold = data.answer[unit_row]  # the original order's gold position is the gold letter
        fill = (covered.sum(axis=1) == data.n_options[unit_row] - 1) & ~covered[np.arange(n_units), unit_gold]
        reused = original & fill[units]
        gold_setting = others | reused
        described = "other orders (original reused at its gold position)" if reused.any() else "other orders"
    return Presentations(
        code=code,
        original=original,
        reversed=data.is_reversed & letter_order,
        cyclic=data.is_cyclic & letter_order,
        order_factors=order_factors,
        units=units,
        gold_setting=gold_setting,
        reused_original=reused,
        comparison_rows=described,
    )


@dataclass
class SelectionBias:
    """Per-group (model, question) position counts, kept for the bootstrap, and per-model results."""

    positions: list[str]
    group_gold: np.ndarray  # (groups, K) rows with gold at presented position i
    group_gold_correct: np.ndarray  # (groups, K) of those, answered correctly
    group_predicted: np.ndarray  # (groups, K) valid predictions at presented position i
    # the tables as plain columns (or rows); each one's DataFrame is the property named without the suffix
    per_model_columns: Columns  # model, rsd, ckld, accuracy by position, Δ, predicted shares
    voting_columns: Columns  # model, permutation (original/cyclic/full), accuracy, rsd, ckld, coverage
    ranking_columns: Columns  # model, setting, accuracy, rank
    kendall_tau_rows: list[tuple]  # setting, n_models, tau, p_value (against the original setting)
    mcnemar_columns: Columns  # model, n_pairs, original_only_correct, reversed_only_correct, p_value
    comparison_rows: str  # which rows the gold-position settings use
    presentation: Presentations | None = None
    vote_ties: str = "fractional"  # the permutation votes' tie rule
    tie_seed: int | None = None  # the seed of the random tie-breaks (rule 'random')

    @property
    def vote_tie_note(self) -> str:
        return vote_tie_note(self.vote_ties, self.tie_seed)

    # DataFrames for the report and the app's panels, built on first use (pandas is not imported before)
    @cached_property
    def per_model(self) -> pd.DataFrame:
        return columns_frame(self.per_model_columns)

    @cached_property
    def voting(self) -> pd.DataFrame:
        return columns_frame(self.voting_columns)

    @cached_property
    def ranking(self) -> pd.DataFrame:
        return columns_frame(self.ranking_columns)

    @cached_property
    def kendall_tau(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(self.kendall_tau_rows, columns=["setting", "n_models", "kendall_tau", "p_value"])

    @cached_property
    def mcnemar(self) -> pd.DataFrame:
        return columns_frame(self.mcnemar_columns)


def columns_frame(columns: Columns) -> pd.DataFrame:
    """`Columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(columns)


def compute_selection_bias(
    data: McqResponses, vote_ties: str = DEFAULT_VOTE_TIES, seed: int = DEFAULT_TIE_SEED
) -> SelectionBias:
    """Every selection-bias number of the table. `vote_ties` is the tie rule of the permutation votes
    (VOTE_TIE_RULES); `seed` draws the random tie-breaks."""
    check_vote_ties(vote_ties)
    k = data.max_options
    n_groups = data.n_groups
    positions = list(letters(k))
    shown = presentations(data)
    group_gold = _counts(data.group, data.gold_position, n_groups, k)
    group_gold_correct = _counts(data.group[data.correct], data.gold_position[data.correct], n_groups, k)
    valid = data.valid
    group_predicted = _counts(data.group[valid], data.prediction[valid], n_groups, k)

    n_models = len(data.models)

    def by_model(a):
        return np.stack([np.bincount(data.group_model, weights=a[:, i], minlength=n_models) for i in range(k)], axis=1)

    gold_m, correct_m, pred_m = by_model(group_gold), by_model(group_gold_correct), by_model(group_predicted)

    # settings: the original order, and the rows that place the gold answer at each position
    original_acc = _accuracy_by_model(data, shown.original)
    position_acc = np.stack(
        [_accuracy_by_model(data, shown.gold_setting & (data.gold_position == i)) for i in range(k)], axis=1
    )

    with np.errstate(invalid="ignore", divide="ignore"):
        per_model = {
            "model": data.models,
            "rsd": rsd_from_counts(correct_m, gold_m),
            "ckld": ckld_from_counts(pred_m, gold_m),
            "accuracy_original": original_acc,
        }
        pred_share = pred_m / pred_m.sum(axis=1, keepdims=True)
        gold_share = gold_m / gold_m.sum(axis=1, keepdims=True)
        acc_by_position = np.where(gold_m > 0, correct_m / np.where(gold_m > 0, gold_m, 1), np.nan)
    for i, letter in enumerate(positions):
        per_model[f"accuracy_gold_{letter}"] = acc_by_position[:, i]
        per_model[f"delta_accuracy_gold_{letter}"] = position_acc[:, i] - original_acc
        per_model[f"predicted_share_{letter}"] = pred_share[:, i]
        per_model[f"gold_share_{letter}"] = gold_share[:, i]

    voting = _voting(data, shown, vote_ties, seed)
    ranking, tau = _rankings(data, original_acc, position_acc, positions, voting)
    return SelectionBias(
        positions=positions,
        group_gold=group_gold,
        group_gold_correct=group_gold_correct,
        group_predicted=group_predicted,
        per_model_columns=per_model,
        voting_columns=voting,
        ranking_columns=ranking,
        kendall_tau_rows=tau,
        mcnemar_columns=_mcnemar(data, shown),
        comparison_rows=shown.comparison_rows,
        presentation=shown,
        vote_ties=vote_ties,
        tie_seed=seed,
    )


def _counts(groups: np.ndarray, positions: np.ndarray, n_groups: int, k: int) -> np.ndarray:
    return np.bincount(groups * k + positions, minlength=n_groups * k).reshape(n_groups, k)


def _accuracy_by_model(data: McqResponses, rows: np.ndarray) -> np.ndarray:
    n_models = len(data.models)
    n = np.bincount(data.model[rows], minlength=n_models)
    correct = np.bincount(data.model[rows], weights=data.correct[rows], minlength=n_models)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, correct / n, np.nan)


def vote_units(data: McqResponses) -> np.ndarray:
    """The unit a vote is taken over: (model, question, and every factor not fixed by the presentation)."""
    return presentations(data).units


def check_vote_ties(rule: str) -> str:
    if rule not in VOTE_TIE_RULES:
        raise SpokenBenchError(
            f"unknown tie rule '{rule}' for permutation votes; use one of: {', '.join(VOTE_TIE_RULES)}"
        )
    return rule


def vote_tie_note(rule: str, seed: int | None = None) -> str:
    """The tie rule in words, for a table's notes."""
    if rule == "fractional":
        return "ties in a vote: a t-way tie counts 1/t for each tied option (fractional credit, the default)"
    if rule == "first":
        return "ties in a vote: the tied option listed first in the original order wins"
    return f"ties in a vote: one tied option drawn uniformly at random (seed {seed})"


def tie_draws(n_units: int, seed: int) -> np.ndarray:
    """One uniform draw per vote unit, in unit order, for the random tie-break (the same in every setting)."""
    return np.random.default_rng(seed).random(n_units)


def vote_shares(counts: np.ndarray, rule: str = DEFAULT_VOTE_TIES, draws: np.ndarray | None = None) -> np.ndarray:
    """Each unit's vote (rows) as a share per original option (columns) from its answer counts: the option with
    the most answers gets 1. A tie between t options: 'fractional' gives each 1/t (the expected result of a
    uniformly random tie-break, so ties add no position bias); 'first' gives 1 to the tied option listed first
    in the original order; 'random' gives 1 to the tied option at index floor(u * t) of the tied options in
    original order, u = the unit's draw. A unit with no counted answer gets nothing (incorrect)."""
    top = counts.max(axis=1, keepdims=True)
    tied = (counts == top) & (top > 0)
    n_tied = tied.sum(axis=1)
    if rule == "fractional":
        return tied / np.maximum(n_tied, 1)[:, None]
    if rule == "first":
        pick = np.zeros(len(counts), dtype=np.int64)
    elif rule == "random":
        if draws is None:
            raise ValueError("the random tie rule needs one draw per unit")
        pick = np.minimum(np.floor(draws * n_tied).astype(np.int64), np.maximum(n_tied - 1, 0))
    else:
        check_vote_ties(rule)
    rank = np.cumsum(tied, axis=1) - 1  # index of each tied option among the unit's tied options
    return (tied & (rank == pick[:, None])).astype(float)


@dataclass
class UnitVotes:
    """One setting's votes: per unit whether it was shown in the setting, its vote shares, and ties."""

    shown: np.ndarray  # (units,) the unit has rows in the setting
    shares: np.ndarray  # (units, K) vote shares per original option
    tied: np.ndarray  # (units,) the top count was shared by two or more options
    complete: np.ndarray  # (units,) shown all n rotations (cyclic) or all n! orders (full)


def setting_votes(
    data: McqResponses, shown: Presentations, setting: str, rule: str = DEFAULT_VOTE_TIES, seed: int = DEFAULT_TIE_SEED
) -> UnitVotes:
    """The majority votes of one setting ('cyclic': the rotations of the original order; 'full': every
    presented order) per vote unit, over the original options chosen."""
    units = shown.units
    n_units = int(units.max()) + 1
    k = data.max_options
    rows = shown.cyclic if setting == "cyclic" else np.ones(data.n_rows, dtype=bool)
    use = rows & data.valid
    counts = np.bincount(units[use] * k + data.chosen[use], minlength=n_units * k).reshape(n_units, k)
    draws = tie_draws(n_units, seed) if rule == "random" else None
    shares = vote_shares(counts, rule, draws)
    top = counts.max(axis=1, keepdims=True)
    tied = (((counts == top) & (top > 0)).sum(axis=1)) > 1
    present = np.bincount(units[rows], minlength=n_units) > 0
    orders_seen = np.zeros(n_units, dtype=np.int64)
    if rows.any():
        pair, n_pairs = combine(units[rows], data.order_code[rows])
        orders_seen = np.bincount(units[rows][representative_row(pair, n_pairs)], minlength=n_units)
    unit_n_opt = data.n_options[representative_row(units, n_units)]
    needed = unit_n_opt if setting == "cyclic" else FACTORIALS[unit_n_opt]
    return UnitVotes(present, shares, tied, present & (orders_seen >= needed))


def _voting(data: McqResponses, shown: Presentations, rule: str, seed: int) -> Columns:
    """Majority vote over the original options each unit chose under the permutations it was shown:
    'cyclic' uses the rotations of the original order, 'full' every presented order; ties by `rule`
    (`vote_shares`); a unit whose every answer failed counts as incorrect. A unit is
    'complete' when it was shown all n rotations (cyclic) or all n! orders (full)."""
    units = shown.units
    n_units = int(units.max()) + 1
    unit_row = representative_row(units, n_units)
    unit_model, unit_gold = data.model[unit_row], data.answer[unit_row]
    parts = [_original_setting(data, shown)]
    for name in ("cyclic", "full"):
        votes = setting_votes(data, shown, name, rule, seed)
        s = votes.shown
        part = _vote_metrics(data, name, unit_model[s], unit_gold[s], votes.shares[s], votes.complete[s])
        part["tied_units"] = np.bincount(unit_model[s & votes.tied], minlength=len(data.models))
        parts.append(part)
    voting = {
        column: np.concatenate([np.asarray(part[column]) for part in parts])
        if column not in ("model", "permutation")
        else [value for part in parts for value in part[column]]
        for column in parts[0]
    }
    voting["tie_rule"] = np.where(np.asarray(voting["permutation"]) == "original", "", rule)
    return voting


def _original_setting(data: McqResponses, shown: Presentations) -> Columns:
    """Accuracy, RSD and CKLD of the rows presented in the original order (Table 3's 'Original')."""
    n_models = len(data.models)
    k = data.max_options
    rows = shown.original

    def counts(mask, position):
        return np.bincount(data.model[mask] * k + position[mask], minlength=n_models * k).reshape(n_models, k)

    gold = counts(rows, data.gold_position)
    correct = counts(rows & data.correct, data.gold_position)
    predicted = counts(rows & data.valid, data.prediction)
    n = gold.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(n > 0, correct.sum(axis=1) / n, np.nan)
    return {
        "model": data.models,
        "permutation": ["original"] * n_models,
        "n": n,
        "complete_units": np.full(n_models, np.nan),
        "accuracy": accuracy,
        "rsd": rsd_from_counts(correct, gold),
        "ckld": ckld_from_counts(predicted, gold),
        "tied_units": np.full(n_models, np.nan),
    }


def _vote_metrics(data: McqResponses, name: str, model, gold, vote_share, complete) -> Columns:
    n_models = len(data.models)
    k = data.max_options
    gold_counts = np.bincount(model * k + gold, minlength=n_models * k).reshape(n_models, k)
    right = vote_share[np.arange(len(gold)), gold]
    correct_counts = np.bincount(model * k + gold, weights=right, minlength=n_models * k).reshape(n_models, k)
    voted_counts = np.stack(
        [np.bincount(model, weights=vote_share[:, i], minlength=n_models) for i in range(k)], axis=1
    )
    n = gold_counts.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(n > 0, correct_counts.sum(axis=1) / n, np.nan)
    return {
        "model": data.models,
        "permutation": [name] * n_models,
        "n": n,
        "complete_units": np.bincount(model[complete], minlength=n_models),
        "accuracy": accuracy,
        "rsd": rsd_from_counts(correct_counts, gold_counts),
        "ckld": ckld_from_counts(voted_counts, gold_counts),
    }


def _rankings(data: McqResponses, original_acc, position_acc, positions, voting: Columns) -> tuple[Columns, list]:
    """Rank models (1 = most accurate; ties share the best rank) in each setting, and Kendall's τ-b of each
    setting's accuracies against the original setting's (Hearing the Order Fig. 3)."""
    settings = {"original": original_acc}
    for i, letter in enumerate(positions):
        settings[f"gold_at_{letter}"] = position_acc[:, i]
    permutation = np.asarray(voting["permutation"])
    for name in ("cyclic", "full"):
        settings[f"{name}_vote"] = voting["accuracy"][permutation == name]
    n_models = len(data.models)
    ranking: Columns = {"model": [], "setting": [], "accuracy": [], "rank": []}
    taus = []
    for name, acc in settings.items():
        ranking["model"] += data.models
        ranking["setting"] += [name] * n_models
        ranking["accuracy"].append(np.asarray(acc, dtype=float))
        ranking["rank"].append(rank_descending(acc))
        both = ~np.isnan(acc) & ~np.isnan(original_acc)
        if name != "original" and both.sum() >= 2:
            tau, p_value = kendall_tau_b(original_acc[both], acc[both])  # scipy.stats.kendalltau's numbers
            taus.append((name, int(both.sum()), tau, p_value))
        elif name != "original":
            taus.append((name, int(both.sum()), np.nan, np.nan))
    ranking["accuracy"] = np.concatenate(ranking["accuracy"])
    ranking["rank"] = np.concatenate(ranking["rank"])
    return ranking, taus


def rank_descending(values: np.ndarray) -> np.ndarray:
    """Ranks with 1 = largest, ties sharing the best rank, NaN left unranked (what pandas'
    `rank(ascending=False, method="min")` gives), as floats."""
    values = np.asarray(values, dtype=float)
    defined = ~np.isnan(values)
    ranks = np.full(len(values), np.nan)
    known = values[defined]
    ranks[defined] = 1 + (known[None, :] > known[:, None]).sum(axis=1)
    return ranks


def _mcnemar(data: McqResponses, shown: Presentations) -> Columns:
    """Exact McNemar test per model on paired correctness: each (question, non-order factors) unit seen
    in the original and in the exactly reversed order is one pair (repeats are paired in row order)."""
    units = shown.units
    original, reversed_ = np.flatnonzero(shown.original), np.flatnonzero(shown.reversed)
    repeat_o, repeat_r = _repeat_index(units[original]), _repeat_index(units[reversed_])
    width = max(repeat_o.max(initial=0), repeat_r.max(initial=0)) + 1
    _, pair_o, pair_r = np.intersect1d(
        units[original] * width + repeat_o, units[reversed_] * width + repeat_r, assume_unique=True, return_indices=True
    )
    n_models = len(data.models)
    model = data.model[original[pair_o]]
    orig, rev = data.correct[original[pair_o]], data.correct[reversed_[pair_r]]
    n_pairs = np.bincount(model, minlength=n_models)
    b = np.bincount(model[orig & ~rev], minlength=n_models)
    c = np.bincount(model[~orig & rev], minlength=n_models)
    p = np.where(n_pairs > 0, exact_mcnemar_p(b, c), np.nan)
    return {
        "model": data.models,
        "n_pairs": n_pairs,
        "original_only_correct": b,
        "reversed_only_correct": c,
        "p_value": p,
    }


def _repeat_index(units: np.ndarray) -> np.ndarray:
    """Per row: how many earlier rows have the same unit (0 for the first), in row order."""
    order = np.argsort(units, kind="stable")
    sorted_units = units[order]
    starts = np.flatnonzero(np.r_[True, sorted_units[1:] != sorted_units[:-1]])
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(units)]))
    repeat = np.empty(len(units), dtype=np.int64)
    repeat[order] = np.arange(len(units)) - run_start
    return repeat
