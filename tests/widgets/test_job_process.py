"""JobOp with a JobCall: the work runs in a job process of its own (core/jobs/host.py), and the app sees it
as it sees a thread's job — progress, result, the user's errors as warnings, bugs with their traceback,
cancel from the window or from another process — and a killed job process as a clear failure."""

import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import job_functions
import pytest
from PySide6.QtWidgets import QMessageBox
from stub_server import Reply, StubServer
from support import gmmlu_rows, write_csv

from spokenbench.app.jobs import operation_row
from spokenbench.app.operations import JobOp
from spokenbench.app.rating_page import transcribe_with
from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.foundation.progress import Progress
from spokenbench.core.importers import import_files
from spokenbench.core.jobs import host as job_host
from spokenbench.core.jobs import registry as jobs
from spokenbench.core.jobs.host import job_call, task_call
from spokenbench.core.store import Project

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def job_functions_importable_in_the_child(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))


def run_job(session, call, qtbot, *, timeout=30_000, **kwargs) -> JobOp:
    operation = JobOp(session, call, kind=kwargs.pop("kind", "test"), changes={"items"}, label="Test job", **kwargs)
    with qtbot.waitSignal(operation.finished, timeout=timeout):
        operation.run()
    return operation


def job_row(path: Path, job_id: int) -> jobs.JobInfo:
    with Project.open(path) as project:
        return jobs.get_job(project.conn, job_id)


@pytest.mark.slow
def test_a_job_call_runs_in_a_process_of_its_own_with_progress_and_its_result(open_session, qtbot, project):
    session = open_session(project.path)
    reports, announced = [], []
    session.changes.changed.connect(announced.append)
    operation = JobOp(
        session, job_call(job_functions.count_items, "en"), kind="test", changes={"items"}, label="Counting"
    ).on_progress(lambda done, total, message: reports.append((done, total, message)))
    with qtbot.waitSignal(operation.finished, timeout=30_000):
        operation.run()
    assert operation.status == "succeeded", operation.error
    result = operation.result
    assert result["label"] == "en" and result["items"] == 0 and result["pid"] != os.getpid()
    assert reports and reports[-1] == (3, 3, "step 3")  # the finished count always arrives; the print did not
    row = job_row(project.path, operation.job_id)
    assert row.pid == result["pid"] and row.status == "finished" and row.label == "Counting"
    assert operation.recorded_job_ids == {operation.job_id}  # the jobs panel lists it once, as the operation
    assert operation.job_id in session.recorded_job_ids  # and, once ended, as this window's (in this project)
    qtbot.waitUntil(lambda: any("items" in tables for tables in announced), timeout=2_000)


@pytest.mark.slow
def test_the_apps_import_runs_in_a_job_process_and_its_items_are_in(open_session, qtbot, project, tmp_path):
    session = open_session(project.path)
    table = write_csv(tmp_path / "en.csv", gmmlu_rows(50))
    operation = run_job(session, job_call(import_files, [table], "gmmlu-lite"), qtbot, kind="import")
    assert operation.status == "succeeded", operation.error
    assert job_row(project.path, operation.job_id).pid != os.getpid()
    assert project.conn.execute("SELECT count(*) FROM items").fetchone()[0] == 50


@pytest.mark.slow
def test_a_users_error_in_the_job_process_is_a_warning_with_its_message(open_session, qtbot, project, dialogs):
    session = open_session(project.path)
    operation = run_job(session, job_call(job_functions.refuse), qtbot)
    assert operation.status == "failed"
    assert [d.text for d in dialogs] == ["the file results.jsonl is not a results file"]
    assert dialogs[0].icon == QMessageBox.Icon.Warning
    assert job_row(project.path, operation.job_id).status == "failed"


