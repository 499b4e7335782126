"""Reading a responses table (CSV, Parquet or JSONL) into a DataFrame of strings.

Every cell comes back as a stripped string and a missing value as "", so validation has one kind of
value to look at, whatever the format stored. Problems with the file itself (wrong format, bad encoding,
ragged rows, no rows) become an `InputError` naming the file and, where known, the row."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from spokenbench.core.errors import SpokenBenchError
from spokenbench.core.tables import as_clean_strings, read_frame


def read_responses_file(path: str | Path) -> pd.DataFrame:
    """The table in `path` as strings, one row per model answer (core.tables.read_frame: one reader for all
    user tables, with the same file, row and column errors)."""
    return read_frame(path)


# Columns of the project's responses export that describe the run or the raw answer, not a condition
PROJECT_BOOKKEEPING_COLUMNS = ("response_id", "run_id", "run_name", "item_id", "category", "mapped_option", "parse_status",
                               "raw_text", "latency_ms", "input_tokens", "output_tokens", "error", "created_at")


def load_project_responses(project_path: str | Path) -> pd.DataFrame:
    """The multiple-choice responses stored in a project folder, as the table a responses file gives:
    the store's export (core/exports.py `responses_frame`) without its bookkeeping columns, so the
    condition factors (and language, mode, prompt) remain as factor columns.

    Gender-probe responses are left out: the export does not carry voice_gender or option_orientation yet."""
    from spokenbench.core.exports import responses_frame
    from spokenbench.core.store import Project

    with Project.open(project_path) as project:
        frame = responses_frame(project.conn)
    if frame.empty:
        raise SpokenBenchError(f"{project_path}: the project has no stored responses yet; run an evaluation first")
    frame = as_clean_strings(frame.drop(columns=[c for c in PROJECT_BOOKKEEPING_COLUMNS if c in frame.columns]))
    frame = frame[frame["answer"] != ""].reset_index(drop=True)
    if frame.empty:
        raise SpokenBenchError(f"{project_path}: the project has no multiple-choice responses (gender-probe responses "
                               "cannot be reported from a project yet: export them with voice_gender and option_orientation)")
    return frame


def load_responses(source: str | Path) -> pd.DataFrame:
    """A responses file, or a project folder through `load_project_responses`."""
    path = Path(source)
    if path.is_dir():
        return load_project_responses(path)
    return read_responses_file(path)
