"""Reading user tables (CSV, JSON Lines, Parquet) with errors that name the file, row and column.
Formats are chosen by extension and then checked against the bytes, so a Parquet file named .csv or a
UTF-16 CSV is reported as such instead of producing garbage rows. Whatever a file holds, reading it ends in
rows or in an `InputError`: cells are bounded (MAX_CELL_CHARS), JSON nesting too (MAX_NESTING), text that is
not valid Unicode (lone surrogates, invalid UTF-8) is refused, and so is a file name that is not UTF-8."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from spokenbench.core.foundation.arrow_datasets import (
    CELL_BYTES,
    ROW_BYTES,
    arrow_dataset_digest,
    check_decoded_size,
    decoded_bytes,
    is_arrow_dataset,
    is_text_type,
    read_arrow_dataset,
)
from spokenbench.core.foundation.errors import InputError, InputProblem, Problems, SpokenBenchError
from spokenbench.core.foundation.safe_files import MAX_TABLE_BYTES, check_output_file, display_name, read_regular_file
from spokenbench.core.foundation.standard_streams import (
    STANDARD_INPUT_NAME,
    is_standard_stream,
    read_standard_input,
    sniff_table_format,
)

TABLE_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
PARQUET_MAGIC = b"PAR1"
MAX_CELL_CHARS = 1_000_000  # any one cell; item texts have a much lower limit (core/importers/fields.py)
MAX_INT_DIGITS = 4_300  # Python's int_max_str_digits: a longer integer in JSON is refused, never converted
MAX_NESTING = 64  # lists and objects inside a JSONL or Parquet cell
HEADER_SCAN_CHARS = 1 << 16  # where the fast CSV reader looks for the header line

csv.field_size_limit(MAX_CELL_CHARS)  # the csv module's own default (131,072) would be a second, hidden limit

if TYPE_CHECKING:
    import pandas as pd


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


def check_path_name(path: str | Path) -> None:
    """Refuse a file name that is not valid UTF-8: it could be neither stored in the project nor printed."""
    name = str(path)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        raise InputError(InputProblem(display_name(name), "the file name is not valid UTF-8; rename the file"))


def _read_bytes(path: Path) -> tuple[str, bytes]:
    """(format, bytes) after the checks every reader shares: known extension, a readable, non-empty file."""
    name = str(path)
    if is_standard_stream(path):  # `-`: a table piped in, its type recognised from its bytes
        name = STANDARD_INPUT_NAME
        data = read_standard_input(MAX_TABLE_BYTES)
        fmt = sniff_table_format(data)
    elif is_arrow_dataset(path):  # a Hugging Face `save_to_disk` folder or .arrow file: pyarrow reads its files
        check_path_name(path)
        return "arrow", b""
    else:
        check_path_name(path)
        fmt = table_format(path)
        try:
            data = read_regular_file(path, MAX_TABLE_BYTES)  # a FIFO or /dev/zero is refused before reading
        except FileNotFoundError:
            raise InputError(InputProblem(name, "file not found")) from None
    if not data[:4096].strip() and not data.strip():  # the head first: stripping a whole large file copies it
        raise InputError(InputProblem(name, "the file is empty"))
    if fmt != "parquet" and data.startswith(PARQUET_MAGIC):
        raise InputError(InputProblem(name, f"this is a Parquet file, not {fmt.upper()}; rename it to .parquet"))
    return fmt, data


def table_digest(path: str | Path) -> str:
    """sha256 of a table's bytes (of standard input's, of a Hugging Face dataset's data files): what an import
    records."""
    path = Path(path)
    if is_standard_stream(path):
        return hashlib.sha256(read_standard_input(MAX_TABLE_BYTES)).hexdigest()
    if is_arrow_dataset(path):
        return arrow_dataset_digest(path)
    return hashlib.sha256(read_regular_file(path, MAX_TABLE_BYTES)).hexdigest()


def read_table(path: str | Path) -> Table:
    """Rows as dicts with their values as stored, for importers that validate row by row."""
    path = Path(path)
    name = STANDARD_INPUT_NAME if is_standard_stream(path) else str(path)
    fmt, data = _read_bytes(path)
    if fmt in ("parquet", "arrow"):
        arrow_table = _parquet(name, data) if fmt == "parquet" else read_arrow_dataset(path)
        rows = arrow_table.to_pylist()
        if not rows:
            raise InputError(InputProblem(name, "has no rows"))
        _check_rows(name, rows)
        return Table(name, list(arrow_table.column_names), rows)
    _decode_text(name, data)  # checked whole (UTF-16, binary, not UTF-8: named by line), then read line by line
    if fmt == "jsonl":
        return _read_jsonl(name, _text_lines(data, "\n"))
    return _read_delimited(name, _text_lines(data, ""), "\t" if fmt == "tsv" else ",")


def _text_lines(data: bytes, newline: str) -> io.TextIOWrapper:
    """The file's lines, decoded as they are read: a copy of the whole text (io.StringIO keeps 4 bytes a
    character) took an 80 MB CSV to 470 MB, read this way 165 MB. `newline` as `open` takes it: "" for CSV (a
    quoted cell may hold a line break), "\n" for JSON Lines (only "\n" ends a line; U+2028 may be in a string)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline=newline)


