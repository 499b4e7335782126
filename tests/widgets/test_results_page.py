"""The Results page on the demo project (three simulated runs): every panel renders, with and without the
papers' numbers; the published toggle shows them labelled with paper and table while the user's are labelled
simulated; hovering a point shows its 95% interval and clicking one lists its questions and answers with their
audio; figures export as PNG, SVG and PDF and tables as CSV and LaTeX; the page follows the runs table."""

import csv
import itertools
import math
import xml.etree.ElementTree as ET

import pytest
from matplotlib.backend_bases import MouseEvent
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from spokenbench.core.evaluation.store import mark_run
from spokenbench.core.results.model import Point
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.core.store import opened
from spokenbench.widgets.metric_panels import CANVAS_HEIGHT, Hits, short_labels


@pytest.fixture
def demo(read_only_demo):
    return read_only_demo


@pytest.fixture(autouse=True)
def no_error_dialogs(dialogs):
    """No operation of the page may fail (a failure would open a dialog)."""
    yield
    assert dialogs == []


@pytest.fixture
def page(results_page):
    return results_page(1200, 980)


def figure_texts(page) -> list[str]:
    page.view.finish_drawing()  # drawn off the UI thread: the figure is read once it is done
    return [t.get_text() for t in page.view.figure.findobj(Text) if t.get_text()]


def draw(page, key, published=False, render=True):
    page.show_panel(key)
    page.view.published_toggle.setChecked(published)
    page.view.finish_drawing()
    if render:  # rasterize, as the screen would (the figure's artists exist either way)
        page.view.canvas.draw()


def mouse(page, kind, x, y):
    event = MouseEvent(kind, page.view.canvas, x, y, button=1 if kind == "button_press_event" else None)
    page.view.canvas.callbacks.process(kind, event)


@pytest.mark.slow
def test_every_panel_renders_on_the_demo_with_and_without_the_papers_numbers(page, qtbot):
    panels = page.panels
    assert len(panels.runs) == 14 and len(panels.responses) == 2016 and len(panels.probe_responses) == 516
    assert all(panels.simulated[s] for s in panels.series)
    assert "simulated" in page.summary.text()
    # the tables no figure needs (the Δ tables in the paper's layout) are completed in the background
    qtbot.waitUntil(lambda: not any(p.tables.pending() for p in panels.panels.values()), timeout=10_000)
    for key in PANEL_ORDER:
        draw(page, key, render=False)
        panel = panels.panels[key]
        texts = figure_texts(page)
        assert any("yours (simulated)" in t for t in texts), key
        assert panel.empty is None and page.view.hits.targets, key  # the demo's gender study draws its probes
        alone = len(page.view.figure.get_axes())
        assert page.view.canvas.minimumHeight() == CANVAS_HEIGHT[1]
        draw(page, key, published=True)
        assert len(page.view.figure.get_axes()) > alone, key
        assert any(t.startswith("published — ") for t in figure_texts(page)), key
        assert page.view.canvas.minimumHeight() == CANVAS_HEIGHT[2]  # room for the second row
        assert_nothing_overlaps(page.view.figure, key)
        page.view.published_toggle.blockSignals(True)  # off again without drawing: the next panel draws itself
        page.view.published_toggle.setChecked(False)
        page.view.published_toggle.blockSignals(False)


