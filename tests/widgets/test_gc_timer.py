"""The UI thread's garbage collection timer: frequent while objects pile up, relaxed when nothing is young."""

import gc

from spokenbench.app.qt_refcounts import collect_garbage_at_safe_points


def test_the_timer_ticks_faster_while_garbage_piles_up_and_relaxes_after(qapp):
    timer = collect_garbage_at_safe_points(qapp, interval_ms=50, busy_interval_ms=10)
    try:
        assert timer.interval() == 50 and not gc.isenabled()
        kept = [[index] for index in range(5 * gc.get_threshold()[0])]  # young tracked objects, past the threshold
        assert gc.get_count()[0] > gc.get_threshold()[0]  # nothing collects them by itself
        timer.timeout.emit()  # a tick (emitted here, so the session's own collection timer cannot come first)
        assert gc.get_count()[0] < gc.get_threshold()[0] and timer.interval() == 10
        del kept
        timer.timeout.emit()  # nothing young left to collect
        assert timer.interval() == 50
    finally:
        timer.stop()
        timer.deleteLater()
