"""The Hearing the Order panels: accuracy by gold position (RSD, CKLD), permutation voting, ranking changes
and McNemar original vs reversed."""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd

from spokenbench.core.metrics.bootstrap import (
    CONFIDENCE,
    ColumnBuilder,
)
from spokenbench.core.metrics.selection_bias import (
    ckld_from_counts,
    rsd_from_counts,
)
from spokenbench.core.results.engine import _Context, _counts, split_rows, wilson
from spokenbench.core.results.model import BOOTSTRAP, Z95, Panel, Point, _fmt, _new_panel


def _gold_position(ctx: _Context) -> Panel:
    data, selection = ctx.data, ctx.selection
    facets = ["Δ accuracy vs original", "RSD", "CKLD"]
    panel = _new_panel(
        "gold_position",
        facets,
        {facets[0]: "Δ accuracy (percentage points)", "RSD": "RSD (lower = less biased)", "CKLD": "CKLD"},
    )
    k = data.max_options
    n_groups = data.n_groups
    comparison = selection.presentation.gold_setting  # the rows of the gold-at-p settings (engine's rule)
    identity = selection.presentation.original
    if not identity.any():
        panel.empty = "No responses in the original option order to compare against."
        return panel
    columns = ColumnBuilder()
    columns.add("pos_n", _counts(data.group[comparison], data.gold_position[comparison], n_groups, k))
    both = comparison & data.correct
    columns.add("pos_c", _counts(data.group[both], data.gold_position[both], n_groups, k))
    columns.add("orig_n", np.bincount(data.group[identity], minlength=n_groups))
    columns.add("orig_c", np.bincount(data.group[identity & data.correct], minlength=n_groups))

    def finalize(sums):
        pos = columns.get(sums, "pos_c").reshape(len(sums), k) / columns.get(sums, "pos_n").reshape(len(sums), k)
        orig = columns.get(sums, "orig_c") / columns.get(sums, "orig_n")
        delta = 100 * (pos - orig[:, None])
        return {f"delta[{i}]": delta[:, i] for i in range(k)}

    intervals = ctx.bootstrap(columns, finalize)
    per_model = selection.per_model
    key = data.model * k + data.gold_position
    parts = split_rows(key, len(data.models) * k)
    model_rows = split_rows(data.model, len(data.models))
    rows_table = []
    for m, model in enumerate(data.models):
        row = per_model.iloc[m]
        for i, letter in enumerate(selection.positions):
            value = 100 * row[f"delta_accuracy_gold_{letter}"]
            rows = parts[m * k + i]
            rows = rows[comparison[rows] | identity[rows]]
            low, high = intervals[m].get(f"delta[{i}]", (math.nan, math.nan))
            if not math.isnan(value):
                panel.points.append(
                    Point(
                        facets[0],
                        letter,
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
                    "gold_position": letter,
                    "accuracy_pct": 100 * row[f"accuracy_gold_{letter}"],
                    "delta_accuracy_pp": value,
                    "delta_ci_low": low,
                    "delta_ci_high": high,
                    "predicted_share": row[f"predicted_share_{letter}"],
                    "gold_share": row[f"gold_share_{letter}"],
                }
            )
        for metric, name in (("rsd", "RSD"), ("ckld", "CKLD")):
            low, high = ctx.ci(m, metric)
            panel.points.append(
                Point(
                    name,
                    model,
                    model,
                    float(row[metric]),
                    low,
                    high,
                    len(model_rows[m]),
                    rows=model_rows[m],
                    questions_source=ctx.questions(model_rows[m]),
                    interval=ctx.interval_text(m, metric),
                    source=ctx.source(model),
                )
            )
    panel.tables["gold_position"] = functools.partial(pd.DataFrame, rows_table)

    def rsd_ckld() -> pd.DataFrame:
        bias = per_model[["model", "rsd", "ckld"]].copy()
        bias.insert(1, "source", bias["model"].map(ctx.source))
        for m_key in ("rsd", "ckld"):
            at = bias.columns.get_loc(m_key) + 1
            bias.insert(at, f"{m_key}_ci_low", [ctx.ci(m, m_key)[0] for m in range(len(data.models))])
            bias.insert(at + 1, f"{m_key}_ci_high", [ctx.ci(m, m_key)[1] for m in range(len(data.models))])
        bias["ckld_infinite_resamples"] = [ctx.infinite_share(m, "ckld") for m in range(len(data.models))]
        return bias

    panel.tables["rsd_ckld"] = rsd_ckld
    return panel


