"""Benchmark (run by hand, prints its figures; not part of the test run): how long the UI thread is busy when the
text size changes (View → Larger text, Ctrl+=), with every page of the demo built and the Rating page shown in a
session — the font handed to every widget, style sheets applied again, shares sized again, each page laid out —
measured side by side with the anchor a user already waits for: the same window resized between a laptop's
1280×640 and 1400×820 and laid out again. Prints the medians of each step (100 → 110 → … → 200 → 100) and the
ratio.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_text_size.py [--rounds 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.py

from PySide6.QtCore import QSettings, QSize
from PySide6.QtWidgets import QApplication
from support import run_event_loop_until

from spokenbench.app.main_window import PAGES, MainWindow
from spokenbench.app.text_size import TEXT_SIZES
from spokenbench.core.demo.project import build_demo


def settled_ms(app: QApplication, change) -> float:
    """The UI thread's time for `change` and the events it posts (layouts, paints), until none is left."""
    started = time.perf_counter()
    change()
    app.processEvents()
    app.processEvents()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as folder:
        demo = build_demo(Path(folder) / "demo")
        settings = QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
        window = MainWindow(audio_message="Audio is off in the benchmark", settings=settings)
        window.resize(QSize(1280, 640))
        window.show()
        opened = window.open_project(demo)
        run_event_loop_until(lambda: opened.done if hasattr(opened, "done") else window.session is not None, 60)
        run_event_loop_until(lambda: window.session is not None, 60)
        for key, _name in PAGES:  # every page built, as after a day's work
            window.show_page(key)
            run_event_loop_until(lambda key=key: type(window.page_widgets[key]).__name__ != "PlaceholderPage", 60)
        results = window.page_widgets["results"]
        run_event_loop_until(lambda: results.panels is not None, 120)
        window.show_page("rating")
        rating = window.page_widgets["rating"]
        rating.open_queue("demo-qc")
        run_event_loop_until(lambda: rating.rating is not None and rating.idle, 30)
        steps, resizes = [], []
        for _ in range(args.rounds):
            for percent in (*TEXT_SIZES[1:], 100):
                steps.append(settled_ms(app, lambda p=percent: window.set_text_size(p)))
            for _ in range(len(TEXT_SIZES)):
                bigger = window.size() == QSize(1280, 640)
                resizes.append(
                    settled_ms(app, lambda b=bigger: window.resize(QSize(1400, 820) if b else QSize(1280, 640)))
                )
        window.shutdown()
    step, resize = statistics.median(steps), statistics.median(resizes)
    print(f"text size change: median {step:.1f} ms, max {max(steps):.1f} ms ({len(steps)} changes)")
    print(f"window resize:    median {resize:.1f} ms, max {max(resizes):.1f} ms ({len(resizes)} resizes)")
    print(f"ratio text size / resize: {step / resize:.2f}")
    print("each change, ms:", " ".join(f"{ms:.0f}" for ms in steps))


if __name__ == "__main__":
    main()
