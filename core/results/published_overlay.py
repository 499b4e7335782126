"""The published layer beside each panel: the papers' own numbers (resources/published/) laid out as points."""

from __future__ import annotations

import functools
import math

import pandas as pd

from spokenbench.core.results.model import DRAWN_DATASET, Point, Published
from spokenbench.core.results.published import published_table

# --------------------------------------------------------------------------------------------------
# The published layer (resources/published/, see its README)


@functools.lru_cache(maxsize=64)
def read_published(study: str, name: str) -> pd.DataFrame:
    """A published CSV as printed (every cell a string), cached: the files never change at run time."""
    return pd.read_csv(published_table(study, name), dtype=str, keep_default_na=False)


def _num(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _published_points(
    frame: pd.DataFrame, facet, x: str, series: str, value: str, label: str, low: str | None = None, high=None
) -> list[Point]:
    points = []
    for row in frame.to_dict("records"):
        points.append(
            Point(
                facet(row) if callable(facet) else facet,
                str(row[x]),
                str(row[series]),
                _num(row[value]),
                _num(row[low]) if low else math.nan,
                _num(row[high]) if high else math.nan,
                interval="95% bootstrap CI as printed" if low else "",
                source=label,
            )
        )
    return points


def _make_published(study: str, table: str, file: str, caption: str, note: str, build) -> Published:
    frame = read_published(study, file)
    published = Published(study, table, file, caption, frame, [], note)
    published.points = build(frame, published.label)
    return published


def _mean_of_cells(frame: pd.DataFrame, by: list[str], value: str = "accuracy_pct") -> pd.DataFrame:
    numbers = frame.assign(**{value: pd.to_numeric(frame[value], errors="coerce")})
    return numbers.groupby(by, sort=False)[value].mean().reset_index()


def _published_accuracy() -> list[Published]:
    out = []
    specs = [
        ("order", "Tables 6, 11-17", "tables11_17_accuracy_order_by_model.csv", "option_order"),
        ("gender", "Table 18", "table18_accuracy_gender.csv", "gender"),
        ("accent", "Table 19", "table19_accuracy_accent.csv", "accent"),
        ("language", "Table 20", "table20_accuracy_language.csv", "language"),
    ]
    for facet, table, file, column in specs:

        def build(frame, label, facet=facet, column=column):
            means = _mean_of_cells(frame, ["model", column])
            return _published_points(means, facet, column, "model", "accuracy_pct", label)

        who = "every model" if facet == "order" else "Gemini 2.5 Flash"
        out.append(
            _make_published(
                "biasinear",
                table,
                file,
                f"Accuracy (%) by {facet} ({who})",
                "Bars: the mean of the printed cells at each level (the tables print one cell per language × accent "
                "× gender × order); the table beside is as printed.",
                build,
            )
        )
    return out


def _published_entropy_distribution() -> list[Published]:
    return [
        _make_published(
            "biasinear",
            "Table 22",
            "table22_entropy_order_variants.csv",
            "Mean question entropy under four option-order variants",
            "Fig. 2's distributions are not tabulated in the paper; Table 22 prints the mean entropy per model.",
            lambda frame, label: _published_points(
                frame, "mean entropy", "model", "option_order_variant", "mean_entropy", label
            ),
        )
    ]


def _published_kappa_apes() -> list[Published]:
    return [
        _make_published(
            "biasinear",
            "Table 21",
            "table21_apes_orig_vs_rev.csv",
            "APES of language, accent and gender under original vs reversed option order",
            "The paper plots κ against APES (Figs. 4-5) but prints no κ table; Table 21 prints APES.",
            lambda frame, label: _published_points(
                frame, lambda row: f"APES · {row['variable']}", "model", "option_order", "apes", label
            ),
        )
    ]


def _published_cs_ca() -> list[Published]:
    return [
        _make_published(
            "biasinear",
            "Table 5",
            "table05_entropy_cs_ca.csv",
            "Mean entropy of CS vs CA questions per perturbed variable",
            "Variable option_order is this project's 'order' factor.",
            lambda frame, label: _published_points(
                frame,
                lambda row: "order" if row["variable"] == "option_order" else row["variable"],
                "model",
                "question_subset",
                "mean_entropy",
                label,
            ),
        )
    ]


def _table3(metrics: tuple[str, ...], permutations: tuple[str, ...], facet_names: dict[str, str]):
    def build(frame, label):
        chosen = frame["metric"].isin(metrics) & frame["permutation"].isin(permutations)
        rows = frame[chosen & (frame["dataset"] == DRAWN_DATASET)]
        return _published_points(
            rows, lambda row: f"{facet_names[row['metric']]} · {row['dataset']}", "model", "permutation", "value", label
        )

    return build


def _published_gold_position() -> list[Published]:
    return [
        _make_published(
            "hearing_the_order",
            "Table 3",
            "table03_permutation_results.csv",
            "RSD and CKLD in the original order, per dataset",
            "Fig. 1's Δ accuracy by gold position is plotted, not tabulated; Table 3's Original rows print RSD and "
            f"CKLD (drawn: {DRAWN_DATASET}; the table has all four datasets).",
            _table3(("rsd", "ckld"), ("original",), {"rsd": "RSD", "ckld": "CKLD"}),
        ),
        _make_published(
            "hearing_the_order",
            "Table 1",
            "table01_answer_position_counts.csv",
            "Samples per gold-answer position",
            "",
            lambda frame, label: _published_points(
                frame, "gold share (%)", "answer_position", "dataset", "pct_of_dataset", label
            ),
        ),
    ]


def _published_voting() -> list[Published]:
    return [
        _make_published(
            "hearing_the_order",
            "Table 3",
            "table03_permutation_results.csv",
            "Accuracy, RSD and CKLD before (Original) and after voting (Cyclic, Full)",
            f"Drawn: {DRAWN_DATASET}; the table has all four datasets.",
            _table3(
                ("accuracy_pct", "rsd", "ckld"),
                ("original", "cyclic", "full"),
                {"accuracy_pct": "accuracy (%)", "rsd": "RSD", "ckld": "CKLD"},
            ),
        )
    ]


def _published_ranking() -> list[Published]:
    def build(frame, label):
        rows = frame[(frame["metric"] == "accuracy_pct") & (frame["dataset"] == DRAWN_DATASET)].copy()
        rows["accuracy"] = pd.to_numeric(rows["value"], errors="coerce")
        rows["rank"] = rows.groupby(["dataset", "permutation"])["accuracy"].rank(ascending=False, method="min")
        return _published_points(rows, lambda row: f"rank · {row['dataset']}", "permutation", "model", "rank", label)

    return [
        _make_published(
            "hearing_the_order",
            "Table 3",
            "table03_permutation_results.csv",
            "Accuracy per permutation strategy (ranks computed here from the printed accuracies)",
            "Fig. 3's ranks are plotted, not tabulated: the ranks drawn are computed from Table 3's printed "
            f"accuracy on {DRAWN_DATASET}.",
            build,
        )
    ]


def _published_mcnemar() -> list[Published]:
    def build(frame, label):
        means = _mean_of_cells(frame, ["model", "option_order"])
        points = _published_points(means, "accuracy on pairs", "model", "option_order", "accuracy_pct", label)
        deltas = frame.drop_duplicates(["model", "language", "accent", "gender"])
        deltas = _mean_of_cells(deltas, ["model"], "delta_orig_minus_rev_pct").assign(series="original − reversed")
        return points + _published_points(
            deltas, "Δ original − reversed", "model", "series", "delta_orig_minus_rev_pct", label
        )

    return [
        _make_published(
            "biasinear",
            "Tables 6, 11-17",
            "tables11_17_accuracy_order_by_model.csv",
            "Accuracy by option order per model and its printed Δ (original − reversed)",
            "Bars: means of the printed cells and Δs; the paper reports no McNemar test.",
            build,
        )
    ]


GENDER_METRICS = {
    "response_overlap_j": "J",
    "gender_preference_delta": "Δ",
    "neutral_response_rate_nu": "ν",
    "backbone_influence_kappa": "κ",
}


def _published_gender() -> list[Published]:
    def build(frame, label):
        rows = frame[frame["metric"].isin(GENDER_METRICS)]
        points = _published_points(rows, lambda row: GENDER_METRICS[row["metric"]], "category", "model", "value", label)
        cis = read_published("gender_differentiation", "table08_overlap_ci_sec3_baseline.csv")
        bounds = {
            (r["model"], r["category"]): (_num(r["ci95_lower"]), _num(r["ci95_upper"])) for _, r in cis.iterrows()
        }
        for point in points:
            if point.facet == "J" and (point.series, point.x) in bounds:
                point.low, point.high = bounds[(point.series, point.x)]
                point.interval = "95% bootstrap CI as printed (Table 8)"
        return points

    return [
        _make_published(
            "gender_differentiation",
            "Table 1",
            "table01_speechlm_baseline.csv",
            "J, Δ, κ and ν of the LLaMA-Omni SpeechLMs (baseline, binary options); J intervals from Table 8",
            "Stars in the `significance` column: * p < 0.05, ** p < 0.01, *** p < 0.001.",
            build,
        )
    ]


@functools.cache
def _published_cached(key: str) -> tuple[Published, ...]:
    return tuple(PUBLISHED[key]())


def published_for(key: str) -> list[Published]:
    """The published tables beside panel `key` (read once per process; the files never change)."""
    return list(_published_cached(key))


PUBLISHED = {
    "accuracy_by_level": _published_accuracy,
    "entropy_distribution": _published_entropy_distribution,
    "kappa_vs_apes": _published_kappa_apes,
    "entropy_cs_ca": _published_cs_ca,
    "gold_position": _published_gold_position,
    "permutation_voting": _published_voting,
    "ranking_changes": _published_ranking,
    "mcnemar": _published_mcnemar,
    "gender_probe": _published_gender,
}
