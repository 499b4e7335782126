"""The Evaluate page as a user meets it: the wheel over an unfocused combo box scrolls the form instead of
changing it, the Test-connection answer wraps on a row of its own and is gone once the URL changes, long model
names are elided in the middle with the whole name in the tooltip, the plan pane follows a cancelled run, and an
audio-mode run whose inputs are not assembled is assembled by the page (a job) and then run."""

import dataclasses
from dataclasses import replace

import pytest
from PySide6.QtCore import QPoint, QPointF, QSettings, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication
from stub_server import Reply, StubServer, chat_answer

from spokenbench.app.main_window import MainWindow
from spokenbench.core.domain.conditions import Condition
from spokenbench.core.evaluation.launcher import CUSTOM
from spokenbench.core.jobs.registry import list_jobs
from spokenbench.core.store import opened
from spokenbench.widgets.launcher_view import RUN_COLUMNS, RunLine


@pytest.fixture
def window(qtbot, tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(audio_message="off", poll_interval_s=0.1, settings=settings)
    qtbot.addWidget(window)
    window.resize(1280, 720)
    window.show()
    yield window
    window.shutdown()


def evaluate_page(window, qtbot, project=None):
    """The Evaluate page, on `project` when given, reached as a user does (Ctrl+6)."""
    if project is not None:
        with qtbot.waitSignal(window.open_project(project).finished, timeout=20_000):
            pass
    qtbot.keyClick(window, Qt.Key.Key_6, Qt.KeyboardModifier.ControlModifier)  # View → Evaluate
    qtbot.waitUntil(lambda: window.current_page_key() == "evaluate", timeout=5_000)
    return window.page_widgets["evaluate"]


def wheel(widget, steps: int = -1) -> None:
    """A real wheel event (one notch down) sent where the mouse is over the widget."""
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(
        centre,
        QPointF(widget.mapToGlobal(centre.toPoint())),
        QPoint(0, 0),
        QPoint(0, 120 * steps),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(widget, event)


def test_the_wheel_over_an_unfocused_combo_box_leaves_the_prompt_alone(window, qtbot):
    view = evaluate_page(window, qtbot).view
    prompt = view.prompt_box
    assert prompt.currentData() == "standard" and not prompt.hasFocus()
    assert prompt.focusPolicy() == Qt.FocusPolicy.StrongFocus  # a wheel no longer focuses it first
    wheel(prompt)
    wheel(view.concurrency_box)
    assert prompt.currentData() == "standard" and view.concurrency_box.value() == 8
    prompt.setFocus()
    qtbot.waitUntil(prompt.hasFocus, timeout=2_000)
    wheel(prompt)  # focused: the wheel is the user's choice
    assert prompt.currentData() != "standard"


def test_the_connection_result_wraps_on_its_own_row_and_goes_when_the_url_changes(window, qtbot):
    page = evaluate_page(window, qtbot)
    view = page.view
    view.select_model(CUSTOM)
    with StubServer() as server:
        server.script("GET", r"/v1/models$", Reply(200, {"data": [{"id": "a-model/with-a-rather-long-name" * 3}]}))
        view.custom_url.setFocus()
        qtbot.keyClicks(view.custom_url, server.url + "/v1")
        qtbot.keyClicks(view.custom_model, "m")
        view.test_button.setFocus()
        qtbot.keyClick(view.test_button, Qt.Key.Key_Space)
        qtbot.waitUntil(lambda: page.last_test is not None and not page.last_test.is_running, timeout=5_000)
    answer = view.test_result.text()
    assert answer.startswith("Connected") and view.test_result.wordWrap()
    below = view.test_result.geometry().top() >= view.test_button.geometry().bottom()
    assert below and view.test_result.width() > 2 * view.test_button.width()  # its own row, the group's width
    view.custom_url.setFocus()
    qtbot.keyClick(view.custom_url, Qt.Key.Key_Backspace)  # another URL: the answer was about the old one
    assert view.test_result.text() == ""


def test_a_long_model_name_is_elided_in_the_middle_with_the_whole_name_in_the_tooltip(window, qtbot):
    view = evaluate_page(window, qtbot).view
    model = "openai-compatible:Qwen/Qwen2-Audio-7B-Instruct-with-a-long-fine-tune-suffix-v3"
    line = RunLine(
        7, f"Run 7: {model}", model, "audio", "standard", "running", 3, 48, "3/48 · 2.1/s · ETA 0:20", "", "$0.0010",
        True, True, False, False,
    )  # fmt: skip
    view.set_runs([line])
    table = view.runs_table
    column = RUN_COLUMNS.index("Model")
    assert table.textElideMode() == Qt.TextElideMode.ElideMiddle
    assert model in table.item(0, column).toolTip()
    widths = {name: table.columnWidth(i) for i, name in enumerate(RUN_COLUMNS)}
    assert widths["Model"] == max(widths.values())  # the widest column: the rest of the row is short


def test_the_keyboard_on_cancel_stays_with_the_run_and_comes_back_for_stop_now_only(window, qtbot):
    """Space on a run's Cancel: the button is disabled while the job takes the cancel in, and passed the keys on
    down the focus chain; they stay on the runs list, and come back to the button for Stop Now, never Resume."""
    view = evaluate_page(window, qtbot).view
    running = RunLine(
        7, "Run 7: vllm:m", "vllm:m", "text", "standard", "running", 3, 48, "3/48", "", "$0.0010", True, True, False,
        False,
    )  # fmt: skip
    view.set_runs([running])
    view.select_run(7)
    view.cancel_button.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is view.cancel_button, timeout=2_000)
    view.set_runs([replace(running, status="cancelling", cancellable=False)])
    assert QApplication.focusWidget() is view.runs_table and not view.cancel_button.isEnabled()
    view.set_runs([replace(running, status="cancelling", cancellable=False, stoppable_now=True)])
    assert view.cancel_button.text() == "Stop Now" and QApplication.focusWidget() is view.cancel_button
    view.set_runs([replace(running, status="cancelling", cancellable=False)])
    view.set_runs([replace(running, status="cancelled", live=False, cancellable=False, resumable=True)])
    assert QApplication.focusWidget() is view.runs_table and view.resume_button.isEnabled()
    # Cancel on run 7 again, then the user goes to run 9, which another window cancelled and which waits: the keys
    # stay on the list, one Space away from nothing, not on run 9's Stop Now
    view.set_runs([running])
    view.cancel_button.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is view.cancel_button, timeout=2_000)
    other = replace(running, run_id=9, title="Run 9: vllm:m", status="cancelling", cancellable=False)
    view.set_runs([replace(running, status="cancelling", cancellable=False), other])
    assert QApplication.focusWidget() is view.runs_table
    view.set_runs([replace(running, status="cancelling", cancellable=False), replace(other, stoppable_now=True)])
    view.select_run(9)
    assert view.cancel_button.text() == "Stop Now" and QApplication.focusWidget() is view.runs_table


