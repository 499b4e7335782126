"""All of evaluation's SQL: runs, responses, the response cache, and the queries behind plans, preparation and
re-parsing. Callers own transactions; nothing here commits. A response row is a `ResponseRecord`, turned
into SQL parameters in one place (`_response_params`), so no caller depends on the column order."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from operator import attrgetter

from spokenbench.core.store.database import NOT_A_CONTROL, utc_now

_IN_BATCH = 500  # ids per `IN (...)` query: well below SQLite's variable limit


@dataclass(frozen=True, slots=True)
class ResponseRecord:
    """One stored answer (or failure) of one run to one (item, condition). Field names are the columns."""

    run_id: int
    item_id: int
    condition_key: str
    option_order: str
    created_at: str
    raw_text: str | None = None
    parsed_letter: str | None = None
    parse_status: str | None = None
    mapped_option: str | None = None
    latency_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None  # set for a failed request; it is retried on resume
    request_sha256: str | None = None
    cached: bool = False
    attempts: int | None = None
    cost_usd: float | None = None
    parse_detail: str | None = None
    transcript: str | None = None  # pipeline mode: what the ASR step heard


RESPONSE_COLUMNS = tuple(field.name for field in fields(ResponseRecord))
_KEY_COLUMNS = ("run_id", "item_id", "condition_key")
_UPSERT = (
    f"INSERT INTO responses({', '.join(RESPONSE_COLUMNS)}) VALUES ({', '.join('?' * len(RESPONSE_COLUMNS))}) "
    "ON CONFLICT(run_id, item_id, condition_key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in RESPONSE_COLUMNS if c not in _KEY_COLUMNS)
)
_response_params = attrgetter(*RESPONSE_COLUMNS)  # the one place a record becomes SQL parameters


@dataclass(frozen=True)
class CachedReply:
    raw_text: str
    input_tokens: int | None
    output_tokens: int | None
    audio_seconds: float | None
    latency_ms: float | None
    cost_usd: float | None


@dataclass(frozen=True)
class CacheEntry:
    """A paid reply to keep in the response cache under its request key."""

    key: str
    model: str
    reply: CachedReply
    finish_reason: str | None


def canonical_json(data) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------------------------------
# Runs


def create_run(
    conn: sqlite3.Connection,
    name: str,
    model: str,
    provider: str,
    mode: str,
    prompt: str,
    prompt_text: str,
    parameters: dict,
    total: int,
    budget: float | None,
) -> int:
    now = utc_now()
    cursor = conn.execute(
        "INSERT INTO runs(name, model, provider, mode, prompt, prompt_text, parameters_json, status, created_at, "
        "total_requests, budget_usd, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
        (name, model, provider, mode, prompt, prompt_text, canonical_json(parameters), now, total, budget, now),
    )
    return cursor.lastrowid


def run_row(conn: sqlite3.Connection, run_id: int) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()


def find_resumable_run(
    conn: sqlite3.Connection, model: str, mode: str, prompt: str, parameters: dict
) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM runs WHERE model = ? AND mode = ? AND prompt = ? AND parameters_json = ? ORDER BY id DESC LIMIT 1",
        (model, mode, prompt, canonical_json(parameters)),
    ).fetchone()


def runs_left_to_fill(conn: sqlite3.Connection, models: set[str]) -> list[int]:
    """The ids of the runs of `models` not finished, by id, but for those the user cancelled (a budget stop or an
    interruption is still to be completed): the runs a collected batch may complete from the response cache."""
    rows = conn.execute(
        "SELECT id, model FROM runs WHERE status != 'finished' "
        "AND NOT (status = 'cancelled' AND stop_reason IS 'cancelled') ORDER BY id"
    )
    return [run_id for run_id, model in rows if model in models]


def mark_run(
    conn: sqlite3.Connection,
    run_id: int,
    status: str,
    stop_reason: str | None = None,
    total: int | None = None,
    budget: float | None = None,
) -> None:
    finished = utc_now() if status in ("finished", "cancelled", "failed") else None
    conn.execute(
        "UPDATE runs SET status = ?, stop_reason = ?, finished_at = ?, updated_at = ?, "
        "total_requests = coalesce(?, total_requests), budget_usd = coalesce(?, budget_usd) WHERE id = ?",
        (status, stop_reason, finished, utc_now(), total, budget, run_id),
    )


def add_run_cost(conn: sqlite3.Connection, run_id: int, cost: float) -> None:
    if cost:
        conn.execute("UPDATE runs SET cost_usd = cost_usd + ?, updated_at = ? WHERE id = ?", (cost, utc_now(), run_id))


def run_cost(conn: sqlite3.Connection, run_id: int) -> float:
    row = conn.execute("SELECT cost_usd FROM runs WHERE id = ?", (run_id,)).fetchone()
    return (row[0] or 0.0) if row else 0.0


def run_ids_named(conn: sqlite3.Connection, name: str) -> list[int]:
    """The ids of the runs called `name`, oldest first."""
    return [row[0] for row in conn.execute("SELECT id FROM runs WHERE name = ? ORDER BY id", (name,))]


def run_models(conn: sqlite3.Connection) -> list[str]:
    """The models the project's runs asked, sorted."""
    return [row[0] for row in conn.execute("SELECT DISTINCT model FROM runs ORDER BY model")]


