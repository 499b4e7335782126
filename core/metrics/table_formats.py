"""Writing one table three ways: CSV (full precision, for scripts), Markdown and LaTeX (rounded, for
people and papers). Written by hand so no optional pandas extras (tabulate, jinja2) are needed."""

from __future__ import annotations

import math
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


def to_markdown(frame: pd.DataFrame, digits: int = 3) -> str:
    header = [str(c) for c in frame.columns]
    from pandas.api.types import is_numeric_dtype

    numeric = [is_numeric_dtype(frame[c]) for c in frame.columns]
    lines = [
        "| " + " | ".join(h.replace("|", "\\|") for h in header) + " |",
        "|" + "|".join("---:" if n else ":---" for n in numeric) + "|",
    ]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(format_cell(v, digits).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


def latex_escape(text: str) -> str:
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in text)


def to_latex(frame: pd.DataFrame, caption: str = "", label: str = "", digits: int = 3) -> str:
    from pandas.api.types import is_numeric_dtype

    numeric = [is_numeric_dtype(frame[c]) for c in frame.columns]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [
        "\\begin{table}[ht]",
        "\\centering",
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(latex_escape(str(c)) for c in frame.columns) + " \\\\",
        "\\midrule",
    ]
    for row in frame.itertuples(index=False):
        lines.append(" & ".join(latex_escape(format_cell(v, digits)) or "--" for v in row) + " \\\\")
    lines += ["\\bottomrule", "\\end{tabular}"]
    if caption:
        lines.append(f"\\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(f"\\label{{{label}}}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def write_table(
    frame: pd.DataFrame,
    out_dir: Path,
    name: str,
    caption: str = "",
    display: pd.DataFrame | None = None,
    formats=("csv", "md", "tex"),
) -> list[Path]:
    """`frame` goes to CSV as is; `display` (default: `frame`) to Markdown and LaTeX. Returns the paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    display = frame if display is None else display
    written = []
    if "csv" in formats:
        path = out_dir / f"{name}.csv"
        frame.to_csv(path, index=False, lineterminator="\n", float_format="%.10g")
        written.append(path)
    if "md" in formats:
        path = out_dir / f"{name}.md"
        text = (f"**{caption}**\n\n" if caption else "") + to_markdown(display)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if "tex" in formats:
        path = out_dir / f"{name}.tex"
        path.write_text(to_latex(display, caption, f"tab:{name}"), encoding="utf-8")
        written.append(path)
    return written
