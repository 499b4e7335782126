"""The Evaluate page on a small project (40 English items, no audio: the simulated listener's grid): a retired
preset is offered disabled with its date; the plan is shown before Start; a launched simulated run shows
progress, is cancelled through the jobs table, is resumed as the same run and completes with no request
answered twice (against a paced loopback stub: runs go to a job process); runs queue one after another; a run started from core outside the page appears in its list;
Test connection against a loopback stub succeeds and a 401 fails with a clear message."""

import os
import threading
import time

import pytest
from stub_server import Reply, StubServer, chat_answer

from spokenbench.app.evaluate_page import EvaluatePage
from spokenbench.core.domain.items import Item, Option
from spokenbench.core.evaluation import launcher
from spokenbench.core.evaluation.launcher import CUSTOM, LaunchForm
from spokenbench.core.evaluation.prompts import PROMPTS
from spokenbench.core.evaluation.runner import evaluate
from spokenbench.core.jobs.registry import list_jobs
from spokenbench.core.store import Project, opened
from spokenbench.core.store.items import insert_items

ITEMS = 40  # × 3 accents × 2 voices = 240 requests for a simulated audio run
PAUSE_S = 0.05  # the stub endpoint's answer time here, so a run lasts long enough to be cancelled


@pytest.fixture(scope="module")
def small_project(tmp_path_factory):
    path = tmp_path_factory.mktemp("evaluate") / "proj"
    items = [
        Item(
            source="t",
            source_id=f"q{n}",
            language="en",
            question=f"What is {n} plus {n}?",
            options=tuple(Option(letter, str(2 * n + k)) for k, letter in enumerate("ABCD")),
            answer="A",
        )
        for n in range(ITEMS)
    ]
    with Project.create(path) as project:
        with project.transaction() as conn:
            insert_items(conn, items)
    return path


@pytest.fixture
def project_copy(small_project, tmp_path):
    import shutil

    return shutil.copytree(small_project, tmp_path / "proj")


def use_stub_endpoint(view, server) -> None:
    """The form set to an OpenAI-compatible endpoint on the loopback stub, text mode, one request at a time."""
    view.select_model(CUSTOM)
    view.custom_url.setText(server.url + "/v1")
    view.custom_model.setText("m")
    view.custom_key.setText("")
    view.mode_box.setCurrentIndex(view.mode_box.findData("text"))
    view.concurrency_box.setValue(1)


@pytest.fixture
def page(qtbot, project_copy, open_session):
    page = EvaluatePage()
    qtbot.addWidget(page)
    page.resize(1300, 800)
    page.show()
    page.set_session(open_session(project_copy))
    qtbot.waitUntil(lambda: page.last_read is not None and not page.last_read.is_running, timeout=5_000)
    return page


def responses(path, run_id=None):
    with opened(path) as project:
        if run_id is None:
            return project.conn.execute("SELECT count(*) FROM responses").fetchone()[0]
        return launcher.response_count(project.conn, run_id)


def prepare(page, qtbot, model="simulated:steady", **grid):
    view = page.view
    view.select_model(model)
    for field, value in grid.items():
        (view.limit_edit if field == "limit" else view.grid_edits[field]).setText(value)
    view.formEdited.emit()
    operation = page.prepare()
    qtbot.waitUntil(lambda: page.prepared is not None or not operation.is_running, timeout=5_000)
    assert page.prepared is not None, view.plan_text.toPlainText()
    return page.prepared


@pytest.mark.slow
def test_a_retired_preset_is_disabled_with_its_date_and_simulated_listeners_say_so(page):
    view = page.view
    retired = view.model_item("openai:gpt-4o-audio-preview")
    assert retired is not None and not retired.isEnabled()
    assert "retired on 2026-05-07" in retired.text() and "gpt-audio-mini" in retired.toolTip()
    current = view.model_item("gemini:gemini-2.5-flash")
    assert current.isEnabled()
    for spec in ("simulated:steady", "simulated:order-sensitive", "simulated:accent-sensitive"):
        assert "simulated" in view.model_item(spec).text()
    offered = [view.prompt_box.itemData(i) for i in range(view.prompt_box.count())]
    assert offered == list(PROMPTS) and offered[:4] == ["standard", "cot", "neutral", "open"]
    assert view.mode_box.count() == 4
    assert "american" in view.grid_edits["accents"].placeholderText()  # the project's levels, read in a QueryOp


