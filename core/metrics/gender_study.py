"""The gender study as the paper ran it, from a project or a responses table: every answer setting (binary
options, a neutral option, free form; a neutralized-voice setting when a table names one) computed apart, each
with J, Δ (t-test), ν, parse failures and, against the declared backbones, Cohen's κ and Bowker's test; free-form
answers classified by rule for Δ_s and compared by sentence similarity for J_s and s (gender_freeform.py).

A table's setting comes from its `setting` column, else from its `prompt` column (the prompt template's answer
setting), else the whole table is one setting, 'binary_option'. Rows whose condition's `voice_source` starts with
'neutraliz' (a gender-neutralized voice, `spokenbench evaluate … --voice-kind neutralized`) are the
'neutralized_voice' setting (Table 4) under binary options, '<setting>_neutralized_voice' under another, so they
never mix with the original voices' answers. A neutralized setting's κ is against the backbone's answers in the
setting it neutralizes (the text a backbone reads does not change with the voice)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.metrics.bootstrap import DEFAULT_SEED
from spokenbench.core.metrics.gender_backbones import read_backbone_pairs
from spokenbench.core.metrics.gender_freeform import (
    CLASSIFICATION_RULE,
    Embedder,
    classify_free_form,
    free_form_similarity,
    minilm_embed,
    presented_option_texts,
)
from spokenbench.core.metrics.gender_probe import (
    OPTIONAL_COLUMNS,
    REQUIRED_COLUMNS,
    GenderProbeMetrics,
    compute_gender_probe,
    prepare_gender_probe,
)

SETTINGS = ("binary_option", "neutral_option", "free_form", "neutralized_voice")
SETTING_NAMES = {
    "binary_option": "binary options",
    "neutral_option": "neutral option",
    "free_form": "free form",
    "neutralized_voice": "gender-neutralized voice",
}
TEXT_SUFFIX = " (text)"
STUDY_COLUMNS = (
    "setting",
    "question_id",
    "model",
    "mode",
    "prompt",
    "run_id",
    "category",
    "voice_gender",
    "speaker",
    "voice",
    "accent",
    "language",
    "prediction",
    "option_order",
    "option_orientation",
    "parse_status",
    "parse_detail",
    "raw_text",
)


@dataclass
class GenderStudy:
    table: pd.DataFrame  # per (setting, model, category): the gender-probe metrics (+ J_s, s, Δ_s for free form)
    per_question: pd.DataFrame
    settings: list[str]
    backbones: dict[str, str]
    bootstrap_resamples: int = 0
    seed: int = DEFAULT_SEED
    notes: list[str] = field(default_factory=list)  # what could not be computed, and why
    text_models: list[str] = field(default_factory=list)  # models without a voice (backbone LLMs)
    classification: pd.DataFrame | None = None  # free-form answers with the class the rule gave them

    def for_setting(self, setting: str) -> GenderProbeMetrics:
        """One setting's results in the shape the single-table functions (JSON, figures) take."""
        table = self.table[self.table["setting"] == setting].drop(columns=["setting"]).reset_index(drop=True)
        per_question = self.per_question[self.per_question["setting"] == setting].drop(columns=["setting"])
        return GenderProbeMetrics(table, per_question.reset_index(drop=True), self.bootstrap_resamples, self.seed)


