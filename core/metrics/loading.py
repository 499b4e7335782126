"""Reading a responses table (CSV, Parquet or JSONL) into text columns (the engine's input, read without pandas)
or a DataFrame of strings.

Every cell comes back as a stripped string and a missing value as "", so validation has one kind of
value to look at, whatever the format stored. Problems with the file itself (wrong format, bad encoding,
ragged rows, no rows) become an `InputError` naming the file and, where known, the row."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.foundation.tables import TextColumns, as_clean_strings, read_columns

if TYPE_CHECKING:
    import pandas as pd


def read_responses_columns(path: str | Path) -> TextColumns:
    """The table in `path` as text columns, one row per model answer (core.foundation.tables.read_columns: one reader for
    all user tables, with the same file, row and column errors). What `spokenbench metrics` reads: a well-formed
    CSV does not import pandas."""
    return read_columns(path)


def read_responses_file(path: str | Path) -> pd.DataFrame:
    """The table in `path` as a DataFrame of strings (`read_responses_columns` as a DataFrame)."""
    return read_responses_columns(path).to_frame()


# Columns of the project's responses export that describe the run or the raw answer, not a condition
PROJECT_BOOKKEEPING_COLUMNS = (
    "response_id",
    "run_id",
    "run_name",
    "item_id",
    "category",
    "mapped_option",
    "parse_status",
    "raw_text",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "error",
    "created_at",
)


def load_project_responses(project_path: str | Path, kind: str = "mcq") -> pd.DataFrame:
    """The responses stored in a project folder, as the table a responses file gives: the store's export
    (core/importers/exports.py `responses_frame`) without its bookkeeping columns, so the condition factors (and language,
    mode, prompt) remain as factor columns. `kind` picks the multiple-choice items or the gender probes
    (which keep their category, voice_gender, option_orientation and parse_status columns: ν counts refusals, not
    parse failures)."""
    from spokenbench.core.importers.exports import responses_frame
    from spokenbench.core.store import Project

    with Project.open(project_path) as project:
        frame = responses_frame(project.conn)
    if frame.empty:
        raise SpokenBenchError(f"{project_path}: the project has no stored responses yet; run an evaluation first")
    probes = frame["category"].notna() & (frame["category"].astype(str) != "")
    frame = frame[probes if kind == "gender-probe" else ~probes]
    if frame.empty:
        raise SpokenBenchError(f"{project_path}: the project has no {kind} responses yet")
    dropped = [
        c
        for c in PROJECT_BOOKKEEPING_COLUMNS
        if c in frame.columns and not (kind == "gender-probe" and c in ("category", "parse_status"))
    ]
    return as_clean_strings(frame.drop(columns=dropped)).reset_index(drop=True)


def load_responses(source: str | Path, kind: str | None = None) -> pd.DataFrame:
    """A responses file, or a project folder through `load_project_responses` (multiple choice unless `kind`
    says gender-probe)."""
    path = Path(source)
    if path.is_dir():
        return load_project_responses(path, kind or "mcq")
    return read_responses_file(path)