def assert_nothing_overlaps(figure, key) -> None:
    """Legends sit outside every axes and clear of the titles; upright tick labels do not run into each other."""
    renderer = figure.canvas.get_renderer()
    figures = [figure, *figure.subfigs]
    titles = [f._suptitle.get_window_extent(renderer) for f in figures if f._suptitle is not None]
    axes = [ax.get_window_extent(renderer) for ax in figure.get_axes() if ax.axison]
    assert all(ax.get_legend() is None for ax in figure.get_axes()), key  # no legend over the data
    for legend in (legend for f in figures for legend in f.legends):
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(other) for other in titles + axes), key
    for ax in figure.get_axes():
        labels = [t for t in ax.get_xticklabels() if t.get_text() and t.get_visible() and not t.get_rotation()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        assert not any(a.overlaps(b) for a, b in zip(boxes, boxes[1:])), (key, [t.get_text() for t in labels])


@pytest.mark.slow
@pytest.mark.parametrize("ratio", [1.0, 1.25, 1.5, 2.0])
def test_on_a_scaled_screen_tick_labels_still_slant_rather_than_run_into_each_other(page, ratio):
    """A laptop at 150 % (Windows' default on a 1080p 14-inch screen): the canvas draws at 100 dpi × the device
    pixel ratio, with as many more pixels, and the accent facet's seven names were left upright and ran into
    each other ("americanbeijingbritish…"), judged against pixels counted at 100 dpi."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from spokenbench.widgets.metric_panels import draw_panel

    width, height = 724, 290  # the Results canvas at 1280×720 (its logical pixels; published: twice as high)
    for key in PANEL_ORDER:
        for published in (False, True):
            figure = Figure(
                figsize=(width / 100, height * (1 + published) / 100), dpi=100 * ratio, layout="constrained"
            )
            FigureCanvasAgg(figure)
            view = page.view
            draw_panel(figure, page.panels.panels[key], view.series, view.simulated, published, view.color_order)
            figure.canvas.draw()
            assert_nothing_overlaps(figure, (key, published, ratio))


@pytest.mark.slow
def test_crowded_tick_labels_are_shortened_in_the_middle_and_kept_apart():
    assert short_labels(["simulated:steady", "simulated:accent-sensitive"]) == ["steady", "accent-sensitive"]
    assert short_labels(["openai:gpt-4o-audio-preview-2024-12-17", "qwen2-audio"]) == [
        "gpt-4o-aud…-2024-12-17",
        "qwen2-audio",
    ]
    alike = ["model-with-a-long-name-run-1", "model-with-a-long-name-run-2"]
    assert short_labels(alike) == ["model-with…-name-run-1", "model-with…-name-run-2"]
    same_ends = ["a-very-long-prefix-X-and-the-same-end", "a-very-long-prefix-Y-and-the-same-end"]
    assert short_labels(same_ends) == same_ends  # shortening would make them alike: whole


@pytest.mark.slow
def test_the_published_toggle_shows_the_papers_numbers_labelled_with_paper_and_table(page):
    draw(page, "accuracy_by_level", published=True)
    texts = figure_texts(page)
    assert "published — BiasInEar, Tables 6, 11-17, Table 18, Table 19, Table 20" in texts
    assert any(t.startswith("accent (Table 19)") for t in texts)
    assert "Gemini 2.5 Flash" in texts  # a published model in the legend
    picked = page.view.table_picker.currentText()
    assert picked.startswith("published — BiasInEar, Tables 6, 11-17")
    assert page.view.table_source.text().count("published — BiasInEar") == 1  # its source said once
    assert page.view.table.rowCount() == 212 and page.view.table.item(0, 1).text() == "Gemini 2.5 Flash"
    assert "<b>yours (simulated)</b>" in page.view.title.text()

    draw(page, "gender_probe", published=True)
    assert "published — Acoustic-based Gender Differentiation, Table 1" in figure_texts(page)
    assert "LLaMA-Omni1 8B" in figure_texts(page)

    page.show_panel("accuracy_by_level")  # each panel keeps its own toggle
    assert page.view.published_toggle.isChecked() and page.view.table_picker.currentText() == picked
    page.view.published_toggle.setChecked(False)  # back to the user's own table
    assert page.view.table_picker.currentText() == "yours (simulated) · accuracy_by_level"
    assert not any(t.startswith("published — ") for t in figure_texts(page))


@pytest.mark.slow
def test_hovering_shows_the_interval_and_clicking_lists_the_questions_and_plays_their_audio(page, qtbot, played):
    draw(page, "accuracy_by_level")
    patch, [point] = next(
        (artist, pts) for artist, pts in page.view.hits.targets if pts[0].facet == "accent" and pts[0].x == "british"
    )
    box = patch.get_window_extent()
    x, y = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
    mouse(page, "motion_notify_event", x, y)
    assert "95% CI [" in page.view.last_tooltip and "yours (simulated)" in page.view.last_tooltip
    assert f"{point.n} responses, {len(point.questions)} questions" in page.view.last_tooltip

    assert page.detail.isHidden() and page.play_bar.isHidden()  # the pane is one line until a click
    with qtbot.waitSignal(page.details_ready, timeout=10_000) as ready:
        mouse(page, "button_press_event", x, y)
    assert not page.detail.isHidden() and page.splitter.sizes()[1] >= sum(page.splitter.sizes()) // 4
    details = ready.args[0]
    assert len(details) == point.n == page.detail.rowCount()
    assert set(details["question_id"]) == set(point.questions) and set(details["accent"]) == {"british"}
    assert details["question_text"].str.len().gt(0).all() and details["raw_text"].str.startswith("Answer:").all()
    headers = [page.detail.horizontalHeaderItem(c).text() for c in range(page.detail.columnCount())]
    assert "question text" in headers and "raw answer" in headers
    assert "yours (simulated)" in page.detail_title.text()

    page.detail.selectRow(0)
    assert page.play_button.isEnabled() and "simulated run heard no audio" in page.audio_note.text()
    page.play_selected()
    assert len(played) == 1 and played[0].is_file() and str(played[0]) == details["audio_path"].iloc[0]


def test_the_keys_reach_the_figure_go_from_point_to_point_and_enter_lists_and_plays_one(page, qtbot, played):
    """Before, a point's interval and the questions and answers behind it were the mouse's alone: the figure took
    no focus and no key, and Tab in the responses below went from cell to cell instead of leaving them."""
    draw(page, "accuracy_by_level")
    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)
    canvas, view = page.view.canvas, page.view
    page.view.published_toggle.setFocus()
    for _ in range(4):  # PNG…, SVG…, PDF…, then the figure
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is canvas
    total = len(view.hits.in_order)
    assert canvas.accessibleName().startswith(f"Figure: Accuracy by level, {total} points. Arrow keys")
    qtbot.keyClick(canvas, Qt.Key.Key_Return)  # no point chosen yet: said, nothing listed
    assert canvas.accessibleName() == "No point chosen. Arrow keys go to one." and page.details is None

    # reading order: the subplots as drawn, left to right in each (the demo's three models at each language)
    languages = [point for point, _x, _y in view.hits.in_order if point.facet == "language"]
    assert [point.x for point in languages] == ["en"] * 3 + ["ko"] * 3 + ["zh"] * 3
    assert all(x0 < x1 for (_p0, x0, _y0), (_p1, x1, _y1) in itertools.pairwise(view.hits.in_order[:9]))
    qtbot.keyClick(canvas, Qt.Key.Key_Right)
    first = view.hits.in_order[0]
    assert canvas.accessibleName().startswith(f"Point 1 of {total}. {first[0].series} · language · en.")
    assert "95% CI [" in canvas.accessibleName() and canvas.mark == (*first[1:], first[0].tooltip())  # ringed
    qtbot.keyClick(canvas, Qt.Key.Key_Left)  # already on the first: stays
    assert canvas.accessibleName().startswith(f"Point 1 of {total}.")
    qtbot.keyClick(canvas, Qt.Key.Key_End)
    qtbot.keyClick(canvas, Qt.Key.Key_Up)
    point = view.hits.in_order[-2][0]
    assert canvas.accessibleName().startswith(f"Point {total - 1} of {total}. {point.series} · ")

    with qtbot.waitSignal(page.details_ready, timeout=10_000) as ready:
        qtbot.keyClick(canvas, Qt.Key.Key_Return)
    assert len(ready.args[0]) == point.n == page.detail.rowCount()
    assert QApplication.focusWidget() is page.detail  # the responses take the keys, named by their title
    assert page.detail.accessibleName().startswith(f"{point.series} · {point.facet} · {point.x}: {point.n} responses")
    qtbot.keyClick(page.detail, Qt.Key.Key_Return)  # Enter on a response plays what its model heard
    assert len(played) == 1 and str(played[0]) == ready.args[0]["audio_path"].iloc[0]
    qtbot.keyClick(page.detail, Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is page.play_button

    page.resize(1000, 980)  # drawn again at the new size: the ring follows its point
    view.finish_drawing()
    moved = next((x, y) for shown, x, y in view.hits.in_order if shown is point)
    assert canvas.mark == (*moved, point.tooltip())
    draw(page, "entropy_distribution")  # another figure: no point is ringed until a key goes to one
    assert canvas.mark is None


def test_a_click_on_a_point_lists_it_and_leaves_the_keys_where_they_were(page, qtbot):
    """The figure takes the keys from Tab only: a click on a point lists its responses and the panel list keeps
    the keys (with the figure taking a click's focus, the responses took them at every click)."""
    draw(page, "accuracy_by_level")
    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)
    page.panel_list.setFocus()
    point, x, y = page.view.hits.in_order[4]
    canvas = page.view.canvas
    with qtbot.waitSignal(page.details_ready, timeout=10_000) as ready:
        qtbot.mouseClick(
            canvas, Qt.MouseButton.LeftButton, pos=QPoint(round(x * canvas.width()), round(y * canvas.height()) + 3)
        )
    assert len(ready.args[0]) == point.n and QApplication.focusWidget() is page.panel_list


def test_each_point_is_placed_where_its_value_is_drawn_and_one_without_a_place_is_left_out():
    figure = Figure()
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    up, down, dot, nowhere, nan_bar = (
        Point(facet="f", x=x, series="s", value=v)
        for x, v in (("a", 2), ("b", -1), ("c", 1), ("d", math.nan), ("e", math.nan))
    )
    hits = Hits()
    bars = axes.bar([0, 2, 3], [2.0, -1.0, 0.0])  # a NaN value is drawn as no bar (`_draw_bars`)
    for patch, point in zip(bars.patches, [up, down, nan_bar]):
        hits.add(patch, [point])
    hits.add(axes.scatter([1.0, math.nan], [1.0, 1.0]), [dot, nowhere])
    figure.canvas.draw()
    placed = hits.placed(figure)
    assert [point.x for point, _x, _y in placed] == ["a", "c", "b"]  # left to right; the NaN ones have no place
    _x, zero = axes.transData.transform((0, 0))
    zero_y = 1 - zero / figure.bbox.height
    assert placed[0][2] < zero_y < placed[2][2]  # a positive bar ringed at its top, a negative one at its bottom


def test_with_a_points_responses_open_on_a_laptop_the_figure_never_covers_the_table_picker(results_page, qtbot):
    """Before, the figure's heading wrapped to more lines than its least height counted, and with the responses
    open the figure's splitter got less than the figure and its table need: the figure was drawn over the table
    picker and its buttons (hidden, though Tab still went to them). Now the page scrolls instead."""
    page = results_page(1000, 620)
    draw(page, "accuracy_by_level")
    with qtbot.waitSignal(page.details_ready, timeout=10_000):
        page.show_point(page.view.hits.in_order[0][0])
    view = page.view
    lower = view.splitter.widget(1)
    qtbot.waitUntil(lambda: view.canvas.geometry().bottom() < lower.geometry().top(), timeout=3_000)  # laid out
    assert (
        not view.table_picker.visibleRegion().isEmpty()
        and not view.export_buttons["table", "csv"].visibleRegion().isEmpty()
    )
    assert page.splitter.height() >= page.splitter.minimumSizeHint().height()


@pytest.mark.slow
def test_a_dragged_column_of_the_responses_keeps_its_width_at_the_next_point(page, qtbot, monkeypatch):
    """Before, each click on a point sized every column to its text again: a question widened to be read was cut
    at 320 px at the next point."""
    from header_drags import drag_edge

    from spokenbench.widgets import tables

    monkeypatch.setattr(tables, "column_memory", tables.ColumnMemory())
    draw(page, "accuracy_by_level")
    points = [(artist, pts[0]) for artist, pts in page.view.hits.targets if pts[0].facet == "accent"][:2]
    assert len(points) == 2
    for index, (patch, _point) in enumerate(points):
        box = patch.get_window_extent()
        with qtbot.waitSignal(page.details_ready, timeout=10_000):
            mouse(page, "button_press_event", (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
        titles = page.detail_widths.titles()
        question = next(column for column, title in titles.items() if title == "question text")
        if index == 0:
            assert page.detail.columnWidth(question) == 320  # a long text at most 320 px
            page.detail.horizontalScrollBar().setValue(0)
            drag_edge(page.detail, question, 120)
            widened = page.detail.columnWidth(question)
            assert widened > 400, widened
    assert page.detail.columnWidth(question) == widened
    assert tables.column_memory.of("results-detail") == {"question text": widened}


@pytest.mark.slow
def test_figures_and_tables_export_as_valid_files(page, qtbot, tmp_path):
    draw(page, "mcnemar", published=True, render=False)  # saving draws it
    png = page.export_figure(tmp_path / "mcnemar.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = page.export_figure(tmp_path / "mcnemar.svg")
    assert ET.parse(svg).getroot().tag.endswith("svg")
    assert "published" in svg.read_text(encoding="utf-8") or "<path" in svg.read_text(encoding="utf-8")
    pdf = page.export_figure(tmp_path / "mcnemar.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"%%EOF" in data[-1024:]

    page.view.published_toggle.setChecked(False)
    assert page.view.table_picker.currentText() == "yours (simulated) · mcnemar"
    with qtbot.waitSignal(page.exported, timeout=5_000):
        page.export_table(tmp_path / "mcnemar.csv")
    with (tmp_path / "mcnemar.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 3 and {r["source"] for r in rows} == {"yours (simulated)"}
    assert {"p_value", "delta_orig_minus_rev_pp", "delta_ci_low", "delta_ci_high"} <= set(rows[0])
    with qtbot.waitSignal(page.exported, timeout=5_000):
        page.export_table(tmp_path / "mcnemar.tex")
    latex = (tmp_path / "mcnemar.tex").read_text(encoding="utf-8")
    assert "\\begin{tabular}" in latex and "\\end{table}" in latex and "yours (simulated)" in latex
    assert latex.count("\\\\") == 4  # header and three rows

    page.view.published_toggle.setChecked(True)  # a published table exports as printed
    with qtbot.waitSignal(page.exported, timeout=5_000):
        page.export_table(tmp_path / "tables11_17.csv")
    with (tmp_path / "tables11_17.csv").open(encoding="utf-8", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 212


@pytest.mark.slow
def test_the_page_follows_the_runs_and_the_run_picker(page, qtbot, demo):
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):
        page.select_runs([1])
    assert page.panels.series == ["simulated:steady"] and len(page.panels.responses) == 672
    assert page.panels.panels["ranking_changes"].empty  # rankings need two models
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):
        page.select_all_runs()
    # the three listeners, then the gender study's models (by model, not by run: its runs are grouped by setting)
    assert len(page.panels.series) == 6
    computations = page.computations
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):  # nothing changed since: kept, not recomputed
        page.select_runs([1])
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):
        page.select_all_runs()
    assert page.computations == computations and len(page.panels.series) == 6
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):
        with opened(demo) as project, project.transaction() as conn:  # another connection, as a CLI run would
            mark_run(conn, 2, "finished")
    assert len(page.panels.series) == 6
    assert page.computations == computations + 1  # the runs table's counter moved: computed again


@pytest.mark.slow
def test_while_new_figures_compute_the_old_ones_stay_marked_stale_and_keys_still_work(page, qtbot, demo):
    """The panels compute in a job process: the figures shown stay, saying what they are from before, and the
    panel list answers the arrow keys meanwhile."""
    old = page.panels
    page.panel_list.setFocus()
    with opened(demo) as project, project.transaction() as conn:  # another connection, as a run would
        mark_run(conn, 2, "finished")
    qtbot.waitUntil(lambda: "Updating…" in page.answering_note.text(), timeout=10_000)
    assert "from before a run started, ended or changed" in page.answering_note.text()
    assert page.panels is old and page.view.panel is old.panels[PANEL_ORDER[0]]  # the previous figures stay
    qtbot.keyClick(page.panel_list, Qt.Key.Key_Down)
    assert page.panel_list.currentRow() == 1 and page.view.panel is old.panels[PANEL_ORDER[1]]
    qtbot.waitUntil(lambda: page.panels is not old, timeout=60_000)
    assert page.answering_note.text() == "" and page.view.panel is page.panels.panels[PANEL_ORDER[1]]


@pytest.mark.slow
def test_a_hidden_page_recomputes_once_shown_not_while_answers_stream_in(page, qtbot, demo):
    """Recomputing is seconds of pandas on a thread of the app: while another page is shown, changes only mark it."""
    qtbot.waitUntil(lambda: page.panels is not None, timeout=60_000)
    page.hide()
    computed = []
    page.panels_ready.connect(computed.append)
    with opened(demo) as project, project.transaction() as conn:  # another connection, as a run would
        mark_run(conn, 2, "finished")
    qtbot.wait(1_500)  # two polls of the project monitor and more than a refresh delay
    assert computed == []
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):
        page.show()
    assert len(computed) == 1


@pytest.mark.slow
def test_while_a_job_stores_answers_the_panels_wait_for_it_to_end(page, qtbot, demo):
    """A run streaming its answers would recompute the panels every second, seconds of pandas on a thread of the
    app: they wait for the job to end (Refresh now recomputes them at once)."""
    from spokenbench.core.jobs.registry import tracked_job

    qtbot.waitUntil(lambda: page.panels is not None, timeout=60_000)
    computed = []
    page.panels_ready.connect(computed.append)
    with tracked_job(demo, "evaluate", "a run elsewhere"):  # as another process's run: a live job of the project
        qtbot.waitUntil(lambda: page._answering(), timeout=3_000)
        with opened(demo) as project, project.transaction() as conn:
            mark_run(conn, 2, "finished")
        qtbot.waitUntil(lambda: page.waiting_for_job, timeout=3_000)
        qtbot.wait(1_200)
        assert computed == [] and "update when it ends" in page.answering_note.text()
        assert page.refresh_now.isVisible()
        with qtbot.waitSignal(page.panels_ready, timeout=60_000):
            page.refresh_now.click()
        assert not page.waiting_for_job and page.refresh_now.isHidden()
        with opened(demo) as project, project.transaction() as conn:
            mark_run(conn, 2, "finished")
        qtbot.waitUntil(lambda: page.waiting_for_job, timeout=3_000)
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):  # the job has ended
        pass
    assert len(computed) == 2 and not page.waiting_for_job and page.answering_note.text() == ""


