"""Screenshots of a rating session and a rewrite review with Orca (GNOME's screen reader) running, on a real X
server (xfwm4), keys only, and what Orca said of each key:

    python docs/screenshots/screen_reader_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo and starts Xvfb, PulseAudio, a session bus and Orca before the app, as a blind
annotator's login does (tests/real_device.py `screen_reader_session`); the app opens its Rating page on the demo's
queue (Enter). Into OUT: 1-rating.png (the session after 1 was pressed), 2-review.png (Ctrl+2: the rewrite review,
after J), 3-review-editing.png (E: the rewrite in its editor), and said.txt (each key and what Orca said after
it). Needs Xvfb, PulseAudio, xdotool, xfwm4 and Orca with the accessibility bus (orca, at-spi2-core,
python3-pyatspi, speech-dispatcher; installed with apt-get when missing, as root)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    demo_copy_in,
    missing_screen_reader,
    missing_tools,
    missing_window_manager,
    screen_reader_session,
    walk_arguments,
)

KEYS = ["1", "2", "Left", "ctrl+z", "ctrl+2", "j", "e", "Escape", "a"]
SHOTS = {"1": "1-rating.png", "j": "2-review.png", "e": "3-review-editing.png"}  # each taken after its key


def main() -> None:
    out, screen = walk_arguments(__doc__)
    problem = missing_tools() or missing_window_manager() or missing_screen_reader()
    if problem:
        raise SystemExit(problem)
    project = demo_copy_in(out)
    lines = []
    with screen_reader_session(project, out / "work", screen) as (desktop, reader, _figures):
        time.sleep(3.0)
        lines.append(f"(Enter opened the session): {' | '.join(reader.said())}")
        for key in KEYS:
            since = len(reader.said())
            desktop.xdotool("key", key)
            time.sleep(2.5)
            if key in SHOTS:
                desktop.screenshot(out / SHOTS[key])
            lines.append(f"{key}: {' | '.join(reader.said()[since:]) or '(nothing)'}")
    (out / "said.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
