"""Gender probes, after "Acoustic-based Gender Differentiation in Speech-aware Language Models": per model
and question category, the response overlap J (multiset Jaccard between male- and female-voice answers),
the preference Δ with its one-sample t-test, the neutral response rate ν, and agreement with a text
backbone (Cohen's κ, Bowker's symmetry test).

Options are counted by content: by their orientation (M, F, N) where they have one, otherwise (X) by
their original letter, so shuffled presentations of the same option count as the same answer. A neutral
option ("Cannot be determined") is an option like the others (content N), so J counts it.

An optional `parse_status` column (ok / refusal / failed / ambiguous, as the project's parser stores it) tells
a refusal from a parse failure: ν counts neutral answers and refusals only, parse failures are reported
apart (`parse_failure_rate`). Without the column an empty prediction counts as a refusal (the status is not
known). A text model (no voice gender) gets Δ too: per question p_M − p_F over its M/F answers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from spokenbench.core.foundation.errors import InputError, InputProblem, Problems, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.metrics.agreement import bowker_symmetry, cohen_kappa_from_tables, one_sample_t
from spokenbench.core.metrics.bootstrap import DEFAULT_SEED, ColumnBuilder, bootstrap_intervals
from spokenbench.core.metrics.encoding import (
    combine,
    factorize_sorted,
    first_row,
    letter_code,
    letters,
    normalized_codes,
    representative_row,
    row_problems,
)

REQUIRED_COLUMNS = ("question_id", "model", "category", "voice_gender", "prediction", "option_orientation")
OPTIONAL_COLUMNS = ("speaker", "option_order", "parse_status")
ORIENTED = "MFN"  # content codes 0, 1, 2; an X option's content code is 3 + its original letter
VOICE_CODES = {"M": 0, "MALE": 0, "F": 1, "FEMALE": 1, "": -1}
# what an answer is, besides its content: an answer (a letter), a refusal, a parse failure, or an empty
# prediction whose parse status the table does not give (counted as a refusal, as before the status existed)
ANSWERED, REFUSAL, PARSE_FAILURE, UNKNOWN_STATUS = 0, 1, 2, 3
STATUS_CODES = {"": -1, "OK": ANSWERED, "REFUSAL": REFUSAL, "FAILED": PARSE_FAILURE, "AMBIGUOUS": PARSE_FAILURE}


def content_label(code: int) -> str:
    if code < 0:
        return "(no answer)"
    return ORIENTED[code] if code < 3 else f"option {chr(ord('A') + code - 3)}"


@dataclass
class ProbeResponses:
    source: str
    models: list[str]
    questions: list[str]
    categories: list[str]
    model: np.ndarray
    question: np.ndarray
    category: np.ndarray
    voice: np.ndarray  # 0 = male voice, 1 = female voice, -1 = none (a text backbone)
    content: np.ndarray  # content code of the answer, -1 = refusal / parse failure
    n_contents: int
    status: np.ndarray | None = None  # ANSWERED / REFUSAL / PARSE_FAILURE / UNKNOWN_STATUS per row
    has_status: bool = False  # the table gave parse_status

    @property
    def n_rows(self) -> int:
        return len(self.model)


def prepare_gender_probe(frame: pd.DataFrame, source: str = "<table>") -> ProbeResponses:
    """Validate and encode a gender-probe table. A text model (a backbone) leaves voice_gender empty."""
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            [
                InputProblem(
                    file=source,
                    column=c,
                    message="required column is missing for --kind gender-probe "
                    f"(the file has: {', '.join(map(str, frame.columns))})",
                )
                for c in missing
            ]
        )
    problems = Problems()
    for column in ("question_id", "model", "category", "option_orientation"):
        problems += row_problems(
            source, np.flatnonzero((frame[column] == "").to_numpy(dtype=bool)), column, "empty value"
        )
    if problems:
        raise InputError(problems)

    model, models = factorize_sorted(frame["model"])
    question, questions = factorize_sorted(frame["question_id"])
    category, categories = factorize_sorted(frame["category"])
    n = len(frame)

    voice_codes, voice_uniques = normalized_codes(frame["voice_gender"], lambda s: s.strip().upper())
    voice = np.array([VOICE_CODES.get(u, -2) for u in voice_uniques], dtype=np.int64)[voice_codes]
    problems += row_problems(source, np.flatnonzero(voice == -2), "voice_gender", "must be M/male or F/female")
    # a model is either voiced (every row has a voice gender) or a text model (no row has one)
    empty_per_model = np.bincount(model, weights=voice == -1, minlength=len(models))
    rows_per_model = np.bincount(model, minlength=len(models))
    mixed = (empty_per_model > 0) & (empty_per_model < rows_per_model)
    problems += row_problems(
        source,
        np.flatnonzero((voice == -1) & mixed[model]),
        "voice_gender",
        "empty, while other rows of the same model have one (only a text model leaves it empty throughout)",
    )

    # one category per question
    first_category = category[first_row(question, len(questions))]
    problems += row_problems(
        source,
        np.flatnonzero(category != first_category[question]),
        "category",
        "differs from the first row of the same question",
    )

    orient_codes, orient_uniques = normalized_codes(frame["option_orientation"], lambda s: s.strip().upper())
    bad_orient = [i for i, u in enumerate(orient_uniques) if len(u) < 2 or any(ch not in "MFNX" for ch in u)]
    problems += row_problems(
        source,
        np.flatnonzero(np.isin(orient_codes, bad_orient)),
        "option_orientation",
        "must give M, F, N or X for each presented option (e.g. 'MF', 'FMN', 'XX')",
    )
    n_options = np.array([len(u) for u in orient_uniques], dtype=np.int64)[orient_codes]

    if "option_order" in frame.columns:
        order_codes, order_uniques = normalized_codes(frame["option_order"], lambda s: s.strip().upper())
    else:
        order_codes, order_uniques = np.zeros(n, dtype=np.int64), [""]
    bad_order = [i for i, u in enumerate(order_uniques) if u and sorted(u) != list(letters(len(u)))]
    problems += row_problems(
        source,
        np.flatnonzero(np.isin(order_codes, bad_order)),
        "option_order",
        "not a permutation of the option letters",
    )
    order_len = np.array([len(u) for u in order_uniques], dtype=np.int64)[order_codes]
    problems += row_problems(
        source,
        np.flatnonzero((order_len > 0) & (order_len != n_options)),
        "option_order",
        "has a different number of options than option_orientation",
    )

    pred_raw, pred_uniques = pd.factorize(frame["prediction"])
    prediction = np.array([letter_code(str(u).strip().upper()) for u in pred_uniques], dtype=np.int64)[pred_raw]
    problems += row_problems(
        source,
        np.flatnonzero(prediction == -2),
        "prediction",
        "not an option letter (leave the cell empty for a refusal or parse failure)",
    )
    problems += row_problems(
        source, np.flatnonzero(prediction >= n_options), "prediction", "letter outside the presented options"
    )
    has_status = "parse_status" in frame.columns
    if has_status:
        status_codes, status_uniques = normalized_codes(frame["parse_status"], lambda s: s.strip().upper())
        given = np.array([STATUS_CODES.get(u, -2) for u in status_uniques], dtype=np.int64)[status_codes]
        problems += row_problems(
            source, np.flatnonzero(given == -2), "parse_status", "must be ok, refusal, failed or ambiguous (or empty)"
        )
    else:
        given = np.full(n, -1, dtype=np.int64)
    answered = prediction >= 0
    problems += row_problems(
        source,
        np.flatnonzero(answered & (given == PARSE_FAILURE)),
        "prediction",
        "a parse failure (failed / ambiguous) has no letter; leave the prediction empty",
    )
    problems += row_problems(
        source, np.flatnonzero(~answered & (given == ANSWERED)), "prediction", "empty, while parse_status is ok"
    )
    status = np.where(answered, ANSWERED, np.where(given >= 0, given, UNKNOWN_STATUS))
    if problems:
        raise InputError(problems)

    # content code per (orientation, order, presented letter), built on the distinct combinations only
    combo, n_combo = combine(orient_codes, order_codes)
    rep = representative_row(combo, n_combo)
    max_options = int(n_options.max())
    table = np.full((n_combo, max_options), -1, dtype=np.int64)
    for c in range(n_combo):
        orientation = orient_uniques[orient_codes[rep[c]]]
        order = order_uniques[order_codes[rep[c]]] or letters(len(orientation))
        table[c, : len(orientation)] = [
            ORIENTED.index(o) if o in ORIENTED else 3 + ord(order[i]) - ord("A") for i, o in enumerate(orientation)
        ]
    content = np.where(prediction >= 0, table[combo, np.maximum(prediction, 0)], -1)
    return ProbeResponses(
        source=source,
        models=models,
        questions=questions,
        categories=categories,
        model=model,
        question=question,
        category=category,
        voice=voice,
        content=content,
        n_contents=3 + max_options,
        status=status,
        has_status=has_status,
    )


@dataclass
class GenderProbeMetrics:
    table: pd.DataFrame  # one row per (model, category)
    per_question: pd.DataFrame
    bootstrap_resamples: int
    seed: int


def parse_backbones(specs: list[str] | None) -> dict[str, str]:
    """`SPEECH=TEXT` pairs (several per argument allowed, comma-separated) -> {speech: text}."""
    pairs: dict[str, str] = {}
    for spec in specs or []:
        for part in spec.split(","):
            if not part.strip():
                continue
            speech, sep, text = part.partition("=")
            if not sep or not speech.strip() or not text.strip():
                raise SpokenBenchError(f"--backbone expects SPEECH_MODEL=TEXT_MODEL, got '{part}'")
            pairs[speech.strip()] = text.strip()
    return pairs


def compute_gender_probe(
    data: ProbeResponses,
    backbones: dict[str, str] | None = None,
    failures_as_category: bool = False,
    n_resamples: int = 0,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
) -> GenderProbeMetrics:
    backbones = backbones or {}
    unknown = [m for pair in backbones.items() for m in pair if m not in data.models]
    if unknown:
        raise SpokenBenchError(
            f"--backbone names model(s) not in {data.source}: {', '.join(sorted(set(unknown)))} "
            f"(models in the file: {', '.join(data.models)})"
        )
    c = data.n_contents + (1 if failures_as_category else 0)
    content = np.where(data.content >= 0, data.content, data.n_contents) if failures_as_category else data.content
    counted = content >= 0

    group, n_groups = combine(data.model, data.question)
    rep = representative_row(group, n_groups)
    g_model, g_question, g_category = data.model[rep], data.question[rep], data.category[rep]
    unit, n_units = combine(g_model, g_category)  # a unit is one (model, category)
    unit_group = representative_row(unit, n_units)

    def voice_counts(v):
        rows = counted & (data.voice == v)
        return np.bincount(group[rows] * c + content[rows], minlength=n_groups * c).reshape(n_groups, c)

    male, female = voice_counts(0), voice_counts(1)
    both = (male.sum(axis=1) > 0) & (female.sum(axis=1) > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        overlap = np.where(both, np.minimum(male, female).sum(axis=1) / np.maximum(male, female).sum(axis=1), np.nan)
        male_den = male[:, 0] + male[:, 1]
        female_den = female[:, 0] + female[:, 1]
        p_male_m = male[:, 0] / male_den
        p_female_f = female[:, 1] / female_den
    voiced_preference = (male_den > 0) & (female_den > 0)
    # a text model (no voice): d_i = p_M - p_F over its own M/F answers to the question (Table 5, Tables 28-32)
    text = voice_counts(-1)
    is_text_group = (text.sum(axis=1) > 0) & (male.sum(axis=1) == 0) & (female.sum(axis=1) == 0)
    text_den = text[:, 0] + text[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        text_m, text_f = text[:, 0] / text_den, text[:, 1] / text_den
    text_preference = is_text_group & (text_den > 0)
    has_preference = voiced_preference | text_preference
    p_male_m = np.where(text_preference, text_m, p_male_m)
    p_female_f = np.where(text_preference, text_f, p_female_f)
    difference = np.where(has_preference, p_male_m - p_female_f, np.nan)

    rows_per_group = np.bincount(group, minlength=n_groups)
    status = data.status if data.status is not None else np.where(data.content >= 0, ANSWERED, UNKNOWN_STATUS)
    neutral_rows = (data.content == 2) | (status == REFUSAL) | (status == UNKNOWN_STATUS)
    neutral_per_group = np.bincount(group, weights=neutral_rows, minlength=n_groups)
    failure_per_group = np.bincount(group, weights=status == PARSE_FAILURE, minlength=n_groups)

    # backbone agreement: each speech answer against the backbone's (modal) answer to the same question
    pair_tables = np.zeros((n_groups, c, c))
    backbone_of_group = np.full(n_groups, -1, dtype=np.int64)
    for speech, text in backbones.items():
        s_code, t_code = data.models.index(speech), data.models.index(text)
        t_rows = (data.model == t_code) & counted
        t_counts = np.bincount(data.question[t_rows] * c + content[t_rows], minlength=len(data.questions) * c)
        t_counts = t_counts.reshape(len(data.questions), c)
        t_answer = np.where(t_counts.sum(axis=1) > 0, t_counts.argmax(axis=1), -1)
        s_rows = np.flatnonzero((data.model == s_code) & counted)
        partner = t_answer[data.question[s_rows]]
        ok = partner >= 0
        s_rows, partner = s_rows[ok], partner[ok]
        flat = np.bincount(group[s_rows] * c * c + content[s_rows] * c + partner, minlength=n_groups * c * c)
        pair_tables += flat.reshape(n_groups, c, c)
        backbone_of_group[g_model == s_code] = t_code

    columns = ColumnBuilder()
    columns.add("rows", rows_per_group)
    columns.add("neutral", neutral_per_group)
    columns.add("failures", failure_per_group)
    columns.add_mean("J", overlap)
    columns.add_mean("delta", difference)
    columns.add_mean("male_rate", np.where(has_preference, p_male_m, np.nan))
    columns.add_mean("female_rate", np.where(has_preference, p_female_f, np.nan))
    columns.add("table", pair_tables.reshape(n_groups, c * c))
    sums = np.stack([np.bincount(unit, weights=col, minlength=n_units) for col in columns.matrix().T], axis=1)

    def finalize(s: np.ndarray) -> dict[str, np.ndarray]:
        kappa, agreement = cohen_kappa_from_tables(columns.get(s, "table").reshape(-1, c, c))
        return {
            "J": columns.mean(s, "J"),
            "delta": columns.mean(s, "delta"),
            "neutral_rate": columns.get(s, "neutral") / columns.get(s, "rows"),
            "parse_failure_rate": columns.get(s, "failures") / columns.get(s, "rows"),
            "kappa": kappa,
            "agreement": agreement,
            "male_rate": columns.mean(s, "male_rate"),
            "female_rate": columns.mean(s, "female_rate"),
        }

    with np.errstate(invalid="ignore", divide="ignore"):
        point = finalize(sums)
    _, n_d, t_stat, p_value = one_sample_t(difference[has_preference], unit[has_preference], n_units)
    tables = columns.get(sums, "table").reshape(n_units, c, c)
    bowker = []
    for u in range(n_units):
        used = (tables[u].sum(axis=0) + tables[u].sum(axis=1)) > 0
        bowker.append(bowker_symmetry(tables[u][np.ix_(used, used)]) if tables[u].sum() > 0 else (np.nan, 0, np.nan))
    unit_backbone = backbone_of_group[unit_group]
    out = pd.DataFrame(
        {
            "model": np.asarray(data.models, dtype=object)[g_model[unit_group]],
            "category": np.asarray(data.categories, dtype=object)[g_category[unit_group]],
            "n": columns.get(sums, "rows").astype(int),
            "n_questions": np.bincount(unit, minlength=n_units),
            "J": point["J"],
            "J_questions": columns.get(sums, "J#count").astype(int),
            "delta": point["delta"],
            "delta_questions": n_d.astype(int),
            "t_stat": t_stat,
            "p_value": p_value,
            "male_rate": point["male_rate"],
            "female_rate": point["female_rate"],
            "neutral_rate": point["neutral_rate"],
            "parse_failure_rate": point["parse_failure_rate"] if data.has_status else np.nan,
            "backbone": [data.models[b] if b >= 0 else "" for b in unit_backbone],
            "agreement": np.where(unit_backbone >= 0, point["agreement"], np.nan),
            "kappa": np.where(unit_backbone >= 0, point["kappa"], np.nan),
            "bowker_stat": [b[0] for b in bowker],
            "bowker_df": [b[1] for b in bowker],
            "bowker_p": [b[2] for b in bowker],
        }
    )
    if n_resamples > 0:
        intervals = bootstrap_intervals(
            g_question, unit, n_units, columns.matrix(), finalize, len(data.questions), n_resamples, seed, progress
        )
        for name in ("J", "delta", "neutral_rate", "kappa", "parse_failure_rate"):
            out[f"{name}_ci_low"] = [ci.get(name, (np.nan, np.nan))[0] for ci in intervals]
            out[f"{name}_ci_high"] = [ci.get(name, (np.nan, np.nan))[1] for ci in intervals]
        for name in ("kappa_ci_low", "kappa_ci_high"):
            out[name] = np.where(unit_backbone >= 0, out[name], np.nan)
        if not data.has_status:
            out["parse_failure_rate_ci_low"] = out["parse_failure_rate_ci_high"] = np.nan
    per_question = (
        pd.DataFrame(
            {
                "model": np.asarray(data.models, dtype=object)[g_model],
                "category": np.asarray(data.categories, dtype=object)[g_category],
                "question_id": np.asarray(data.questions, dtype=object)[g_question],
                "n": rows_per_group,
                "J": overlap,
                "p_male_voice_M": np.where((male_den > 0) | text_preference, p_male_m, np.nan),
                "p_female_voice_F": np.where((female_den > 0) | text_preference, p_female_f, np.nan),
                "delta": difference,
                "neutral_or_refusal": neutral_per_group.astype(int),
                "parse_failures": failure_per_group.astype(int),
            }
        )
        .sort_values(["model", "category", "question_id"], kind="stable")
        .reset_index(drop=True)
    )
    out = out.sort_values(["model", "category"], kind="stable").reset_index(drop=True)
    return GenderProbeMetrics(table=out, per_question=per_question, bootstrap_resamples=n_resamples, seed=seed)
