"""Reading user tables (CSV, JSON Lines, Parquet) with errors that name the file, row and column.
Formats are chosen by extension and then checked against the bytes, so a Parquet file named .csv or a
UTF-16 CSV is reported as such instead of producing garbage rows."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from spokenbench.core.errors import InputError, InputProblem

TABLE_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
PARQUET_MAGIC = b"PAR1"


@dataclass
class Table:
    """Rows as dicts in file order; `columns` in header order. Row numbers in errors are 1-based data rows."""

    file: str
    columns: list[str]
    rows: list[dict[str, Any]]

    def problem(self, message: str, row: int | None = None, column: str | None = None) -> InputProblem:
        return InputProblem(self.file, message, row, column)


def table_format(path: Path) -> str:
    fmt = TABLE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        known = ", ".join(sorted(TABLE_FORMATS))
        raise InputError(InputProblem(str(path), f"unknown table type '{path.suffix}'; use one of {known}"))
    return fmt


def _read_bytes(path: Path) -> tuple[str, bytes]:
    """(format, bytes) after the checks every reader shares: known extension, a readable, non-empty file."""
    name = str(path)
    fmt = table_format(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(InputProblem(name, "file not found")) from None
    except IsADirectoryError:
        raise InputError(InputProblem(name, "is a folder, not a table file")) from None
    except OSError as error:
        raise InputError(InputProblem(name, f"cannot be read ({error.strerror})")) from None
    if not data.strip():
        raise InputError(InputProblem(name, "the file is empty"))
    if fmt != "parquet" and data.startswith(PARQUET_MAGIC):
        raise InputError(InputProblem(name, f"this is a Parquet file, not {fmt.upper()}; rename it to .parquet"))
    return fmt, data


def read_table(path: str | Path) -> Table:
    """Rows as dicts with their values as stored, for importers that validate row by row."""
    path = Path(path)
    name = str(path)
    fmt, data = _read_bytes(path)
    if fmt == "parquet":
        arrow_table = _parquet(name, data)
        rows = arrow_table.to_pylist()
        if not rows:
            raise InputError(InputProblem(name, "has no rows"))
        return Table(name, list(arrow_table.column_names), rows)
    text = _decode_text(name, data)
    if fmt == "jsonl":
        return _read_jsonl(name, text)
    return _read_delimited(name, text, "\t" if fmt == "tsv" else ",")


def read_frame(path: str | Path) -> pd.DataFrame:
    """The whole table as a DataFrame of stripped strings ("" for missing), read column-wise by pandas: the
    form for large tables such as 100,000 model answers. Same file checks and errors as `read_table`."""
    path = Path(path)
    name = str(path)
    fmt, data = _read_bytes(path)
    if fmt == "parquet":
        frame = _parquet(name, data).to_pandas()
    else:
        text = _decode_text(name, data)
        if fmt == "jsonl":
            frame = pd.DataFrame.from_records(_read_jsonl(name, text).rows)
        else:
            try:
                frame = pd.read_csv(
                    io.StringIO(text), sep="\t" if fmt == "tsv" else ",", dtype=str, keep_default_na=False
                )
            except pd.errors.ParserError as error:
                raise InputError(InputProblem(name, f"is not a well-formed table ({error})")) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0:
        raise InputError(InputProblem(name, "has a header but no data rows"))
    return as_clean_strings(frame)


def as_clean_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column as stripped text, missing values as "". Works on each column's unique values, so it is cheap."""
    out = {}
    for column in frame.columns:
        codes, uniques = pd.factorize(frame[column], use_na_sentinel=True)
        cleaned = [_cell_text(u) for u in uniques]
        lookup = pd.Index(cleaned + [""], dtype=object).to_numpy()
        out[column] = pd.array(lookup[codes], dtype="str")  # code -1 (missing) picks the trailing ""
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def _cell_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # ids stored as floats by some writers: 12.0 -> "12"
    if isinstance(value, (list, dict)) or hasattr(value, "tolist"):
        return json.dumps(value.tolist() if hasattr(value, "tolist") else value, ensure_ascii=False)
    return str(value).strip()


