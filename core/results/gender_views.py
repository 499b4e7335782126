"""The Results page's gender-probe detail (issue 12 item 7), Qt-free: computed off the UI thread, drawn by
widgets/gender_panel.py.

    view = gender_view(project, run_ids=[4, 5, 6])     # per setting × model × category J, Δ (t-test), ν, κ
    view.summary                                        # with 95% intervals and significance marks
    view.distributions                                  # male- vs female-voice answers per question, disagreement
    versions = question_versions(project, item_id)      # the male, female and neutralized clips of one probe

The numbers are the metrics engine's (core/metrics/gender_study.py, the same as `spokenbench report --kind
gender-probe`): each answer setting (binary options, neutral option, free form, neutralized voice) apart, κ against
the project's declared backbone pairs (`spokenbench backbone`). In the neutralized-voice setting (`spokenbench
evaluate … --voice-kind neutralized`, the paper's Table 4) "male" and "female" are the voices the neutralized clips
were made from, and κ is against the backbone's binary-option answers."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.metrics.bootstrap import DEFAULT_SEED

DEFAULT_RESAMPLES = 1000
# significance of Δ from the one-sample t-test of the per-question differences against 0 (two-sided)
SIGNIFICANCE = ((0.001, "***"), (0.01, "**"), (0.05, "*"))
SIGNIFICANCE_NOTE = "* p < 0.05, ** p < 0.01, *** p < 0.001 (one-sample t-test of the per-question Δ against 0)"
CATEGORIES = ("independent", "stereotypical", "dependent")
# what an answer was, in the distributions: the option's orientation, else its original letter
ANSWER_NAMES = {
    "M": "male-oriented option",
    "F": "female-oriented option",
    "N": "neutral option",
    "refusal": "refusal",
    "failed": "no parseable answer",
}
VERSION_KINDS = ("male", "female", "neutralized")


def voice_names(setting: str) -> tuple[str, str]:
    """How a setting's two voice groups are named: the male and female voices, or in a neutralized-voice setting
    (the paper's Table 4) the neutralized clips made from a male and from a female voice, which J and Δ compare."""
    from spokenbench.core.metrics.gender_study import neutralized_base

    if neutralized_base(str(setting)) is not None:
        return "neutralized from male", "neutralized from female"
    return "male voice", "female voice"


def significance_mark(p_value) -> str:
    if p_value is None or (isinstance(p_value, float) and math.isnan(p_value)):
        return ""
    for limit, mark in SIGNIFICANCE:
        if p_value < limit:
            return mark
    return ""


@dataclass
class GenderView:
    summary: pd.DataFrame  # one row per (setting, model, category)
    distributions: pd.DataFrame  # one row per (setting, voiced model, question)
    settings: list[str]
    setting_names: dict[str, str]
    backbones: dict[str, str]
    simulated: dict[str, bool]
    questions: list[dict]  # the project's gender probes (item id, question id, category, text)
    n_resamples: int
    notes: list[str] = field(default_factory=list)
    empty: str | None = None  # why there is nothing to show

    def summary_for(self, setting: str) -> pd.DataFrame:
        return self.summary[self.summary["setting"] == setting].reset_index(drop=True)

    def distributions_for(self, setting: str, model: str | None = None) -> pd.DataFrame:
        rows = self.distributions[self.distributions["setting"] == setting]
        if model:
            rows = rows[rows["model"] == model]
        return rows.reset_index(drop=True)

    def item_id_of(self, question_id: str) -> int | None:
        return next((q["item_id"] for q in self.questions if q["question_id"] == question_id), None)


def gender_view(
    project, run_ids=None, *, n_resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED, progress=None
) -> GenderView:
    """The gender-probe detail of the selected runs (all when None) of an open project."""
    from spokenbench.core.metrics.gender_study import SETTING_NAMES, analyze_gender_study, project_study_frame
    from spokenbench.core.store.gender_clips import gender_probe_items

    questions = gender_probe_items(project.conn)
    try:
        frame, pairs = project_study_frame(project.path)
    except SpokenBenchError as error:
        return _empty_view(questions, n_resamples, str(error).split(": ", 1)[-1])
    if run_ids is not None:
        frame = frame[frame["run_id"].isin(list(run_ids))].reset_index(drop=True)
    if frame.empty:
        return _empty_view(questions, n_resamples, "none of the selected runs answered the gender probes")
    study = analyze_gender_study(
        frame,
        pairs,
        source="the selected runs",
        n_resamples=n_resamples,
        seed=seed,
        require_backbones=False,
        progress=progress,
    )
    simulated = {str(m): bool((g["mode"].astype(str) == "simulated").any()) for m, g in frame.groupby("model")}
    summary = study.table.copy()
    summary["mark"] = [significance_mark(p) for p in summary["p_value"]]
    summary["source"] = summary["model"].map(lambda m: "yours (simulated)" if simulated.get(m) else "yours")
    summary["category"] = pd.Categorical(summary["category"], categories=_categories(summary["category"]))
    summary = summary.sort_values(["setting", "model", "category"], key=_setting_order, kind="stable")
    summary["category"] = summary["category"].astype(str)
    texts = {q["question_id"]: q["question"] for q in questions}
    distributions = answer_distributions(study.per_question, frame, texts)
    return GenderView(
        summary=summary.reset_index(drop=True),
        distributions=distributions,
        settings=study.settings,
        setting_names={s: SETTING_NAMES.get(s, s) for s in study.settings},
        backbones=study.backbones,
        simulated=simulated,
        questions=questions,
        n_resamples=n_resamples,
        notes=study.notes,
    )


def compute_gender_view(
    project_path: str, run_ids=None, n_resamples: int = DEFAULT_RESAMPLES, progress=None
) -> GenderView:
    """`gender_view` on a fresh read-only connection, as a `task_call`: the Results page runs it in a job process
    as it does the panels, so the app never loads the statistics (scipy) or holds their tables' working memory."""
    from spokenbench.core.results.snapshot import open_read_only

    project = open_read_only(project_path)
    try:
        return gender_view(project, run_ids, n_resamples=n_resamples, progress=progress)
    finally:
        project.close()


def _categories(values) -> list[str]:
    present = [str(v) for v in pd.unique(values)]
    return [c for c in CATEGORIES if c in present] + sorted(c for c in present if c not in CATEGORIES)


def _setting_order(column: pd.Series) -> pd.Series:
    if column.name != "setting":
        return column
    from spokenbench.core.metrics.gender_study import SETTINGS

    return column.map(lambda s: SETTINGS.index(s) if s in SETTINGS else len(SETTINGS))


def _empty_view(questions, n_resamples, why: str) -> GenderView:
    return GenderView(
        summary=pd.DataFrame(columns=["setting", "model", "category", "J", "delta", "p_value", "mark"]),
        distributions=pd.DataFrame(columns=["setting", "model", "question_id", "disagreement"]),
        settings=[],
        setting_names={},
        backbones={},
        simulated={},
        questions=questions,
        n_resamples=n_resamples,
        empty=f"No gender-probe answers to show: {why}.",
    )


def answer_code(prediction, option_order, option_orientation, parse_status) -> str:
    """What an answer was: M / F / N (the chosen option's orientation), the original letter of an option without
    one, 'refusal' or 'failed'. The prediction is a presented letter; orientations are per presented option."""
    letter = "" if prediction is None or (isinstance(prediction, float) and math.isnan(prediction)) else str(prediction)
    letter = letter.strip().upper()
    if not letter:
        return "refusal" if str(parse_status).strip().lower() == "refusal" else "failed"
    index = ord(letter) - ord("A")
    orientation = str(option_orientation or "")
    content = orientation[index] if 0 <= index < len(orientation) else "X"
    if content in "MFN":
        return content
    order = str(option_order or "")
    return order[index] if 0 <= index < len(order) else letter


def describe_counts(counts: Counter) -> str:
    """'M 4 · F 1 · N 1': each answer's code and how often, most frequent first."""
    short = {"refusal": "refusal", "failed": "failed"}
    return " · ".join(
        f"{short.get(code, code)} {n}" for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    )


def answer_distributions(per_question: pd.DataFrame, frame: pd.DataFrame, texts: dict[str, str]) -> pd.DataFrame:
    """One row per (setting, voiced model, question): the male- and female-voice answers as counts ('M 4 · F 1'),
    the shares of male-oriented answers, the engine's J and Δ for the question, and disagreement = 1 − J."""
    from spokenbench.core.metrics.gender_study import with_settings

    frame = with_settings(frame)
    voice = frame["voice_gender"].astype(object).where(frame["voice_gender"].notna(), "").astype(str).str.lower()
    frame = frame.assign(
        voice=voice.map(lambda v: "male" if v in ("m", "male") else "female" if v in ("f", "female") else ""),
        code=[
            answer_code(p, o, r, s)
            for p, o, r, s in zip(
                frame["prediction"], frame["option_order"], frame["option_orientation"], frame["parse_status"]
            )
        ],
    )
    frame = frame[frame["voice"] != ""]
    option_text = {}
    for record in frame.drop_duplicates("question_id").to_dict("records"):
        option_text[record["question_id"]] = {
            letter.upper(): str(record.get(f"option_{letter}"))
            for letter in "abcd"
            if isinstance(record.get(f"option_{letter}"), str)
        }
    rows = []
    for (setting, model, question), group in frame.groupby(["setting", "model", "question_id"], sort=True):
        male = Counter(group.loc[group["voice"] == "male", "code"])
        female = Counter(group.loc[group["voice"] == "female", "code"])
        rows.append(
            {
                "setting": setting,
                "model": model,
                "question_id": question,
                "category": str(group["category"].iloc[0]),
                "question": texts.get(question, ""),
                "male_voice": describe_counts(male),
                "female_voice": describe_counts(female),
                "n_male": sum(male.values()),
                "n_female": sum(female.values()),
                "male_voice_M": _share(male, "M"),
                "female_voice_M": _share(female, "M"),
                "legend": _legend(male, female, option_text.get(question, {})),
            }
        )
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=["setting", "model", "question_id", "disagreement"])
    engine = per_question[["setting", "model", "question_id", "J", "delta"]]
    out = out.merge(engine, on=["setting", "model", "question_id"], how="left")
    out["disagreement"] = 1.0 - out["J"]
    return out.sort_values(
        ["setting", "model", "disagreement"], ascending=[True, True, False], kind="stable"
    ).reset_index(drop=True)


