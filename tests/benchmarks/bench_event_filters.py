"""Benchmark (run by hand, prints its figures; not part of the test run): what the app's application-wide event
filters cost each event the UI thread handles. Every event of the application passes through them, a Python call
each: `WheelGuard` (widgets/wheel_guard.py) and `EmptyFieldSaid` (widgets/screen_reader.py).

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_event_filters.py [--events 200000] [--trials 7]

Sends `--events` events of a type neither filter acts on to a widget, with no filter, with WheelGuard alone, and
with both, in turns (`--trials` times each, the order rotated); prints the median microseconds per event and the
added cost of each filter. For scale: a key press and its repaint, or a frame of the level meter, are a few
hundred events."""

from __future__ import annotations

import argparse
import statistics
import time

from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QApplication, QLineEdit

from spokenbench.widgets.screen_reader import EmptyFieldSaid
from spokenbench.widgets.wheel_guard import WheelGuard


def per_event_us(widget, events: int) -> float:
    event = QEvent(QEvent.Type.User)
    start = time.perf_counter()
    for _ in range(events):
        QCoreApplication.sendEvent(widget, event)
    return (time.perf_counter() - start) / events * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--trials", type=int, default=7)
    args = parser.parse_args()
    app = QApplication([])
    widget = QLineEdit()
    guard, said = WheelGuard(app), EmptyFieldSaid(app)
    setups = {"no filter": [], "WheelGuard": [guard], "WheelGuard and EmptyFieldSaid": [guard, said]}
    times: dict[str, list[float]] = {name: [] for name in setups}
    names = list(setups)
    for trial in range(args.trials):
        for name in names[trial % len(names) :] + names[: trial % len(names)]:
            for installed in setups[name]:
                app.installEventFilter(installed)
            times[name].append(per_event_us(widget, args.events))
            for installed in setups[name]:
                app.removeEventFilter(installed)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, median in medians.items():
        print(f"{name:32} {median:6.2f} µs per event (median of {args.trials})")
    print(f"WheelGuard adds {medians['WheelGuard'] - medians['no filter']:.2f} µs per event; EmptyFieldSaid adds "
          f"{medians['WheelGuard and EmptyFieldSaid'] - medians['WheelGuard']:.2f} µs more")  # fmt: skip


if __name__ == "__main__":
    main()
