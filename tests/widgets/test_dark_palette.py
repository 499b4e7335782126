"""Dark mode (Windows, macOS, and GNOME through Qt's gtk3 theme hand the app a dark palette): text coloured for a
light window all but vanished. The Rewrites review's key line was #444 on #323232 (1.3:1), its diff marks white
text on light green and pink (1.3:1), the Results panel's description #555 (1.7:1), the Evaluate page's note
palette(dark) (1.1:1, and 2.3:1 on the light palette too), the jobs panel's details the same, the status bar's
"No font" #b00020 (1.75:1). Every text is now at least WCAG AA's 4.5:1 (3:1 for the focus ring, a line) on the
light and dark palettes, measured as drawn: the background from the widget's own pixels, the text colours from
its palette and its rich text."""

import re

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QLabel

from spokenbench.core.rewriting.flagging import FlaggedRewrite
from spokenbench.widgets.jobs_panel import STATES, BatchesView, BatchRow, JobRow, JobsPanel
from spokenbench.widgets.rewrite_review import RewriteReviewView
from spokenbench.widgets.tones import TONES, tone

# Qt's gtk3 theme on GNOME with Adwaita:dark, as this machine's Xvfb gave it (QT_QPA_PLATFORMTHEME=gtk3
# GTK_THEME=Adwaita:dark); the light one is Qt's Fusion palette
ADWAITA_DARK = {
    "WindowText": "#ffffff", "Button": "#323232", "Light": "#3e3e3e", "Midlight": "#383838", "Dark": "#2c2c2c",
    "Mid": "#383838", "Text": "#ffffff", "ButtonText": "#ffffff", "Base": "#323232", "Window": "#323232",
    "Shadow": "#020202", "Highlight": "#15539e", "HighlightedText": "#ffffff", "AlternateBase": "#2f2f2f",
    "PlaceholderText": "#9b9b9b",
}  # fmt: skip
# window and base colours of the common desktops' palettes, light and dark (Fusion, Windows 11, Adwaita, macOS)
LIGHT_GROUNDS = ("#efefef", "#ffffff", "#f0f0f0", "#f3f3f3", "#f6f5f4", "#ececec", "#fafafa")
DARK_GROUNDS = ("#323232", "#2d2d2d", "#353535", "#3c3c3c", "#202020", "#1c1c1c", "#191919", "#1e1e1e", "#242424")
TEXT_CONTRAST, LINE_CONTRAST = 4.5, 3.0  # WCAG 2.1 AA: 1.4.3 text, 1.4.11 non-text (the focus ring)


def luminance(colour: QColor) -> float:
    channels = np.array(colour.getRgb()[:3], float) / 255
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def palette_of(colours: dict[str, str]) -> QPalette:
    """A palette with these roles' colours (role name → #rrggbb), Qt's defaults for the others."""
    palette = QPalette()
    for role, colour in colours.items():
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(colour))
    return palette


def adwaita_dark() -> QPalette:
    return palette_of(ADWAITA_DARK)


@pytest.fixture
def application_palette(qapp):
    """use(palette) → the application's palette for the test (as the desktop's theme sets it); restored after."""
    before = QPalette(qapp.palette())
    yield lambda palette: qapp.setPalette(palette)
    qapp.setPalette(before)


def pixels_of(widget) -> np.ndarray:
    """The widget as drawn, (height, width, 3) RGB."""
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)
    return rows[:, : image.width(), 2::-1].copy()  # its own memory: the image goes when this returns


def background_in(window_pixels: np.ndarray, label: QLabel) -> QColor:
    """The colour most of the label's pixels have in its window's picture: what its text stands on on screen (a
    grab of the label alone would paint its own palette's window colour, stale after a switch, under it)."""
    corner = label.mapTo(label.window(), QPoint(0, 0))
    area = window_pixels[corner.y() : corner.y() + label.height(), corner.x() : corner.x() + label.width()]
    colours, counts = np.unique(area.reshape(-1, 3), axis=0, return_counts=True)
    return QColor(*(int(value) for value in colours[counts.argmax()]))