@pytest.mark.slow
def test_an_input_error_keeps_every_problem_across_the_process(open_session, qtbot, project):
    session = open_session(project.path)
    seen = []
    operation = JobOp(session, job_call(job_functions.refuse_a_file), kind="test", changes=(), label="Checking")
    operation.failure(seen.append)
    with qtbot.waitSignal(operation.finished, timeout=30_000):
        operation.run()
    (error,) = seen
    assert isinstance(error, InputError)
    assert [str(problem) for problem in error.problems] == [
        "results.jsonl, row 3: not JSON",
        "results.jsonl, row 7: no id",
    ]


@pytest.mark.slow
def test_a_bug_in_the_job_process_is_an_unexpected_error_with_the_childs_traceback(
    open_session, qtbot, project, dialogs
):
    session = open_session(project.path)
    run_job(session, job_call(job_functions.fail_with_a_bug), qtbot)
    (dialog,) = dialogs
    assert dialog.title == "Unexpected error" and "KeyError" in dialog.text and "a missing key" in dialog.text
    assert "fail_with_a_bug" in dialog.details and "In the job process" in dialog.details


@pytest.mark.slow
def test_a_write_lock_another_process_keeps_is_said_as_the_cli_says_it_not_as_a_bug(
    open_session, qtbot, project, dialogs
):
    session = open_session(project.path)
    operation = run_job(session, job_call(job_functions.fail_on_the_write_lock), qtbot)
    (dialog,) = dialogs
    assert operation.status == "failed" and dialog.title != "Unexpected error"
    assert dialog.text.startswith(
        f"{project.path / 'project.sqlite'}: another process kept the project's write lock for as long as "
        "SpokenBench waited for it"
    )


@pytest.mark.slow
def test_a_result_that_cannot_be_sent_back_is_a_bug_not_a_hang(open_session, qtbot, project, dialogs):
    session = open_session(project.path)
    operation = run_job(session, job_call(job_functions.return_the_unpicklable), qtbot)
    assert operation.status == "failed" and dialogs[0].title == "Unexpected error"


@pytest.mark.slow
def test_a_call_that_cannot_be_sent_fails_at_once_as_a_bug(open_session, qtbot, project, dialogs):
    session = open_session(project.path)
    operation = run_job(session, job_call(lambda project, progress: None), qtbot, timeout=2_000)
    assert operation.status == "failed" and operation.job_id is None
    assert dialogs[0].title == "Unexpected error"


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def start_waiting_job(session, qtbot, tmp_path) -> tuple[JobOp, int]:
    """A job process that waits for a cancel; returns the operation and the child's pid, once it is running."""
    marker = tmp_path / "running.pid"
    operation = JobOp(
        session, job_call(job_functions.wait_for_cancel, str(marker)), kind="test", changes=(), label="Waiting"
    ).run()
    qtbot.waitUntil(lambda: marker.exists() and marker.read_text().isdigit(), timeout=30_000)
    qtbot.waitUntil(lambda: operation.job_id is not None, timeout=2_000)
    return operation, int(marker.read_text())


@pytest.mark.slow
def test_cancel_from_the_window_stops_the_job_process_at_its_next_safe_point(open_session, qtbot, project, tmp_path):
    session = open_session(project.path)
    operation, pid = start_waiting_job(session, qtbot, tmp_path)
    started = time.monotonic()
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        operation.cancel()
    assert operation.status == "cancelled" and time.monotonic() - started < 5
    assert job_row(project.path, operation.job_id).status == "cancelled"
    qtbot.waitUntil(lambda: not process_exists(pid), timeout=10_000)  # it has exited, and been reaped


@pytest.mark.slow
def test_cancel_requested_by_another_process_reaches_the_job_process(open_session, qtbot, project, tmp_path):
    session = open_session(project.path)
    operation, _ = start_waiting_job(session, qtbot, tmp_path)
    with Project.open(project.path) as other:
        assert jobs.request_cancel(other.conn, operation.job_id)
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        pass
    assert operation.status == "cancelled"


