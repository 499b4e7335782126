"""Benchmark (run by hand, prints its figures; not part of the test run): what the app's application-wide event
filter costs each event the UI thread handles. Every event of the application passes through it, a Python call
from Qt each. Its handlers are `WheelGuard` (widgets/wheel_guard.py), `EmptyFieldSaid`, `AltLeftToTheShortcut`
and `CurrentRowSaid` (widgets/screen_reader.py); `ApplicationFilters` hands each event only to the handlers of
its type.

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_event_filters.py [--events 200000] [--trials 7]

Sends `--events` events of a type no handler acts on to a widget, in turns (`--trials` times each, the order
rotated): with no filter; with a filter of its own for each handler, each looking at the event's type (as the
app installed them until round 59); and with the one filter for all of them. Prints the median microseconds per
event and what each setup adds. For scale: a key press and its repaint, or a frame of the level meter, are a
few hundred events."""

from __future__ import annotations

import argparse
import statistics
import time

from PySide6.QtCore import QCoreApplication, QEvent, QObject
from PySide6.QtWidgets import QApplication, QLineEdit

from spokenbench.widgets.screen_reader import AltLeftToTheShortcut, CurrentRowSaid, EmptyFieldSaid
from spokenbench.widgets.wheel_guard import ApplicationFilters, WheelGuard

HANDLERS = (WheelGuard, EmptyFieldSaid, AltLeftToTheShortcut, CurrentRowSaid)


class OwnFilter(QObject):
    """A handler as a filter of its own, looking at each event's type first."""

    def __init__(self, handler: QObject, parent: QObject):
        super().__init__(parent)
        self.handler = handler

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        return event.type() in self.handler.events and self.handler.eventFilter(watched, event)


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
    handlers = [kind(app) for kind in HANDLERS]
    one = ApplicationFilters(app)
    for handler in handlers:
        one.add(handler)
    setups = {
        "no filter": [],
        f"a filter for each of {len(handlers)} handlers": [OwnFilter(handler, app) for handler in handlers],
        f"one filter for the {len(handlers)} handlers": [one],
    }
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
        added = median - medians["no filter"]
        print(f"{name:34} {median:6.2f} µs per event (median of {args.trials}), {added:+.2f} µs over none")
    each, one_for_all = (medians[name] - medians["no filter"] for name in names[1:])
    print(f"one filter costs {one_for_all / each:.2f}x what a filter for each handler cost")


if __name__ == "__main__":
    main()
