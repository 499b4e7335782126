"""Large runs in the app (issue 14, item 3): the launcher's "How to run" choices (Online, Batch, Export batch
file) and why a way is unavailable; submitting a provider batch and exporting a batch file on workers; the jobs
panel's batch list refreshed off the UI thread, collecting a finished job by itself and cancelling one; Import
results… storing a run_batch output, and refusing a bad one with a dialog naming its lines. Against the loopback
batch stub (tests/core/evaluation/batch_stub.py) driven by the real SDKs."""

import dataclasses
import json

import pytest
from batch_stub import BatchStub
from eval_support import TEST_KEYS, add_assembled, add_items
from PySide6.QtWidgets import QMessageBox

from spokenbench.app import batch_ops
from spokenbench.app.batch_ops import ProjectThreadOp
from spokenbench.app.evaluate_page import EvaluatePage
from spokenbench.app.jobs import JobsController
from spokenbench.core.domain.conditions import Condition
from spokenbench.core.evaluation import batches as batches_module
from spokenbench.core.evaluation import launcher
from spokenbench.core.evaluation.launcher import CUSTOM, LaunchForm
from spokenbench.core.store import Project, opened
from spokenbench.widgets.jobs_panel import JobsPanel

OPENAI = "openai:gpt-audio-mini"


@pytest.fixture(autouse=True)
def api_keys(monkeypatch):
    for name, value in TEST_KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def audio_path(tmp_path):
    """Three English items, each assembled in original and reversed order: six requests."""
    path = tmp_path / "proj"
    with Project.create(path) as project:
        for item_id in add_items(project, 3):
            for order in ("original", "reversed"):
                condition = Condition(language="en", accent="american", voice="Zephyr", gender="female", order=order)
                add_assembled(project, item_id, condition)
    return path


@pytest.fixture
def bstub():
    with BatchStub() as server:
        server.state.instant = True
        yield server


@pytest.fixture
def to_stub(monkeypatch, bstub):
    """The form's preset models are sent to the stub instead of the provider."""
    real = launcher.settings_from_form

    def settings_from_form(form):
        settings = real(form)
        if settings.model.startswith(("openai:", "gemini:")):
            url = bstub.openai_url if settings.model.startswith("openai:") else bstub.gemini_url
            settings = dataclasses.replace(settings, base_url=url)
        return settings

    monkeypatch.setattr(launcher, "settings_from_form", settings_from_form)
    return bstub


@pytest.fixture
def page(qtbot, audio_path, open_session):
    page = EvaluatePage()
    qtbot.addWidget(page)
    page.resize(1300, 850)
    page.show()
    page.set_session(open_session(audio_path))
    qtbot.waitUntil(lambda: page.last_read is not None and not page.last_read.is_running, timeout=5_000)
    return page


@pytest.fixture
def jobs(qtbot, runner, page):
    """The jobs panel on the page's session, its batch list fed by a BatchesController."""
    panel = JobsPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 400)
    panel.show()
    controller = JobsController(runner, panel, parent=panel)  # its timers go with the panel, never past the test
    controller.set_session(page.session)
    yield controller
    controller.set_session(None)


def prepare(page, qtbot, model=OPENAI, way="online"):
    view = page.view
    view.select_model(model)
    view.formEdited.emit()
    view.set_run_way(way)
    operation = page.prepare()
    qtbot.waitUntil(lambda: page.prepared is not None or not operation.is_running, timeout=5_000)
    assert page.prepared is not None, view.plan_text.toPlainText()
    return page.prepared


def wait_done(qtbot, operation, timeout=10_000):
    qtbot.waitUntil(lambda: not operation.is_running, timeout=timeout)
    assert operation.status == "succeeded", operation.error
    return operation.result


def batch_rows(path):
    with opened(path) as project:
        return [dict(row) for row in project.conn.execute("SELECT * FROM batch_jobs ORDER BY id")]


def responses(path):
    with opened(path) as project:
        return project.conn.execute("SELECT count(*) FROM responses WHERE error IS NULL").fetchone()[0]


