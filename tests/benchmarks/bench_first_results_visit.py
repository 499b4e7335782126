"""Benchmark (run by hand, prints its figures; not part of the test run): a person's first Ctrl+7 (the Results
page) after the app starts, when the page's module (matplotlib, pandas) is not imported yet.

Each start is a fresh interpreter, offscreen, on a copy of the demo project. Once the items are listed, the app is
left `--wait` seconds (the event loop running, as a person reads the items), then Ctrl+7 is pressed. Printed per
tree, as medians over the starts:
- the key's press: how long the UI thread was inside it;
- the page built: from the press until the Results page is the one shown;
- the longest event-loop gap from the press until 0.5 s after the page is built (a 5 ms timer's ticks);
- the longest gap while the app was left (the small pages' modules are prefetched then: app/page_modules.py).

With `--baseline DIR` (an older tree as DIR/spokenbench, e.g. a link to a `git worktree`), that tree runs too,
start by start alternating with this one. `--cold` drops the page cache before each start (root only: as after a
reboot); `--busy` runs a writer of 3 GiB files with `sync` meanwhile (another program writing to the disk).

    python tests/benchmarks/bench_first_results_visit.py [--starts 5] [--wait 0 3] [--baseline DIR] [--cold] [--busy]
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
from pathlib import Path
from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from spokenbench.app.main import keep_the_ui_responsive
from spokenbench.app.main_window import MainWindow

demo, wait_s, settings_file = Path(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
app = QApplication(sys.argv[:1])
window = MainWindow(audio_message="bench", settings=QSettings(settings_file, QSettings.Format.IniFormat))
window.resize(1280, 720)
window.show()
keep_the_ui_responsive()
window.open_project(demo)
figures, state = {}, {"last": time.perf_counter(), "gap": 0.0}

def tick():
    now = time.perf_counter()
    state["gap"] = max(state["gap"], now - state["last"])
    state["last"] = now

def run_until(condition, timeout_s=60.0):
    deadline = time.perf_counter() + timeout_s
    while not condition():
        if time.perf_counter() > deadline:
            raise SystemExit("timed out")
        app.processEvents()
        time.sleep(0.001)

probe = QTimer(interval=5, timeout=tick)
probe.start()
run_until(lambda: window.items_panel.model.rowCount() > 0)
state["gap"], state["last"] = 0.0, time.perf_counter()
left = time.perf_counter()
run_until(lambda: time.perf_counter() - left >= wait_s)
figures["wait_gap"] = state["gap"]
state["gap"], state["last"] = 0.0, time.perf_counter()
pressed = time.perf_counter()
QTest.keyClick(window, Qt.Key.Key_7, Qt.KeyboardModifier.ControlModifier)
figures["press"] = time.perf_counter() - pressed
page = lambda: window.page_widgets["results"]
run_until(lambda: type(page()).__name__ == "ResultsPage" and window.page_stack.currentWidget() is page())
figures["built"] = time.perf_counter() - pressed
settled = time.perf_counter()
run_until(lambda: time.perf_counter() - settled >= 0.5)
figures["gap"] = state["gap"]
print(json.dumps(figures), flush=True)
window.shutdown()
"""

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py
sys.path.insert(0, str(Path(__file__).resolve().parent))  # for bench_disk_writeback.py

from bench_disk_writeback import disk_writing  # noqa: E402
from real_device import drop_page_cache  # noqa: E402

FIGURES = (
    ("press", "the key's press (UI thread inside it)"),
    ("built", "press → the Results page shown"),
    ("gap", "longest event-loop gap from the press"),
    ("wait_gap", "longest gap while the app was left"),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--wait", type=float, nargs="+", default=[0.0, 3.0], help="seconds left before Ctrl+7")
    parser.add_argument("--baseline", type=Path, help="an older tree as DIR/spokenbench")
    parser.add_argument("--cold", action="store_true", help="drop the page cache before each start (root)")
    parser.add_argument("--busy", action="store_true", help="a writer of 3 GiB files with sync running meanwhile")
    args = parser.parse_args()
    trees = [("this tree", None)] + ([(f"baseline {args.baseline}", args.baseline.resolve())] if args.baseline else [])
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        tmp = Path(tmp)
        demo = tmp / "demo"
        subprocess.run(["spokenbench", "demo", str(demo)], check=True, capture_output=True)
        results: dict[tuple[str, float], list[dict]] = {}
        with disk_writing(tmp) if args.busy else contextlib.nullcontext():
            for start in range(args.starts):
                for wait_s in args.wait:
                    for name, path in trees:
                        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
                        if path is not None:
                            env["PYTHONPATH"] = str(path)
                        if args.cold and not drop_page_cache():
                            raise SystemExit("--cold needs root (to write /proc/sys/vm/drop_caches)")
                        settings = tmp / f"settings-{start}-{wait_s}-{name.split()[0]}.ini"
                        out = subprocess.run(
                            [sys.executable, "-c", CHILD, str(demo), str(wait_s), str(settings)],
                            env=env,
                            capture_output=True,
                            text=True,
                            timeout=180,
                        )
                        lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
                        if not lines:
                            raise SystemExit(f"{name}: no figures\n{out.stderr[-2000:]}")
                        results.setdefault((name, wait_s), []).append(json.loads(lines[-1]))
    condition = ", ".join(
        part
        for part, on in (
            ("page cache dropped before each start", args.cold),
            ("3 GiB files written meanwhile", args.busy),
        )
        if on
    )
    print(
        f"first Ctrl+7 after a start: {args.starts} starts per row, offscreen, demo project"
        + (f"; {condition}" if condition else "")
    )
    for (name, wait_s), rows in results.items():
        print(f"\n{name}, Ctrl+7 {wait_s:g} s after the items are listed:")
        for key, label in FIGURES:
            values = sorted(row[key] * 1000 for row in rows)
            every = ", ".join(f"{value:.0f}" for value in values)
            print(f"  {label:<44} median {statistics.median(values):6.0f} ms   all {every}")


if __name__ == "__main__":
    main()
