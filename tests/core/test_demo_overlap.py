"""The demo build runs the simulated listeners that hear no audio on a thread while the clips are synthesized
(issue 28 item 1). Everything it stores must be what the build did one step after another: the same runs, jobs,
answers and every other row, in the same order and with the same ids. Pinned against the build of cb542b5 (before
the overlap), leaving out only what varies between any two builds: times, the process's paths, and what espeak-ng's
audio measures (its output depends on what the process spoke before, so the workers' clips differ between builds)."""

import hashlib
import json
import sqlite3

import pytest

VARYING = {  # (table, column): differs between any two builds of the same code
    ("jobs", "pid"),
    ("jobs", "host"),
    ("jobs", "argv_json"),
    ("jobs", "cwd"),
    ("jobs", "project"),
    ("jobs", "message"),  # the last rate, e.g. '140.9/s'
    ("responses", "latency_ms"),
    ("ratings", "seconds"),
    ("clips", "sha256"),
    ("clips", "duration_s"),
    ("clips", "speech_level_db"),
    ("imports", "file"),  # the demo's tables are read from the checkout or installation the build runs from
}
VARYING_ROWS = {  # (table, key column, key): rows whose value is a time or counts heartbeats
    ("change_counters", "name", "jobs"),
    ("project_meta", "key", "created_at"),
    ("project_meta", "key", "qc_screening"),
}
# What later changes meant to change, left out of the comparison with cb542b5's build: migration 14 counts an
# import's items once per statement (a screen's reload signal, no content: 2 instead of 84), and adds the table
# of imports still being copied, which a finished build leaves empty (checked below).
CHANGED_SINCE_THE_PIN = {("change_counters", "name", "items")}
TABLES_SINCE_THE_PIN = {"pending_imports"}
# Migration 15 tags provider batch parts (a killed submitter's batch is found again); the demo submits none, so
# these columns of its empty batch_jobs table are all there is of it. Migration 16 stores each transcript's edit counts
# beside it (derived from the transcript and its clip, both still compared whole here). Migration 17 marks a batch
# file's request rows (the demo writes none)
COLUMNS_SINCE_THE_PIN = {("batch_jobs", "part_tag"), ("batch_jobs", "submit_job"), ("batch_requests", "file_batch")} | {
    ("transcripts", column)
    for column in (
        "counts_version", "word_errors", "words", "character_errors", "characters",
    )
}  # fmt: skip
# sha256 of stable_dump() of the demo built by cb542b5 (`spokenbench demo DIR` with that tree on PYTHONPATH)
BEFORE_OVERLAP = "46ed452d3ec892e29049ded6899227767b31af04f400614d2e05d5391fbef54d"


def stable_dump(db_path) -> str:
    """Every table's rows in rowid order as JSON, without the varying columns and rows."""
    conn = sqlite3.connect(db_path)
    try:
        dump = {}
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        for table in tables:
            if table in TABLES_SINCE_THE_PIN:
                assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 0, table
                continue
            columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
            kept = [
                c
                for c in columns
                if not c.endswith("_at") and (table, c) not in VARYING and (table, c) not in COLUMNS_SINCE_THE_PIN
            ]
            rows = conn.execute(f"SELECT {', '.join(kept)} FROM {table} ORDER BY rowid").fetchall()
            skipped = {(column, key) for name, column, key in VARYING_ROWS | CHANGED_SINCE_THE_PIN if name == table}
            rows = [row for row in rows if not any(row[kept.index(column)] == key for column, key in skipped)]
            dump[table] = {"columns": kept, "rows": rows}
        return json.dumps(dump, sort_keys=True)
    finally:
        conn.close()


@pytest.mark.slow
def test_the_demo_stores_what_the_serial_build_stored(built_demo):
    dump = stable_dump(built_demo / "project.sqlite")
    assert json.loads(dump)["runs"]["rows"], "the dump must hold the runs"
    assert hashlib.sha256(dump.encode()).hexdigest() == BEFORE_OVERLAP


