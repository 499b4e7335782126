"""The Results page with a text-only run beside the demo's audio runs: every model keeps its accent and voice
gender subplots in "Accuracy by level" (the text run has no bar there), so the tour's step that compares the
language, accent and gender subplots finds them; and the panel list names its panels before any is computed."""

from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt

from spokenbench.app.results_page import ResultsPage
from spokenbench.core.demo.tour import TOUR
from spokenbench.core.evaluation.plans import PlanOptions
from spokenbench.core.evaluation.preparation import RunSettings
from spokenbench.core.evaluation.runner import evaluate
from spokenbench.core.results.model import panel_heading
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.core.store import opened

TEXT_MODEL = "simulated:steady"


def test_the_panel_list_shows_panel_names_while_nothing_is_computed(qtbot):
    page = ResultsPage(SimpleNamespace())
    qtbot.addWidget(page)
    page.show()
    names = [page.panel_list.item(row).text() for row in range(page.panel_list.count())]
    assert names == [panel_heading(key)[0] for key in PANEL_ORDER]
    assert "accuracy_by_level" not in names and names[0] == "Accuracy by level"
    page.panel_list.setFocus()
    qtbot.keyClick(page.panel_list, Qt.Key.Key_Down)
    assert page.panel_list.currentItem().data(Qt.ItemDataRole.UserRole) == PANEL_ORDER[1]
    assert "BiasInEar" in page.panel_list.currentItem().toolTip()


@pytest.fixture
def with_text_run(demo_copy):
    with opened(demo_copy) as project:
        settings = RunSettings(
            model=TEXT_MODEL,
            mode="text",
            prompt="standard",
            plan=PlanOptions(orders=("original", "reversed"), kind="mcq", seed=0),
            name="a text-only run",
        )
        evaluate(project, settings)
    return demo_copy


@pytest.mark.slow
def test_a_text_run_leaves_every_model_its_accent_and_gender_subplots(qtbot, with_text_run, open_session):
    page = ResultsPage(SimpleNamespace(play_file=lambda path: None))
    qtbot.addWidget(page)
    page.resize(1280, 720)
    page.show()
    with qtbot.waitSignal(page.panels_ready, timeout=60_000):
        page.set_session(open_session(with_text_run))
    panels = page.panels
    assert "a text-only run" in {r["name"] for r in panels.runs}
    page.panel_list.setFocus()
    qtbot.keyClick(page.panel_list, Qt.Key.Key_Home)  # "Accuracy by level", chosen with the keyboard
    assert page.view.panel.key == "accuracy_by_level"
    facets = page.view.panel.facets
    step = next(s for s in TOUR if s.key == "language-accent-gender")
    assert "language, accent and gender subplots" in step.text  # what the tour's step asks to compare
    assert {"language", "accent", "gender"} <= set(facets)
    page.view.finish_drawing()  # drawn off the UI thread
    titles = {ax.get_title() for ax in page.view.figure.get_axes()}
    assert {"language", "accent", "gender"} <= titles
    points = page.view.panel.points
    audio_models = {p.series for p in points if p.facet == "accent"}
    text_models = {p.series for p in points if p.facet == "order"} - audio_models
    assert len(audio_models) == 3 and len(text_models) == 1  # the three listeners keep their bars; the text run
    assert not [p for p in points if p.facet == "gender" and p.series in text_models]  # has none in gender
