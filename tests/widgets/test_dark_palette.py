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
from PySide6.QtCore import QSettings
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QLabel

from spokenbench.core.rewriting.flagging import FlaggedRewrite
from spokenbench.widgets.jobs_panel import JobRow, JobsPanel
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


def palette_of(window: str, base: str, text: str) -> QPalette:
    palette = QPalette()
    for role, colour in (("Window", window), ("Base", base), ("WindowText", text), ("Text", text)):
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(colour))
    return palette


def adwaita_dark() -> QPalette:
    palette = QPalette()
    for role, colour in ADWAITA_DARK.items():
        palette.setColor(getattr(QPalette.ColorRole, role), QColor(colour))
    return palette


@pytest.fixture
def application_palette(qapp):
    """use(palette) → the application's palette for the test (as the desktop's theme sets it); restored after."""
    before = QPalette(qapp.palette())
    yield lambda palette: qapp.setPalette(palette)
    qapp.setPalette(before)


def background_of(widget) -> QColor:
    """The colour most of the widget's drawn pixels have: what its text stands on."""
    image = widget.grab().toImage().convertToFormat(widget.grab().toImage().Format.Format_RGB32)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)
    pixels = rows[:, : image.width(), :3].reshape(-1, 3)
    colours, counts = np.unique(pixels, axis=0, return_counts=True)
    blue, green, red = (int(value) for value in colours[counts.argmax()])
    return QColor(red, green, blue)


def text_colours(label: QLabel) -> list[QColor]:
    """The label's own text colour (its palette, style sheet included) and each colour its rich text names."""
    label.ensurePolished()
    named = re.findall(r"color:\s*(#[0-9a-fA-F]{3,6})", label.text())
    return [label.palette().color(label.foregroundRole()), *(QColor(colour) for colour in named)]


def label_colour(label: QLabel) -> str:
    return label.palette().color(label.foregroundRole()).name()


def unreadable_labels(root) -> list[str]:
    """Each visible, enabled label under root whose text is below 4.5:1 on what it is drawn on."""
    found = []
    for label in root.findChildren(QLabel):
        if not (label.isVisible() and label.isEnabled() and label.text().strip()) or label.visibleRegion().isEmpty():
            continue
        ground = background_of(label)
        worst = min(contrast(colour, ground) for colour in text_colours(label))
        if worst < TEXT_CONTRAST:
            found.append(f"{label.objectName() or type(label.parent()).__name__}: {label.text()[:60]!r} {worst:.2f}:1")
    return found


def test_every_tone_is_readable_on_the_common_light_and_dark_palettes():
    for grounds, text in ((LIGHT_GROUNDS, "#000000"), (DARK_GROUNDS, "#ffffff")):
        for window in grounds:
            for base in grounds:
                palette = palette_of(window, base, text)
                for name in ("error", "warning", "success", "muted", "focus"):
                    needed = LINE_CONTRAST if name == "focus" else TEXT_CONTRAST
                    for ground in (window, base):
                        ratio = contrast(QColor(tone(name, palette)), QColor(ground))
                        assert ratio >= needed, f"{name} {tone(name, palette)} on {ground}: {ratio:.2f}:1"
                for mark in ("removed", "added"):  # a diff mark carries its own text colour on its own ground
                    ratio = contrast(QColor(tone(f"{mark}_text", palette)), QColor(tone(f"{mark}_bg", palette)))
                    assert ratio >= TEXT_CONTRAST, f"{mark} on {window}: {ratio:.2f}:1"
    assert set(TONES) >= {"error", "warning", "success", "focus"}


def review_view(qtbot) -> RewriteReviewView:
    view = RewriteReviewView()
    qtbot.addWidget(view)
    view.resize(1000, 600)
    view.show()
    view.set_entries(
        [FlaggedRewrite(1, 49, "demo/001", "en", "option_A", "2 and -5", "two and minus five", "", "flagged")]
    )
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


def test_a_switch_to_dark_while_the_app_runs_recolours_hints_and_marks(qtbot, application_palette, tmp_path):
    """Desktops switch at sunset: the palette changes under a running app. Toned style sheets are written again
    (MainWindow.changeEvent → retone) and the review draws its marks again."""
    from spokenbench.app.main_window import MainWindow

    window = MainWindow(audio_message="off", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.show()
    try:
        window.show_missing_fonts({"ko": 3})
        view = review_view(qtbot)
        light_marks = marked_fragments(view)
        assert label_colour(window.font_label) == TONES["error"][0]
        application_palette(adwaita_dark())  # Qt passes the change on to each widget through posted events
        qtbot.waitUntil(lambda: label_colour(window.font_label) == TONES["error"][1], timeout=2_000)
        assert unreadable_labels(window.statusBar()) == []
        dark_marks = marked_fragments(view)
        assert [text for text, _, _ in dark_marks] == [text for text, _, _ in light_marks]
        assert {ground for _, _, ground in light_marks} == {TONES["removed_bg"][0], TONES["added_bg"][0]}
        assert {ground for _, _, ground in dark_marks} == {TONES["removed_bg"][1], TONES["added_bg"][1]}  # drawn again
        assert all(ratio >= TEXT_CONTRAST for _, ratio, _ in dark_marks), dark_marks
        assert unreadable_labels(view) == []
    finally:
        window.shutdown()


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


@pytest.mark.slow
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_every_page_s_text_is_readable_on_a_light_and_a_dark_palette(
    qtbot, tmp_path, read_only_demo, application_palette, dark
):
    from spokenbench.app.main_window import PAGES, MainWindow

    if dark:
        application_palette(adwaita_dark())
    window = MainWindow(audio_message="off", settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(window)
    window.resize(1400, 900)
    window.show()
    try:
        with qtbot.waitSignal(window.open_project(read_only_demo).finished, timeout=20_000):
            pass
        window.show_missing_fonts({"ko": 24})
        unreadable = []
        for key, _name in PAGES:
            window.show_page(key)
            if key == "results":
                results = window.page_widgets["results"]
                qtbot.waitUntil(lambda results=results: results.view.panel is not None, timeout=60_000)
            qtbot.wait(300)
            unreadable += [f"{key}: {found}" for found in unreadable_labels(window.page_stack.currentWidget())]
        unreadable += [f"status bar: {found}" for found in unreadable_labels(window.statusBar())]
        window.tour.start(0)
        qtbot.wait(100)
        unreadable += [f"tour: {found}" for found in unreadable_labels(window.tour.dock)]
        assert unreadable == []
    finally:
        window.shutdown()
