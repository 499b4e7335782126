"""The metric panels' reads of a project (core/results/): the columns the metrics need, one run at a time so a
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


_RUN_LIST = """
    SELECT u.id, u.name, u.model, u.provider, u.mode, u.prompt, u.status, u.created_at, u.finished_at, u.updated_at,
           coalesce(c.responses, 0), coalesce(c.errors, 0), coalesce(c.parsed_ok, 0), c.last_answer, c.answers_sum
    FROM runs u LEFT JOIN (
        SELECT run_id, count(*) AS responses, sum(error IS NOT NULL) AS errors, sum(parse_status = 'ok') AS parsed_ok,
               max(created_at) AS last_answer,
               sum(id * (coalesce(unicode(parsed_letter), 0) + 97 * coalesce(unicode(mapped_option), 0))) AS answers_sum
        FROM responses GROUP BY run_id
    ) c ON c.run_id = u.id
    ORDER BY u.id"""
RUN_LIST_COLUMNS = (
    "id",
    "name",
    "model",
    "provider",
    "mode",
    "prompt",
    "status",
    "created_at",
    "finished_at",
    "updated_at",
    "responses",
    "errors",
    "parsed_ok",
    "last_answer",
    "answers_sum",
)


def run_list(conn: sqlite3.Connection) -> list[dict]:
    """Every run with what tells whether its stored answers changed since they were last read: the number of
    responses, errors and parsed answers, the newest answer's time (an answer stored again gets a new one), and
    a checksum of the letters (a re-parse changes it), plus `simulated` (mode 'simulated'). Lighter than the
    evaluation's run summaries: no join with the items."""
    runs = [dict(zip(RUN_LIST_COLUMNS, row)) for row in conn.execute(_RUN_LIST)]
    for run in runs:
        run["simulated"] = run["mode"] == "simulated"
    return runs


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
