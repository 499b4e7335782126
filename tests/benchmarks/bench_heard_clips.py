"""Benchmark (run by hand, prints its figures; not part of the test run): how much of each clip a listener hears.
The app's clip player (`core/audio/playback.py`, the one the Rating, Items and Speakers pages use) plays clips
into a real PulseAudio server's null sink, through PortAudio and ALSA's pulse plugin as on a desktop; the sink's
monitor is recorded all along (parecord), and each clip is found in the recording.

    python tests/benchmarks/bench_heard_clips.py [--rounds 3] [--baseline DIR]

Each clip is a tone of its own pitch whose loudness rises steadily from 0.2 to 0.8, so the loudness of the first
and last 10 ms heard tells how much of its start and end was lost. Clips of 0.8 s (an option), 2 s and 5 s (a
question) are played one at a time; the next is played once the player says the last is over (as an annotator
waits for the playhead), then 0.5 s later. The null sink holds 2 s of audio, so a stream starts sounding
~1.5 s after it is started, as a high-latency output does (a Bluetooth headset, a network or virtual machine's
sound): what the player aborts before it is heard is lost. `--baseline DIR` plays the same clips with an older
tree's player (`git worktree add X REV`, a link `DIR/spokenbench` → X), rounds interleaved. Installs xvfb,
pulseaudio and xdotool with apt-get when missing (root only)."""

import argparse
import io
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

from real_device import RealDesktop, missing_tools, temporary_folder

RECORD_RATE = 44100
WINDOW_S = 0.01
CLIP_RATE = 24000  # the rate of the Gemini TTS clips
LOUDEST, QUIETEST = 0.8, 0.2
HEARD = 0.1  # a window louder than this (in tone amplitude) is the clip
PLAN = [(0.8, 500.0), (2.0, 900.0), (5.0, 1300.0), (0.8, 1700.0), (2.0, 2100.0), (0.8, 2500.0), (5.0, 2900.0)]

PLAYER = r"""
import json, sys, time
from spokenbench.core.audio.playback import ClipPlayer
clips = json.loads(sys.argv[1])
player = ClipPlayer()
for path in clips:
    request = player.play(open(path, "rb").read(), path)
    deadline = time.monotonic() + 30
    while not (player.state.request == request and not player.state.playing) and time.monotonic() < deadline:
        time.sleep(0.01)
    if player.state.error:
        print("error:", player.state.error, flush=True)
    time.sleep(0.5)
player.close()
player.join(2)
"""


def ramp_clip(seconds: float, frequency: float) -> bytes:
    """A tone getting louder at a steady pace: its loudness says where in the clip a moment is."""
    t = np.arange(int(seconds * CLIP_RATE)) / CLIP_RATE
    loudness = QUIETEST + (LOUDEST - QUIETEST) * t / seconds
    buffer = io.BytesIO()
    sf.write(buffer, (loudness * np.sin(2 * np.pi * frequency * t)).astype(np.float32), CLIP_RATE, format="WAV")
    return buffer.getvalue()


def tone_loudness(recording: np.ndarray, frequency: float) -> np.ndarray:
    """The amplitude of one pitch every 10 ms of the recording (a 20 ms Hann window: the other clips' pitches,
    400 Hz away, do not leak in)."""
    step = int(WINDOW_S * RECORD_RATE)
    size = 2 * step
    count = (len(recording) - size) // step
    starts = np.arange(count) * step
    windows = recording[starts[:, None] + np.arange(size)]
    hann = np.hanning(size)
    t = (starts[:, None] + np.arange(size)) / RECORD_RATE
    cosine = (windows * hann * np.cos(2 * np.pi * frequency * t)).sum(axis=1)
    sine = (windows * hann * np.sin(2 * np.pi * frequency * t)).sum(axis=1)
    return 2 * np.hypot(cosine, sine) / hann.sum()