@dataclass(frozen=True)
class TextColumn:
    """One column as text: its distinct values, each once, and per row the index of the row's value. Every
    question the metrics ask of a column (is it empty, how many levels, which letter) is asked of the distinct
    values once, not of 100,000 rows."""

    codes: np.ndarray  # per row, an index into `values`
    values: list[str]

    def __len__(self) -> int:
        return len(self.codes)

    def texts(self) -> np.ndarray:
        """The value of every row (an object array)."""
        return np.asarray(self.values + [""], dtype=object)[self.codes]

    def is_empty(self) -> np.ndarray:
        """Per row: the cell is ""."""
        return np.array([v == "" for v in self.values] + [False], dtype=bool)[self.codes]

    @classmethod
    def from_codes(cls, codes: np.ndarray, texts: list[str]) -> TextColumn:
        """From codes into `texts`, where texts may repeat (two raw values that are equal once stripped)."""
        index: dict[str, int] = {}
        remap = [index.setdefault(t, len(index)) for t in texts]
        codes = np.asarray(codes, dtype=np.int64)
        if len(index) != len(texts):
            codes = np.asarray(remap, dtype=np.int64)[codes]
        return cls(codes, list(index))

    @classmethod
    def from_values(cls, values) -> TextColumn:
        """Any column of values (a pandas Series, a list): each distinct value as str(value), missing as ""."""
        import pandas as pd

        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        texts = [str(u) for u in uniques]
        if len(codes) and codes.min() < 0:
            codes = np.where(codes < 0, len(texts), codes)
            texts.append("")
        return cls.from_codes(codes, texts)


@dataclass
class TextColumns:
    """A table as text columns (`TextColumn`), in header order: what `read_columns` gives, and the input of the
    metrics engine (which also takes a DataFrame of strings through `TextColumns.of`)."""

    columns: list[str]
    data: dict[str, TextColumn]
    n_rows: int

    def __getitem__(self, name: str) -> TextColumn:
        return self.data[name]

    def __len__(self) -> int:
        return self.n_rows

    @classmethod
    def of(cls, table: TextColumns | pd.DataFrame) -> TextColumns:
        """`table` itself, or a DataFrame's columns as text (as `TextColumn.from_values`)."""
        if isinstance(table, TextColumns):
            return table
        columns = [str(c) for c in table.columns]
        data = {str(c): TextColumn.from_values(table[c]) for c in table.columns}
        return cls(columns, data, len(table))

    def to_frame(self) -> pd.DataFrame:
        """The DataFrame of strings (pandas' "str" dtype) that `read_frame` gives."""
        import pandas as pd

        out = {name: pd.array(self.data[name].texts(), dtype="str") for name in self.columns}
        return pd.DataFrame(out, index=pd.RangeIndex(self.n_rows))


