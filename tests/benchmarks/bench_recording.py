"""Benchmark (run by hand, prints its figures; not part of the test run): the Speakers page recording from a fake
input stream that delivers 48 kHz blocks of 1,024 samples at real-time pace, with the page open under Qt.

Prints the level meter's update rate (updates a second, and the largest gap between updates) and the input
blocks dropped — counted, as from a real device, from the stream's status flags (`input_overflow`: the fake sets
it when a callback returned after the next block was due) — then how long after R the take's checks were shown.
Target: ≥ 20 Hz and 0 dropped blocks. Before the takes, `--checks` level checks (L): how long after L the verdict
came (the signal's 0.5 s of silence, then 3 s of voice) and what it said, the meter's rate meanwhile; and, for checks
and takes side by side, the UI thread's time in each meter tick (`_poll_levels`: draining the levels, the meter,
the voice's onset and the check's line, or the take's input line), median and 99th percentile. With --busy a
pure-Python thread computes all along (a CPU-bound job in the same process: the audio callback and the UI then
compete with it for the GIL).

    QT_QPA_PLATFORM=offscreen python tests/benchmarks/bench_recording.py [--seconds 5] [--takes 2] [--checks 2]
        [--busy]
"""

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for support.py

import numpy as np
from PySide6.QtCore import QEventLoop, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from support import run_event_loop_until

from spokenbench.app.operations import OperationRunner, ProjectSession
from spokenbench.app.speakers_page import SpeakersPage
from spokenbench.core.recording.recorder import DEFAULT_BLOCK, DEFAULT_RATE, InputDevice, fake_stream_factory
from spokenbench.core.recording.speakers import add_speaker, give_consent
from spokenbench.core.store import Project

RATE = DEFAULT_RATE


def run_for(seconds: float) -> None:
    loop = QEventLoop()
    QTimer.singleShot(int(seconds * 1000), loop.quit)
    loop.exec()


def speech(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    voiced = np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t)
    signal = (0.25 * voiced * (0.65 + 0.35 * np.sin(2 * np.pi * 4 * t))).astype(np.float32)
    silence = np.zeros(int(0.5 * RATE), dtype=np.float32)
    return np.concatenate([silence, signal, silence])


def busy_work(stop: threading.Event) -> None:
    total = 0
    while not stop.is_set():
        for n in range(10_000):
            total += n * n


def level_checks(page, count: int) -> list[float]:
    """L `count` times, each waited for until its verdict; the meter's rate in each; the seconds from L to each."""
    after, rates = [], []
    for _check in range(count):
        page.meter_updates.clear()
        pressed = time.perf_counter()
        QTest.keyClick(page.view, "l")
        run_event_loop_until(lambda: page.state == "listening")
        run_event_loop_until(lambda: page.state == "idle", timeout_s=20.0)
        after.append(time.perf_counter() - pressed)
        rates.append(len(page.meter_updates) / after[-1])
        print(
            f"level check: verdict {after[-1]:.2f} s after L, meter {rates[-1]:.1f} Hz: {page.view.status_label.text()}"
        )
    return rates