@pytest.mark.slow
def test_closing_the_project_clears_the_page(page):
    page.set_session(None)
    assert page.summary.text() == "No project open" and page.view.panel is None
    assert page.refresh() is None


@pytest.mark.slow
def test_real_and_simulated_runs_side_by_side_are_labelled_per_model(qtbot):
    from spokenbench.core.metrics.synthetic import biasinear_like
    from spokenbench.core.results.compute import compute_panels
    from spokenbench.widgets.metric_panels import MetricPanelView

    panels = compute_panels(biasinear_like(12, 2, seed=4), simulated={"model_1": True}, n_resamples=50)
    view = MetricPanelView()
    qtbot.addWidget(view)
    view.set_panel(panels.panels["accuracy_by_level"], panels.series, panels.simulated)
    view.finish_drawing()
    texts = [t.get_text() for t in view.figure.findobj(Text)]
    assert "model_1 (simulated)" in texts and "model_2" in texts  # the legend marks the simulated one
    assert any("simulated runs marked 'simulated' in the legend" in t for t in texts)
    table = panels.panels["accuracy_by_level"].tables["accuracy_by_level"]
    assert dict(zip(table["model"], table["source"])) == {"model_1": "yours (simulated)", "model_2": "yours"}


@pytest.mark.slow
def test_the_figure_is_drawn_off_the_ui_thread_and_a_click_on_its_image_finds_the_point(qtbot, monkeypatch):
    """Building and rasterizing a panel happen on the view's drawing thread; the UI thread paints the image, and
    a real mouse click on a bar's pixels lists that bar's point."""
    import threading

    from PySide6.QtCore import QPoint

    from spokenbench.core.metrics.synthetic import biasinear_like
    from spokenbench.core.results.compute import compute_panels
    from spokenbench.widgets import metric_panels
    from spokenbench.widgets.metric_panels import MetricPanelView

    drawn_on = []
    real_draw_panel = metric_panels.draw_panel

    def recording_draw_panel(*args, **kwargs):
        drawn_on.append(threading.current_thread())
        return real_draw_panel(*args, **kwargs)

    monkeypatch.setattr(metric_panels, "draw_panel", recording_draw_panel)
    panels = compute_panels(biasinear_like(12, 2, seed=4), n_resamples=50)
    view = MetricPanelView()
    qtbot.addWidget(view)
    view.resize(1000, 800)
    view.show()
    view.set_panel(panels.panels["accuracy_by_level"], panels.series, panels.simulated)
    assert view.hits.targets == []  # nothing to hit until the figure is drawn
    qtbot.waitUntil(lambda: bool(view.hits.targets) and not view.canvas.busy, timeout=30_000)
    assert drawn_on and threading.main_thread() not in drawn_on
    assert view.canvas.grab().toImage().pixelColor(5, 5).isValid()
    patch, [point] = next((artist, pts) for artist, pts in view.hits.targets if len(pts) == 1 and len(pts[0].rows))
    box = patch.get_window_extent()
    ratio = view.canvas.device_pixel_ratio
    x, y = (box.x0 + box.x1) / 2 / ratio, (view.figure.bbox.height - (box.y0 + box.y1) / 2) / ratio
    with qtbot.waitSignal(view.point_clicked, timeout=5_000) as clicked:
        qtbot.mouseClick(view.canvas, Qt.MouseButton.LeftButton, pos=QPoint(round(x), round(y)))
    assert clicked.args[0] is point