@pytest.mark.slow
def test_the_listeners_ran_while_the_clips_were_synthesized(built_demo):
    conn = sqlite3.connect(built_demo / "project.sqlite")
    try:
        (synthesis_ended,) = conn.execute("SELECT finished_at FROM jobs WHERE kind = 'synthesize'").fetchone()
        runs = conn.execute("SELECT id, name, created_at FROM runs ORDER BY id").fetchall()
    finally:
        conn.close()
    started_during = [name for _id, name, created in runs if created < synthesis_ended]
    assert started_during and started_during[0] == "demo: simulated listener 'steady'"
    neutralized = [created for _id, name, created in runs if "neutralized voices" in name]
    assert len(neutralized) == 2 and min(neutralized) > synthesis_ended  # they need the clips


@pytest.mark.slow
def test_the_rewrite_reviews_were_added_while_the_clips_were_synthesized(built_demo):
    """The demo QC's clip-free part (the "LLM" rewrites flagged and reviewed) runs alongside the synthesis; its
    rating queue, which needs the clips, after it."""
    conn = sqlite3.connect(built_demo / "project.sqlite")
    try:
        (synthesis_ended,) = conn.execute("SELECT finished_at FROM jobs WHERE kind = 'synthesize'").fetchone()
        reviews = [created for (created,) in conn.execute("SELECT created_at FROM rewrite_reviews")]
        rated = [created for (created,) in conn.execute("SELECT created_at FROM ratings")]
    finally:
        conn.close()
    assert reviews and max(reviews) < synthesis_ended
    assert rated and min(rated) > synthesis_ended


@pytest.mark.slow
def test_a_failure_alongside_the_synthesis_fails_the_build_and_leaves_nothing(tmp_path, monkeypatch):
    """An error in the thread's work (here the rewrite reviews) is the build's error, raised once the clips are
    done; no thread, worker process or half-built folder is left."""
    import multiprocessing
    import threading

    import spokenbench.core.qc.demo as qc_demo
    from spokenbench.core.demo.project import build_demo

    def broken(project, progress=None):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(qc_demo, "add_demo_reviews", broken)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        build_demo(tmp_path / "demo")
    assert not any(thread.name == "spokenbench-demo-listeners" for thread in threading.enumerate())
    assert multiprocessing.active_children() == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_build_reaches_its_first_clip_without_the_listeners_or_qc_modules():
    """What the clips do not need is imported on the thread alongside them, not on the way to the first clip."""
    import subprocess
    import sys

    script = (
        "import sys; import spokenbench.core.demo.project; "
        "print(sorted(m for m in ('spokenbench.core.evaluation.demo', 'spokenbench.core.qc.demo', "
        "'spokenbench.core.metrics.gender_backbones') if m in sys.modules))"
    )
    imported = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "[]"


@pytest.mark.slow
def test_a_cancel_mid_build_stops_the_runs_alongside_and_leaves_nothing(tmp_path):
    """Cancelled once the runs alongside the synthesis have started: the build raises Cancelled at once, and no
    thread, worker process or half-built folder is left."""
    import multiprocessing
    import threading
    import time

    from spokenbench.core.demo.project import build_demo
    from spokenbench.core.foundation.errors import Cancelled
    from spokenbench.core.foundation.progress import Progress

    jobs = []

    def recorded(job_id, _claim):
        jobs.append(job_id)
        if len(jobs) == 3:  # the synthesis job, then the first two runs alongside it
            progress.cancel()

    progress = Progress(None, threading.Event(), recorded)
    started = time.monotonic()
    with pytest.raises(Cancelled):
        build_demo(tmp_path / "demo", progress)
    assert time.monotonic() - started < 60 and jobs[:3] == [1, 2, 3]
    assert not any(thread.name == "spokenbench-demo-listeners" for thread in threading.enumerate())
    assert multiprocessing.active_children() == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_the_command_line_build_with_forked_workers_stores_what_the_serial_build_stored(tmp_path):
    """`spokenbench demo` forks its speech workers (it runs no other thread when it starts them; the in-process
    build above may spawn them): the same pin holds, and every clip's file is whole."""
    import subprocess
    import sys

    target = tmp_path / "demo"
    script = "import sys; from spokenbench.core.cli.main import main; sys.exit(main())"
    built = subprocess.run([sys.executable, "-c", script, "demo", str(target)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    dump = stable_dump(target / "project.sqlite")
    assert hashlib.sha256(dump.encode()).hexdigest() == BEFORE_OVERLAP
    checked = subprocess.run([sys.executable, "-c", script, "check", str(target)], capture_output=True, text=True)
    assert checked.returncode == 0 and "0 missing, 0 damaged" in checked.stdout, checked.stdout + checked.stderr