def read_columns(path: str | Path) -> TextColumns:
    """The whole table as text columns of stripped strings ("" for missing): the form for large tables such as
    100,000 model answers. Well-formed CSV/TSV files and Parquet files of text columns are read by pyarrow
    without pandas (its import alone costs more than reading 100,000 rows); other files by pandas. Same file
    checks and errors as `read_table`."""
    path = Path(path)
    name = STANDARD_INPUT_NAME if is_standard_stream(path) else str(path)
    fmt, data = _read_bytes(path)
    if fmt in ("parquet", "arrow"):
        arrow_table = _parquet(name, data) if fmt == "parquet" else read_arrow_dataset(path)
        columns = _arrow_text_columns(arrow_table)
        if columns is not None:
            if columns.n_rows == 0:
                raise InputError(InputProblem(name, "has a header but no data rows"))
            _check_column_cells(name, columns)
            return columns
        frame = arrow_table.to_pandas()
    else:
        text = _decode_text(name, data)
        if fmt == "jsonl":
            import pandas as pd

            frame = pd.DataFrame.from_records(_read_jsonl(name, io.StringIO(text, newline="\n")).rows)
        else:
            delimiter = "\t" if fmt == "tsv" else ","
            fast = _arrow_delimited(text, delimiter)
            if fast is not None:
                columns, longest = fast
                if columns.n_rows == 0:
                    raise InputError(InputProblem(name, "has a header but no data rows"))
                if longest > MAX_CELL_CHARS:
                    _check_column_cells(name, columns)
                return columns
            import pandas as pd

            try:
                frame = pd.read_csv(io.StringIO(text), sep=delimiter, dtype=str, keep_default_na=False)
            except pd.errors.ParserError as error:
                raise InputError(InputProblem(name, f"is not a well-formed table ({error})")) from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0:
        raise InputError(InputProblem(name, "has a header but no data rows"))
    columns = TextColumns.of(as_clean_strings(frame))
    _check_column_cells(name, columns)
    return columns


def read_frame(path: str | Path) -> pd.DataFrame:
    """The whole table as a DataFrame of stripped strings ("" for missing): `read_columns` as a DataFrame."""
    return read_columns(path).to_frame()


