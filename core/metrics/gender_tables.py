"""The gender paper's tables, from a GenderStudy: Tables 1-5 (main results per answer setting, and the backbone
LLMs) and the appendix tables (overlap with 95% bootstrap intervals, preference t-tests, backbone κ with Bowker's
test), each laid out as the paper prints it (Markdown, LaTeX) and as long CSV rows in the column names of the
published CSVs (resources/published/gender_differentiation/), so a result can be set beside the paper's.

Also: which printed t values of the paper's preference tables a one-sample t-test over per-question differences
in [-1, 1] can give (`published_t_consistency`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from spokenbench.core.metrics.gender_study import GenderStudy

CATEGORIES = ("independent", "stereotypical", "dependent")
MAIN_METRICS = {
    "independent": ("J", "kappa", "neutral_rate"),
    "stereotypical": ("J", "delta", "kappa", "neutral_rate"),
    "dependent": ("J", "delta", "kappa", "neutral_rate"),
}
FREE_METRICS = {
    "independent": ("J_s", "s"),
    "stereotypical": ("J_s", "s"),
    "dependent": ("J_s", "delta_s", "s", "neutral_rate"),
}
SYMBOLS = {"J": "J", "delta": "Δ", "kappa": "κ", "neutral_rate": "ν", "J_s": "J_s", "delta_s": "Δ_s", "s": "s"}
PUBLISHED_METRIC = {
    "J": "response_overlap_j",
    "delta": "gender_preference_delta",
    "kappa": "backbone_influence_kappa",
    "neutral_rate": "neutral_response_rate_nu",
    "J_s": "response_overlap_js",
    "s": "backbone_influence_s",
    "delta_s": "gender_preference_delta_s",
}
P_OF = {"delta": "p_value", "delta_s": "p_value"}
SHORT = {"independent": "Indep.", "stereotypical": "Stereo.", "dependent": "Dep."}  # as the paper's Table 3
SETTING_SHORT = {"binary_option": "Binary", "neutral_option": "Neutral", "free_form": "Free-form"}


@dataclass(frozen=True)
class PaperTable:
    stem: str  # the published CSV's name, without .csv
    caption: str
    layout: str  # main / free / backbone / overlap / preference / kappa
    setting: str = ""
    category: str = ""
    metric: str = ""  # overlap: J or J_s; preference: delta or delta_s


PAPER_TABLES = (
    PaperTable("table01_speechlm_baseline", "Table 1: SpeechLMs, binary options", "main", "binary_option"),
    PaperTable("table02_speechlm_neutral_option", "Table 2: SpeechLMs, neutral option", "main", "neutral_option"),
    PaperTable("table03_speechlm_free_form", "Table 3: SpeechLMs, free-form output", "free", "free_form"),
    PaperTable(
        "table04_speechlm_neutralized_voice",
        "Table 4: SpeechLMs, gender-neutralized voice",
        "main",
        "neutralized_voice",
    ),
    PaperTable("table05_backbone_llms", "Table 5: backbone LLMs (Δ and ν)", "backbone"),
    PaperTable(
        "table08_overlap_ci_sec3_baseline",
        "Table 8: J with 95% CI, binary options",
        "overlap",
        "binary_option",
        metric="J",
    ),
    PaperTable(
        "table09_preference_test_sec3_stereotypical",
        "Table 9: Δ test, binary, Stereotypical",
        "preference",
        "binary_option",
        "stereotypical",
        "delta",
    ),
    PaperTable(
        "table10_preference_test_sec3_dependent",
        "Table 10: Δ test, binary, Dependent",
        "preference",
        "binary_option",
        "dependent",
        "delta",
    ),
    PaperTable(
        "table11_backbone_kappa_test_sec3_independent",
        "Table 11: κ test, binary, Independent",
        "kappa",
        "binary_option",
        "independent",
    ),
    PaperTable(
        "table12_backbone_kappa_test_sec3_stereotypical",
        "Table 12: κ test, binary, Stereotypical",
        "kappa",
        "binary_option",
        "stereotypical",
    ),
    PaperTable(
        "table13_backbone_kappa_test_sec3_dependent",
        "Table 13: κ test, binary, Dependent",
        "kappa",
        "binary_option",
        "dependent",
    ),
    PaperTable(
        "table14_overlap_ci_sec4_neutral_option",
        "Table 14: J with 95% CI, neutral option",
        "overlap",
        "neutral_option",
        metric="J",
    ),
    PaperTable(
        "table15_overlap_ci_sec4_free_form",
        "Table 15: J_s with 95% CI, free form",
        "overlap",
        "free_form",
        metric="J_s",
    ),
    PaperTable(
        "table16_preference_test_sec4_neutral_option_stereotypical",
        "Table 16: Δ test, neutral option, Stereotypical",
        "preference",
        "neutral_option",
        "stereotypical",
        "delta",
    ),
    PaperTable(
        "table17_preference_test_sec4_free_form_dependent",
        "Table 17: Δ test, neutral option, Dependent (the paper's caption says free form; App. G.2.1 lists it under the neutral option)",
        "preference",
        "neutral_option",
        "dependent",
        "delta",
    ),
    PaperTable(
        "table18_preference_test_sec4_free_form_dependent_delta_s",
        "Table 18: Δ_s test, free form, Dependent",
        "preference",
        "free_form",
        "dependent",
        "delta_s",
    ),
    PaperTable(
        "table19_backbone_kappa_test_sec4_neutral_option_independent",
        "Table 19: κ test, neutral option, Independent",
        "kappa",
        "neutral_option",
        "independent",
    ),
    PaperTable(
        "table20_backbone_kappa_test_sec4_neutral_option_stereotypical",
        "Table 20: κ test, neutral option, Stereotypical",
        "kappa",
        "neutral_option",
        "stereotypical",
    ),
    PaperTable(
        "table21_backbone_kappa_test_sec4_neutral_option_dependent",
        "Table 21: κ test, neutral option, Dependent",
        "kappa",
        "neutral_option",
        "dependent",
    ),
    PaperTable(
        "table22_overlap_ci_sec5_neutralized_voice",
        "Table 22: J with 95% CI, neutralized voice",
        "overlap",
        "neutralized_voice",
        metric="J",
    ),
    PaperTable(
        "table23_preference_test_sec5_stereotypical",
        "Table 23: Δ test, neutralized voice, Stereotypical",
        "preference",
        "neutralized_voice",
        "stereotypical",
        "delta",
    ),
    PaperTable(
        "table24_preference_test_sec4_dependent",
        "Table 24: Δ test, neutralized voice, Dependent",
        "preference",
        "neutralized_voice",
        "dependent",
        "delta",
    ),
    PaperTable(
        "table25_backbone_kappa_test_sec4_dependent",
        "Table 25: κ test, neutralized voice, Dependent",
        "kappa",
        "neutralized_voice",
        "dependent",
    ),
    PaperTable(
        "table26_backbone_kappa_test_sec5_stereotypical",
        "Table 26: κ test, neutralized voice, Stereotypical",
        "kappa",
        "neutralized_voice",
        "stereotypical",
    ),
    PaperTable(
        "table27_backbone_kappa_test_sec5_independent",
        "Table 27: κ test, neutralized voice, Independent",
        "kappa",
        "neutralized_voice",
        "independent",
    ),
    PaperTable(
        "table28_backbone_llm_preference_test_baseline_stereotypical",
        "Table 28: backbone LLMs, Δ test, binary, Stereotypical",
        "preference",
        "binary_option",
        "stereotypical",
        "delta",
    ),
    PaperTable(
        "table29_backbone_llm_preference_test_baseline_dependent",
        "Table 29: backbone LLMs, Δ test, binary, Dependent",
        "preference",
        "binary_option",
        "dependent",
        "delta",
    ),
    PaperTable(
        "table30_backbone_llm_preference_test_neutral_option_stereotypical",
        "Table 30: backbone LLMs, Δ test, neutral option, Stereotypical",
        "preference",
        "neutral_option",
        "stereotypical",
        "delta",
    ),
    PaperTable(
        "table31_backbone_llm_preference_test_neutral_option_dependent",
        "Table 31: backbone LLMs, Δ test, neutral option, Dependent",
        "preference",
        "neutral_option",
        "dependent",
        "delta",
    ),
    PaperTable(
        "table32_backbone_llm_preference_test_free_form_dependent",
        "Table 32: backbone LLMs, Δ_s test, free form, Dependent",
        "preference",
        "free_form",
        "dependent",
        "delta_s",
    ),
)
BACKBONE_TABLES = {"table05", "table28", "table29", "table30", "table31", "table32"}
TABLE5_COLUMNS = (
    ("binary_option", "stereotypical"),
    ("binary_option", "dependent"),
    ("neutral_option", "stereotypical"),
    ("neutral_option", "dependent"),
    ("free_form", "dependent"),
)


def stars(p: float) -> str:
    if p is None or not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def p_printed(p: float) -> str:
    """As the paper prints p-values: 'p < 0.001', 'p < 0.01', 'p < 0.05', else three decimals."""
    if p is None or not np.isfinite(p):
        return ""
    for bound in (0.001, 0.01, 0.05):
        if p < bound:
            return f"p < {bound:g}"
    return f"{p:.3f}"


def _two(value) -> str:
    return "" if value is None or not np.isfinite(value) else f"{value:.2f}"


def _rows(study: GenderStudy, spec: PaperTable) -> pd.DataFrame:
    text = spec.stem[:7] in BACKBONE_TABLES
    table = study.table
    table = table[table["model"].isin(study.text_models) == text]
    if spec.setting:
        table = table[table["setting"] == spec.setting]
    if spec.category:
        table = table[table["category"] == spec.category]
    return table


def build_paper_table(study: GenderStudy, spec: PaperTable) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(long CSV frame, display frame) for one paper table, or None when the study has nothing for it."""
    rows = _rows(study, spec)
    if spec.layout == "backbone":
        rows = study.table[study.table["model"].isin(study.text_models)]
        rows = rows[[(s, c) in TABLE5_COLUMNS for s, c in zip(rows["setting"], rows["category"])]]
    if rows.empty:
        return None
    if spec.layout in ("main", "free"):
        metrics = MAIN_METRICS if spec.layout == "main" else FREE_METRICS
        long, wide = [], {}
        for r in rows.itertuples(index=False):
            r = r._asdict()
            for metric in metrics.get(r["category"], ()):
                value, p = r.get(metric, np.nan), r.get(P_OF.get(metric, ""), np.nan)
                sig = stars(p) if metric in P_OF else ""
                long.append(
                    {
                        "model": r["model"],
                        "category": r["category"],
                        "metric": PUBLISHED_METRIC[metric],
                        "value": value,
                        "significance": sig,
                        "ci95_lower": r.get(f"{metric}_ci_low", np.nan),
                        "ci95_upper": r.get(f"{metric}_ci_high", np.nan),
                    }
                )
                wide.setdefault(r["model"], {})[f"{SHORT[r['category']]} {SYMBOLS[metric]}"] = _two(value) + sig
        columns = [f"{SHORT[c]} {SYMBOLS[m]}" for c in CATEGORIES for m in metrics[c]]
        display = pd.DataFrame([{"model": m, **{c: v.get(c, "") for c in columns}} for m, v in wide.items()])
        return pd.DataFrame(long), display
    if spec.layout == "backbone":
        long, wide = [], {}
        for r in rows.itertuples(index=False):
            r = r._asdict()
            metric = "delta_s" if r["setting"] == "free_form" else "delta"
            for name, key in ((metric, "delta"), ("neutral_rate", "neutral_rate")):
                value = r.get(name, np.nan)
                sig = stars(r["p_value"]) if key == "delta" else ""
                long.append(
                    {
                        "model": r["model"],
                        "response_format": r["setting"],
                        "category": r["category"],
                        "metric": PUBLISHED_METRIC["delta" if key == "delta" else "neutral_rate"],
                        "value": value,
                        "significance": sig,
                    }
                )
                label = f"{SETTING_SHORT[r['setting']]} {SHORT[r['category']]} {'Δ' if key == 'delta' else 'ν'}"
                wide.setdefault(r["model"], {})[label] = _two(value) + sig
        columns = [f"{SETTING_SHORT[s]} {SHORT[c]} {x}" for s, c in TABLE5_COLUMNS for x in ("Δ", "ν")]
        display = pd.DataFrame([{"model": m, **{c: v.get(c, "") for c in columns}} for m, v in wide.items()])
        return pd.DataFrame(long), display
    if spec.layout == "overlap":
        long = pd.DataFrame(
            {
                "model": rows["model"],
                "category": rows["category"],
                "metric": PUBLISHED_METRIC[spec.metric],
                "value": rows[spec.metric],
                "ci95_lower": rows.get(f"{spec.metric}_ci_low", np.nan),
                "ci95_upper": rows.get(f"{spec.metric}_ci_high", np.nan),
                "n_questions": rows.get(f"{spec.metric}_questions", np.nan),
            }
        ).reset_index(drop=True)
        cells = {}
        for r in long.itertuples(index=False):
            ci = f" [{_two(r.ci95_lower)}, {_two(r.ci95_upper)}]" if np.isfinite(r.ci95_lower) else ""
            cells.setdefault(r.model, {})[r.category.capitalize()] = _two(r.value) + ci
        display = pd.DataFrame(
            [{"model": m, **{c.capitalize(): v.get(c.capitalize(), "") for c in CATEGORIES}} for m, v in cells.items()]
        )
        return long, display
    if spec.layout == "preference":
        long = pd.DataFrame(
            {
                "model": rows["model"],
                "male_rate": rows["male_rate"],
                "female_rate": rows["female_rate"],
                "delta_symbol": spec.metric,
                "delta": rows["delta"],
                "stat": rows["t_stat"],
                "p_value": rows["p_value"],
                "p_value_printed": [p_printed(p) for p in rows["p_value"]],
                "n_questions": rows["delta_questions"],
            }
        ).reset_index(drop=True)
        display = pd.DataFrame(
            {
                "model": long["model"],
                "Male rate": [_two(v) for v in long["male_rate"]],
                "Female rate": [_two(v) for v in long["female_rate"]],
                SYMBOLS[spec.metric]: [_two(v) for v in long["delta"]],
                "Stat.": [_two(v) for v in long["stat"]],
                "p-value": long["p_value_printed"],
                "n": long["n_questions"],
            }
        )
        return long, display
    # kappa
    rows = rows[rows["backbone"].astype(str) != ""]
    if rows.empty:
        return None
    long = pd.DataFrame(
        {
            "model": rows["model"],
            "backbone": rows["backbone"],
            "rate": rows["agreement"],
            "kappa": rows["kappa"],
            "stat": rows["bowker_stat"],
            "df": rows["bowker_df"],
            "p_value": rows["bowker_p"],
            "p_value_printed": [p_printed(p) for p in rows["bowker_p"]],
        }
    ).reset_index(drop=True)
    display = pd.DataFrame(
        {
            "model": long["model"],
            "rate": [_two(v) for v in long["rate"]],
            "κ": [_two(v) for v in long["kappa"]],
            "Stats.": [_two(v) for v in long["stat"]],
            "p-value": long["p_value_printed"],
        }
    )
    return long, display


