"""Larger text (View → Larger text Ctrl+=, Smaller text Ctrl+-, Normal text size Ctrl+0) for an annotator who
reads for hours or sees poorly: the desktop's font times 100-200 %, at once and at the next start, with the text
drawn larger than the rest (a clip's text, a prompt, a page's title) and the figures' text growing with it, and
every page fitting a 1280×720 laptop's maximized window at every size without scrolling sideways (the Rating page
without scrolling at all; above 150 % with no warning above the session). Before, the app had no text size of its
own, and with the font 150 % larger the Speakers page (1,121 pixels) and the QC page (1,019) were wider than the
room a 1280×640 window gives a page (1,011 once the page list is wide enough for its names): the page scrolled
sideways, its left edge cut off ("uality control"), and the page list elided 'Rewrites · 10 to rev…'."""

import pytest
from PySide6.QtCore import QSettings, QSize, Qt
from PySide6.QtWidgets import QApplication, QStackedWidget, QWidget
from support import overlapping

from spokenbench.app.main_window import PAGES
from spokenbench.app.text_size import TEXT_SIZE_KEY, TEXT_SIZES, desktop_font, step, stored_text_size

LAPTOP = QSize(1280, 640)  # a maximized window on a 1280×720 screen (tests/widgets/test_laptop_fit.py)


def point_size() -> float:
    return QApplication.font().pointSizeF()


def press(window, qtbot, key, times: int = 1) -> None:
    for _ in range(times):
        qtbot.keyClick(window, key, Qt.KeyboardModifier.ControlModifier)


@pytest.mark.parametrize(
    ("stored", "percent"),
    [(None, 100), ("150", 150), (" 125 ", 125), ("120", 100), ("1e9", 100), ("large", 100), ([], 100)],
)
def test_a_stored_text_size_is_one_of_the_steps_or_normal(stored, percent):
    assert stored_text_size(stored) == percent


def test_the_steps_stop_at_the_ends():
    assert [step(100, -1), step(100, 1), step(150, 1), step(200, 1), step(175, -1)] == [100, 110, 175, 200, 150]


def settings_in(tmp_path) -> QSettings:
    return QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)


def open_demo(window, qtbot, project) -> None:
    with qtbot.waitSignal(window.open_project(project).finished, timeout=20_000):
        pass


def test_ctrl_equals_makes_every_text_larger_at_once_and_at_the_next_start(
    shown_window, qtbot, tmp_path, read_only_demo
):
    window = shown_window(settings_in(tmp_path))
    open_demo(window, qtbot, read_only_demo)
    window.show_page("rewrites")
    review = window.page_widgets["rewrites"].view
    desktop = desktop_font().pointSizeF()
    review_size = review.progress_label.font().pointSizeF()
    sidebar_width = window.sidebar.width()
    assert review_size == pytest.approx(desktop * 1.4)

    press(window, qtbot, Qt.Key.Key_Equal, times=3)  # 110, 125, 150
    assert window.text_size == 150
    qtbot.wait(100)  # the status bar laid out again for the new font
    assert not window.summary_label.isVisible(), "the summary drawn over the message"
    window.statusBar().clearMessage()
    assert window.summary_label.isVisible()
    press(window, qtbot, Qt.Key.Key_Minus)
    press(window, qtbot, Qt.Key.Key_Equal)
    assert point_size() == pytest.approx(desktop * 1.5)
    assert review.progress_label.font().pointSizeF() == pytest.approx(review_size * 1.5)  # its share kept
    assert "Text size 150 %" in window.statusBar().currentMessage()
    assert window.sidebar.font().pointSizeF() == pytest.approx(desktop * 1.5)  # a widget with a style sheet too
    assert window.sidebar.width() > sidebar_width
    for row in range(window.sidebar.count()):  # no page's name and badge elided
        item = window.sidebar.item(row)
        assert window.sidebar.fontMetrics().horizontalAdvance(item.text()) + 20 <= window.sidebar.width(), item.text()
    window.settings.flush()
    assert settings_in(tmp_path).value(TEXT_SIZE_KEY) in (150, "150")

    press(window, qtbot, Qt.Key.Key_Equal, times=4)  # 175, 200, and the largest said as such
    assert window.text_size == TEXT_SIZES[-1]
    assert "the largest" in window.statusBar().currentMessage()
    press(window, qtbot, Qt.Key.Key_Minus)
    assert window.text_size == 175
    press(window, qtbot, Qt.Key.Key_0)
    assert window.text_size == 100
    assert point_size() == pytest.approx(desktop)
    assert review.progress_label.font().pointSizeF() == pytest.approx(review_size)
    assert window.sidebar.width() == sidebar_width

    window.set_text_size(125)
    window.settings.flush()
    window.shutdown()
    QApplication.setFont(desktop_font())  # a new process starts with the desktop's font
    again = shown_window(settings_in(tmp_path))
    assert again.text_size == 125
    assert point_size() == pytest.approx(desktop * 1.25)
    assert again.tour.panel.font().pointSizeF() == pytest.approx(desktop * 1.25)  # a dock made at the start too


