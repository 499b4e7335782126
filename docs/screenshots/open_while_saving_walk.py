"""Screenshots and figures of opening another project while a rating waits for the project's write lock, on a real X
server and sound server, driven by keys alone (xdotool):

    python docs/screenshots/open_while_saving_walk.py OUT [--screen 1280x720] [--baseline DIR] [--held 3]

Builds the demo into OUT/demo. For this tree and, with `--baseline`, an older one (DIR/spokenbench), each on fresh
copies of the demo (the project rated, and another in the recent list): the app on the Rating page; another process
takes the project's write lock (a colleague's script, a job stopped mid-write); 1 rates a clip; File → Open Recent
opens the other project (Alt+F, R, ↓, Enter). Then:

- *let go*: the lock is let go `--held` seconds later. Figures: the event loop's longest gap, which project is open
  when and how long after the lock was let go, and the rating stored. This tree's screenshot (1.5 s after the keys)
  is open-waiting-WxH.png.
- *never let go*: the lock is held past the writer's wait for it (15 s), so the rating cannot be stored. Figures:
  which project is open at the end, whether a dialog named the rating (open-not-saved-WxH.png for this tree), and
  whether the clip is offered again.
- *Alt+O* (this tree): the dialog's Open NAME without saving, 1.5 s after the keys; how soon the other project opens.

Each case ends with Ctrl+Q (`close_app`): whether it closed the app says whether the keys reached the window after
its dialogs (without a window manager nothing gives them back).

Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    ANNOTATOR,
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    app_trees,
    close_app,
    demo_in,
    launch_rating_session,
    stored_ratings,
    walk_arguments,
)
from support import hold_write_lock, let_go  # noqa: E402

LOCK_WAIT_S = 15.0  # the writer's wait for another process's lock (core/store/database.py BUSY_TIMEOUT_MS)


def options() -> tuple[Path | None, float]:
    found: dict[str, str] = {}
    for name in ("--baseline", "--held"):
        if name in sys.argv:
            at = sys.argv.index(name)
            found[name] = sys.argv[at + 1]
            del sys.argv[at : at + 2]
    return (Path(found["--baseline"]) if "--baseline" in found else None), float(found.get("--held", "3"))


def window_titles(desktop: RealDesktop, process: subprocess.Popen) -> list[str]:
    """The titles of the app's visible windows (the main window's names its project; a dialog's says what it is)."""
    found = desktop.xdotool("search", "--onlyvisible", "--pid", str(process.pid))
    titles = []
    for window in found.stdout.split():
        name = desktop.xdotool("getwindowname", window).stdout.strip()
        if name:
            titles.append(name)
    return titles


def open_project_named(desktop: RealDesktop, process: subprocess.Popen, name: str) -> bool:
    return any(title == f"SpokenBench Studio — {name}" for title in window_titles(desktop, process))


def seconds_until_other_opens(desktop: RealDesktop, process: subprocess.Popen, since: float) -> float | None:
    """How long after `since` (monotonic) the window showed the other project; None if not within 15 s."""
    while time.monotonic() - since < 15.0:
        if open_project_named(desktop, process, "other"):
            return time.monotonic() - since
        time.sleep(0.05)
    return None


def open_other_by_keys(desktop: RealDesktop) -> None:
    """File → Open Recent → the second entry (the first is the project open now)."""
    desktop.xdotool("key", "alt+f")
    time.sleep(0.4)
    desktop.xdotool("key", "r")
    time.sleep(0.4)
    desktop.xdotool("key", "Down", "Return")


def one_opening(
    out: Path,
    screen: str,
    demo: Path,
    name: str,
    command: list[str] | None,
    held_s: float | str | None,
    shot: Path | None,
) -> list[str]:
    """One tree, one case (`held_s` None: the lock is never let go within the writer's wait; "without": Alt+O):
    its figures."""
    out.mkdir(parents=True, exist_ok=True)
    project, other = out / "rated", out / "other"
    for folder in (project, other):
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(demo, folder)
    config = out / "config" / "SpokenBench" / "SpokenBench Studio.conf"  # launch_app's: with the recent list
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"[annotator]\nname={ANNOTATOR}\n\n[projects]\nrecent={other}\n", encoding="utf-8")
    lines: list[str] = []
    figures = SessionFigures(1, round_keys="1, then File → Open Recent → the other project")
    with RealDesktop(out / "desktop", screen=screen) as desktop:
        process, heart, log = launch_rating_session(desktop, project, out, figures, command, keep_settings=True)
        if process is None:
            return [f"{name}: {'; '.join(figures.notes)}"]
        try:
            holder = hold_write_lock(project)
            desktop.xdotool("key", "1")
            time.sleep(0.5)
            open_other_by_keys(desktop)
            asked = time.monotonic()
            time.sleep(1.5)
            if shot is not None and held_s not in (None, "without"):
                desktop.screenshot(shot)
            titles = window_titles(desktop, process)
            lines.append(f"1.5 s after the keys: windows {titles}")
            if held_s == "without":
                pressed = time.monotonic()
                desktop.xdotool("key", "alt+o")
                opened_after = seconds_until_other_opens(desktop, process, pressed)
                said = f"{opened_after:.2f} s after Alt+O" if opened_after is not None else "never"
                lines.append(f"the other project opened {said}")
                let_go(holder)
            elif held_s is not None:
                time.sleep(max(0.0, held_s - (time.monotonic() - asked)))
                let_go_at = time.monotonic()
                let_go(holder)
                opened_after = seconds_until_other_opens(desktop, process, let_go_at)
                lines.append(
                    "the other project opened "
                    + (f"{opened_after:.2f} s after the lock was let go" if opened_after is not None else "never")
                    + f" (the keys {let_go_at - asked:.1f} s before it)"
                )
            else:
                time.sleep(LOCK_WAIT_S + 3.0)  # past the writer's wait for the lock
                if shot is not None:
                    desktop.screenshot(shot)
                titles = window_titles(desktop, process)
                lines.append(f"{LOCK_WAIT_S + 3.0:.0f} s later, the lock still held: windows {titles}")
                desktop.xdotool("key", "Return")  # the dialog's OK, if there is one
                let_go(holder)
                time.sleep(1.0)
            lines.append(f"ratings stored in the project rated: {stored_ratings(project)}")
        finally:
            close_app(desktop, process, heart, log, figures)
    lines.append(figures.lines()[1])
    lines += figures.notes or ["Ctrl+Q at the end closed the app"]
    return lines


def main() -> None:
    baseline, held = options()
    out, screen = walk_arguments(__doc__)
    size = screen.removesuffix("x24")
    demo = demo_in(out)
    add_stress_queue(demo)
    for name, command in app_trees(baseline):
        this_tree = command is None
        cases = [("let go", held, "open-waiting"), ("never let go", None, "open-not-saved")]
        for case, held_s, shot_name in cases + ([("Alt+O", "without", "")] if this_tree else []):
            shot = out / f"{shot_name}-{size}.png" if this_tree and shot_name else None
            figures = one_opening(out / "walk", screen, demo, name, command, held_s, shot)
            print(f"{name}, {size}, lock {case}:", flush=True)
            print("  " + "\n  ".join(figures), flush=True)


if __name__ == "__main__":
    main()
