"""Only a provider batch's pending requests are looked up by request key (`batches_holding`: a request waiting in a
provider's batch is never sent again), so a batch file's rows are left out of the request-key index (migration 17,
issue 28: half the CPU of recording them). The look-up must still find every provider row, through the index, in
projects made before the migration too."""

import pytest
from eval_support import add_items

from spokenbench.core.evaluation.batch_files import write_batch_file
from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
from spokenbench.core.store import batches as batch_store
from spokenbench.core.store import database, migrations
from spokenbench.core.store.database import utc_now
from spokenbench.core.store.project import Project

CONDITION = '{"language":"en"}'


def _run(conn) -> int:
    return conn.execute(
        "INSERT INTO runs(name, model, mode, prompt, created_at) VALUES ('r', 'openai:gpt-4o-audio-preview', "
        "'audio', 'standard', ?)",
        (utc_now(),),
    ).lastrowid


def _provider_batch(conn, run_id: int) -> int:
    return batch_store.insert_batch(
        conn, run_id=run_id, provider="openai", model="openai:m", api_model="m", state="pending", requests=2,
        remote_id="batch_1",
    )  # fmt: skip


def _file_batch(conn, run_id: int) -> int:
    return batch_store.insert_batch(
        conn, run_id=run_id, provider="file", model="vllm:m", api_model="m", state="exported", requests=2
    )


def _rows(item_ids, prefix: str) -> list[tuple]:
    return [(item_id, CONDITION, "ABCD", f"{prefix}{item_id:060d}", "{}") for item_id in item_ids]


def _indexed_keys(conn) -> set[str]:
    return {row[0] for row in conn.execute("SELECT request_key FROM batch_requests INDEXED BY batch_requests_key "
                                           "WHERE file_batch = 0")}  # fmt: skip


def _holding_uses_the_index(conn, keys) -> bool:
    """Whether `batches_holding`'s own statement searches batch_requests through the request-key index."""
    statements = []
    conn.set_trace_callback(statements.append)
    try:
        batch_store.batches_holding(conn, keys)
    finally:
        conn.set_trace_callback(None)
    (select,) = [s for s in statements if s.lstrip().startswith("SELECT r.request_key")]
    plan = " ".join(str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + select))
    return "batch_requests_key" in plan


def test_a_batch_files_rows_stay_out_of_the_key_index_and_a_provider_batchs_are_found_through_it(project):
    item_ids = add_items(project, 2)
    with project.transaction() as conn:
        run_id = _run(conn)
        provider, written = _provider_batch(conn, run_id), _file_batch(conn, run_id)
        batch_store.insert_requests(conn, provider, _rows(item_ids, "a"))
        batch_store.insert_requests(conn, written, _rows(item_ids, "b"))
    conn = project.conn
    provider_keys, file_keys = [r[3] for r in _rows(item_ids, "a")], [r[3] for r in _rows(item_ids, "b")]
    assert _indexed_keys(conn) == set(provider_keys)
    assert batch_store.batches_holding(conn, provider_keys + file_keys) == {
        key: (provider, run_id) for key in provider_keys
    }
    assert _holding_uses_the_index(conn, provider_keys)
    assert [row[0] for row in conn.execute("SELECT count(*) FROM batch_requests GROUP BY file_batch")] == [2, 2]


def test_the_batch_file_writer_marks_its_rows(audio_project, tmp_path):
    settings = RunSettings(model="vllm:my-audio-model", base_url="http://127.0.0.1:9/v1", mode="audio")
    write_batch_file(audio_project, prepare_evaluation(audio_project, settings), tmp_path / "r.jsonl")
    rows = audio_project.conn.execute("SELECT file_batch, count(*) FROM batch_requests GROUP BY file_batch").fetchall()
    assert [tuple(row) for row in rows] == [(1, 6)]
    assert _indexed_keys(audio_project.conn) == set()


def test_migration_17_keeps_an_older_projects_rows_found(tmp_path, monkeypatch):
    """Rows recorded at schema 16 (every one in the index then) get the default: still indexed, still found."""
    monkeypatch.setattr(database, "MIGRATIONS", migrations.MIGRATIONS[:16])
    monkeypatch.setattr(database, "SCHEMA_VERSION", 16)
    monkeypatch.setattr("spokenbench.core.store.project.SCHEMA_VERSION", 16)
    with Project.create(tmp_path / "p") as old:
        item_ids = add_items(old, 2)
        with old.transaction() as conn:
            run_id = _run(conn)
            provider, written = _provider_batch(conn, run_id), _file_batch(conn, run_id)
            for batch_id, prefix in ((provider, "a"), (written, "b")):
                conn.executemany(
                    "INSERT INTO batch_requests(batch_id, item_id, condition_key, option_order, request_key, "
                    "context_json) VALUES (?, ?, ?, ?, ?, ?)",
                    [(batch_id, *row) for row in _rows(item_ids, prefix)],
                )
    monkeypatch.undo()
    with Project.open(tmp_path / "p") as project:
        conn = project.conn
        assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION
        provider_keys = [r[3] for r in _rows(item_ids, "a")]
        assert batch_store.batches_holding(conn, provider_keys) == {key: (provider, run_id) for key in provider_keys}
        assert _holding_uses_the_index(conn, provider_keys)
        assert len(_indexed_keys(conn)) == 4  # the older file rows too: indexed as they were
        with pytest.raises(Exception, match="CHECK"):
            conn.execute("UPDATE batch_requests SET file_batch = 2")