def text_colours(label: QLabel) -> list[QColor]:
    """The label's own text colour (its palette, style sheet included) and each colour its rich text names."""
    label.ensurePolished()
    named = re.findall(r"color:\s*(#[0-9a-fA-F]{3,6})", label.text())
    return [label.palette().color(label.foregroundRole()), *(QColor(colour) for colour in named)]


def label_colour(label: QLabel) -> str:
    return label.palette().color(label.foregroundRole()).name()


def unreadable_labels(root) -> list[str]:
    """Each visible, enabled label under root whose text is below 4.5:1 on what it is drawn on in its window."""
    found, windows = [], {}
    for label in root.findChildren(QLabel):
        if not (label.isVisible() and label.isEnabled() and label.text().strip()) or label.visibleRegion().isEmpty():
            continue
        window = label.window()
        if window not in windows:
            windows[window] = pixels_of(window)
        ground = background_in(windows[window], label)
        worst = min(contrast(colour, ground) for colour in text_colours(label))
        if worst < TEXT_CONTRAST:
            found.append(f"{label.objectName() or type(label.parent()).__name__}: {label.text()[:60]!r} {worst:.2f}:1")
    return found


def test_every_tone_is_readable_on_the_common_light_and_dark_palettes():
    for grounds, text in ((LIGHT_GROUNDS, "#000000"), (DARK_GROUNDS, "#ffffff")):
        for window in grounds:
            for base in grounds:
                palette = palette_of({"Window": window, "Base": base, "WindowText": text, "Text": text})
                for name in ("error", "warning", "success", "muted", "focus"):
                    needed = LINE_CONTRAST if name == "focus" else TEXT_CONTRAST
                    for ground in (window, base):
                        ratio = contrast(QColor(tone(name, palette)), QColor(ground))
                        assert ratio >= needed, f"{name} {tone(name, palette)} on {ground}: {ratio:.2f}:1"
                for mark in ("removed", "added"):  # a diff mark carries its own text colour on its own ground
                    ratio = contrast(QColor(tone(f"{mark}_text", palette)), QColor(tone(f"{mark}_bg", palette)))
                    assert ratio >= TEXT_CONTRAST, f"{mark} on {window}: {ratio:.2f}:1"
    for state, (_text, colour) in STATES.items():  # the jobs panel's badges: white on their colour
        assert contrast(QColor("#ffffff"), QColor(colour)) >= TEXT_CONTRAST, state


FLAGGED = FlaggedRewrite(1, 49, "demo/001", "en", "option_A", "2 and -5", "two and minus five", "[-2-]", "flagged")


def review_view(qtbot) -> RewriteReviewView:
    view = RewriteReviewView()
    qtbot.addWidget(view)
    view.resize(1000, 600)
    view.show()
    view.set_entries([FLAGGED])
    return view


def marked_fragments(view: RewriteReviewView) -> list[tuple[str, float, str]]:
    """(text, contrast, mark colour) of each marked stretch of both texts, as the text documents will draw them."""
    found = []
    for editor in (view.original_view, view.rewrite_view):
        block = editor.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                style = fragment.charFormat()
                if style.background().style() != style.background().style().NoBrush:
                    ink = style.foreground().color() if style.hasProperty(style.Property.ForegroundBrush) else None
                    ink = ink or editor.palette().color(QPalette.ColorRole.Text)
                    ground = style.background().color()
                    found.append((fragment.text(), contrast(ink, ground), ground.name()))
                it += 1
            block = block.next()
    return found


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_rewrite_review_s_marks_and_key_line_are_readable(qtbot, application_palette, dark):
    if dark:
        application_palette(adwaita_dark())
    view = review_view(qtbot)
    marks = marked_fragments(view)
    assert {text for text, _, _ in marks} >= {"2", "-5", "two", "minus five"}
    assert all(ratio >= TEXT_CONTRAST for _, ratio, _ in marks), marks
    assert unreadable_labels(view) == []