def test_an_eleventh_model_leaves_the_first_ten_colours_alone():
    from spokenbench.widgets.metric_panels import series_colors

    ten, eleven = series_colors([f"m{i}" for i in range(10)]), series_colors([f"m{i}" for i in range(11)])
    assert all(eleven[name] == colour for name, colour in ten.items())
    assert len(set(eleven.values())) == 11  # and the eleventh differs from them all


def test_a_finished_drawing_gives_its_freed_buffers_back(qtbot, monkeypatch):
    """Issue 28 (the app's peak memory): once a canvas has finished a drawing, the C heap's freed pages (the
    drawing's transient buffers) go back to the system, on the drawing thread, before the drawing is shown."""
    import threading

    from matplotlib.figure import Figure

    from spokenbench.widgets import metric_panels

    trims = []
    monkeypatch.setattr(metric_panels, "return_freed_memory", lambda: trims.append(threading.current_thread()))
    shown = []
    canvas = metric_panels.BackgroundCanvas(Figure(), shown.append)
    qtbot.addWidget(canvas)
    canvas.resize(400, 300)
    canvas.render(lambda figure: figure.add_subplot().plot([1, 2], [2, 1]))
    qtbot.waitUntil(lambda: bool(shown) and shown[-1] is not None and not canvas.busy, timeout=10_000)  # the plot
    assert trims and threading.main_thread() not in trims
    image, drawn = canvas._image, canvas.buffer_rgba()  # the image shown is the drawing's pixels, copied once
    assert (image.width(), image.height()) == (drawn.shape[1], drawn.shape[0])
    assert bytes(image.constBits()) == bytes(drawn)


