"""The multiple-choice responses table: validation and integer encoding.

One row per model answer. Letters are turned into codes once; `chosen` is the original option the model
picked (through `option_order`), `gold_position` the presented position of the gold answer. Every metric
works on these arrays. Bad input is reported all at once as an `InputError` (file, row, column)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from spokenbench.core.foundation.errors import InputError, InputProblem, Problems
from spokenbench.core.foundation.tables import TextColumn, TextColumns
from spokenbench.core.metrics.encoding import (
    combine,
    determines,
    factorize_sorted,
    first_row,
    letter_code,
    letters,
    normalized_codes,
    representative_row,
    row_problems,
)

if TYPE_CHECKING:
    import pandas as pd

REQUIRED_COLUMNS = ("question_id", "model", "answer", "prediction")
OPTIONAL_COLUMNS = ("option_order", "cultural_label", "subject")
KNOWN_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
DEFAULT_OPTION_COUNT = 4
CULTURAL_LABELS = ("CA", "CS")  # codes 0 and 1, in this (sorted) order
MAX_AUTO_FACTOR_LEVELS = 100


@dataclass
class McqResponses:
    """Encoded responses. Row arrays have one entry per input row; group arrays one per (model, question)."""

    source: str
    models: list[str]
    questions: list[str]
    factors: list[str]
    factor_levels: dict[str, list[str]]
    model: np.ndarray
    question: np.ndarray
    factor_codes: dict[str, np.ndarray]
    answer: np.ndarray  # gold, original option code
    prediction: np.ndarray  # presented letter code, -1 = parse failure
    chosen: np.ndarray  # original option code the model chose, -1 = parse failure
    gold_position: np.ndarray  # presented position of the gold answer
    n_options: np.ndarray  # per row (constant within a question)
    is_identity: np.ndarray  # presented in the original order
    is_reversed: np.ndarray  # presented in exactly the reversed order
    is_cyclic: np.ndarray  # presented in a rotation of the original order (identity included)
    order_code: np.ndarray  # code of the presented permutation
    orders: list[str]
    cultural_label: np.ndarray  # 0 = CA, 1 = CS, -1 = unlabelled
    subject: np.ndarray | None
    subjects: list[str]
    group: np.ndarray  # (model, question) group per row
    group_model: np.ndarray
    group_question: np.ndarray
    group_n_options: np.ndarray
    group_cultural_label: np.ndarray
    max_options: int
    ignored_columns: dict[str, str] = field(default_factory=dict)
    dependencies: frozenset = frozenset()  # (a, b) pairs of factors where a's level determines b's

    @property
    def n_rows(self) -> int:
        return len(self.model)

    @property
    def n_groups(self) -> int:
        return len(self.group_model)

    @property
    def valid(self) -> np.ndarray:
        return self.chosen >= 0

    @property
    def correct(self) -> np.ndarray:
        return self.chosen == self.answer

    def factor_determines(self, a: str, b: str) -> bool:
        """Whether factor `a`'s level fixes factor `b`'s (accent -> language), judged on the whole table."""
        return (a, b) in self.dependencies

    def factors_determined_by_order(self) -> list[str]:
        """Factors whose level follows from the presented permutation (e.g. an `order` column)."""
        if len(self.orders) <= 1:
            return []
        return [f for f in self.factors if determines(self.order_code, self.factor_codes[f])]

    def without_rows(self) -> McqResponses:
        """These responses with every per-row array empty: what is per group and per model (the figures' inputs),
        a few MB fewer to send to another process (issue 28)."""
        rows = {name: getattr(self, name)[:0] for name in ROW_ARRAYS if getattr(self, name) is not None}
        return replace(self, factor_codes={f: codes[:0] for f, codes in self.factor_codes.items()}, **rows)


ROW_ARRAYS = (  # McqResponses' per-row arrays (and factor_codes' values), emptied by without_rows
    "model",
    "question",
    "answer",
    "prediction",
    "chosen",
    "gold_position",
    "n_options",
    "is_identity",
    "is_reversed",
    "is_cyclic",
    "order_code",
    "cultural_label",
    "subject",
    "group",
)


def prepare_mcq(
    frame: TextColumns | pd.DataFrame, factors: list[str] | None = None, source: str = "<table>"
) -> McqResponses:
    """Validate and encode a responses table: text columns (`read_responses_columns`) or a DataFrame of strings
    (`read_responses_file`)."""
    frame = TextColumns.of(frame)
    problems = Problems()
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            [
                InputProblem(
                    file=source,
                    column=c,
                    message=f"required column is missing (the file has: {', '.join(map(str, frame.columns))})",
                )
                for c in missing
            ]
        )
    chosen_factors, ignored = _resolve_factors(frame, factors, source)
    n = len(frame)
    if n == 0:
        raise InputError(InputProblem(file=source, message="the table has no rows"))

    for column in ("question_id", "model"):
        empty = np.flatnonzero(frame[column].is_empty())
        problems += row_problems(source, empty, column, "empty value")
    for f in chosen_factors:
        empty = np.flatnonzero(frame[f].is_empty())
        problems += row_problems(
            source, empty, f, "empty factor level; fill it in or leave the factor out with --factors"
        )
    if problems:
        raise InputError(problems)

    model, models = factorize_sorted(frame["model"])
    question, questions = factorize_sorted(frame["question_id"])
    n_questions = len(questions)

    # option_order: presented permutation per row; its length gives the question's number of options
    has_order = "option_order" in frame.columns
    if has_order:
        order_raw, order_uniques = normalized_codes(frame["option_order"], lambda s: s.strip().upper())
    else:
        order_raw, order_uniques = np.zeros(n, dtype=np.int64), [""]
    order_len = np.array([len(u) for u in order_uniques], dtype=np.int64)[order_raw]
    n_opt_q = np.zeros(n_questions, dtype=np.int64)
    np.maximum.at(n_opt_q, question, order_len)
    n_opt_q = np.where(n_opt_q == 0, DEFAULT_OPTION_COUNT, n_opt_q)
    n_options = n_opt_q[question]

    bad_perm = [i for i, u in enumerate(order_uniques) if u and (sorted(u) != list(letters(len(u))) or len(u) < 2)]
    if bad_perm:
        rows = np.flatnonzero(np.isin(order_raw, bad_perm))
        problems += row_problems(
            source, rows, "option_order", "not a permutation of the option letters (expected e.g. 'ABCD' or 'DCBA')"
        )
    wrong_len = np.flatnonzero((order_len > 0) & (order_len != n_options))
    problems += row_problems(
        source, wrong_len, "option_order", "has a different number of options than other rows of the same question"
    )
    if problems:
        raise InputError(problems)

    # presented permutation per row as a table of original codes; empty option_order = identity
    perm_strings = [u if u else None for u in order_uniques]
    distinct_keys, key_index = np.unique(order_raw * 64 + n_options, return_inverse=True)
    max_options = int(n_options.max())
    perm_table = np.full((len(distinct_keys), max_options), -1, dtype=np.int64)
    order_names = []
    for k, key in enumerate(distinct_keys):
        raw, count = divmod(int(key), 64)
        text = perm_strings[raw] or letters(count)
        perm_table[k, :count] = [ord(ch) - 65 for ch in text]
        order_names.append(text)
    order_code = key_index.astype(np.int64)
    identity = np.array([name == letters(len(name)) for name in order_names])
    reversed_ = np.array([name == letters(len(name))[::-1] for name in order_names])
    cyclic = np.array(
        [name in {letters(len(name))[i:] + letters(len(name))[:i] for i in range(len(name))} for name in order_names]
    )
    inverse_table = np.full_like(perm_table, -1)
    for k in range(len(order_names)):
        count = len(order_names[k])
        inverse_table[k, perm_table[k, :count]] = np.arange(count)

    # answer and prediction letters
    answer_code = _letter_codes(frame["answer"])
    prediction_code = _letter_codes(frame["prediction"])
    opt_text = "" if has_order else " (the file has no option_order column, so 4 options A-D are assumed)"
    problems += row_problems(source, np.flatnonzero(answer_code == -1), "answer", "empty gold answer")
    problems += row_problems(source, np.flatnonzero(answer_code == -2), "answer", "not an option letter")
    problems += row_problems(
        source, np.flatnonzero(answer_code >= n_options), "answer", "letter outside the question's options" + opt_text
    )
    problems += row_problems(
        source,
        np.flatnonzero(prediction_code == -2),
        "prediction",
        "not an option letter (leave the cell empty for a parse failure)",
    )
    problems += row_problems(
        source,
        np.flatnonzero(prediction_code >= n_options),
        "prediction",
        "letter outside the presented options" + opt_text,
    )
    if problems:
        raise InputError(problems)

    # one gold answer per question
    gold_first = answer_code[first_row(question, n_questions)]
    disagree = np.flatnonzero(answer_code != gold_first[question])
    if len(disagree):
        bad_questions = _in_first_order(question[disagree])
        for q in bad_questions[:20]:
            rows = np.flatnonzero(question == q)
            seen = {}
            for r in rows:
                seen.setdefault(chr(65 + answer_code[r]), int(r) + 1)
            detail = ", ".join(f"{letter} (row {row})" for letter, row in sorted(seen.items(), key=lambda kv: kv[1]))
            problems.append(
                InputProblem(
                    file=source,
                    column="answer",
                    row=int(rows[0]) + 1,
                    message=f"question '{questions[q]}' has different gold answers: {detail}",
                )
            )
        if len(bad_questions) > 20:
            problems.append(
                InputProblem(
                    file=source,
                    column="answer",
                    message=f"... and {len(bad_questions) - 20} more questions with differing gold answers",
                )
            )
        raise InputError(problems)

    chosen = np.where(prediction_code >= 0, perm_table[order_code, np.maximum(prediction_code, 0)], -1)
    gold_position = inverse_table[order_code, answer_code]

    # cultural label (optional): CS / CA / empty, one per question
    cultural = np.full(n, -1, dtype=np.int64)
    if "cultural_label" in frame.columns:
        codes, uniques = normalized_codes(frame["cultural_label"], lambda s: s.strip().upper())
        mapping = np.array(
            [CULTURAL_LABELS.index(u) if u in CULTURAL_LABELS else (-1 if u == "" else -2) for u in uniques],
            dtype=np.int64,
        )
        cultural = mapping[codes]
        problems += row_problems(source, np.flatnonzero(cultural == -2), "cultural_label", "must be CS, CA or empty")
        if problems:
            raise InputError(problems)
        label_q = cultural[first_row(question, n_questions)]
        differing = np.flatnonzero(cultural != label_q[question])
        if len(differing):
            raise InputError(
                row_problems(source, differing, "cultural_label", "differs from the first row of the same question")
            )

    subject = None
    subjects: list[str] = []
    if "subject" in frame.columns:
        subject, subjects = factorize_sorted(frame["subject"])

    factor_codes: dict[str, np.ndarray] = {}
    factor_levels: dict[str, list[str]] = {}
    for f in chosen_factors:
        factor_codes[f], factor_levels[f] = factorize_sorted(frame[f])

    dependencies = frozenset(
        (a, b)
        for a in chosen_factors
        for b in chosen_factors
        if a != b and determines(factor_codes[a], factor_codes[b])
    )
    group, n_groups = combine(model, question)
    first = representative_row(group, n_groups)

    return McqResponses(
        source=source,
        models=models,
        questions=questions,
        factors=chosen_factors,
        factor_levels=factor_levels,
        model=model,
        question=question,
        factor_codes=factor_codes,
        answer=answer_code,
        prediction=prediction_code,
        chosen=chosen,
        gold_position=gold_position,
        n_options=n_options,
        is_identity=identity[order_code],
        is_reversed=reversed_[order_code],
        is_cyclic=cyclic[order_code],
        order_code=order_code,
        orders=order_names,
        cultural_label=cultural,
        subject=subject,
        subjects=subjects,
        group=group,
        group_model=model[first],
        group_question=question[first],
        group_n_options=n_options[first],
        group_cultural_label=cultural[first],
        max_options=max_options,
        ignored_columns=ignored,
        dependencies=dependencies,
    )


def _letter_codes(column: TextColumn) -> np.ndarray:
    lookup = np.array([letter_code(u.strip().upper()) for u in column.values] + [-1], dtype=np.int64)
    return lookup[column.codes]


def _in_first_order(values: np.ndarray) -> np.ndarray:
    """The distinct values in the order they first occur."""
    _, first = np.unique(values, return_index=True)
    return values[np.sort(first)]


def _resolve_factors(frame: TextColumns, factors: list[str] | None, source: str) -> tuple[list[str], dict[str, str]]:
    """The factor columns: those named, or by default every other column that looks like a factor
    (2 to 100 distinct values, none empty). Columns passed over are returned with the reason."""
    if factors is not None:
        unknown = [f for f in factors if f not in frame.columns]
        reserved = [f for f in factors if f in KNOWN_COLUMNS and f != "option_order"]
        problems = [
            InputProblem(
                file=source,
                column=f,
                message="unknown factor: no such column "
                f"(candidate factor columns: {', '.join(_candidates(frame)) or 'none'})",
            )
            for f in unknown
        ]
        problems += [
            InputProblem(file=source, column=f, message="this column has a fixed meaning and cannot be a factor")
            for f in reserved
        ]
        if problems:
            raise InputError(problems)
        return list(dict.fromkeys(factors)), {}
    chosen, ignored = [], {}
    for column in _candidates(frame):
        values = frame[column]
        distinct = len(values.values)
        if "" in values.values:
            ignored[column] = "has empty cells"
        elif distinct > MAX_AUTO_FACTOR_LEVELS:
            ignored[column] = f"{distinct} distinct values"
        elif distinct < 2:
            ignored[column] = "only one level"
        else:
            chosen.append(column)
    return chosen, ignored


def _candidates(frame: TextColumns) -> list[str]:
    return [str(c) for c in frame.columns if c not in KNOWN_COLUMNS]
