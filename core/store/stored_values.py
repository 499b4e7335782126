"""Stored values another program wrote. A project's rows are data from whoever sent it (docs/reliability.md, trust
model): SQLite lets any column hold any type, and keeps text as the bytes it was given, while our code reads a TEXT
column as `str`. Two scans name such values by table, row and column:

- `foreign_values`: a value whose type is not the one its column is declared with (a blob where text is stored,
  text where a number is), or whose text has not the form the code relies on (JSON of the right shape, an option
  letter A-Z: VALUE_FORMS); in SQL, one pass per table: 192 ms on a 57 MB project of 103,812 responses, where
  SQLite's quick check takes 99 ms; 16 ms on the demo;
- `undecodable_texts`: text that is not UTF-8, which Python cannot read at all (in Python: 272 ms there).

`spokenbench check` runs both; a command that fails where no failure was expected runs them to tell such a row from
a bug (`explain_failure`, from the CLI's handler); the app runs both when it opens a project (off the UI thread)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.store.database import SQLITE_OWN_TABLES, connect
from spokenbench.core.store.project import DATABASE_NAME


@dataclass(frozen=True)
class StoredValueProblem:
    table: str
    row: int
    column: str
    problem: str  # e.g. "a blob where SpokenBench stores text", "text that is not UTF-8"

    def __str__(self) -> str:
        return f"table {self.table}, row {self.row}, column {self.column}: {self.problem}"

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _allowed_types(declared: str, not_null: bool) -> tuple[str, ...] | None:
    """The storage classes a column of this declared type holds when SpokenBench writes it (SQLite's affinity
    rules, https://sqlite.org/datatype3.html, 3.1); None: any (BLOB or no type)."""
    declared = declared.upper()
    if "INT" in declared:
        kinds = ("integer",)
    elif any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        kinds = ("text",)
    elif not declared or "BLOB" in declared:
        return None
    else:  # REAL and NUMERIC: SQLite may keep a whole number as an integer
        kinds = ("real", "integer")
    return kinds if not_null else (*kinds, "null")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    return [row[0] for row in rows if row[0] not in SQLITE_OWN_TABLES]


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str, bool, bool]]:
    """(name, declared type, NOT NULL, the rowid itself) per column."""
    rows = conn.execute(f"PRAGMA table_info({_quoted(table)})").fetchall()
    integer_keys = [row for row in rows if row[5] and row[2].upper() == "INTEGER"]
    rowid_alias = integer_keys[0][1] if len(integer_keys) == 1 and sum(1 for row in rows if row[5]) == 1 else None
    return [(row[1], row[2] or "", bool(row[3]), row[1] == rowid_alias) for row in rows]


# Columns whose text must have a form the code relies on (what SpokenBench writes there), beyond its type: each a
# condition on the column's value `{v}` that holds when it is not NULL, and what it stores. JSON read with .get or
# indexed, a letter looked up among A-Z, the names an answer is known by (found by fuzzing the demo's rows,
# 2026-12-04: valid JSON of another shape and a letter outside A-Z failed `runs` and `export` as "internal error";
# a gold letter outside A-Z or an empty model or question id failed the app's Results panels).
_JSON_OBJECT = ("json_valid({v}) AND json_type({v}) = 'object'", "a JSON object")
_JSON_ARRAY = ("json_valid({v}) AND json_type({v}) = 'array'", "a JSON array")
_LETTER = ("{v} GLOB '[A-Z]'", "a letter A-Z")
_NAMED = ("length(trim({v})) > 0", "a non-empty name")
VALUE_FORMS: dict[tuple[str, str], tuple[str, str]] = {
    ("items", "extra_json"): _JSON_OBJECT,
    ("runs", "parameters_json"): _JSON_OBJECT,
    ("rating_queues", "parameters_json"): _JSON_OBJECT,
    ("control_clips", "parameters_json"): ("json_valid({v})", "JSON"),
    ("batch_jobs", "price_json"): _JSON_OBJECT,
    ("batch_requests", "context_json"): _JSON_OBJECT,
    ("responses", "condition_key"): _JSON_OBJECT,
    ("assembled_inputs", "condition_key"): _JSON_OBJECT,
    ("batch_requests", "condition_key"): _JSON_OBJECT,
    ("rewrite_checks", "diff_json"): _JSON_ARRAY,
    ("jobs", "argv_json"): _JSON_ARRAY,
    ("recordings", "checks_json"): _JSON_ARRAY,
    ("options", "letter"): _LETTER,
    ("items", "answer"): _LETTER,
    ("items", "source"): _NAMED,
    ("items", "source_id"): _NAMED,
    ("items", "language"): _NAMED,
    ("runs", "model"): _NAMED,
}