def _arrow_delimited(text: str, delimiter: str) -> tuple[TextColumns, int] | None:
    """A well-formed CSV/TSV read by pyarrow's CSV reader (several times faster than pandas' on 100,000 rows),
    as the columns `as_clean_strings(pd.read_csv(..., dtype=str, keep_default_na=False))` holds, with the length
    of its longest cell (after stripping, as `_check_column_cells` measures); or None where the two readers
    could differ (duplicate or empty column names, which pandas renames; ragged rows, which pandas pads or
    refuses with its own message): pandas reads those."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pa_csv
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    # read straight into dictionary-encoded columns: no pyarrow.compute (its import alone costs ~50 ms)
    # the header from the file's head only: a StringIO of the whole text is a copy four times its size. A header
    # longer than the head comes out cut short, unlike pyarrow's, and the file goes to pandas below.
    head = io.StringIO(text[:HEADER_SCAN_CHARS], newline="")
    header = next(csv.reader(head, delimiter=delimiter), None)
    names = [c.strip() for c in header or []]
    if not names or len(set(names)) != len(names) or not all(names):
        return None
    try:
        table = pa_csv.read_csv(
            pa.py_buffer(text.encode("utf-8")),
            read_options=pa_csv.ReadOptions(use_threads=False),  # threads gain little on tens of MB, lose when busy
            parse_options=pa_csv.ParseOptions(
                delimiter=delimiter, quote_char='"', double_quote=True, escape_char=False, newlines_in_values=True
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(header, pa.dictionary(pa.int32(), pa.large_string())),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowException, ValueError):
        return None
    if table.column_names != header:
        return None
    columns = _arrow_text_columns(table.rename_columns(names))
    longest = max((len(v) for column in columns.data.values() for v in column.values), default=0)
    return columns, longest


def _arrow_text_columns(table) -> TextColumns | None:
    """An Arrow table whose columns are all text (or dictionary-encoded text), with unique non-empty names once
    stripped, as stripped text columns (missing -> ""); None for any other table (numbers, lists, dates: pandas
    turns those into text)."""
    import pyarrow as pa

    names = [str(c).strip() for c in table.column_names]
    if len(set(names)) != len(names) or not all(names):
        return None
    index_columns = (table.schema.pandas_metadata or {}).get("index_columns", [])
    if any(isinstance(c, str) for c in index_columns):  # a stored pandas index: to_pandas makes it the index
        return None

    def is_text(arrow_type) -> bool:
        return pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)

    types = table.schema.types
    if not all(is_text(t) or (pa.types.is_dictionary(t) and is_text(t.value_type)) for t in types):
        return None
    data = {}
    for name, column, arrow_type in zip(names, table.columns, types, strict=True):
        if not pa.types.is_dictionary(arrow_type):
            column = column.dictionary_encode()
        data[name] = _dictionary_text_column(column)
    return TextColumns(names, data, table.num_rows)


def _dictionary_text_column(column) -> TextColumn:
    """A chunked Arrow column of dictionary-encoded text as a `TextColumn` of stripped texts (null -> ""). Each
    chunk has its own dictionary; only the dictionaries are turned into Python strings."""
    index: dict[str, int] = {}
    parts = []
    for chunk in column.chunks:
        local = [index.setdefault(_cell_text(text), len(index)) for text in chunk.dictionary.to_pylist()]
        raw = _integer_values(chunk.indices)
        if chunk.null_count:  # a null's slot holds no defined index
            valid = _validity(chunk.indices)
            local.append(index.setdefault("", len(index)))
            raw = np.where(valid, raw, len(local) - 1)
        parts.append(np.asarray(local, dtype=np.int64)[raw])
    codes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    return TextColumn(codes, list(index))


def _integer_values(array) -> np.ndarray:
    """An Arrow integer array's values as numpy, read from its buffer (pyarrow's to_numpy imports pandas)."""
    dtype = np.dtype(f"int{array.type.bit_width}")
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)


def _validity(array) -> np.ndarray:
    """Per entry of an Arrow array: not null (from its validity bitmap)."""
    bitmap = array.buffers()[0]
    if bitmap is None:
        return np.ones(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)


def _check_column_cells(name: str, columns: TextColumns) -> None:
    """Cells longer than MAX_CELL_CHARS, located by row and column (measured on distinct values: cheap)."""
    problems = Problems()
    for column in columns.columns:
        lengths = np.array([len(v) for v in columns[column].values] + [0])[columns[column].codes]
        if len(lengths) and lengths.max() > MAX_CELL_CHARS:
            row = int(lengths.argmax()) + 1
            problems.append(_too_long(name, int(lengths.max()), row, column))
    if problems:
        raise InputError(problems)


def _too_long(name: str, length: int, row: int, column: str | None) -> InputProblem:
    return InputProblem(name, f"a cell of {length:,} characters; at most {MAX_CELL_CHARS:,} are accepted", row, column)


def as_clean_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Every column as stripped text, missing values as "". Works on each column's unique values, so it is cheap."""
    import pandas as pd

    out = {}
    for column in frame.columns:
        try:
            codes, uniques = pd.factorize(frame[column], use_na_sentinel=True)
        except TypeError:  # lists or objects in the column (JSONL, Parquet): factorize their text instead
            texts = frame[column].map(lambda v: v if v is None or isinstance(v, (str, float, int)) else _cell_text(v))
            codes, uniques = pd.factorize(texts, use_na_sentinel=True)
        cleaned = [_cell_text(u) for u in uniques]
        lookup = pd.Index(cleaned + [""], dtype=object).to_numpy()
        out[column] = pd.array(lookup[codes], dtype="str")  # code -1 (missing) picks the trailing ""
    return pd.DataFrame(out, index=pd.RangeIndex(len(frame)))


def _cell_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # ids stored as floats by some writers: 12.0 -> "12"
    if isinstance(value, (list, dict)) or hasattr(value, "tolist"):
        return json.dumps(value.tolist() if hasattr(value, "tolist") else value, ensure_ascii=False, default=str)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
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