@pytest.mark.slow
def test_the_plan_is_shown_before_start_and_an_edit_asks_for_it_again(page, qtbot):
    view = page.view
    assert not view.start_button.isEnabled()
    prepared = prepare(page, qtbot, accents="british")
    plan = view.plan_text.toPlainText()
    assert prepared.request_count == ITEMS * 2
    assert f"plan: {ITEMS * 2} request(s) over {ITEMS} item(s)" in plan and "to send 80" in plan
    assert "$0 (simulated)" in plan and "run: a new run" in plan
    assert view.start_button.isEnabled()
    view.budget_edit.setText("x")
    view.budget_edit.textEdited.emit("x")
    assert not view.start_button.isEnabled() and "prepare again" in view.plan_text.toPlainText()
    page.prepare()
    assert "budget" in view.plan_text.toPlainText() and not view.start_button.isEnabled()


@pytest.mark.slow
def test_a_run_shows_progress_is_cancelled_resumed_and_completes_once(page, qtbot, project_copy):
    view = page.view
    with StubServer() as server:
        # the stub answers after PAUSE_S, so a run lasts long enough to be watched and cancelled (the run goes to
        # a job process: only a real endpoint can pace it from here)
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A"), delay_s=PAUSE_S))
        use_stub_endpoint(view, server)
        prepared = prepare(page, qtbot, model=CUSTOM)
        total = prepared.request_count
        assert total == ITEMS
        view.start_button.click()
        run = page.current
        assert run is not None and view.start_button.text() == "Add to queue"
        qtbot.waitUntil(lambda: run.job_id is not None and run.run_id is not None, timeout=10_000)
        run_id = run.run_id
        qtbot.waitUntil(
            lambda: (line := view.line(run_id)) is not None and line.live and line.done >= 5, timeout=10_000
        )
        line = view.line(run_id)
        assert line.status == "running" and line.progress.startswith(f"{line.done}/{total}") and "/s" in line.progress
        assert line.model == "vllm:m"
        with opened(project_copy) as project:  # one job row for the run, holding its claim, in a job process
            rows = [job for job in list_jobs(project.conn) if job.kind == "evaluate"]
        assert [(job.id, job.claim) for job in rows] == [(run.job_id, f"run:{run_id}")]
        assert rows[0].pid != os.getpid()

        view.select_run(run_id)
        assert view.cancel_button.isEnabled()
        view.cancel_button.click()  # request_cancel through the writer; the job's heartbeat sees it
        qtbot.waitUntil(lambda: page.current is None, timeout=10_000)
        assert run.status == "cancelled"
        qtbot.waitUntil(lambda: (line := view.line(run_id)) is not None and line.status == "cancelled", timeout=5_000)
        stored = responses(project_copy, run_id)
        assert 0 < stored < total
        # once the jobs table, polled apart from the runs table, also says the run's job has ended
        qtbot.waitUntil(lambda: view.resume_button.isEnabled() and not view.cancel_button.isEnabled(), timeout=3_000)

        view.resume_button.click()
        qtbot.waitUntil(lambda: page.current is not None or page.finished_ops[-1] is not run, timeout=5_000)
        qtbot.waitUntil(lambda: page.current is None, timeout=20_000)
        resumed = page.finished_ops[-1]
        assert resumed is not run and resumed.status == "succeeded", resumed.error
        assert resumed.result.run_id == run_id and resumed.result.status == "finished"
        assert responses(project_copy, run_id) == total == responses(project_copy)
        asked = [request.body for request in server.requests_to("/chat/completions")]
        # Nothing is asked twice: the cancel waited for the answer to the request in flight then, and kept it.
        assert len(set(asked)) == total and len(asked) == total
    qtbot.waitUntil(lambda: view.line(run_id).status == "finished", timeout=5_000)
    assert view.line(run_id).done == total and not view.resume_button.isEnabled()