def heard(recording: np.ndarray, seconds: float, frequency: float) -> dict:
    """How much of one clip is in the recording: seconds heard, and what was lost at its start and its end."""
    loudness = tone_loudness(recording, frequency)
    loud = loudness > HEARD
    runs, start = [], None  # (first, last) window of each stretch where the clip sounds
    for index, sounding in enumerate([*loud, False]):
        if sounding and start is None:
            start = index
        elif not sounding and start is not None:
            runs.append((start, index - 1))
            start = None
    runs = [(first, last) for first, last in runs if last - first >= 3]
    if not runs:
        return {"heard_s": 0.0, "lost_start_ms": round(seconds * 1000), "lost_end_ms": round(seconds * 1000)}

    def moment(amplitude: float) -> float:
        return (amplitude - QUIETEST) / (LOUDEST - QUIETEST) * seconds

    first, last = max(runs, key=lambda run: run[1] - run[0])  # a window centred 20 ms inside either end
    lost_start = moment(loudness[first + 2]) - 2 * WINDOW_S
    lost_end = seconds - moment(loudness[last - 2]) - 2 * WINDOW_S
    return {
        "heard_s": round((last - first) * WINDOW_S, 2),
        "lost_start_ms": round(min(seconds, max(0.0, lost_start)) * 1000),
        "lost_end_ms": round(min(seconds, max(0.0, lost_end)) * 1000),
    }


def one_round(desktop: RealDesktop, folder: Path, tree: Path | None) -> tuple[list[dict], list[str]]:
    clips = []
    for index, (seconds, frequency) in enumerate(PLAN):
        path = folder / f"clip{index}.wav"
        path.write_bytes(ramp_clip(seconds, frequency))
        clips.append(str(path))
    recording_path = folder / "monitor.wav"
    env = {**os.environ, "PULSE_SERVER": desktop.pulse_server}
    recorder = subprocess.Popen(
        ["parecord", "--device=spokenbench_null.monitor", "--file-format=wav", f"--rate={RECORD_RATE}",
         "--channels=1", "--format=float32le", str(recording_path)],
        env=env,
    )  # fmt: skip
    time.sleep(2.0)  # the monitor's first second or so is never delivered: start it well before
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    player = subprocess.run(
        [sys.executable, "-c", PLAYER, json.dumps(clips)], env=env, capture_output=True, text=True, timeout=120
    )
    time.sleep(2.5)  # what the sink still holds
    recorder.send_signal(signal.SIGINT)
    recorder.wait(10)
    recording, rate = sf.read(recording_path, dtype="float32")
    assert rate == RECORD_RATE
    results = [heard(recording, seconds, frequency) for seconds, frequency in PLAN]
    errors = [line for line in (player.stdout + player.stderr).splitlines() if line.strip()]
    return results, errors


def summary(name: str, rounds: list[list[dict]]) -> list[str]:
    lines = []
    for (seconds, _frequency), index in zip(PLAN, range(len(PLAN)), strict=True):
        runs = [round_[index] for round_ in rounds]
        lines.append(
            f"  {name:>9} clip {index + 1} ({seconds} s): heard "
            + ", ".join(f"{run['heard_s']:.2f}" for run in runs)
            + " s; lost at the end (ms) "
            + ", ".join(str(run["lost_end_ms"]) for run in runs)
            + "; at the start "
            + ", ".join(str(run["lost_start_ms"]) for run in runs)
        )
    every = [run for round_ in rounds for run in round_]
    ends, starts = [run["lost_end_ms"] for run in every], [run["lost_start_ms"] for run in every]
    lines.append(
        f"  {name:>9}, {len(every)} clips: lost at the end median {statistics.median(ends):.0f} ms, worst "
        f"{max(ends)} ms; at the start median {statistics.median(starts):.0f} ms, worst {max(starts)} ms (the "
        f"measure's own error: ~10 ms); not heard at all: {sum(1 for run in every if run['heard_s'] == 0)}"
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a folder holding an older tree as spokenbench/")
    arguments = parser.parse_args()
    problem = missing_tools()
    if problem:
        sys.exit(f"cannot run: {problem}")
    trees = {"this tree": None} | ({"baseline": arguments.baseline.resolve()} if arguments.baseline else {})
    found: dict[str, list[list[dict]]] = {name: [] for name in trees}
    folder = temporary_folder()
    with RealDesktop(folder) as desktop:
        for round_index in range(arguments.rounds):
            for name, tree in trees.items():
                results, errors = one_round(desktop, folder, tree)
                found[name].append(results)
                print(f"round {round_index + 1}, {name}: " + json.dumps(results), flush=True)
                for line in errors:
                    print(f"  {name} said: {line}", flush=True)
    shutil.rmtree(folder, ignore_errors=True)
    print(f"\n{len(PLAN)} clips a round, {arguments.rounds} rounds (PulseAudio null sink, 2 s of latency):")
    for name, rounds in found.items():
        print("\n".join(summary(name, rounds)))


if __name__ == "__main__":
    main()
