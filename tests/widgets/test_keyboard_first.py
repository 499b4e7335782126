"""Keyboard-first, end to end (issue 22 items 2-4 and 9): the rating session keeps the keys after a page switch,
Enter opens what a list leads to, a focus ring follows Tab, Esc closes the key help, the tour and dialogs, the
tour's Alt+N works to its end, short reads stay out of the jobs panel, and the QC notes column is on screen. Every
check presses keys on the real widgets."""

import time

import pytest
from PySide6.QtCore import QPoint, QRect, QSettings, Qt
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QGroupBox,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from spokenbench.app.keyboard import FocusRing, install
from spokenbench.app.settings_dialog import ANNOTATOR_KEY
from spokenbench.core.demo.tour import TOUR
from spokenbench.core.evaluation.preparation import claimed_run, run_claim
from spokenbench.core.qc import store as qc_store
from spokenbench.core.store import opened
from spokenbench.widgets.jobs_panel import JobRow, JobsPanel
from spokenbench.widgets.qc_tables import QcTable, QcTableSection

ANNOTATOR = "ana"


@pytest.fixture
def settings(tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue(ANNOTATOR_KEY, ANNOTATOR)
    return settings


@pytest.fixture
def window(shown_window, settings):
    return shown_window(settings)


def open_project(window, qtbot, path):
    with qtbot.waitSignal(window.open_project(path).finished, timeout=20_000):
        pass


def focused():
    return QApplication.focusWidget()


def press(qtbot, key, modifier=Qt.KeyboardModifier.NoModifier):
    """A key pressed wherever the keyboard is, as a user would."""
    qtbot.keyClick(focused(), key, modifier)


@pytest.mark.slow
def test_ctrl_6_then_ctrl_3_or_the_tour_closing_gives_the_session_the_keys_and_esc_closes_help_then_leaves(
    window, qtbot, demo_copy
):
    open_project(window, qtbot, demo_copy)
    window.show_page("rating")
    rating = window.page_widgets["rating"]
    qtbot.waitUntil(lambda: rating.queue_list.table.rowCount() > 0, timeout=15_000)
    rating.open_queue("demo-qc")
    qtbot.waitUntil(lambda: rating.rating is not None and rating.idle, timeout=15_000)
    window.sidebar.setFocus()  # as after a click on the sidebar
    press(qtbot, Qt.Key.Key_6, Qt.KeyboardModifier.ControlModifier)
    assert window.current_page_key() == "evaluate"
    press(qtbot, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    assert window.current_page_key() == "rating" and focused() is rating.view
    before = rating.rating.progress.done
    press(qtbot, Qt.Key.Key_1)  # rates at once: no click on the waveform first
    qtbot.waitUntil(lambda: rating.idle and rating.rating.progress.done == before + 1, timeout=10_000)
    with opened(demo_copy) as project:
        assert len(qc_store.live_ratings_by(project.conn, ANNOTATOR)) == before + 1
    window.settings.setValue("tour/state", "")  # as never shown

    press(qtbot, Qt.Key.Key_F1)  # the tour, from the session: it shows Results; Esc brings the session back
    assert window.tour.is_open() and window.current_page_key() == "results"
    press(qtbot, Qt.Key.Key_Escape)
    assert not window.tour.is_open() and window.current_page_key() == "rating" and focused() is rating.view
    press(qtbot, Qt.Key.Key_2)
    qtbot.waitUntil(lambda: rating.idle and rating.rating.progress.done == before + 2, timeout=10_000)

    press(qtbot, "?")
    assert rating.view.help_overlay.isVisible()
    assert "Esc" in rating.view.help_overlay.text() and "Ctrl+1" in rating.view.help_overlay.text()
    press(qtbot, Qt.Key.Key_Escape)
    assert not rating.view.help_overlay.isVisible() and rating.stack.currentWidget() is rating.view
    press(qtbot, Qt.Key.Key_N)  # the note dialog: Esc closes it, nothing saved
    qtbot.waitUntil(lambda: getattr(rating, "note_dialog", None) is not None and rating.note_dialog.isVisible())
    qtbot.keyClick(rating.note_dialog, Qt.Key.Key_Escape)
    assert not rating.note_dialog.isVisible()
    rating.view.setFocus()
    press(qtbot, Qt.Key.Key_Escape)  # no help open: back to the queue list, the keys with it
    assert rating.stack.currentWidget() is rating.queue_list
    assert focused() is rating.queue_list.table


@pytest.mark.slow
def test_every_annotator_action_shows_its_key_in_its_tooltip_and_in_the_help(qtbot):
    from spokenbench.widgets.rating_view import ACTION_LABELS, RatingView

    view = RatingView()
    qtbot.addWidget(view)
    for action, button in view.buttons.items():
        keys = view.keymap[action]
        assert all(key in button.toolTip() for key in keys), action
        assert all(key in view.help_overlay.text() for key in keys), action
        assert ACTION_LABELS[action] in view.help_overlay.text()
    assert "Esc" in view.back_button.toolTip() and "Esc" in view.back_button.text()


@pytest.mark.slow
def test_sidebar_arrows_keep_the_keys_and_enter_hands_them_to_the_page(window, qtbot, built_demo):
    open_project(window, qtbot, built_demo)
    window.sidebar.setFocus()
    window.sidebar.select("items")
    qtbot.keyClick(window.sidebar, Qt.Key.Key_Down)
    assert window.current_page_key() == "rewrites" and focused() is window.sidebar
    qtbot.keyClick(window.sidebar, Qt.Key.Key_Up)
    assert window.current_page_key() == "items" and focused() is window.sidebar
    assert [window.sidebar.item(row).toolTip() for row in (0, 2)] == ["Items (Ctrl+1)", "Rating (Ctrl+3)"]
    assert "Ctrl+J" in window.jobs_button.toolTip()
    qtbot.keyClick(window.sidebar, Qt.Key.Key_Return)
    assert focused() is window.items_panel.table  # ↓ and Enter browse and open the items from here
    qtbot.keyClick(window.items_panel.table, Qt.Key.Key_Backtab)  # back to the search field (Shift+Tab)
    for _ in range(5):
        if focused() is window.items_panel.search:
            break
        press(qtbot, Qt.Key.Key_Backtab)
    assert focused() is window.items_panel.search  # the keys left in the search field come back there
    press(qtbot, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    press(qtbot, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert focused() is window.items_panel.search


def test_a_focus_ring_follows_tab_and_enter_presses_the_focused_button(qtbot):
    install(QApplication.instance())
    host = QWidget()
    qtbot.addWidget(host)
    first, second = QPushButton("First"), QPushButton("Second")
    layout = QVBoxLayout(host)
    layout.addWidget(first)
    layout.addWidget(second)
    clicked = []
    second.clicked.connect(lambda: clicked.append("second"))
    host.show()
    host.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is host)
    first.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.keyClick(first, Qt.Key.Key_Tab)
    assert focused() is second
    ring = QApplication.instance().findChild(FocusRing) or next(
        w for w in QApplication.allWidgets() if isinstance(w, FocusRing)
    )
    assert ring.widget() is second and ring.isVisible()
    ring_rect = QRect(ring.mapTo(host, QPoint(0, 0)), ring.size())
    button_rect = QRect(second.mapTo(host, QPoint(0, 0)), second.size())
    assert ring_rect.contains(button_rect) and ring_rect != button_rect  # drawn just outside the button
    qtbot.keyClick(second, Qt.Key.Key_Return)
    assert clicked == ["second"]


def test_esc_closes_the_settings_dialog(qtbot, runner, settings):
    from spokenbench.app.settings_dialog import SettingsDialog

    dialog = SettingsDialog(settings, runner)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    assert not dialog.isVisible()


@pytest.mark.slow
def test_alt_n_ends_the_tour_on_its_last_step_and_esc_anywhere_closes_it(window, qtbot, settings, built_demo):
    open_project(window, qtbot, built_demo)
    tour = window.tour
    tour.start(len(TOUR) - 1)
    assert tour.panel.next_button.shortcut().toString() == "Alt+N"
    press(qtbot, Qt.Key.Key_N, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: not tour.is_open(), timeout=2_000)  # a mnemonic clicks after a short animation
    assert window.settings.value("tour/state") == "finished"
    tour.start(2)
    window.show_page("items")  # the keys on a page, not in the tour's panel
    assert window.items_panel.isAncestorOf(focused())
    press(qtbot, Qt.Key.Key_Escape)
    assert not tour.is_open() and window.settings.value("tour/state") == "skipped"


def test_tour_steps_never_quote_published_numbers_as_on_screen_when_the_layer_is_off():
    import re

    for step in TOUR:
        if step.published:
            continue
        for paragraph in step.text.split("\n\n"):
            if re.search(r"Table \d", paragraph):
                assert "published" in paragraph.lower(), (step.key, paragraph[:80])


@pytest.mark.slow
def test_enter_opens_the_item_and_plays_the_clip_and_opens_a_run_from_evaluate(window, qtbot, built_demo, monkeypatch):
    open_project(window, qtbot, built_demo)
    panel = window.items_panel
    qtbot.waitUntil(lambda: panel.model.rowCount() > 0, timeout=10_000)
    panel.table.setFocus()
    panel.table.selectRow(0)
    qtbot.waitUntil(lambda: bool(panel.detail.clip_ids), timeout=10_000)
    panel.detail.tabs.setCurrentWidget(panel.detail.clips)
    qtbot.keyClick(panel.table, Qt.Key.Key_Return)
    assert focused() is panel.detail.clips and panel.detail.clips.currentRow() == 0
    played = []
    button = panel.detail.play_buttons[0]
    button.setEnabled(True)  # audio is off in tests: listen for the click the row's Enter gives
    button.clicked.connect(lambda: played.append(0))
    qtbot.keyClick(panel.detail.clips, Qt.Key.Key_Return)
    assert played == [0]

    window.show_page("evaluate")
    view = window.page_widgets["evaluate"].view
    qtbot.waitUntil(lambda: view.runs_table.rowCount() > 0, timeout=15_000)
    view.runs_table.setFocus()
    view.runs_table.selectRow(0)
    run_id = view.selected_run_id()
    qtbot.keyClick(view.runs_table, Qt.Key.Key_Enter)
    assert window.current_page_key() == "results"
    assert window.page_widgets["results"].selected_runs == {run_id}

    window.jobs_dock.show()  # a job on that run in the jobs panel: Enter on its card shows the run's progress
    window.jobs.refresh = lambda: None  # these rows only, not the project's own jobs
    window.jobs_panel.set_rows([JobRow(key="job:1", title="Evaluating", run_id=run_id)])
    card = window.jobs_panel.cards["job:1"]
    card.setFocus()
    qtbot.keyClick(card, Qt.Key.Key_Return)
    assert window.current_page_key() == "evaluate" and view.selected_run_id() == run_id


def test_enter_on_a_disagreement_opens_its_clip_and_the_notes_column_is_on_screen(qtbot):
    section = QcTableSection("rating_disagreements")
    qtbot.addWidget(section)
    note = "ana: the speaker swallows the last option, and the accent label says seoul but it sounds like busan"
    columns = ["clip_id", "item", "part", "language", "accent", "voice", "ratings", "notes"]
    row = {
        "clip_id": 17,
        "item": "gmmlu-ko-0042-with-a-long-identifier",
        "part": "question",
        "language": "ko",
        "accent": "gyeongsang",
        "voice": "ko-KR-Neural2-C",
        "ratings": "ana: correct, bo: incorrect",
        "notes": note,
    }
    section.set_table(QcTable("rating_disagreements", "Disagreements", "", columns, [row], clip_column="clip_id"))
    section.resize(1000, 400)  # filled while hidden (as a tab not shown yet), then shown
    section.show()
    qtbot.waitExposed(section)
    table = section.table
    assert table.columnWidth(0) >= 90 and table.columnWidth(2) >= 90  # short columns keep their room
    right_edge = table.horizontalHeader().sectionViewportPosition(len(columns) - 1) + table.columnWidth(
        len(columns) - 1
    )
    assert right_edge <= table.viewport().width()  # the notes are on screen, cut with '…' if they must be
    assert table.item(0, len(columns) - 1).toolTip() == note
    opened_clips = []
    section.row_activated.connect(opened_clips.append)
    table.setFocus()
    table.selectRow(0)
    qtbot.keyClick(table, Qt.Key.Key_Return)
    assert opened_clips == [17]


@pytest.mark.slow
def test_short_reads_stay_out_of_the_jobs_panel_and_long_ones_show(qtbot, project):
    from spokenbench.app.main_window import MainWindow
    from spokenbench.app.operations import QueryOp

    window = MainWindow(poll_interval_s=0.2)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.open_project(project.path).finished, timeout=10_000):
        pass
    titles = []
    window.jobs.runner.started.connect(lambda op: None)
    panel = window.jobs_panel
    original = panel.set_rows
    panel.set_rows = lambda rows: (titles.extend(row.title for row in rows), original(rows))[1]
    short = QueryOp(window.session, lambda p, progress: time.sleep(0.3), label="Spectrogram", parent=window).run()
    qtbot.waitUntil(lambda: not short.is_running, timeout=5_000)
    window.jobs.refresh()
    assert "Spectrogram" not in titles and "Jobs ·" not in window.jobs_button.text()
    long = QueryOp(window.session, lambda p, progress: time.sleep(1.6), label="A long read", parent=window).run()
    qtbot.waitUntil(lambda: "A long read" in titles, timeout=5_000)
    qtbot.waitUntil(lambda: not long.is_running, timeout=5_000)
    window.shutdown()


def test_enter_on_a_job_card_opens_its_run_and_only_a_run_job_opens(qtbot):
    assert claimed_run(run_claim(7)) == 7 and claimed_run("batch:3") is None and claimed_run(None) is None
    assert claimed_run("run:x") is None
    panel = JobsPanel()
    qtbot.addWidget(panel)
    panel.set_rows([JobRow(key="job:1", title="Evaluating", run_id=7), JobRow(key="job:2", title="Importing")])
    panel.show()
    opened_runs = []
    panel.runOpened.connect(opened_runs.append)
    for key in ("job:2", "job:1"):
        qtbot.keyClick(panel.cards[key], Qt.Key.Key_Return)
    assert opened_runs == [7]
    assert "Enter" in panel.cards["job:1"].toolTip() and "Enter" not in panel.cards["job:2"].toolTip()


def test_ctrl_j_puts_the_keys_in_the_jobs_panel_and_esc_closes_it_and_gives_them_back_to_the_page(window, qtbot):
    """Ctrl+J opens the jobs panel with the keyboard in it; Esc there, or on its status-bar button, closes it and the
    page has the keys again. Esc on a page leaves the panel open (it is not the panel's key there). The Xvfb walk
    pressed Ctrl+J then Esc and the panel stayed: the keys had stayed on the page."""
    window.focus_page()
    page_focus = focused()
    assert page_focus is not None and not window.jobs_dock.isAncestorOf(page_focus)
    press(qtbot, Qt.Key.Key_J, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(window.jobs_dock.isVisible, timeout=2_000)
    qtbot.waitUntil(lambda: focused() is not None and window.jobs_dock.isAncestorOf(focused()), timeout=2_000)
    press(qtbot, Qt.Key.Key_Escape)
    qtbot.waitUntil(window.jobs_dock.isHidden, timeout=2_000)
    assert window.page_stack.currentWidget().isAncestorOf(focused())

    press(qtbot, Qt.Key.Key_J, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(window.jobs_dock.isVisible, timeout=2_000)
    window.focus_page()
    press(qtbot, Qt.Key.Key_Escape)
    assert window.jobs_dock.isVisible(), "Esc on the page closed the jobs panel"

    window.jobs_button.setFocus()
    qtbot.waitUntil(lambda: focused() is window.jobs_button, timeout=2_000)
    press(qtbot, Qt.Key.Key_Escape)
    qtbot.waitUntil(window.jobs_dock.isHidden, timeout=2_000)
    assert window.page_stack.currentWidget().isAncestorOf(focused())


def tab_stops(qtbot, first, most: int = 60) -> list:
    """The widgets Tab goes to from `first` until it comes back to it (or `most` presses)."""
    stops = [first]
    for _ in range(most):
        press(qtbot, Qt.Key.Key_Tab)
        if focused() is first:
            return stops
        stops.append(focused())
    raise AssertionError(f"Tab never came back to {first!r} in {most} presses: {stops[-5:]}")


def said(widget) -> str:
    """The name a screen reader is given for a widget, from where Qt's accessibility takes it: the accessible name,
    else a label whose buddy it is (a form's), else the group box around it, else its own text. (Not asked of
    QAccessible from Python: see tests/widgets/test_screen_reader.py `said`.)"""
    labels = (label.text() for label in widget.window().findChildren(QLabel) if label.buddy() is widget)
    group = widget.parentWidget().title() if isinstance(widget.parentWidget(), QGroupBox) else ""
    own = widget.currentText() if isinstance(widget, QComboBox) else getattr(widget, "text", str)()
    return widget.accessibleName() or next(labels, "") or group or own


@pytest.mark.slow
def test_tab_goes_round_evaluate_and_results_with_every_stop_named_none_silent_and_no_trap(window, qtbot, built_demo):
    """Before, Ctrl+6 gave the keys to the scroll area around Evaluate's form (a stop a screen reader said nothing
    of), the Results page's figure area was another such stop, and Tab in the panel's table went from cell to cell
    (336 presses through the demo's first table) instead of leaving it: Tab never came round."""
    open_project(window, qtbot, built_demo)
    window.show_page("evaluate")
    view = window.page_widgets["evaluate"].view
    qtbot.waitUntil(lambda: focused() is view.model_box, timeout=15_000)
    for stop in tab_stops(qtbot, view.model_box):
        assert not isinstance(stop, QScrollArea), f"a silent stop on {stop!r}"
        assert said(stop), f"a stop without a name: {stop!r}"

    window.show_page("results")
    results = window.page_widgets["results"]
    qtbot.waitUntil(lambda: results.panels is not None and focused() is results.run_list, timeout=60_000)
    results.view.finish_drawing()
    stops = tab_stops(qtbot, results.run_list)
    assert results.view.canvas in stops and results.view.table in stops and len(stops) <= 20, stops
    for stop in stops:
        assert not isinstance(stop, QScrollArea), f"a silent stop on {stop!r}"
        assert said(stop), f"a stop without a name: {stop!r}"
    assert said(results.run_list) == "Runs" and said(results.panel_list) == "Panels"
    assert said(results.view.table).startswith("yours (simulated) — Accuracy by level")


def test_an_item_s_question_and_options_and_the_evaluate_plan_read_by_line(window, qtbot, built_demo):
    """Under Orca, Tab to the item's question and options said *Item details label*, and ↓ nothing (a text
    browser, reported as static text); the Evaluate page's plan scrolled in silence (no caret). Heard in
    tests/widgets/test_real_screen_reader.py."""
    open_project(window, qtbot, built_demo)
    panel = window.items_panel
    qtbot.waitUntil(lambda: panel.detail.header.toPlainText().startswith("demo/"), timeout=10_000)
    header = panel.detail.header
    question = panel.model.row_at(panel.table.currentIndex().row())[6]
    header.setFocus()
    qtbot.waitUntil(header.hasFocus, timeout=2_000)
    for _ in range(3):  # ↓ moves a line on the screen: the item's first line may wrap in a narrow pane
        qtbot.keyClick(header, Qt.Key.Key_Down)
        if header.textCursor().blockNumber() > 0:
            break
    assert header.textCursor().block().text() == question  # the line ↓ reaches, which a screen reader says

    window.show_page("evaluate")
    qtbot.waitUntil(lambda: hasattr(window.page_widgets["evaluate"], "view"), timeout=10_000)
    plan = window.page_widgets["evaluate"].view.plan_text
    plan.setPlainText("24 requests\n0 cached\nEstimated cost: $0.00 (simulated)")
    plan.setFocus()
    qtbot.waitUntil(plan.hasFocus, timeout=2_000)
    qtbot.keyClick(plan, Qt.Key.Key_Down)
    assert plan.textCursor().block().text() == "0 cached"
