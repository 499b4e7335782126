"""Screenshots of the level in words (L on the Speakers page's recorder) from a real sound input on a real X server
(xfwm4), keys only:

    python docs/screenshots/level_check_walk.py OUT [--screen 1280x720]

Copies the demo into OUT/project with a consented speaker, starts Xvfb and PulseAudio with a null sink whose
monitor is the default input, a microphone's noise floor playing into it (tests/real_device.py), opens the Speakers
page (Ctrl+5, Enter) and reads into the input with paplay (espeak-ng's sentence). Into OUT: 1-level-check.png (L;
the sentence read: the meter moves, "Level check: speak as you will read… N s"), 2-level-good.png (its verdict on
the line under the buttons), 3-level-too-quiet.png (L; the sentence read 36 dB quieter), 4-level-too-loud.png (R;
the sentence read 12 dB louder, clipped: the meter red, "Too loud: clipping" said), 5-level-too-loud-take.png (R:
the take's clipping check failed). Prints each verdict's line. Screenshots at a screen other than 1400x900 end in
-WxH. Needs Xvfb, PulseAudio, xdotool and xfwm4 (apt-get install xvfb pulseaudio xdotool xfwm4)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import (  # noqa: E402
    louder,
    read_aloud,
    recording_session,
    speaker_walk,
    type_keys,
)


def main() -> None:
    out, screen, suffix, project, speech = speaker_walk(__doc__)
    quiet, loud = louder(speech, -36), louder(speech, 12)

    def steps(desktop, heart) -> None:
        def check(read: Path, shot: str, during: str | None = None) -> None:
            type_keys(desktop, "l")
            if not heart.wait_for(lambda *_: heart.recorder == "listening", 10):
                raise SystemExit(f"L started no level check: {heart.recorder}")
            reader = read_aloud(desktop, read, wait=False)
            if during:
                time.sleep(2.5)
                desktop.screenshot(out / f"{during}{suffix}.png")
            if not heart.wait_for(lambda *_: heart.recorder == "idle", 20):
                raise SystemExit(f"the level check never ended: {heart.recorder}")
            reader.wait(30)
            time.sleep(0.5)
            desktop.screenshot(out / f"{shot}{suffix}.png")

        check(speech, "2-level-good", during="1-level-check")
        check(quiet, "3-level-too-quiet")
        type_keys(desktop, "r")
        if not heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10):
            raise SystemExit(f"● Recording never showed: {heart.recorder}")
        time.sleep(0.3)
        reader = read_aloud(desktop, loud, wait=False)
        time.sleep(1.5)
        desktop.screenshot(out / f"4-level-too-loud{suffix}.png")
        reader.wait(30)
        time.sleep(0.6)
        type_keys(desktop, "r")
        if not heart.wait_for(lambda *_: heart.recorder in ("idle", "unavailable"), 15):
            raise SystemExit(f"the take was not saved: {heart.recorder}")
        time.sleep(1.0)
        desktop.screenshot(out / f"5-level-too-loud-take{suffix}.png")

    figures = recording_session(project, out, steps, screen=screen)
    print("\n".join(figures.lines()))


if __name__ == "__main__":
    main()
