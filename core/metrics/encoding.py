"""Small vectorized helpers shared by the metric modules: turning text columns into integer codes and
combining codes into group keys, so every metric is a bincount or a sort instead of a Python loop."""

from __future__ import annotations

import numpy as np

from spokenbench.core.foundation.errors import InputProblem
from spokenbench.core.foundation.tables import TextColumn

MAX_PROBLEMS_PER_CHECK = 20


def factorize_sorted(values) -> tuple[np.ndarray, list[str]]:
    """Integer codes (0..n-1) in sorted order of the distinct values, and those values. Hashes the column
    once (a `TextColumn` is hashed already) and sorts only the distinct values."""
    if isinstance(values, TextColumn):
        codes, uniques = values.codes, np.asarray(values.values, dtype=object)
    else:
        import pandas as pd

        codes, uniques = pd.factorize(values)
        uniques = np.asarray([str(u) for u in uniques], dtype=object)
    order = np.argsort(uniques, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[codes], [str(u) for u in uniques[order]]


def normalized_codes(series, normalize) -> tuple[np.ndarray, list[str]]:
    """Codes of `normalize(value)` per row, computed on distinct values only (cheap on long columns)."""
    if isinstance(series, TextColumn):
        raw_codes, uniques = series.codes, series.values
    else:
        import pandas as pd

        raw_codes, uniques = pd.factorize(series)
    if len(raw_codes) and raw_codes.min() < 0:  # no missing values expected: loaders give ""
        raise ValueError("missing value in a cleaned column")
    normalized = TextColumn.from_codes(np.arange(len(uniques)), [normalize(str(u)) for u in uniques])
    norm_codes, norm_uniques = factorize_sorted(normalized)
    return norm_codes[raw_codes], norm_uniques


DENSE_KEY_LIMIT = 1 << 22


def compact(key: np.ndarray, space: int) -> tuple[np.ndarray, int]:
    """Renumber non-negative integer keys 0..space-1 to 0..n-1 keeping their order; n = distinct keys."""
    if space <= max(DENSE_KEY_LIMIT, 4 * len(key)):
        present = np.zeros(space, dtype=bool)
        present[key] = True
        remap = np.cumsum(present) - 1
        return remap[key], int(remap[-1]) + 1 if space else 0
    uniques, codes = np.unique(key, return_inverse=True)
    return codes.astype(np.int64), len(uniques)


def combine(*code_arrays: np.ndarray) -> tuple[np.ndarray, int]:
    """Compact codes of the tuple of code arrays (only combinations that occur, in lexicographic order of
    the codes), and how many there are. The mixed-radix key is compacted once at the end, and before a step
    only when the key space would outgrow a dense renumbering (which also keeps keys far from int64 overflow);
    compacting keeps the order, so the codes are the same either way."""
    result = np.zeros(len(code_arrays[0]), dtype=np.int64)
    size = 1
    dense = max(DENSE_KEY_LIMIT, 4 * len(result))
    for codes in code_arrays:
        codes = np.asarray(codes, dtype=np.int64)
        width = int(codes.max()) + 1 if len(codes) else 1
        if size * width > dense:
            result, size = compact(result, size)
        result = result * width + codes
        size *= width
    return compact(result, size)


def representative_row(keys: np.ndarray, size: int) -> np.ndarray:
    """For each key 0..size-1, the index of one row carrying it (for reading values that are constant
    within a key, such as the model of a (model, question) group)."""
    rows = np.full(size, -1, dtype=np.int64)
    rows[keys] = np.arange(len(keys))
    return rows


def first_row(keys: np.ndarray, size: int) -> np.ndarray:
    """For each key 0..size-1, the index of the first row carrying it (-1 if none)."""
    rows = np.full(size, -1, dtype=np.int64)
    present, index = np.unique(keys, return_index=True)
    rows[present] = index
    return rows


def determines(a_codes: np.ndarray, b_codes: np.ndarray) -> bool:
    """True when each value of `a` occurs with exactly one value of `b` (a functional dependency a -> b)."""
    if len(a_codes) == 0:
        return False
    a_size, b_size = int(a_codes.max()) + 1, int(b_codes.max()) + 1
    _, n_pairs = compact(a_codes.astype(np.int64) * b_size + b_codes, a_size * b_size)
    _, n_a = compact(a_codes.astype(np.int64), a_size)
    return n_pairs == n_a


def row_problems(
    file: str, rows: np.ndarray, column: str, message: str, limit: int = MAX_PROBLEMS_PER_CHECK
) -> list[InputProblem]:
    """One problem per offending row (1-based data rows), capped so a broken column does not flood the output;
    the cap is stated in the last message."""
    rows = np.asarray(rows)
    listed = [InputProblem(file=file, row=int(r) + 1, column=column, message=message) for r in rows[:limit]]
    if len(rows) > limit:
        listed.append(InputProblem(file=file, column=column, message=f"{message} (in {len(rows) - limit} more rows)"))
    return listed


def letter_code(text: str) -> int:
    """'A' -> 0 … 'Z' -> 25; '' -> -1 (no answer); anything else -> -2 (not a letter)."""
    if text == "":
        return -1
    if len(text) == 1 and "A" <= text <= "Z":
        return ord(text) - ord("A")
    return -2


def letters(n: int) -> str:
    return "".join(chr(ord("A") + i) for i in range(n))