def test_a_text_size_edited_into_the_settings_file_by_hand_is_ignored(shown_window, tmp_path):
    (tmp_path / "settings.ini").write_text("[view]\ntext_size=9000\n")
    desktop = point_size()
    window = shown_window(settings_in(tmp_path))
    assert window.text_size == 100
    assert point_size() == desktop


@pytest.mark.parametrize(
    ("percent", "size"), [(125, LAPTOP), (150, LAPTOP), (175, LAPTOP), (200, LAPTOP), (200, QSize(1400, 820))]
)
def test_every_page_fits_a_maximized_window_on_a_laptop_at_any_text_size_without_scrolling_sideways(
    shown_window, qtbot, tmp_path, read_only_demo, percent, size
):
    """A maximized window: 1280×640 on a 1280×720 screen, 1400×820 on 1400×900 (a taskbar and a title bar off)."""
    window = shown_window(settings_in(tmp_path), size=None)
    window.resize(size)
    open_demo(window, qtbot, read_only_demo)
    window.set_text_size(percent)
    window.show_page("rating")
    qtbot.waitUntil(lambda: type(window.page_widgets["rating"]).__name__ != "PlaceholderPage", timeout=20_000)
    rating = window.page_widgets["rating"]
    rating.open_queue("demo-qc")  # the session's view, as an annotator has it
    qtbot.waitUntil(lambda: rating.rating is not None and rating.idle, timeout=10_000)
    measured = {}
    for key, _name in PAGES:
        if key == "results":
            continue  # its figures scroll at any size (test_laptop_fit.py); its widths are measured below
        window.show_page(key)
        qtbot.waitUntil(lambda key=key: type(window.page_widgets[key]).__name__ != "PlaceholderPage", timeout=20_000)
        qtbot.wait(50)
        page = window.page_stack.currentWidget()
        room = window.page_scroll.viewport().size()
        measured[key] = (page.minimumSizeHint().width(), room.width())
        assert window.size() == size, f"{key}: the window grew to {window.size()}"
        assert page.font().pointSizeF() == pytest.approx(desktop_font().pointSizeF() * percent / 100)
        assert page.minimumSizeHint().width() <= room.width(), f"{key} at {percent} %: {measured[key]}"
        assert not window.page_scroll.horizontalScrollBar().isVisible(), f"{key} at {percent} % scrolls sideways"
        if key == "rating":  # the annotators' page: nothing of it off screen
            if percent > 150:  # on a machine with a sound device and the fonts: no warnings above the session
                rating.view.set_banner(None)
                qtbot.wait(50)
            assert not window.page_scroll.verticalScrollBar().isVisible(), f"rating at {percent} % scrolls"
    window.show_page("speakers")
    listed = window.page_widgets["speakers"].list_view
    for button in (listed.add_button, listed.consent_button, listed.withdraw_button):  # wrapped, never cut off
        assert listed.rect().contains(button.geometry()), button.text()
    recorder = window.page_widgets["speakers"].view  # lines of buttons, never drawn over each other
    drawn = [*recorder.buttons.values(), recorder.reading_list_button, recorder.project_button]
    try:
        qtbot.waitUntil(lambda: not overlapping(drawn), timeout=2_000)  # laid out in events posted
    except qtbot.TimeoutError:
        pass
    assert not overlapping(drawn)