def test_which_ways_each_model_can_run():
    form = LaunchForm(model=OPENAI)
    assert batch_ops.run_ways(form) == {"online": None, "batch": None, "file": None}
    gemini = batch_ops.run_ways(LaunchForm(model="gemini:gemini-2.5-flash"))
    assert gemini["batch"] is None and "Gemini" in gemini["file"]
    simulated = batch_ops.run_ways(LaunchForm(model="simulated:steady"))
    assert "simulated" in simulated["batch"] and "simulated" in simulated["file"] and simulated["online"] is None
    custom = batch_ops.run_ways(LaunchForm(model=CUSTOM, custom_provider="vllm"))
    assert "vllm endpoint has no batch API" in custom["batch"] and custom["file"] is None
    mistral = batch_ops.run_ways(LaunchForm(model="mistral:voxtral-small-2507"))
    assert "no batch API" in mistral["batch"] and mistral["file"] is None
    pipeline = batch_ops.run_ways(LaunchForm(model=OPENAI, mode="pipeline"))
    assert pipeline["batch"] and pipeline["file"]


def test_the_launcher_disables_a_way_with_its_reason(page):
    view = page.view
    view.select_model("simulated:steady")
    view.formEdited.emit()
    assert view.way_buttons["online"].isChecked()
    assert not view.way_buttons["batch"].isEnabled() and not view.way_buttons["file"].isEnabled()
    assert "simulated listener" in view.way_note.text() and view.way_note.isVisibleTo(page)
    view.select_model(OPENAI)
    view.formEdited.emit()
    assert all(button.isEnabled() for button in view.way_buttons.values()) and not view.way_note.isVisibleTo(page)
    view.set_run_way("batch")
    assert view.start_button.text() == "Submit batch"
    view.select_model(CUSTOM)  # a vLLM endpoint: no batch API; the checked way falls back to Online
    view.formEdited.emit()
    assert view.way_buttons["online"].isChecked() and not view.way_buttons["batch"].isEnabled()
    assert "no batch API" in view.way_buttons["batch"].toolTip()
    view.set_run_way("file")
    assert view.start_button.text() == "Export…"


@pytest.mark.slow  # the openai SDK's import and a submit and a collect through it: several seconds
def test_submit_a_batch_then_the_jobs_panel_collects_it(page, jobs, to_stub, qtbot, audio_path):
    prepare(page, qtbot, way="batch")
    assert "at the batch price" in page.view.plan_text.toPlainText()
    page.view.start_button.click()
    summary = wait_done(qtbot, page.last_batch)
    assert summary.provider == "openai" and summary.lines == 6 and len(summary.batch_ids) == 1
    assert "Submitted run" in page.view.plan_text.toPlainText()
    # the jobs panel learns of the job, asks the provider (finished at once here) and collects it by itself
    qtbot.waitUntil(lambda: batch_rows(audio_path)[0]["state"] == "collected", timeout=10_000)
    assert responses(audio_path) == 6
    view = jobs.panel.batches
    qtbot.waitUntil(lambda: view.rows and view.rows[0].state == "collected", timeout=5_000)
    row = view.rows[0]
    assert row.provider == "openai" and row.job_id.startswith("batch") and row.requests.startswith("6 (6 answered")
    assert row.submitted and not row.cancellable and view.isVisibleTo(jobs.panel)
    assert "Collected batch" in view.message.text()


@pytest.mark.slow
def test_collect_on_click_and_cancel_batch(page, jobs, to_stub, qtbot, audio_path):
    to_stub.state.instant = False
    jobs.batches.auto_collect = False
    prepare(page, qtbot, way="batch")
    page.view.start_button.click()
    wait_done(qtbot, page.last_batch)
    view = jobs.panel.batches
    qtbot.waitUntil(lambda: len(view.rows) == 1, timeout=5_000)
    # a job first seen is asked about at once (validating → in_progress)
    qtbot.waitUntil(lambda: view.rows[0].state == "running", timeout=5_000)
    assert view.rows[0].cancellable
    view.table.selectRow(0)
    assert view.cancel_button.isEnabled()
    view.cancel_button.click()
    qtbot.waitUntil(lambda: batch_rows(audio_path)[0]["state"] in ("cancelling", "cancelled"), timeout=5_000)
    assert any(path.endswith("/cancel") for path in to_stub.paths("POST"))
    wait_done(qtbot, jobs.batches.refresh(remote=True))
    assert batch_rows(audio_path)[0]["state"] == "cancelled"
    assert view.collect_button.isEnabled()
    view.collect_button.click()
    summary = wait_done(qtbot, jobs.batches.collect_op)
    assert summary.collected and summary.answered + summary.failed == 6
    qtbot.waitUntil(lambda: view.rows[0].state == "collected", timeout=5_000)
    assert "Resume the run" in view.message.text()


