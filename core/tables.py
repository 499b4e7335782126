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

from spokenbench.core.errors import InputError, InputProblem

TABLE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet", ".pq": "parquet"}
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


def read_table(path: str | Path) -> Table:
    path = Path(path)
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
    if fmt == "parquet":
        return _read_parquet(name, data)
    if data.startswith(PARQUET_MAGIC):
        raise InputError(InputProblem(name, f"this is a Parquet file, not {fmt.upper()}; rename it to .parquet"))
    text = _decode_text(name, data)
    if fmt == "jsonl":
        return _read_jsonl(name, text)
    return _read_delimited(name, text, "\t" if fmt == "tsv" else ",")


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


def _read_parquet(name: str, data: bytes) -> Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not data.startswith(PARQUET_MAGIC):
        raise InputError(InputProblem(name, "is not a Parquet file (no Parquet header); check the extension"))
    try:
        arrow_table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as error:
        raise InputError(InputProblem(name, f"the Parquet file is damaged or unreadable ({error})")) from None
    rows = arrow_table.to_pylist()
    if not rows:
        raise InputError(InputProblem(name, "has no rows"))
    return Table(name, list(arrow_table.column_names), rows)


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

            arrow_table = pa.Table.from_pylist(rows) if rows else pa.table({c: pa.array([], pa.string()) for c in columns})
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