def test_evaluate_puts_the_runs_under_the_form_where_side_by_side_either_would_scroll_sideways(
    shown_window, qtbot, tmp_path, read_only_demo
):
    """At 150 % on a laptop (and at 175 % on 1400×900) the form was cut at its right edge and scrolled sideways,
    and the runs table beside it read 'romp', 'ogre' for its headings and 'si…ed', 'a…' for its cells, its last
    column off to the right. Where the two do not fit side by side (from 175 % on a laptop; before, from 150 %:
    the form's least width was 357 pixels at 100 %, now 232) the runs go under the form, the page scrolling down;
    at the normal size they stay side by side (nothing scrolls there: tests/widgets/test_laptop_fit.py)."""
    from PySide6.QtWidgets import QScrollArea

    from spokenbench.widgets.launcher_view import RUN_COLUMNS, LauncherView

    window = shown_window(settings_in(tmp_path), size=None)
    window.resize(LAPTOP)
    open_demo(window, qtbot, read_only_demo)
    window.show_page("evaluate")
    qtbot.waitUntil(lambda: window.page_widgets["evaluate"].findChild(LauncherView) is not None, timeout=20_000)
    view = window.page_widgets["evaluate"].findChild(LauncherView)
    qtbot.waitUntil(lambda: view.runs_table.rowCount() == 14, timeout=20_000)

    def cut_off() -> list[str]:
        """What of the page is not whole: scroll bars sideways, headings narrower than their text, a low form."""
        table, header = view.runs_table, view.runs_table.horizontalHeader()
        problems = [
            type(area).__name__ for area in view.findChildren(QScrollArea) if area.horizontalScrollBar().isVisible()
        ]
        problems += ["runs table sideways"] * table.horizontalScrollBar().isVisible()
        problems += ["page sideways"] * window.page_scroll.horizontalScrollBar().isVisible()
        problems += [
            f"heading {name}"
            for column, name in enumerate(RUN_COLUMNS)
            if not table.isColumnHidden(column) and table.columnWidth(column) < header.sectionSizeHint(column)
        ]
        problems += ["a low form"] * (view.form_scroll.viewport().height() < 10 * view.fontMetrics().lineSpacing())
        stacked = [view.form_scroll, view.way_group, view.prepare_button, view.plan_text]  # the form's half, down
        problems += [
            f"{type(upper).__name__} over {type(lower).__name__}"
            for upper, lower in zip(stacked, stacked[1:])
            if upper.geometry().bottom() >= lower.geometry().top()
        ]
        return problems

    seen = {}
    sizes = ((LAPTOP, 100), (LAPTOP, 125), (LAPTOP, 150), (QSize(1400, 820), 150), (LAPTOP, 175), (LAPTOP, 200))
    for size, percent in sizes:
        window.resize(size)
        window.set_text_size(percent)
        qtbot.wait(50)  # the new font reaches each widget in events posted
        try:
            qtbot.waitUntil(lambda: not cut_off(), timeout=2_000)  # laid out again
        except qtbot.TimeoutError:
            pass
        assert not cut_off(), f"{size} at {percent} %: {cut_off()}"
        seen[(size.width(), percent)] = view.splitter.orientation()
    # a note under How to run that grows by lines, with no resize: the form's half held as high again
    long_reason = "a reason long enough to wrap onto several lines at this size " * 4
    view.set_run_ways({"online": None, "batch": long_reason, "file": long_reason + "again"})
    qtbot.wait(50)
    assert not cut_off(), f"with a long note: {cut_off()}"
    view.set_run_ways({"online": None, "batch": None, "file": None})  # none: the note hidden
    qtbot.wait(50)
    assert not cut_off() and not view.way_note.isVisible()
    view.splitter.moveSplitter(view.splitter.sizes()[0] + 30, 1)  # a height dragged one above the other
    assert not view.split_dragged, "a height taken for a width"
    window.tour.start(0)  # beside the tour, where the splitter's stretch gave the runs too little
    window.show_page("evaluate")
    window.set_text_size(100)  # side by side again: each half its need, nothing sideways
    qtbot.wait(50)
    try:
        qtbot.waitUntil(lambda: not cut_off() and not view.runs_table.horizontalScrollBar().isVisible(), timeout=2_000)
    except qtbot.TimeoutError:
        pass
    assert view.splitter.orientation() == Qt.Orientation.Horizontal
    assert not cut_off() and not view.runs_table.horizontalScrollBar().isVisible(), view.splitter.sizes()
    horizontal, vertical = Qt.Orientation.Horizontal, Qt.Orientation.Vertical
    assert seen == {(1280, 100): horizontal, (1280, 125): horizontal, (1280, 150): horizontal,
                    (1400, 150): horizontal, (1280, 175): vertical, (1280, 200): vertical}  # fmt: skip


