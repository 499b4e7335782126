"""Benchmark (run by hand, prints its figures; not part of the test run): how long the desktop app takes from
the command to its first painted window, and to the demo project's items on screen — the QC screens issue's
"first paint ≤ 2 s". Each start is a fresh interpreter (imports included, as a user sees it), offscreen.

    python tests/benchmarks/bench_first_paint.py [--starts 7]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import os, sys, time
from pathlib import Path
t0 = float(os.environ["BENCH_T0"])
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication
from spokenbench.app.main import keep_the_ui_responsive
from spokenbench.app.main_window import MainWindow
from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points

app = QApplication(sys.argv[:1])
collect_garbage_at_safe_points(app)
marks = {}

class FirstPaint(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and "paint" not in marks:
            marks["paint"] = time.time() - t0
        return False

window = MainWindow(audio_message="bench")
probe = FirstPaint()
window.installEventFilter(probe)
window.show()
keep_the_ui_responsive()
window.open_project(Path(sys.argv[1]))

def check():
    if window.items_panel.model.rowCount() and "items" not in marks:
        marks["items"] = time.time() - t0
    if "paint" in marks and "items" in marks:
        print(f"{marks['paint']:.4f} {marks['items']:.4f}", flush=True)
        window.shutdown()
        app.quit()

timer = QTimer()
timer.timeout.connect(check)
timer.start(5)
QTimer.singleShot(30_000, app.quit)
app.exec()
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=7)
    args = parser.parse_args()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    with tempfile.TemporaryDirectory() as tmp:
        demo = Path(tmp) / "demo"
        subprocess.run(["spokenbench", "demo", str(demo)], check=True, capture_output=True)
        paints, items = [], []
        for _ in range(args.starts):
            env["BENCH_T0"] = repr(time.time())
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(demo)], env=env, capture_output=True, text=True, timeout=60
            )
            paint, shown = map(float, out.stdout.split())
            paints.append(paint)
            items.append(shown)
    print(f"app starts: {args.starts} (fresh interpreter each, offscreen, demo project of 84 items)")
    print(
        f"command → first painted window: median {statistics.median(paints) * 1000:.0f} ms, max {max(paints) * 1000:.0f} ms"
    )
    print(
        f"command → demo items listed:    median {statistics.median(items) * 1000:.0f} ms, max {max(items) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
