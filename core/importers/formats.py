"""The three input formats. Each parser turns a whole `Table` into `Item`s or raises one `InputError`
listing every problem (file, row, column); nothing is written until a parser has accepted everything."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from spokenbench.core.domain.items import CULTURAL_LABELS, GENDER_PROBE_CATEGORIES, LETTERS, Item, Option
from spokenbench.core.foundation.errors import InputError, InputProblem, Problems
from spokenbench.core.foundation.tables import Table
from spokenbench.core.importers.fields import (
    DEFAULT_MAX_TEXT_CHARS,
    RowReader,
    check_duplicates,
    check_language,
    check_options,
    require_columns,
    resolve_answer,
)

GLOBAL_MMLU_LITE_LANGUAGES = {
    "ar",
    "bn",
    "de",
    "en",
    "es",
    "fr",
    "hi",
    "id",
    "it",
    "ja",
    "ko",
    "my",
    "pt",
    "sw",
    "yo",
    "zh",
}
ORIENTATION_ALIASES = {
    "male": "male",
    "m": "male",
    "male-oriented": "male",
    "female": "female",
    "f": "female",
    "female-oriented": "female",
    "neutral": "neutral",
    "n": "neutral",
    "none": None,
    "x": None,
    "": None,
}


@dataclass
class ImportOptions:
    """What the user said on the command line or in the import dialog."""

    language: str | None = None
    source: str | None = None
    mapping: dict[str, str] = field(default_factory=dict)  # field -> column (options: comma-separated columns)
    ignore_columns: frozenset[str] = frozenset()  # source columns not to keep with the items
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS  # longest question or option accepted (it is read aloud)


def language_from_path(path: str) -> str | None:
    """Global-MMLU-Lite ships one file per language: 'ko.csv', 'test-zh.jsonl', 'en/test-00000.parquet'."""
    p = Path(path)
    tokens = {t.lower() for t in re.split(r"[^A-Za-z]+", p.stem) if t}
    found = tokens & GLOBAL_MMLU_LITE_LANGUAGES
    if len(found) == 1:
        return found.pop()
    parent = p.parent.name.lower()
    if not found and parent in GLOBAL_MMLU_LITE_LANGUAGES:
        return parent
    return None


def _column(options: ImportOptions, field_name: str, default: str) -> str:
    return options.mapping.get(field_name, default)


def _finish(table: Table, parsed: list[tuple[int, Item]], problems: list[InputProblem], id_column: str) -> list[Item]:
    problems.extend(check_duplicates(table, parsed, id_column))
    if problems:
        raise InputError(sorted(problems, key=lambda p: p.row or 0))
    return [item for _, item in parsed]


def _extra(row: dict[str, Any], used: set[str]) -> dict[str, Any]:
    """Source columns we don't model are kept verbatim so an export loses nothing."""
    kept = {}
    for key, value in row.items():
        if key in used or value is None:
            continue
        kept[key] = value.tolist() if hasattr(value, "tolist") else value
    return kept


def parse_global_mmlu_lite(table: Table, options: ImportOptions) -> list[Item]:
    option_columns = ["option_a", "option_b", "option_c", "option_d"]
    require_columns(
        table,
        [
            "sample_id",
            "subject",
            "subject_category",
            "question",
            *option_columns,
            "answer",
            "cultural_sensitivity_label",
        ],
    )
    language = options.language or language_from_path(table.file)
    if language is None:
        raise InputError(
            table.problem(
                "cannot tell the language from the file name; give it with --language (for example --language en)"
            )
        )
    source = options.source or "global-mmlu-lite"
    problems = Problems()
    parsed = []
    used = {
        "sample_id",
        "subject",
        "subject_category",
        "question",
        *option_columns,
        "answer",
        "cultural_sensitivity_label",
    }
    for number, row in enumerate(table.rows, start=1):
        r = RowReader(table, number, row, problems, options.max_text_chars)
        before = len(problems)
        lang = check_language(r, language, None)
        sample_id = r.text("sample_id")
        question = r.long_text("question")
        texts = [r.long_text(c) or "" for c in option_columns]
        answer = resolve_answer(r, r.text("answer"), texts, "answer")
        label = _cultural_label(r, "cultural_sensitivity_label")
        if len(problems) == before:
            check_options(r, texts, "option_a..option_d")
        if len(problems) > before:
            continue
        meta = {"subject": "subject", "subject_category": "subject_category"}
        item = _mcq_item(
            r, source, sample_id, lang, question, texts, answer, label, meta, used | options.ignore_columns
        )
        parsed.append((number, item))
    return _finish(table, parsed, problems, "sample_id")