def use_endpoint(view, server, mode: str) -> None:
    """The form set to an OpenAI-compatible endpoint on the loopback stub (no key), in `mode`."""
    view.select_model(CUSTOM)
    view.custom_url.setText(server.url + "/v1")
    view.custom_model.setText("m")
    view.custom_key.setText("")
    view.mode_box.setCurrentIndex(view.mode_box.findData(mode))


def volume_inputs(path) -> int:
    with opened(path) as project:
        keys = [row[0] for row in project.conn.execute("SELECT condition_key FROM assembled_inputs")]
    return sum(Condition.from_key(key).volume == 1.5 for key in keys)


@pytest.mark.slow
def test_an_audio_run_is_assembled_by_the_page_then_run(window, qtbot, demo_copy):
    page = evaluate_page(window, qtbot, demo_copy)
    view = page.view
    assert volume_inputs(demo_copy) == 0
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A")))
        use_endpoint(view, server, "audio")
        for edit, text in ((view.grid_edits["volumes"], "1.5"), (view.grid_edits["languages"], "en")):
            edit.setFocus()
            qtbot.keyClicks(edit, text)
        view.grid_edits["accents"].setText("american")
        view.limit_edit.setFocus()
        qtbot.keyClicks(view.limit_edit, "2")
        view.prepare_button.setFocus()
        qtbot.keyClick(view.prepare_button, Qt.Key.Key_Space)
        qtbot.waitUntil(lambda: page.needs_assembly is not None or page.prepared is not None, timeout=10_000)
        needed = page.needs_assembly
        assert needed is not None and needed.count > 0, view.plan_text.toPlainText()
        plan = view.plan_text.toPlainText()
        assert "not assembled yet" in plan and "volume 1.5" in plan and "Start assembles them first" in plan
        assert view.start_button.isEnabled() and view.start_button.text() == "Assemble, then start"
        view.start_button.setFocus()
        qtbot.keyClick(view.start_button, Qt.Key.Key_Space)
        assert page.last_assembly is not None
        qtbot.waitUntil(lambda: page.current is not None or bool(page.finished_ops), timeout=60_000)
        assert page.last_assembly.status == "succeeded", page.last_assembly.error
        qtbot.waitUntil(lambda: page.current is None and bool(page.finished_ops), timeout=60_000)
        run = page.finished_ops[-1]
        assert run.status == "succeeded", run.error
        assert run.result.answered == needed.count  # every input assembled for the run was asked about
        asked = server.requests_to("/chat/completions")
        assert len(asked) == needed.count and all("input_audio" in request.body.decode() for request in asked)
    assert volume_inputs(demo_copy) == needed.count
    with opened(demo_copy) as project:
        kinds = [job.kind for job in list_jobs(project.conn)]
    assert "assemble" in kinds and "evaluate" in kinds
    qtbot.waitUntil(lambda: "finished" in view.plan_text.toPlainText(), timeout=5_000)
    assert "Queued" not in view.plan_text.toPlainText()


