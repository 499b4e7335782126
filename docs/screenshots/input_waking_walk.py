"""Screenshots of a speaker's take on an input that wakes with exact zeros, on a real X server (xfwm4) with a real
sound input, keys only:

    python docs/screenshots/input_waking_walk.py OUT [--screen 1280x720]

Copies the demo into OUT/project (built into OUT/demo the first time) with a consented speaker, starts Xvfb and
PulseAudio with a null sink, whose monitor is the default input, with a microphone's noise floor played into it
(tests/real_device.py), and opens the Speakers page (Ctrl+5, Enter). The input is muted (PulseAudio then sends
exact zeros, as an input waking up does); R; once the take's first samples are on disk and 0.7 s more:
studio-recording-waking-zeros.png (*Starting the microphone…* while the zeros come). Unmuted: ● Recording; the
sentence read 0.3 s later: studio-recording-woken.png. R saves the take: studio-recording-woken-passed.png. Next
prompt; the room's noise ended (the input exactly zero, as a noise filter's pause is); R; 2 s after the first
samples: studio-recording-zero-floor.png (● Recording, and the line saying it sends no sound at all, muted or a
noise filter). Screenshots at a screen other than 1400x900 end in -WxH. Prints the seconds from R to ● Recording
and the takes stored. Needs Xvfb, PulseAudio, xdotool and xfwm4 (apt-get install xvfb pulseaudio xdotool xfwm4)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    RECORDING_SHOWN,
    read_aloud,
    recorded_takes,
    recording_session,
    speaker_walk,
    spool_samples,
    type_keys,
)


def main() -> None:
    out, screen, suffix, project, speech = speaker_walk(__doc__)
    shown_after = []

    def first_samples_on_disk(heart) -> None:
        if not heart.wait_for(lambda *_: spool_samples(project) is not None and len(spool_samples(project)), 10):
            raise SystemExit(f"no sample came: {heart.recorder_states}")

    def stop(heart) -> None:
        type_keys(heart.desktop, "r")
        if not heart.wait_for(lambda *_: heart.recorder == "idle", 15):
            raise SystemExit(f"the take was not saved: {heart.recorder_states}")
        time.sleep(1.0)

    def steps(desktop, heart) -> None:
        desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "1")
        type_keys(desktop, "r")
        pressed = time.monotonic()
        first_samples_on_disk(heart)
        time.sleep(0.7)
        desktop.screenshot(out / f"studio-recording-waking-zeros{suffix}.png")
        desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "0")
        if not heart.wait_for(lambda *_: heart.recorder in RECORDING_SHOWN, 10):
            raise SystemExit(f"● Recording never showed: {heart.recorder_states}")
        shown_after.append(time.monotonic() - pressed)
        time.sleep(0.3)
        reader = read_aloud(desktop, speech, wait=False)
        time.sleep(1.5)
        desktop.screenshot(out / f"studio-recording-woken{suffix}.png")
        reader.wait(30)
        time.sleep(0.6)
        stop(heart)
        desktop.screenshot(out / f"studio-recording-woken-passed{suffix}.png")
        type_keys(desktop, "Right")
        desktop.quiet_room()
        time.sleep(2.0)
        type_keys(desktop, "r")
        pressed = time.monotonic()
        first_samples_on_disk(heart)
        if not heart.wait_for(lambda *_: heart.recorder == "recording-silent", 10):
            raise SystemExit(f"the input was never said silent: {heart.recorder_states}")
        shown_after.append(time.monotonic() - pressed)
        time.sleep(0.5)
        desktop.screenshot(out / f"studio-recording-zero-floor{suffix}.png")
        read_aloud(desktop, speech)
        time.sleep(0.6)
        stop(heart)

    recording_session(project, out, steps, screen=screen)
    print("● Recording shown " + ", ".join(f"{seconds:.2f}" for seconds in shown_after) + " s after R")
    takes = recorded_takes(project)
    print(f"takes stored: {len(takes)} ({', '.join('passed' if take['passed'] else 'failed' for take in takes)})")


if __name__ == "__main__":
    main()
