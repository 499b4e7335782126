"""BiasInEar metrics (accuracy, question entropy, level entropy, APES, Fleiss' κ) for every model and
question at once.

Per-question values are kept (one entry per (model, question) group) so that summaries, CS/CA splits and
the question-level bootstrap all start from the same arrays. Parse failures count as incorrect for
accuracy and are left out of entropy, APES and κ, unless `failures_as_category` makes them a category of
their own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from spokenbench.core.metrics.agreement import fleiss_kappa_by_group, mean_pairwise_abs_difference, normalized_entropy
from spokenbench.core.metrics.encoding import combine, compact, representative_row
from spokenbench.core.metrics.responses import McqResponses

if TYPE_CHECKING:
    import pandas as pd

# How Fleiss' κ treats a factor nested in another (accent within language), see docs/metrics.md:
#   "within": leave out of the item key the factors that determine the computed factor (accent when
#             computing language); keep the ones it determines (language when computing accent, so accent
#             agreement is measured within a language, as the reference package does).
#   "across": also leave out the factors the computed factor determines (accent agreement across all
#             accents of all languages).
KAPPA_NESTING_MODES = ("within", "across")


@dataclass
class FactorResult:
    """One factor's per-question values (arrays indexed by group)."""

    factor: str
    kappa_item_factors: list[str]
    level_entropy: np.ndarray  # mean over the factor's levels of H_q^l (Eq. 2)
    apes: np.ndarray  # Eq. 3; NaN with fewer than two levels answered
    kappa: np.ndarray  # Fleiss' κ per question; NaN where undefined
    kappa_items: np.ndarray  # items (with >= 2 ratings) that entered κ
    level_group: np.ndarray  # per (group, level) pair with at least one counted answer
    level_code: np.ndarray
    level_entropy_pairs: np.ndarray


@dataclass
class McqMetrics:
    data: McqResponses
    failures_as_category: bool
    kappa_nesting: str
    group_rows: np.ndarray
    group_correct: np.ndarray
    group_failures: np.ndarray
    entropy: np.ndarray  # H_q per group (Eq. 1); NaN if every answer failed
    factors: dict[str, FactorResult]

    @property
    def models(self) -> list[str]:
        return self.data.models


def compute_mcq_metrics(
    data: McqResponses,
    failures_as_category: bool = False,
    kappa_nesting: str = "within",
    factors: list[str] | None = None,
) -> McqMetrics:
    """`factors`: the factors to compute results for (default: all of `data.factors`); each factor's result
    is the same either way (κ items still come from all of `data.factors`)."""
    if kappa_nesting not in KAPPA_NESTING_MODES:
        raise ValueError(f"kappa_nesting must be one of {KAPPA_NESTING_MODES}")
    n_groups = data.n_groups
    category, used, n_categories, base = answer_categories(data, failures_as_category)
    group_rows = np.bincount(data.group, minlength=n_groups)
    group_correct = np.bincount(data.group, weights=data.correct, minlength=n_groups)
    group_failures = np.bincount(data.group, weights=~data.valid, minlength=n_groups)

    g_used, c_used = data.group[used], category[used]
    counts = np.bincount(g_used * n_categories + c_used, minlength=n_groups * n_categories).reshape(
        n_groups, n_categories
    )
    entropy = normalized_entropy(counts, base[np.arange(n_groups)] if np.ndim(base) else base)

    factors = {
        f: _factor_result(data, f, category, used, n_categories, base, kappa_nesting)
        for f in (data.factors if factors is None else factors)
    }
    return McqMetrics(
        data=data,
        failures_as_category=failures_as_category,
        kappa_nesting=kappa_nesting,
        group_rows=group_rows,
        group_correct=group_correct,
        group_failures=group_failures,
        entropy=entropy,
        factors=factors,
    )


def answer_categories(data: McqResponses, failures_as_category: bool):
    """Category per row (original option code; failures -> an extra code when counted), which rows count,
    the number of categories, and the entropy log base per group (number of options, +1 with failures)."""
    if failures_as_category:
        category = np.where(data.valid, data.chosen, data.max_options)
        used = np.ones(data.n_rows, dtype=bool)
        return category, used, data.max_options + 1, data.group_n_options + 1
    return data.chosen, data.valid, data.max_options, data.group_n_options


def kappa_item_factors(data: McqResponses, factor: str, nesting: str = "within") -> list[str]:
    """The other factors that form Fleiss' κ items for `factor` (see KAPPA_NESTING_MODES)."""
    keep = []
    for other in data.factors:
        if other == factor:
            continue
        if data.factor_determines(other, factor):
            continue
        if nesting == "across" and data.factor_determines(factor, other):
            continue
        keep.append(other)
    return keep


