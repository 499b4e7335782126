"""The SQL of batch jobs (core/evaluation/batches.py): the `batch_jobs` and `batch_requests` tables. Callers own
transactions; nothing here commits."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from spokenbench.core.store.database import utc_now

# A batch in one of these states may still answer its pending requests: they are not submitted (nor sent) again.
# A batch still 'submitting' counts once the provider gave it an id, or once it carries a part tag: a tagged part
# whose submitter was killed may exist at the provider, so its requests wait until a collect (or the next submit)
# finds it by its tag or learns it was never created (core/evaluation/batches.py, recover_orphans). An untagged
# 'submitting' row (written before tags) blocks nothing.
IN_FLIGHT_STATES = ("submitting", "pending", "running", "finalizing", "cancelling", "completed", "expired", "failed")
_IN_FLIGHT = (
    f"b.provider != 'file' AND (b.remote_id IS NOT NULL OR b.part_tag IS NOT NULL) AND r.status = 'pending' "
    f"AND b.state IN ({','.join(repr(state) for state in IN_FLIGHT_STATES)})"
)

_BATCH_FIELDS = (
    "run_id",
    "provider",
    "model",
    "api_model",
    "endpoint",
    "part",
    "remote_id",
    "input_file",
    "output_file",
    "error_file",
    "state",
    "remote_state",
    "requests",
    "answered",
    "failed",
    "bytes",
    "cost_usd",
    "price_json",
    "max_output_tokens",
    "error",
    "collected_at",
    "part_tag",
    "submit_job",
)


def insert_batch(conn: sqlite3.Connection, **fields) -> int:
    unknown = set(fields) - set(_BATCH_FIELDS)
    if unknown:
        raise ValueError(f"unknown batch_jobs field(s): {sorted(unknown)}")
    now = utc_now()
    names = [*fields, "created_at", "updated_at"]
    cursor = conn.execute(
        f"INSERT INTO batch_jobs({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        (*fields.values(), now, now),
    )
    return cursor.lastrowid


def update_batch(conn: sqlite3.Connection, batch_id: int, **fields) -> None:
    unknown = set(fields) - set(_BATCH_FIELDS)
    if unknown:
        raise ValueError(f"unknown batch_jobs field(s): {sorted(unknown)}")
    if not fields:
        return
    assignments = ", ".join(f"{name} = ?" for name in fields)
    conn.execute(
        f"UPDATE batch_jobs SET {assignments}, updated_at = ? WHERE id = ?", (*fields.values(), utc_now(), batch_id)
    )


def delete_batch(conn: sqlite3.Connection, batch_id: int) -> None:
    conn.execute("DELETE FROM batch_jobs WHERE id = ?", (batch_id,))


def batch_row(conn: sqlite3.Connection, batch_id: int) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM batch_jobs WHERE id = ?", (batch_id,)).fetchone()


def collected_among(conn: sqlite3.Connection, batch_ids: Iterable[int | None]) -> set[int]:
    """Those of `batch_ids` (None entries skipped) that have been collected."""
    wanted = sorted({batch_id for batch_id in batch_ids if batch_id is not None})
    if not wanted:
        return set()
    marks = ", ".join("?" * len(wanted))
    query = f"SELECT id FROM batch_jobs WHERE state = 'collected' AND id IN ({marks})"
    return {row[0] for row in conn.execute(query, wanted)}


def batch_rows(conn: sqlite3.Connection, run_id: int | None = None) -> list[sqlite3.Row]:
    if run_id is None:
        return conn.execute("SELECT * FROM batch_jobs ORDER BY id").fetchall()
    return conn.execute("SELECT * FROM batch_jobs WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()


def insert_requests(conn: sqlite3.Connection, batch_id: int, rows: Iterable[tuple]) -> None:
    """`rows`: (item_id, condition_key, option_order, request_key, context_json). A batch file's rows (provider
    'file') are marked `file_batch`, which leaves them out of the request-key index: only provider batches' rows
    are looked up by key (`batches_holding`; migration 17)."""
    (provider,) = conn.execute("SELECT provider FROM batch_jobs WHERE id = ?", (batch_id,)).fetchone()
    conn.executemany(
        "INSERT INTO batch_requests(batch_id, item_id, condition_key, option_order, request_key, context_json, "
        f"file_batch) VALUES (?, ?, ?, ?, ?, ?, {int(provider == 'file')})",
        ((batch_id, *row) for row in rows),
    )


def in_flight_requests(conn: sqlite3.Connection, run_id: int) -> dict[tuple[int, str], int]:
    """(item_id, condition_key) of run `run_id` waiting in a provider batch that may still answer them → that
    batch's id."""
    rows = conn.execute(
        f"SELECT r.item_id, r.condition_key, b.id FROM batch_requests r JOIN batch_jobs b ON b.id = r.batch_id "
        f"WHERE b.run_id = ? AND {_IN_FLIGHT}",
        (run_id,),
    )
    return {(row[0], row[1]): row[2] for row in rows}