def test_the_periodic_refresh_is_not_listed_as_a_job(page, jobs, qtbot):
    operation = ProjectThreadOp(page.session, lambda project, progress: [], label="quiet refresh", quiet=True).run()
    jobs.refresh()
    assert all(row.title != "quiet refresh" for row in jobs.panel.rows)
    wait_done(qtbot, operation)


def _run_batch_output(requests_path, bad_custom_id=False):
    out = []
    for number, raw in enumerate(requests_path.read_text().splitlines(), start=1):
        line = json.loads(raw)
        body = {
            "id": f"cmpl-{number}",
            "object": "chat.completion",
            "created": 0,
            "model": line["body"]["model"],
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "Answer: [[B]]"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 90, "completion_tokens": 4, "total_tokens": 94},
        }
        key = "f" * 64 if bad_custom_id and number == 2 else line["custom_id"]
        out.append(
            {"id": f"vllm-{number}", "custom_id": key, "response": {"status_code": 200, "body": body}, "error": None}
        )
    lines = [json.dumps(record) for record in out]
    if bad_custom_id:
        lines.insert(3, "{not json")
    return "\n".join(lines) + "\n"


def test_export_a_batch_file_then_import_results(page, qtbot, tmp_path, audio_path, dialogs, monkeypatch):
    view = page.view
    view.select_model(CUSTOM)
    view.custom_url.setText("http://127.0.0.1:9/v1")
    view.custom_model.setText("my-audio-model")
    view.custom_key.setText("")
    view.formEdited.emit()
    view.set_run_way("file")
    operation = page.prepare()
    qtbot.waitUntil(lambda: page.prepared is not None or not operation.is_running, timeout=5_000)
    assert page.prepared is not None, view.plan_text.toPlainText()
    target = tmp_path / "requests.jsonl"
    offered = []
    monkeypatch.setattr(view, "ask_batch_file_path", lambda suggested: offered.append(suggested) or str(target))
    view.start_button.click()
    summary, model = wait_done(qtbot, page.last_batch)
    assert summary.lines == 6 and target.stat().st_size == summary.bytes and model == "vllm:my-audio-model"
    assert offered[0].endswith("vllm-my-audio-model-batch-requests.jsonl")
    plan = view.plan_text.toPlainText()
    assert "run_batch -i" in plan and "--model my-audio-model" in plan
    # a bad output: a dialog naming the bad lines, nothing imported, no traceback
    bad = tmp_path / "bad.jsonl"
    bad.write_text(_run_batch_output(target, bad_custom_id=True))
    monkeypatch.setattr(view, "ask_results_path", lambda: str(bad))
    view.import_button.click()
    qtbot.waitUntil(lambda: page.last_import is not None and not page.last_import.is_running, timeout=5_000)
    assert len(dialogs) == 1 and dialogs[0].icon == QMessageBox.Icon.Warning
    assert "bad.jsonl was not imported: 2 lines cannot be used" in dialogs[0].text
    assert "line 2: unknown custom_id" in dialogs[0].details and "line 4: not JSON" in dialogs[0].details
    assert "Traceback" not in dialogs[0].details and responses(audio_path) == 0
    # a good one is imported
    good = tmp_path / "results.jsonl"
    good.write_text(_run_batch_output(target))
    wait_done(qtbot, page.import_results(str(good)))
    assert responses(audio_path) == 6 and len(dialogs) == 1
    assert "6 answered" in view.plan_text.toPlainText()