def test_the_figure_s_text_grows_with_the_app_s_text_size_and_is_drawn_again_on_its_own(page, qtbot):
    """View → Larger text made every label on the screen larger but the figures': at 150 % their titles and tick
    labels were drawn at the size they had at 100 %, the smallest text in the window, in a canvas no higher."""
    from spokenbench.app.text_size import apply_text_size

    def sizes() -> tuple[float, float]:
        page.view.finish_drawing()
        figure = page.view.figure
        renderer = figure.canvas.get_renderer()
        tick = next(t for t in figure.get_axes()[0].get_yticklabels() if t.get_text())
        return figure._suptitle.get_window_extent(renderer).height, tick.get_window_extent(renderer).height

    draw(page, "accuracy_by_level")
    title, tick = sizes()
    apply_text_size(150)
    qtbot.waitUntil(lambda: page.view.drawn_at_scale == 1.5, timeout=5_000)  # on its own, no panel picked again
    larger_title, larger_tick = sizes()
    assert larger_title == pytest.approx(title * 1.5, rel=0.12) and larger_tick == pytest.approx(tick * 1.5, rel=0.12)
    assert page.view.canvas.minimumHeight() == round(CANVAS_HEIGHT[1] * 1.5)
    page.view.canvas.draw()
    assert_nothing_overlaps(page.view.figure, "accuracy_by_level at 150 %")
    apply_text_size(100)
    qtbot.waitUntil(lambda: page.view.drawn_at_scale == 1.0, timeout=5_000)
    assert sizes() == pytest.approx((title, tick), rel=0.02)
    assert page.view.canvas.minimumHeight() == CANVAS_HEIGHT[1]


