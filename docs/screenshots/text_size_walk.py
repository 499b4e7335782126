"""Screenshots of the app with its text made larger from the keys (View → Larger text, Ctrl+=), on a real X server
with a PulseAudio null sink, driven by keys alone (tests/real_device.py):

    python docs/screenshots/text_size_walk.py OUT [--screen 1280x720]

Builds the demo into OUT/demo, copies it to OUT/project and opens the Rating page on the demo's queue demo-qc
(Ctrl+3, ↓, Enter). Presses Ctrl+= three times (110, 125, 150 %) and rates a clip with 1; takes
OUT/text-150-keys.png (the key help, ?) and OUT/text-150-tour.png (the guided tour, F1), each closed with Esc, then
OUT/text-150-<page>.png of every page (Ctrl+1 … Ctrl+7); on the Rating page S (the spectrogram):
OUT/text-150-spectrogram.png; Ctrl+= twice more (175, 200 %): OUT/text-200-<page>.png of the Rating, Speakers,
Evaluate and Results pages; back on the Rating page Ctrl+0 (normal size): OUT/text-100-rating.png.
Prints the text size the app kept in its settings file after Ctrl+Q. Needs Xvfb,
PulseAudio and xdotool (apt-get install xvfb pulseaudio xdotool)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from real_device import demo_copy_in, stored_ratings, walk_arguments, walked_session  # noqa: E402

PAGES = ("items", "rewrites", "rating", "qc", "speakers", "evaluate", "results")


def main() -> None:
    out, screen = walk_arguments(__doc__)
    project = demo_copy_in(out)
    shots = []
    with walked_session(out, screen, project) as (desktop, _process, _figures):
        for _ in range(3):
            desktop.xdotool("key", "ctrl+equal")
            time.sleep(0.6)
        desktop.xdotool("key", "1")
        time.sleep(1.0)
        for key, name in (("question", "keys"), ("F1", "tour")):  # the key help, then the guided tour
            desktop.xdotool("key", key)
            time.sleep(2.0)
            shots.append(out / f"text-150-{name}.png")
            desktop.screenshot(shots[-1])
            desktop.xdotool("key", "Escape")
            time.sleep(1.0)
        for number, page in enumerate(PAGES, start=1):
            desktop.xdotool("key", f"ctrl+{number}")
            time.sleep(6.0 if page == "results" else 2.0)  # the Results page computes its panels first
            shots.append(out / f"text-150-{page}.png")
            desktop.screenshot(shots[-1])
        desktop.xdotool("key", "ctrl+3")
        time.sleep(1.0)
        desktop.xdotool("key", "s")  # the spectrogram, its labels at the text's size
        time.sleep(3.0)
        shots.append(out / "text-150-spectrogram.png")
        desktop.screenshot(shots[-1])
        for _ in range(2):
            desktop.xdotool("key", "ctrl+equal")
            time.sleep(0.8)
        for number, page in ((3, "rating"), (5, "speakers"), (6, "evaluate"), (7, "results")):
            desktop.xdotool("key", f"ctrl+{number}")
            time.sleep(3.0)
            shots.append(out / f"text-200-{page}.png")
            desktop.screenshot(shots[-1])
        desktop.xdotool("key", "ctrl+3")
        time.sleep(1.0)
        desktop.xdotool("key", "s")  # the waveform again
        desktop.xdotool("key", "ctrl+0")
        time.sleep(1.0)
        shots.append(out / "text-100-rating.png")
        desktop.screenshot(shots[-1])
    kept = [line for path in out.rglob("*.conf") for line in path.read_text().splitlines() if "text_size" in line]
    print(f"ratings stored: {stored_ratings(project)}; text size kept: {kept or 'none'}")
    for shot in shots:
        print(shot)


if __name__ == "__main__":
    main()
