"""The flow layout (widgets/flow_layout.py) that lets rows of buttons wrap with larger text: items keep their
order and size, wrap only when the line is full, are centred in their line's height, share the room left among
those that expand, and the height it asks for its width is the height it takes."""

from PySide6.QtWidgets import QCheckBox, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget
from support import overlapping

from spokenbench.widgets.flow_layout import FlowLayout


def laid_out(qtbot, width: int):
    page = QWidget()
    qtbot.addWidget(page)
    outer = QVBoxLayout(page)
    outer.setContentsMargins(0, 0, 0, 0)
    flow = FlowLayout()
    outer.addLayout(flow)
    outer.addStretch(1)
    toggle, png, svg = QCheckBox("Published (paper)"), QPushButton("PNG…"), QPushButton("SVG…")
    wide = QLabel("the room left")
    wide.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
    for widget in (toggle, png, svg, wide):
        flow.addWidget(widget)
    page.resize(width, 300)
    page.show()
    qtbot.waitExposed(page)
    return page, flow, (toggle, png, svg, wide)  # the page kept: qtbot holds it weakly


def test_one_line_when_there_is_room_centred_in_its_height_and_the_room_left_to_what_expands(qtbot):
    _page, flow, (toggle, png, svg, wide) = laid_out(qtbot, 800)
    assert len({w.geometry().center().y() for w in (toggle, png, svg)}) == 1  # one line, centred alike
    assert toggle.geometry().right() < png.geometry().left() < svg.geometry().left() < wide.geometry().left()
    assert png.width() == png.sizeHint().width()
    assert wide.geometry().right() == 800 - 1  # the line's room left
    assert flow.heightForWidth(800) == max(w.sizeHint().height() for w in (toggle, png, svg, wide))


def test_a_narrow_row_wraps_in_order_and_asks_for_the_height_it_takes(qtbot):
    _page, flow, widgets = laid_out(qtbot, 2 * 90)
    tops = [w.geometry().top() for w in widgets]
    assert tops == sorted(tops) and len(set(tops)) >= 3  # in order, on three lines at least
    for widget in widgets:
        assert widget.geometry().right() < 2 * 90, widget  # none past the edge
    bottom = max(w.geometry().bottom() for w in widgets) + 1
    assert flow.heightForWidth(2 * 90) == bottom - flow.geometry().top()
    hidden = widgets[1]
    hidden.hide()  # a hidden button takes no room
    assert flow.heightForWidth(2 * 90) < bottom - flow.geometry().top()


def test_a_stretch_puts_what_follows_it_at_the_right_of_its_line(qtbot):
    from spokenbench.widgets.flow_layout import flow_row

    page = QWidget()
    qtbot.addWidget(page)
    load, clone = QPushButton("Load reading list…"), QPushButton("Create cloned voice")
    row = flow_row(load, None, clone)
    outer = QVBoxLayout(page)
    outer.setContentsMargins(0, 0, 0, 0)
    outer.addLayout(row)
    page.resize(600, 100)
    page.show()
    qtbot.waitExposed(page)
    assert load.geometry().left() == 0 and clone.geometry().right() == 600 - 1
    assert row.heightForWidth(row.sizeHint().width()) == row.sizeHint().height()  # its one-line width is one line
    page.resize(load.sizeHint().width() + 4, 200)  # too narrow for both: the clone's button on a line of its own
    qtbot.waitUntil(lambda: clone.geometry().top() > load.geometry().bottom(), timeout=2_000)