def test_a_figure_too_wide_for_its_canvas_at_the_text_size_is_drawn_with_text_as_large_as_fits(page, qtbot):
    """At 200 % on a 1400×900 screen the accuracy panel's fourth facet ran off the canvas's right edge: it is drawn
    whole, its text only as much larger as fits (steps of TEXT_SCALE_STEP), and at the whole size where it fits."""
    from spokenbench.app.text_size import apply_text_size
    from spokenbench.widgets.metric_panels import _drawn_whole

    page.resize(900, 980)  # the canvas about as wide as on a 1400×900 screen (660 pixels)
    apply_text_size(200)
    qtbot.wait(100)  # the new font reaches each widget in events posted: the page laid out for it
    draw(page, "accuracy_by_level", render=False)
    assert _drawn_whole(page.view.figure)
    assert 1.0 < page.view.canvas.drawn_scale < 2.0
    page.resize(1600, 980)  # wide enough: the whole text size
    qtbot.waitUntil(lambda: page.view.canvas.drawn_scale == 2.0 and not page.view.canvas.busy, timeout=10_000)
    page.view.finish_drawing()
    assert _drawn_whole(page.view.figure)


def test_a_figure_too_wide_for_its_canvas_at_the_normal_size_is_drawn_with_text_a_little_smaller(page, qtbot):
    """Beside the guided tour on a laptop the canvas is about 530 pixels wide at the normal size, and the accuracy
    panel's fourth facet ran off its right edge: it is drawn whole with its text at LEAST_FIGURE_SCALE of the
    normal size, and at the normal size again where it fits."""
    from spokenbench.widgets.metric_panels import LEAST_FIGURE_SCALE, _drawn_whole

    page.resize(800, 980)  # a canvas of 534 pixels
    qtbot.wait(100)
    draw(page, "accuracy_by_level", render=False)
    assert _drawn_whole(page.view.figure), f"cut off on a canvas {page.view.canvas.width()} pixels wide"
    assert page.view.canvas.drawn_scale == LEAST_FIGURE_SCALE
    page.resize(1200, 980)
    qtbot.waitUntil(lambda: page.view.canvas.drawn_scale == 1.0 and not page.view.canvas.busy, timeout=10_000)
    page.view.finish_drawing()
    assert _drawn_whole(page.view.figure)