def test_evaluate_beside_the_tour_on_a_laptop_scrolls_nothing_sideways(shown_window, qtbot, tmp_path, read_only_demo):
    """At the normal size with the guided tour open (`spokenbench-studio --demo` opens it) the form needed 357
    pixels in 305 and scrolled sideways: its combo boxes' least widths were their longest items' when filled before
    first shown (*none (only the orders above)*, 203 pixels), and two group titles did not wrap. The runs table
    beside it scrolled sideways too, the splitter's stretch giving the form 60 pixels more than it needed."""
    from spokenbench.widgets.launcher_view import LauncherView

    window = shown_window(settings_in(tmp_path), size=None)
    window.resize(LAPTOP)
    open_demo(window, qtbot, read_only_demo)
    window.tour.start(0)
    window.show_page("evaluate")
    qtbot.waitUntil(lambda: window.page_widgets["evaluate"].findChild(LauncherView) is not None, timeout=20_000)
    view = window.page_widgets["evaluate"].findChild(LauncherView)
    qtbot.waitUntil(lambda: view.runs_table.rowCount() == 14, timeout=20_000)
    qtbot.wait(100)
    form = view.form_scroll
    assert view.splitter.orientation() == Qt.Orientation.Horizontal
    assert form.widget().minimumSizeHint().width() <= form.viewport().width(), (
        f"the form needs {form.widget().minimumSizeHint().width()} in {form.viewport().width()}"
    )
    assert not form.horizontalScrollBar().isVisible()
    table = view.runs_table
    assert not table.horizontalScrollBar().isVisible(), (
        f"runs {table.horizontalHeader().length()} in {table.viewport().width()}, halves {view.splitter.sizes()}"
    )
    assert not window.page_scroll.horizontalScrollBar().isVisible()
    view.splitter.moveSplitter(view.splitter.sizes()[0] + 40, 1)  # a person's drag: kept at the next resize
    dragged = view.splitter.sizes()
    window.resize(LAPTOP.width() - 1, LAPTOP.height())
    qtbot.wait(50)
    assert view.split_dragged and abs(view.splitter.sizes()[0] - dragged[0]) <= 1


def test_an_elided_combo_box_goes_down_to_a_few_characters_whenever_it_was_filled(qtbot):
    from spokenbench.widgets.elided import LEAST_CHARACTERS, ElidedComboBox

    long_item = "none (only the orders above) and a good deal more"
    before, after = ElidedComboBox(), ElidedComboBox()
    before.addItems([long_item, "cyclic"])
    for box in (before, after):
        qtbot.addWidget(box)
        box.show()
    after.addItems([long_item, "cyclic"])
    least = max(box.minimumSizeHint().width() for box in (before, after))
    characters = LEAST_CHARACTERS * before.fontMetrics().averageCharWidth()
    assert characters < least < before.fontMetrics().horizontalAdvance(long_item)
    assert before.minimumSizeHint().width() == after.minimumSizeHint().width()
    assert before.sizeHint().width() > before.fontMetrics().horizontalAdvance(long_item)  # it asks for it whole


