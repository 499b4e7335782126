"""The full metric set for a responses table, in one call, and its JSON form (the `metrics --json`
contract: one object keyed by model; for gender probes keyed by model then category)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.foundation.tables import TextColumns
from spokenbench.core.metrics import mcq
from spokenbench.core.metrics.bootstrap import DEFAULT_SEED, ColumnBuilder, bootstrap_intervals
from spokenbench.core.metrics.responses import McqResponses, prepare_mcq
from spokenbench.core.metrics.selection_bias import (
    DEFAULT_VOTE_TIES,
    Columns,
    SelectionBias,
    check_vote_ties,
    ckld_from_counts,
    columns_frame,
    compute_selection_bias,
    rsd_from_counts,
)

if TYPE_CHECKING:
    import pandas as pd

    from spokenbench.core.metrics.gender_probe import GenderProbeMetrics

KINDS = ("mcq", "gender-probe")


@dataclass
class McqAnalysis:
    data: McqResponses
    metrics: mcq.McqMetrics
    selection: SelectionBias
    summary_columns: Columns  # one row per model: mcq.model_summary_columns and the selection's per-model columns
    intervals: list[dict[str, tuple[float, float]]] = field(default_factory=list)  # per model
    bootstrap_resamples: int = 0
    seed: int = DEFAULT_SEED

    def to_json(self) -> dict:
        return mcq_json(self)

    @cached_property
    def summary(self) -> pd.DataFrame:
        """`summary_columns` as a DataFrame (for the report and the app; built on first use)."""
        return columns_frame(self.summary_columns)


def detect_kind(frame: TextColumns | pd.DataFrame) -> str:
    """gender-probe when the table has option_orientation and no gold answer column, else mcq."""
    return "gender-probe" if "option_orientation" in frame.columns and "answer" not in frame.columns else "mcq"


def analyze_mcq(
    frame: TextColumns | pd.DataFrame,
    factors: list[str] | None = None,
    *,
    source: str = "<table>",
    failures_as_category: bool = False,
    n_resamples: int = 0,
    seed: int = DEFAULT_SEED,
    kappa_nesting: str = "within",
    vote_ties: str = DEFAULT_VOTE_TIES,
    progress: Progress | None = None,
) -> McqAnalysis:
    """`vote_ties`: the permutation votes' tie rule ('fractional', 'first' or 'random'; 'random' draws with
    `seed`, the bootstrap's seed)."""
    check_vote_ties(vote_ties)
    data = prepare_mcq(frame, factors, source)
    metrics = mcq.compute_mcq_metrics(data, failures_as_category, kappa_nesting)
    selection = compute_selection_bias(data, vote_ties, seed)
    summary = mcq.model_summary_columns(metrics)
    summary.update((name, values) for name, values in selection.per_model_columns.items() if name != "model")
    analysis = McqAnalysis(
        data=data,
        metrics=metrics,
        selection=selection,
        summary_columns=summary,
        bootstrap_resamples=n_resamples,
        seed=seed,
    )
    if n_resamples > 0:
        analysis.intervals = mcq_intervals(metrics, selection, n_resamples, seed, progress or no_progress())
    return analysis


def analyze_gender_probe(
    frame: pd.DataFrame,
    backbones: dict[str, str] | list[str] | None = None,
    *,
    source: str = "<table>",
    failures_as_category: bool = False,
    n_resamples: int = 0,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
) -> GenderProbeMetrics:
    from spokenbench.core.metrics.gender_probe import compute_gender_probe, parse_backbones, prepare_gender_probe

    if not isinstance(backbones, dict):
        backbones = parse_backbones(backbones)
    data = prepare_gender_probe(frame, source)
    return compute_gender_probe(data, backbones, failures_as_category, n_resamples, seed, progress)


