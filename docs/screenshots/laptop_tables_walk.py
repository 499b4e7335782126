"""Screenshots of the record tables on a laptop's screen, under a real window manager (xfwm4) with a 40-pixel
panel, driven by keys alone:

    python docs/screenshots/laptop_tables_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it with two consented speakers added (one with a longer name, a Korean
accent and a self-described gender), starts Xvfb, xfwm4, the panel and a PulseAudio null sink
(tests/real_device.py) and opens the app maximized. Into OUT: 1-item-rewrites.png (Ctrl+1: the first item's
rewrites: Origin and Reviewer in view), 2-item-clips.png (Tab to the detail's tabs, → : its clips with WER and
both transcripts), 3-item-responses.png (→ →: its answers, each condition as words), 4-speakers.png (Ctrl+5:
the speakers with Prompts done and Cloned in view, beside the recorder). Needs Xvfb, PulseAudio, xdotool and xfwm4 (apt-get install xvfb pulseaudio xdotool; xfwm4 with
--no-install-recommends)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    RealDesktop,
    add_consented_speaker,
    app_on,
    demo_copy_in,
    missing_tools,
    missing_window_manager,
    walk_arguments,
)

# (keys, pause after them in seconds, the shot taken then)
STEPS = (
    (("ctrl+1",), 3.0, "1-item-rewrites.png"),
    (("Tab", "Tab", "Right"), 2.0, "2-item-clips.png"),
    (("Right", "Right"), 2.0, "3-item-responses.png"),
    (("ctrl+5",), 4.0, "4-speakers.png"),
)


def main() -> None:
    out, screen = walk_arguments(__doc__)
    problem = missing_tools() or missing_window_manager()
    if problem:
        raise SystemExit(problem)
    project = demo_copy_in(out)
    add_consented_speaker(project, "Ana")
    from spokenbench.core.recording.speakers import add_speaker, give_consent
    from spokenbench.core.store import opened

    with opened(project) as stored:
        add_speaker(stored, "Kim Min-jun Park", "ko", "seoul", "non-binary")
        give_consent(stored, "Kim Min-jun Park", "I agree to be recorded.", "coordinator")
    with RealDesktop(out / "desktop", screen=screen, window_manager="xfwm4", panel=40) as desktop:
        with app_on(desktop, project, out):
            time.sleep(6.0)  # the project opens and the first item's detail is read
            for keys, pause, shot in STEPS:
                desktop.xdotool("key", "--delay", "300", *keys)
                time.sleep(pause)
                desktop.screenshot(out / shot)
                print(f"wrote {out / shot}")


if __name__ == "__main__":
    main()
