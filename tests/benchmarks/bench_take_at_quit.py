"""Benchmark (run by hand, prints its figures; not part of the test run): what becomes of a speaker's take when
the app is quit in the middle of it, on a real desktop — on this tree and, with `--baseline DIR`, an older one.

    python tests/benchmarks/bench_take_at_quit.py [--baseline DIR] [--rounds 5]

Each round starts the app (Xvfb, xfwm4, a PulseAudio null sink whose monitor is the input; tests/real_device.py)
on a fresh copy of the demo with one consented speaker, opens the Speakers page (Ctrl+5, Enter), presses R, plays
a 3.4 s sentence into the input, and then, by keys alone:
- "in a take": Ctrl+Q while recording; where the app asks, Alt+K (Keep the take and quit);
- "stop held": PulseAudio stopped (SIGSTOP, a hung server), R, then Ctrl+Q at once;
- "SIGTERM": that signal while recording, as a logout or a shutdown sends it;
- "SIGKILL": that signal while recording, as a crash or a power cut ends it; the take counts as kept when it is
  in the project's spool, whole enough to be offered at the next start (core/recording/spool.py).
Counted per tree and case: takes kept (in the project's database after the app ended), the app's exit codes
(a negative one is a signal: -11 SIGSEGV), and the seconds from Ctrl+Q to the process's end (median; where the
app asks, they include the ANSWER_AFTER_S a person takes to answer). Needs Xvfb,
PulseAudio, xdotool and xfwm4. `--baseline DIR`: an older tree as DIR/spokenbench (`git worktree add X REV` and
a link DIR/spokenbench → X), put first on its PYTHONPATH; this tree runs first."""

import argparse
import shutil
import signal
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
    read_aloud,
    recorded_takes,
    recording_session,
    speech_file,
    temporary_folder,
    type_keys,
)

from spokenbench.core.recording.spool import left_takes  # noqa: E402

CASES = ("in a take", "stop held", "SIGTERM", "SIGKILL")
QUIT_LIMIT_S = 20.0
SPOKEN_S = 3.0  # a take left in the spool counts when it holds the sentence read (3.4 s)
ANSWER_AFTER_S = 1.0  # Alt+K this long after Ctrl+Q, if the app is still there (it asks)


def quit_round(work: Path, speech: Path, case: str, command) -> tuple[int, int | None, float | None]:
    """One round: (takes kept, exit code, seconds from Ctrl+Q to the end; None when it did not end)."""
    project = demo_copy_in(work)
    add_consented_speaker(project)
    ended: list[float | None] = [None]

    def steps(desktop, heart):
        type_keys(desktop, "r")
        if not heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10):
            raise RuntimeError(f"● Recording never showed: {heart.recorder_states}")
        read_aloud(desktop, speech)
        time.sleep(0.5)
        if case == "stop held":
            desktop.hang_pulse()
            desktop.xdotool("key", "r")
            time.sleep(0.2)
        pressed = time.monotonic()
        if case in ("SIGTERM", "SIGKILL"):
            heart.process.send_signal(signal.SIGTERM if case == "SIGTERM" else signal.SIGKILL)
        else:
            desktop.xdotool("key", "ctrl+q")
        answered = case != "in a take"
        try:
            while heart.process.poll() is None and time.monotonic() - pressed < QUIT_LIMIT_S:
                if not answered and time.monotonic() - pressed >= ANSWER_AFTER_S:  # a person reads the question
                    desktop.xdotool("key", "alt+k")
                    answered = True
                time.sleep(0.02)
            if heart.process.poll() is not None:
                ended[0] = time.monotonic() - pressed
        finally:
            if case == "stop held":
                desktop.resume_pulse()

    figures = recording_session(project, work, steps, screen="1280x720x24", command=command)
    offered = [left for left in left_takes(project) if left.problem is None and left.seconds >= SPOKEN_S]
    return len(recorded_takes(project)) + len(offered), figures.exit_code, ended[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a folder holding an older tree as spokenbench/")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per tree and case (default 5)")
    args = parser.parse_args()
    problem = missing_tools() or missing_window_manager()
    if problem:
        print(f"needs a real desktop: {problem}")
        return 2
    work = temporary_folder()
    try:
        speech = speech_file(work / "speech.wav")
        results = {}
        for round_index in range(args.rounds):  # trees interleaved: the machine's noise falls on both
            for name, command in app_trees(args.baseline):
                for case in CASES:
                    kept, code, seconds = quit_round(work, speech, case, command)
                    results.setdefault((name, case), []).append((kept, code, seconds))
                    print(f"round {round_index + 1} {name} {case}: takes {kept}, exit {code}, ended {seconds}")
        print(f"\n{args.rounds} round(s) per tree and case; Ctrl+Q in a take (Alt+K where asked)")
        for (name, case), rounds in results.items():
            kept = sum(1 for takes, _code, _seconds in rounds if takes)
            codes = [code for _takes, code, _seconds in rounds]
            ended = [seconds for _takes, _code, seconds in rounds if seconds is not None]
            median = f"{statistics.median(ended):.2f} s" if ended else "never"
            crashed = sum(1 for code in codes if code is None or code < 0)
            print(
                f"{name:>12} | {case:9} | takes kept {kept}/{len(rounds)} | exit codes {codes} "
                f"({crashed} crashed or killed) | Ctrl+Q to the end: median {median} (of {len(ended)})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
