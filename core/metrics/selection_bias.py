"""Selection bias, after "Hearing the Order": accuracy by gold position, Δ accuracy against the original
order, RSD and CKLD (its Eq. 1), the distribution of predicted positions, majority voting over cyclic and
full permutations, model rankings across settings, and a paired McNemar test of original vs reversed
order. Position metrics use presented letters; voting works on original options."""

from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np
import pandas as pd
from scipy import stats

from spokenbench.core.metrics.agreement import exact_mcnemar_p
from spokenbench.core.metrics.encoding import combine, letters, representative_row
from spokenbench.core.metrics.responses import McqResponses

FACTORIALS = np.array([float(factorial(n)) for n in range(27)])  # orders of n options (float: 26! > int64)


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


@dataclass
class SelectionBias:
    """Per-group (model, question) position counts, kept for the bootstrap, and per-model results."""

    positions: list[str]
    group_gold: np.ndarray  # (groups, K) rows with gold at presented position i
    group_gold_correct: np.ndarray  # (groups, K) of those, answered correctly
    group_predicted: np.ndarray  # (groups, K) valid predictions at presented position i
    per_model: pd.DataFrame  # model, rsd, ckld, accuracy by position, Δ, predicted shares
    voting: pd.DataFrame  # model, permutation (original/cyclic/full), accuracy, rsd, ckld, coverage
    ranking: pd.DataFrame  # model, setting, accuracy, rank
    kendall_tau: pd.DataFrame  # setting, tau, p_value (against the original setting)
    mcnemar: pd.DataFrame  # model, n_pairs, original_only_correct, reversed_only_correct, p_value
    comparison_rows: str  # which rows the gold-position settings use