def test_the_dialogs_fit_a_laptop_screen_at_150_percent(qtbot, runner, tmp_path):
    from spokenbench.app.settings_dialog import SettingsDialog
    from spokenbench.app.text_size import apply_text_size
    from spokenbench.widgets.queue_dialog import QueueDialog
    from spokenbench.widgets.recording_view import AddSpeakerDialog, ConsentDialog

    apply_text_size(150)
    settings = SettingsDialog(settings_in(tmp_path), runner)
    for dialog in (settings, QueueDialog(), AddSpeakerDialog(), ConsentDialog("Mina", "I agree.", "coordinator")):
        qtbot.addWidget(dialog)
        assert dialog.font().pointSizeF() == pytest.approx(desktop_font().pointSizeF() * 1.5)
        least = dialog.minimumSizeHint()
        assert least.width() <= LAPTOP.width() and least.height() <= LAPTOP.height(), (type(dialog).__name__, least)


@pytest.mark.slow
def test_the_results_page_with_the_tour_open_never_scrolls_sideways_at_150_percent(
    shown_window, qtbot, tmp_path, read_only_demo
):
    """The tour's dock takes a third of the window: the figure's buttons went off to the right ('P' of Published),
    and the gender panel's rows (three voices side by side, the model and two buttons, a long note) made the
    figures' area 886 pixels wide in 637 at 150 % (670 in 474 at 100 % with the tour open)."""
    from PySide6.QtWidgets import QScrollArea

    from spokenbench.core.demo.tour import TOUR
    from spokenbench.widgets.gender_panel import GenderPanel

    window = shown_window(settings_in(tmp_path), size=None)
    window.resize(LAPTOP)
    open_demo(window, qtbot, read_only_demo)
    window.set_text_size(150)
    window.tour.start(0)
    qtbot.waitUntil(lambda: getattr(window.page_widgets["results"], "panels", None) is not None, timeout=60_000)
    results = window.page_widgets["results"]
    for index in range(len(TOUR)):
        window.tour.show_step(index)
        qtbot.wait(100)
        sideways = [area for area in results.findChildren(QScrollArea) if area.horizontalScrollBar().isVisible()]
        assert not window.page_scroll.horizontalScrollBar().isVisible(), f"step {index + 1}: the page scrolls"
        assert not sideways, f"step {index + 1}: {[area.widget().minimumSizeHint() for area in sideways]}"
        buttons = results.view.figure_buttons.geometry()
        assert buttons.right() <= results.view.width(), f"step {index + 1}: the figure's buttons cut off"
    gender = results.findChildren(GenderPanel)
    assert gender, "the tour shows the gender panel"
    assert gender[0].minimumSizeHint().width() <= gender[0].width()