def _permutation_voting(ctx: _Context) -> Panel:
    data, selection = ctx.data, ctx.selection
    facets = ["accuracy", "RSD", "CKLD"]
    panel = _new_panel("permutation_voting", facets, {"accuracy": "accuracy (%)", "RSD": "RSD", "CKLD": "CKLD"})
    k = data.max_options
    counts = ctx.votes
    columns = ColumnBuilder()
    for setting, parts in counts.items():
        for name, values in parts.items():
            columns.add(f"{setting}.{name}", values)

    def finalize(sums):
        out = {}
        r = len(sums)
        for setting in counts:
            gold = columns.get(sums, f"{setting}.gold").reshape(r, k)
            correct = columns.get(sums, f"{setting}.correct").reshape(r, k)
            voted = columns.get(sums, f"{setting}.voted").reshape(r, k)
            out[f"{setting}.accuracy"] = 100 * correct.sum(axis=1) / gold.sum(axis=1)
            out[f"{setting}.rsd"] = rsd_from_counts(correct, gold)
            out[f"{setting}.ckld"] = ckld_from_counts(voted, gold)
        return out

    intervals = ctx.bootstrap(columns, finalize)
    voting = selection.voting.copy()
    voting["accuracy_pct"] = 100 * voting["accuracy"]
    model_rows = split_rows(data.model, len(data.models))
    rows_by_setting = {
        "original": selection.presentation.original,
        "cyclic": selection.presentation.cyclic,
        "full": np.ones(data.n_rows, dtype=bool),
    }
    extra = {f"{c}_ci_{s}": [] for c in ("accuracy", "rsd", "ckld") for s in ("low", "high")}
    extra["ckld_infinite_resamples"] = []  # the share of resamples where CKLD was infinite (`ckld_interval`)
    for row in voting.itertuples(index=False):
        m = data.models.index(row.model)
        rows = model_rows[m][rows_by_setting[row.permutation][model_rows[m]]]
        for metric, facet, value in (
            ("accuracy", "accuracy", row.accuracy_pct),
            ("rsd", "RSD", row.rsd),
            ("ckld", "CKLD", row.ckld),
        ):
            key = f"{row.permutation}.{metric}"
            low, high = intervals[m].get(key, (math.nan, math.nan))
            extra[f"{metric}_ci_low"].append(low)
            extra[f"{metric}_ci_high"].append(high)
            if metric == "ckld":
                extra["ckld_infinite_resamples"].append(ctx.infinite_share(m, key))
            if not math.isnan(value):
                panel.points.append(
                    Point(
                        facet,
                        row.model,
                        row.permutation,
                        float(value),
                        low,
                        high,
                        len(rows),
                        rows=rows,
                        questions_source=ctx.questions(rows),
                        interval=ctx.interval_text(m, key),
                        source=ctx.source(row.model),
                    )
                )

    def voting_table() -> pd.DataFrame:
        table = voting.drop(columns=["accuracy"]).assign(**extra)
        table.insert(1, "source", table["model"].map(ctx.source))
        return table

    panel.tables["permutation_voting"] = voting_table
    return panel