def _read_delimited(name: str, lines: Iterable[str], delimiter: str) -> Table:
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except csv.Error as error:
        raise InputError(InputProblem(name, f"the header line cannot be parsed ({error})")) from None
    header = [h.strip() for h in header]
    problems = _header_problems(name, header)
    if problems:
        raise InputError(problems)
    rows = []
    number = decoded = 0  # the data row read (blank lines not counted), what the rows kept take as values
    try:
        for record in reader:
            if not record or (len(record) == 1 and not record[0].strip()):
                continue  # blank line
            number += 1
            if len(record) != len(header):
                if problems.full:
                    problems.unlisted += 1
                else:
                    problems.append(
                        InputProblem(name, f"has {len(record)} fields but the header has {len(header)}", number)
                    )
                continue
            decoded += ROW_BYTES + CELL_BYTES * len(record) + sum(map(len, record))
            if decoded > MAX_TABLE_BYTES:
                raise InputError(_too_many_values(name, number))
            rows.append(dict(zip(header, record)))
    except csv.Error as error:
        if "field larger than field limit" in str(error):
            message = f"has a cell longer than {MAX_CELL_CHARS:,} characters (the most accepted)"
        else:
            message = f"cannot be parsed ({error})"
        problems.append(InputProblem(name, message, number + 1))
    if problems:
        raise InputError(problems)
    if not rows:
        raise InputError(InputProblem(name, "has a header but no data rows"))
    return Table(name, header, rows)


def _too_many_values(name: str, number: int) -> InputProblem:
    """A text table whose rows, read as values, would take more than MAX_TABLE_BYTES: millions of short cells
    take far more as Python values than as text (a 112 MB CSV of 8 million rows took 12 GB), so the bound is the
    same as for a Parquet file's decoded values."""
    return InputProblem(
        name,
        f"has more rows and cells than one table may hold: by this row they take more than {MAX_TABLE_BYTES:,} "
        f"bytes as values (each row counts {ROW_BYTES} bytes and each cell {CELL_BYTES}, besides its text); "
        "split it into smaller tables",
        number,
    )


def _header_problems(name: str, header: list[str]) -> list[InputProblem]:
    problems = Problems()
    seen = set()
    for position, column in enumerate(header, start=1):
        if not column:
            problems.append(InputProblem(name, f"header field {position} is empty"))
        elif column in seen:
            problems.append(InputProblem(name, "appears twice in the header", column=column))
        seen.add(column)
    return problems


def _read_jsonl(name: str, lines: Iterable[str]) -> Table:
    """JSON Lines from `lines`, split at "\n" only: str.splitlines would also split at U+2028 or U+0085, which
    JSON allows inside strings."""
    rows: list[dict[str, Any]] = []
    problems = Problems()
    columns: dict[str, None] = {}
    decoded = 0  # what the rows take as values
    seen_a_line = False
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if not seen_a_line and line.lstrip().startswith("["):
            raise InputError(InputProblem(name, "is a JSON array, not JSON Lines (one object per line)"))
        seen_a_line = True
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(InputProblem(name, f"line {line_number} is not valid JSON ({error.msg})", len(rows) + 1))
            rows.append({})
            continue
        except ValueError:  # json's guard against quadratic int parsing (sys.get_int_max_str_digits)
            problems.append(
                InputProblem(
                    name, f"line {line_number} holds a number of more than {MAX_INT_DIGITS:,} digits", len(rows) + 1
                )
            )
            rows.append({})
            continue
        except RecursionError:
            problems.append(
                InputProblem(
                    name, f"line {line_number} is nested too deeply (at most {MAX_NESTING} levels)", len(rows) + 1
                )
            )
            rows.append({})
            continue
        if not isinstance(value, dict):
            problems.append(InputProblem(name, f"line {line_number} is not a JSON object", len(rows) + 1))
            rows.append({})
            continue
        if len(line) > MAX_CELL_CHARS or "\\u" in line or line.count("[") + line.count("{") > MAX_NESTING:
            problems.extend(_value_problems(name, value, len(rows) + 1))  # only lines that could hold a problem
        decoded += ROW_BYTES + CELL_BYTES * len(value) + len(line)
        if decoded > MAX_TABLE_BYTES:
            raise InputError(_too_many_values(name, len(rows) + 1))
        rows.append(value)
        columns.update(dict.fromkeys(value))
    if problems:
        raise InputError(problems)
    return Table(name, list(columns), rows)


def _check_rows(name: str, rows: list[dict[str, Any]]) -> None:
    problems = Problems()
    for number, row in enumerate(rows, start=1):
        problems.extend(_value_problems(name, row, number))
        if len(problems) > InputError.MAX_LISTED:
            break
    if problems:
        raise InputError(problems)


