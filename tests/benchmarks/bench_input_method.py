"""Benchmark (run by hand, prints its figures; not part of the test run): a Chinese note typed through Fcitx 5 in
the real app, as the app reaches the input method now and as it did before, in alternating rounds on one real
desktop each (Xvfb, xfwm4, PulseAudio, a session bus and Fcitx 5's pinyin; tests/real_device.py):

    python tests/benchmarks/bench_input_method.py [--rounds 3] [--samples 15] [--project DIR]

Each round starts the app on a fresh copy of the project with QT_IM_MODULE=fcitx, as an Fcitx 5 login sets it,
opens the rating session, presses N, Ctrl+Space, n i h a o, Space, Enter and 1, and reads the note stored.
"before" adds QT_IM_MODULES=fcitx, which the app leaves alone: Qt then tries the fcitx plugin only, as before
app/input_methods.py. Prints each round's note and the seconds from start to the window shown (whether reaching
Fcitx 5 through the IBus portal costs the start anything; xdotool's wait counts in steps of about 0.5 s), with
their medians; then `--samples` starts of Qt alone to a focused text field, alternating, timed in the process
(its IBus plugin connects to the portal then). Installs the desktop's packages
and Fcitx 5 with apt-get when missing (root only). Without --project it builds the demo."""

import argparse
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

from real_device import (
    RealDesktop,
    missing_input_method,
    missing_tools,
    missing_window_manager,
    start_input_method,
    stored_notes,
    temporary_folder,
    typed_session,
)

VARIANTS = {"now": {}, "before": {"QT_IM_MODULES": "fcitx"}}
KEYS = ["n", "ctrl+space", *"nihao", "space", "Return", "1"]
# Qt's start as the app makes it (the variables of app/input_methods.py set first) to a text field shown and
# given the keyboard, which is when Qt's IBus plugin has connected to the portal, and the app's check that the
# portal answers: seconds, printed
QT_START = """
import sys, time
start = time.perf_counter()
from spokenbench.app.input_methods import checked_input_method, prepare_input_method
setup = prepare_input_method()
from PySide6.QtWidgets import QApplication, QLineEdit
app = QApplication([])
field = QLineEdit()
field.show()
field.setFocus()
app.processEvents()
checked_input_method(setup, app.platformName())
print(time.perf_counter() - start)
"""


def one_round(source: Path, work: Path, extra: dict[str, str]) -> tuple[str, float | None]:
    """The note stored and the seconds to the window, for one start of the app."""
    shutil.rmtree(work, ignore_errors=True)
    project = work / "project"
    shutil.copytree(source, project)
    try:
        figures = typed_session(project, work, "fcitx5", KEYS, env=extra)
    except RuntimeError as error:  # the app's session never opened: the round says why
        return str(error), None
    notes = stored_notes(project)
    return (notes[-1] if notes else "(no note stored)"), figures.window_after_s


def qt_starts(work: Path, samples: int) -> dict[str, list[float]]:
    """Seconds of QT_START under Fcitx 5 for each variant, alternating, on one desktop."""
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with RealDesktop(work / "desktop", window_manager="xfwm4") as desktop:
        env = {
            **desktop.app_env(work / "config", work / "heartbeat"),
            **start_input_method(desktop, "fcitx5", work / "config"),
        }
        for _ in range(samples):
            for name, extra in VARIANTS.items():
                done = subprocess.run(
                    [sys.executable, "-c", QT_START], env={**env, **extra}, capture_output=True, text=True, timeout=60
                )
                seconds[name].append(float(done.stdout.split()[0]))
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=15, help="Qt starts timed per variant")
    parser.add_argument("--project", type=Path, help="a project folder to copy (default: a fresh demo)")
    args = parser.parse_args()
    problem = missing_tools() or missing_window_manager() or missing_input_method("fcitx5")
    if problem:
        print(f"cannot run: {problem}")
        return 2
    work = temporary_folder()
    try:
        source = args.project
        if source is None:
            source = work / "demo"
            subprocess.run(["spokenbench", "demo", str(source)], check=True, stdout=subprocess.DEVNULL)
        starts: dict[str, list[float]] = {name: [] for name in VARIANTS}
        notes: dict[str, list[str]] = {name: [] for name in VARIANTS}
        for number in range(1, args.rounds + 1):
            for name, extra in VARIANTS.items():  # alternating, so a busy moment of the machine hits both
                note, start = one_round(source, work / name, extra)
                notes[name].append(note)
                if start is not None:
                    starts[name].append(start)
                shown = "no window" if start is None else f"window after {start:.2f} s"
                print(f"round {number} {name:>6}: note {note!r}, {shown}", flush=True)
        qt = qt_starts(work / "qt", args.samples)
        for name in VARIANTS:
            median = f"{statistics.median(starts[name]):.2f} s" if starts[name] else "-"
            print(f"{name:>6}: notes {sorted(set(notes[name]))}; window after {median} (median of {len(starts[name])})")
        for name in VARIANTS:
            print(
                f"{name:>6}: Qt's start to a focused text field {statistics.median(qt[name]) * 1000:.0f} ms "
                f"(median of {len(qt[name])}; min {min(qt[name]) * 1000:.0f}, max {max(qt[name]) * 1000:.0f})"
            )
        ratio = statistics.median(qt["now"]) / statistics.median(qt["before"])
        print(f"Qt's start now / before: {ratio:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
