"""Benchmark (run by hand, prints its figures; not part of the test run): on the window a maximized app gets from
a 1280×720 laptop screen under a window manager with a panel (1280×646), how many columns of the app's record
tables are off to the right behind a scroll bar, and what filling an item's detail tabs costs the UI thread as the
person walks the item list — on this tree and, with `--baseline DIR`, an older one.

    python tests/benchmarks/bench_laptop_columns.py [--baseline DIR] [--size 1280x646] [--items 40]

Each tree runs in its own process on a real X server (Xvfb, `xvfb-run`; Qt's offscreen platform where it is
missing) on a copy of the demo with one consented speaker. Counted: the four tabs of the first item's detail
(rewrites, clips, ratings, responses), the Speakers list beside the recorder, and the Results page's gender-probe
summary. Timed: `ItemDetail.show_detail` for each of the first `--items` items, selected one after another, as
↓ in the item list does (median and 90th percentile, ms), and showing the clips tab after each of the next
`--items`/2 refills (median, ms: a tab refilled while hidden is measured when shown). `--baseline DIR`: an older tree as DIR/spokenbench
(`git worktree add X REV` and a link DIR/spokenbench → X), put first on its PYTHONPATH; this tree runs first."""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

from real_device import add_consented_speaker, demo_copy_in, temporary_folder  # noqa: E402

CHILD = r"""
import json, statistics, sys, time
from pathlib import Path
from PySide6.QtCore import QSettings, QSize
from PySide6.QtWidgets import QApplication, QListWidget

from spokenbench.app.main_window import MainWindow
from spokenbench.widgets.gender_panel import GenderPanel

project, size, items, settings = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
app = QApplication([])
width, height = (int(n) for n in size.split("x"))
window = MainWindow(audio_message="off", settings=QSettings(settings, QSettings.Format.IniFormat))
window.resize(QSize(width, height))
window.show()


def wait_until(condition, timeout=30.0, what="the window"):
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        app.processEvents()
        time.sleep(0.005)


def pause(seconds):
    end = time.monotonic() + seconds
    wait_until(lambda: time.monotonic() > end)


def off_to_the_right(table):
    header, room = table.horizontalHeader(), table.viewport().width()
    model = table.model()
    return [
        str(model.headerData(c, header.orientation()))
        for c in range(header.count())
        if not header.isSectionHidden(c) and header.sectionPosition(c) + header.sectionSize(c) > room
    ]


opened = []
window.open_project(project).finished.connect(lambda *_: opened.append(True))
wait_until(lambda: opened, what="the project")
panel, detail = window.items_panel, window.items_panel.detail
filled = []
original = detail.show_detail


def timed(*args, **kwargs):
    start = time.perf_counter()
    original(*args, **kwargs)
    filled.append((time.perf_counter() - start) * 1000)


detail.show_detail = timed
wait_until(lambda: panel.model.rowCount() > items, what="the item list")
panel.table.selectRow(0)
wait_until(lambda: detail.rewrites.rowCount() > 0, what="the first item")
pause(0.5)
off = {}
for index in range(detail.tabs.count()):
    detail.tabs.setCurrentIndex(index)
    pause(0.3)
    table = detail.tabs.widget(index)
    off[f"item {detail.tabs.tabText(index).split(' (')[0].lower()}"] = off_to_the_right(table)
detail.tabs.setCurrentIndex(0)
filled.clear()
for row in range(1, items + 1):
    count = len(filled)
    panel.table.selectRow(row)
    wait_until(lambda: len(filled) > count, what=f"item {row + 1}")
switched = []  # the clips tab shown after each refill: where a tab refilled while hidden is measured now
for row in range(items + 1, items + 1 + items // 2):
    count = len(filled)
    panel.table.selectRow(row)
    wait_until(lambda: len(filled) > count, what=f"item {row + 1}")
    start = time.perf_counter()
    detail.tabs.setCurrentIndex(1)
    switched.append((time.perf_counter() - start) * 1000)
    pause(0.05)
    detail.tabs.setCurrentIndex(0)
window.show_page("speakers")
wait_until(lambda: not window.page_opening("speakers"), what="the speakers page")  # its module: imported on a thread
speakers = window.page_widgets["speakers"].list_view.table
wait_until(lambda: speakers.rowCount() == 1 and speakers.isVisible(), what="the speakers")
pause(0.5)
off["speakers list"] = off_to_the_right(speakers)
window.show_page("results")
wait_until(lambda: not window.page_opening("results"), what="the results page")  # its module: imported on a thread
page = window.page_widgets["results"]
wait_until(lambda: any(w.isVisible() and w.count() == 9 for w in page.findChildren(QListWidget)), 60, "the panels")
panels = next(w for w in page.findChildren(QListWidget) if w.isVisible() and w.count() == 9)
panels.setCurrentRow(panels.count() - 1)  # Gender probes
wait_until(lambda: page.findChild(GenderPanel) is not None and page.findChild(GenderPanel).summary_table.isVisible()
           and page.findChild(GenderPanel).summary_table.rowCount() > 0, 60, "the gender summary")
pause(1.0)
summary = page.findChild(GenderPanel).summary_table
off["gender summary"] = off_to_the_right(summary)
ordered = sorted(filled[:items])
print(json.dumps({
    "off": off,
    "median_ms": statistics.median(filled[:items]),
    "p90_ms": ordered[int(0.9 * (len(ordered) - 1))],
    "switch_ms": statistics.median(switched),
}))
window.shutdown()
"""


def measure(tree: Path | None, project: Path, size: str, items: int, work: Path) -> dict:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree.resolve())
    command = [sys.executable, "-c", CHILD, str(project), size, str(items), str(work / "settings.ini")]
    if shutil.which("xvfb-run"):
        env.pop("QT_QPA_PLATFORM", None)
        command = ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24", *command]
    else:
        env["QT_QPA_PLATFORM"] = "offscreen"
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the measuring process failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a folder holding an older tree as spokenbench/")
    parser.add_argument("--size", default="1280x646", help="the window, WIDTHxHEIGHT (default 1280x646)")
    parser.add_argument("--items", type=int, default=40, help="items whose detail is timed (default 40)")
    args = parser.parse_args()
    work = temporary_folder()
    try:
        project = demo_copy_in(work)
        add_consented_speaker(project, "Ana")
        trees = [("this tree", None)] + ([(f"baseline {args.baseline}", args.baseline)] if args.baseline else [])
        results = []
        for name, tree in trees:
            shutil.rmtree(work / "settings.ini", ignore_errors=True)
            figures = measure(tree, project, args.size, args.items, work)
            results.append((name, figures))
        print(f"window {args.size}; columns off to the right, by table; item detail fill over {args.items} items")
        for name, figures in results:
            hidden = sum(len(columns) for columns in figures["off"].values())
            print(f"{name}: {hidden} column(s) off to the right")
            for table, columns in figures["off"].items():
                print(f"  {table:15} {len(columns)} {', '.join(columns)}")
            print(f"  item detail fill: median {figures['median_ms']:.1f} ms, p90 {figures['p90_ms']:.1f} ms")
            print(f"  clips tab shown after a refill: median {figures['switch_ms']:.1f} ms")
        if len(results) == 2:
            ratio = results[0][1]["median_ms"] / results[1][1]["median_ms"]
            print(f"detail fill, this tree / baseline (medians): {ratio:.2f}x")
            switch = results[0][1]["switch_ms"] / results[1][1]["switch_ms"]
            print(f"clips tab shown, this tree / baseline (medians): {switch:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
