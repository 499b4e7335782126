"""Screenshots of a rating session started while the sound server does not answer (PulseAudio stopped with
SIGSTOP: it keeps its socket and answers nothing, as a hung PulseAudio or PipeWire does), driven by keys alone:

    python docs/screenshots/hung_sound_server_walk.py OUT [--screen 1280x720]

Copies the demo into OUT/project (built into OUT/demo the first time), starts Xvfb and a PulseAudio null sink
(tests/real_device.py), stops the sound server, starts the app on the project, opens the Rating page on a
260-clip queue (Ctrl+3, ↓ Enter), presses Space and waits 6.5 s: studio-sound-hung.png; rates five clips (1 2 3
1 2); lets the server go on (SIGCONT) and presses Space until PulseAudio sees the app's stream:
studio-sound-hung-back.png; stops the server again, presses Space and 1, and
Ctrl+Q. Screenshots at a screen other than 1400x900 end in -WxH. Prints how long the
window took to show, the ratings stored while the server was stopped, and how long playback took to come back.
The docs' screenshots were taken under xfwm4 with a panel (SPOKENBENCH_WALK_WM=xfwm4). Needs Xvfb, PulseAudio
and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import RealDesktop, add_stress_queue, demo_copy_in, run_hung_server_session, walk_arguments  # noqa: E402


def main() -> None:
    out, screen = walk_arguments(__doc__)
    suffix = "" if screen == "1400x900x24" else f"-{screen.removesuffix('x24')}"
    project = demo_copy_in(out)
    add_stress_queue(project)
    with RealDesktop(out / "desktop", screen=screen) as desktop:
        figures = run_hung_server_session(desktop, project, out, shots=out, suffix=suffix)
    window = "never" if figures.window_after_s is None else f"{figures.window_after_s:.1f} s after the start"
    back = "never" if figures.back_after_s is None else f"{figures.back_after_s:.1f} s after the server went on"
    ended = "never (killed)" if figures.quit_after_s is None else f"{figures.quit_after_s:.1f} s later"
    print("\n".join([f"window visible: {window}", f"playback back: {back}", f"Ctrl+Q, server hung: {ended}"]))
    print("\n".join(figures.lines()))


if __name__ == "__main__":
    main()