def paper_tables(study: GenderStudy) -> list[tuple[PaperTable, pd.DataFrame, pd.DataFrame]]:
    """Every paper table the study has data for, with the stems and captions of the published CSVs."""
    out = []
    for spec in PAPER_TABLES:
        built = build_paper_table(study, spec)
        if built is not None:
            out.append((spec, *built))
    return out


def missing_paper_tables(study: GenderStudy) -> list[str]:
    built = {spec.stem for spec, _, _ in paper_tables(study)}
    reasons = []
    for spec in PAPER_TABLES:
        if spec.stem in built:
            continue
        who = "backbone LLM (text) runs" if spec.stem[:7] in BACKBONE_TABLES else "speech-model runs"
        what = f"{spec.setting or 'any'} setting" + (f", {spec.category}" if spec.category else "")
        extra = " with a declared backbone" if spec.layout == "kappa" else ""
        reasons.append(f"paper_{spec.stem}: no {who} in the {what}{extra}")
    return reasons


# ---------------------------------------------------------------- the paper's printed t values


def t_bound(delta: float, n: int) -> float:
    """The smallest |t| a one-sample t-test over n values in [-1, 1] with mean `delta` can give: the sample
    variance is at most n(1 - m²)/(n - 1), so |t| >= |m| sqrt(n - 1) / sqrt(1 - m²)."""
    m = abs(delta)
    return m * math.sqrt(n - 1) / math.sqrt(1 - m * m) if m < 1 else math.inf


