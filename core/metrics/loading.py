"""Reading a responses table (CSV, Parquet or JSONL) into a DataFrame of strings.

Every cell comes back as a stripped string and a missing value as "", so validation has one kind of
value to look at, whatever the format stored. Problems with the file itself (wrong format, bad encoding,
ragged rows, no rows) become an `InputError` naming the file and, where known, the row."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from spokenbench.core.errors import InputError, InputProblem, SpokenBenchError

SUPPORTED_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def read_responses_file(path: str | Path) -> pd.DataFrame:
    """The table in `path` as strings, one row per model answer, columns named as in the file (stripped)."""
    path = Path(path)
    name = str(path)
    if not path.exists():
        raise SpokenBenchError(f"{name}: no such file")
    if path.is_dir():
        raise SpokenBenchError(f"{name} is a folder; give a responses file (CSV, Parquet or JSONL)")
    kind = SUPPORTED_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InputError(InputProblem(
            file=name, message=f"unsupported file type '{path.suffix}'; use .csv, .tsv, .parquet or .jsonl"))
    if path.stat().st_size == 0:
        raise InputError(InputProblem(file=name, message="the file is empty"))
    if kind in ("csv", "tsv"):
        frame = _read_delimited(path, sep="," if kind == "csv" else "\t")
    elif kind == "parquet":
        frame = _read_parquet(path)
    else:
        frame = _read_jsonl(path)
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0:
        raise InputError(InputProblem(file=name, message="the file has a header but no data rows"))
    return frame


def _read_delimited(path: Path, sep: str) -> pd.DataFrame:
    name = str(path)
    raw = path.read_bytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start)  # newlines before the bad byte = 0-based line = 1-based data row
        raise InputError(InputProblem(
            file=name, row=line if line >= 1 else None,
            message=f"not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}); save the file as UTF-8")) from None
    try:
        frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                            skipinitialspace=False)
    except pd.errors.EmptyDataError:
        raise InputError(InputProblem(file=name, message="the file is empty")) from None
    except pd.errors.ParserError as error:
        raise InputError(InputProblem(file=name, message=f"not a well-formed table: {error}")) from None
    return _as_clean_strings(frame)


def _read_parquet(path: Path) -> pd.DataFrame:
    name = str(path)
    try:
        frame = pd.read_parquet(path)
    except Exception as error:  # pyarrow raises several unrelated types for a damaged file
        raise InputError(InputProblem(file=name, message=f"not a readable Parquet file ({error})")) from None
    return _as_clean_strings(frame)


def _read_jsonl(path: Path) -> pd.DataFrame:
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(InputProblem(
            file=name, message=f"not UTF-8 text (offset {error.start}); save the file as UTF-8")) from None
    records = []
    problems = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(InputProblem(file=name, row=number, message=f"not valid JSON ({error.msg})"))
            continue
        if not isinstance(value, dict):
            problems.append(InputProblem(file=name, row=number, message="each line must be one JSON object"))
            continue
        records.append(value)
    if problems:
        raise InputError(problems)
    if not records:
        raise InputError(InputProblem(file=name, message="the file has no data rows"))
    return _as_clean_strings(pd.DataFrame.from_records(records))


def _as_clean_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column as stripped text; missing values as "". Works on unique values, so it is cheap."""
    out = {}
    for column in frame.columns:
        series = frame[column]
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
        cleaned = [_cell_text(u) for u in uniques]
        lookup = pd.Index(cleaned + [""], dtype=object).to_numpy()
        out[column] = pd.array(lookup[codes], dtype="str")  # code -1 (missing) picks the trailing ""
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def _cell_text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # question ids stored as floats by some writers: 12.0 -> "12"
    return str(value).strip()


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
    frame = _as_clean_strings(frame.drop(columns=[c for c in PROJECT_BOOKKEEPING_COLUMNS if c in frame.columns]))
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