def run_summaries(conn: sqlite3.Connection) -> list[dict]:
    """Every run with its answer, parse, accuracy and cost counts, as recorded (see runner.list_runs for the
    status a person should see)."""
    rows = conn.execute(
        """SELECT u.id, u.name, u.model, u.provider, u.mode, u.prompt, u.status, u.stop_reason, u.created_at,
                  u.finished_at, u.total_requests, u.cost_usd, u.budget_usd, u.parameters_json,
                  count(r.id) AS responses,
                  sum(r.error IS NOT NULL) AS errors,
                  sum(r.parse_status = 'ok') AS parsed_ok,
                  sum(r.parse_status = 'failed') AS parse_failed,
                  sum(r.parse_status = 'ambiguous') AS ambiguous,
                  sum(r.parse_status = 'refusal') AS refusals,
                  sum(r.cached) AS cached,
                  sum(coalesce(r.input_tokens, 0)) AS input_tokens,
                  sum(coalesce(r.output_tokens, 0)) AS output_tokens,
                  sum(r.mapped_option IS NOT NULL AND r.mapped_option = i.answer) AS correct,
                  sum(i.answer IS NOT NULL AND r.parse_status IS NOT NULL) AS gradable
           FROM runs u LEFT JOIN responses r ON r.run_id = u.id LEFT JOIN items i ON i.id = r.item_id
           GROUP BY u.id ORDER BY u.id"""
    ).fetchall()
    result = []
    for row in rows:
        entry = dict(row)
        parameters = json.loads(entry.pop("parameters_json") or "{}")
        entry["simulated"] = entry["mode"] == "simulated"
        entry["simulates_mode"] = parameters.get("plan", {}).get("mode")
        for key in ("errors", "parsed_ok", "parse_failed", "ambiguous", "refusals", "cached", "correct", "gradable"):
            entry[key] = int(entry[key] or 0)
        entry["accuracy"] = round(entry["correct"] / entry["gradable"], 4) if entry["gradable"] else None
        entry["cost_usd"] = round(entry["cost_usd"] or 0.0, 6)
        result.append(entry)
    return result


# --------------------------------------------------------------------------------------------------
# Responses and the response cache


def done_keys(conn: sqlite3.Connection, run_id: int) -> set[tuple[int, str]]:
    """(item_id, condition_key) pairs this run already answered without error: a resume skips them."""
    rows = conn.execute("SELECT item_id, condition_key FROM responses WHERE run_id = ? AND error IS NULL", (run_id,))
    return {(row[0], row[1]) for row in rows}


def upsert_responses(conn: sqlite3.Connection, records: Iterable[ResponseRecord]) -> None:
    conn.executemany(_UPSERT, map(_response_params, records))