def test_the_panels_names_are_whole_at_any_text_size_and_a_dragged_width_is_kept(results_page, qtbot):
    """At 200 % the lists kept their 250 pixels: 'Accuracy by leve', 'Permutation voti'."""
    from spokenbench.app.results_page import LISTS_SHARE, LISTS_WIDTH
    from spokenbench.app.text_size import apply_text_size

    def cut_names() -> list[str]:
        names, room = page.panel_list.fontMetrics(), page.panel_list.viewport().width()
        texts = [page.panel_list.item(row).text() for row in range(page.panel_list.count())]
        return [text for text in texts if names.horizontalAdvance(text) + 6 > room]

    page = results_page(880, 600)  # the page on a 1400×900 screen with the text at 200 %: the lists scroll
    assert page.body.sizes()[0] == LISTS_WIDTH and not cut_names()  # the normal size
    for percent in (150, 200):
        apply_text_size(percent)
        qtbot.wait(100)  # the new font reaches each widget in events posted
        assert not cut_names(), percent
        assert page.body.sizes()[0] <= sum(page.body.sizes()) * LISTS_SHARE
    page.body.moveSplitter(300, 1)
    page.body.splitterMoved.emit(300, 1)  # as a drag does
    apply_text_size(100)
    qtbot.wait(100)
    assert page.body.sizes()[0] == 300  # the person's width, not the fitted one


