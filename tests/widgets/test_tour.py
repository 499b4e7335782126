"""The guided tour (issue 15 item 2): every step opens its page and panel and frames what it talks about; skipping
and finishing are remembered; Help → Guided Tour opens it again."""

import pytest
from demo_copies import linked_copy
from PySide6.QtCore import QPoint, QRect, QSettings, Qt
from PySide6.QtTest import QTest

from spokenbench.core.demo.tour import FOCUS_TARGETS, PUBLISHED, SIMULATED, TOUR, tour_markdown
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.widgets.tour_panel import HIGHLIGHT_WIDTH


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def make_window(qtbot, settings):
    from spokenbench.app.main_window import MainWindow

    windows = []

    def make():
        window = MainWindow(audio_message="no audio in tests", settings=settings)
        qtbot.addWidget(window)
        window.resize(1300, 820)
        window.show()
        windows.append(window)
        return window

    yield make
    for window in windows:
        window.shutdown()


def inside_its_parents(widget) -> bool:
    """Whether all of `widget` lies within each of its parents (nothing of it cut off by a scroll area)."""
    parent = widget.parentWidget()
    while parent is not None:
        if not QRect(QPoint(0, 0), parent.size()).contains(QRect(widget.mapTo(parent, QPoint(0, 0)), widget.size())):
            return False
        if parent.isWindow():
            return True
        parent = parent.parentWidget()
    return True


@pytest.mark.slow
def test_the_steps_say_where_their_numbers_come_from():
    assert len(TOUR) >= 6
    assert len({step.key for step in TOUR}) == len(TOUR)
    for step in TOUR:
        assert step.page == "results" and step.panel in PANEL_ORDER and step.focus in FOCUS_TARGETS
        assert step.simulated_note.startswith("Simulated:") and step.published_note.startswith("Published:")
        assert set(step.sources) == {SIMULATED, PUBLISHED}
    titles = " ".join(step.title.lower() for step in TOUR)
    for finding in ("option order", "language", "speech carries", "voting", "male-oriented"):
        assert finding in titles
    markdown = tour_markdown()
    assert markdown.count("\n## ") == len(TOUR) and "resources/published" in markdown


@pytest.mark.slow
def test_each_step_opens_its_page_and_panel_and_frames_it(make_window, qtbot):
    window = make_window()
    tour = window.tour
    tour.start()
    assert tour.is_open() and tour.index == 0
    assert "No project is open" in tour.panel.note.text()
    results = window.page_widgets["results"]
    for index, step in enumerate(TOUR):
        tour.show_step(index)
        qtbot.wait(30)  # the layouts settle (the dock narrows the page)
        results = window.page_widgets["results"]
        assert window.current_page_key() == step.page
        assert results.panel_list.currentRow() == PANEL_ORDER.index(step.panel)
        assert results.view.published_on[step.panel] is step.published
        expected = {"runs": results.run_list, "panel": results.view, "gender_detail": results.gender_panel}
        assert tour.target_widget() is expected[step.focus]
        framed = expected[step.focus]
        assert tour.highlight.parent() is window and tour.highlight.isHidden() == (not framed.isVisibleTo(window))
        corner = framed.mapTo(window, QPoint(0, 0))
        outside = QRect(corner, framed.size()).adjusted(
            -HIGHLIGHT_WIDTH, -HIGHLIGHT_WIDTH, HIGHLIGHT_WIDTH, HIGHLIGHT_WIDTH
        )
        shown = tour.highlight.geometry()
        assert outside.contains(shown) and shown.width() > 4 * HIGHLIGHT_WIDTH  # around the panel's visible part
        if inside_its_parents(framed):
            assert shown == outside  # all of it on screen: all of it framed, never over its text
        shown = tour.panel.browser.toPlainText()
        assert step.title in shown and "SIMULATED" in shown and "PUBLISHED" in shown
        assert f"step {index + 1} of {len(TOUR)}" in tour.panel.counter.text()
    assert tour.panel.next_button.text() == "Do&ne"  # Alt+N still goes on


@pytest.mark.slow
def test_keys_move_through_the_tour_and_finishing_is_remembered(make_window, settings):
    window = make_window()
    tour = window.tour
    assert tour.start_if_new()
    QTest.keyClick(tour.panel, Qt.Key.Key_Right)
    assert tour.index == 1
    QTest.keyClick(tour.panel, Qt.Key.Key_Left)
    assert tour.index == 0
    QTest.keyClick(tour.panel, Qt.Key.Key_Left)  # nothing before the first step
    assert tour.index == 0 and tour.is_open()
    buttons = (tour.panel.back_button, tour.panel.next_button, tour.panel.skip_button)
    assert [b.shortcut().toString() for b in buttons] == ["Alt+B", "Alt+N", "Alt+S"]  # anywhere in the window
    for _ in range(len(TOUR) - 1):
        QTest.keyClick(tour.panel, Qt.Key.Key_PageDown)
    assert tour.index == len(TOUR) - 1
    tour.panel.next_button.click()  # Done
    assert not tour.is_open() and tour.highlight.target is None
    assert window.settings.value("tour/state") == "finished"
    assert not make_window().tour.start_if_new()


