"""Screenshots of importing a file again and of an unscreened queue asked for, on a real X server with a
PulseAudio null sink, driven by keys alone (tests/real_device.py):

    python docs/screenshots/import_and_queue_walk.py OUT [--screen 1280x720] [--dark]

Builds the demo into OUT/demo, copies it to OUT/project and opens the Rating page on a session (Ctrl+3, ↓, Enter).
Then, by keys only:
- Esc back to the queues, Tab Tab Space opens Create queue…; a name is typed, Tab ↓ ↓ picks "Unscreened
  strata", Tab ×4 reaches Preview strata, Space previews: OUT/queue-unscreened.png (the note says "as asked").
- Esc, then Ctrl+I twice: OUT/en.csv (4 Global-MMLU-Lite rows) typed into the file dialog, Enter, Alt+O (or
  Enter) for the format; then the same file with 6 rows: OUT/import-again.png (the status bar: 2 imported, 4 already there;
  the jobs panel the imports opened, on their two cards).
`--dark` runs it on GNOME's dark mode (Qt's gtk3 theme, GTK_THEME=Adwaita:dark; needs apt-get install libgtk-3-0).
Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, walk_arguments, walked_session  # noqa: E402
from support import gmmlu_rows, write_csv  # noqa: E402


def keys(desktop, *names: str, pause: float = 0.25) -> None:
    for name in names:
        desktop.xdotool("key", name)
        time.sleep(pause)


def windows(desktop, process) -> set[int]:
    found = desktop.xdotool("search", "--onlyvisible", "--pid", str(process.pid)).stdout.split()
    return {int(window) for window in found}


def focus(desktop, window: int) -> None:
    """Give a window the keyboard, as a window manager does for a new dialog (Xvfb runs none)."""
    desktop.xdotool("windowfocus", "--sync", str(window))
    time.sleep(0.3)


def focus_dialog(desktop, process, main: set[int]) -> None:
    """Focus the newest of the app's other windows (X gives newer windows larger ids), once one is shown."""
    deadline = time.monotonic() + 15
    while not (others := windows(desktop, process) - main):
        if time.monotonic() > deadline:
            raise SystemExit("no dialog appeared")
        time.sleep(0.2)
    focus(desktop, max(others))


def import_file(desktop, process, main: set[int], path: Path) -> None:
    """Ctrl+I, the path typed into Qt's file dialog, Enter, then Alt+O for the format (gmmlu-lite, the first)."""
    keys(desktop, "ctrl+i", pause=1.5)
    focus_dialog(desktop, process, main)
    desktop.xdotool("type", "--delay", "20", str(path))
    keys(desktop, "Return", pause=1.5)
    focus_dialog(desktop, process, main)
    keys(desktop, "alt+o", pause=1.0)  # &OK on GNOME's theme, where Enter on the format's combo box opens its list
    if windows(desktop, process) - main:  # Qt's own theme: OK has no mnemonic, and Enter accepts
        keys(desktop, "Return", pause=1.0)
    focus(desktop, min(main))
    time.sleep(6.0)  # the import runs as a job process


def main() -> None:
    dark = "--dark" in sys.argv
    if dark:
        sys.argv.remove("--dark")
        os.environ.update(QT_QPA_PLATFORMTHEME="gtk3", GTK_THEME="Adwaita:dark")  # passed on to the app
    out, screen = walk_arguments(__doc__)
    rows = gmmlu_rows(6)
    with walked_session(out, screen, demo_copy_in(out)) as (desktop, process, _figures):
        main = windows(desktop, process)
        keys(desktop, "Escape", pause=1.0)  # back to the queue list
        keys(desktop, "Tab", "Tab", "space", pause=4.0)  # Start rating, Create queue…; its options load
        focus_dialog(desktop, process, main)
        desktop.xdotool("type", "--delay", "40", "bylanguage")
        keys(desktop, "Tab", "Down", "Down")  # the sample: Unscreened strata
        keys(desktop, *["Tab"] * 4, "space", pause=0.3)  # past N, seed, controls (no filters here): Preview
        time.sleep(3.0)
        desktop.screenshot(out / "queue-unscreened.png")
        keys(desktop, "Escape", pause=1.0)
        focus(desktop, min(main))
        (out / "first").mkdir(exist_ok=True)
        import_file(desktop, process, main, write_csv(out / "first" / "en.csv", rows[:4]))
        import_file(desktop, process, main, write_csv(out / "en.csv", rows))
        desktop.screenshot(out / "import-again.png")  # the jobs panel opened by the imports, on their cards
    for name in ("queue-unscreened", "import-again"):
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