def test_the_ring_stays_on_its_point_when_a_resize_draws_the_figure_again_at_another_text_size(page, qtbot):
    """Where the figure's text is made smaller to fit (larger text, a narrow canvas), a resize builds the figure
    again: the keys lost their point each time (a new drawing), and a screen reader was told the figure anew."""
    from spokenbench.app.text_size import apply_text_size

    page.resize(900, 980)
    apply_text_size(200)
    qtbot.wait(100)
    draw(page, "accuracy_by_level", render=False)
    assert 1.0 < page.view.canvas.drawn_scale < 2.0  # built smaller than asked: a resize builds it again
    canvas, view = page.view.canvas, page.view
    page.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is page)
    canvas.setFocus()
    for _ in range(3):
        qtbot.keyClick(canvas, Qt.Key.Key_Right)
    point = view.point_keys.point
    before = view.hits
    page.resize(1600, 980)  # room for the whole text size: built again
    qtbot.waitUntil(lambda: view.hits is not before, timeout=10_000)
    view.finish_drawing()
    assert view.point_keys.point is point and view.point_keys.at() is not None
    moved = next((x, y) for shown, x, y in view.hits.in_order if shown is point)
    assert canvas.mark == (*moved, point.tooltip())
    assert canvas.accessibleName().startswith("Point 3 of ")


def test_a_hidden_figure_is_drawn_at_the_new_text_size_when_shown_not_before(page, qtbot):
    """Drawn while another page was shown, its drawing thread's hold on the GIL made each Ctrl+= on the Rating page
    300 ms slower (tests/benchmarks/bench_text_size.py: 376 ms a change, 54 ms without)."""
    from spokenbench.app.text_size import apply_text_size

    draw(page, "accuracy_by_level", render=False)
    page.hide()
    apply_text_size(150)
    qtbot.wait(200)
    assert page.view.drawn_at_scale == 1.0 and page.view.canvas.drawn_scale == 1.0  # nothing drawn hidden
    page.show()
    qtbot.waitUntil(lambda: page.view.drawn_at_scale == 1.5, timeout=5_000)
    page.view.finish_drawing()
    assert page.view.canvas.drawn_scale == 1.5


def test_a_narrower_canvas_starts_from_the_text_size_that_fitted_not_from_the_largest(page, qtbot, monkeypatch):
    """A figure drawn smaller than the text size asks was built again from the largest size at each resize: up to
    four builds of 0.4 s for each step of a drag that narrows the window. A canvas no larger starts from the size
    that fitted; a wider one asks the largest again."""
    from spokenbench.app.text_size import apply_text_size
    from spokenbench.widgets import metric_panels

    builds = []
    real_draw_panel = metric_panels.draw_panel

    def counted(*args, **kwargs):
        builds.append(1)
        return real_draw_panel(*args, **kwargs)

    monkeypatch.setattr(metric_panels, "draw_panel", counted)
    page.resize(900, 980)
    apply_text_size(200)
    qtbot.wait(100)
    draw(page, "accuracy_by_level", render=False)
    fitted = page.view.canvas.drawn_scale
    assert 1.0 < fitted < 2.0 and len(builds) >= 2  # tried larger first
    builds.clear()
    page.resize(880, 980)
    qtbot.waitUntil(lambda: not page.view.canvas.busy, timeout=10_000)
    page.view.finish_drawing()
    assert len(builds) <= 1 and page.view.canvas.drawn_scale <= fitted
    page.resize(1600, 980)
    qtbot.waitUntil(lambda: page.view.canvas.drawn_scale == 2.0 and not page.view.canvas.busy, timeout=10_000)
