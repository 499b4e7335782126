"""The metric panels' reads of a project (core/panels.py): the columns the metrics need, one run at a time so a
caller can keep the runs that did not change, and the texts behind a clicked point. Callers own the connection;
nothing here writes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

_IN_BATCH = 500  # ids per `IN (...)` query: well below SQLite's variable limit

RUN_RESPONSE_COLUMNS = (
    "response_id",
    "run_id",
    "question_id",
    "item_id",
    "language",
    "subject",
    "cultural_label",
    "category",
    "answer",
    "prediction",
    "option_order",
    "mapped_option",
    "parse_status",
    "condition_key",
)
_RUN_RESPONSES = """
    SELECT r.id, r.run_id, i.source_id, r.item_id, i.language, i.subject, i.cultural_label, i.category, i.answer,
           r.parsed_letter, r.option_order, r.mapped_option, r.parse_status, r.condition_key
    FROM responses r JOIN items i ON i.id = r.item_id
    WHERE r.run_id = ?
    ORDER BY r.id"""


def run_response_rows(conn: sqlite3.Connection, run_id: int) -> pd.DataFrame:
    """One run's responses with their items' metric columns (RUN_RESPONSE_COLUMNS; the condition still as its
    JSON key), as object columns: built from the fetched tuples directly, without pandas' SQL reader."""
    rows = conn.execute(_RUN_RESPONSES, (run_id,)).fetchall()
    if not rows:
        return pd.DataFrame({c: np.array([], dtype=object) for c in RUN_RESPONSE_COLUMNS})
    columns = list(zip(*rows))
    return pd.DataFrame({name: np.asarray(values, dtype=object) for name, values in zip(RUN_RESPONSE_COLUMNS, columns)})


def _batches(ids: Sequence[int]) -> Iterable[tuple[Sequence[int], str]]:
    for start in range(0, len(ids), _IN_BATCH):
        batch = ids[start : start + _IN_BATCH]
        yield batch, ",".join("?" * len(batch))


def response_texts(conn: sqlite3.Connection, response_ids: Sequence[int]) -> dict[int, tuple]:
    """response id → (raw text, parse detail, error, transcript) for the responses a clicked point lists."""
    found = {}
    for batch, marks in _batches(list(response_ids)):
        for row in conn.execute(
            f"SELECT id, raw_text, parse_detail, error, transcript FROM responses WHERE id IN ({marks})", batch
        ):
            found[row[0]] = tuple(row[1:])
    return found


def item_texts(conn: sqlite3.Connection, item_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """item id → (question, its options as 'A. … B. …') for the questions a clicked point lists."""
    questions, options = {}, {}
    for batch, marks in _batches(list(item_ids)):
        for row in conn.execute(f"SELECT id, question FROM items WHERE id IN ({marks})", batch):
            questions[row[0]] = row[1]
        for row in conn.execute(
            f"SELECT item_id, letter, text FROM options WHERE item_id IN ({marks}) ORDER BY item_id, position", batch
        ):
            options.setdefault(row[0], []).append(f"{row[1]}. {row[2]}")
    return {item: (question, "  ".join(options.get(item, []))) for item, question in questions.items()}