@pytest.mark.slow
def test_the_tour_goes_below_the_page_where_a_page_would_scroll_sideways_beside_it(
    shown_window, qtbot, tmp_path, read_only_demo
):
    """With the text made larger and the guided tour open, Items, Rewrites, QC, Speakers and Evaluate scrolled
    sideways (Rewrites 782 pixels in 650 at 175 % on a laptop, 889 in 564 at 200 %). The tour's dock goes below
    the page once a page does not fit beside it, and back beside it once the text is smaller; a dock a person
    put somewhere stays there."""
    from spokenbench.app.tour import DOCK_WIDTH

    window = shown_window(settings_in(tmp_path), size=None)
    window.resize(LAPTOP)
    open_demo(window, qtbot, read_only_demo)
    window.tour.start(0)
    area = window.dockWidgetArea

    def visit_every_page(state: str) -> None:
        for key, _name in PAGES:
            window.show_page(key)
            qtbot.waitUntil(
                lambda key=key: type(window.page_widgets[key]).__name__ != "PlaceholderPage", timeout=20_000
            )
            qtbot.wait(50)  # laid out
            sideways = window.page_scroll.horizontalScrollBar().isVisible
            try:
                qtbot.waitUntil(lambda sideways=sideways: not sideways(), timeout=2_000)  # the move is animated
            except qtbot.TimeoutError:
                pass
            page, room = window.page_stack.currentWidget(), window.page_scroll.viewport().width()
            assert not sideways(), f"{key} {state}: {page.minimumSizeHint().width()} in {room}"

    for percent in (100, 150):  # every page fits beside it
        window.set_text_size(percent)
        visit_every_page(f"at {percent} %")
        assert area(window.tour.dock) == Qt.DockWidgetArea.RightDockWidgetArea
    for percent in (175, 200):
        window.set_text_size(percent)
        visit_every_page(f"at {percent} %")  # Items the first page too wide beside it: the dock goes below
        assert area(window.tour.dock) == Qt.DockWidgetArea.BottomDockWidgetArea
        assert window.tour.is_open() and window.tour.dock.isVisible()
        window.show_page("speakers")  # a low page: it scrolls down, its lines of buttons never drawn over each other
        recorder = window.page_widgets["speakers"].view
        drawn = [*recorder.buttons.values(), recorder.reading_list_button, recorder.project_button]
        try:
            qtbot.waitUntil(lambda drawn=drawn: not overlapping(drawn), timeout=2_000)  # laid out in events posted
        except qtbot.TimeoutError:
            pass
        assert not overlapping(drawn)
    window.set_text_size(125)
    qtbot.waitUntil(lambda: area(window.tour.dock) == Qt.DockWidgetArea.RightDockWidgetArea, timeout=2_000)
    visit_every_page("at 125 %, beside again")
    window.set_text_size(100)  # as narrow as at the start: the dock kept the 350 pixels it had at 200 %
    qtbot.waitUntil(lambda: window.tour.dock.width() == DOCK_WIDTH + 10, timeout=2_000)
    # sent below at 100 % in a maximized window (a page that scrolled sideways a moment): neither a smaller text
    # nor a wider window can bring it back, the pages' fit does, at the next page shown
    window.tour._below_since = (1.0, window.width())
    window.tour._move_dock(below=True)
    window.show_page("items")
    qtbot.waitUntil(lambda: area(window.tour.dock) == Qt.DockWidgetArea.RightDockWidgetArea, timeout=2_000)
    # by the pages' fit once for a size: sent below again at it before a page showed that it fits, it stays (a
    # page the measure says fits but that does not would send it back and forth)
    window.tour._below_since = window.tour._back_by_fit = (1.0, window.width())
    window.tour._move_dock(below=True)
    window.tour.place()
    assert area(window.tour.dock) == Qt.DockWidgetArea.BottomDockWidgetArea
    window.tour._back_by_fit = None  # a page shown beside it fitted since
    window.tour.place()
    assert area(window.tour.dock) == Qt.DockWidgetArea.RightDockWidgetArea
    window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, window.tour.dock)  # as a person's drag does
    assert window.tour.placed_by_person
    window.set_text_size(200)
    window.show_page("rewrites")  # too wide beside it: the dock would go below
    qtbot.waitUntil(lambda: window.page_scroll.horizontalScrollBar().maximum() > 0, timeout=2_000)
    window.tour.place()
    assert area(window.tour.dock) == Qt.DockWidgetArea.LeftDockWidgetArea, "a dock a person placed was moved"


