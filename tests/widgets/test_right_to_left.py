"""Arabic and Hebrew text in the app's tables (widgets/bidi.py): each cell laid out in its own text's direction,
as a paragraph is, so a question's final '؟' or '?' sits at its end (the left) and the text starts at the cell's
right edge; Latin and digit-only cells stay left to right."""

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QStyleOptionViewItem, QTableWidgetItem

from spokenbench.core.rewriting.flagging import FlaggedRewrite
from spokenbench.widgets.bidi import is_right_to_left, isolated, isolated_option
from spokenbench.widgets.items_table import ItemsPanel
from spokenbench.widgets.rewrite_review import RewriteReviewView
from spokenbench.widgets.tables import row_table

QUESTION = 6


@pytest.mark.parametrize(
    "text, right_to_left",
    [
        ("ما هي عاصمة فرنسا؟", True),
        ("מהי בירת יפן?", True),
        ("12 × 12 ما ناتج", True),  # digits are weak: the first letter decides
        ("(H2O) كم عدد ذرات", False),  # a Latin letter first: left to right, as Qt lays out a paragraph
        ("A. باريس | B. ليون", False),
        ("What is the capital of France?", False),
        ("1948", False),
        ("", False),
    ],
)
def test_a_text_s_direction_is_its_first_strong_character_s(text, right_to_left):
    assert is_right_to_left(text) is right_to_left


def _row(item_id, language, question, options):
    """A row as core's item_browser_rows gives it: options as 'A. text'."""
    lettered = tuple(f"{letter}. {text}" for letter, text in zip("ABCD", options))
    return (item_id, f"{language}-{item_id}", language, "mcq", "", "A", question, lettered, "", "", "", "")


def _inked_columns(image: QImage, left: int, right: int, top: int, bottom: int) -> list[int]:
    """The x positions in [left, right) where some pixel of rows [top, bottom) is dark (text)."""
    inked = []
    for x in range(left, right):
        if any(QColor(image.pixel(x, y)).lightness() < 110 for y in range(top, bottom)):
            inked.append(x)
    return inked


def test_the_items_table_lays_an_arabic_or_hebrew_question_out_right_to_left_from_the_cell_s_right_edge(qtbot):
    panel = ItemsPanel()
    qtbot.addWidget(panel)
    panel.resize(1300, 500)
    panel.set_rows(
        [
            _row(1, "ar", "ما هي عاصمة فرنسا؟", ["باريس", "ليون", "مرسيليا", "نيس"]),
            _row(2, "he", "מהי בירת יפן?", ["טוקיו", "אוסקה", "קיוטו", "נגויה"]),
            _row(3, "en", "What is the capital of France?", ["Paris", "Lyon", "Marseille", "Nice"]),
        ]
    )
    panel.show()
    qtbot.waitExposed(panel)
    table = panel.table
    delegate = table.itemDelegate()
    directions = []
    for row in range(3):
        option = QStyleOptionViewItem()
        delegate.initStyleOption(option, panel.model.index(row, QUESTION, QModelIndex()))
        directions.append(option.direction)
    assert directions == [
        Qt.LayoutDirection.RightToLeft,
        Qt.LayoutDirection.RightToLeft,
        Qt.LayoutDirection.LeftToRight,
    ]

    table.clearSelection()  # no highlighted row: dark pixels are text
    image = table.viewport().grab().toImage()
    left, width = table.columnViewportPosition(QUESTION), table.columnWidth(QUESTION)
    middle = left + width // 2
    for row, starts_right in ((0, True), (1, True), (2, False)):
        top = table.rowViewportPosition(row)
        inked = _inked_columns(image, left + 1, left + width - 1, top + 3, top + table.rowHeight(row) - 3)
        assert inked, f"row {row}: no text drawn"
        if starts_right:  # before: drawn from the left edge, its '؟' / '?' at the right end
            assert min(inked) > middle and max(inked) > left + width - 12, (row, min(inked), max(inked), left, width)
        else:
            assert max(inked) < middle and min(inked) < left + 12, (row, min(inked), max(inked), left, width)