def _cultural_label(r: RowReader, column: str) -> str | None:
    if column not in r.table.columns:
        return None
    label = r.text(column, required=False)
    if label is not None and label.upper() not in CULTURAL_LABELS:
        r.fail(f"'{label}' is not a cultural label (CS or CA)", column)
        return None
    return label.upper() if label else None


def _mcq_item(r: RowReader, source, source_id, language, question, texts, answer, label, meta: dict, used: set) -> Item:
    """A validated multiple-choice row as an Item; `meta` maps subject fields to their columns."""
    return Item(
        source=source,
        source_id=source_id,
        language=language,
        question=question,
        options=tuple(Option(LETTERS[i], t) for i, t in enumerate(texts)),
        answer=answer,
        subject=r.text(meta["subject"], required=False),
        subject_category=r.text(meta["subject_category"], required=False),
        cultural_label=label,
        extra=_extra(r.row, used),
    )


def _option_columns(table: Table, options: ImportOptions) -> tuple[list[str] | None, str | None]:
    """Options come from explicit columns, one list column, option_a.. columns, or A, B, C.. columns."""
    mapped = options.mapping.get("options")
    if mapped:
        columns = [c.strip() for c in mapped.split(",") if c.strip()]
        if len(columns) == 1:
            require_columns(table, columns)
            return None, columns[0]
        require_columns(table, columns)
        return columns, None
    if "options" in table.columns:
        return None, "options"
    for make in (lambda i: f"option_{LETTERS[i].lower()}", lambda i: LETTERS[i]):
        columns = []
        while len(columns) < len(LETTERS) and make(len(columns)) in table.columns:
            columns.append(make(len(columns)))
        if len(columns) >= 2:
            return columns, None
    raise InputError(
        table.problem(
            "no option columns found: expected an 'options' list column, option_a, option_b, … columns, "
            "or --map options=COL1,COL2,…"
        )
    )


def _read_options(
    r: RowReader, option_columns: list[str] | None, list_column: str | None
) -> tuple[list[str] | None, str]:
    if list_column is not None:
        return r.text_list(list_column, long=True), list_column
    texts = [r.long_text(c, required=False) or "" for c in option_columns]
    while texts and not texts[-1] and len(texts) > 2:  # trailing empty columns: fewer options in this row
        texts.pop()
    return texts, ",".join(option_columns)


def parse_mcq(table: Table, options: ImportOptions) -> list[Item]:
    id_column = _column(options, "id", "id")
    question_column = _column(options, "question", "question")
    answer_column = _column(options, "answer", "answer")
    require_columns(table, [id_column, question_column, answer_column])
    option_columns, list_column = _option_columns(table, options)
    language_column = _column(options, "language", "language")
    if language_column not in table.columns and options.language is None:
        raise InputError(
            table.problem(f"no '{language_column}' column; give the language with --language or --map language=COLUMN")
        )
    optional = {f: _column(options, f, f) for f in ("subject", "subject_category", "cultural_label")}
    used = {
        id_column,
        question_column,
        answer_column,
        language_column,
        *optional.values(),
        *(option_columns or [list_column]),
    }
    source = options.source or "mcq"
    problems = Problems()
    parsed = []
    for number, row in enumerate(table.rows, start=1):
        r = RowReader(table, number, row, problems, options.max_text_chars)
        before = len(problems)
        source_id = r.text(id_column)
        question = r.long_text(question_column)
        texts, options_where = _read_options(r, option_columns, list_column)
        lang = options.language or (r.text(language_column) if language_column in table.columns else None)
        lang = check_language(r, lang, language_column if not options.language else None)
        label = _cultural_label(r, optional["cultural_label"])
        if texts is None or not check_options(r, texts, options_where):
            continue
        answer = resolve_answer(r, r.text(answer_column), texts, answer_column)
        if len(problems) > before:
            continue
        item = _mcq_item(
            r, source, source_id, lang, question, texts, answer, label, optional, used | options.ignore_columns
        )
        parsed.append((number, item))
    return _finish(table, parsed, problems, id_column)


