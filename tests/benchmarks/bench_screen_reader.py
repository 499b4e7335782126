"""Benchmark (run by hand, prints its figures; not part of the test run): what a screen reader says of each key
of a rating session and a rewrite review (`--walk rating`), of Evaluate's form and the Results page's figure
(`--walk pages`), of the Items page's tables and text and the Evaluate page's plan (`--walk items`), of a
take recorded on the Speakers page and the controls around it (`--walk speakers`: a consented speaker added,
Orca into headphones of its own, espeak-ng's speech played into the microphone as the speaker reading; the takes
saved and passed are printed), or of the level in words there (`--walk level`: L's check with the sentence read,
then a take read 12 dB louder, clipped), on this tree and, with `--baseline DIR`, an older one. Orca (GNOME's screen
reader) runs before the app on a real X server (Xvfb) with xfwm4 and a PulseAudio null sink; the keys go
through xdotool; each key's utterances are read from Orca's debug output (tests/real_device.py `ScreenReader`).

    python tests/benchmarks/bench_screen_reader.py [--walk rating|pages|items|speakers|level] [--baseline DIR]
        [--screen 1400x900] [--wait 10]

A key counts as said when one of its utterances (within `--wait` seconds) holds what the key did: the clip shown
with its text, the rating saved, the part moved to; the control Tab reached, by its label; the point an arrow
went to; the seconds until then are printed, with their median. `--baseline DIR`: an older tree as DIR/spokenbench
(`git worktree add X REV` and a link DIR/spokenbench → X), given to its app as PYTHONPATH; this tree runs first.
Installs Orca, the accessibility bus, xvfb, pulseaudio, xdotool and xfwm4 with apt-get when missing (root only)."""

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

from real_device import (
    add_consented_speaker,
    app_trees,
    demo_in,
    louder,
    missing_screen_reader,
    missing_tools,
    missing_window_manager,
    read_aloud,
    recorded_takes,
    screen_reader_session,
    speech_file,
    temporary_folder,
)

OPENING_S = 45.0  # Orca falls seconds behind the app's start on a busy 2-core machine
SETTLE_S = 0.5
# (key, what an utterance after it must hold for the key to count as said); the first row is the session opening
RATING = [
    ("(Enter opened the session)", "Clip 1 of 47, not rated:"),
    ("1", "Correct saved. Clip 2 of 47"),
    ("2", "Acceptable saved. Clip 3 of 47"),
    ("Left", "Clip 2 of 47, rated Acceptable"),
    ("Right", "Clip 3 of 47, not rated"),
    ("ctrl+z", "Undid rating 2 (acceptable)"),
    ("bracketright", "Speed 1.1 times"),
    ("t", "simulated-asr"),
    ("question", "Keys. 1: Correct"),
    ("Escape", "Keys help closed"),
    ("3", "Incorrect saved."),
    ("ctrl+2", "Part 11 of 20, awaiting review."),
    ("j", "Part 12 of 20, awaiting review."),
    ("a", "accepted. Part 13 of 20"),
    ("k", "Part 12 of 20, accepted."),
    ("x", "rejected. Part 13 of 20"),
]
EVALUATE_FIELDS = [
    *("Mode: combo box", "Prompt: combo box", "Languages: text", "Accents: text", "Voices: text"),
    *("Speaker genders: text", "Option orders: text", "Speeds: text", "Volumes: text", "Noise (SNR dB): text"),
    *("Permutations: combo box", "Identifiers: combo box", "First N items: text", "Seed: text", "Budget: text"),
    *("Concurrency:", "Run name: text", "Online", "Prepare push button", "Plan"),
]
RESULTS_STOPS = ["All runs", "Panels", "Published (paper)", "PNG", "SVG", "PDF", "Figure: Accuracy by level, 42"]
PAGES = [
    ("(Enter opened the session)", "Clip 1 of 47, not rated:"),
    ("ctrl+6", "Model: combo box"),
    *(("Tab", said) for said in EVALUATE_FIELDS),
    ("ctrl+7", "Runs"),
    *(("Tab", said) for said in RESULTS_STOPS),
    ("Right", "Point 1 of 42. simulated:accent-sensitive · language · en."),
    ("Right", "Point 2 of 42. simulated:order-sensitive · language · en."),
    ("End", "Point 42 of 42. simulated:steady · order · reversed."),
    ("Return", "336 responses to 24 question(s)"),
    ("Tab", "Play push button"),
]
READING = "(the speaker reads)"  # no key: the speech is played into the microphone
READING_LOUD = "(the speaker reads too loud)"  # the same, 12 dB louder and clipped at full scale
SPEAKERS = [
    ("(Enter opened the session)", "Clip 1 of 47, not rated:"),
    ("ctrl+5", "Ana, en, american, consent given. Prompt 1 of 36"),
    ("r", "Recording."),
    (READING, ""),
    ("r", "Take 1 saved"),
    ("Right", "Prompt 2 of 36"),
    ("Left", "Prompt 1 of 36"),
    ("Left", "This is the first prompt."),
    ("Left", "This is the first prompt."),
    ("Tab", "Input combo box"),
    ("Tab", "Rescan devices push button"),
    ("Tab", "Load reading list"),
    ("Tab", "Use project questions push button"),
    ("Tab", "Create cloned voice push button"),
    ("alt+w", "Withdraw the consent of Ana"),
    ("Escape", "Create cloned voice push button"),
    ("alt+d", "found. Recording from"),  # the keys go to the recorder, where R records
    ("alt+a", "Name text"),
    ("Escape", "Ana, en, american, consent given. Prompt 1 of 36"),
    ("ctrl+5", "Ana, en, american, consent given. Prompt 1 of 36"),  # on the recorder: where it is, again
]
ITEMS = [
    ("(Enter opened the session)", "Clip 1 of 47, not rated:"),
    ("ctrl+1", "demo/001."),  # the table with its first item
    ("Down", "demo/002."),
    ("Tab", "demo/002 · en · mcq"),  # the item's question and options, its first line
    ("Down", "In the United States, which holiday"),
    ("Down", "Thursday of November?"),  # the question's second line, as wrapped on the screen
    ("Down", "A. Independence Day"),
    ("Tab", "Rewrites (10) page tab"),
    ("Tab", "option_A."),  # the rewrites with their first row
    ("Down", "llm:demo-rewriter."),
    ("ctrl+6", "Model: combo box"),
    ("shift+Tab", "Jobs check box"),
    ("shift+Tab", "Pages."),
    ("shift+Tab", "Import results"),
    ("shift+Tab", "simulated:gender-balanced."),  # the runs with the last one
    ("shift+Tab", "Queue"),
    ("shift+Tab", "Plan read only text"),
    ("shift+Tab", "Prepare push button"),
    ("space", "plan: 408 request(s) over 84 item(s)"),  # the keys go to the plan
    ("Down", "accent: american 72"),
    ("Up", "plan: 408 request(s) over 84 item(s)"),
]
LEVEL = [
    ("(Enter opened the session)", "Clip 1 of 47, not rated:"),
    ("ctrl+5", "Ana, en, american, consent given. Prompt 1 of 36"),
    ("l", "Level check: speak as you will read."),
    (READING, ""),
    ("(the check's end)", "Level good: your voice peaked at"),
    ("r", "Recording."),
    (READING_LOUD, ""),
    ("(the take reached full scale)", "Too loud: clipping."),
    ("l", "Level too loud in the last 3 seconds"),
    ("r", "Take 1 saved"),
]
WALKS = {"rating": RATING, "pages": PAGES, "speakers": SPEAKERS, "items": ITEMS, "level": LEVEL}
KEY_NAMES = {
    "tab",
    "left control",
    "left shift",
    "left alt",
    "return",
    "right",
    "left",
    "end",
    "r",
    "l",
    "escape",
    "space",
    "down",
    "up",
}  # what Orca says of a key itself
PAGE_OPENING_S = 4.0  # after Ctrl+7: the Results page computes its panels (about a second here) before Tab goes on


