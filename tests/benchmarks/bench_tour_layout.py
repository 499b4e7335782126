"""Benchmark (run by hand, prints its figures; not part of the test run): what of each page is cut off or drawn
over on a laptop with the guided tour open, at each text size, in a maximized window on a 1280×720 screen
(1280×640). Prints the pages that scroll sideways (least width in the room), Evaluate's form, the tour's width
after 200 % → 100 %, the Speakers page's buttons drawn over each other (tour closed), and whether the accuracy
figure is drawn whole at the normal size on narrower canvases (and at which text scale). Run on another tree for
a before/after, with PYTHONPATH at a folder whose `spokenbench` links to that tree:

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_tour_layout.py
"""

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.py

from PySide6.QtCore import QSettings, QSize
from PySide6.QtWidgets import QApplication
from support import overlapping, run_event_loop_until

from spokenbench.app.main_window import PAGES, MainWindow
from spokenbench.core.demo.project import build_demo

LAPTOP = QSize(1280, 640)
SIZES = (100, 125, 150, 175, 200)


def settle(seconds: float) -> None:
    run_event_loop_until(lambda: False, seconds)


def opened_window(demo: Path, folder: Path) -> MainWindow:
    settings = QSettings(str(folder / f"settings-{len(list(folder.iterdir()))}.ini"), QSettings.Format.IniFormat)
    window = MainWindow(audio_message="Audio is off in the benchmark", settings=settings)
    window.resize(LAPTOP)
    window.show()
    window.open_project(demo)
    run_event_loop_until(lambda: window.session is not None, 60)
    return window


def show(window: MainWindow, key: str, seconds: float = 0.4) -> None:
    window.show_page(key)
    run_event_loop_until(lambda: type(window.page_widgets[key]).__name__ != "PlaceholderPage", 60)
    settle(seconds)


def tour_pages(window: MainWindow) -> None:
    from spokenbench.widgets.launcher_view import LauncherView

    window.tour.start(0)
    for percent in SIZES:
        window.set_text_size(percent)
        settle(0.2)
        sideways = []
        for key, _name in PAGES:
            show(window, key, 2.0 if key == "items" else 0.4)  # the first too wide: the dock's move and animation
            page, room = window.page_stack.currentWidget(), window.page_scroll.viewport().width()
            if window.page_scroll.horizontalScrollBar().isVisible():
                sideways.append(f"{key} {page.minimumSizeHint().width()} in {room}")
            if key == "evaluate" and percent == 100:
                view = page.findChild(LauncherView)
                form = view.form_scroll
                print(
                    f"  Evaluate at 100 % beside the tour: form least {form.widget().minimumSizeHint().width()} in "
                    f"{form.viewport().width()}, runs table {view.runs_table.horizontalHeader().length()} in "
                    f"{view.runs_table.viewport().width()}"
                )
        print(f"  tour open, {percent} %: pages scrolling sideways: {', '.join(sideways) or 'none'}")
    window.set_text_size(100)
    settle(0.6)
    print(f"  the tour's width after 200 % -> 100 %: {window.tour.dock.width()} pixels")


def speakers_overlap(window: MainWindow) -> None:
    counts = []
    for percent in SIZES:
        window.set_text_size(percent)
        show(window, "speakers", 0.6)
        view = window.page_widgets["speakers"].view
        counts.append(
            f"{percent} %: {len(overlapping([*view.buttons.values(), view.reading_list_button, view.project_button]))}"
        )
    print(f"  Speakers, pairs of buttons drawn over each other (tour closed): {', '.join(counts)}")
    window.set_text_size(100)


def accuracy_figure(window: MainWindow) -> None:
    from spokenbench.widgets.metric_panels import _drawn_whole

    show(window, "results")
    page = window.page_widgets["results"]
    run_event_loop_until(lambda: page.panels is not None, 120)
    page.show_panel("accuracy_by_level")
    found = []
    for width in (1400, 1200, 1100, 1000, 900):
        window.resize(QSize(width, 980))
        settle(0.5)
        page.view.finish_drawing()
        settle(0.3)
        page.view.finish_drawing()
        canvas = page.view.canvas
        whole = "whole" if _drawn_whole(page.view.figure) else "CUT OFF"
        found.append(f"{canvas.width()} px {whole} at {canvas.drawn_scale:g}")
    print(f"  accuracy figure at 100 %, by canvas width: {'; '.join(found)}")


def main() -> None:
    QApplication.instance() or QApplication([])
    import spokenbench.app

    print(f"tree: {Path(spokenbench.app.__file__).resolve().parents[1]}")
    with tempfile.TemporaryDirectory() as folder:
        demo = build_demo(Path(folder) / "demo")
        settings_folder = Path(folder) / "settings"
        settings_folder.mkdir()
        for measure in (tour_pages, speakers_overlap, accuracy_figure):
            window = opened_window(demo, settings_folder)
            measure(window)
            window.shutdown()
            window.deleteLater()
            settle(0.2)


if __name__ == "__main__":
    main()