def _decode_text(name: str, data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(InputProblem(name, "the file is UTF-16 encoded; save it as UTF-8"))
    if b"\x00" in data[:4096]:
        raise InputError(InputProblem(name, "the file looks binary (it contains NUL bytes), not text"))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise InputError(
            InputProblem(
                name,
                f"not valid UTF-8: byte 0x{data[error.start]:02x} on line {line} (offset {error.start}); "
                "save the file as UTF-8",
            )
        ) from None


def _read_delimited(name: str, text: str, delimiter: str) -> Table:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except csv.Error as error:
        raise InputError(InputProblem(name, f"the header line cannot be parsed ({error})")) from None
    header = [h.strip() for h in header]
    problems = _header_problems(name, header)
    if problems:
        raise InputError(problems)
    rows = []
    try:
        for record in reader:
            if not record or (len(record) == 1 and not record[0].strip()):
                continue  # blank line
            number = len(rows) + 1
            if len(record) != len(header):
                problems.append(
                    InputProblem(name, f"has {len(record)} fields but the header has {len(header)}", number)
                )
                continue
            rows.append(dict(zip(header, record)))
    except csv.Error as error:
        problems.append(InputProblem(name, f"cannot be parsed ({error})", len(rows) + 1))
    if problems:
        raise InputError(problems)
    if not rows:
        raise InputError(InputProblem(name, "has a header but no data rows"))
    return Table(name, header, rows)


def _header_problems(name: str, header: list[str]) -> list[InputProblem]:
    problems = []
    seen = set()
    for position, column in enumerate(header, start=1):
        if not column:
            problems.append(InputProblem(name, f"header field {position} is empty"))
        elif column in seen:
            problems.append(InputProblem(name, "appears twice in the header", column=column))
        seen.add(column)
    return problems


def _read_jsonl(name: str, text: str) -> Table:
    rows: list[dict[str, Any]] = []
    problems = []
    columns: dict[str, None] = {}
    stripped = text.lstrip()
    if stripped.startswith("["):
        raise InputError(InputProblem(name, "is a JSON array, not JSON Lines (one object per line)"))
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(InputProblem(name, f"line {line_number} is not valid JSON ({error.msg})", len(rows) + 1))
            rows.append({})
            continue
        if not isinstance(value, dict):
            problems.append(InputProblem(name, f"line {line_number} is not a JSON object", len(rows) + 1))
            rows.append({})
            continue
        rows.append(value)
        columns.update(dict.fromkeys(value))
    if problems:
        raise InputError(problems)
    return Table(name, list(columns), rows)


def _parquet(name: str, data: bytes):
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not data.startswith(PARQUET_MAGIC):
        raise InputError(InputProblem(name, "is not a Parquet file (no Parquet header); check the extension"))
    try:
        return pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as error:
        raise InputError(InputProblem(name, f"the Parquet file is damaged or unreadable ({error})")) from None


def write_table(rows: list[dict[str, Any]], path: str | Path, columns: list[str] | None = None) -> None:
    """Write rows as CSV, JSONL or Parquet by extension, atomically (temp file + rename)."""
    path = Path(path)
    fmt = table_format(path)
    columns = columns or (list(rows[0].keys()) if rows else [])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.close(fd)
    try:
        if fmt == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            arrow_table = (
                pa.Table.from_pylist(rows) if rows else pa.table({c: pa.array([], pa.string()) for c in columns})
            )
            pq.write_table(arrow_table, temp_name)
        elif fmt == "jsonl":
            with open(temp_name, "w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            with open(temp_name, "w", encoding="utf-8", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=columns, delimiter="\t" if fmt == "tsv" else ",")
                writer.writeheader()
                for row in rows:
                    writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        with open(temp_name, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def _csv_cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value