def heard(command: list[str] | None, demo: Path, work: Path, screen: str, wait: float, steps) -> list[tuple]:
    """Each step's key, the seconds until Orca said what it did (None: not within `wait`), and every utterance
    after it."""
    project = work / "project"
    shutil.copytree(demo, project)
    recording = any(key in (READING, READING_LOUD) for key, _said in steps)
    if recording:
        add_consented_speaker(project)
    rows = []
    session = screen_reader_session(project, work, f"{screen}x24", command, headphones=recording)
    with session as (desktop, reader, _figures):
        if recording:
            desktop.room_noise()  # a microphone's noise floor: the null sink's monitor alone sends exact zeros
        since = 0
        for key, expected in steps:
            pressed = time.monotonic()
            if key in (READING, READING_LOUD):
                time.sleep(0.3)  # a moment after "Recording", as a person starts
                spoken = speech_file(work / "speech.wav")
                read_aloud(desktop, louder(spoken, 12.0) if key == READING_LOUD else spoken)
                time.sleep(0.8)  # a moment after the last word, as a person stops: the sink still holds its end
                continue
            if key.startswith("("):
                wait_s = OPENING_S
            else:
                since, wait_s = len(reader.said()), wait
                desktop.xdotool("key", key)
            line = reader.wait_for(expected, since, wait_s)
            took = None if line is None else time.monotonic() - pressed
            time.sleep(PAGE_OPENING_S if key == "ctrl+7" else SETTLE_S)  # what follows the line is listed with it
            rows.append((key, took, reader.said()[since:]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--walk", choices=sorted(WALKS), default="rating")
    parser.add_argument("--baseline", type=Path, help="a folder holding an older tree as spokenbench/")
    parser.add_argument("--screen", default="1400x900")
    parser.add_argument("--wait", type=float, default=10.0, help="seconds a key's line is waited for")
    args = parser.parse_args()
    problem = missing_tools() or missing_window_manager() or missing_screen_reader()
    if problem:
        print(f"cannot run: {problem}")
        return 2
    work = temporary_folder()
    trees = app_trees(args.baseline)
    try:
        demo = demo_in(work)
        for name, command in trees:
            folder = work / name.split()[0]
            rows = heard(command, demo, folder, args.screen, args.wait, WALKS[args.walk])
            takes = recorded_takes(folder / "project") if args.walk in ("speakers", "level") else []
            delays = sorted(took for _key, took, _after in rows[1:] if took is not None)
            middle = f"; median {statistics.median(delays):.2f} s from a key to its line" if delays else ""
            silent = sum(not [line for line in after if line.strip() not in KEY_NAMES] for _key, _took, after in rows)
            middle += f"; {silent} key(s) after which Orca said only the key's name, or nothing"
            if args.walk in ("speakers", "level"):
                middle += f"; {len(takes)} take(s) saved, {sum(take['passed'] for take in takes)} passed every check"
            print(
                f"== {name}: {sum(took is not None for _key, took, _ in rows)} of {len(rows)} keys said what they did{middle}"
            )
            for key, took, after in rows:
                lines = " | ".join(line[:110] for line in after) or "(nothing)"
                print(f"  {'NOT  ' if took is None else f'{took:4.2f}s'} {key:>26}: {lines}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