@pytest.mark.parametrize("percent", [100, 150, 200])
def test_the_key_help_is_all_in_view_at_any_text_size(qtbot, percent):
    """On a laptop's Rating page (the view about 940×560 beside the page list), the ? help was one column: at 150 %
    its last lines reached the view's bottom edge, and larger it was cut off there. Taller than the view, it is laid
    out in two columns, then smaller."""
    from spokenbench.app.text_size import apply_text_size
    from spokenbench.core.qc.rating_session import DEFAULT_KEYMAP
    from spokenbench.widgets.rating_view import RatingView

    apply_text_size(percent)
    view = RatingView()
    qtbot.addWidget(view)
    view.resize(940, 560)
    view.show()
    view.set_keymap(DEFAULT_KEYMAP)
    view.toggle_help()
    shown = view.help_overlay.geometry()
    assert view.rect().contains(shown), f"{shown} in {view.rect()}"
    assert "Larger, smaller, normal text" in view.help_overlay.text()
    two_columns = view.help_overlay.text().count("<tr>") < len(view.help_rows)
    if percent in (100, 200):  # where the font cannot decide it: one column fits at 100 %, none at 200 %
        assert two_columns == (percent == 200)


def title_rows(dock) -> int:
    """How many pixel rows the dock's drawn title takes: the first run of rows from the top with dark pixels."""
    image = dock.grab().toImage()
    dark = [any(image.pixelColor(x, y).lightness() < 100 for x in range(4, 120)) for y in range(image.height())]
    first = dark.index(True)
    return dark[first:].index(False)


def test_a_dock_s_title_grows_with_the_text(shown_window, qtbot, tmp_path):
    """A QDockWidget draws its title in the font it took when it was made: the tour's title stayed small."""
    window = shown_window(settings_in(tmp_path))
    window.tour.start(0)
    dock = window.tour.dock
    qtbot.waitUntil(dock.isVisible, timeout=5_000)
    normal = title_rows(dock)
    window.set_text_size(150)
    qtbot.wait(50)
    assert title_rows(dock) >= normal * 1.3
    assert window.tour.panel.font().pointSizeF() == pytest.approx(desktop_font().pointSizeF() * 1.5)  # its text too
    window.set_text_size(100)
    qtbot.wait(50)
    assert title_rows(dock) == normal


def test_a_theme_s_own_fonts_for_menus_are_kept_and_scaled(qapp):
    """macOS and KDE give menus, tooltips and headers fonts of their own; QApplication.setFont(font) drops them
    all, and the menus took the text's font after the first change (Ctrl+0 too)."""
    from PySide6.QtGui import QFont

    from spokenbench.app import text_size

    menus = QFont(QApplication.font())
    menus.setPointSizeF(menus.pointSizeF() + 3)
    QApplication.setFont(menus, "QMenu")  # as a platform theme sets it at the start
    text_size._desktop_font = None
    text_size.apply_text_size(150)
    assert QApplication.font("QMenu").pointSizeF() == pytest.approx(menus.pointSizeF() * 1.5)
    text_size.apply_text_size(100)
    assert QApplication.font("QMenu").pointSizeF() == pytest.approx(menus.pointSizeF())


def test_the_key_help_left_open_on_a_page_not_shown_is_sized_for_the_text_on_coming_back(qtbot):
    """? open, another page shown (Ctrl+6), the text made larger there, back to the Rating page: the help is laid
    out again for the larger text (Qt hands a page not shown its font change as it is shown again; the help's
    layout is kept per size and font, so the font must be part of what it was laid out for), not left at the size
    it had with its last lines cut off."""
    from spokenbench.app.text_size import apply_text_size
    from spokenbench.core.qc.rating_session import DEFAULT_KEYMAP
    from spokenbench.widgets.rating_view import RatingView

    pages = QStackedWidget()
    qtbot.addWidget(pages)
    view = RatingView()
    pages.addWidget(view)
    pages.addWidget(QWidget())  # another page
    pages.resize(940, 560)
    pages.show()
    qtbot.waitExposed(pages)
    view.set_keymap(DEFAULT_KEYMAP)
    view.toggle_help()
    pages.setCurrentIndex(1)
    apply_text_size(125)
    pages.setCurrentIndex(0)
    QApplication.processEvents()
    help_shown = view.help_overlay
    assert help_shown.isVisible()
    assert help_shown.heightForWidth(help_shown.width()) <= help_shown.height(), "the help's last lines cut off"
    assert view.rect().contains(help_shown.geometry())