def _value_problems(name: str, row: dict[str, Any], number: int) -> list[InputProblem]:
    """Cells too long, nested too deeply, or holding lone surrogates (text that cannot be stored or printed)."""
    problems = Problems()
    for column, value in row.items():
        problem = _cell_problem(value, 0)
        if problem == "long":
            problems.append(_too_long(name, _longest(value), number, str(column)))
        elif problem:
            problems.append(InputProblem(name, problem, number, str(column)))
        elif isinstance(column, str) and _has_surrogate(column):
            problems.append(InputProblem(name, "a field name is not valid Unicode (a lone surrogate)", number))
    return problems


def _cell_problem(value: Any, depth: int) -> str | None:
    if isinstance(value, str):
        if len(value) > MAX_CELL_CHARS:
            return "long"
        if _has_surrogate(value):
            return "the text is not valid Unicode (it holds a lone surrogate such as \\ud800)"
        return None
    if isinstance(value, (list, dict)):
        if depth >= MAX_NESTING:
            return f"is nested too deeply (at most {MAX_NESTING} levels)"
        for inner in value.values() if isinstance(value, dict) else value:
            problem = _cell_problem(inner, depth + 1)
            if problem:
                return problem
        for key in value if isinstance(value, dict) else ():
            problem = _cell_problem(key, depth + 1)
            if problem:
                return problem
    return None


def _longest(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, dict)):
        return max((_longest(v) for v in (value.values() if isinstance(value, dict) else value)), default=0)
    return 0


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _parquet(name: str, data: bytes):
    import pyarrow as pa

    if not data.startswith(PARQUET_MAGIC):
        raise InputError(InputProblem(name, "is not a Parquet file (no Parquet header); check the extension"))
    try:
        table = _bounded_parquet(name, data)
    except (pa.ArrowException, OSError) as error:
        raise InputError(InputProblem(name, f"the Parquet file is damaged or unreadable ({error})")) from None
    problems = Problems()
    for column_name, column in zip(table.column_names, table.columns):
        try:
            column.validate(full=True)  # checks, among others, that every string is valid UTF-8
        except pa.ArrowException as error:
            problems.append(InputProblem(name, f"holds invalid data ({error})", column=column_name))
    if problems:
        raise InputError(problems)
    return table