@pytest.mark.slow  # a submit and a collect through the openai SDK
def test_the_jobs_panel_finds_a_killed_submitters_batch_and_collects_it(
    page, jobs, to_stub, qtbot, audio_path, monkeypatch
):
    """A part whose submitter died before storing the provider's id (its row as such a kill leaves it): the panel's
    collect finds it at the provider by its tag and collects it, without a second batch. A look that comes too
    early (a remote read racing the first collect, under load) is retried after the grace: short here."""
    monkeypatch.setattr(batches_module, "ORPHAN_GRACE_S", 0.5)
    jobs.batches.auto_collect = False
    prepare(page, qtbot, way="batch")
    page.view.start_button.click()
    wait_done(qtbot, page.last_batch)
    with opened(audio_path) as project, project.transaction() as conn:
        conn.execute("UPDATE batch_jobs SET state = 'submitting', remote_id = NULL")
    view = jobs.panel.batches

    def collectable() -> bool:
        """Read again until the submitting job process has ended (a live submitter's part is never touched)."""
        if len(view.rows) == 1 and view.rows[0].job_id == "(not submitted)" and view.rows[0].collectable:
            return True
        jobs.batches.refresh()  # a poll may supersede a read: the list is what counts
        return False

    qtbot.waitUntil(collectable, timeout=10_000)
    assert view.rows[0].state != "collected" and view.collect_button.isEnabled()
    jobs.batches.auto_collect = True  # a read collects it by itself

    def collected() -> bool:
        """Read again, as the panel's polls do, until a read's collect has stored it (a read that came while
        another was running, or before the grace, leaves it to the next read)."""
        if batch_rows(audio_path)[0]["state"] == "collected":
            return True
        jobs.batches.refresh()
        return False

    qtbot.waitUntil(collected, timeout=20_000)
    assert responses(audio_path) == 6 and len(to_stub.state.batches) == 1
    qtbot.waitUntil(lambda: "found at the provider by its tag" in view.message.text(), timeout=5_000)


@pytest.mark.slow
def test_the_jobs_panels_collect_fills_a_run_waiting_on_the_batch(page, jobs, to_stub, qtbot, audio_path):
    """A second run of the same plan leaves its requests to the first run's batch; the jobs panel's collect fills
    it from the response cache (collect_batches) and the Evaluate page's runs list shows it finished."""
    from spokenbench.core.evaluation.batches import submit_batches_for_settings

    jobs.batches.auto_collect = False
    prepare(page, qtbot, way="batch")
    page.view.start_button.click()
    wait_done(qtbot, page.last_batch)
    with opened(audio_path) as project:
        settings = dataclasses.replace(launcher.settings_for_run(project.conn, 1), run_id=None, name="second")
        second = submit_batches_for_settings(project, settings, "openai")
    assert second.run_id == 2 and second.waiting_elsewhere == 6 and second.lines == 0
    view = jobs.panel.batches
    qtbot.waitUntil(lambda: len(view.rows) == 1 and view.collect_button.isEnabled(), timeout=5_000)
    view.collect_button.click()
    summary = wait_done(qtbot, jobs.batches.collect_op)
    assert summary.filled == [{"run_id": 2, "results": 6}]
    assert "Run 2: 6 result(s) filled from the cache at no cost." in view.message.text()
    # the collect's changes (runs, responses) make the page read its runs again, off the UI thread
    qtbot.waitUntil(lambda: any(run.run_id == 2 and run.status == "finished" for run in page.runs), timeout=5_000)
    run = next(run for run in page.runs if run.run_id == 2)
    assert run.responses == 6 and run.cost_usd == 0


def test_the_submitted_note_names_requests_a_collected_batch_did_not_answer(page):
    """What the page shows after a submit that raced a collect (core: `BatchSubmission.not_sent`, tested in
    tests/core/evaluation/test_collect_fills.py): the requests neither sent nor waiting, and how to send them."""
    submission = batches_module.BatchSubmission(
        run_id=2,
        provider="openai",
        batch_ids=[],
        requests=6,
        submitted=0,
        lines=0,
        cached=4,
        already_stored=0,
        waiting_elsewhere=0,
        bytes=0,
        estimated_cost_usd=None,
        not_sent=2,
    )
    page._batch_submitted(submission)
    text = page.view.plan_text.toPlainText()
    assert "2 requests were left to a batch that was collected meanwhile" in text
    assert "resume this run to send them" in text
    page._batch_submitted(dataclasses.replace(submission, not_sent=1))
    assert (
        "1 request was left to a batch that was collected meanwhile, which did not answer: resume this run to send it."
        in page.view.plan_text.toPlainText()
    )
    page._batch_submitted(dataclasses.replace(submission, not_sent=0))
    assert "collected meanwhile" not in page.view.plan_text.toPlainText()
