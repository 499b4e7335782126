"""SIGKILL a real `spokenbench rewrite` process mid-run, resume it, and check that no request the endpoint had
already answered is sent again."""

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from qc_support import CHAT_ROUTE, SECRET, StubServer, chat_reply, rewrite_json
from stub_server import Reply
from support import physics_items, write_jsonl

from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.rewriting.llm import RewriteSettings, plan_rewrites, run_rewrites

ITEMS = physics_items(6, "k")
GOOD = rewrite_json("What is this speed in kilometers per hour?", ["one", "two", "three", "four"])
ANSWERED_BEFORE_KILL = 3


def messages_of(request) -> str:
    return json.dumps(request.json()["messages"], sort_keys=True)


@pytest.mark.slow
def test_killed_rewrite_resumes_without_repeating_answered_requests(project, tmp_path):
    import_files(project, [write_jsonl(tmp_path / "k.jsonl", ITEMS)], "mcq", ImportOptions(source="kill"))
    script = Path(sys.executable).with_name("spokenbench")
    env = dict(os.environ, NVIDIA_API_KEY=SECRET)
    with StubServer() as server:
        # three quick answers, then one that hangs: the process is killed while it waits for it
        server.script("POST", CHAT_ROUTE, *[chat_reply(GOOD)] * ANSWERED_BEFORE_KILL, Reply(200, b"", delay_s=30))
        process = subprocess.Popen(
            [str(script), "rewrite", str(project.path), "--base-url", f"{server.url}/v1", "--concurrency", "1"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            with sqlite3.connect(project.db_path) as watcher:
                while watcher.execute("SELECT count(*) FROM rewrite_requests").fetchone()[0] < ANSWERED_BEFORE_KILL:
                    assert process.poll() is None, process.stderr.read().decode()
                    assert time.monotonic() < deadline, "the rewrite run made no progress"
                    time.sleep(0.02)
            while len(server.requests_to(CHAT_ROUTE)) <= ANSWERED_BEFORE_KILL:  # the hanging request is out
                time.sleep(0.02)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        first_run = server.requests_to(CHAT_ROUTE)
    answered = {messages_of(r) for r in first_run[:ANSWERED_BEFORE_KILL]}
    assert len(answered) == ANSWERED_BEFORE_KILL and len(first_run) == ANSWERED_BEFORE_KILL + 1

    with StubServer() as server:
        server.script("POST", CHAT_ROUTE, chat_reply(GOOD))
        settings = RewriteSettings(base_url=f"{server.url}/v1", key=SECRET, concurrency=1)
        report = asyncio.run(run_rewrites(project, plan_rewrites(project.conn, settings), settings))
        second_run = server.requests_to(CHAT_ROUTE)
    repeated = answered & {messages_of(r) for r in second_run}
    assert repeated == set(), "a request answered before the kill was sent again"
    assert len(second_run) == len(ITEMS) - ANSWERED_BEFORE_KILL  # the unanswered one is asked again, once
    assert report.requests == len(second_run)
    assert project.conn.execute("SELECT count(DISTINCT item_id) FROM rewrites").fetchone()[0] == len(ITEMS)
    assert project.conn.execute("SELECT count(*) FROM rewrite_outcomes WHERE status = 'done'").fetchone()[0] == len(
        ITEMS
    )