def _bounded_parquet(name: str, data: bytes):
    """The file's table, as `pq.read_table` gives it, read so that it never decodes to more than MAX_TABLE_BYTES
    (`decoded_bytes`: rows and cells counted at least what they cost as Python values): each row group's size as its footer declares it is
    checked before any is read, then each row group is read with its text columns kept dictionary-encoded and
    counted as if expanded, and only a table within the bound is expanded."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(pa.BufferReader(data))
    repeated = sorted({name for name in schema.names if schema.names.count(name) > 1})
    if repeated:  # pyarrow would read them; which one a row's value came from would be anyone's guess
        raise InputError(InputProblem(name, f"column '{repeated[0]}' appears twice; column names must be unique"))
    texts = [field.name for field in schema if is_text_type(field.type)]
    parquet = pq.ParquetFile(pa.BufferReader(data), read_dictionary=texts)
    metadata = parquet.metadata
    declared = [_declared_bytes(metadata.row_group(group)) for group in range(metadata.num_row_groups)]
    check_decoded_size(name, sum(declared))
    groups, decoded = [], 0
    for group in range(parquet.num_row_groups):
        groups.append(parquet.read_row_group(group))
        decoded += decoded_bytes(groups[-1])
        check_decoded_size(name, decoded)
    table = pa.concat_tables(groups) if groups else parquet.schema_arrow.empty_table()
    return table.cast(schema)  # the text columns back to their own types, now that their size is known


def _declared_bytes(row_group) -> int:
    """What a row group decodes to at least, from its footer: its pages' declared sizes or CELL_BYTES for every
    value (run-length encoding stores a million equal numbers in a few bytes), and ROW_BYTES for every row."""
    pages = sum(row_group.column(column).total_uncompressed_size for column in range(row_group.num_columns))
    values = sum(row_group.column(column).num_values for column in range(row_group.num_columns))
    return max(pages, values * CELL_BYTES) + row_group.num_rows * ROW_BYTES


def write_table(
    rows: list[dict[str, Any]], path: str | Path, columns: list[str] | None = None, output_format: str = "csv"
) -> None:
    """Write rows as CSV, JSONL or Parquet by extension, atomically (temp file + rename), with the permissions a
    plain `open` would give (the umask's), not the temp file's 0600. A file that cannot be written (no such
    folder, no permission, disk full, mixed types for Parquet) is an `InputError` naming it; nothing is left.
    `-` writes to standard output as `output_format` (csv or jsonl); a reader that leaves early raises
    BrokenPipeError, which the CLI ends quietly."""
    columns = columns or (list(rows[0].keys()) if rows else [])
    if is_standard_stream(path):
        _write_standard_output(rows, columns, output_format)
        return
    path = Path(path)
    check_path_name(path)
    fmt = table_format(path)
    check_output_file(path)
    arrow_table = _arrow_table(rows, columns, str(path)) if fmt == "parquet" else None
    temp_name = None
    try:
        fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        os.close(fd)
        if arrow_table is not None:
            import pyarrow.parquet as pq

            pq.write_table(arrow_table, temp_name)
        elif fmt == "jsonl":
            with open(temp_name, "w", encoding="utf-8") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        else:
            with open(temp_name, "w", encoding="utf-8", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=columns, delimiter="\t" if fmt == "tsv" else ",")
                writer.writeheader()
                for row in rows:
                    writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        with open(temp_name, "rb") as handle:
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o666 & ~current_umask())
        os.replace(temp_name, path)
        temp_name = None
    except OSError as error:
        reason = error.strerror or str(error)
        raise SpokenBenchError(f"{display_name(path)}: cannot write the file ({reason})") from None
    except UnicodeEncodeError as error:
        raise SpokenBenchError(f"{display_name(path)}: a value is not valid Unicode ({error.reason})") from None
    finally:
        if temp_name is not None:
            Path(temp_name).unlink(missing_ok=True)


def _write_standard_output(rows: list[dict[str, Any]], columns: list[str], output_format: str) -> None:
    """Rows to standard output in blocks, as bytes (no newline translation, UTF-8 whatever the locale)."""
    if output_format not in ("csv", "tsv", "jsonl"):
        raise SpokenBenchError(f"standard output takes csv or jsonl, not {output_format}")
    sys.stdout.flush()
    out = getattr(sys.stdout, "buffer", None)
    block = io.StringIO(newline="")
    writer = None
    if output_format != "jsonl":
        writer = csv.DictWriter(block, fieldnames=columns, delimiter="\t" if output_format == "tsv" else ",")
        writer.writeheader()
    for number, row in enumerate(rows, start=1):
        if writer is None:
            block.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        else:
            writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        if number % 1000 == 0 or number == len(rows):
            _flush_block(block, out)
    _flush_block(block, out)
    (out or sys.stdout).flush()


def _flush_block(block: io.StringIO, out) -> None:
    text = block.getvalue()
    if text:
        if out is None:
            sys.stdout.write(text)
        else:
            out.write(text.encode("utf-8", "surrogateescape"))
        block.seek(0)
        block.truncate()


def _arrow_table(rows: list[dict[str, Any]], columns: list[str], name: str):
    """The rows as an Arrow table, or an InputError naming the first row and column whose type differs from
    the column's earlier values (Parquet stores one type per column)."""
    import pyarrow as pa

    if not rows:
        return pa.table({c: pa.array([], pa.string()) for c in columns})
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as error:
        problems = Problems()
        for column in dict.fromkeys(key for row in rows for key in row):
            first_type = None
            for number, row in enumerate(rows, start=1):
                value = row.get(column)
                if value is None:
                    continue
                kind = _kind(value)
                if first_type is None:
                    first_type = (kind, number)
                elif kind != first_type[0]:
                    problems.append(
                        InputProblem(
                            name,
                            f"cannot be written as Parquet: {kind} here, {first_type[0]} in row {first_type[1]} "
                            "(Parquet needs one type per column); write .jsonl or .csv instead",
                            number,
                            str(column),
                        )
                    )
                    break
        raise InputError(
            problems or InputProblem(name, f"cannot be written as Parquet ({error}); write .jsonl or .csv instead")
        ) from None


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a true/false value"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows (os.umask both sets and returns
    it, which for an instant would apply to files other threads create)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _csv_cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return "" if value is None else value