def project_study_frame(project_path: str | Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """The project's gender-probe answers as one table (with each item's option texts for the free-form rule) and
    its declared backbone pairs. A model run both with voices and as text (--mode text) is two models here: its
    text rows are named '<model> (text)', and a pair naming the same model on both sides means that one."""
    from spokenbench.core.importers.exports import items_frame, responses_frame
    from spokenbench.core.store import Project

    with Project.open(project_path) as project:
        frame = responses_frame(project.conn)
        items = items_frame(project.conn)
        pairs = read_backbone_pairs(project.conn)
    if frame.empty or "category" not in frame.columns:
        raise SpokenBenchError(f"{project_path}: the project has no stored responses yet; run an evaluation first")
    frame = frame[frame["category"].notna() & (frame["category"].astype(str) != "")]
    if frame.empty:
        raise SpokenBenchError(f"{project_path}: the project has no gender-probe responses yet")
    frame = frame[[c for c in STUDY_COLUMNS if c in frame.columns] + ["item_id"]].copy()
    frame, pairs = with_text_model_names(frame, pairs)
    option_columns = [c for c in items.columns if c.startswith("option_") and c != "option_order"]
    frame = frame.merge(items[["item_id", *option_columns]], on="item_id", how="left").drop(columns=["item_id"])
    return frame.reset_index(drop=True), pairs


def with_text_model_names(frame: pd.DataFrame, pairs: dict[str, str]) -> tuple[pd.DataFrame, dict[str, str]]:
    """A model run both with voices and as text (--mode text) is two models: its text rows are named
    '<model> (text)', and a pair naming the same model on both sides (or its text side) means that one."""
    frame = frame.copy()
    text_rows = frame["voice_gender"].isna() | (frame["voice_gender"].astype(str).str.strip() == "")
    models = frame["model"].astype(str)
    voiced_models = set(models[~text_rows])
    both = text_rows & models.isin(voiced_models)
    frame["model"] = models.where(~both, models + TEXT_SUFFIX)
    names = set(frame["model"])
    pairs = {s: (t + TEXT_SUFFIX if t == s or t + TEXT_SUFFIX in names else t) for s, t in pairs.items()}
    return frame, pairs


def neutralized_base(setting: str) -> str | None:
    """The setting a neutralized-voice setting neutralizes ('binary_option' for 'neutralized_voice'), else None."""
    if setting == "neutralized_voice":
        return "binary_option"
    if setting.endswith("_neutralized_voice"):
        return setting[: -len("_neutralized_voice")]
    return None


def with_settings(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with a `setting` column (see the module's docstring)."""
    from spokenbench.core.evaluation.prompts import answer_setting

    frame = frame.copy()
    if "prompt" in frame.columns:
        fallback = pd.Series([answer_setting(str(p)) for p in frame["prompt"]], index=frame.index)
    else:
        fallback = pd.Series("binary_option", index=frame.index)
    if "setting" in frame.columns:
        given = frame["setting"].astype(object).where(frame["setting"].notna(), "").astype(str).str.strip()
        setting = given.where(given != "", fallback)
    else:
        setting = fallback
    if "voice_source" in frame.columns:  # the paper's Section 5: neutralized voices are a setting of their own
        neutralized = frame["voice_source"].astype(str).str.lower().str.startswith("neutraliz")
        neutralized &= ~setting.str.endswith("neutralized_voice")
        setting = setting.where(
            ~neutralized,
            setting.map(lambda s: "neutralized_voice" if s == "binary_option" else f"{s}_neutralized_voice"),
        )
    frame["setting"] = setting
    return frame


def _strings(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(object).where(frame.notna(), "").astype(str).apply(lambda c: c.str.strip())


def analyze_gender_study(
    frame: pd.DataFrame,
    backbones: dict[str, str] | None = None,
    *,
    source: str = "<table>",
    failures_as_category: bool = False,
    n_resamples: int = 0,
    seed: int = DEFAULT_SEED,
    embed: Embedder | None = None,
    require_backbones: bool = True,
    progress: Progress | None = None,
) -> GenderStudy:
    """Every setting of the table apart. `backbones` {speech model: text model}; with `require_backbones` a pair
    naming a model that is not in the table is an error (flags), otherwise a note (pairs declared in a project
    before the runs). `embed` (default all-MiniLM-L6-v2) turns free answers into unit vectors; when it cannot be
    loaded, J_s and s are left out with a note and the rest is computed."""
    progress = progress or no_progress()
    backbones = dict(backbones or {})
    frame = with_settings(frame)
    models = set(frame["model"].astype(str))
    absent = sorted({m for pair in backbones.items() for m in pair if m not in models})
    notes: list[str] = []
    if absent:
        message = (
            f"backbone pair(s) name model(s) not in {source}: {', '.join(absent)} (models: {', '.join(sorted(models))})"
        )
        if require_backbones:
            raise SpokenBenchError(message)
        notes.append(message + "; those pairs are left out")
        backbones = {s: t for s, t in backbones.items() if s in models and t in models}
    settings = sorted(set(frame["setting"]), key=lambda s: (SETTINGS.index(s) if s in SETTINGS else len(SETTINGS), s))
    tables, per_questions, classified = [], [], []
    for done, setting in enumerate(settings):
        progress.check_cancelled()
        progress.report(done, len(settings), f"gender study: {SETTING_NAMES.get(setting, setting)}")
        rows = frame[frame["setting"] == setting].reset_index(drop=True)
        rows, borrowed = _with_backbone_rows(rows, frame, setting, backbones)
        if setting == "free_form":
            rows, similarity = _free_form(rows, backbones, embed, n_resamples, seed, notes, source)
            classified.append(rows)
        present = set(rows["model"].astype(str))
        pairs = {s: t for s, t in backbones.items() if s in present and t in present}
        probe_columns = [c for c in (*REQUIRED_COLUMNS, *OPTIONAL_COLUMNS) if c in rows.columns]
        data = prepare_gender_probe(_strings(rows[probe_columns]), f"{source} ({setting})")
        result = compute_gender_probe(data, pairs, failures_as_category, n_resamples, seed, progress.sub_task())
        table, per_question = result.table, result.per_question
        if setting == "free_form":
            table, per_question = _merge_free_form(table, per_question, similarity, rows)
        if borrowed:  # the backbone's own numbers belong to its setting's table, not to the neutralized one's
            table = table[~table["model"].isin(borrowed)]
            per_question = per_question[~per_question["model"].isin(borrowed)]
        tables.append(table.assign(setting=setting))
        per_questions.append(per_question.assign(setting=setting))
    progress.report(len(settings), len(settings), "gender study computed")
    table = pd.concat(tables, ignore_index=True)
    per_question = pd.concat(per_questions, ignore_index=True)
    voiced = frame["voice_gender"].astype(object).where(frame["voice_gender"].notna(), "").astype(str).str.strip()
    text_models = sorted(set(frame["model"].astype(str)) - set(frame.loc[voiced != "", "model"].astype(str)))
    table = table[["setting", *[c for c in table.columns if c != "setting"]]]
    per_question = per_question[["setting", *[c for c in per_question.columns if c != "setting"]]]
    return GenderStudy(
        table=table,
        per_question=per_question,
        settings=settings,
        backbones=backbones,
        bootstrap_resamples=n_resamples,
        seed=seed,
        notes=notes,
        text_models=text_models,
        classification=pd.concat(classified, ignore_index=True) if classified else None,
    )


def _with_backbone_rows(rows: pd.DataFrame, frame: pd.DataFrame, setting: str, backbones: dict[str, str]):
    """A neutralized-voice setting's rows, with the text backbones' answers of the setting it neutralizes added
    for the κ of its speech models (the backbones read the same text). Returns (rows, the borrowed models)."""
    base = neutralized_base(setting)
    if base is None or not backbones:
        return rows, set()
    present = set(rows["model"].astype(str))
    wanted = {t for s, t in backbones.items() if s in present and t not in present}
    if not wanted:
        return rows, set()
    extra = frame[(frame["setting"] == base) & frame["model"].astype(str).isin(wanted)]
    if extra.empty:
        return rows, set()
    extra = extra.assign(setting=setting)
    return pd.concat([rows, extra], ignore_index=True), set(extra["model"].astype(str))


def _free_form(rows, backbones, embed, n_resamples, seed, notes, source):
    if "raw_text" not in rows.columns:
        raise SpokenBenchError(
            f"{source}: free-form answers need a raw_text column (the model's reply) for J_s, Δ_s and s"
        )
    if not any(c.startswith("option_") and c not in ("option_order", "option_orientation") for c in rows.columns):
        notes.append(
            "free form: no option texts (option_a, option_b, … columns), so no answer could be classified: Δ_s "
            "undefined"
        )
    rows = classify_free_form(rows, presented_option_texts)
    similarity = None
    try:
        similarity = free_form_similarity(
            _strings(rows[["question_id", "model", "category", "voice_gender", "raw_text"]]),
            backbones,
            embed or minilm_embed,
            n_resamples,
            seed,
        )
    except SpokenBenchError as error:
        notes.append(f"free form: J_s and s not computed: {error}")
    return rows, similarity


def _merge_free_form(table, per_question, similarity, rows):
    classes = rows.groupby(["model", "category"])["classification"].value_counts().unstack(fill_value=0)
    total = classes.sum(axis=1)
    shares = pd.DataFrame(
        {
            "classified_rate": classes.get("ok", 0) / total,
            "unclassified_rate": classes.get("unclassified", 0) / total,
        }
    ).reset_index()
    table = table.merge(shares, on=["model", "category"], how="left")
    if similarity is not None and not similarity.table.empty:
        extra = similarity.table.drop(columns=["backbone"])
        table = table.merge(extra, on=["model", "category"], how="left")
        per_question = per_question.merge(similarity.per_question, on=["model", "category", "question_id"], how="left")
    else:
        table["J_s"] = table["s"] = np.nan
    table["delta_s"] = table["delta"]  # Δ over the classified answers (the paper reports it on Dependent only)
    return table, per_question


# ---------------------------------------------------------------- JSON


def gender_study_json(study: GenderStudy, setting: str | None = None) -> dict:
    """The `metrics --json` layout: keyed by model, then category (the contract of gender_probe_json, each entry
    with the new numbers added). With several settings in the table, name one, or 'all' for {setting: {model:
    {category: …}}}."""
    from spokenbench.core.metrics.analysis import clean, gender_probe_json

    if setting is None:
        if len(study.settings) > 1:
            raise SpokenBenchError(
                f"the table holds several answer settings ({', '.join(study.settings)}); name one with --setting, "
                "or --setting all"
            )
        setting = study.settings[0]
    if setting == "all":
        return {s: gender_study_json(study, s) for s in study.settings}
    if setting not in study.settings:
        raise SpokenBenchError(f"no answers in setting '{setting}' (settings: {', '.join(study.settings)})")
    one = study.for_setting(setting)
    result = gender_probe_json(one)
    extra_names = ["parse_failure_rate"]
    if setting == "free_form":
        extra_names += ["J_s", "J_s_questions", "s", "s_questions", "delta_s", "classified_rate", "unclassified_rate"]
    for _, row in one.table.iterrows():
        entry = result[row["model"]][row["category"]]
        entry["setting"] = setting
        for name in extra_names:
            if name in row:
                entry[name] = row[name]
        for name in ("J_s_questions", "s_questions"):
            if name in entry:
                entry[name] = int(entry[name]) if np.isfinite(entry[name]) else None
        if "ci" in entry:
            for name in ("parse_failure_rate", "J_s", "s") if setting == "free_form" else ("parse_failure_rate",):
                if f"{name}_ci_low" in row:
                    entry["ci"][name] = (row[f"{name}_ci_low"], row[f"{name}_ci_high"])
        if setting == "free_form":
            entry["classification_rule"] = CLASSIFICATION_RULE
    return clean(result)
