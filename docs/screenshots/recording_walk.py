"""Screenshots of a speaker's takes recorded from a real sound input on a real X server (xfwm4), keys only:

    python docs/screenshots/recording_walk.py OUT [--screen 1280x720]

Copies the demo into OUT/project (built into OUT/demo the first time) with a consented speaker, starts Xvfb and
PulseAudio with a null sink, whose monitor is the default input (tests/real_device.py), opens the Speakers page
(Ctrl+5, Enter: R right after, while the idle input has just been looked for, as a speaker starting at once)
and reads into the input with paplay (espeak-ng's sentence). Into OUT: 1-recording-waiting.png
(R pressed; the idle input has not sent its first sound: "Starting the microphone…"), 2-recording.png (● Recording
while the sentence is read, 0.3 s after it showed), 3-recording-passed.png (R: the take's checks, all passed),
4-recording-muted.png (next prompt, a room's noise playing; R; the input muted with pactl: the line under the
buttons says so), 5-recording-held-stop.png (next prompt; R; the sentence read, the sound server stopped with
SIGSTOP as a hung one, R: 2 s later the take is saved without it, and the line and the status bar say the input
did not answer its stop; the server goes on), 6-recording-stopped.png (next prompt; R; the sentence read and the sound
server killed mid-take: "● Input stopped at …" and the line saying what happened), 7-recording-stopped-take.png
(R: the take's
failed input check, the input looked for again: none, with the server gone). Prints the seconds from each R to ● Recording. Screenshots at a screen other than 1400x900
end in -WxH. Needs Xvfb, PulseAudio, xdotool and xfwm4 (apt-get install xvfb pulseaudio xdotool xfwm4)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    read_aloud,
    recording_session,
    speaker_walk,
    type_keys,
)

from spokenbench.core.audio.io import encode_wav  # noqa: E402


def main() -> None:
    out, screen, suffix, project, speech = speaker_walk(__doc__)
    room = out / "room.wav"
    room.write_bytes(encode_wav(np.random.default_rng(0).normal(0, 0.003, 60 * 22_050).astype(np.float32), 22_050))
    shown_after = []

    def steps(desktop, heart) -> None:
        def record() -> None:
            type_keys(desktop, "r")
            pressed = time.monotonic()
            if not heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10):
                raise SystemExit(f"● Recording never showed: {heart.recorder}")
            shown_after.append(time.monotonic() - pressed)

        def stop() -> None:
            type_keys(desktop, "r")
            if not heart.wait_for(lambda *_: heart.recorder in ("idle", "unavailable"), 15):
                raise SystemExit(f"the take was not saved: {heart.recorder}")
            time.sleep(1.0)

        desktop.xdotool("key", "r")
        time.sleep(0.3)
        desktop.screenshot(out / f"1-recording-waiting{suffix}.png")
        pressed = time.monotonic()
        heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10)
        shown_after.append(time.monotonic() - pressed + 0.3)
        time.sleep(0.3)
        reader = read_aloud(desktop, speech, wait=False)
        time.sleep(1.5)
        desktop.screenshot(out / f"2-recording{suffix}.png")
        reader.wait(30)
        time.sleep(0.6)
        stop()
        desktop.screenshot(out / f"3-recording-passed{suffix}.png")
        type_keys(desktop, "Right")
        read_aloud(desktop, room, wait=False)
        time.sleep(1.0)
        record()
        time.sleep(1.0)
        desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "1")
        heart.wait_for(lambda *_: heart.recorder == "recording-silent", 5)
        time.sleep(0.5)
        desktop.screenshot(out / f"4-recording-muted{suffix}.png")
        desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "0")
        stop()
        type_keys(desktop, "Right")
        record()
        time.sleep(0.3)
        read_aloud(desktop, speech)
        time.sleep(0.4)
        desktop.hang_pulse()  # SIGSTOP: the stream's stop waits on the server
        desktop.xdotool("key", "r")
        heart.wait_for(lambda *_: heart.recorder == "idle", 10)  # saved without the server
        time.sleep(0.5)
        desktop.screenshot(out / f"5-recording-held-stop{suffix}.png")
        desktop.resume_pulse()
        time.sleep(1.5)  # the held stream closes: the line and the status bar no longer say it
        type_keys(desktop, "Right")
        record()
        read_aloud(desktop, speech, wait=False)
        time.sleep(1.5)
        desktop.stop_pulse()
        heart.wait_for(lambda *_: heart.recorder == "recording-stalled", 5)
        time.sleep(1.5)
        desktop.screenshot(out / f"6-recording-stopped{suffix}.png")
        stop()
        desktop.screenshot(out / f"7-recording-stopped-take{suffix}.png")

    figures = recording_session(project, out, steps, screen=screen)
    print("● Recording shown " + ", ".join(f"{seconds:.2f}" for seconds in shown_after) + " s after R")
    print("\n".join(figures.lines()))


if __name__ == "__main__":
    main()