def _share(counts: Counter, code: str) -> float:
    oriented = counts.get("M", 0) + counts.get("F", 0)
    return counts.get(code, 0) / oriented if oriented else np.nan


def _legend(male: Counter, female: Counter, options: dict[str, str]) -> str:
    codes = sorted(set(male) | set(female))
    return "\n".join(f"{code}: {ANSWER_NAMES.get(code) or options.get(code, 'option ' + code)}" for code in codes)


# --------------------------------------------------------------------------------------------------
# The listening view


@dataclass(frozen=True)
class QuestionVersion:
    kind: str  # 'male', 'female' or 'neutralized'
    voice: str
    accent: str
    gender: str  # the voice's gender; for a neutralized clip, the gender it was made from
    neutralization: str  # '' or how it was neutralized ('signal-approximation', 'embedding-average')
    path: str
    seconds: float

    @property
    def label(self) -> str:
        made = f" · from {self.gender}" if self.neutralization else ""
        return f"{self.voice} · {self.accent}{made} · {self.seconds:.1f} s"


@dataclass
class QuestionVersions:
    item_id: int
    question_id: str
    category: str
    question: str
    versions: dict[str, list[QuestionVersion]]  # kind → clips, the preferred one (the shared accent) first

    def first(self, kind: str) -> QuestionVersion | None:
        found = self.versions.get(kind) or []
        return found[0] if found else None


