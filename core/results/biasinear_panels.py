"""The BiasInEar panels: accuracy by level (with the Δ tables), question entropy, Fleiss' κ against APES,
and CS vs CA entropy."""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from spokenbench.core.metrics import mcq
from spokenbench.core.metrics.bootstrap import (
    ColumnBuilder,
)
from spokenbench.core.metrics.responses import McqResponses
from spokenbench.core.results.engine import _Context, _counts, split_rows, wilson
from spokenbench.core.results.model import BOOTSTRAP, PANEL_FACTORS, Z95, Panel, Point, _new_panel


def _accuracy_by_level(ctx: _Context) -> Panel:
    data = ctx.data
    # every factor as (codes, levels, width): a partial factor's empty rows fall in an extra, unshown code
    coded = {f: (data.factor_codes[f], data.factor_levels[f], len(data.factor_levels[f])) for f in data.factors}
    coded.update({f: (codes, levels, len(levels) + 1) for f, (codes, levels) in ctx.partial_factors.items()})
    factors = list(data.factors)
    if ctx.partial_factors:  # the automatic factors (all of PANEL_FACTORS) with the partial ones in their place
        factors = sorted(coded, key=PANEL_FACTORS.index)
    panel = _new_panel("accuracy_by_level", factors, {f: "accuracy (%)" for f in factors})
    if not factors:
        panel.empty = "The responses have no factor with two or more levels (language, accent, gender, order …)."
        return panel
    n_groups = data.n_groups
    columns = ColumnBuilder()
    for f, (codes, _levels, width) in coded.items():
        columns.add(f"n[{f}]", _counts(data.group, codes, n_groups, width))
        columns.add(f"c[{f}]", _counts(data.group, codes, n_groups, width, data.correct))

    def finalize(sums):
        out = {}
        for f, (_codes, levels, _width) in coded.items():
            acc = 100 * columns.get(sums, f"c[{f}]") / columns.get(sums, f"n[{f}]")
            acc = acc.reshape(len(sums), -1)
            for i, level in enumerate(levels):
                out[f"{f}={level}"] = acc[:, i]
            if len(levels) == 2:
                out[f"delta[{f}]"] = acc[:, 0] - acc[:, 1]
        return out

    intervals = ctx.bootstrap(columns, finalize)
    rows_table = []
    for f in factors:
        codes, levels, width = coded[f]
        key = data.model * width + codes
        parts = split_rows(key, len(data.models) * width)
        for m, model in enumerate(data.models):
            for i, level in enumerate(levels):
                rows = parts[m * width + i]
                if len(rows) == 0:
                    continue  # e.g. a text run at the levels of an audio-only factor: no bar
                value = 100 * data.correct[rows].mean()
                low, high = intervals[m].get(f"{f}={level}", (math.nan, math.nan))
                panel.points.append(
                    Point(
                        f,
                        level,
                        model,
                        value,
                        low,
                        high,
                        len(rows),
                        rows=rows,
                        questions_source=ctx.questions(rows),
                        source=ctx.source(model),
                    )
                )
                rows_table.append(
                    {
                        "model": model,
                        "source": ctx.source(model),
                        "factor": f,
                        "level": level,
                        "n": len(rows),
                        "accuracy_pct": value,
                        "ci_low": low,
                        "ci_high": high,
                    }
                )
    panel.tables["accuracy_by_level"] = functools.partial(pd.DataFrame, rows_table)  # built when first needed
    delta_rows = []
    for f in factors:
        if len(coded[f][1]) != 2:
            continue
        a, b = coded[f][1]
        for m, model in enumerate(data.models):
            values = [p.value for p in panel.points if p.facet == f and p.series == model]
            if len(values) != 2:
                continue
            low, high = intervals[m].get(f"delta[{f}]", (math.nan, math.nan))
            delta_rows.append(
                {
                    "model": model,
                    "source": ctx.source(model),
                    "factor": f,
                    "delta": f"{a} − {b}",
                    "delta_pct": values[0] - values[1],
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    panel.tables["delta_by_factor"] = functools.partial(pd.DataFrame, delta_rows)
    for f in data.factors:  # computed when first needed (PanelSet.complete_tables, or on access)
        panel.tables[f"delta_table_{f}"] = functools.partial(_cross_table_with_intervals, data, f, ctx)
    return panel


def _cross_table_with_intervals(data: McqResponses, factor: str, ctx: _Context) -> pd.DataFrame:
    """The paper's Δ-table layout (mcq.accuracy_cross_table) with a Wilson interval per cell and a normal
    interval for the Δ of two independent proportions (analytic: the cells are too many to bootstrap)."""
    table = mcq.accuracy_cross_table(data, factor)
    correct = np.round(table["accuracy_pct"].to_numpy() / 100 * table["n"].to_numpy())
    low, high = wilson(correct, table["n"].to_numpy())
    table.insert(table.columns.get_loc("accuracy_pct") + 1, "ci_low", 100 * low)
    table.insert(table.columns.get_loc("ci_low") + 1, "ci_high", 100 * high)
    delta = [c for c in table.columns if c.startswith("delta_")]
    if delta:
        row_factors = [c for c in table.columns if c not in (factor, "n", "accuracy_pct", "ci_low", "ci_high", *delta)]
        p = table["accuracy_pct"] / 100
        var = p * (1 - p) / table["n"]
        pair_var = var.groupby([table[c] for c in row_factors], sort=False).transform("sum")
        half = 100 * Z95 * np.sqrt(pair_var)
        table[f"{delta[0]}_ci_low"] = table[delta[0]] - half
        table[f"{delta[0]}_ci_high"] = table[delta[0]] + half
    table.insert(1, "source", table["model"].map(ctx.source))
    return table


def _entropy_distribution(ctx: _Context) -> Panel:
    data, metrics = ctx.data, ctx.metrics
    panel = _new_panel("entropy_distribution", ["question entropy"], {"question entropy": "question entropy H_q"})
    groups = split_rows(data.group, data.n_groups)
    questions = np.asarray(data.questions, dtype=object)
    for g in range(data.n_groups):
        value = metrics.entropy[g]
        if math.isnan(value):
            continue
        model = data.models[data.group_model[g]]
        rows = groups[g]
        panel.points.append(
            Point(
                "question entropy",
                "question",
                model,
                float(value),
                n=len(rows),
                rows=rows,
                questions_source=(questions[data.group_question[g]],),
                interval="",
                source=ctx.source(model),
            )
        )
    summary_rows = []
    model_rows = split_rows(data.model, len(data.models))
    for m, model in enumerate(data.models):
        values = metrics.entropy[(data.group_model == m) & ~np.isnan(metrics.entropy)]
        mean_ci = ctx.ci(m, "entropy_mean")
        median, median_ci = _median_with_interval(values)
        q1, q3 = np.quantile(values, [0.25, 0.75]) if len(values) else (math.nan, math.nan)
        for stat, value, (low, high), how in (
            ("mean", float(values.mean()) if len(values) else math.nan, mean_ci, BOOTSTRAP),
            ("median", median, median_ci, "distribution-free order-statistic interval (binomial)"),
        ):
            panel.points.append(
                Point(
                    "summary",
                    stat,
                    model,
                    value,
                    low,
                    high,
                    len(values),
                    unit="questions",
                    rows=model_rows[m],
                    questions_source=ctx.questions(model_rows[m]),
                    interval=how,
                    source=ctx.source(model),
                )
            )
        summary_rows.append(
            {
                "model": model,
                "source": ctx.source(model),
                "n_questions": len(values),
                "entropy_mean": float(values.mean()) if len(values) else math.nan,
                "mean_ci_low": mean_ci[0],
                "mean_ci_high": mean_ci[1],
                "entropy_median": median,
                "median_ci_low": median_ci[0],
                "median_ci_high": median_ci[1],
                "entropy_q1": q1,
                "entropy_q3": q3,
            }
        )
    panel.tables["entropy_summary"] = functools.partial(pd.DataFrame, summary_rows)
    panel.tables["entropy_per_question"] = lambda: mcq.per_question_table(metrics)[
        ["model", "question_id", "n", "accuracy", "entropy"]
    ]
    return panel


def _median_with_interval(values: np.ndarray) -> tuple[float, tuple[float, float]]:
    """The median and its 95% distribution-free interval: order statistics j, k around n/2 (normal
    approximation to the binomial), as in Conover's Practical Nonparametric Statistics."""
    n = len(values)
    if n == 0:
        return math.nan, (math.nan, math.nan)
    ordered = np.sort(values)
    half = Z95 * math.sqrt(n) / 2
    j = max(int(math.floor(n / 2 - half)), 0)
    k = min(int(math.ceil(n / 2 + half)), n - 1)
    return float(np.median(values)), (float(ordered[j]), float(ordered[k]))


def _kappa_vs_apes(ctx: _Context) -> Panel:
    data, summary = ctx.data, ctx.summary
    panel = _new_panel("kappa_vs_apes", ["κ vs APES"], {"κ vs APES": "Fleiss' κ"})
    if not data.factors:
        panel.empty = "The responses have no factor with two or more levels, so there is no κ or APES."
        return panel
    model_rows = split_rows(data.model, len(data.models))
    rows_table = []
    for m, model in enumerate(data.models):
        for f in data.factors:
            apes, kappa = summary[f"apes[{f}]"].iloc[m], summary[f"kappa[{f}]"].iloc[m]
            a_ci, k_ci = ctx.ci(m, f"apes[{f}]"), ctx.ci(m, f"fleiss_kappa[{f}]")
            defined = int(summary[f"kappa_defined[{f}]"].iloc[m])
            if not (math.isnan(apes) or math.isnan(kappa)):
                panel.points.append(
                    Point(
                        "κ vs APES",
                        f,
                        model,
                        float(kappa),
                        k_ci[0],
                        k_ci[1],
                        defined,
                        unit="questions with κ defined",
                        rows=model_rows[m],
                        questions_source=ctx.questions(model_rows[m]),
                        source=ctx.source(model),
                        xvalue=float(apes),
                        xlow=a_ci[0],
                        xhigh=a_ci[1],
                    )
                )
            rows_table.append(
                {
                    "model": model,
                    "source": ctx.source(model),
                    "factor": f,
                    "apes": apes,
                    "apes_ci_low": a_ci[0],
                    "apes_ci_high": a_ci[1],
                    "fleiss_kappa": kappa,
                    "kappa_ci_low": k_ci[0],
                    "kappa_ci_high": k_ci[1],
                    "kappa_questions_defined": defined,
                    "level_entropy": summary[f"level_entropy[{f}]"].iloc[m],
                }
            )
    panel.tables["kappa_apes"] = functools.partial(pd.DataFrame, rows_table)
    return panel


def _entropy_cs_ca(ctx: _Context) -> Panel:
    data, metrics = ctx.data, ctx.metrics
    variables = ["all"] + list(data.factors)
    panel = _new_panel("entropy_cs_ca", variables, {v: "mean entropy" for v in variables})
    label = data.group_cultural_label
    if not ((label == 1).any() and (label == 0).any()):
        panel.empty = "No cultural_label with both CS and CA questions among the selected responses."
        return panel
    series = [("all", metrics.entropy)] + [(f, r.level_entropy) for f, r in metrics.factors.items()]
    columns = ColumnBuilder()
    for name, values in series:
        columns.add_mean(f"cs[{name}]", np.where(label == 1, values, np.nan))
        columns.add_mean(f"ca[{name}]", np.where(label == 0, values, np.nan))

    def finalize(sums):
        out = {}
        for name, _ in series:
            cs, ca = columns.mean(sums, f"cs[{name}]"), columns.mean(sums, f"ca[{name}]")
            out[f"cs[{name}]"], out[f"ca[{name}]"], out[f"delta[{name}]"] = cs, ca, cs - ca
        return out

    intervals = ctx.bootstrap(columns, finalize)
    subset_rows = split_rows(data.model * 2 + np.maximum(data.cultural_label, 0), 2 * len(data.models))
    for i in range(len(subset_rows)):  # unlabelled questions belong to neither subset
        subset_rows[i] = subset_rows[i][data.cultural_label[subset_rows[i]] == i % 2]
    table = mcq.entropy_cs_ca(metrics)
    ci_low, ci_high, d_low, d_high = [], [], [], []
    for row in table.itertuples(index=False):
        m = data.models.index(row.model)
        key = f"{row.question_subset}[{row.variable}]"
        ci_low.append(intervals[m].get(key, (math.nan, math.nan))[0])
        ci_high.append(intervals[m].get(key, (math.nan, math.nan))[1])
        d = intervals[m].get(f"delta[{row.variable}]", (math.nan, math.nan))
        d_low.append(d[0])
        d_high.append(d[1])
        subset_code = 1 if row.question_subset == "cs" else 0
        rows = subset_rows[m * 2 + subset_code]
        panel.points.append(
            Point(
                row.variable,
                row.model,
                row.question_subset.upper(),
                float(row.mean_entropy),
                ci_low[-1],
                ci_high[-1],
                int(row.n_questions),
                unit="questions",
                rows=rows,
                questions_source=ctx.questions(rows),
                source=ctx.source(row.model),
            )
        )
    table = table.assign(ci_low=ci_low, ci_high=ci_high, delta_ci_low=d_low, delta_ci_high=d_high)
    table.insert(1, "source", table["model"].map(ctx.source))
    panel.tables["entropy_cs_ca"] = table
    return panel