def test_columns_follow_the_width_every_item_as_wide_as_the_widest_in_order(qtbot):
    """The recorder's take buttons: rows of three while three fit, then two, then one; a grid's columns each time."""
    from spokenbench.widgets.flow_layout import ColumnsLayout

    page = QWidget()
    qtbot.addWidget(page)
    outer = QVBoxLayout(page)
    outer.setContentsMargins(0, 0, 0, 0)
    columns = ColumnsLayout(most=3)
    outer.addLayout(columns)
    outer.addStretch(1)
    buttons = [QPushButton(text) for text in ("Record / Stop  (R)", "Retake  (Backspace)", "Play  (Space)", "Next")]
    for button in buttons:
        columns.addWidget(button)
    page.show()
    qtbot.waitExposed(page)
    cell = max(button.sizeHint().width() for button in buttons)
    spacing = columns.spacing()
    assert columns.minimumSize().width() == cell and page.minimumSizeHint().width() == cell
    for width, expected in ((3 * cell + 2 * spacing + 40, 3), (3 * cell + 2 * spacing - 1, 2), (2 * cell, 1)):
        page.resize(width, 400)
        qtbot.waitUntil(lambda width=width: page.width() == width)
        lefts = sorted({button.geometry().left() for button in buttons})
        assert len(lefts) == expected == columns.columns_for(width), (width, lefts)
        widths = {button.width() for button in buttons}
        assert len(widths) == 1 and widths.pop() >= cell  # one width: aligned columns, no text cut
        order = sorted(buttons, key=lambda button: (button.geometry().top(), button.geometry().left()))
        assert order == buttons  # read in order, row by row
        assert buttons[-1].geometry().bottom() < columns.heightForWidth(width) + 1
        assert max(button.geometry().right() for button in buttons) < width


def test_squeezed_in_a_splitter_the_lines_never_overlap_what_is_below_them(qtbot):
    """A splitter does not ask a layout for its height at its width: on a laptop at 125 % (and at 200 % with the
    guided tour below the page) the Speakers page's recorder was given less than its lines need, and its
    reading-list buttons were drawn over its take buttons. `WrappedHeight` holds the widget as high as its
    lines need at its width (the scroll area around it then scrolls down)."""
    from PySide6.QtWidgets import QScrollArea, QSplitter

    from spokenbench.widgets.flow_layout import ColumnsLayout, WrappedHeight, flow_row

    area = QScrollArea()
    area.setWidgetResizable(True)
    qtbot.addWidget(area)
    splitter = QSplitter()
    splitter.addWidget(QLabel("a list"))
    recorder = QWidget()
    splitter.addWidget(recorder)
    column = QVBoxLayout(recorder)
    grid = ColumnsLayout(most=3)
    takes = [QPushButton(f"Take button {n}  (Key {n})") for n in range(6)]
    for button in takes:
        grid.addWidget(button)
    extra_buttons = [QPushButton("Load reading list…"), QPushButton("Use project questions")]
    column.addLayout(grid)
    column.addLayout(flow_row(*extra_buttons))
    wrapped = QLabel("a status line long enough to wrap onto a second line where the recorder is narrow " * 2)
    wrapped.setWordWrap(True)
    column.addWidget(wrapped)
    _held = WrappedHeight(recorder)  # parented to it, as the recorder keeps its own
    area.setWidget(splitter)
    area.resize(2 * takes[0].sizeHint().width() + 160, 90)  # two take buttons a row at most
    area.show()
    qtbot.waitExposed(area)
    qtbot.wait(50)  # laid out again once the lines are counted

    assert grid.columns_for(grid.geometry().width()) < 3  # more than one line of take buttons
    assert not overlapping([*takes, *extra_buttons]), overlapping([*takes, *extra_buttons])
    assert wrapped.geometry().top() > max(button.geometry().bottom() for button in extra_buttons)
    assert wrapped.height() >= wrapped.heightForWidth(wrapped.width())  # every line of it
    narrow_least = recorder.minimumHeight()
    assert narrow_least > recorder.minimumSizeHint().height()  # held higher than its one-line least
    area.resize(3 * takes[0].sizeHint().width() + 400, 90)  # three a row: less height, given back
    qtbot.wait(50)
    assert not overlapping([*takes, *extra_buttons]), overlapping([*takes, *extra_buttons])
    assert recorder.minimumHeight() < narrow_least
    splitter.setSizes([sum(splitter.sizes()), 0])  # the recorder dragged shut: no height held for a width of 0
    qtbot.wait(50)
    assert recorder.width() == 0 and recorder.minimumHeight() == recorder.minimumSizeHint().height()