def mcq_interval_columns(metrics: mcq.McqMetrics, selection: SelectionBias) -> tuple[ColumnBuilder, Callable]:
    """The per-question columns and the statistic function behind the headline intervals (accuracy, mean
    entropy, APES and κ per factor, RSD, CKLD): one definition for the report and the app's panels."""
    columns = ColumnBuilder()
    columns.add("rows", metrics.group_rows)
    columns.add("correct", metrics.group_correct)
    columns.add_mean("entropy", metrics.entropy)
    for f, result in metrics.factors.items():
        columns.add_mean(f"apes[{f}]", result.apes)
        columns.add_mean(f"kappa[{f}]", result.kappa)
    columns.add("gold", selection.group_gold)
    columns.add("gold_correct", selection.group_gold_correct)
    columns.add("predicted", selection.group_predicted)

    def finalize(sums: np.ndarray) -> dict[str, np.ndarray]:
        out = {
            "accuracy": columns.get(sums, "correct") / columns.get(sums, "rows"),
            "entropy_mean": columns.mean(sums, "entropy"),
        }
        for f in metrics.factors:
            out[f"apes[{f}]"] = columns.mean(sums, f"apes[{f}]")
            out[f"fleiss_kappa[{f}]"] = columns.mean(sums, f"kappa[{f}]")
        gold, gold_correct, predicted = (columns.get(sums, n) for n in ("gold", "gold_correct", "predicted"))
        out["rsd"] = rsd_from_counts(gold_correct.reshape(len(sums), -1), gold.reshape(len(sums), -1))
        out["ckld"] = ckld_from_counts(predicted.reshape(len(sums), -1), gold.reshape(len(sums), -1))
        return out

    return columns, finalize


def mcq_intervals(
    metrics: mcq.McqMetrics, selection: SelectionBias, n_resamples: int, seed: int, progress: Progress
) -> list[dict[str, tuple[float, float]]]:
    """Question-level bootstrap intervals per model for accuracy, mean entropy, APES and κ per factor,
    RSD and CKLD."""
    data = metrics.data
    columns, finalize = mcq_interval_columns(metrics, selection)

    return bootstrap_intervals(
        data.group_question,
        data.group_model,
        len(data.models),
        columns.matrix(),
        finalize,
        len(data.questions),
        n_resamples,
        seed,
        progress,
    )


# ---------------------------------------------------------------- JSON


def clean(value):
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python, tuples -> lists, recursively."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if isinstance(value, np.ndarray):
        return [clean(v) for v in value.tolist()]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def mcq_json(analysis: McqAnalysis) -> dict:
    data, summary, selection = analysis.data, analysis.summary_columns, analysis.selection
    accuracy_by_factor = {model: {} for model in data.models}  # model -> factor -> level -> accuracy
    for f in data.factors:
        table = mcq.accuracy_by_columns(data, [f])
        for model, level, accuracy in zip(table["model"].tolist(), table[f].tolist(), table["accuracy"].tolist()):
            accuracy_by_factor[model].setdefault(f, {})[level] = accuracy
    voting, ranking = _records_by_model(selection.voting_columns), _records_by_model(selection.ranking_columns)
    mcnemar = selection.mcnemar_columns
    result = {}
    for i, model in enumerate(data.models):
        row = {name: values[i] for name, values in summary.items()}
        entry = {
            "n": int(row["n"]),
            "accuracy": row["accuracy"],
            "entropy_mean": row["entropy_mean"],
            "apes": {f: row[f"apes[{f}]"] for f in data.factors},
            "fleiss_kappa": {f: row[f"kappa[{f}]"] for f in data.factors},
            "rsd": row["rsd"],
            "ckld": row["ckld"],
            "parse_failure_rate": row["parse_failure_rate"],
        }
        if analysis.intervals:
            ci = analysis.intervals[i]
            entry["ci"] = {
                "accuracy": ci.get("accuracy"),
                "entropy_mean": ci.get("entropy_mean"),
                "apes": {f: ci.get(f"apes[{f}]") for f in data.factors},
                "fleiss_kappa": {f: ci.get(f"fleiss_kappa[{f}]") for f in data.factors},
                "rsd": ci.get("rsd"),
                "ckld": ci.get("ckld"),
                "level": 0.95,
                "resamples": analysis.bootstrap_resamples,
                "seed": analysis.seed,
                "method": "question-level percentile bootstrap",
            }
        entry.update(
            {
                "n_questions": int(row["n_questions"]),
                "entropy_median": row["entropy_median"],
                "entropy_iqr": row["entropy_iqr"],
            }
        )
        if "entropy_mean_cs" in summary:
            entry["entropy_mean_by_cultural_label"] = {"CS": row["entropy_mean_cs"], "CA": row["entropy_mean_ca"]}
        entry["level_entropy"] = {f: row[f"level_entropy[{f}]"] for f in data.factors}
        entry["fleiss_kappa_questions"] = {
            f: {
                "defined": int(row[f"kappa_defined[{f}]"]),
                "undefined": int(row[f"kappa_undefined[{f}]"]),
                "item_factors": analysis.metrics.factors[f].kappa_item_factors,
            }
            for f in data.factors
        }
        entry["accuracy_by_factor"] = {f: accuracy_by_factor[model].get(f, {}) for f in data.factors}
        entry["accuracy_by_gold_position"] = {p: row[f"accuracy_gold_{p}"] for p in selection.positions}
        entry["delta_accuracy_by_gold_position"] = {p: row[f"delta_accuracy_gold_{p}"] for p in selection.positions}
        entry["predicted_position_distribution"] = {p: row[f"predicted_share_{p}"] for p in selection.positions}
        entry["gold_position_distribution"] = {p: row[f"gold_share_{p}"] for p in selection.positions}
        entry["permutation_vote"] = {
            r["permutation"]: {
                "accuracy": r["accuracy"],
                "rsd": r["rsd"],
                "ckld": r["ckld"],
                "n": int(r["n"]),
                **(
                    {
                        "complete_units": int(r["complete_units"]),
                        "tied_units": int(r["tied_units"]),
                        "tie_rule": r["tie_rule"],
                        **({"tie_seed": selection.tie_seed} if r["tie_rule"] == "random" else {}),
                    }
                    if r["permutation"] != "original"
                    else {}
                ),
            }
            for r in voting.get(model, [])
        }
        entry["ranking"] = {
            r["setting"]: (None if math.isnan(r["rank"]) else int(r["rank"])) for r in ranking.get(model, [])
        }
        mc = {name: values[i] for name, values in mcnemar.items()}
        entry["mcnemar_original_vs_reversed"] = {
            "n_pairs": int(mc["n_pairs"]),
            "original_only_correct": int(mc["original_only_correct"]),
            "reversed_only_correct": int(mc["reversed_only_correct"]),
            "p_value": mc["p_value"],
        }
        result[model] = entry
    return clean(result)