def main(seconds: float, takes: int, checks: int = 2, busy: bool = False) -> int:
    app = QApplication.instance() or QApplication([])
    folder = Path(tempfile.mkdtemp(prefix="bench-recording-"))
    with Project.create(folder / "p") as project:
        add_speaker(project, "bench", "en", "american", "unspecified")
        give_consent(project, "bench", "I agree to be recorded for this benchmark.", "bench")
    runner = OperationRunner()
    session = ProjectSession(folder / "p", runner)
    page = SpeakersPage()
    page.device_lister = lambda: [InputDevice(None, "Fake microphone (real-time)", 1, RATE, True)]
    page.stream_factory = fake_stream_factory(speech(seconds - 1.0), realtime=True, then_silence=True, noise_dbfs=-70)
    page.resize(1100, 700)
    page.show()
    page.set_session(session)
    page.use_reading_text("\n".join(f"Benchmark sentence number {n}." for n in range(1, takes + 1)))
    run_event_loop_until(lambda: page.speaker is not None and len(page.prompts) == takes and bool(page.devices))
    print(f"fake input: {RATE} Hz, {DEFAULT_BLOCK}-sample blocks ({RATE / DEFAULT_BLOCK:.1f} blocks/s), real-time pace")
    rates, worst_gaps, dropped, late, checks_after = [], [], 0, 0, []
    stop_busy = threading.Event()
    if busy:
        sys.setswitchinterval(0.001)  # as the app sets it at start (app/main.py)
        threading.Thread(target=busy_work, args=(stop_busy,), daemon=True).start()
        print("a CPU-bound Python thread runs throughout")
    tick_s: dict[str, list[float]] = {"listening": [], "recording": []}  # the UI thread's time per meter tick
    poll = page._poll_levels

    def timed_poll() -> None:
        state, began = page.state, time.perf_counter()
        poll()
        if state in tick_s:
            tick_s[state].append(time.perf_counter() - began)

    page.meter_timer.timeout.disconnect()
    page.meter_timer.timeout.connect(timed_poll)
    check_rates = level_checks(page, checks)
    for take in range(takes):
        page.meter_updates.clear()
        QTest.keyClick(page.view, "r")
        run_event_loop_until(lambda: page.state == "recording")
        started = time.perf_counter()
        run_for(seconds)
        recorder = page.recorder
        stream = recorder._stream
        updates = [t for t in page.meter_updates if t >= started]
        elapsed = time.perf_counter() - started
        pressed = time.perf_counter()
        QTest.keyClick(page.view, "r")
        run_event_loop_until(lambda: page.prepared is not None or page.state == "idle")
        checks_after.append(time.perf_counter() - pressed)
        run_event_loop_until(lambda: page.state == "idle")
        gaps = np.diff(updates) if len(updates) > 1 else np.array([elapsed])
        rates.append(len(updates) / elapsed)
        worst_gaps.append(float(gaps.max()))
        dropped += recorder.dropped_blocks
        late += stream.late_blocks
        print(
            f"take {take + 1}: {seconds:.1f} s, {recorder.blocks} blocks, meter {len(updates) / elapsed:.1f} Hz "
            f"(largest gap {1000 * gaps.max():.0f} ms), dropped blocks {recorder.dropped_blocks}, "
            f"checks shown {1000 * checks_after[-1]:.0f} ms after stop; take "
            f"{'passed' if page.takes and page.takes[-1].passed else 'failed'}"
        )
        if take + 1 < takes:
            QTest.keyClick(page.view, Qt.Key.Key_Right)
    print(
        f"level meter: {statistics.mean(rates):.1f} Hz mean, {min(rates):.1f} Hz lowest (target >= 20 Hz); "
        f"largest gap {1000 * max(worst_gaps):.0f} ms"
    )
    print(f"dropped input blocks (status.input_overflow): {dropped} (target 0); late callbacks {late}")
    print(f"checks shown after stop: median {1000 * statistics.median(checks_after):.0f} ms")
    for state, name in (("listening", "level check"), ("recording", "take")):
        costs = sorted(tick_s[state])
        if costs:
            print(
                f"UI thread per meter tick, {name}: median {1e6 * statistics.median(costs):.0f} µs, 99th percentile "
                f"{1e6 * costs[int(0.99 * (len(costs) - 1))]:.0f} µs ({len(costs)} ticks)"
            )
    stop_busy.set()
    page.set_session(None)
    session.close()
    runner.shutdown()
    page.close()
    app.processEvents()
    ok = min(rates + check_rates) >= 20 and dropped == 0
    print("OK" if ok else "BELOW TARGET")
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of recording per take (default 5)")
    parser.add_argument("--takes", type=int, default=2, help="takes to record (default 2)")
    parser.add_argument("--checks", type=int, default=2, help="level checks (L) before the takes (default 2)")
    parser.add_argument("--busy", action="store_true", help="a CPU-bound Python thread runs meanwhile")
    options = parser.parse_args()
    sys.exit(main(options.seconds, options.takes, options.checks, options.busy))
