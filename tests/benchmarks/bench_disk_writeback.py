"""Benchmark (run by hand, prints its figures; not part of the test run): what waits on the disk while another
process writes a lot to it — a backup, a copy, a colleague's job, the other CI worker.

    python tests/benchmarks/bench_disk_writeback.py [--seconds 60] [--folder /var/tmp]
    python tests/benchmarks/bench_disk_writeback.py --app [--baseline DIR] [--rounds 3]

A writer process writes 3 GiB files in a loop into FOLDER (the disk measured; a sync after each, as after a copy)
while, side by side in alternating 5 s turns, on this process's main thread as on the app's UI thread:
- "settings: QSettings on the UI thread": `setValue` then `sync()` (what QSettings' own deferred sync did on the UI
  thread until this round: the window's place, the recent projects, a dragged column's width);
- "settings: AppSettings": `setValue` (app/app_settings.py, written by a thread of its own) — the UI thread's part;
- "heartbeat on the disk" and "heartbeat on tmpfs": the real-desktop tests' beat file rewritten every 100 ms
  (open "w", write) by one thread and read every 20 ms by another: the worst rewrite, and the longest time the
  reader found it empty (read as a frozen event loop by the watchdog; tests/real_device.beat_file).
Then the same with no writer, for scale. Medians, 90th percentiles and worst cases in milliseconds.

`--app`: the app itself on a real desktop (Xvfb, xfwm4, PulseAudio; tests/real_device.py) with the writer running,
this tree and, with `--baseline DIR` (an older tree as DIR/spokenbench), that one, alternating round by round: the
app started on a copy of the demo (the project opens and goes on the recent list), then Ctrl+, and Enter (Settings
saved), then Ctrl+Q. Per tree: the longest time its event loop did not answer (the heartbeat, on tmpfs) from the
first beat until Ctrl+Q, and the stalls its own watcher wrote down (with what the UI thread was doing)."""

import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings

from spokenbench.app.app_settings import AppSettings

TURN_S = 5.0


def disk_writer(folder: Path) -> subprocess.Popen:
    """Another process writing 3 GiB files, as a copy does (the kernel writes them back; a sync after each), in a
    loop, until killed."""
    target = folder / "bench-disk-writeback.bin"
    script = (
        "import os, sys\n"
        "block = b'\\0' * (1 << 20)\n"
        "while True:\n"
        f"    with open({str(target)!r}, 'wb') as f:\n"
        "        for _ in range(3072): f.write(block)\n"
        "    os.sync()\n"
        f"    os.remove({str(target)!r})\n"
    )
    return subprocess.Popen([sys.executable, "-c", script])


@contextlib.contextmanager
def disk_writing(folder: Path, settle_s: float = 3.0):
    """`disk_writer` into FOLDER for the block (after `settle_s`: its first dirty pages under way), then killed and
    its file removed."""
    writer = disk_writer(folder)
    try:
        time.sleep(settle_s)
        yield writer
    finally:
        writer.kill()
        writer.wait()
        (folder / "bench-disk-writeback.bin").unlink(missing_ok=True)


def settings_turn(folder: Path, kind: str, seconds: float) -> list[float]:
    """Seconds the calling thread spent per change of one setting, every 0.3 s."""
    path = folder / f"bench-settings-{kind}.ini"
    plain = QSettings(str(path), QSettings.Format.IniFormat)
    mirrored = AppSettings(QSettings(str(path), QSettings.Format.IniFormat)) if kind == "app" else None
    spent, end, index = [], time.monotonic() + seconds, 0
    while time.monotonic() < end:
        index += 1
        started = time.perf_counter()
        if mirrored is not None:
            mirrored.setValue("columns/items", f'{{"Origin": {100 + index % 50}}}')
        else:
            plain.setValue("columns/items", f'{{"Origin": {100 + index % 50}}}')
            plain.sync()
        spent.append(time.perf_counter() - started)
        time.sleep(0.3)
    if mirrored is not None:
        mirrored.close(30.0)
    return spent


def heartbeat_turn(path: Path, seconds: float) -> tuple[list[float], float]:
    """(seconds per rewrite of the beat file, the longest time a reader found it unreadable)."""
    rewrites, end = [], time.monotonic() + seconds
    path.write_text(f"{time.monotonic():.3f} 0\n")

    def write() -> None:
        while time.monotonic() < end:
            started = time.perf_counter()
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(f"{time.monotonic():.3f} 0\n")
            rewrites.append(time.perf_counter() - started)
            time.sleep(0.1)

    writer = threading.Thread(target=write)
    writer.start()
    longest, unreadable_since = 0.0, None
    while writer.is_alive():
        now = time.monotonic()
        try:
            float(path.read_text(encoding="utf-8").split()[0])
            unreadable_since = None
        except (OSError, ValueError, IndexError):
            unreadable_since = unreadable_since or now
            longest = max(longest, time.monotonic() - unreadable_since)
        time.sleep(0.02)
    writer.join()
    return rewrites, longest


