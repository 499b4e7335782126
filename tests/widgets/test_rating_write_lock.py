"""A rating pressed while another process keeps the project's write lock (a `spokenbench` command suspended with
Ctrl+Z in a terminal while it wrote): the rater is told it was not saved, why, and which process to continue —
not "database is locked" — and the same key saves it once the lock is free."""

import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from spokenbench.core.foundation.processes import process_stopped
from spokenbench.core.store import database, opened

ANNOTATOR = "alice"
HOLDER = (
    "import os, signal, sqlite3, sys; conn = sqlite3.connect(sys.argv[1], isolation_level=None); "
    "conn.execute('BEGIN IMMEDIATE'); conn.execute('UPDATE project_meta SET value = value'); "
    "print('holding', flush=True); os.kill(os.getpid(), signal.SIGSTOP)"
)


def ratings(path) -> int:
    with opened(path) as project:
        return project.conn.execute("SELECT count(*) FROM ratings WHERE annotator = ?", (ANNOTATOR,)).fetchone()[0]


@pytest.mark.slow
def test_a_rating_blocked_by_a_stopped_process_says_which_and_saves_once_it_is_gone(
    qtbot, demo_copy, rating_page_on_demo_queue, monkeypatch
):
    monkeypatch.setattr(database, "BUSY_TIMEOUT_MS", 1_500)  # the writer's wait, shortened
    page = rating_page_on_demo_queue(SimpleNamespace(annotator=ANNOTATOR))
    clip = page.rating.current.clip_id
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(demo_copy / "project.sqlite")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        deadline = time.monotonic() + 10
        while not process_stopped(holder.pid):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        qtbot.keyClick(page.view, "1")
        qtbot.waitUntil(lambda: page.view.status_label.text().startswith("Not saved:"), timeout=10_000)
        text = page.view.status_label.text()
        assert "another process kept the project's write lock" in text and f"kill -CONT {holder.pid}" in text, text
        assert page.view.accessibleName().startswith(f"{text}. Clip 1 of"), "a screen reader says it, and the clip"
        assert page.rating.current.clip_id == clip and ratings(demo_copy) == 0
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    qtbot.keyClick(page.view, "1")  # the same key, once the lock is free
    qtbot.waitUntil(lambda: page.view.status_label.text() == "Saved" and page.idle, timeout=10_000)
    assert ratings(demo_copy) == 1