def foreign_values(conn: sqlite3.Connection, limit: int = 20) -> list[StoredValueProblem]:
    """Up to `limit` values (at most one per row) whose type is not their column's, or whose text has not the
    form the code relies on (VALUE_FORMS)."""
    problems: list[StoredValueProblem] = []
    json = _has_json_functions(conn)
    for table in _tables(conn):
        if len(problems) >= limit:
            break
        types, forms = [], []  # (column, failing condition, what SpokenBench stores)
        for name, declared, not_null, is_rowid in _columns(conn, table):
            allowed = _allowed_types(declared, not_null)
            if allowed is not None and not is_rowid:
                kinds = ", ".join(f"'{kind}'" for kind in allowed)
                types.append((name, f"typeof({_quoted(name)}) NOT IN ({kinds})", _a(allowed[0])))
            if (table, name) in VALUE_FORMS and (json or "json_" not in VALUE_FORMS[(table, name)][0]):
                condition, stored = VALUE_FORMS[(table, name)]
                value = _quoted(name)
                forms.append((name, f"({value} IS NOT NULL AND NOT ({condition.format(v=value)}))", stored))
        checks = types + forms  # a value of another type is named as such, before its form
        if not checks:
            continue
        which = " ".join(f"WHEN {test} THEN {index}" for index, (_, test, _) in enumerate(checks))
        found = " ".join(f"WHEN {test} THEN typeof({_quoted(name)})" for name, test, _ in checks)
        query = (
            f"SELECT rowid, CASE {which} END, CASE {found} END FROM {_quoted(table)} "
            f"WHERE {' OR '.join(test for _, test, _ in checks)} LIMIT {limit - len(problems)}"
        )
        for row, index, kind in conn.execute(query):
            name, _, stored = checks[index]
            problem = f"{_a(kind)} where SpokenBench stores {stored}" if index < len(types) else f"not {stored}"
            problems.append(StoredValueProblem(table, row, name, problem))
    return problems


def _has_json_functions(conn: sqlite3.Connection) -> bool:
    """SQLite's JSON functions are built in from 3.38; an older library built without them skips the JSON forms."""
    try:
        conn.execute("SELECT json_valid('{}')").fetchone()
    except sqlite3.OperationalError:
        return False
    return True


def _a(kind: str) -> str:
    return {"integer": "an integer", "null": "NULL"}.get(kind, f"a {kind}" if kind != "text" else "text")


def undecodable_texts(conn: sqlite3.Connection, limit: int = 20) -> list[StoredValueProblem]:
    """Up to `limit` text values (at most one per row) that are not UTF-8. Reads every text value as bytes."""
    text_columns = {}
    for table in _tables(conn):
        names = [name for name, declared, _, _ in _columns(conn, table) if _allowed_types(declared, True) == ("text",)]
        if names:
            text_columns[table] = names
    problems: list[StoredValueProblem] = []
    saved = conn.text_factory
    conn.text_factory = bytes  # names were read above: from here on every text value comes as bytes
    try:
        for table, names in text_columns.items():
            columns = ", ".join(_quoted(name) for name in names)
            for row, *values in conn.execute(f"SELECT rowid, {columns} FROM {_quoted(table)}"):
                bad = next((i for i, value in enumerate(values) if isinstance(value, bytes) and not _utf8(value)), None)
                if bad is not None:
                    problems.append(StoredValueProblem(table, row, names[bad], "text that is not UTF-8"))
                    if len(problems) >= limit:
                        return problems
    finally:
        conn.text_factory = saved
    return problems


def _utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def stored_value_problems(conn: sqlite3.Connection, limit: int = 20) -> list[StoredValueProblem]:
    """Both scans: values of the wrong type first, then text that is not UTF-8 (a blob found by the first is not
    named again by the second)."""
    problems = foreign_values(conn, limit)
    named = {(problem.table, problem.row, problem.column) for problem in problems}
    more = [p for p in undecodable_texts(conn, limit) if (p.table, p.row, p.column) not in named]
    return (problems + more)[:limit]


def describe(problems: list[StoredValueProblem], shown: int = 3) -> str:
    more = f" and {len(problems) - shown} more" if len(problems) > shown else ""
    return "; ".join(map(str, problems[:shown])) + more


def stored_values_error(
    db_path: Path, problems: list[StoredValueProblem], outcome: str = "nothing was changed"
) -> ProjectError:
    return ProjectError(
        f"{db_path}: the project holds values SpokenBench did not write ({describe(problems)}): another program "
        f"wrote them, and they cannot be read as what they stand for; {outcome}. Correct or delete those "
        f"rows (e.g. in the sqlite3 shell) or restore project.sqlite from a backup; `spokenbench check "
        f"{db_path.parent}` lists them all"
    )


# What reading a value of another type or undecodable text raises in our code (a str method on bytes, a comparison
# of text with a number, a decode): only these are worth a scan of the rows before calling the failure a bug
_READING_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError, sqlite3.OperationalError)


def explain_failure(error: BaseException, project: str | os.PathLike | None) -> str | None:
    """When a command on `project` failed with `error` where no failure was expected: the stored values that
    explain it (read-only, both scans), or None (then it is a bug). Never raises."""
    if project is None or not isinstance(error, _READING_ERRORS):
        return None
    if isinstance(error, sqlite3.OperationalError) and "decode" not in str(error):
        return None
    db_path = Path(project) / DATABASE_NAME
    try:
        if not db_path.is_file():
            return None
        with contextlib.closing(connect(db_path, read_only=True)) as conn:
            problems = stored_value_problems(conn)
    except (sqlite3.Error, OSError, ValueError, ProjectError):
        return None
    if not problems:
        return None
    return str(stored_values_error(db_path, problems, "the command stopped there, and what it reported saved is kept"))
