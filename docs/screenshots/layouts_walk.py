"""Screenshots of a rating session on a real X server whose keyboard has a French (AZERTY) or a Russian layout,
driven by keys alone (xdotool sends each key's own symbol on that layout, as the person at it presses it):

    python docs/screenshots/layouts_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, starts Xvfb and a PulseAudio null sink (tests/real_device.py), sets the layout
with setxkbmap and opens the Rating page on a 260-clip queue. Into OUT: 1-azerty-rated.png (the keys labelled
1 2 3 pressed without Shift, as they type & é ", then the key help shown with Shift+, which types ?),
2-russian-undone.png (on a Russian layout: 1 2, then Ctrl and the key at US Z, which types я). Needs Xvfb,
PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    RealDesktop,
    SessionFigures,
    add_stress_queue,
    close_app,
    demo_in,
    launch_rating_session,
    stored_ratings,
    walk_arguments,
)

WALKS = (
    ("fr", ("ampersand", "eacute", "quotedbl", "question"), "1-azerty-rated.png"),
    ("ru", ("1", "2", "ctrl+Cyrillic_ya"), "2-russian-undone.png"),
)


def main() -> None:
    out, screen = walk_arguments(__doc__)
    demo = demo_in(out)
    for layout, keys, shot in WALKS:
        project = out / f"project-{layout}"
        subprocess.run(["rm", "-rf", str(project)], check=True)
        subprocess.run(["cp", "-a", str(demo), str(project)], check=True)
        add_stress_queue(project)
        figures = SessionFigures(len(keys))
        with RealDesktop(out / f"desktop-{layout}", screen=screen) as desktop:
            desktop.set_layout(layout)
            process, heart, log = launch_rating_session(desktop, project, out, figures, None)
            if process is None:
                raise SystemExit("\n".join(figures.notes))
            try:
                for key in keys:
                    desktop.xdotool("key", key)
                    time.sleep(0.8)
                time.sleep(1.0)
                desktop.screenshot(out / shot)
            finally:
                close_app(desktop, process, heart, log, figures)
        print(f"{layout}: keys {' '.join(keys)} → {stored_ratings(project)} live ratings; {out / shot}")


if __name__ == "__main__":
    main()
