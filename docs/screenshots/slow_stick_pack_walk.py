"""An annotation pack of real-length audio rated on a USB stick, then quit at once, under a real window manager
(xfwm4) with a panel, keys only:

    python docs/screenshots/slow_stick_pack_walk.py OUT [--screen 1280x720] [--ratings 12]

Builds OUT/big once: 160 English questions of ~28 words read by espeak (640 clips, ~145 MB), a queue of 480
clips packed for ana (a 112 MB pack, ~230 KB a clip as real TTS questions are). Mounts a stick that moves data
at USB 2 speed (tests/slow_stick.py: 8 MB/s written, 20 MB/s read; needs fusepy and /dev/fuse), copies the pack
onto it and opens it with `spokenbench-studio` on Xvfb with xfwm4, a 40-pixel panel and a PulseAudio null sink.
Takes OUT/slow-stick-opening.png 9 s into the first opening, the jobs panel open (Ctrl+J). Rates RATINGS clips 4 s apart while counting how often the pack file on the stick is rewritten, takes
OUT/slow-stick-rating.png, presses Ctrl+Q and then Esc (back to rating: the app stays, the save goes on) and 2
(one more rating), Ctrl+Q again, takes OUT/slow-stick-quitting.png 1.5 s later, and waits for the app to end. Prints the seconds each step took, the rewrites, and then the ratings in the pack's folder and in the
pack file, and any temp file left on the stick. Needs Xvfb, PulseAudio, xdotool and xfwm4."""

from __future__ import annotations

import argparse
import csv
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import RealDesktop, app_on  # noqa: E402
from slow_stick import SlowStick  # noqa: E402

WORDS = (
    "the committee reviewed whether the measured temperature of the reaction would increase under constant "
    "pressure and why the answer depends on the volume of gas held in the sealed container during the experiment"
).split()


def big_pack(out: Path) -> Path:
    """OUT/big/ana.sbpack: 480 clips of ~10 s (made once)."""
    folder = out / "big"
    pack = folder / "ana.sbpack"
    if pack.exists():
        return pack
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    table = folder / "long.csv"
    chooser = random.Random(1)
    with open(table, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "question", "A", "B", "C", "D", "answer", "subject"])
        for number in range(160):
            question = " ".join(chooser.choice(WORDS) for _ in range(28)) + "?"
            writer.writerow([f"q{number}", question, "the first", "the second", "a third", "the fourth", "A", "s"])
    project = str(folder / "project")
    for command in (
        ["init", project],
        ["import", project, str(table), "--format", "mcq", "--language", "en", "--map", "options=A,B,C,D"],
        ["synthesize", project, "--tts", "espeak", "--parts", "questions"],
        ["sample", project, "--per-bin", "480", "--name", "q1"],
        ["pack", project, "--queue", "q1", "--annotator", "ana", "--out", str(pack)],
    ):
        subprocess.run(["spokenbench", *command], check=True, capture_output=True)
    return pack


def counts(pack: Path) -> str:
    with sqlite3.connect(f"file:{pack.parent / (pack.name + '.d') / 'project.sqlite'}?mode=ro", uri=True) as conn:
        rated = conn.execute("SELECT count(*) FROM ratings WHERE undone_at IS NULL").fetchone()[0]
    with zipfile.ZipFile(pack) as archive:
        carried = sum(1 for line in archive.read("ratings.jsonl").splitlines() if line.strip())
    leftovers = sorted(path.name for path in pack.parent.iterdir() if path.name.endswith(".part"))
    return f"{rated} rating(s) in {pack.name}.d, {carried} in the pack file, temp files left: {leftovers or 'none'}"


class RewriteCounter(threading.Thread):
    """Counts the pack file's replacements (a new inode each) and the temp files begun beside it."""

    def __init__(self, pack: Path):
        super().__init__(daemon=True)
        self.pack, self.rewrites, self.begun, self.running = pack, 0, 0, True

    def run(self) -> None:
        inode, temps = self.pack.stat().st_ino, set()
        while self.running:
            try:
                now = self.pack.stat().st_ino
            except OSError:
                now = inode
            if now != inode:
                inode, self.rewrites = now, self.rewrites + 1
            started = {path.name for path in self.pack.parent.iterdir() if path.name.endswith(".part")}
            self.begun += len(started - temps)
            temps = started
            time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--screen", default="1400x900")
    parser.add_argument("--ratings", type=int, default=12)
    args = parser.parse_args()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    source = big_pack(out)
    with SlowStick(out / "usb") as stick:
        for leftover in stick.backing.iterdir():
            shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
        started = time.monotonic()
        shutil.copyfile(source, stick.mounted / source.name)
        pack = stick.mounted / source.name
        print(f"copied {source.stat().st_size / 1e6:.0f} MB onto the stick in {time.monotonic() - started:.1f} s")
        with (
            RealDesktop(out / "desktop", screen=f"{args.screen}x24", window_manager="xfwm4", panel=40) as desktop,
            app_on(desktop, pack, out) as app,
        ):
            started = time.monotonic()
            time.sleep(8.0)
            desktop.xdotool("key", "ctrl+j")  # the jobs panel: how far the first opening is
            time.sleep(1.0)
            desktop.screenshot(out / "slow-stick-opening.png")
            desktop.xdotool("key", "ctrl+j")
            folder = pack.parent / f"{pack.name}.d" / "project.sqlite"
            while not folder.exists() and time.monotonic() - started < 120:
                time.sleep(0.5)
            opened_in = time.monotonic() - started  # the folder appears whole, once every clip is copied off
            time.sleep(8.0)  # the queue shown
            print(f"opened in ~{opened_in:.0f} s (from the app's window): {counts(pack)}")
            counter = RewriteCounter(pack)
            counter.start()
            rated_from = time.monotonic()
            for number in range(args.ratings):
                desktop.xdotool("key", "123"[number % 3])
                time.sleep(4.0)
            desktop.screenshot(out / "slow-stick-rating.png")
            print(
                f"{args.ratings} ratings in {time.monotonic() - rated_from:.0f} s: the pack file rewritten "
                f"{counter.rewrites} time(s), {counter.begun} rewrite(s) begun"
            )
            desktop.xdotool("key", "ctrl+q")
            time.sleep(1.5)
            desktop.xdotool("key", "Escape")  # Back to rating: the save goes on
            time.sleep(1.0)
            desktop.xdotool("key", "2")
            time.sleep(1.0)
            print(f"Ctrl+Q, Esc, 2: the app {'is still open' if app.poll() is None else 'ended'}; {counts(pack)}")
            quit_at = time.monotonic()
            desktop.xdotool("key", "ctrl+q")
            time.sleep(1.5)
            desktop.screenshot(out / "slow-stick-quitting.png")
            try:
                app.wait(180)
            except subprocess.TimeoutExpired:
                pass
            counter.running = False
            print(f"Ctrl+Q: the app ended {time.monotonic() - quit_at:.1f} s later (exit {app.poll()})")
            print(
                f"in all: the pack file rewritten {counter.rewrites} time(s), {counter.begun} rewrite(s) begun; "
                f"{counts(pack)}"
            )


if __name__ == "__main__":
    main()
