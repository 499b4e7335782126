"""SQL for runs, responses and the response cache. Callers own transactions; nothing here commits."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from spokenbench.core.store.database import utc_now

RESPONSE_COLUMNS = (
    "run_id",
    "item_id",
    "condition_key",
    "option_order",
    "raw_text",
    "parsed_letter",
    "parse_status",
    "mapped_option",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "error",
    "created_at",
    "request_sha256",
    "cached",
    "attempts",
    "cost_usd",
    "parse_detail",
    "transcript",
)
_UPSERT = (
    f"INSERT INTO responses({', '.join(RESPONSE_COLUMNS)}) VALUES ({', '.join('?' * len(RESPONSE_COLUMNS))}) "
    "ON CONFLICT(run_id, item_id, condition_key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in RESPONSE_COLUMNS if c not in ("run_id", "item_id", "condition_key"))
)


@dataclass(frozen=True)
class CachedReply:
    raw_text: str
    input_tokens: int | None
    output_tokens: int | None
    audio_seconds: float | None
    latency_ms: float | None
    cost_usd: float | None


def canonical_json(data) -> str:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


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


def find_resumable_run(
    conn: sqlite3.Connection, model: str, mode: str, prompt: str, parameters: dict
) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT * FROM runs WHERE model = ? AND mode = ? AND prompt = ? AND parameters_json = ? ORDER BY id DESC LIMIT 1",
        (model, mode, prompt, canonical_json(parameters)),
    ).fetchone()


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


def done_keys(conn: sqlite3.Connection, run_id: int) -> set[tuple[int, str]]:
    """(item_id, condition_key) pairs this run already answered without error: a resume skips them."""
    rows = conn.execute("SELECT item_id, condition_key FROM responses WHERE run_id = ? AND error IS NULL", (run_id,))
    return {(row[0], row[1]) for row in rows}


def upsert_responses(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    conn.executemany(_UPSERT, rows)


def cached_replies(conn: sqlite3.Connection, keys: list[str]) -> dict[str, CachedReply]:
    found = {}
    for start in range(0, len(keys), 500):
        batch = keys[start : start + 500]
        query = (
            f"SELECT request_sha256, raw_text, input_tokens, output_tokens, audio_seconds, latency_ms, cost_usd "
            f"FROM response_cache WHERE request_sha256 IN ({','.join('?' * len(batch))})"
        )
        for row in conn.execute(query, batch):
            found[row[0]] = CachedReply(*row[1:])
    return found


def store_cached_reply(
    conn: sqlite3.Connection, key: str, model: str, reply: CachedReply, finish_reason: str | None
) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO response_cache(request_sha256, model, raw_text, input_tokens, output_tokens, "
        "audio_seconds, latency_ms, cost_usd, finish_reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            key,
            model,
            reply.raw_text,
            reply.input_tokens,
            reply.output_tokens,
            reply.audio_seconds,
            reply.latency_ms,
            reply.cost_usd,
            finish_reason,
            utc_now(),
        ),
    )


def list_runs(conn: sqlite3.Connection) -> list[dict]:
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