def store_answer(
    conn: sqlite3.Connection, record: ResponseRecord, cache_entries: Sequence[CacheEntry], cost: float
) -> None:
    """One answer with the cache entries it paid for and its cost, in the caller's transaction: a reply is
    never cached without its response row, nor stored without its cost."""
    store_cached_replies(conn, cache_entries)
    conn.execute(_UPSERT, _response_params(record))
    add_run_cost(conn, record.run_id, cost)


def store_paid_step(conn: sqlite3.Connection, run_id: int, entries: Sequence[CacheEntry], cost: float) -> None:
    """A paid intermediate reply (pipeline mode's transcript), kept before its answer exists, so neither a
    crash nor a budget stop in between makes a resume pay for it again or lose its cost."""
    store_cached_replies(conn, entries)
    add_run_cost(conn, run_id, cost)


def cached_replies(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, CachedReply]:
    found = {}
    for start in range(0, len(keys), _IN_BATCH):
        batch = keys[start : start + _IN_BATCH]
        query = (
            f"SELECT request_sha256, raw_text, input_tokens, output_tokens, audio_seconds, latency_ms, cost_usd "
            f"FROM response_cache WHERE request_sha256 IN ({','.join('?' * len(batch))})"
        )
        for row in conn.execute(query, batch):
            found[row[0]] = CachedReply(*row[1:])
    return found


def cached_keys(conn: sqlite3.Connection, keys: Sequence[str]) -> set[str]:
    """Which of `keys` (distinct) the response cache holds. A cache with no more rows than keys asked is read
    whole, its keys only, in one scan; a larger one is asked a batch of keys at a time."""
    cursor = conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute("SELECT max(rowid) FROM response_cache").fetchone()[0] or 0  # at least its row count
    if rows <= len(keys):
        return {key for (key,) in cursor.execute("SELECT request_sha256 FROM response_cache")}.intersection(keys)
    found: set[str] = set()
    for batch, marks in _batches(keys):
        query = f"SELECT request_sha256 FROM response_cache WHERE request_sha256 IN ({marks})"
        found.update(key for (key,) in cursor.execute(query, batch))
    return found


def store_cached_replies(conn: sqlite3.Connection, entries: Iterable[CacheEntry]) -> None:
    """Paid replies into the response cache in one statement (a batch's results: 100,000 rows); a key already
    there keeps its reply."""
    now = utc_now()
    conn.executemany(
        "INSERT OR IGNORE INTO response_cache(request_sha256, model, raw_text, input_tokens, output_tokens, "
        "audio_seconds, latency_ms, cost_usd, finish_reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            (
                entry.key,
                entry.model,
                entry.reply.raw_text,
                entry.reply.input_tokens,
                entry.reply.output_tokens,
                entry.reply.audio_seconds,
                entry.reply.latency_ms,
                entry.reply.cost_usd,
                entry.finish_reason,
                now,
            )
            for entry in entries
        ),
    )


# --------------------------------------------------------------------------------------------------
# What plans and preparation read


def assembled_input_rows(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT id, item_id, condition_key, option_order, label_sequence, duration_s FROM assembled_inputs "
        "ORDER BY item_id, id"
    ).fetchall()


def planned_inputs(conn: sqlite3.Connection) -> list[tuple[int, int, str, str, str, float, str, str]]:
    """Every assembled input as a plain tuple (id, item_id, condition_key, option_order, label_sequence, duration_s,
    sha256, audio_format), by id: what a plan and its requests' audio read, in one query (in the table's own
    order: sorting by item as well cost a third of the read; the plan groups them by item)."""
    cursor = conn.cursor()
    cursor.row_factory = None  # tuples: a plan reads 100,000s of them
    return cursor.execute(
        "SELECT id, item_id, condition_key, option_order, label_sequence, duration_s, sha256, audio_format "
        "FROM assembled_inputs ORDER BY id"
    ).fetchall()


def question_clips(conn: sqlite3.Connection, item_id: int) -> list[sqlite3.Row]:
    """The item's usable question clips (the spoken question of audio+text-options mode)."""
    return conn.execute(
        "SELECT id, language, accent, voice, speaker_gender, speaker_id, neutralization FROM clips "
        f"WHERE item_id = ? AND part = 'question' AND status = 'ok' AND sha256 IS NOT NULL AND id {NOT_A_CONTROL} "
        "ORDER BY id",
        (item_id,),
    ).fetchall()