@pytest.mark.slow
def test_a_switch_to_dark_while_the_app_runs_leaves_no_text_unreadable(
    qtbot, application_palette, tmp_path, read_only_demo
):
    """Desktops switch at sunset: the palette changes under a running app. Toned style sheets are written again
    and every other style sheet applied again (MainWindow.changeEvent → retone: Qt fixes a widget's palette when
    its sheet is applied, so the review's diff line, `font-family: monospace`, kept black text on the dark
    window), and the review draws its marks again. Every page is looked at before and after, as the window
    shows it, with the tour open."""
    window = demo_window(qtbot, tmp_path, read_only_demo)
    try:
        window.tour.start(0)
        review = window.rewrite_page.view
        assert label_colour(window.font_label) == TONES["error"][0]
        assert unreadable_pages(window, qtbot) == []
        light_marks = marked_fragments(review)
        application_palette(adwaita_dark())  # Qt passes the change on to each widget through posted events
        qtbot.waitUntil(lambda: label_colour(window.font_label) == TONES["error"][1], timeout=2_000)
        assert unreadable_pages(window, qtbot) == []
        dark_marks = marked_fragments(review)
        assert [text for text, _, _ in dark_marks] == [text for text, _, _ in light_marks] and dark_marks
        assert {ground for _, _, ground in light_marks} == {TONES["removed_bg"][0], TONES["added_bg"][0]}
        assert {ground for _, _, ground in dark_marks} == {TONES["removed_bg"][1], TONES["added_bg"][1]}
        assert all(ratio >= TEXT_CONTRAST for _, ratio, _ in dark_marks), dark_marks
    finally:
        window.shutdown()


def test_the_batch_table_s_state_colours_follow_a_switch(qtbot, application_palette):
    """A row needing attention is in the error tone of the palette now; the others in the palette's own text
    (they were given the light palette's black once, and kept it on the dark window)."""
    view = BatchesView()
    qtbot.addWidget(view)
    view.show()
    view.set_rows(
        [
            BatchRow(1, "openai", "batch_1", "gpt-4o", "completed", "12", "12:00"),
            BatchRow(2, "openai", "batch_2", "gpt-4o", "failed", "12", "12:01", attention=True),
        ]
    )
    application_palette(adwaita_dark())
    qtbot.waitUntil(lambda: view.table.item(1, 3).foreground().color().name() == TONES["error"][1], timeout=2_000)
    assert view.table.item(0, 3).data(Qt.ItemDataRole.ForegroundRole) is None  # the palette's text, whichever


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_jobs_panel_s_details_are_readable(qtbot, application_palette, dark):
    if dark:
        application_palette(adwaita_dark())
    panel = JobsPanel()
    qtbot.addWidget(panel)
    panel.resize(500, 400)
    panel.show()
    assert unreadable_labels(panel) == []  # the empty list's note
    panel.set_rows([JobRow(key="a", title="Importing", detail="row 5,000", origin="spokenbench · pid 42", done=5)])
    qtbot.waitUntil(lambda: panel.cards["a"].isVisible(), timeout=2_000)
    assert unreadable_labels(panel) == []


def demo_window(qtbot, tmp_path, project):
    """The main window at 1400×900 on the project, its status bar saying No font for Korean."""
    from spokenbench.app.main_window import MainWindow

    window = MainWindow(audio_message="off", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    with qtbot.waitSignal(window.open_project(project).finished, timeout=20_000):
        pass
    window.show_missing_fonts({"ko": 24})
    return window


def unreadable_pages(window, qtbot) -> list[str]:
    """Every page shown in turn (Results once its panel is drawn), the status bar and the tour: the labels below
    4.5:1, each named with its page."""
    from spokenbench.app.main_window import PAGES

    found = []
    for key, _name in PAGES:
        window.show_page(key)
        if key == "results":
            results = window.page_widgets["results"]
            qtbot.waitUntil(lambda results=results: results.view.panel is not None, timeout=60_000)
        qtbot.wait(300)
        found += [f"{key}: {label}" for label in unreadable_labels(window.page_stack.currentWidget())]
    found += [f"status bar: {label}" for label in unreadable_labels(window.statusBar())]
    return found + [f"tour: {label}" for label in unreadable_labels(window.tour.dock)]


@pytest.mark.slow
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_every_page_s_text_is_readable_on_a_light_and_a_dark_palette(
    qtbot, tmp_path, read_only_demo, application_palette, dark
):
    if dark:
        application_palette(adwaita_dark())
    window = demo_window(qtbot, tmp_path, read_only_demo)
    try:
        window.tour.start(0)
        qtbot.wait(100)
        assert unreadable_pages(window, qtbot) == []
    finally:
        window.shutdown()
