"""A column a person widened by dragging its edge keeps that width: through a refill, a refit and a restart, as a
spreadsheet or Anki's browser does. Before, the table's next fit put every column back: an item's tabs at each ↓
in the item list, a QC table at each refresh, every table at each start."""

import pytest
from header_drags import drag_edge
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTableWidgetItem

from spokenbench.widgets import qc_tables, tables
from spokenbench.widgets.qc_tables import QcTable, QcTableSection
from spokenbench.widgets.tables import ColumnMemory, FittedColumns, row_table

LONG = "two and negative five, read as the question's own words say it in the rewrite " * 2
COLUMNS = ("Part", "Version", "Status", "Text", "Origin", "Reviewer")


@pytest.fixture
def memory(tmp_path, monkeypatch) -> ColumnMemory:
    """The app's memory of dragged widths, bound to settings of the test's own (as `MainWindow` binds the app's)."""
    memory = ColumnMemory(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    monkeypatch.setattr(tables, "column_memory", memory)
    return memory


def fill(table, rows) -> None:
    table.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            table.setItem(r, c, QTableWidgetItem(text))
    table.fitted.fit()


def item_table(qtbot, width=700):
    table = row_table(COLUMNS)
    table.fitted = FittedColumns(table, wrapped=[3], name="item-rewrites")
    qtbot.addWidget(table)
    table.resize(width, 300)
    table.show()
    qtbot.waitExposed(table)
    fill(table, [("question", "1", "approved", LONG, "llm:demo", "ana")])
    return table


def test_a_dragged_column_keeps_its_width_through_a_refill_and_a_resize(qtbot, memory):
    table = item_table(qtbot)
    fitted_origin = table.columnWidth(4)
    drag_edge(table, 4, 60)  # Origin widened, as a person reads long model names
    dragged = table.columnWidth(4)
    assert dragged >= fitted_origin + 50, (fitted_origin, dragged)
    fill(table, [("option_A", "2", "edited", LONG + "more", "llm:other", "li")])  # ↓: the next item
    assert table.columnWidth(4) == dragged
    table.resize(640, 300)  # the window narrowed: the others share what is left
    qtbot.waitUntil(lambda: table.viewport().width() == table.fitted.fitted_width, timeout=2_000)
    assert table.columnWidth(4) == dragged
    room = table.viewport().width()
    assert sum(table.columnWidth(c) for c in range(len(COLUMNS))) <= room + 1  # every column still in view
    assert memory.of("item-rewrites") == {"Origin": dragged}


def test_widths_set_by_code_are_never_taken_for_a_persons(qtbot, memory):
    """Found by the review: a QC refresh with the button down on the header was kept as the person's drag (the
    column fixed at its content width, across restarts), and the drag itself then ignored."""
    table = item_table(qtbot)
    table.resize(520, 300)  # a refit, and code widths of its own
    qtbot.waitUntil(lambda: table.viewport().width() == table.fitted.fitted_width, timeout=2_000)
    table.setColumnWidth(2, 200)
    QTest.mouseClick(table.horizontalHeader().viewport(), Qt.MouseButton.LeftButton)  # a click, no drag
    assert memory.of("item-rewrites") == {}
    header = table.horizontalHeader()
    edge = header.sectionViewportPosition(4) + header.sectionSize(4) - 1
    y = header.height() // 2
    QTest.mousePress(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, QPoint(edge, y))
    table.setColumnWidth(1, 150)  # a refresh's own sizing while the button is down on Origin's edge
    fill(table, [("question", "2", "edited", LONG, "llm:demo", "li")])
    QTest.mouseMove(header.viewport(), QPoint(edge + 40, y))
    QTest.mouseRelease(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       QPoint(edge + 40, y))  # fmt: skip
    assert list(memory.of("item-rewrites")) == ["Origin"]  # the drag, and only the drag


def test_a_gender_probes_question_table_keeps_a_dragged_column_when_it_is_filled_again(qtbot, memory):
    from spokenbench.widgets.gender_panel import GenderPanel

    panel = GenderPanel()
    qtbot.addWidget(panel)
    table = panel.question_table
    table.setRowCount(1)
    for column in range(table.columnCount()):
        table.setItem(0, column, QTableWidgetItem(f"cell {column}"))
    panel.resize(900, 600)
    panel.show()
    qtbot.waitExposed(panel)
    panel._fit_questions()
    table.show()
    drag_edge(table, 1, 70)
    dragged = table.columnWidth(1)
    panel._fit_questions()  # the next model picked: the table filled and fitted again
    assert table.columnWidth(1) == dragged and len(memory.of("gender-questions")) == 1


def test_a_double_click_on_the_edge_fits_the_column_again_and_forgets_the_drag(qtbot, memory):
    table = item_table(qtbot)
    fitted_origin = table.columnWidth(4)
    drag_edge(table, 4, 80)
    assert memory.of("item-rewrites")
    header = table.horizontalHeader()
    edge = header.sectionViewportPosition(4) + header.sectionSize(4) - 1
    QTest.mouseDClick(header.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                      QPoint(edge, header.height() // 2))  # fmt: skip
    qtbot.waitUntil(lambda: table.columnWidth(4) == fitted_origin, timeout=2_000)
    assert memory.of("item-rewrites") == {}


def test_a_dragged_width_is_kept_for_the_next_start_and_a_garbled_one_is_not_used(qtbot, memory, tmp_path):
    table = item_table(qtbot)
    drag_edge(table, 4, 60)
    dragged = table.columnWidth(4)
    memory.settings.sync()
    again = ColumnMemory(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    assert again.of("item-rewrites") == {"Origin": dragged}
    garbled = QSettings(str(tmp_path / "g.ini"), QSettings.Format.IniFormat)
    for name, value in {
        "a": "not json",
        "b": "[1, 2]",
        "c": '{"Origin": 10000000, "Text": -5, "Part": 3.5, "When": true, "Status": "wide"}',
        "d": '{"Origin": 120}',
    }.items():
        garbled.setValue(f"columns/{name}", value)
    read = ColumnMemory(garbled)
    assert [read.of(name) for name in "abcd"] == [{}, {}, {}, {"Origin": 120}]


def test_a_qc_tables_dragged_column_keeps_its_width_at_the_next_refresh(qtbot, memory):
    section = QcTableSection("disagreements")
    qtbot.addWidget(section)
    section.resize(700, 400)
    section.show()
    qtbot.waitExposed(section)
    data = QcTable("disagreements", "Disagreements", "caption", ["clip", "note"], [{"clip": "c1", "note": "n" * 40}])
    section.set_table(data)
    drag_edge(section.table, 0, 90)
    dragged = section.table.columnWidth(0)
    section.set_table(QcTable("disagreements", "Disagreements", "caption", ["clip", "note"], [{"clip": "c2"}]))
    assert section.table.columnWidth(0) == dragged
    assert memory.of("qc-disagreements") == {"clip": dragged}


def alt(qtbot, table, key) -> None:
    qtbot.keyClick(table, key, Qt.KeyboardModifier.AltModifier)


def with_the_keys(qtbot, table) -> None:
    """The table's window active and the table focused: where its Alt shortcuts act."""
    table.window().activateWindow()
    table.setFocus()
    qtbot.waitUntil(table.hasFocus, timeout=2_000)


def test_alt_arrows_widen_and_narrow_the_current_column_kept_as_a_drag_and_alt_backspace_fits_it_again(
    qtbot, memory, tmp_path, monkeypatch
):
    """Widths were the mouse's alone: from the keys, a cell cut off (…) could not be read whole. Alt+→ / Alt+←
    (LibreOffice Calc's keys) widen or narrow the current cell's column, kept through a refill and for the next
    start as a drag is; Alt+Backspace fits it again; the current cell stays where it was."""
    table = item_table(qtbot)
    fitted_origin = table.columnWidth(4)
    with_the_keys(qtbot, table)
    table.setCurrentCell(0, 4)
    step = tables.KEY_STEP_CHARACTERS * table.fontMetrics().averageCharWidth()
    for _ in range(3):
        alt(qtbot, table, Qt.Key.Key_Right)
    widened = table.columnWidth(4)
    assert widened == fitted_origin + 3 * step and table.currentColumn() == 4
    assert memory.of("item-rewrites") == {"Origin": widened}
    fill(table, [("option_A", "2", "edited", LONG + "more", "llm:other", "li")])  # ↓: the next item
    assert table.columnWidth(4) == widened
    room = table.viewport().width()
    assert sum(table.columnWidth(c) for c in range(len(COLUMNS))) <= room + 1  # the others share what is left
    alt(qtbot, table, Qt.Key.Key_Left)
    assert table.columnWidth(4) == widened - step
    memory.settings.sync()
    again = ColumnMemory(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    assert again.of("item-rewrites") == {"Origin": widened - step}
    fill(table, [("question", "1", "approved", LONG, "llm:demo", "ana")])  # ↑: the first item again
    alt(qtbot, table, Qt.Key.Key_Backspace)
    qtbot.waitUntil(lambda: table.columnWidth(4) == fitted_origin, timeout=2_000)
    assert memory.of("item-rewrites") == {} and table.currentColumn() == 4
    rang = []
    monkeypatch.setattr(tables.QApplication, "beep", lambda: rang.append(table.columnWidth(4)))
    while not rang:  # narrower down to its least: then the bell, nothing kept
        alt(qtbot, table, Qt.Key.Key_Left)
    assert rang == [table.horizontalHeader().minimumSectionSize()] == [table.columnWidth(4)]
    qtbot.keyClick(table, Qt.Key.Key_Right)  # the arrow alone still moves
    assert table.currentColumn() == 5


def test_alt_arrows_leave_a_column_that_fills_the_rest_and_the_current_cell_alone(qtbot, memory):
    """The Items page's Question column takes what the others leave: no width of its own to change."""
    from spokenbench.widgets.items_table import ItemsPanel

    panel = ItemsPanel()
    qtbot.addWidget(panel)
    panel.resize(1200, 600)
    panel.show()
    qtbot.waitExposed(panel)
    row = (1, "demo/001", "en", "mcq", "CA", "A", "What is two plus two?", ["A. 3", "B. 4"], "math", "", "", "")
    panel.set_rows([row])
    table = panel.table
    with_the_keys(qtbot, table)
    table.setCurrentIndex(panel.model.index(0, 6))  # Question
    question, options = table.columnWidth(6), table.columnWidth(7)
    alt(qtbot, table, Qt.Key.Key_Right)
    assert (table.columnWidth(6), table.currentIndex().column()) == (question, 6) and memory.of("items") == {}
    table.setCurrentIndex(panel.model.index(0, 7))  # Options: wider, and the question gives way
    alt(qtbot, table, Qt.Key.Key_Right)
    assert table.columnWidth(7) > options and table.columnWidth(6) < question
    assert list(memory.of("items")) == ["Options"]


def test_a_qc_column_widened_past_the_table_leaves_the_others_at_their_narrowest(qtbot, memory):
    """Found in review: once the person's column took the whole width, the QC fit stopped narrowing and put the
    other columns back at their natural widths (up to 420 px), then narrow again at the next Alt+←."""
    section = QcTableSection("disagreements")
    qtbot.addWidget(section)
    section.resize(500, 300)
    section.show()
    qtbot.waitExposed(section)
    columns = ["clip", "annotator", "note"]
    section.set_table(QcTable("disagreements", "Disagreements", "caption", columns,
                              [{"clip": "c1", "annotator": "ana " * 12, "note": "n" * 60}]))  # fmt: skip
    table = section.table
    with_the_keys(qtbot, table)
    table.setCurrentCell(0, 0)
    widths = []
    while table.columnWidth(0) <= table.viewport().width():
        alt(qtbot, table, Qt.Key.Key_Right)
        widths.append((table.columnWidth(1), table.columnWidth(2)))
    assert widths[-1] == (qc_tables.MIN_COLUMN, qc_tables.MIN_COLUMN), widths
    assert all(others <= widths[0] for others in widths), widths  # never wider again as the column grows