def _ranking_changes(ctx: _Context) -> Panel:
    """Ranks per setting with intervals from one joint question-level bootstrap of all models (a rank depends
    on every model's accuracy in the same resample), and Kendall's τ-b against the original from the same
    resamples."""
    data, selection = ctx.data, ctx.selection
    panel = _new_panel("ranking_changes", ["rank"], {"rank": "rank by accuracy (1 = best)"})
    ranking = selection.ranking
    settings = list(dict.fromkeys(ranking["setting"]))
    n_models, n_q = len(data.models), len(data.questions)
    if n_models < 2:
        panel.empty = "Rankings need two or more models (select more runs)."
        return panel
    comparison = selection.presentation.gold_setting
    num = np.zeros((n_q, n_models, len(settings)))
    den = np.zeros_like(num)
    gq, gm = data.group_question, data.group_model

    def add(s, n_per_group, c_per_group):  # one group per (question, model): plain assignment
        den[gq, gm, s] = n_per_group
        num[gq, gm, s] = c_per_group

    n_groups = data.n_groups
    votes = ctx.votes
    for s, name in enumerate(settings):
        if name == "original":
            rows = selection.presentation.original
        elif name.startswith("gold_at_"):
            i = selection.positions.index(name.removeprefix("gold_at_"))
            rows = comparison & (data.gold_position == i)
        else:
            v = votes[name.removesuffix("_vote")]
            add(s, v["gold"].sum(axis=1), v["correct"].sum(axis=1))
            continue
        add(
            s,
            np.bincount(data.group[rows], minlength=n_groups),
            np.bincount(data.group[rows & data.correct], minlength=n_groups),
        )
    point = ranking.pivot(index="model", columns="setting", values="rank").reindex(index=data.models, columns=settings)
    low = np.full((n_models, len(settings)), np.nan)
    high = np.full_like(low, np.nan)
    tau_ci = {}
    if ctx.n_resamples:
        chunks = []
        for weights in ctx.weight_chunks():  # the same resamples as every other interval
            with np.errstate(invalid="ignore", divide="ignore"):
                chunks.append((weights @ num.reshape(n_q, -1)) / (weights @ den.reshape(n_q, -1)))
        acc = np.concatenate(chunks)
        acc = acc.reshape(ctx.n_resamples, n_models, len(settings))
        ranks = _min_ranks_descending(acc)
        tail = 100 * (1 - CONFIDENCE) / 2
        ranked = ~np.isnan(ranks).all(axis=0)  # a model without a setting's rows has no rank in any resample:
        # left NaN here, since nanpercentile would warn "All-NaN slice" on the user's stderr for the same NaN
        low[ranked] = np.nanpercentile(ranks[:, ranked], tail, axis=0, method="nearest")  # whole numbers
        high[ranked] = np.nanpercentile(ranks[:, ranked], 100 - tail, axis=0, method="nearest")
        for s, name in enumerate(settings):
            if name == "original":
                continue
            taus = _kendall_tau_b(acc[:, :, 0], acc[:, :, s])
            taus = taus[~np.isnan(taus)]
            tau_ci[name] = tuple(np.percentile(taus, [tail, 100 - tail])) if len(taus) else (math.nan, math.nan)
    tau_notes = {}
    for row in selection.kendall_tau.itertuples(index=False):
        low_tau, high_tau = tau_ci.get(row.setting, (math.nan, math.nan))
        tau_notes[row.setting] = (
            f"Kendall's τ-b of this setting's accuracies vs the original: {_fmt(row.kendall_tau)} "
            f"(95% CI [{_fmt(low_tau)}, {_fmt(high_tau)}], p = {_fmt(row.p_value)})"
        )
    model_rows = split_rows(data.model, len(data.models))
    for m, model in enumerate(data.models):
        for s, name in enumerate(settings):
            value = point.iloc[m, s]
            if math.isnan(value):
                continue
            panel.points.append(
                Point(
                    "rank",
                    name,
                    model,
                    float(value),
                    float(low[m, s]),
                    float(high[m, s]),
                    len(model_rows[m]),
                    rows=model_rows[m],
                    questions_source=ctx.questions(model_rows[m]),
                    interval=BOOTSTRAP + " (joint over models, ranks per resample)",
                    note=tau_notes.get(name, ""),
                    source=ctx.source(model),
                )
            )

    def ranking_table() -> pd.DataFrame:
        table = ranking.copy()
        table["accuracy_pct"] = 100 * table["accuracy"]
        table = table.drop(columns=["accuracy"])
        index = {(m, s): (i, j) for i, m in enumerate(data.models) for j, s in enumerate(settings)}
        table["rank_ci_low"] = [low[index[(r.model, r.setting)]] for r in table.itertuples()]
        table["rank_ci_high"] = [high[index[(r.model, r.setting)]] for r in table.itertuples()]
        table.insert(1, "source", table["model"].map(ctx.source))
        return table

    def tau_table() -> pd.DataFrame:
        tau = selection.kendall_tau.copy()
        tau["tau_ci_low"] = [tau_ci.get(s, (math.nan, math.nan))[0] for s in tau["setting"]]
        tau["tau_ci_high"] = [tau_ci.get(s, (math.nan, math.nan))[1] for s in tau["setting"]]
        return tau

    panel.tables["ranking"] = ranking_table
    panel.tables["kendall_tau"] = tau_table
    return panel


def _min_ranks_descending(acc: np.ndarray) -> np.ndarray:
    """Rank along axis 1 (models), 1 = highest, ties share the best rank, NaN stays NaN (pandas' 'min')."""
    greater = (acc[:, None, :, :] > acc[:, :, None, :]).sum(axis=2)  # how many models beat each one
    return np.where(np.isnan(acc), np.nan, greater + 1.0)