@pytest.mark.slow
def test_after_cancel_the_plan_pane_no_longer_says_queued(window, qtbot, demo_copy):
    page = evaluate_page(window, qtbot, demo_copy)
    view = page.view
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A"), delay_s=0.1))
        use_endpoint(view, server, "text")
        view.concurrency_box.setValue(1)
        view.limit_edit.setText("60")
        qtbot.mouseClick(view.prepare_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: page.prepared is not None, timeout=10_000)
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
        assert view.plan_text.toPlainText().startswith("Queued")
        run = page.current
        qtbot.waitUntil(
            lambda: run.run_id is not None and (line := view.line(run.run_id)) and line.live and line.done >= 2,
            timeout=10_000,
        )

        def selected_and_cancellable() -> bool:  # the list is redrawn as runs and jobs are read
            view.select_run(run.run_id)
            return view.cancel_button.isEnabled()

        qtbot.waitUntil(selected_and_cancellable, timeout=5_000)
        qtbot.mouseClick(view.cancel_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: page.current is None, timeout=10_000)
    assert view.plan_text.toPlainText() == f"Run {run.run_id} cancelled. Prepare a run to start another."
    assert view.queue_status.text() == "Nothing running."


@pytest.mark.slow
def test_inputs_that_cannot_be_assembled_are_named_and_no_run_starts(window, qtbot, demo_copy, dialogs):
    with opened(demo_copy) as project:  # every English option A recorded in an American accent is lost
        lost = project.conn.execute(
            "SELECT DISTINCT sha256, audio_format FROM clips WHERE language = 'en' AND accent = 'american' "
            "AND part = 'option_A'"
        ).fetchall()
        for sha256, audio_format in lost:
            project.audio.path_for(sha256, audio_format).unlink(missing_ok=True)
    page = evaluate_page(window, qtbot, demo_copy)
    view = page.view
    with StubServer() as server:
        server.script("POST", r"/v1/chat/completions$", Reply(200, chat_answer("A")))
        use_endpoint(view, server, "audio")
        view.grid_edits["volumes"].setText("1.5")
        view.grid_edits["languages"].setText("en")
        view.grid_edits["accents"].setText("american")
        view.limit_edit.setText("2")
        qtbot.mouseClick(view.prepare_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: page.needs_assembly is not None, timeout=10_000)
        qtbot.mouseClick(view.start_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: "Still not assembled" in view.plan_text.toPlainText(), timeout=60_000)
        assert not server.requests_to("/chat/completions")  # no run was started on inputs that are not there
    plan = view.plan_text.toPlainText()
    assert plan.startswith("Assembled 0 input(s).") and "could not be built (a clip is missing or damaged)" in plan
    assert page.current is None and not page.finished_ops and not view.start_button.isEnabled()
    assert dialogs == []  # said in the plan pane, not as an error


