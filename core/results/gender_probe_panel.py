"""The gender-probe panel (Acoustic-based Gender Differentiation): J / Δ / ν / κ per model, answer setting
and category."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from spokenbench.core.results.engine import split_rows
from spokenbench.core.results.model import Panel, Point, ProbeSource, _new_panel

PROBE_SETTING_LABELS = {
    "binary_option": "binary",
    "neutral_option": "neutral option",
    "free_form": "free form",
    "neutralized_voice": "neutralized",
}
PROBE_CATEGORY_LABELS = {"independent": "indep.", "stereotypical": "stereo.", "dependent": "dep."}
FREE_FORM_YLABELS = {
    "J": "response similarity J_s",
    "Δ": "gender preference Δ_s",
    "κ": "backbone similarity s",
}
FREE_FORM_NOTES = {
    "J": "J_s: mean cosine similarity of male- and female-voice answers (all-MiniLM-L6-v2)",
    "Δ": "Δ_s: Δ over the answers classified into an option",
    "κ": "s: mean cosine similarity to the backbone's answers",
}


def probe_group(setting: str, category: str) -> str:
    """The gender-probe panel's x label of one answer setting and category: 'binary\nstereo.'."""
    return f"{PROBE_SETTING_LABELS.get(setting, setting)}\n{PROBE_CATEGORY_LABELS.get(category, category)}"