@pytest.mark.slow
def test_runs_queue_one_after_another(page, qtbot, project_copy):
    view = page.view
    with StubServer() as server:
        # the stub answers after PAUSE_S, so a run lasts long enough to be watched and cancelled (the run goes to
        # a job process: only a real endpoint can pace it from here)
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A"), delay_s=PAUSE_S))
        use_stub_endpoint(view, server)
        prepare(page, qtbot, model=CUSTOM, limit="10")
        view.start_button.click()
        first = page.current
        view.mode_box.setCurrentIndex(view.mode_box.findData("audio"))
        prepare(page, qtbot, model="simulated:order-sensitive", accents="british", limit="10")
        view.start_button.click()
        assert page.current is first and len(page.queue) == 1 and view.queue_list.count() == 1
        assert "1 queued" in view.queue_status.text()
        qtbot.waitUntil(lambda: page.current is not None and page.current is not first, timeout=15_000)
        assert first.status == "succeeded" and view.queue_list.count() == 0
        assert len(server.requests_to("/chat/completions")) == 10
    qtbot.waitUntil(lambda: page.current is None, timeout=15_000)
    second = page.finished_ops[-1]
    assert second.result.model == "simulated:order-sensitive" and second.result.answered == 20
    qtbot.waitUntil(lambda: [line.status for line in view.lines] == ["finished", "finished"], timeout=5_000)


@pytest.mark.slow
def test_a_run_started_outside_the_page_appears_in_its_list(page, qtbot, project_copy):
    view = page.view
    assert view.lines == []
    settings = launcher.settings_from_form(LaunchForm(model="simulated:accent-sensitive", mode="text", limit="5"))
    summary = {}

    def run_elsewhere():  # as `spokenbench evaluate` does: its own connection, on its own thread
        with opened(project_copy) as project:
            summary["run"] = evaluate(project, settings)

    worker = threading.Thread(target=run_elsewhere)
    worker.start()
    worker.join(30)
    run_id = summary["run"].run_id
    qtbot.waitUntil(lambda: view.line(run_id) is not None, timeout=5_000)
    line = view.line(run_id)
    assert line.status == "finished" and line.mode == "text" and line.done == line.total == 5
    assert "simulated" in line.model and line.spent.startswith("simulated")  # the row still says simulated


@pytest.mark.slow
def test_test_connection_against_a_stub_succeeds_and_a_401_is_clear(page, qtbot, monkeypatch):
    view = page.view
    view.select_model(CUSTOM)
    assert view.custom_group.isVisibleTo(view)
    monkeypatch.setenv("VLLM_API_KEY", "k-test")
    with StubServer() as server:
        server.script("GET", r"^/ok/v1/models$", Reply(200, {"data": [{"id": "Qwen/Qwen2-Audio-7B-Instruct"}]}))
        server.script("GET", r"^/locked/v1/models$", Reply(401, {"error": {"message": "invalid key"}}))
        view.custom_url.setText(server.url + "/ok/v1")
        view.custom_model.setText("Qwen/Qwen2-Audio-7B-Instruct")
        view.test_button.click()
        qtbot.waitUntil(lambda: not page.last_test.is_running, timeout=5_000)
        assert view.test_result.text().startswith("Connected: 1 model(s) served")
        assert "is served" in view.test_result.text() and view.test_button.isEnabled()
        assert server.requests_to("/ok/")[0].headers["authorization"] == "Bearer k-test"
        view.custom_url.setText(server.url + "/locked/v1")
        view.test_button.click()
        qtbot.waitUntil(lambda: not page.last_test.is_running, timeout=5_000)
        assert view.test_result.text() == f"Failed: {server.url}/locked/v1: the key was rejected (HTTP 401)"


@pytest.mark.slow
def test_a_custom_endpoint_run_lists_its_failures_by_kind_and_resume_retries_them(page, qtbot, project_copy, dialogs):
    view = page.view
    refused = Reply(400, {"error": {"message": "unsupported parameter", "type": "invalid_request_error"}})
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", refused, refused, Reply(200, chat_answer("A")))
        use_stub_endpoint(view, server)
        prepared = prepare(page, qtbot, model=CUSTOM, limit="4")
        assert prepared.model_name == "vllm:m" and prepared.request_count == 4
        assert "unknown (no price for this model)" in view.plan_text.toPlainText()
        view.start_button.click()
        qtbot.waitUntil(lambda: page.current is None, timeout=15_000)
        first = page.finished_ops[-1]
        assert first.status == "succeeded", first.error
        run_id = first.result.run_id
        assert first.result.errors == 2 and first.result.error_kinds == {"HTTP 400": 2}
        qtbot.waitUntil(
            lambda: (
                (line := view.line(run_id)) is not None and (line.status, line.errors) == ("finished", "2 HTTP 400")
            ),
            timeout=5_000,
        )
        view.select_run(run_id)
        assert "errors: 2 HTTP 400" in view.progress_label.text()
        # once the runs table's next read (after the job's own last write) says the run can be resumed
        qtbot.waitUntil(view.resume_button.isEnabled, timeout=3_000)
        view.resume_button.click()
        qtbot.waitUntil(lambda: page.finished_ops[-1] is not first and page.current is None, timeout=15_000)
        resumed = page.finished_ops[-1]
        assert resumed.status == "succeeded" and resumed.result.run_id == run_id
        assert resumed.result.answered == 4 and resumed.result.fresh_requests == 2  # only the failed two again
        assert len(server.requests_to("/chat/completions")) == 6
    assert responses(project_copy, run_id) == 4
    qtbot.waitUntil(lambda: view.line(run_id).errors == "" and view.line(run_id).status == "finished", timeout=5_000)
    assert dialogs == []


