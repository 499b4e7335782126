"""Screenshots of the Speakers page used with the keys alone, on a real X server (Xvfb, no window manager) with a
PulseAudio null sink whose monitor is the microphone, driven by xdotool:

    python docs/screenshots/speakers_keys_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project with a consented speaker (Ana) and opens the app on its
Rating page. Into OUT, each after its keys: speakers-recorder.png (Ctrl+5: the recorder has the keys), then
speakers-take.png (R, the speaker's sentence played into the microphone, R: the take's checks), speakers-input.png
(Tab: the input, which the keys now reach) and speakers-withdraw.png (Alt+W: the question, Cancel the default);
Escape closes it. What a screen reader says of the same keys: `python tests/benchmarks/bench_screen_reader.py
--walk speakers`. Needs Xvfb, PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    add_consented_speaker,
    demo_copy_in,
    read_aloud,
    speech_file,
    walk_arguments,
    walked_session,
)

PAGE_S = 4.0  # after Ctrl+5: the page is built and its speaker read
RECORDING_S = 3.0  # after R: the idle null sink's monitor sends its first sound about 2 s after the start
KEY_S = 1.0


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    add_consented_speaker(project)
    speech = speech_file(out / "speech.wav")
    with walked_session(out, screen, project, queue_keys=("Return",)) as (desktop, _process, _figures):
        desktop.room_noise()
        time.sleep(2.0)
        desktop.xdotool("key", "ctrl+5")
        time.sleep(PAGE_S)
        desktop.screenshot(out / "speakers-recorder.png")
        desktop.xdotool("key", "r")
        time.sleep(RECORDING_S)
        read_aloud(desktop, speech)
        time.sleep(0.5)
        desktop.xdotool("key", "r")
        time.sleep(PAGE_S)
        desktop.screenshot(out / "speakers-take.png")
        desktop.xdotool("key", "Tab")
        time.sleep(KEY_S)
        desktop.screenshot(out / "speakers-input.png")
        desktop.xdotool("key", "alt+w")
        time.sleep(KEY_S * 2)
        desktop.screenshot(out / "speakers-withdraw.png")
        desktop.xdotool("key", "Escape")
        time.sleep(KEY_S)
    print(f"screenshots in {out}")


if __name__ == "__main__":
    main()