def _orientation_values(table: Table, r: RowReader, count: int, options: ImportOptions) -> tuple[list | None, str]:
    mapped = options.mapping.get("orientations")
    if mapped and "," in mapped:
        columns = [c.strip() for c in mapped.split(",")]
    elif mapped or "orientations" in table.columns:
        column = mapped or "orientations"
        return r.text_list(column), column
    else:
        columns = [f"orientation_{LETTERS[i].lower()}" for i in range(count)]
    missing = [c for c in columns[:count] if c not in table.columns]
    if missing:
        r.fail(f"no orientation column(s) {', '.join(missing)} for this row's {count} options", None)
        return None, ""
    return [r.text(c, required=False) or "" for c in columns[:count]], ",".join(columns[:count])


def parse_gender_probes(table: Table, options: ImportOptions) -> list[Item]:
    id_column = _column(options, "id", "id")
    question_column = _column(options, "question", "question")
    category_column = _column(options, "category", "category")
    require_columns(table, [id_column, question_column, category_column])
    option_columns, list_column = _option_columns(table, options)
    language_column = _column(options, "language", "language")
    source = options.source or "gender-probe"
    used = {
        id_column,
        question_column,
        category_column,
        language_column,
        "orientations",
        *(option_columns or [list_column]),
    }
    used |= {f"orientation_{c.lower()}" for c in LETTERS}
    problems = Problems()
    parsed = []
    for number, row in enumerate(table.rows, start=1):
        r = RowReader(table, number, row, problems, options.max_text_chars)
        before = len(problems)
        source_id = r.text(id_column)
        question = r.long_text(question_column)
        category = (r.text(category_column) or "").lower()
        if category and category not in GENDER_PROBE_CATEGORIES:
            r.fail(f"'{category}' is not a category ({', '.join(GENDER_PROBE_CATEGORIES)})", category_column)
        lang = options.language or (
            r.text(language_column, required=False) if language_column in table.columns else None
        )
        lang = check_language(r, lang or "en", language_column)
        texts, options_where = _read_options(r, option_columns, list_column)
        if texts is None or not check_options(r, texts, options_where):
            continue
        if len(texts) > 3:
            r.fail(f"has {len(texts)} options; gender probes have 2 or 3", options_where)
            continue
        raw, orientation_where = _orientation_values(table, r, len(texts), options)
        if raw is None:
            continue
        if len(raw) != len(texts):
            r.fail(f"gives {len(raw)} orientations for {len(texts)} options", orientation_where)
            continue
        orientations = []
        for value in raw:
            key = str(value).strip().lower()
            if key not in ORIENTATION_ALIASES:
                r.fail(f"'{value}' is not an orientation (male, female, neutral or none)", orientation_where)
            orientations.append(ORIENTATION_ALIASES.get(key))
        if len(problems) == before:
            _check_category_orientations(r, category, orientations, orientation_where)
        if len(problems) > before:
            continue
        parsed.append(
            (
                number,
                Item(
                    source=source,
                    source_id=source_id,
                    language=lang,
                    question=question,
                    options=tuple(Option(LETTERS[i], t, o) for i, (t, o) in enumerate(zip(texts, orientations))),
                    answer=None,
                    kind="gender-probe",
                    category=category,
                    extra=_extra(row, used | options.ignore_columns),
                ),
            )
        )
    return _finish(table, parsed, problems, id_column)


def _check_category_orientations(r: RowReader, category: str, orientations: list, column: str) -> None:
    """Independent questions offer two gender-unrelated options; the other categories pit one male-oriented
    option against one female-oriented one, optionally with a neutral third (the gender paper, Section 2.1)."""
    tagged = [o for o in orientations if o is not None]
    if category == "independent":
        if tagged:
            r.fail("an independent question's options must not be gender-oriented (use none)", column)
    elif category in ("stereotypical", "dependent"):
        males, females = orientations.count("male"), orientations.count("female")
        others = [o for o in orientations if o not in ("male", "female")]
        if males != 1 or females != 1 or any(o != "neutral" for o in others):
            r.fail(
                f"a {category} question needs exactly one male and one female option (and optionally one neutral); "
                f"got {', '.join(o or 'none' for o in orientations)}",
                column,
            )


PARSERS: dict[str, Callable[[Table, ImportOptions], list[Item]]] = {
    "gmmlu-lite": parse_global_mmlu_lite,
    "mcq": parse_mcq,
    "gender-probe": parse_gender_probes,
}
