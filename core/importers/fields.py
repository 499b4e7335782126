"""Turning raw table cells into validated values, collecting every problem instead of stopping at the first."""

from __future__ import annotations

import json
from typing import Any

from spokenbench.core.domain.items import DEFAULT_MAX_TEXT_CHARS, LETTERS, MAX_OPTIONS, MIN_OPTIONS, Item
from spokenbench.core.domain.languages import normalize_language
from spokenbench.core.foundation.errors import InputError, InputProblem, Problems
from spokenbench.core.foundation.tables import Table

# A question or option is read aloud: 4,000 characters are about four and a half minutes of speech. Longer text
# is almost always a mistake (a whole document in one cell) and would make clips of hours; --max-text-chars raises
# the limit up to the ceiling, which synthesis also enforces (core/audio/synthesis.py MAX_SYNTHESIS_CHARS).
MAX_FIELD_CHARS = 1_000  # ids, subjects, labels, languages, orientations


class RowReader:
    """Reads one row's cells, recording problems on a shared list; returns None for a bad cell. Question and
    option texts (`long_text`) may be up to `max_text_chars` long, every other field up to MAX_FIELD_CHARS."""

    def __init__(
        self,
        table: Table,
        number: int,
        row: dict[str, Any],
        problems: list[InputProblem],
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
    ):
        self.table, self.number, self.row, self.problems = table, number, row, problems
        self.max_text_chars = max_text_chars

    def fail(self, message: str, column: str | None = None) -> None:
        self.problems.append(self.table.problem(message, self.number, column))

    def text(self, column: str, required: bool = True, max_chars: int = MAX_FIELD_CHARS) -> str | None:
        value = self.row.get(column)
        if isinstance(value, float) and value != value:  # NaN from Parquet
            value = None
        if isinstance(value, (list, dict)):
            self.fail("expected text, found a list or object", column)
            return None
        if isinstance(value, (bytes, bytearray)):
            self.fail("expected text, found binary data", column)
            return None
        text = "" if value is None else (str(value) if not isinstance(value, str) else value).strip()
        if not text:
            if required:
                self.fail("is empty", column)
            return None
        return text if self._acceptable(text, column, max_chars) else None

    def long_text(self, column: str, required: bool = True) -> str | None:
        """A question or option text: read aloud, so limited to `max_text_chars`."""
        return self.text(column, required, self.max_text_chars)

    def _acceptable(self, text: str, column: str, max_chars: int, what: str = "") -> bool:
        if len(text) > max_chars:
            hint = " (raise the limit with --max-text-chars)" if max_chars == self.max_text_chars else ""
            self.fail(f"{what}is {len(text):,} characters long; at most {max_chars:,} are accepted{hint}", column)
            return False
        if "\x00" in text:
            self.fail(f"{what}contains a NUL character (U+0000)", column)
            return False
        return True

    def text_list(self, column: str, long: bool = False) -> list[str] | None:
        """A list cell: a JSON list in JSONL/Parquet, or a JSON list written as text in CSV. `long` for option
        texts (limited to `max_text_chars` each)."""
        value = self.row.get(column)
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:  # not JSON, or a number of more than 4,300 digits
                self.fail('expected a JSON list such as ["first", "second"]', column)
                return None
            except RecursionError:
                self.fail("is nested too deeply to be a list of texts", column)
                return None
        if hasattr(value, "tolist"):
            value = value.tolist()
        if not isinstance(value, list):
            self.fail("expected a list", column)
            return None
        if len(value) > MAX_OPTIONS * 10:
            self.fail(f"is a list of {len(value):,} entries; at most {MAX_OPTIONS} options are supported", column)
            return None
        texts = []
        for position, entry in enumerate(value, start=1):
            if isinstance(entry, (list, dict, bytes, bytearray)):
                self.fail(f"entry {position} is a list, object or binary data, not text", column)
                return None
            text = "" if entry is None else str(entry).strip()
            limit = self.max_text_chars if long else MAX_FIELD_CHARS
            if not self._acceptable(text, column, limit, f"entry {position} "):
                return None
            texts.append(text)
        return texts


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
    try:
        return normalize_language(language)
    except ValueError as error:
        reader.fail(str(error), column)
        return None


def check_duplicates(table: Table, items: list[tuple[int, Item]], id_column: str) -> list[InputProblem]:
    """Within one file, (source id, language) must be unique."""
    first_row: dict[tuple[str, str], int] = {}
    problems = Problems()
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
