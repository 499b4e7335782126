"""Writing one table three ways: CSV (full precision, for scripts), Markdown and LaTeX (rounded, for
people and papers). Written by hand so no optional pandas extras (tabulate, jinja2) are needed. A table is a
DataFrame or plain columns (`column_table`): the multiple-choice report writes plain columns, without importing
pandas (issue 28), byte for byte as pandas writes the same table."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the app formats cells with this module and never needs pandas for it (issue 28)
    import pandas as pd

LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


ColumnTable = dict  # column name -> a 1-d numpy array (see `column_table`), all of one length, in column order
CSV_FLOAT_FORMAT = "%.10g"


def column_array(values) -> np.ndarray:
    """`values` as the array a DataFrame column of them holds: numbers and bools as their numpy dtype (a list
    of numbers with a NaN or None as floats, an empty list as floats), text and anything mixed as objects; so
    that plain columns are written as pandas writes the same column."""
    if isinstance(values, np.ndarray):  # an array of objects stays one, as in a DataFrame, even of numbers
        return values if values.dtype.kind not in "US" else values.astype(object)
    array = np.asarray(values)
    if array.dtype.kind in "biuf":
        return array
    cells = list(values)
    numbers = [v for v in cells if v is not None]
    if numbers and all(isinstance(v, (int, float, np.integer, np.floating)) for v in numbers):
        if not any(isinstance(v, (bool, np.bool_)) for v in numbers):
            return np.array([np.nan if v is None else v for v in cells], dtype=float)
    array = np.empty(len(cells), dtype=object)
    array[:] = cells
    return array


def column_table(columns: Mapping[str, Iterable]) -> ColumnTable:
    """Plain columns for `write_table`: each one as `column_array` makes it."""
    return {str(name): column_array(values) for name, values in columns.items()}


def _csv_cells(array: np.ndarray) -> list[str]:
    """One column's CSV cells as pandas' `to_csv(float_format=CSV_FLOAT_FORMAT)` writes them: floats in that
    format, NaN empty, other values (ints, bools, text) as `str`, a missing object empty."""
    if array.dtype.kind == "f":
        return ["" if v != v else CSV_FLOAT_FORMAT % v for v in array.tolist()]
    if array.dtype.kind in "biu":
        return [str(v) for v in array.tolist()]
    return ["" if v is None or (isinstance(v, (float, np.floating)) and v != v) else str(v) for v in array.tolist()]


def write_csv_columns(table: ColumnTable, path: Path) -> None:
    """`table` as a CSV file, the bytes pandas' to_csv(index=False, lineterminator="\\n") writes for it."""
    cells = [_csv_cells(array) for array in table.values()]
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(list(table))
        writer.writerows(zip(*cells))


def _layout(frame, digits: int) -> tuple[list[str], list[bool], list[tuple[str, ...]]]:
    """Column names, which are numeric (right-aligned), and the rows' cells as `format_cell` writes them, of a
    DataFrame or a ColumnTable (formatted a column at a time, from Python values: the same text, ~2x faster)."""
    if isinstance(frame, dict):
        arrays = list(frame.values())
        columns = [[format_cell(v, digits) for v in array.tolist()] for array in arrays]
        return list(frame), [a.dtype.kind in "biuf" for a in arrays], list(zip(*columns))
    from pandas.api.types import is_numeric_dtype

    numeric = [is_numeric_dtype(frame[c]) for c in frame.columns]
    rows = [tuple(format_cell(v, digits) for v in row) for row in frame.itertuples(index=False)]
    return [str(c) for c in frame.columns], numeric, rows


def format_cell(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value != 0 and abs(value) < 10**-digits:
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}f}"
    return str(value)


def to_markdown(frame: pd.DataFrame | ColumnTable, digits: int = 3) -> str:
    return _markdown(_layout(frame, digits))


def _markdown(layout) -> str:
    header, numeric, rows = layout
    lines = [
        "| " + " | ".join(h.replace("|", "\\|") for h in header) + " |",
        "|" + "|".join("---:" if n else ":---" for n in numeric) + "|",
    ]
    for row in rows:
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


_LATEX_ESCAPES = str.maketrans(LATEX_SPECIALS)


def latex_escape(text: str) -> str:
    return text.translate(_LATEX_ESCAPES)


def to_latex(frame: pd.DataFrame | ColumnTable, caption: str = "", label: str = "", digits: int = 3) -> str:
    return _latex(_layout(frame, digits), caption, label)


def _latex(layout, caption: str, label: str) -> str:
    header, numeric, rows = layout
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [
        "\\begin{table}[ht]",
        "\\centering",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(c) for c in header) + " \\\\",
        "\\midrule",
    ]
    for row in rows:
        lines.append(" & ".join(latex_escape(cell) or "--" for cell in row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if caption:
        lines.append(f"\\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(f"\\label{{{label}}}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def write_table(
    frame: pd.DataFrame | ColumnTable,
    out_dir: Path,
    name: str,
    caption: str = "",
    display: pd.DataFrame | ColumnTable | None = None,
    formats=("csv", "md", "tex"),
) -> list[Path]:
    """`frame` goes to CSV as is; `display` (default: `frame`) to Markdown and LaTeX. Returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    display = frame if display is None else display
    layout = _layout(display, 3) if {"md", "tex"} & set(formats) else None  # formatted once for both
    written = []
    if "csv" in formats:
        path = out_dir / f"{name}.csv"
        if isinstance(frame, dict):
            write_csv_columns(frame, path)
        else:
            frame.to_csv(path, index=False, lineterminator="\n", float_format=CSV_FLOAT_FORMAT)
        written.append(path)
    if "md" in formats:
        path = out_dir / f"{name}.md"
        text = (f"**{caption}**\n\n" if caption else "") + _markdown(layout)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if "tex" in formats:
        path = out_dir / f"{name}.tex"
        path.write_text(_latex(layout, caption, f"tab:{name}"), encoding="utf-8")
        written.append(path)
    return written