def _records_by_model(table: Columns) -> dict[str, list[dict]]:
    """The rows of `table` as dicts, grouped by their model in row order (one pass, not a filter per model)."""
    names = list(table)
    grouped: dict[str, list[dict]] = {}
    for values in zip(*(_python_values(table[name]) for name in names)):
        record = dict(zip(names, values))
        grouped.setdefault(record["model"], []).append(record)
    return grouped


def _python_values(values) -> list:
    """A column's values as Python objects (numpy scalars become int, float, str)."""
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def gender_probe_json(metrics: GenderProbeMetrics) -> dict:
    result: dict[str, dict] = {}
    for _, row in metrics.table.iterrows():
        entry = {name: row[name] for name in ("J", "delta", "p_value", "neutral_rate", "kappa", "bowker_p")}
        entry.update(
            {
                "n": int(row["n"]),
                "n_questions": int(row["n_questions"]),
                "J_questions": int(row["J_questions"]),
                "delta_questions": int(row["delta_questions"]),
                "t_stat": row["t_stat"],
                "male_rate": row["male_rate"],
                "female_rate": row["female_rate"],
                "backbone": row["backbone"] or None,
                "agreement": row["agreement"],
                "bowker_stat": row["bowker_stat"],
                "bowker_df": int(row["bowker_df"]),
            }
        )
        if metrics.bootstrap_resamples:
            entry["ci"] = {
                name: (row[f"{name}_ci_low"], row[f"{name}_ci_high"])
                for name in ("J", "delta", "neutral_rate", "kappa")
            }
            entry["ci"].update(
                {
                    "level": 0.95,
                    "resamples": metrics.bootstrap_resamples,
                    "seed": metrics.seed,
                    "method": "question-level percentile bootstrap",
                }
            )
        result.setdefault(row["model"], {})[row["category"]] = entry
    return clean(result)


def check_kind(kind: str | None, frame: TextColumns | pd.DataFrame) -> str:
    kind = kind or detect_kind(frame)
    if kind not in KINDS:
        raise SpokenBenchError(f"unknown kind '{kind}'; use one of: {', '.join(KINDS)}")
    return kind