@pytest.mark.slow
def test_a_cli_run_is_listed_live_cancelled_from_the_page_and_resumed_here(page, qtbot, project_copy):
    """`spokenbench evaluate` in another process: the page lists it while it runs, cancels it through the jobs
    table (the CLI exits 130), and Resume continues the same run in the app without a duplicate."""
    import subprocess
    import sys

    view = page.view
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("B"), delay_s=0.03))
        command = [sys.executable, "-m", "spokenbench.core.cli.main", "evaluate", str(project_copy)]
        command += ["--model", "vllm:m", "--base-url", server.url + "/v1", "--mode", "text", "--prompt", "standard"]
        command += ["--concurrency", "1"]
        cli = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            qtbot.waitUntil(
                lambda: len(view.lines) == 1 and view.lines[0].live and view.lines[0].done >= 3, timeout=15_000
            )
            line = view.lines[0]
            assert (
                line.status == "running" and line.model == "vllm:m" and line.progress.startswith(f"{line.done}/{ITEMS}")
            )
            view.select_run(line.run_id)
            view.cancel_button.click()
            assert cli.wait(10) == 130, cli.stderr.read()  # a cancelled run exits 130
        finally:
            if cli.poll() is None:
                cli.kill()
        run_id = line.run_id
        qtbot.waitUntil(
            lambda: view.line(run_id).status == "cancelled" and view.resume_button.isEnabled(),
            timeout=5_000,
        )
        stored = responses(project_copy, run_id)
        assert 3 <= stored < ITEMS
        view.resume_button.click()
        qtbot.waitUntil(lambda: bool(page.finished_ops) and page.current is None, timeout=15_000)
        resumed = page.finished_ops[-1]
        assert resumed.status == "succeeded", resumed.error
        assert resumed.result.run_id == run_id and resumed.result.answered == ITEMS
        assert resumed.result.fresh_requests == ITEMS - stored
        sent = len(server.requests_to("/chat/completions"))
    assert responses(project_copy, run_id) == ITEMS == responses(project_copy)
    assert sent == ITEMS, "the request in flight at the cancel was waited for, not sent again"


@pytest.mark.slow
def test_a_cancelled_run_waiting_for_an_answer_already_sent_offers_stop_now(page, qtbot, project_copy):
    view = page.view
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A"), delay_s=30.0))
        use_stub_endpoint(view, server)
        prepare(page, qtbot, model=CUSTOM)
        view.start_button.click()
        run = page.current
        qtbot.waitUntil(
            lambda: run.run_id is not None and len(server.requests_to("/chat/completions")) == 1, timeout=15_000
        )
        qtbot.waitUntil(lambda: (line := view.line(run.run_id)) is not None and line.live, timeout=5_000)
        view.select_run(run.run_id)
        assert view.cancel_button.text() == "Cancel" and view.cancel_button.isEnabled()
        view.cancel_button.click()
        qtbot.waitUntil(lambda: view.cancel_button.text() == "Stop Now", timeout=5_000)
        line = view.line(run.run_id)
        assert line.status == "cancelling" and view.cancel_button.isEnabled()
        assert "waiting for the answers to 1 request(s) already sent (paid for)" in line.progress
        assert page.current is run  # the cancel waits for the answer
        started = time.monotonic()
        view.cancel_button.click()
        qtbot.waitUntil(lambda: page.current is None, timeout=10_000)
        assert time.monotonic() - started < 5 and run.status == "cancelled"
        assert responses(project_copy, run.run_id) == 0
    qtbot.waitUntil(lambda: view.cancel_button.text() == "Cancel" and not view.cancel_button.isEnabled(), timeout=5_000)


