"""Benchmark (run by hand, prints its figures; not part of the test run): the Items browser with 20,000 items —
the QC screens issue's "filters 20,000 items in ≤ 100 ms". Times each filter change as the user makes it (the
combo box or the search field, through the model's re-filter and the view's update), median and max over
repeats, and the refresh of the whole list.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_items_filter.py [--items 20000] [--repeats 15]
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

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from support import gmmlu_rows, write_csv

from spokenbench.core.importers import import_files
from spokenbench.core.store import Project
from spokenbench.core.store.summary import item_browser_rows
from spokenbench.widgets.items_table import ItemsPanel


def timed(action, app) -> float:
    start = time.perf_counter()
    action()
    app.processEvents()  # the view's update, as the user sees it
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        source = write_csv(Path(tmp) / "en.csv", gmmlu_rows(args.items))
        with Project.create(Path(tmp) / "project") as project:
            import_files(project, [source], "gmmlu-lite")
            rows = item_browser_rows(project.conn)
    panel = ItemsPanel()
    panel.resize(1200, 800)
    panel.show()
    refresh = timed(lambda: panel.set_rows(rows), app)
    subjects = [panel.filter_boxes["subject"].itemText(i) for i in range(1, panel.filter_boxes["subject"].count())]
    results: dict[str, list[float]] = {"subject filter": [], "search text": [], "clear filters": [], "sort": []}
    for n in range(args.repeats):
        subject = subjects[n % len(subjects)]
        results["subject filter"].append(timed(lambda s=subject: panel.set_filter("subject", s), app))
        results["clear filters"].append(timed(lambda: panel.set_filter("subject", ""), app))
        results["search text"].append(timed(lambda n=n: panel.search.setText(f"test/{n}"), app))
        panel.search.clear()
        app.processEvents()
        results["sort"].append(timed(lambda n=n: panel.table.sortByColumn(6, Qt.SortOrder(n % 2)), app))
    print(f"items browser with {len(rows)} items (offscreen), {args.repeats} repeats each")
    print(f"  first fill (set_rows):      {refresh:8.1f} ms")
    for name, values in results.items():
        print(f"  {name:<27} median {statistics.median(values):6.1f} ms  max {max(values):6.1f} ms")


if __name__ == "__main__":
    main()