def figures(seconds: list[float]) -> str:
    ordered = sorted(seconds)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    median, worst = statistics.median(ordered) * 1000, ordered[-1] * 1000
    return f"median {median:7.1f}  p90 {p90 * 1000:7.1f}  worst {worst:7.1f}  (n={len(ordered)})"


def measure(folder: Path, shm: Path, seconds: float) -> None:
    results: dict[str, list[float]] = {"settings-qt": [], "settings-app": [], "beat-disk": [], "beat-tmpfs": []}
    unreadable = {"beat-disk": 0.0, "beat-tmpfs": 0.0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # alternating turns: the writer's phases fall on every case alike
        results["settings-qt"] += settings_turn(folder, "qt", TURN_S)
        results["settings-app"] += settings_turn(folder, "app", TURN_S)
        for kind, where in (("beat-disk", folder), ("beat-tmpfs", shm)):
            rewrites, longest = heartbeat_turn(where / "bench-heartbeat", TURN_S)
            results[kind] += rewrites
            unreadable[kind] = max(unreadable[kind], longest)
    print(f"  settings, QSettings synced on the UI thread   {figures(results['settings-qt'])}")
    print(f"  settings, AppSettings (UI thread's part)      {figures(results['settings-app'])}")
    for kind, label in (("beat-disk", "heartbeat on the disk"), ("beat-tmpfs", "heartbeat on tmpfs  ")):
        print(
            f"  {label} rewrite            {figures(results[kind])}; unreadable up to {unreadable[kind] * 1000:.0f} ms"
        )


def app_rounds(folder: Path, baseline: Path | None, rounds: int) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py
    from real_device import Heartbeat, RealDesktop, app_trees, beat_file, demo_copy_in

    gaps: dict[str, list[float]] = {}
    stalls: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(dir=folder) as work:
        work = Path(work)
        with RealDesktop(work / "desktop", window_manager="xfwm4") as desktop:
            with disk_writing(work, settle_s=0.0):
                for round_index in range(rounds):
                    for name, command in app_trees(baseline):
                        out = work / f"{name.split()[0]}-{round_index}"
                        project = demo_copy_in(work, f"project-{round_index}-{name.split()[0]}")
                        beat = beat_file(out)
                        app = subprocess.Popen(
                            [*(command or ["spokenbench-studio"]), str(project)],
                            env=desktop.app_env(out / "config", beat),
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                        )
                        heart = Heartbeat(beat, app, desktop)
                        heart.wait_for(lambda *_: True, 60)
                        heart.watching = True
                        heart.start()
                        time.sleep(8.0)  # the project opens; the recent list is written
                        desktop.xdotool("key", "ctrl+comma")
                        time.sleep(2.0)
                        desktop.xdotool("key", "Return")  # Settings saved
                        time.sleep(3.0)
                        heart.stop()
                        gaps.setdefault(name, []).append(heart.longest_gap)
                        written = beat.with_name(beat.name + ".stalls")
                        if written.exists():
                            stalls.setdefault(name, []).append(written.read_text()[:1500])
                        desktop.xdotool("key", "ctrl+q")
                        try:
                            app.wait(30)
                        except subprocess.TimeoutExpired:
                            app.kill()
                        beat.unlink(missing_ok=True)
                        written.unlink(missing_ok=True)
                        shutil.rmtree(project, ignore_errors=True)
    for name, seconds in gaps.items():
        listed = ", ".join(f"{gap:.2f}" for gap in seconds)
        print(f"{name}: longest event-loop gap median {statistics.median(seconds):.2f} s (rounds: {listed})")
        for text in stalls.get(name, [])[:2]:
            print("  a stall its watcher wrote down:\n    " + "\n    ".join(text.splitlines()[:14]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="per condition (default 60)")
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()), help="on the disk measured")
    parser.add_argument("--app", action="store_true", help="the app itself on a real desktop")
    parser.add_argument("--baseline", type=Path, help="with --app: an older tree as DIR/spokenbench")
    parser.add_argument("--rounds", type=int, default=3, help="with --app (default 3)")
    args = parser.parse_args()
    if args.app:
        app_rounds(args.folder, args.baseline, args.rounds)
        return
    QCoreApplication([])
    shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.mkdtemp())
    with tempfile.TemporaryDirectory(dir=args.folder) as work:
        work = Path(work)
        with disk_writing(work):
            print(f"with another process writing 3 GiB files to {args.folder} (milliseconds):")
            measure(work, shm, args.seconds)
        subprocess.run(["sync"], check=False)
        print("with no other writer (milliseconds):")
        measure(work, shm, min(args.seconds, 20.0))
    (shm / "bench-heartbeat").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
