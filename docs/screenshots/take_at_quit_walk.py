"""Screenshots of quitting the app in the middle of a speaker's take, on a real X server (xfwm4) with a real
sound input, keys only:

    python docs/screenshots/take_at_quit_walk.py OUT [--screen 1280x720]

Copies the demo into OUT/project (built into OUT/demo the first time) with a consented speaker, starts Xvfb and
PulseAudio with a null sink, whose monitor is the default input (tests/real_device.py), opens the Speakers page
(Ctrl+5, Enter), presses R and reads espeak-ng's sentence into the input with paplay; Ctrl+Q:
studio-take-quit-asked.png (*Keep the take being recorded?*, Go on recording the default). Esc goes on
recording; R stops and saves the take; → to the next prompt, R, the sentence again, the sound server stopped
(SIGSTOP, a hung one), R and Ctrl+Q at once: studio-take-quit-saving.png (*Saving the take before you quit…* in
the status bar, 0.6 s later), and the app ends by itself once the take is saved. Then the app is started again,
R, the sentence, and the app killed (SIGKILL, as a crash or a power cut ends it); started once more, its Speakers
page asks: studio-take-cut-short.png (*Keep a take cut short?*); Enter keeps it: studio-take-cut-short-kept.png.
Screenshots at a screen other than 1400x900 end in -WxH. Prints the takes stored, the seconds from the last
Ctrl+Q to the app's end and the exit codes. Needs Xvfb, PulseAudio, xdotool and xfwm4 (apt-get install xvfb pulseaudio xdotool xfwm4)."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    read_aloud,
    recorded_takes,
    recording_session,
    speaker_walk,
    type_keys,
)


def main() -> None:
    out, screen, suffix, project, speech = speaker_walk(__doc__)
    ended = []

    def record_and_read(desktop, heart) -> None:
        type_keys(desktop, "r")
        if not heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10):
            raise SystemExit(f"● Recording never showed: {heart.recorder_states}")
        read_aloud(desktop, speech)
        time.sleep(0.5)

    def steps(desktop, heart) -> None:
        record_and_read(desktop, heart)
        desktop.xdotool("key", "ctrl+q")
        time.sleep(1.0)
        desktop.screenshot(out / f"studio-take-quit-asked{suffix}.png")
        desktop.xdotool("key", "Escape")  # Go on recording
        time.sleep(0.5)
        type_keys(desktop, "r")
        if not heart.wait_for(lambda *_: heart.recorder == "idle", 15):
            raise SystemExit(f"the take was not saved: {heart.recorder_states}")
        time.sleep(1.0)
        type_keys(desktop, "Right")
        record_and_read(desktop, heart)
        desktop.hang_pulse()
        try:
            desktop.xdotool("key", "r")
            time.sleep(0.1)
            pressed = time.monotonic()
            desktop.xdotool("key", "ctrl+q")
            time.sleep(0.6)
            desktop.screenshot(out / f"studio-take-quit-saving{suffix}.png")
            while heart.process.poll() is None and time.monotonic() - pressed < 20:
                time.sleep(0.05)
            ended.append(time.monotonic() - pressed if heart.process.poll() is not None else None)
        finally:
            desktop.resume_pulse()

    figures = recording_session(project, out, steps, screen=screen)

    def killed(desktop, heart) -> None:
        type_keys(desktop, "Right", "Right")  # a prompt of its own
        record_and_read(desktop, heart)
        heart.process.send_signal(signal.SIGKILL)
        heart.process.wait(10)

    def kept(desktop, heart) -> None:
        desktop.xdotool("search", "--sync", "--name", "Keep a take cut short", timeout=30)
        time.sleep(0.5)
        desktop.screenshot(out / f"studio-take-cut-short{suffix}.png")
        type_keys(desktop, "Return")
        time.sleep(2.0)
        desktop.screenshot(out / f"studio-take-cut-short-kept{suffix}.png")

    killed_figures = recording_session(project, out / "killed", killed, screen=screen)
    kept_figures = recording_session(project, out / "kept", kept, screen=screen, enter=False)
    takes = recorded_takes(project)
    print(f"takes stored: {len(takes)} ({', '.join('passed' if take['passed'] else 'failed' for take in takes)})")
    print(f"Ctrl+Q with the stop held: the app ended {ended[0]:.2f} s later" if ended and ended[0] else "never ended")
    print(f"exit codes: {figures.exit_code}, killed {killed_figures.exit_code}, then {kept_figures.exit_code}")


if __name__ == "__main__":
    main()