def wait_prepared(page, qtbot):
    operation = page.last_prepare
    if operation is not None:
        qtbot.waitUntil(lambda: not operation.is_running, timeout=5_000)
    return page.view.plan_text.toPlainText()


@pytest.mark.slow
def test_a_perturbation_the_project_lacks_is_named_and_the_fields_list_the_levels(page, qtbot):
    view = page.view
    qtbot.waitUntil(lambda: view.grid_edits["speeds"].placeholderText() == "all: 1", timeout=5_000)
    assert view.grid_edits["volumes"].placeholderText() == "all: 1"
    assert view.grid_edits["snr"].placeholderText() == "all: clean"
    view.grid_edits["speeds"].setText("0.8")
    view.formEdited.emit()
    page.prepare()
    plan = wait_prepared(page, qtbot)
    assert (
        plan.startswith("Cannot prepare: speed 0.8 is not available to the simulated listener") and "(only 1)" in plan
    )
    assert "spokenbench assemble" in plan and "--speed 0.8" in plan and "the plan is empty" not in plan
    assert not view.start_button.isEnabled()


@pytest.mark.slow
def test_the_plans_warnings_are_shown(page, qtbot):
    view = page.view
    view.select_model(CUSTOM)
    view.custom_url.setText("http://127.0.0.1:9/v1")
    view.custom_model.setText("m")
    view.custom_key.setText("")
    view.mode_box.setCurrentIndex(view.mode_box.findData("text"))
    prepared = prepare(page, qtbot, model=CUSTOM, limit="2")
    assert prepared.warnings
    plan = view.plan_text.toPlainText().splitlines()
    assert [line for line in plan if line.startswith("warning: ")] == [f"warning: {w}" for w in prepared.warnings]
    assert "warning: no price is known for vllm:m: cost is not estimated" in plan[-1]


@pytest.mark.slow
def test_a_live_run_shows_its_rate_eta_and_spend_in_the_list(page):
    from spokenbench.core.jobs.registry import JobInfo

    run = launcher.RunRow(
        run_id=7, name="", model="openai:gpt-audio-mini", mode="audio", simulates_mode=None, prompt="standard",
        status="running", responses=12, total=48, errors=0, error_kinds={}, cost_usd=0.0123, budget_usd=1.0,
        created_at="2026-11-30T10:00:00Z",
    )  # fmt: skip
    job = JobInfo(
        id=3, kind="evaluate", label="openai:gpt-audio-mini audio standard (run 7)", claim="run:7", project="p",
        pid=1, host="elsewhere", argv=None, cwd=None, started_at="2026-11-30T10:00:00Z",
        heartbeat_at="2026-11-30T10:00:05Z", finished_at=None, done=12, total=48, message="35.2/s ETA 0:05 q12",
        status="running", stop_reason=None, cancel_requested=False, heartbeat_age_s=0.5,
    )  # fmt: skip
    page.runs, page.jobs = [run], [job]
    page._show_runs()
    view = page.view
    line = view.line(7)
    assert line.live and line.status == "running" and line.cancellable
    assert line.progress == "12/48 · 35.2/s · ETA 0:05 · spent $0.0123" and line.spent == "$0.0123"
    from spokenbench.widgets.launcher_view import RUN_COLUMNS

    assert "ETA 0:05" in view.runs_table.item(0, RUN_COLUMNS.index("Progress")).text()
    assert view.runs_table.item(0, RUN_COLUMNS.index("Spent")).text() == "$0.0123"
    view.select_run(7)
    assert "ETA 0:05" in view.progress_label.text() and "spent $0.0123" in view.progress_label.text()


