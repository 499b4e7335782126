"""Screenshots and figures of a rating session whose commits wait on the disk, on a real X server and sound server,
driven by keys alone (xdotool):

    python docs/screenshots/rating_saved_ahead_walk.py OUT [--screen 1280x720] [--baseline DIR] [--ratings 40]
        [--pace 0.8]

Builds the demo into OUT/demo and opens the Rating page on a 260-clip queue. Then, into OUT, while another process
holds the project's write lock (as a colleague's script does for a moment): rating-saving-ahead-WxH.png (1 pressed:
the next clip is shown, "Saving…"), rating-saving-four-WxH.png (3, 2 and 1 pressed on the next clips: "Saving… (4
ratings)"), rating-saving-then-WxH.png (3 pressed on the fifth: "Saving… (4 ratings) then incorrect", waiting for a
place), rating-saved-ahead-WxH.png (the lock let go: all five stored, "Saved"), rating-quit-waiting-WxH.png (the lock
held again, 2 then Ctrl+Q: the window waits for that rating and says so; Esc goes back; Ctrl+Q again and the lock
let go: it closes by itself; then in a second session, Ctrl+Q and Alt+Q quit without the rating). Then, for this tree and with
`--baseline` an older one (DIR/spokenbench), each on a fresh copy of the demo while another program writes 3 GiB
files to the disk in a loop: `--ratings` rating keys, each `--pace` seconds after the last (0.8: a quick rater), and
the ratings stored, the keys ignored and the event loop's longest gap. Needs Xvfb, PulseAudio and xdotool (apt-get
install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "benchmarks"))
from bench_disk_writeback import disk_writing  # noqa: E402
from real_device import (  # noqa: E402
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    app_trees,
    close_app,
    demo_in,
    launch_rating_session,
    stored_ratings,
    walk_arguments,
    walked_session,
)
from support import hold_write_lock, let_go  # noqa: E402


def options() -> tuple[Path | None, int, float]:
    found: dict[str, str] = {}
    for name in ("--baseline", "--ratings", "--pace"):
        if name in sys.argv:
            at = sys.argv.index(name)
            found[name] = sys.argv[at + 1]
            del sys.argv[at : at + 2]
    baseline = Path(found["--baseline"]) if "--baseline" in found else None
    return baseline, int(found.get("--ratings", "40")), float(found.get("--pace", "0.8"))


def exit_within(process: subprocess.Popen, since: float, seconds: float = 15.0) -> str:
    try:
        process.wait(seconds)
        return f"{time.monotonic() - since:.1f} s"
    except subprocess.TimeoutExpired:
        return f"not within {seconds:.0f} s"


def screenshots(out: Path, screen: str, project: Path) -> str:
    size = screen.removesuffix("x24")
    with walked_session(out, screen, project) as (desktop, process, figures):
        holder = hold_write_lock(project)
        desktop.xdotool("key", "1")
        time.sleep(1.0)
        desktop.screenshot(out / f"rating-saving-ahead-{size}.png")
        for key in "321":
            desktop.xdotool("key", key)
            time.sleep(0.5)
        desktop.screenshot(out / f"rating-saving-four-{size}.png")
        desktop.xdotool("key", "3")
        time.sleep(0.5)
        desktop.screenshot(out / f"rating-saving-then-{size}.png")
        held = stored_ratings(project)
        let_go(holder)
        time.sleep(1.5)
        desktop.screenshot(out / f"rating-saved-ahead-{size}.png")
        after = stored_ratings(project)
        holder = hold_write_lock(project)
        desktop.xdotool("key", "2")
        time.sleep(0.5)
        desktop.xdotool("key", "ctrl+q")
        time.sleep(1.5)
        desktop.screenshot(out / f"rating-quit-waiting-{size}.png")
        desktop.xdotool("key", "Escape")  # back to the project: the rating goes on waiting
        time.sleep(0.5)
        back = "the window stayed" if process.poll() is None else "the window closed (wrong)"
        desktop.xdotool("key", "ctrl+q")
        time.sleep(1.0)
        let_go_at = time.monotonic()
        let_go(holder)
        by_itself = exit_within(process, let_go_at)
    quit_waited = stored_ratings(project)
    with walked_session(out, screen, project) as (desktop, process, _figures):
        holder = hold_write_lock(project)
        desktop.xdotool("key", "3")
        time.sleep(0.5)
        desktop.xdotool("key", "ctrl+q")
        time.sleep(1.0)
        desktop.xdotool("key", "alt+q")  # quit without saving
        without = exit_within(process, time.monotonic())
        let_go(holder)
    return (
        f"{held} stored while the lock was held, {after} after; {figures.lines()[1]}\n"
        f"Ctrl+Q with a rating waiting for the lock, Esc: {back}; Ctrl+Q again, the lock let go: the window closed "
        f"{by_itself} later, {quit_waited} stored\n"
        f"Ctrl+Q with a rating waiting for the lock, Alt+Q (quit without saving): the window closed {without} later, "
        f"{stored_ratings(project)} stored"
    )


def busy_ratings(out: Path, screen: str, demo: Path, baseline: Path | None, ratings: int, pace: float) -> None:
    with RealDesktop(out / "desktop-busy", screen=screen) as desktop, disk_writing(out):
        for name, command in app_trees(baseline):
            project = out / f"busy-{name.split()[0]}"
            shutil.rmtree(project, ignore_errors=True)
            shutil.copytree(demo, project)
            figures = SessionFigures(ratings, round_keys=f"a rating key, {pace} s after the last")
            process, heart, log = launch_rating_session(desktop, project, out, figures, command)
            if process is None:
                print(f"{name}: {'; '.join(figures.notes)}")
                continue
            try:
                for index in range(ratings):
                    if heart.froze or heart.died:
                        break
                    desktop.xdotool("key", "123"[index % 3])
                    figures.rounds_done = index + 1
                    time.sleep(pace)
                time.sleep(3.0)  # the last commit
            finally:
                close_app(desktop, process, heart, log, figures)
            figures.ratings_stored = stored_ratings(project)
            print(f"{name}, {screen.removesuffix('x24')}, disk busy:")
            print("  " + "\n  ".join(line for line in figures.lines() if not line.startswith("PulseAudio")))
            shutil.rmtree(project, ignore_errors=True)


def main() -> None:
    baseline, ratings, pace = options()
    out, screen = walk_arguments(__doc__)
    demo = demo_in(out)
    add_stress_queue(demo)
    project = out / "walked"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(demo, project)
    print(screenshots(out, screen, project), flush=True)
    busy_ratings(out, screen, demo, baseline, ratings, pace)


if __name__ == "__main__":
    main()