@pytest.mark.slow
def test_a_killed_job_process_is_a_clear_failure_and_its_job_is_not_left_running(
    open_session, qtbot, project, tmp_path, dialogs
):
    session = open_session(project.path)
    operation, pid = start_waiting_job(session, qtbot, tmp_path)
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        os.kill(pid, signal.SIGKILL)
    assert operation.status == "failed"
    (dialog,) = dialogs
    assert dialog.icon == QMessageBox.Icon.Warning
    assert "the job process stopped unexpectedly (exit code -9)" in dialog.text
    assert not job_row(project.path, operation.job_id).is_live  # its pid is gone: seen as interrupted


def start_job_host(project, tmp_path, call=None) -> tuple[subprocess.Popen, Path]:
    """A job process started by hand, as the app starts one, running `call` (made with the marker's path; by
    default wait_for_cancel); returns it once running."""
    marker = tmp_path / "running.pid"
    call = call or (lambda marker: job_call(job_functions.wait_for_cancel, marker))
    request = job_host.encode_request(project.path, call(str(marker)), kind="test", label="Orphan", claim=None)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    child = subprocess.Popen(job_host.job_host_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    child.stdin.write(request)
    child.stdin.flush()
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return child, marker


def frames_until_it_ends(child: subprocess.Popen) -> list:
    """Every frame a job process started by hand sends, up to the end of its output."""
    frames = []
    while True:
        try:
            frames.append(pickle.load(child.stdout))
        except EOFError:
            return frames


@pytest.mark.slow
def test_a_job_process_whose_stdin_ends_cancels_itself(project, tmp_path):
    """The app closed or killed: the end of the child's stdin is a cancel, so no orphan keeps writing."""
    child, _ = start_job_host(project, tmp_path)
    child.stdin.close()
    frames = frames_until_it_ends(child)
    assert child.wait(10) == 0
    assert frames[0][0] == "job" and frames[-1] == ("cancelled",)
    assert job_row(project.path, frames[0][1]).status == "cancelled"


@pytest.mark.slow
def test_a_ctrl_c_in_the_apps_terminal_leaves_a_job_process_and_its_request_alone(project, tmp_path):
    """A job process ignores SIGINT (sent to it here directly; it also runs in a process group of its own, out of
    reach of a Ctrl-C in the app's terminal): a job with a request out goes on, and its app decides when it stops.
    Before, asyncio's handler abandoned the request."""
    child, marker = start_job_host(
        project, tmp_path, lambda marker: job_call(job_functions.one_request_out, marker, 1.5)
    )
    child.send_signal(signal.SIGINT)
    frames = frames_until_it_ends(child)
    assert child.wait(10) == 0
    assert frames[-1] == ("ok", "answered") and Path(f"{marker}.answer").read_text() == "answered"


@pytest.mark.slow
def test_a_job_process_that_cannot_reach_its_parent_cancels_itself(project, tmp_path):
    """Its frames have nowhere to go (the reading end is closed): the next progress report cancels the job, which
    ends at its next safe point with its row saying so, instead of failing in a callback or running on."""
    child, _ = start_job_host(project, tmp_path)
    job_id = pickle.load(child.stdout)[1]
    child.stdout.close()
    assert child.wait(10) == 1
    assert job_row(project.path, job_id).status == "cancelled"
    child.stdin.close()


def test_the_job_host_command_is_this_interpreter_or_the_frozen_app(monkeypatch):
    assert job_host.job_host_command() == [sys.executable, "-m", "spokenbench.core.jobs.host"]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert job_host.job_host_command() == [sys.executable, "--job-host"]


@pytest.mark.slow
def test_the_rating_pages_transcription_runs_in_a_job_process_against_a_stub_asr(open_session, qtbot, demo_copy):
    with StubServer() as server:
        server.script("POST", r"/v1/audio/transcriptions$", Reply(200, {"text": "what is two plus two"}))
        session = open_session(demo_copy)
        spec = f"compatible:whisper-x@{server.url}/v1"
        operation = run_job(session, transcribe_with([spec]), qtbot, kind="transcribe", timeout=120_000)
        asked = len(server.requests_to("/audio/transcriptions"))
    assert operation.status == "succeeded", operation.error
    made = operation.result["transcripts"]
    assert operation.result["failed_clips"] == 0 and made >= asked > 0  # clips with the same audio: one request
    with Project.open(demo_copy) as project:
        stored = project.conn.execute("SELECT count(*) FROM transcripts WHERE asr = 'compatible:whisper-x'")
        assert stored.fetchone()[0] == made
        assert jobs.get_job(project.conn, operation.job_id).pid != os.getpid()


@pytest.mark.slow
def test_a_task_outside_any_project_runs_in_a_job_process_and_reports(tmp_path):
    reports = []
    result = job_host.run_task_in_job_process(
        task_call(job_functions.describe_folder, str(tmp_path)),
        Progress(lambda done, total, message: reports.append((done, total, message))),
        "Looking",
    )
    assert result == {"folder": str(tmp_path), "pid": result["pid"]} and result["pid"] != os.getpid()
    assert reports == [(1, 1, "looked")]
    with pytest.raises(ValueError, match="needs a project"):
        job_host.encode_request(None, job_call(job_functions.count_items, "en"))
    with pytest.raises(ValueError, match="outside any"):
        job_host.encode_request(tmp_path, task_call(job_functions.describe_folder, "x"))


@pytest.mark.slow
def test_the_windows_demo_build_runs_in_a_job_process_and_opens_the_demo(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from spokenbench.app.main_window import MainWindow

    window = MainWindow(
        audio_message="no audio in tests", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    )
    qtbot.addWidget(window)
    try:
        building = window.build_demo(tmp_path / "demo")
        qtbot.waitUntil(lambda: not building.is_running, timeout=240_000)
        assert building.status == "succeeded", building.error
        assert window.project_path == tmp_path / "demo"
        with Project.open(tmp_path / "demo") as project:
            assert project.conn.execute("SELECT count(*) FROM items").fetchone()[0] > 0
    finally:
        window.shutdown()


def test_a_finished_job_of_a_job_process_is_listed_as_this_windows():
    """Its row carries the job process's pid; the jobs panel still says it came from this window."""
    from spokenbench.app.jobs import job_row
    from spokenbench.core.foundation.processes import THIS_HOST as HOST

    job = jobs.JobInfo(
        id=7, kind="evaluate", label="Run 7", claim="run:7", project="p", pid=999_999, host=HOST, argv=None,
        cwd=None, started_at="", heartbeat_at="", finished_at="", done=3, total=3, message=None,
        status="finished", stop_reason=None, cancel_requested=False, heartbeat_age_s=0.0,
    )  # fmt: skip
    assert job_row(job).origin == "evaluate · pid 999999"
    assert job_row(job, from_this_window=True).origin == "evaluate · this window"


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="closes the child's fd 2 before exec")
def test_a_job_process_without_a_stderr_still_answers(tmp_path):
    """pythonw and a windowed frozen app start it with no stderr: its prints go nowhere, its frames still arrive."""
    request = job_host.encode_request(None, task_call(job_functions.describe_folder, str(tmp_path)), label="t")
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    child = subprocess.Popen(
        job_host.job_host_command(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        preexec_fn=lambda: os.close(2),  # noqa: PLW1509 - a bare close: safe between fork and exec
    )
    child.stdin.write(request)
    child.stdin.flush()
    frames = [pickle.load(child.stdout)]
    while frames[-1][0] in ("job", "progress"):
        frames.append(pickle.load(child.stdout))
    child.stdin.close()
    assert child.wait(10) == 0 and frames[-1][0] == "ok" and frames[-1][1]["folder"] == str(tmp_path)


@pytest.mark.slow
def test_a_report_held_back_by_the_frame_interval_still_arrives_during_the_next_step():
    reports = []
    progress = Progress(lambda done, total, message: reports.append((time.monotonic(), message)))
    assert job_host.run_task_in_job_process(task_call(job_functions.two_steps), progress, "Steps") == "done"
    ended = time.monotonic()
    assert [message for _, message in reports] == ["phase A", "phase B: long"]
    assert ended - reports[-1][0] > 0.3  # shown while the long step ran, not only at its end


@pytest.mark.slow
def test_the_outcome_is_delivered_when_it_arrives_not_when_the_process_exits():
    started = time.monotonic()
    result = job_host.run_task_in_job_process(task_call(job_functions.return_leaving_a_thread_behind), Progress(), "t")
    assert result == "early" and time.monotonic() - started < 10  # its exit waits 30 s for a leftover thread


@pytest.mark.slow
def test_a_job_process_that_dies_is_reported_with_its_exit_code_and_last_output():
    with pytest.raises(SpokenBenchError) as raised:
        job_host.run_task_in_job_process(task_call(job_functions.die_saying, "libfoo.so: cannot open"), Progress(), "t")
    assert "t: the job process stopped unexpectedly (exit code 3)" in str(raised.value)
    assert str(raised.value).endswith("Its last output:\nlibfoo.so: cannot open")


def start_job_with_a_request_out(session, qtbot, tmp_path, answer_after_s: float) -> JobOp:
    marker = tmp_path / "sent.pid"
    operation = JobOp(
        session,
        job_call(job_functions.one_request_out, str(marker), answer_after_s),
        kind="test",
        changes=(),
        label="Sending",
    ).run()
    qtbot.waitUntil(lambda: marker.exists() and marker.read_text().isdigit(), timeout=30_000)
    qtbot.waitUntil(lambda: operation.job_id is not None, timeout=2_000)
    return operation


@pytest.mark.slow
def test_a_cancelled_job_process_waits_for_its_request_already_sent_then_stop_now_abandons_it(
    open_session, qtbot, project, tmp_path
):
    session = open_session(project.path)
    operation = start_job_with_a_request_out(session, qtbot, tmp_path, answer_after_s=60.0)
    operation.cancel()
    waiting = "stopping: waiting for the answers to 1 request(s) already sent (paid for)"
    qtbot.waitUntil(lambda: operation.message == waiting, timeout=5_000)
    qtbot.wait(500)
    assert operation.is_running  # the cancel waits for the answer it has paid for
    row = operation_row(operation)
    assert (row.action, row.action_enabled, row.detail) == ("stop_now", True, waiting)
    started = time.monotonic()
    with qtbot.waitSignal(operation.finished, timeout=10_000):
        operation.stop_now()
    assert operation.status == "cancelled" and time.monotonic() - started < 5
    assert job_row(project.path, operation.job_id).status == "cancelled"
    assert not (tmp_path / "sent.pid.answer").exists()


@pytest.mark.slow
def test_a_cancelled_job_process_keeps_the_answer_it_waited_for(open_session, qtbot, project, tmp_path):
    session = open_session(project.path)
    operation = start_job_with_a_request_out(session, qtbot, tmp_path, answer_after_s=2.0)
    with qtbot.waitSignal(operation.finished, timeout=15_000):
        operation.cancel()
    assert operation.status == "cancelled"
    assert (tmp_path / "sent.pid.answer").read_text() == "answered"  # arrived after the cancel, and was kept
    assert job_row(project.path, operation.job_id).status == "cancelled"


@pytest.mark.slow
def test_quitting_leaves_a_job_process_to_keep_the_answer_it_waits_for_without_waiting(qtbot, project, tmp_path):
    """Ctrl+Q with a paid request out: the window closed after a frozen 5 s, waiting for a job process that waits
    for its answer. Now it closes at once; the job process, cancelled, stores the answer and ends on its own."""
    from PySide6.QtCore import QSettings

    from spokenbench.app.main_window import MainWindow

    window = MainWindow(
        audio_message="no audio in tests", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    )
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
        pass
    operation = start_job_with_a_request_out(window.session, qtbot, tmp_path, answer_after_s=2.0)
    started = time.monotonic()
    window.close()
    assert time.monotonic() - started < 1.0
    qtbot.waitUntil(lambda: (tmp_path / "sent.pid.answer").exists(), timeout=15_000)
    qtbot.waitUntil(lambda: job_row(project.path, operation.job_id).status == "cancelled", timeout=15_000)