def _kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between the columns of x and y for each row (resample), over models defined in both."""
    ok = ~np.isnan(x) & ~np.isnan(y)
    dx = np.sign(x[:, :, None] - x[:, None, :])
    dy = np.sign(y[:, :, None] - y[:, None, :])
    pair = ok[:, :, None] & ok[:, None, :]
    upper = np.triu(np.ones(dx.shape[1:], dtype=bool), 1)
    pair &= upper
    dx, dy = np.where(pair, dx, 0), np.where(pair, dy, 0)
    concord = (dx * dy).sum(axis=(1, 2))
    denom = np.sqrt((dx != 0).sum(axis=(1, 2)) * (dy != 0).sum(axis=(1, 2)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, concord / denom, np.nan)


def _mcnemar(ctx: _Context) -> Panel:
    data, selection = ctx.data, ctx.selection
    facets = ["accuracy on pairs", "Δ original − reversed"]
    panel = _new_panel("mcnemar", facets, {facets[0]: "accuracy (%)", facets[1]: "Δ accuracy (percentage points)"})
    shown = selection.presentation
    if not (shown.original.any() and shown.reversed.any()):
        panel.empty = "McNemar needs the same questions in the original and the exactly reversed option order."
        return panel
    units = ctx.units
    frames = []
    for flag, name in ((shown.original, "original"), (shown.reversed, "reversed")):
        rows = np.flatnonzero(flag)
        frame = pd.DataFrame({"unit": units[rows], f"row_{name}": rows})
        frame["repeat"] = frame.groupby("unit").cumcount()
        frames.append(frame)
    pairs = frames[0].merge(frames[1], on=["unit", "repeat"], how="inner")
    orig_rows = pairs["row_original"].to_numpy(dtype=np.int64)
    rev_rows = pairs["row_reversed"].to_numpy(dtype=np.int64)
    model = data.model[orig_rows]
    orig, rev = data.correct[orig_rows], data.correct[rev_rows]
    table = selection.mcnemar.copy()
    p_values = table["p_value"].to_numpy(dtype=float)
    acc_o, acc_r, delta, d_low, d_high, o_ci, r_ci = [], [], [], [], [], [], []
    for m, name in enumerate(data.models):
        mine = model == m
        n = int(mine.sum())
        b = int((orig & ~rev & mine).sum())
        c = int((~orig & rev & mine).sum())
        pair_rows = np.concatenate([orig_rows[mine], rev_rows[mine]])
        discordant = np.concatenate([orig_rows[mine & (orig != rev)], rev_rows[mine & (orig != rev)]])
        if n == 0:
            for target in (acc_o, acc_r, delta, d_low, d_high):
                target.append(math.nan)
            o_ci.append((math.nan, math.nan))
            r_ci.append((math.nan, math.nan))
            continue
        po, pr = orig[mine].mean(), rev[mine].mean()
        d = (b - c) / n
        se = math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n
        lo_o, hi_o = wilson(np.array([orig[mine].sum()]), np.array([n]))
        lo_r, hi_r = wilson(np.array([rev[mine].sum()]), np.array([n]))
        acc_o.append(100 * po)
        acc_r.append(100 * pr)
        delta.append(100 * d)
        d_low.append(100 * (d - Z95 * se))
        d_high.append(100 * (d + Z95 * se))
        o_ci.append((100 * lo_o[0], 100 * hi_o[0]))
        r_ci.append((100 * lo_r[0], 100 * hi_r[0]))
        for setting, value, (low, high) in (("original", acc_o[-1], o_ci[-1]), ("reversed", acc_r[-1], r_ci[-1])):
            panel.points.append(
                Point(
                    facets[0],
                    name,
                    setting,
                    value,
                    low,
                    high,
                    n,
                    unit="pairs",
                    rows=pair_rows,
                    questions_source=ctx.questions(pair_rows),
                    interval="Wilson score interval",
                    source=ctx.source(name),
                )
            )
        panel.points.append(
            Point(
                facets[1],
                name,
                "original − reversed",
                delta[-1],
                d_low[-1],
                d_high[-1],
                b + c,
                unit="discordant pairs (both answers listed)",
                rows=discordant,
                questions_source=ctx.questions(discordant),
                interval="paired (McNemar) normal interval for the difference of proportions",
                source=ctx.source(name),
                note=f"exact McNemar p = {p_values[m]:.3g}: {b} pairs right only in the original order, {c} only "
                "reversed",
            )
        )

    def mcnemar_table() -> pd.DataFrame:
        return _mcnemar_table(table, ctx, acc_o, o_ci, acc_r, r_ci, delta, d_low, d_high)

    panel.tables["mcnemar"] = mcnemar_table
    return panel


def _mcnemar_table(table, ctx, acc_o, o_ci, acc_r, r_ci, delta, d_low, d_high) -> pd.DataFrame:
    table = table.assign(
        accuracy_original_pct=acc_o,
        original_ci_low=[c[0] for c in o_ci],
        original_ci_high=[c[1] for c in o_ci],
        accuracy_reversed_pct=acc_r,
        reversed_ci_low=[c[0] for c in r_ci],
        reversed_ci_high=[c[1] for c in r_ci],
        delta_orig_minus_rev_pp=delta,
        delta_ci_low=d_low,
        delta_ci_high=d_high,
    )
    table.insert(1, "source", table["model"].map(ctx.source))
    return table


# the x-axis groups of the gender-probe panel: answer setting over category, short enough for a tick label
