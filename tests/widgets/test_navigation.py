"""The Studio window's sidebar, badges, optional pages, item browser, settings and recent projects."""

import time

import pytest
from PySide6.QtCore import QSettings, Qt
from stub_server import Reply, StubServer

from spokenbench.app import main_window as main_window_module
from spokenbench.app.main_window import BadgeCounts, MainWindow, PlaceholderPage, read_badges
from spokenbench.app.settings_dialog import ANNOTATOR_KEY, SettingsDialog
from spokenbench.core.evaluation.launcher import run_rows
from spokenbench.core.evaluation.preparation import run_claim
from spokenbench.core.evaluation.store import mark_run
from spokenbench.core.jobs.registry import tracked_job
from spokenbench.core.rewriting.flagging import flagged_rewrites, review_rewrite
from spokenbench.core.store import opened
from spokenbench.core.store.summary import clip_item_id, item_detail
from spokenbench.widgets.items_table import NO_PLAYBACK, ItemsPanel


@pytest.fixture
def settings(tmp_path):
    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    settings.setValue(ANNOTATOR_KEY, "ana")
    return settings


@pytest.fixture
def window(qtbot, settings):
    w = MainWindow(audio_message="Audio is off in tests", poll_interval_s=0.1, settings=settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.shutdown()


def open_and_wait(window, qtbot, path):
    with qtbot.waitSignal(window.open_project(path).finished, timeout=10_000):
        pass
    qtbot.waitUntil(lambda: window.sidebar.text_of("items") == "Items · 84", timeout=5_000)


@pytest.mark.slow
def test_badges_show_the_demos_counts_and_follow_changes(window, qtbot, demo_copy):
    open_and_wait(window, qtbot, demo_copy)
    badges = [window.sidebar.text_of(key) for key in window.sidebar.keys()]
    assert badges == [
        "Items · 84",
        "Rewrites · 10 to review",
        "Rating · 47 left",
        "QC",
        "Speakers · 0",
        "Evaluate",  # no run running or waiting to be resumed
        "Results · 14 runs",
    ]
    with opened(demo_copy) as project:  # another connection, as a CLI run would
        entry = flagged_rewrites(project.conn)[0]
        review_rewrite(project, entry.item_id, entry.part, "accept", "someone else")
    qtbot.waitUntil(lambda: window.sidebar.text_of("rewrites") == "Rewrites · 9 to review", timeout=5_000)
    with opened(demo_copy) as project, project.transaction() as conn:
        mark_run(conn, run_rows(project.conn)[0].run_id, "failed", "a test failure")
    qtbot.waitUntil(lambda: window.sidebar.text_of("evaluate") == "Evaluate · 1 to resume", timeout=5_000)


@pytest.mark.slow
def test_the_evaluate_badge_counts_runs_running_and_runs_to_resume(demo_copy):
    with opened(demo_copy) as project:
        runs = run_rows(project.conn)
        assert runs and not any(run.status == "running" or run.resumable for run in runs)
        assert read_badges(project, "ana")["evaluate"] is None  # the demo's runs are all complete
        run_id = runs[0].run_id
        with tracked_job(demo_copy, "evaluate", "Evaluating: a test run", claim=run_claim(run_id)):
            with project.transaction() as conn:
                mark_run(conn, run_id, "running")
            assert read_badges(project, "ana")["evaluate"] == "1 running"
        # the job is gone and the run never said it ended (a killed process): it waits to be resumed
        assert read_badges(project, "ana")["evaluate"] == "1 to resume"
        with project.transaction() as conn:
            mark_run(conn, runs[1].run_id, "failed", "a test failure")
        assert read_badges(project, "ana")["evaluate"] == "2 to resume"


@pytest.mark.slow
def test_badges_are_read_again_only_when_their_tables_change(demo_copy):
    counts = BadgeCounts()
    with opened(demo_copy) as project:
        first = counts.read(project, "ana")
        assert first == read_badges(project, "ana") and set(counts.reads.values()) == {1}
        assert counts.read(project, "ana") == first and set(counts.reads.values()) == {1}  # nothing changed
        with project.transaction() as conn:
            mark_run(conn, run_rows(project.conn)[1].run_id, "failed", "a test failure")
        assert counts.read(project, "ana")["evaluate"] == "1 to resume"
        assert counts.reads == {"items": 1, "rewrites": 1, "rating": 1, "speakers": 1, "evaluate": 2, "results": 2}
        counts.read(project, "ben")  # another annotator: only the rating queues are counted again
        assert counts.reads["rating"] == 2 and counts.reads["items"] == 1 and counts.reads["evaluate"] == 2


@pytest.mark.slow
def test_a_running_run_is_not_read_again_until_its_job_ends(demo_copy):
    """While a run runs, badge refreshes re-read nothing (its counters and the live claims are unchanged); when its
    process is gone without a word, the live claims change and the run is counted as waiting to be resumed."""
    counts = BadgeCounts()
    with opened(demo_copy) as project:
        run_id = run_rows(project.conn)[0].run_id
        with tracked_job(demo_copy, "evaluate", "Evaluating: a test run", claim=run_claim(run_id)):
            with project.transaction() as conn:
                mark_run(conn, run_id, "running")
            assert counts.read(project, "ana")["evaluate"] == "1 running"
            reads = counts.reads["evaluate"]
            for _ in range(3):
                assert counts.read(project, "ana")["evaluate"] == "1 running"
            assert counts.reads["evaluate"] == reads
        assert counts.read(project, "ana")["evaluate"] == "1 to resume"
        assert counts.reads["evaluate"] == reads + 1


@pytest.mark.slow
def test_sidebar_switches_pages_and_each_page_is_real(window, qtbot, built_demo):
    open_and_wait(window, qtbot, built_demo)
    window.sidebar.select("rewrites")
    assert window.page_stack.currentWidget() is window.rewrite_page
    pages = {"rating": "RatingPage", "qc": "QcDashboardPage", "speakers": "SpeakersPage"}
    pages |= {"evaluate": "EvaluatePage", "results": "ResultsPage"}
    for key, page_class in pages.items():
        window.sidebar.select(key)
        page = window.page_stack.currentWidget()
        assert type(page).__name__ == page_class and not isinstance(page, PlaceholderPage)
    window.sidebar.select("items")
    assert window.page_stack.currentWidget() is window.items_panel


@pytest.mark.slow
def test_a_page_that_cannot_be_imported_becomes_a_placeholder(window, qtbot, built_demo, monkeypatch):
    monkeypatch.setitem(
        main_window_module.OPTIONAL_PAGES, "rating", ("spokenbench.app.no_such_page", "RatingPage", "the rating screen")
    )
    open_and_wait(window, qtbot, built_demo)
    window.sidebar.select("rating")
    assert "Opening the rating screen" in window.page_stack.currentWidget().message.text()  # imported on a thread
    qtbot.waitUntil(lambda: not window.page_opening("rating"), timeout=10_000)
    page = window.page_stack.currentWidget()
    assert isinstance(page, PlaceholderPage)
    assert "could not be loaded" in page.message.text() and "no_such_page" in page.message.text()
    window.sidebar.select("items")
    window.sidebar.select("rating")  # asking again neither crashes nor stacks placeholders
    qtbot.waitUntil(lambda: not window.page_opening("rating"), timeout=10_000)
    assert window.page_stack.currentWidget() is window.page_widgets["rating"]
    assert "could not be loaded" in window.page_widgets["rating"].message.text()
    assert window.page_stack.count() == len(main_window_module.PAGES)


@pytest.mark.slow
def test_item_filters_and_the_detail_with_clips(window, qtbot, built_demo):
    open_and_wait(window, qtbot, built_demo)
    panel = window.items_panel
    panel.set_filter("language", "ko")
    panel.set_filter("cultural label", "CA")
    assert 0 < panel.model.rowCount() < 24
    assert all(
        panel.model.row_at(r)[2] == "ko" and panel.model.row_at(r)[9] == "CA" for r in range(panel.model.rowCount())
    )
    panel.set_filter("cultural label", "")
    panel.set_filter("status", "flagged")
    flagged_ko = panel.model.rowCount()
    assert flagged_ko >= 1 and all(panel.model.row_at(r)[11] == "flagged" for r in range(flagged_ko))
    panel.set_filter("language", "")
    panel.set_filter("status", "")
    assert panel.model.rowCount() == 84
    subjects = [panel.filter_boxes["subject"].itemText(i) for i in range(1, panel.filter_boxes["subject"].count())]
    panel.set_filter("subject", subjects[0])
    assert all(panel.model.row_at(r)[8] == subjects[0] for r in range(panel.model.rowCount()))
    panel.set_filter("subject", "")

    assert panel.select_item(49)
    qtbot.waitUntil(lambda: len(panel.detail.play_buttons) == 10, timeout=5_000)
    assert panel.detail.tabs.tabText(1) == "Clips (10)" and panel.detail.tabs.tabText(3) == "Responses (24)"
    panel.detail.play_buttons[0].click()
    assert "Audio is off" in panel.detail.audio_note.text()


@pytest.mark.slow
def test_the_category_filter_keeps_the_items_of_one_category(window, qtbot, built_demo):
    open_and_wait(window, qtbot, built_demo)
    panel = window.items_panel
    box = panel.filter_boxes["category"]
    categories = [box.itemText(i) for i in range(1, box.count())]
    rows = [panel.model.row_at(r) for r in range(panel.model.rowCount())]
    assert categories == sorted({row[10] for row in rows} - {""}) and categories  # the demo's gender probes
    for category in categories:
        panel.set_filter("category", category)
        assert box.currentText() == category
        shown = [panel.model.row_at(r) for r in range(panel.model.rowCount())]
        assert len(shown) == sum(row[10] == category for row in rows) and all(r[10] == category for r in shown)
    panel.set_filter("language", "ko")  # with another filter: both apply
    assert all(panel.model.row_at(r)[2] == "ko" for r in range(panel.model.rowCount()))
    assert panel.model.rowCount() == sum(row[10] == categories[-1] and row[2] == "ko" for row in rows)
    panel.set_filter("category", "")
    panel.set_filter("language", "")
    assert panel.model.rowCount() == 84


def test_the_category_filter_on_rows_of_two_categories(qtbot):
    rows = [
        (i, f"s{i}", ("en", "ko")[i % 2], "gender-probe", "", "A", f"q{i}", ("A. a", "B. b"), "", "", cat, "")
        for i, cat in enumerate(["occupation", "trait", "occupation", "", "trait", "occupation"])
    ]
    panel = ItemsPanel()
    qtbot.addWidget(panel)
    panel.set_rows(rows)
    box = panel.filter_boxes["category"]
    assert [box.itemText(i) for i in range(box.count())] == ["All categories", "occupation", "trait"]
    panel.set_filter("category", "occupation")
    assert [panel.model.row_at(r)[0] for r in range(panel.model.rowCount())] == [0, 2, 5]
    panel.set_filter("language", "ko")
    assert [panel.model.row_at(r)[0] for r in range(panel.model.rowCount())] == [5]
    panel.set_rows(rows[:5])  # refreshed rows keep the chosen category
    assert box.currentText() == "occupation" and panel.model.rowCount() == 0


@pytest.mark.slow
def test_the_item_detail_shows_the_demos_transcripts_wer_and_ratings(window, qtbot, built_demo):
    with opened(built_demo) as project:
        rated = project.conn.execute(
            "SELECT r.clip_id, r.annotator, r.rating FROM ratings r WHERE r.undone_at IS NULL ORDER BY r.id"
        ).fetchall()
        clip_id = rated[0][0]
        item_id = clip_item_id(project.conn, clip_id)
        detail_data = item_detail(project.conn, item_id)
    open_and_wait(window, qtbot, built_demo)
    panel = window.items_panel
    assert panel.reveal_item(item_id)
    detail = panel.detail
    qtbot.waitUntil(lambda: clip_id in detail.clip_ids, timeout=5_000)
    row = detail.clip_ids.index(clip_id)
    headers = [detail.clips.horizontalHeaderItem(c).text() for c in range(detail.clips.columnCount())]
    wer = detail.clips.item(row, headers.index("WER")).text()
    heard = detail.clips.item(row, headers.index("Transcripts")).text()
    clip = next(c for c in detail_data["clips"] if c["id"] == clip_id)
    assert clip["error_rate"] is not None and wer == f"{clip['metric'].upper()} {clip['error_rate']:.2f}"
    assert "simulated-asr-a: " in heard and "simulated-asr-b: " in heard
    assert heard == "\n".join(f"{t['asr']}: {t['text']}" for t in clip["transcripts"])  # a line per system
    assert detail.clips.rowHeight(row) > detail.clips.fontMetrics().height() * 1.5  # both lines in view
    shown = [tuple(detail.ratings.item(r, c).text() for c in (1, 2)) for r in range(detail.ratings.rowCount())]
    assert shown == [(r["annotator"], r["rating"]) for r in detail_data["ratings"]]
    assert (rated[0][1], rated[0][2]) in shown and detail.tabs.tabText(2) == f"Ratings ({len(shown)})"


@pytest.mark.slow
def test_without_audio_the_play_buttons_are_disabled_and_say_why(window, qtbot, built_demo):
    open_and_wait(window, qtbot, built_demo)  # the window is made with audio off
    assert window.items_panel.select_item(1)
    detail = window.items_panel.detail
    qtbot.waitUntil(lambda: len(detail.play_buttons) > 0, timeout=5_000)
    assert all(not button.isEnabled() for button in detail.play_buttons)
    assert all(button.toolTip() == NO_PLAYBACK for button in detail.play_buttons)
    assert detail.audio_note.text() == NO_PLAYBACK


@pytest.mark.slow
def test_filtering_twenty_thousand_items_is_quick(qtbot):
    rows = [
        (i, f"s{i}", ("en", "ko", "zh")[i % 3], "mcq", ("CS", "CA")[i % 2], "A", f"question {i} about topic {i % 97}",
         ("A. one", "B. two"), f"subject-{i % 57}", ("CS", "CA")[i % 2], "", ("flagged", "reviewed")[i % 5 == 0])
        for i in range(20_000)
    ]  # fmt: skip
    panel = ItemsPanel()
    qtbot.addWidget(panel)
    panel.resize(1000, 600)
    panel.show()
    started = time.perf_counter()
    panel.set_rows(rows)
    loading = time.perf_counter() - started
    timings = []
    for name, value in (("language", "ko"), ("status", "reviewed"), ("subject", "subject-7")):
        started = time.perf_counter()
        panel.set_filter(name, value)
        timings.append(time.perf_counter() - started)
    started = time.perf_counter()
    panel.search.setText("topic 42")
    timings.append(time.perf_counter() - started)
    print(
        f"20,000 items: shown in {loading * 1000:.0f} ms; filtered in {', '.join(f'{t * 1000:.1f} ms' for t in timings)}"
    )
    assert panel.model.rowCount() == sum(
        1 for r in rows if r[2] == "ko" and r[11] == "reviewed" and r[8] == "subject-7" and "topic 42" in r[6]
    )
    assert max(timings) < 0.5 and loading < 2.0  # measured ~3 ms and ~35 ms; generous for slow CI machines


@pytest.mark.slow
def test_settings_store_the_annotator_name_and_never_show_a_key(qtbot, runner, tmp_path, monkeypatch):
    import keyring

    stored = {}
    monkeypatch.setattr(
        keyring, "set_password", lambda service, name, value: stored.__setitem__((service, name), value)
    )
    monkeypatch.setattr(keyring, "get_password", lambda service, name: stored.get((service, name)))
    for variable in ("OPENAI_API_KEY", "GEMINI_API_KEY", "NVIDIA_API_KEY", "MISTRAL_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    with StubServer() as stub:
        stub.script("GET", r"/v1/models$", Reply(200, {"data": [{"id": "m1"}, {"id": "m2"}]}), Reply(401, {}))
        stub.script(
            "GET",
            r"/v1(beta)?/models\?pageSize=",  # the SDK's API version: v1 in google-genai 3.x, v1beta in 2.x
            Reply(200, {"models": [{"name": "models/gemini-2.5-flash"}]}),
            Reply(400, {"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}),
        )
        urls = {"openai": stub.url + "/v1", "gemini": stub.url}
        dialog = SettingsDialog(settings, runner, test_base_urls=urls)
        qtbot.addWidget(dialog)
        qtbot.waitUntil(lambda: dialog.key_status["openai"].text() == "not set", timeout=5_000)
        dialog.key_edits["openai"].setText("sk-secret-value")
        dialog.save_key("openai")
        assert dialog.key_edits["openai"].text() == ""
        qtbot.waitUntil(lambda: dialog.key_status["openai"].text() == "set", timeout=5_000)
        assert stored == {("spokenbench", "OPENAI_API_KEY"): "sk-secret-value"}
        assert all("sk-secret" not in label.text() for label in dialog.findChildren(type(dialog.key_status["openai"])))

        dialog.test_key("openai")
        qtbot.waitUntil(lambda: "key accepted" in dialog.test_results["openai"].text(), timeout=5_000)
        assert "2 models" in dialog.test_results["openai"].text()
        assert stub.requests_to("/models")[0].headers["authorization"] == "Bearer sk-secret-value"
        dialog.test_key("openai")
        qtbot.waitUntil(lambda: "rejected" in dialog.test_results["openai"].text(), timeout=5_000)
        dialog.key_edits["gemini"].setText("gm-typed-key")  # tested before it is saved
        dialog.test_key("gemini")
        qtbot.waitUntil(lambda: "key accepted" in dialog.test_results["gemini"].text(), timeout=10_000)
        assert stub.requests_to("pageSize")[0].headers["x-goog-api-key"] == "gm-typed-key"
        dialog.test_key("gemini")
        qtbot.waitUntil(lambda: "rejected" in dialog.test_results["gemini"].text(), timeout=10_000)
        assert "API key not valid" in dialog.test_results["gemini"].text()

        dialog.annotator_edit.setText("  Ana Ruiz ")
        dialog.accept()
    assert QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat).value(ANNOTATOR_KEY) == "Ana Ruiz"


@pytest.mark.slow
def test_opened_projects_are_listed_under_open_recent(window, qtbot, built_demo, settings):
    open_and_wait(window, qtbot, built_demo)
    assert window.recent_projects() == [str(built_demo)]
    window._fill_recent_menu()
    assert [action.text() for action in window.recent_menu.actions()][0] == str(built_demo)


@pytest.mark.slow
def test_sorting_keeps_the_filter_and_the_rating_page_gets_the_annotator(window, qtbot, built_demo):
    open_and_wait(window, qtbot, built_demo)
    panel = window.items_panel
    panel.set_filter("language", "zh")
    panel.table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
    ids = [panel.model.row_at(r)[1] for r in range(panel.model.rowCount())]
    assert len(ids) == 24 and ids == sorted(ids, reverse=True)
    assert window.annotator == "ana"


@pytest.mark.slow
def test_play_hands_the_clips_audio_file_to_the_player(qtbot, settings, built_demo):
    w = MainWindow(audio_message=None, poll_interval_s=0.1, settings=settings)
    qtbot.addWidget(w)
    played = []
    named = []
    w.play_file = lambda path, what=None: played.append(path) or named.append(what)  # the real one starts Qt Multimedia
    try:
        open_and_wait(w, qtbot, built_demo)
        assert w.items_panel.select_item(1)
        qtbot.waitUntil(lambda: len(w.items_panel.detail.play_buttons) > 0, timeout=5_000)
        assert w.items_panel.detail.play_buttons[0].isEnabled()
        assert w.items_panel.detail.play_buttons[0].toolTip().startswith("Play clip ")
        w.items_panel.detail.play_buttons[0].click()
        [path] = played
        assert path.is_file() and path.suffix == ".flac" and path.is_relative_to(built_demo / "audio")
        assert named == [f"clip {w.items_panel.detail.clip_ids[0]}"]  # messages name the clip, not its file
        assert w.items_panel.detail.audio_note.text() == f"Playing {named[0]}…"
    finally:
        w.shutdown()


@pytest.mark.slow
def test_a_shorter_list_replacing_a_selected_row_keeps_the_panel_working(qtbot):
    """Opening a smaller project (a pack) while a row far down is selected: the panel remembers the selection
    from the old rows, not from a mix of old and new."""
    row = ("en", "mcq", "CS", "A", "q", ("A. one", "B. two"), "subject", "CS", "", "flagged")
    panel = ItemsPanel()
    qtbot.addWidget(panel)
    panel.set_rows([(i, f"s{i}", *row) for i in range(50)])
    assert panel.select_item(40)
    panel.set_rows([(i, f"s{i}", *row) for i in range(1000, 1003)])  # raised IndexError inside Qt before
    assert panel.model.rowCount() == 3 and panel.selected_item_id() is None
    panel.set_rows([(i, f"s{i}", *row) for i in range(50)])
    assert panel.select_item(2) and panel.selected_item_id() == 2