def max_questions(delta: float, t: float) -> float:
    """The most questions with which |t| can be as small as printed: n <= 1 + t² (1 - m²) / m²."""
    m = abs(delta)
    return math.inf if m == 0 else 1 + t * t * (1 - m * m) / (m * m)


def published_t_consistency(published_dir, questions: dict[str, int] | None = None) -> pd.DataFrame:
    """For every row of the paper's preference tables (Tables 9, 10, 16-18, 23, 24, 28-32): can the printed Δ and
    t come from a one-sample t-test over the category's per-question differences in [-1, 1]? Printed values are
    rounded to 2 decimals, so the check takes the most favourable values within ±0.005 (smallest |Δ|, largest
    |t|). `questions` gives the number of questions per category (the paper's: 449 stereotypical, 300 dependent).
    Also checks the printed p-value against t with n - 1 degrees of freedom."""
    from pathlib import Path

    from scipy import stats

    questions = questions or {"stereotypical": 449, "dependent": 300}
    rows = []
    for spec in PAPER_TABLES:
        if spec.layout != "preference":
            continue
        path = Path(published_dir) / f"{spec.stem}.csv"
        if not path.exists():
            continue
        published = pd.read_csv(path, dtype=str)
        n = questions[spec.category]
        for r in published.itertuples(index=False):
            delta, t = float(r.delta), float(r.stat)
            smallest_delta = max(abs(delta) - 0.005, 0.0)
            largest_t = abs(t) + 0.005
            bound = t_bound(smallest_delta, n)
            p_from_t = float(2 * stats.t.sf(abs(t), n - 1))
            printed = str(r.p_value_printed)
            if printed.startswith("p <"):
                p_ok = p_from_t < float(printed.split("<")[1]) * 1.0001
            else:
                p_ok = abs(p_from_t - float(printed)) <= 0.0015 + 0.02 * float(printed)
            rows.append(
                {
                    "table": spec.stem[:7].replace("table", "Table "),
                    "model": r.model,
                    "category": spec.category,
                    "delta": delta,
                    "t": t,
                    "n_questions": n,
                    "min_abs_t_at_n": bound,
                    "t_possible": largest_t >= bound,
                    "max_questions_for_t": max_questions(smallest_delta, largest_t),
                    "p_printed": printed,
                    "p_from_t": p_from_t,
                    "p_consistent_with_t": bool(p_ok),
                }
            )
    return pd.DataFrame(rows)