def test_mode_and_prompt_keep_what_tells_runs_apart_and_an_empty_errors_column_gives_its_width(window, qtbot):
    """The Xvfb walk at 1280x720 showed 'si…s)' and 'ge…er' for every gender-study run: a mode is elided at its
    end (as is a progress, '4/6 · e…'), a prompt at its start ('…paper-neutral' against '…paper-open'); a simulated run's mode cell is the mode
    it simulates, its tooltip and the model and spent cells say simulated; Errors shows only once a run failed."""
    view = evaluate_page(window, qtbot).view
    lines = [
        RunLine(
            n, f"Run {n}", "simulated:gender-balanced", "audio+text-options", prompt, "finished", 72, 72, "72/72",
            "", "simulated, $0", False, False, False, True,
        )
        for n, prompt in ((1, "gender-paper-neutral"), (2, "gender-paper-open"))
    ]  # fmt: skip
    view.set_runs(lines)
    table = view.runs_table
    mode, prompt, errors = (RUN_COLUMNS.index(name) for name in ("Mode", "Prompt", "Errors"))
    assert table.itemDelegateForColumn(mode).elide == Qt.TextElideMode.ElideRight
    assert table.itemDelegateForColumn(prompt).elide == Qt.TextElideMode.ElideLeft
    progress = RUN_COLUMNS.index("Progress")  # '4/…01' in the 1280x720 walk: the count is what is kept
    assert table.itemDelegateForColumn(progress).elide == Qt.TextElideMode.ElideRight
    assert "Mode: audio+text-options (simulated)" in table.item(0, mode).toolTip()
    assert table.isColumnHidden(errors)
    view.set_runs([lines[0], dataclasses.replace(lines[1], errors="2 refused")])
    assert not table.isColumnHidden(errors) and table.item(1, errors).text() == "2 refused"


def test_a_model_name_wider_than_its_box_ends_in_an_ellipsis_with_the_whole_name_in_the_tooltip(qtbot):
    """Qt cut the chosen model mid-letter on a 1280×720 screen (*Simulated listener: steady (simulated, offl*):
    the text now ends in '…' where the box is too narrow, and the tooltip gives all of it, before the box's own
    tooltip; a name that fits is drawn whole."""
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QToolTip

    from spokenbench.widgets.elided import ElidedComboBox

    box = ElidedComboBox()
    whole = "Simulated listener: steady (simulated, offline, no model is asked)"
    box.addItems([whole, "text"])
    qtbot.addWidget(box)
    box.setFixedWidth(220)
    box.show()
    qtbot.waitExposed(box)
    box.grab()  # painted as on the screen
    assert box.elided
    middle = box.rect().center()
    QApplication.sendEvent(box, QHelpEvent(QEvent.Type.ToolTip, middle, box.mapToGlobal(middle)))
    assert QToolTip.text() == whole
    QToolTip.hideText()
    box.setToolTip("The sound server has not answered yet.")  # a tooltip of its own comes after the whole text
    QApplication.sendEvent(box, QHelpEvent(QEvent.Type.ToolTip, middle, box.mapToGlobal(middle)))
    assert QToolTip.text() == f"{whole}\nThe sound server has not answered yet."
    QToolTip.hideText()
    box.setCurrentIndex(1)
    box.grab()
    assert not box.elided