def question_versions(project, item_id: int) -> QuestionVersions:
    """The stored question clips of one gender probe by kind: male and female voices (clips.speaker_gender, not
    neutralized) and neutralized voices (clips.neutralization set). Each kind lists the accent that all three
    kinds share first, then the rest, so the three first entries are comparable."""
    from spokenbench.core.store.gender_clips import gender_probe_items, question_clip_rows
    from spokenbench.core.store.project import audio_store_of

    conn = project.conn
    item = next((q for q in gender_probe_items(conn) if q["item_id"] == item_id), None)
    if item is None:
        raise SpokenBenchError(f"item {item_id} is not a gender probe of this project")
    audio = audio_store_of(conn)
    versions: dict[str, list[QuestionVersion]] = {kind: [] for kind in VERSION_KINDS}
    for clip in question_clip_rows(conn, item_id):
        kind = "neutralized" if clip["neutralization"] else (clip["speaker_gender"] or "")
        if kind not in versions:
            continue
        versions[kind].append(
            QuestionVersion(
                kind=kind,
                voice=clip["voice"] or clip["backend"],
                accent=clip["accent"] or "",
                gender=clip["speaker_gender"] or "",
                neutralization=clip["neutralization"] or "",
                path=str(audio.path_for(clip["sha256"], clip["audio_format"])),
                seconds=float(clip["duration_s"] or 0.0),
            )
        )
    accents = [{v.accent for v in versions[kind]} for kind in VERSION_KINDS if versions[kind]]
    shared = sorted(set.intersection(*accents)) if accents else []
    for kind in VERSION_KINDS:
        versions[kind].sort(key=lambda v: 0 if shared and v.accent == shared[0] else 1)
    return QuestionVersions(item_id, item["question_id"], item["category"], item["question"], versions)