@pytest.mark.slow
def test_the_page_and_a_cli_run_of_the_same_plan_send_each_request_once(page, qtbot, project_copy):
    """Issue 23: the same plan started from the page while `spokenbench evaluate` runs it: each request is
    sent once (claimed across processes); the one that waits reuses the other's answers and says so."""
    import subprocess
    import sys
    from collections import Counter
    from pathlib import Path

    view = page.view
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A"), delay_s=PAUSE_S))
        cli = subprocess.Popen(
            [str(Path(sys.executable).with_name("spokenbench")), "evaluate", str(project_copy), "--model", "vllm:m"]
            + ["--base-url", server.url + "/v1", "--mode", "text", "--prompt", "standard", "--concurrency", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        )
        use_stub_endpoint(view, server)
        prepare(page, qtbot, model=CUSTOM)
        view.start_button.click()
        _, cli_err = cli.communicate(timeout=60)
        qtbot.waitUntil(lambda: page.current is None and bool(page.finished_ops), timeout=30_000)
        sent = Counter(request.body for request in server.requests_to("/chat/completions"))
    assert cli.returncode == 0, cli_err
    app_run = page.finished_ops[-1]
    assert app_run.status == "succeeded", app_run.error
    assert len(sent) == ITEMS and max(sent.values()) == 1, f"{sum(sent.values())} requests for {len(sent)}"
    assert app_run.result.answered == ITEMS and responses(project_copy) == 2 * ITEMS
    if app_run.result.reused_from_other_jobs:  # the page waited for the CLI run: it says so
        assert "were reused from job(s)" in view.plan_text.toPlainText()
    else:  # the CLI run waited for the page's job
        assert "reusing its answer" in cli_err


@pytest.mark.slow
def test_resuming_a_run_whose_endpoint_is_a_new_host_asks_before_sending_the_key(
    page, qtbot, project_copy, monkeypatch
):
    """A run's endpoint comes from the project folder: resuming a run that would send the NVIDIA key to a host
    this machine has not sent a key to asks first (Escape: nothing is sent), and only a yes sends it."""
    from PySide6.QtCore import Qt

    from spokenbench.core.cli.resume import ApprovedHosts
    from spokenbench.core.evaluation.plans import PlanOptions
    from spokenbench.core.evaluation.preparation import RunSettings, prepare_evaluation
    from spokenbench.core.evaluation.runner import create_prepared_run

    monkeypatch.setenv("NVIDIA_API_KEY", "nvapi-test-key")
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A")))
        endpoint = server.url.replace("127.0.0.1", "localhost") + "/v1"  # a host not among the bundled ones
        settings = RunSettings(model="nvidia:m", base_url=endpoint, mode="text", plan=PlanOptions(limit=2))
        with opened(project_copy) as project:  # a run row as a colleague's project could hold it (no live job)
            with project.transaction() as conn:
                run_id = create_prepared_run(conn, prepare_evaluation(project, settings))

        page.resume_run(run_id)
        qtbot.waitUntil(lambda: page.confirmation is not None, timeout=5_000)
        box = page.confirmation
        assert "NVIDIA_API_KEY" in box.informativeText() and "localhost" in box.informativeText()
        assert box.defaultButton().text() == "Cancel"
        qtbot.keyClick(box, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: page.confirmation is None, timeout=2_000)
        assert page.current is None and not page.queue and server.requests_to("/chat/completions") == []

        page.resume_run(run_id)
        qtbot.waitUntil(lambda: page.confirmation is not None, timeout=5_000)
        send = next(b for b in page.confirmation.buttons() if b.text() == "Send key and resume")
        send.setFocus()
        qtbot.keyClick(send, Qt.Key.Key_Space)
        qtbot.waitUntil(lambda: bool(page.finished_ops) and page.current is None, timeout=20_000)
        sent = server.requests_to("/chat/completions")
    assert page.finished_ops[-1].status == "succeeded", page.finished_ops[-1].error
    assert len(sent) == 2 and all(r.headers["authorization"] == "Bearer nvapi-test-key" for r in sent)
    assert ApprovedHosts().knows("localhost")


def test_a_run_that_left_requests_to_a_batch_says_where_and_how_to_finish_it():
    from spokenbench.app.evaluate_page import reuse_note
    from spokenbench.core.evaluation.runner import RunSummary

    summary = RunSummary(2, "created", "batch pending", "m", "audio", 6, 0, 0, 0, 0, 0, 0.0, 0.0, {}, {})
    assert reuse_note(summary) == ""
    summary.waiting_elsewhere = 6
    summary.waiting_on = [{"batch_id": 1, "run_id": 1, "job_id": None, "job": None, "requests": 6}]
    note = reuse_note(summary)
    assert "6 request(s) wait in batch 1 (run 1)" in note and "Resume this run" in note and "no cost" in note