def _batches(ids: Sequence[int]) -> Iterable[tuple[Sequence[int], str]]:
    for start in range(0, len(ids), _IN_BATCH):
        batch = ids[start : start + _IN_BATCH]
        yield batch, ",".join("?" * len(batch))


def assembled_audio(conn: sqlite3.Connection, input_ids: Sequence[int]) -> dict[int, tuple[str, str, float]]:
    """assembled input id → (sha256, audio format, seconds)."""
    found = {}
    for batch, marks in _batches(input_ids):
        for row in conn.execute(
            f"SELECT id, sha256, audio_format, duration_s FROM assembled_inputs WHERE id IN ({marks})", batch
        ):
            found[row[0]] = (row[1], row[2], row[3])
    return found


def input_chunks(conn: sqlite3.Connection, input_ids: Sequence[int]) -> dict[int, list[tuple[float, int, str, float]]]:
    """assembled input id → its stored chunks as (max_seconds, position, sha256, seconds), in order."""
    found: dict[int, list[tuple[float, int, str, float]]] = {}
    for batch, marks in _batches(input_ids):
        for row in conn.execute(
            f"SELECT input_id, max_seconds, position, sha256, duration_s FROM input_chunks WHERE input_id IN ({marks}) "
            "ORDER BY input_id, max_seconds, position",
            batch,
        ):
            found.setdefault(row[0], []).append(tuple(row[1:]))
    return found


def clip_audio(conn: sqlite3.Connection, clip_ids: Sequence[int]) -> dict[int, tuple[str, str, float]]:
    """clip id → (sha256, audio format, seconds)."""
    found = {}
    for batch, marks in _batches(clip_ids):
        for row in conn.execute(f"SELECT id, sha256, audio_format, duration_s FROM clips WHERE id IN ({marks})", batch):
            found[row[0]] = (row[1], row[2], row[3] or 0.0)
    return found


# --------------------------------------------------------------------------------------------------
# Re-parsing


def runs_to_reparse(conn: sqlite3.Connection, run_id: int | None = None) -> list[sqlite3.Row]:
    if run_id:
        return conn.execute("SELECT id, mode, prompt, parameters_json FROM runs WHERE id = ?", (run_id,)).fetchall()
    return conn.execute("SELECT id, mode, prompt, parameters_json FROM runs").fetchall()


def answered_rows(conn: sqlite3.Connection, run_id: int) -> list[sqlite3.Row]:
    """The run's responses that have a raw answer to parse."""
    return conn.execute(
        "SELECT id, item_id, condition_key, option_order, raw_text, parsed_letter, parse_status, parse_detail "
        "FROM responses WHERE run_id = ? AND raw_text IS NOT NULL",
        (run_id,),
    ).fetchall()


def update_parses(conn: sqlite3.Connection, updates: Iterable[tuple]) -> None:
    """`updates`: (parsed_letter, parse_status, mapped_option, parse_detail, response id)."""
    conn.executemany(
        "UPDATE responses SET parsed_letter = ?, parse_status = ?, mapped_option = ?, parse_detail = ? WHERE id = ?",
        updates,
    )


# --------------------------------------------------------------------------------------------------
# What the app's launcher shows


def run_error_counts(conn: sqlite3.Connection, run_id: int) -> list[tuple[str, int]]:
    """(stored error message, how many responses of run `run_id` carry it), most frequent first."""
    return [
        (row[0], row[1])
        for row in conn.execute(
            "SELECT error, count(*) FROM responses WHERE run_id = ? AND error IS NOT NULL GROUP BY error "
            "ORDER BY 2 DESC",
            (run_id,),
        )
    ]


def run_response_count(conn: sqlite3.Connection, run_id: int) -> int:
    """Rows in `responses` for run `run_id` (answered or failed)."""
    return conn.execute("SELECT count(*) FROM responses WHERE run_id = ?", (run_id,)).fetchone()[0]