def probe_study_frame(
    frame: pd.DataFrame, backbones: dict[str, str] | None, source: ProbeSource | None
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The gender-probe rows as the gender study reads them (core/metrics/gender_study.py), in the same order:
    each row's model (the run's model for a project, not its run label), its answer setting, a model's text runs
    named '<model> (text)', and the backbone pairs (a project's declared ones; a table's given ones, else its only
    text model as every voiced model's backbone)."""
    from spokenbench.core.metrics.gender_study import with_settings, with_text_model_names

    frame = frame.reset_index(drop=True).copy()
    if source is not None:
        from spokenbench.core.importers.exports import with_neutral_option, with_neutralized_setting

        frame["model"] = frame["run_id"].map(lambda r: source.models.get(int(r), "")).astype(object)
        if "response_id" in frame.columns:
            details = source.details(list(frame["response_id"]))
            frame = frame.drop(columns=[c for c in ("parse_detail", "raw_text") if c in frame.columns])
            frame = frame.merge(details, on="response_id", how="left", sort=False)
        frame["run_id"] = frame["run_id"].astype(int)
        if "item_id" in frame.columns and not any(len(c) == 8 and c.startswith("option_") for c in frame.columns):
            texts = source.option_texts()
            frame = frame.merge(texts, on="item_id", how="left", sort=False) if len(texts.columns) > 1 else frame
        frame = with_neutral_option(frame, source.settings)
        frame = with_neutralized_setting(frame, source.neutralized_voices)
        pairs = dict(source.backbones)
    else:
        frame["model"] = frame["model"].astype(str)
        pairs = dict(backbones or {})
    frame, pairs = with_text_model_names(frame, pairs)
    if source is None and backbones is None:
        pairs = _only_text_backbone(frame)
    return with_settings(frame).reset_index(drop=True), pairs


def _gender_probe(
    frame: pd.DataFrame, simulated, n_resamples, seed, backbones, source: ProbeSource | None = None
) -> tuple[Panel, pd.DataFrame]:
    """The panel, and the probe rows its points index (the gender study's rows: model and setting columns)."""
    facets = ["J", "Δ", "ν", "κ"]
    panel = _new_panel(
        "gender_probe",
        facets,
        {"J": "response overlap J", "Δ": "gender preference Δ", "ν": "neutral response rate ν", "κ": "backbone κ"},
    )
    needed = ("question_id", "model", "category", "voice_gender", "prediction", "option_orientation")
    if frame.empty or any(c not in frame.columns for c in needed):
        panel.empty = (
            "No gender-probe responses in the selected runs. Evaluate the project's gender probes (the demo holds "
            "simulated gender-study runs: select them in the run picker)."
        )
        return panel, frame
    from spokenbench.core.metrics.gender_study import SETTING_NAMES, analyze_gender_study

    study_frame, pairs = probe_study_frame(frame, backbones, source)
    study = analyze_gender_study(
        study_frame,
        pairs,
        source="the selected runs",
        n_resamples=n_resamples,
        seed=seed,
        require_backbones=False,
    )
    flags = source.simulated if source is not None else simulated
    panel.views = {setting: PROBE_SETTING_LABELS.get(setting, setting) for setting in study.settings}
    panel.view_ylabels = {"free_form": FREE_FORM_YLABELS}

    def is_simulated(model: str) -> bool:
        from spokenbench.core.metrics.gender_study import TEXT_SUFFIX

        base = model[: -len(TEXT_SUFFIX)] if model.endswith(TEXT_SUFFIX) else model
        return bool(flags.get(model) or flags.get(base))

    names = {str(m) for m in study.table["model"]}
    for model in names:
        simulated.setdefault(model, is_simulated(model))
    origin = {m: "yours (simulated)" if simulated.get(m) else "yours" for m in names}
    key = pd.Series(list(zip(study_frame["setting"], study_frame["model"].astype(str), study_frame["category"])))
    codes, keys = pd.factorize(key)
    parts = dict(zip(keys, split_rows(codes, len(keys)))) if len(keys) else {}
    questions = study_frame["question_id"].astype(str).to_numpy(dtype=object)
    order = {s: i for i, s in enumerate(study.settings)}
    table = study.table.assign(_order=study.table["setting"].map(order))
    table = table.sort_values(["_order", "category", "model"], key=_category_order, kind="stable")
    metrics = (("J", "J"), ("Δ", "delta"), ("ν", "neutral_rate"), ("κ", "kappa"))
    # the free form's own measures in the same places: J_s (answer similarity across voices) where J is, Δ_s where
    # Δ is, s (similarity to the backbone's answers) where κ is; its view names them (FREE_FORM_YLABELS)
    free_metrics = (("J", "J_s"), ("Δ", "delta_s"), ("ν", "neutral_rate"), ("κ", "s"))
    for row in table.to_dict("records"):
        free = row["setting"] == "free_form"
        rows = parts.get((row["setting"], row["model"], row["category"]), np.zeros(0, dtype=np.int64))
        setting_name = SETTING_NAMES.get(row["setting"], row["setting"])
        for facet, column in free_metrics if free else metrics:
            value = row.get(column)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            note = f"setting: {setting_name}"
            if free and facet in FREE_FORM_NOTES:
                note += f"; {FREE_FORM_NOTES[facet]}"
            if facet == "κ" and row.get("backbone"):
                note += f"; against the backbone {row['backbone']}"
            if facet == "Δ" and np.isfinite(row.get("p_value", np.nan)):
                note += f"; t-test p = {row['p_value']:.3g}"
            panel.points.append(
                Point(
                    facet,
                    probe_group(row["setting"], row["category"]),
                    row["model"],
                    float(value),
                    float(row.get(f"{column}_ci_low", math.nan)),
                    float(row.get(f"{column}_ci_high", math.nan)),
                    len(rows),
                    rows=rows,
                    questions_source=tuple(sorted(set(questions[rows]))),
                    source=origin[row["model"]],
                    note=note,
                )
            )
    out = study.table.copy()
    out.insert(2, "source", out["model"].map(origin))
    panel.tables["gender_probe"] = out
    panel.tables["gender_probe_per_question"] = study.per_question
    if not (study.table["kappa"].notna()).any():
        panel.description += (
            " κ needs a text backbone run of the same probes, paired with the speech model (`spokenbench backbone "
            "DIR --pair SPEECH=TEXT`)."
        )
    if study.notes:
        panel.description += " " + " ".join(f"Note: {n}." for n in study.notes)
    return panel, study_frame


def _category_order(column: pd.Series) -> pd.Series:
    if column.name != "category":
        return column
    known = list(PROBE_CATEGORY_LABELS)
    return column.map(lambda c: known.index(c) if c in known else len(known))


def _only_text_backbone(frame: pd.DataFrame) -> dict[str, str]:
    """When exactly one model of a table answered the probes as text (no voice), it is every voiced model's
    backbone for κ; otherwise no pairing is guessed."""
    voice = frame["voice_gender"].astype(object).where(frame["voice_gender"].notna(), "").astype(str).str.strip()
    models = frame["model"].astype(str)
    voiced = set(models[voice != ""])
    text = sorted(set(models) - voiced)
    if len(text) != 1:
        return {}
    return {m: text[0] for m in sorted(voiced)}