def compute_selection_bias(data: McqResponses) -> SelectionBias:
    k = data.max_options
    n_groups = data.n_groups
    positions = list(letters(k))
    group_gold = _counts(data.group, data.gold_position, n_groups, k)
    group_gold_correct = _counts(data.group[data.correct], data.gold_position[data.correct], n_groups, k)
    valid = data.valid
    group_predicted = _counts(data.group[valid], data.prediction[valid], n_groups, k)

    n_models = len(data.models)

    def by_model(a):
        return np.stack([np.bincount(data.group_model, weights=a[:, i], minlength=n_models) for i in range(k)], axis=1)

    gold_m, correct_m, pred_m = by_model(group_gold), by_model(group_gold_correct), by_model(group_predicted)

    # settings: the original order, and the rows that place the gold answer at each position (rows in a
    # permuted order when the table has any, else all rows)
    has_permuted = bool((~data.is_identity).any())
    comparison = ~data.is_identity if has_permuted else np.ones(data.n_rows, dtype=bool)
    original_acc = _accuracy_by_model(data, data.is_identity)
    position_acc = np.stack(
        [_accuracy_by_model(data, comparison & (data.gold_position == i)) for i in range(k)], axis=1
    )

    with np.errstate(invalid="ignore", divide="ignore"):
        per_model = pd.DataFrame(
            {
                "model": data.models,
                "rsd": rsd_from_counts(correct_m, gold_m),
                "ckld": ckld_from_counts(pred_m, gold_m),
                "accuracy_original": original_acc,
            }
        )
        pred_share = pred_m / pred_m.sum(axis=1, keepdims=True)
        gold_share = gold_m / gold_m.sum(axis=1, keepdims=True)
        acc_by_position = np.where(gold_m > 0, correct_m / np.where(gold_m > 0, gold_m, 1), np.nan)
    for i, letter in enumerate(positions):
        per_model[f"accuracy_gold_{letter}"] = acc_by_position[:, i]
        per_model[f"delta_accuracy_gold_{letter}"] = position_acc[:, i] - original_acc
        per_model[f"predicted_share_{letter}"] = pred_share[:, i]
        per_model[f"gold_share_{letter}"] = gold_share[:, i]

    voting = _voting(data, original_acc)
    ranking, tau = _rankings(data, original_acc, position_acc, positions, voting)
    return SelectionBias(
        positions=positions,
        group_gold=group_gold,
        group_gold_correct=group_gold_correct,
        group_predicted=group_predicted,
        per_model=per_model,
        voting=voting,
        ranking=ranking,
        kendall_tau=tau,
        mcnemar=_mcnemar(data),
        comparison_rows="permuted rows" if has_permuted else "all rows",
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
    """The unit a vote is taken over: (model, question, and every factor not fixed by the option order)."""
    order_factors = set(data.factors_determined_by_order())
    keys = [data.model, data.question] + [data.factor_codes[f] for f in data.factors if f not in order_factors]
    units, _ = combine(*keys)
    return units


def _voting(data: McqResponses, original_acc: np.ndarray) -> pd.DataFrame:
    """Majority vote over the original options each unit chose under the permutations it was shown:
    'cyclic' uses the rotations of the original order, 'full' every presented order. A tie between t
    options counts 1/t for each (the expectation of a uniformly random tie-break, so ties add no position
    bias); a unit whose every answer failed counts as incorrect. A unit is
    'complete' when it was shown all n rotations (cyclic) or all n! orders (full)."""
    units = vote_units(data)
    n_units = int(units.max()) + 1
    unit_row = representative_row(units, n_units)
    unit_model, unit_gold, unit_n_opt = data.model[unit_row], data.answer[unit_row], data.n_options[unit_row]
    k = data.max_options
    frames = [_original_setting(data)]
    for name, rows in (("cyclic", data.is_cyclic), ("full", np.ones(data.n_rows, dtype=bool))):
        use = rows & data.valid
        counts = np.bincount(units[use] * k + data.chosen[use], minlength=n_units * k).reshape(n_units, k)
        top = counts.max(axis=1, keepdims=True)
        tied = (counts == top) & (top > 0)
        # a tie splits the vote evenly: the expected result of breaking ties uniformly at random
        vote_share = tied / np.maximum(tied.sum(axis=1, keepdims=True), 1)
        shown = np.bincount(units[rows], minlength=n_units) > 0
        orders_seen = np.zeros(n_units, dtype=np.int64)
        if rows.any():
            pair, n_pairs = combine(units[rows], data.order_code[rows])
            orders_seen = np.bincount(units[rows][representative_row(pair, n_pairs)], minlength=n_units)
        needed = unit_n_opt if name == "cyclic" else FACTORIALS[unit_n_opt]
        complete = shown & (orders_seen >= needed)
        frames.append(
            _vote_metrics(data, name, unit_model[shown], unit_gold[shown], vote_share[shown], complete[shown])
        )
    return pd.concat(frames, ignore_index=True)


def _original_setting(data: McqResponses) -> pd.DataFrame:
    """Accuracy, RSD and CKLD of the rows presented in the original order (Table 3's 'Original')."""
    n_models = len(data.models)
    k = data.max_options
    rows = data.is_identity

    def counts(mask, position):
        return np.bincount(data.model[mask] * k + position[mask], minlength=n_models * k).reshape(n_models, k)

    gold = counts(rows, data.gold_position)
    correct = counts(rows & data.correct, data.gold_position)
    predicted = counts(rows & data.valid, data.prediction)
    n = gold.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(n > 0, correct.sum(axis=1) / n, np.nan)
    return pd.DataFrame(
        {
            "model": data.models,
            "permutation": "original",
            "n": n,
            "complete_units": np.nan,
            "accuracy": accuracy,
            "rsd": rsd_from_counts(correct, gold),
            "ckld": ckld_from_counts(predicted, gold),
        }
    )


def _vote_metrics(data: McqResponses, name: str, model, gold, vote_share, complete) -> pd.DataFrame:
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
    return pd.DataFrame(
        {
            "model": data.models,
            "permutation": name,
            "n": n,
            "complete_units": np.bincount(model[complete], minlength=n_models),
            "accuracy": accuracy,
            "rsd": rsd_from_counts(correct_counts, gold_counts),
            "ckld": ckld_from_counts(voted_counts, gold_counts),
        }
    )


def _rankings(data: McqResponses, original_acc, position_acc, positions, voting) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rank models (1 = most accurate; ties share the best rank) in each setting, and Kendall's τ-b of each
    setting's accuracies against the original setting's (Hearing the Order Fig. 3)."""
    settings = {"original": original_acc}
    for i, letter in enumerate(positions):
        settings[f"gold_at_{letter}"] = position_acc[:, i]
    for name in ("cyclic", "full"):
        settings[f"{name}_vote"] = voting.loc[voting["permutation"] == name, "accuracy"].to_numpy()
    frames, taus = [], []
    for name, acc in settings.items():
        rank = pd.Series(acc).rank(ascending=False, method="min").to_numpy()
        frames.append(pd.DataFrame({"model": data.models, "setting": name, "accuracy": acc, "rank": rank}))
        both = ~np.isnan(acc) & ~np.isnan(original_acc)
        if name != "original" and both.sum() >= 2:
            with np.errstate(invalid="ignore", divide="ignore"):
                result = stats.kendalltau(original_acc[both], acc[both])
            taus.append((name, int(both.sum()), float(result.statistic), float(result.pvalue)))
        elif name != "original":
            taus.append((name, int(both.sum()), np.nan, np.nan))
    return (
        pd.concat(frames, ignore_index=True),
        pd.DataFrame(taus, columns=["setting", "n_models", "kendall_tau", "p_value"]),
    )


def _mcnemar(data: McqResponses) -> pd.DataFrame:
    """Exact McNemar test per model on paired correctness: each (question, non-order factors) unit seen
    in the original and in the exactly reversed order is one pair (repeats are paired in row order)."""
    units = vote_units(data)
    frames = []
    for flag, name in ((data.is_identity, "original"), (data.is_reversed, "reversed")):
        rows = np.flatnonzero(flag)
        frame = pd.DataFrame({"unit": units[rows], name: data.correct[rows], "model": data.model[rows]})
        frame["repeat"] = frame.groupby("unit").cumcount()
        frames.append(frame)
    pairs = frames[0].merge(frames[1].drop(columns="model"), on=["unit", "repeat"], how="inner")
    n_models = len(data.models)
    model = pairs["model"].to_numpy(dtype=np.int64)
    orig, rev = pairs["original"].to_numpy(dtype=bool), pairs["reversed"].to_numpy(dtype=bool)
    n_pairs = np.bincount(model, minlength=n_models)
    b = np.bincount(model[orig & ~rev], minlength=n_models)
    c = np.bincount(model[~orig & rev], minlength=n_models)
    p = np.where(n_pairs > 0, exact_mcnemar_p(b, c), np.nan)
    return pd.DataFrame(
        {"model": data.models, "n_pairs": n_pairs, "original_only_correct": b, "reversed_only_correct": c, "p_value": p}
    )