@pytest.mark.slow
def test_skip_is_remembered_and_help_opens_the_tour_again(make_window, settings):
    window = make_window()
    tour = window.tour
    assert tour.start_if_new()
    tour.show_step(3)
    QTest.keyClick(tour.panel, Qt.Key.Key_Escape)
    assert not tour.is_open() and window.settings.value("tour/state") == "skipped"

    again = make_window()
    assert not again.tour.start_if_new() and not again.tour.is_open()
    help_menu = next(a.menu() for a in again.menuBar().actions() if a.text() == "&Help")
    assert again.tour.action in help_menu.actions()
    again.tour.action.trigger()
    assert again.tour.is_open() and again.tour.index == 0
    assert again.current_page_key() == "results"


@pytest.mark.slow
def test_closing_the_dock_skips_the_tour(make_window, settings):
    window = make_window()
    window.tour.start()
    window.tour.dock.close()
    assert window.settings.value("tour/state") == "skipped" and window.tour.highlight.target is None


def test_the_frame_is_outside_its_widget_and_hides_and_shows_with_its_page(qtbot):
    from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

    from spokenbench.widgets.tour_panel import Highlight

    window = QWidget()
    qtbot.addWidget(window)
    pages = QStackedWidget()
    QVBoxLayout(window).addWidget(pages)
    first, second = QWidget(), QWidget()
    target = QLabel("Accuracy by level", first)
    target.move(20, 30)
    pages.addWidget(first)
    pages.addWidget(second)
    window.resize(400, 300)
    window.show()
    qtbot.waitExposed(window)
    frame = Highlight()
    frame.point_at(target)
    assert frame.parent() is window and not frame.isHidden()
    corner = target.mapTo(window, QPoint(0, 0))
    assert frame.geometry() == QRect(corner, target.size()).adjusted(-3, -3, 3, 3)
    pages.setCurrentWidget(second)
    assert frame.isHidden()
    pages.setCurrentWidget(first)
    assert not frame.isHidden()
    target.move(50, 60)  # follows its widget
    assert frame.geometry().topLeft() == target.mapTo(window, QPoint(0, 0)) - QPoint(3, 3)
    target.deleteLater()
    qtbot.waitUntil(lambda: frame.target is None)
    assert frame.isHidden()


@pytest.mark.slow
def test_the_free_form_step_shows_j_s_delta_s_and_s_on_the_demo(make_window, qtbot, built_demo, tmp_path):
    """Issue 25: the tour's free-form step opens the gender probes' free-form setting, whose summary holds the demo's
    simulated J_s, Δ_s and s."""

    from spokenbench.core.demo.tour import step_index
    from spokenbench.widgets.gender_panel import FREE_FORM_SUMMARY_COLUMNS

    window = make_window()
    project = linked_copy(built_demo, tmp_path / "demo-project")
    with qtbot.waitSignal(window.open_project(project).finished, timeout=30_000):
        pass
    tour = window.tour
    tour.start()
    for _ in range(step_index("free-form")):
        QTest.keyClick(tour.panel, Qt.Key.Key_Right)
    assert TOUR[tour.index].key == "free-form"
    detail = window.page_widgets["results"].gender_panel
    qtbot.waitUntil(lambda: detail.setting == "free_form" and detail.summary_table.rowCount() > 0, timeout=60_000)
    headers = [detail.summary_table.horizontalHeaderItem(c).text() for c in range(detail.summary_table.columnCount())]
    assert headers == list(FREE_FORM_SUMMARY_COLUMNS)
    j_s = [detail.summary_table.item(r, 2).text() for r in range(detail.summary_table.rowCount())]
    assert any(text not in ("—", "") for text in j_s)  # the voiced models' J_s (the text backbone has none)
    QTest.keyClick(tour.panel, Qt.Key.Key_Left)  # back to the binary setting's step
    qtbot.waitUntil(lambda: detail.setting == "binary_option", timeout=10_000)


def test_the_frame_is_cut_to_what_a_scroll_area_shows_scrolled_or_not(qtbot):
    from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

    from spokenbench.widgets.tour_panel import Highlight

    window = QWidget()
    qtbot.addWidget(window)
    scroll = QScrollArea()
    QVBoxLayout(window).addWidget(scroll)
    tall = QLabel("A panel taller than the window")
    tall.setMinimumSize(200, 1000)
    scroll.setWidget(tall)
    scroll.setWidgetResizable(True)
    window.resize(400, 300)
    window.show()
    qtbot.waitExposed(window)
    frame = Highlight()
    frame.point_at(tall)
    viewport = QRect(scroll.viewport().mapTo(window, QPoint(0, 0)), scroll.viewport().size())
    assert viewport.adjusted(-3, -3, 3, 3) == frame.geometry()  # never past what the scroll area shows
    scroll.verticalScrollBar().setValue(scroll.verticalScrollBar().maximum())
    qtbot.wait(20)
    assert viewport.adjusted(-3, -3, 3, 3) == frame.geometry()  # the part shown, not the label's top far above
