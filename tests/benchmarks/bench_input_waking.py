"""Benchmark (run by hand, prints its figures; not part of the test run): how much of a sentence a speaker's take
keeps when the input wakes with exact zeros, on a real desktop — this tree and, with `--baseline DIR`, an older one.

    python tests/benchmarks/bench_input_waking.py [--baseline DIR] [--rounds 3]

Inputs that wake with zeros: WASAPI's and ASIO's first buffers (python-sounddevice#44: 255 and 512 samples), a USB
microphone leaving its power saving (voicebox#910: 1.0 s on every capture), a Bluetooth headset changing profile.
Each round starts the app (Xvfb, xfwm4, a PulseAudio null sink whose monitor is the input, a -70 dBFS noise floor
played into it as a microphone's; tests/real_device.py) on a fresh copy of the demo with one consented speaker,
opens the Speakers page (Ctrl+5, Enter) and records one take per case, on prompts 1 to 4, by keys alone:
- "awake": the input as it is (its first block comes late, 1-2 s after the start, as on every take here);
- "zeros 0.5 s", "zeros 1.0 s": the input muted (PulseAudio then sends exact zeros) from before R until that long
  after the take's first samples reached its spool (`take_through_a_waking_input`);
- "no noise floor": the room's noise ended, so the input sends exact zeros until the sentence (a muted input, a
  noise gate's pause, or this null sink alone look the same): what waiting for a first sound costs there.
The speaker reads (paplay, espeak-ng's 3.4 s sentence, 3.2 s of speech) 0.3 s after "● Recording" shows, and
presses R after a pause. Per tree and case: the seconds from R to ● Recording and from the take's first samples on
disk to it (the page's own wait; negative: shown before the spool's quarter-second write), the zeros the take began with, the
seconds read while the input still sent zeros (lost), the takes that passed their checks, and the seconds of
speech the checks found (medians). `--baseline DIR`: an older tree as DIR/spokenbench (`git worktree add X REV` and
a link DIR/spokenbench → X); the trees alternate round by round."""

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

from real_device import (  # noqa: E402
    add_consented_speaker,
    app_trees,
    demo_copy_in,
    missing_tools,
    missing_window_manager,
    recorded_takes,
    recording_session,
    speech_file,
    take_through_a_waking_input,
    temporary_folder,
    type_keys,
)

CASES = {"awake": None, "zeros 0.5 s": 0.5, "zeros 1.0 s": 1.0, "no noise floor": None}
IDLE_S = 3.0  # between takes, as between a speaker's prompts: the input goes idle again


def session(work: Path, speech: Path, command) -> list[dict]:
    """One round on one tree: each case's figures, the take's checks with them."""
    project = demo_copy_in(work)
    add_consented_speaker(project)
    taken = []

    def steps(desktop, heart):
        for case, zeros_s in CASES.items():
            if case == "no noise floor":
                desktop.quiet_room()
            taken.append(take_through_a_waking_input(desktop, heart, project, speech, zeros_s))
            type_keys(desktop, "Right")
            time.sleep(IDLE_S)

    recording_session(project, work, steps, screen="1280x720x24", command=command)
    takes = recorded_takes(project)
    if len(takes) != len(CASES):
        raise RuntimeError(f"{len(takes)} takes saved of {len(CASES)}")
    return [{"case": case, "figures": figures, "take": take} for case, figures, take in zip(CASES, taken, takes)]


def after_first_samples(figures) -> float | None:
    """From the take's first samples on disk (its spool, written four times a second) to ● Recording: the wait the
    page adds to the input's own (its first block comes 0.5-2 s after R here, whichever the tree)."""
    if figures.shown_after_r is None or figures.first_block_after_r is None:
        return None
    return figures.shown_after_r - figures.first_block_after_r


def median(values) -> str:
    values = [value for value in values if value is not None]
    return f"{statistics.median(values):.2f}" if values else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a folder holding an older tree as spokenbench/")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per tree (default 3)")
    args = parser.parse_args()
    problem = missing_tools() or missing_window_manager()
    if problem:
        print(f"needs a real desktop: {problem}")
        return 2
    work = temporary_folder()
    try:
        speech = speech_file(work / "speech.wav")
        results: dict[tuple[str, str], list[dict]] = {}
        for round_index in range(args.rounds):  # trees interleaved: the machine's noise falls on both
            for name, command in app_trees(args.baseline):
                for row in session(work, speech, command):
                    results.setdefault((name, row["case"]), []).append(row)
                    figures, take = row["figures"], row["take"]
                    print(
                        f"round {round_index + 1} {name} {row['case']}: ● Recording {figures.shown_after_r:.2f} s "
                        f"after R (first block {figures.first_block_after_r:.2f} s), zeros {figures.zeros}, read "
                        f"before heard {figures.read_before_heard:.2f} s, passed {take['passed']}, speech "
                        f"{take['speech_duration']['value']} s, silence: {take['silence']['reason']}"
                    )
        print(f"\n{args.rounds} round(s) per tree; the sentence holds 3.2 s of speech")
        print(
            "tree | case | R to ● Recording | its first samples to ● Recording | zeros at the start | read while deaf"
            " | passed | speech found"
        )
        for (name, case), rows in results.items():
            passed = sum(row["take"]["passed"] for row in rows)
            print(
                f"{name} | {case} | {median(row['figures'].shown_after_r for row in rows)} s | "
                f"{median(after_first_samples(row['figures']) for row in rows)} s | "
                f"{median(row['figures'].zeros for row in rows)} s | "
                f"{median(row['figures'].read_before_heard for row in rows)} s | {passed}/{len(rows)} | "
                f"{median(row['take']['speech_duration']['value'] for row in rows)} s"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