def _factor_result(data: McqResponses, factor: str, category, used, n_categories, base, nesting) -> FactorResult:
    n_groups = data.n_groups
    level = data.factor_codes[factor]

    rows = np.flatnonzero(used)  # the counted rows, each array taken once (issue 28, round 7)
    group, level_code, answer = data.group[rows], level[rows], category[rows]

    # level entropy (Eq. 2) and APES (Eq. 3)
    pair, n_pairs = combine(group, level_code)
    first = representative_row(pair, n_pairs)
    pair_group = group[first]
    pair_level = level_code[first]
    counts = np.bincount(pair * n_categories + answer, minlength=n_pairs * n_categories).reshape(n_pairs, n_categories)
    h_pairs = normalized_entropy(counts, base[pair_group])
    n_levels = np.bincount(pair_group, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        level_entropy = np.bincount(pair_group, weights=h_pairs, minlength=n_groups) / n_levels
    apes, _ = mean_pairwise_abs_difference(h_pairs, pair_group, n_groups)

    # Fleiss' κ (Appendix C.4): items = combinations of the other factors, ratings = modal answer per level
    item_factors = kappa_item_factors(data, factor, nesting)
    item_row, _ = combine(group, *[data.factor_codes[f][rows] for f in item_factors])
    cell_row, n_cells = combine(item_row, level_code)
    cell_counts = np.bincount(cell_row * n_categories + answer, minlength=n_cells * n_categories).reshape(
        n_cells, n_categories
    )
    modal = cell_counts.argmax(axis=1)  # first maximum = alphabetically first letter on ties
    cell_first = representative_row(cell_row, n_cells)
    cell_item = item_row[cell_first]
    item_index, n_items = compact(cell_item, int(cell_item.max()) + 1 if len(cell_item) else 1)
    item_counts = np.bincount(item_index * n_categories + modal, minlength=n_items * n_categories)
    item_counts = item_counts.reshape(n_items, n_categories)
    item_first_cell = representative_row(item_index, n_items)
    item_group = group[cell_first][item_first_cell]
    kappa, kappa_items = fleiss_kappa_by_group(item_group, item_counts, n_groups)

    return FactorResult(
        factor=factor,
        kappa_item_factors=item_factors,
        level_entropy=level_entropy,
        apes=apes,
        kappa=kappa,
        kappa_items=kappa_items,
        level_group=pair_group,
        level_code=pair_level,
        level_entropy_pairs=h_pairs,
    )


# ---------------------------------------------------------------- per-model summaries


def mean_by_model(
    metrics: McqMetrics, values: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Mean over a model's questions of a per-group value, skipping NaN; and how many questions counted."""
    return _mean_by_key(values, metrics.data.group_model, len(metrics.data.models), mask)


def _mean_by_key(
    values: np.ndarray, key: np.ndarray, n_keys: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per key of the groups (0..n_keys-1): the mean of the defined (not NaN, in `mask`) values, and how many."""
    defined = ~np.isnan(values)
    if mask is not None:
        defined &= mask
    count = np.bincount(key[defined], minlength=n_keys)
    total = np.bincount(key[defined], weights=values[defined], minlength=n_keys)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan), count


def quantiles_by_model(metrics: McqMetrics, values: np.ndarray, qs=(0.25, 0.5, 0.75)) -> np.ndarray:
    """Quantiles of a per-group value per model, NaN left out; shape (models, len(qs)), NaN for a model without
    values. Linear interpolation between the sorted values in the floating-point steps of pandas' groupby
    quantile (v[i] + (v[i+1] - v[i]) * frac, i = int(q (n - 1))), so the numbers are the ones it gave."""
    n_models = len(metrics.data.models)
    defined = ~np.isnan(values)
    model, value = metrics.data.group_model[defined], values[defined]
    order = np.lexsort((value, model))
    model, value = model[order], value[order]
    count = np.bincount(model, minlength=n_models)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    out = np.full((n_models, len(qs)), np.nan)
    has = count > 0
    for j, q in enumerate(qs):
        position = q * (count[has] - 1).astype(float)
        index = position.astype(np.int64)
        frac = position % 1
        low = value[start[has] + index]
        high = value[start[has] + np.minimum(index + 1, count[has] - 1)]
        out[has, j] = np.where(frac == 0.0, low, low + (high - low) * frac)
    return out


def model_summary(metrics: McqMetrics) -> pd.DataFrame:
    """`model_summary_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(model_summary_columns(metrics))


def model_summary_columns(metrics: McqMetrics) -> dict:
    """One row per model: counts, accuracy, failure rate, entropy statistics, CS/CA entropy, and per
    factor level entropy, APES and κ (with the number of questions where κ was defined / not); as columns."""
    data = metrics.data
    n_models = len(data.models)
    gm = data.group_model
    rows = np.bincount(gm, weights=metrics.group_rows, minlength=n_models)
    correct = np.bincount(gm, weights=metrics.group_correct, minlength=n_models)
    failures = np.bincount(gm, weights=metrics.group_failures, minlength=n_models)
    questions = np.bincount(gm, minlength=n_models)
    out = {
        "model": data.models,
        "n": rows.astype(int),
        "n_questions": questions,
        "accuracy": correct / rows,
        "parse_failure_rate": failures / rows,
    }
    out["entropy_mean"], _ = mean_by_model(metrics, metrics.entropy)
    q = quantiles_by_model(metrics, metrics.entropy)
    out["entropy_median"] = q[:, 1]
    out["entropy_iqr"] = q[:, 2] - q[:, 0]
    if (data.group_cultural_label >= 0).any():
        out["entropy_mean_cs"], _ = mean_by_model(metrics, metrics.entropy, data.group_cultural_label == 1)
        out["entropy_mean_ca"], _ = mean_by_model(metrics, metrics.entropy, data.group_cultural_label == 0)
    for f, result in metrics.factors.items():
        out[f"level_entropy[{f}]"], _ = mean_by_model(metrics, result.level_entropy)
        out[f"apes[{f}]"], _ = mean_by_model(metrics, result.apes)
        out[f"kappa[{f}]"], defined = mean_by_model(metrics, result.kappa)
        out[f"kappa_defined[{f}]"] = defined
        out[f"kappa_undefined[{f}]"] = questions - defined
    return out


def accuracy_by(data: McqResponses, by: list[str]) -> pd.DataFrame:
    """`accuracy_by_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(accuracy_by_columns(data, by))


def accuracy_by_columns(data: McqResponses, by: list[str]) -> dict:
    """Accuracy per model and combination of the factors in `by` (only combinations that occur), as columns:
    model, each factor, n, accuracy, parse_failure_rate."""
    codes = [data.model] + [data.factor_codes[f] for f in by]
    key, n_keys = combine(*codes)
    first = representative_row(key, n_keys)
    n = np.bincount(key, minlength=n_keys)
    correct = np.bincount(key, weights=data.correct, minlength=n_keys)
    failures = np.bincount(key, weights=~data.valid, minlength=n_keys)
    out = {"model": np.asarray(data.models, dtype=object)[data.model[first]]}
    for f in by:
        out[f] = np.asarray(data.factor_levels[f], dtype=object)[data.factor_codes[f][first]]
    out.update({"n": n, "accuracy": correct / n, "parse_failure_rate": failures / n})
    return out


def accuracy_cross_table(data: McqResponses, column_factor: str) -> pd.DataFrame:
    """`accuracy_cross_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(accuracy_cross_columns(data, column_factor))


def accuracy_cross_columns(data: McqResponses, column_factor: str) -> dict:
    """BiasInEar Tables 6 and 11-20 in long form: accuracy (%) per model × the other factors × the levels
    of `column_factor`, sorted by those columns' texts; with two levels a Δ column (first − second level, in
    sorted level order) repeated on both rows of the pair, as the published CSVs do. Factors that determine
    the column factor (accent for language) are averaged over instead of becoming rows."""
    row_factors = [f for f in data.factors if f != column_factor and not data.factor_determines(f, column_factor)]
    table = accuracy_by_columns(data, row_factors + [column_factor])
    keys = ["model"] + row_factors
    order = text_order([table[c] for c in keys + [column_factor]])
    out = {c: np.asarray(table[c])[order] for c in [*keys, column_factor, "n"]}
    out["accuracy_pct"] = 100 * table["accuracy"][order]
    levels = data.factor_levels[column_factor]
    level = out[column_factor]
    if len(levels) == 2 and all((level == v).any() for v in levels):
        a, b = levels
        row_key, n_keys = combine(*(np.unique(out[c], return_inverse=True)[1] for c in keys))
        pct = {}
        for v in levels:  # each (model, row factors) key's accuracy at level v, NaN where it has none
            pct[v] = np.full(n_keys, np.nan)
            pct[v][row_key[level == v]] = out["accuracy_pct"][level == v]
        out[f"delta_{a}_minus_{b}_pct"] = (pct[a] - pct[b])[row_key]
    return out


def text_order(columns: list) -> np.ndarray:
    """The stable order of rows sorted by these columns (first column first), each by its values (texts in
    Python's order), as pandas' sort_values(kind="stable") gives."""
    return np.lexsort([np.unique(np.asarray(c), return_inverse=True)[1] for c in reversed(columns)])


def level_entropy_by_level(metrics: McqMetrics) -> pd.DataFrame:
    """`level_entropy_by_level_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(level_entropy_by_level_columns(metrics))


def level_entropy_by_level_columns(metrics: McqMetrics) -> dict:
    """Mean over questions of H_q^l for every factor level (BiasInEar Table 22 for the order factor)."""
    data = metrics.data
    parts = []
    for f, result in metrics.factors.items():
        model = data.group_model[result.level_group]
        key = model * len(data.factor_levels[f]) + result.level_code
        defined = ~np.isnan(result.level_entropy_pairs)
        size = len(data.models) * len(data.factor_levels[f])
        count = np.bincount(key[defined], minlength=size)
        total = np.bincount(key[defined], weights=result.level_entropy_pairs[defined], minlength=size)
        present = np.flatnonzero(count > 0)
        parts.append(
            {
                "model": np.asarray(data.models, dtype=object)[present // len(data.factor_levels[f])],
                "variable": np.full(len(present), f, dtype=object),
                "level": np.asarray(data.factor_levels[f], dtype=object)[present % len(data.factor_levels[f])],
                "n_questions": count[present],
                "mean_entropy": total[present] / count[present],
            }
        )
    return concatenated(parts, ["model", "variable", "level", "n_questions", "mean_entropy"])


def concatenated(parts: list[dict], columns: list[str]) -> dict:
    """Tables of the same columns one after the other (pd.concat(ignore_index=True)); no part: no rows."""
    if not parts:
        return {c: np.empty(0, dtype=object) for c in columns}
    return {c: np.concatenate([part[c] for part in parts]) for c in parts[0]}


def entropy_cs_ca(metrics: McqMetrics) -> pd.DataFrame:
    """`entropy_cs_ca_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(entropy_cs_ca_columns(metrics))


def entropy_cs_ca_columns(metrics: McqMetrics) -> dict:
    """BiasInEar Table 5 / Fig. 3: mean entropy of culturally sensitive vs agnostic questions, for the
    question entropy ('all') and the level entropy of each factor; Δ = CS − CA. Sorted by model and variable,
    CS before CA."""
    data = metrics.data
    columns = ["model", "variable", "question_subset", "n_questions", "mean_entropy", "delta_cs_minus_ca"]
    if not (data.group_cultural_label >= 0).any():
        return concatenated([], columns)
    series = [("all", metrics.entropy)] + [(f, r.level_entropy) for f, r in metrics.factors.items()]
    n_models = len(data.models)
    parts = []
    for name, values in series:
        cs, n_cs = mean_by_model(metrics, values, data.group_cultural_label == 1)
        ca, n_ca = mean_by_model(metrics, values, data.group_cultural_label == 0)
        for subset, mean, n in (("cs", cs, n_cs), ("ca", ca, n_ca)):
            parts.append(
                {
                    "model": np.asarray(data.models, dtype=object),
                    "variable": np.full(n_models, name, dtype=object),
                    "question_subset": np.full(n_models, subset, dtype=object),
                    "n_questions": n,
                    "mean_entropy": mean,
                    "delta_cs_minus_ca": cs - ca,
                }
            )
    out = concatenated(parts, columns)
    cs_first = np.where(out["question_subset"] == "cs", 0, 1)
    order = np.lexsort([cs_first, *(np.unique(out[c], return_inverse=True)[1] for c in ("variable", "model"))])
    return {c: values[order] for c, values in out.items()}


def apes_by_stratum(metrics: McqMetrics) -> pd.DataFrame:
    """`apes_by_stratum_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(apes_by_stratum_columns(metrics))


def apes_by_stratum_columns(metrics: McqMetrics) -> dict:
    """APES of each factor recomputed within each level of each other factor that is not nested with it
    (BiasInEar Table 21: APES of language/accent/gender under original vs reversed order, with its Δ = Rev − Ori:
    `delta_rev_minus_orig`, on the order stratum's rows of a model and factor that has both levels)."""
    data = metrics.data
    n_models = len(data.models)
    parts = []
    for stratum in data.factors:
        varying = [
            f
            for f in data.factors
            if f != stratum and not data.factor_determines(f, stratum) and not data.factor_determines(stratum, f)
        ]
        if not varying:
            continue
        levels = data.factor_levels[stratum]
        stratified, group_level = _stratified(data, stratum)
        category, used, n_categories, base = answer_categories(stratified, metrics.failures_as_category)
        model_in_level = group_level * n_models + stratified.group_model  # per (level, model), models fastest
        means = {}
        for f in varying:
            result = _factor_result(stratified, f, category, used, n_categories, base, metrics.kappa_nesting)
            means[f] = [
                _mean_by_key(values, model_in_level, len(levels) * n_models) for values in (result.apes, result.kappa)
            ]
        for level_code, level in enumerate(levels):
            models = slice(level_code * n_models, (level_code + 1) * n_models)
            for f, ((apes, n), (kappa, _)) in means.items():
                parts.append(
                    {
                        "model": np.asarray(data.models, dtype=object),
                        "variable": np.full(n_models, f, dtype=object),
                        "stratum_factor": np.full(n_models, stratum, dtype=object),
                        "stratum_level": np.full(n_models, level, dtype=object),
                        "n_questions": n[models],
                        "apes": apes[models],
                        "fleiss_kappa": kappa[models],
                    }
                )
    columns = ["model", "variable", "stratum_factor", "stratum_level", "n_questions", "apes", "fleiss_kappa"]
    out = concatenated(parts, columns)
    if not parts:
        return out | {"delta_rev_minus_orig": np.empty(0, dtype=object)}
    order_apes = {}  # (model, variable, level) -> APES in the order stratum
    for model, variable, factor, level, apes in zip(
        out["model"], out["variable"], out["stratum_factor"], out["stratum_level"], out["apes"].tolist()
    ):
        if factor == "order":
            order_apes[(model, variable, level)] = apes
    out["delta_rev_minus_orig"] = np.array(
        [
            order_apes.get((model, variable, "reversed"), np.nan)
            - order_apes.get((model, variable, "original"), np.nan)
            if factor == "order"
            else np.nan
            for model, variable, factor in zip(out["model"], out["variable"], out["stratum_factor"])
        ],
        dtype=float,
    )
    return out


def per_question_table(metrics: McqMetrics) -> pd.DataFrame:
    """`per_question_columns` as a DataFrame."""
    import pandas as pd

    return pd.DataFrame(per_question_columns(metrics))


def per_question_columns(metrics: McqMetrics) -> dict:
    """Every per-question value, one row per (model, question), sorted by model and question id."""
    data = metrics.data
    out = {
        "model": np.asarray(data.models, dtype=object)[data.group_model],
        "question_id": np.asarray(data.questions, dtype=object)[data.group_question],
    }
    if (data.group_cultural_label >= 0).any():
        out["cultural_label"] = np.array(["", "CA", "CS"], dtype=object)[data.group_cultural_label + 1]
    out |= {
        "n": metrics.group_rows,
        "accuracy": metrics.group_correct / metrics.group_rows,
        "parse_failures": metrics.group_failures.astype(int),
        "entropy": metrics.entropy,
    }
    for f, result in metrics.factors.items():
        out[f"level_entropy[{f}]"] = result.level_entropy
        out[f"apes[{f}]"] = result.apes
        out[f"kappa[{f}]"] = result.kappa
    order = text_order([out["model"], out["question_id"]])
    return {c: values[order] for c, values in out.items()}


def _stratified(data: McqResponses, stratum: str) -> tuple[McqResponses, np.ndarray]:
    """All rows regrouped by (level of `stratum`, model, question), and each group's level: each level's groups are
    the ones of the table restricted to that level's rows, in the same order, so a factor's per-group values
    computed once here are those computed on each level's rows apart, with the same numbers (issue 28, round 7:
    one pass per stratum instead of one per level, and no copy of the rows). `dependencies` stay the full
    table's: a stratum cannot make unrelated factors look nested."""
    from dataclasses import replace

    level = data.factor_codes[stratum]
    group, n_groups = combine(level, data.model, data.question)
    first = representative_row(group, n_groups)
    stratified = replace(
        data,
        group=group,
        group_model=data.model[first],
        group_question=data.question[first],
        group_n_options=data.n_options[first],
        group_cultural_label=data.cultural_label[first],
    )
    return stratified, level[first]