def test_the_shared_row_tables_follow_each_cell_s_direction_too(qtbot):
    """Rating queues, recordings and the other row tables (widgets/tables.row_table) take the same delegate."""
    table = row_table(("Text",))
    qtbot.addWidget(table)
    table.setRowCount(1)
    table.setItem(0, 0, QTableWidgetItem("איזה איבר שואב דם בגוף האדם."))
    option = QStyleOptionViewItem()
    table.itemDelegate().initStyleOption(option, table.model().index(0, 0))
    assert option.direction == Qt.LayoutDirection.RightToLeft


def test_an_arabic_diff_keeps_the_page_s_font_where_a_latin_one_is_monospaced(qtbot):
    """Arabic drawn in a monospace font loses its joined letters; Latin keeps the monospace that lines markers up."""
    view = RewriteReviewView()
    qtbot.addWidget(view)
    arabic = FlaggedRewrite(1, 1, "ar-2", "ar", "question", "الماء (H2O)؟", "الماء؟", "…الماء[-(h2o)-]؟", "flagged")
    english = FlaggedRewrite(2, 2, "en-1", "en", "question", "x^2 = 4", "x squared is four", "[-x^2=4-]{+x…", "flagged")
    view.set_entries([arabic, english], keep_position=False)
    assert "monospace" not in view.diff_label.styleSheet() and "(h2o)" in view.diff_label.text()
    view.set_entries([english, arabic], keep_position=False)
    assert "monospace" in view.diff_label.styleSheet()


def test_right_to_left_text_inside_a_left_to_right_line_is_isolated_and_other_text_left_alone():
    assert isolated("אוסקה.") == "\u2068אוסקה.\u2069"
    assert isolated("Osaka.") == "Osaka." and isolated("1948") == "1948"
    assert isolated_option("A. النيوتن (N)") == "A. \u2068النيوتن (N)\u2069"
    assert isolated_option("B. 144") == "B. 144"


def test_the_items_table_isolates_each_arabic_option_and_the_rating_view_each_transcript(qtbot):
    panel = ItemsPanel()
    qtbot.addWidget(panel)
    panel.set_rows([_row(1, "ar", "ما وحدة قياس القوة؟", ["النيوتن (N)", "الجول"])])
    options = panel.model.data(panel.model.index(0, 7))
    assert options == "A. \u2068النيوتن (N)\u2069 | B. \u2068الجول\u2069"
    # the row's answer is A: its line in the detail is bold, its text isolated too
    panel.table.selectRow(0)
    assert "A. \u2068النيوتن (N)\u2069 ✓" in panel.detail.header.toPlainText()


def test_an_isolated_transcript_is_drawn_with_its_final_mark_on_its_left():
    """The same label text drawn with and without the isolate: the Hebrew word's '.' moves to its left."""
    from PySide6.QtWidgets import QLabel

    def inked_columns(text):
        label = QLabel()
        label.setTextFormat(Qt.TextFormat.PlainText)
        label.setText(text)
        label.setStyleSheet("background: white; color: black")
        label.resize(300, 30)
        image = label.grab().toImage()
        return {  # x → how many pixels of that column are inked
            x: sum(QColor(image.pixel(x, y)).lightness() < 110 for y in range(image.height()))
            for x in _inked_columns(image, 0, image.width(), 0, image.height())
        }

    plain, isolated_line = inked_columns("asr-b: אוסקה."), inked_columns(f"asr-b: {isolated('אוסקה.')}")
    # the line's rightmost ink: the period's dot (a few pixels high) before, a Hebrew letter's stroke after
    assert plain[max(plain)] <= 3 < isolated_line[max(isolated_line)], (plain, isolated_line)


def test_a_diff_with_arabic_after_latin_letters_keeps_the_page_s_font_too(qtbot):
    view = RewriteReviewView()
    qtbot.addWidget(view)
    mixed = FlaggedRewrite(3, 3, "ar-6", "ar", "question", "(SI) النظام", "النظام", "…(si)[-x-]{+س+}", "flagged")
    view.set_entries([mixed], keep_position=False)
    assert "monospace" not in view.diff_label.styleSheet()