def delete_unsubmitted(conn: sqlite3.Connection, run_id: int) -> int:
    """Delete the run's untagged batches a killed submitter left 'submitting' without a provider id (the caller
    holds the run, so no live submitter is creating them): without a tag none can be found again, and they would
    keep the run unsettled. Tagged ones are left to `orphan_rows`' recovery."""
    return conn.execute(
        "DELETE FROM batch_jobs WHERE run_id = ? AND provider != 'file' AND state = 'submitting' AND remote_id IS NULL "
        "AND part_tag IS NULL",
        (run_id,),
    ).rowcount


def orphan_rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Tagged provider batches still 'submitting' without a provider id: their submitter is creating them now,
    or was killed before it stored the id (the caller tells which by `submit_job`'s liveness)."""
    return conn.execute(
        "SELECT * FROM batch_jobs WHERE provider != 'file' AND state = 'submitting' AND remote_id IS NULL "
        "AND part_tag IS NOT NULL ORDER BY id"
    ).fetchall()


def batches_holding(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, tuple[int, int]]:
    """request key → (batch id, run id) of an in-flight provider batch, of any run, that may still answer it."""
    holding: dict[str, tuple[int, int]] = {}
    for start in range(0, len(keys), 500):
        chunk = list(keys[start : start + 500])
        rows = conn.execute(
            f"SELECT r.request_key, b.id, b.run_id FROM batch_requests r JOIN batch_jobs b ON b.id = r.batch_id "
            f"WHERE r.request_key IN ({','.join('?' * len(chunk))}) AND r.file_batch = 0 AND {_IN_FLIGHT} "
            "ORDER BY b.id",  # file_batch = 0: the partial index of request keys (migration 17)
            chunk,
        )
        for key, batch_id, run_id in rows:
            holding.setdefault(key, (batch_id, run_id))
    return holding


def request_rows(conn: sqlite3.Connection, batch_id: int, statuses: Sequence[str] = ("pending",)) -> list[sqlite3.Row]:
    marks = ",".join("?" * len(statuses))
    return conn.execute(
        f"SELECT batch_id, item_id, condition_key, option_order, request_key, context_json, status FROM batch_requests "
        f"WHERE batch_id = ? AND status IN ({marks}) ORDER BY rowid",
        (batch_id, *statuses),
    ).fetchall()


def file_request_rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Every request of every exported batch file, with its batch's run, model and price."""
    return conn.execute(
        "SELECT r.batch_id, r.item_id, r.condition_key, r.option_order, r.request_key, r.context_json, r.status, "
        "b.run_id, b.api_model, b.model, b.price_json, b.max_output_tokens "
        "FROM batch_requests r JOIN batch_jobs b ON b.id = r.batch_id WHERE b.provider = 'file' AND b.state != 'writing' "
        "ORDER BY r.rowid"
    ).fetchall()


def set_request_statuses(conn: sqlite3.Connection, updates: Iterable[tuple]) -> None:
    """`updates`: (status, error, batch_id, item_id, condition_key)."""
    conn.executemany(
        "UPDATE batch_requests SET status = ?, error = ? WHERE batch_id = ? AND item_id = ? AND condition_key = ?",
        updates,
    )


def request_counts(conn: sqlite3.Connection, batch_id: int) -> dict[str, int]:
    rows = conn.execute("SELECT status, count(*) FROM batch_requests WHERE batch_id = ? GROUP BY status", (batch_id,))
    return {row[0]: row[1] for row in rows}


def failed_requests(conn: sqlite3.Connection, batch_id: int, limit: int = 5) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT request_key, item_id, condition_key, error FROM batch_requests WHERE batch_id = ? AND status = 'failed' "
        "ORDER BY rowid LIMIT ?",
        (batch_id, limit),
    ).fetchall()


def run_batches_waiting(conn: sqlite3.Connection, run_id: int) -> int:
    """Provider batches of the run not collected yet (any state but collected)."""
    return conn.execute(
        "SELECT count(*) FROM batch_jobs WHERE run_id = ? AND provider != 'file' AND state NOT IN ('collected')",
        (run_id,),
    ).fetchone()[0]


def run_answer_counts(conn: sqlite3.Connection, run_id: int) -> tuple[int, int]:
    """(responses without error, responses with an error) of run `run_id`."""
    row = conn.execute(
        "SELECT sum(error IS NULL), sum(error IS NOT NULL) FROM responses WHERE run_id = ?", (run_id,)
    ).fetchone()
    return int(row[0] or 0), int(row[1] or 0)


@contextlib.contextmanager
def roomy_cache(conn: sqlite3.Connection, megabytes: int = 256) -> Iterator[None]:
    """A larger page cache for one big transaction (a job's results: rows in several indexes keyed by random
    hashes): with the default 2 MB, SQLite spills dirty pages mid-transaction and reads them back, and storing
    100,000 results slows down more than tenfold. Memory is taken only as pages are touched."""
    before = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute(f"PRAGMA cache_size = -{int(megabytes) * 1024}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(before)}")
