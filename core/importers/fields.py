"""Turning raw table cells into validated values, collecting every problem instead of stopping at the first."""

from __future__ import annotations

import json
import re
from typing import Any

from spokenbench.core.errors import InputError, InputProblem
from spokenbench.core.items import LETTERS, MAX_OPTIONS, MIN_OPTIONS, Item
from spokenbench.core.tables import Table

LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$")


class RowReader:
    """Reads one row's cells, recording problems on a shared list; returns None for a bad cell."""

    def __init__(self, table: Table, number: int, row: dict[str, Any], problems: list[InputProblem]):
        self.table, self.number, self.row, self.problems = table, number, row, problems

    def fail(self, message: str, column: str | None = None) -> None:
        self.problems.append(self.table.problem(message, self.number, column))

    def text(self, column: str, required: bool = True) -> str | None:
        value = self.row.get(column)
        if isinstance(value, float) and value != value:  # NaN from Parquet
            value = None
        if isinstance(value, (list, dict)):
            self.fail("expected text, found a list or object", column)
            return None
        text = "" if value is None else (str(value) if not isinstance(value, str) else value).strip()
        if not text:
            if required:
                self.fail("is empty", column)
            return None
        return text

    def text_list(self, column: str) -> list[str] | None:
        """A list cell: a JSON list in JSONL/Parquet, or a JSON list written as text in CSV."""
        value = self.row.get(column)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                self.fail('expected a JSON list such as ["first", "second"]', column)
                return None
        if hasattr(value, "tolist"):
            value = value.tolist()
        if not isinstance(value, list):
            self.fail("expected a list", column)
            return None
        return ["" if v is None else str(v).strip() for v in value]


def require_columns(table: Table, columns: list[str]) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        present = ", ".join(table.columns) or "none"
        raise InputError(
            [table.problem(f"required column is missing (columns present: {present})", column=c) for c in missing]
        )


def check_options(reader: RowReader, options: list[str], column: str) -> bool:
    ok = True
    if not MIN_OPTIONS <= len(options) <= MAX_OPTIONS:
        reader.fail(f"has {len(options)} options; between {MIN_OPTIONS} and {MAX_OPTIONS} are needed", column)
        return False
    for letter, text in zip(LETTERS, options):
        if not text:
            reader.fail(f"option {letter} is empty", column)
            ok = False
    if ok and len(set(options)) != len(options):
        reader.fail("two options have the same text", column)
        ok = False
    return ok


def resolve_answer(reader: RowReader, answer: str | None, options: list[str], column: str) -> str | None:
    """A gold answer given as a letter (any case, optional parentheses) or as the exact text of an option."""
    if answer is None:
        return None
    letters = LETTERS[: len(options)]
    candidate = answer.strip().strip("()").strip().upper()
    if len(candidate) == 1 and candidate in letters:
        return candidate
    if answer in options:
        return letters[options.index(answer)]
    reader.fail(
        f"answer '{answer}' is not among the options (a letter {letters[0]}-{letters[-1]} or an option's text)", column
    )
    return None


def check_language(reader: RowReader, language: str | None, column: str | None) -> str | None:
    if language is None:
        return None
    code = language.strip().lower().replace("_", "-")
    if not LANGUAGE_CODE.match(code):
        reader.fail(f"'{language}' is not a language code such as en, zh or ko", column)
        return None
    return code


def check_duplicates(table: Table, items: list[tuple[int, Item]], id_column: str) -> list[InputProblem]:
    """Within one file, (source id, language) must be unique."""
    first_row: dict[tuple[str, str], int] = {}
    problems = []
    for number, item in items:
        key = (item.source_id, item.language)
        if key in first_row:
            problems.append(
                table.problem(
                    f"duplicate id '{item.source_id}' for language {item.language} (first seen in row {first_row[key]})",
                    number,
                    id_column,
                )
            )
        else:
            first_row[key] = number
    return problems
