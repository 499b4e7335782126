"""Benchmark (run by hand, prints its figures; not part of the test run): how much of a sentence a take keeps when
the input wakes late, read as the Speakers page said to read before and as it says now, in alternating rounds on
one real sound server (PulseAudio with a null sink, whose monitor is the default input; tests/real_device.py):

    python tests/benchmarks/bench_recording_start.py [--rounds 6] [--idle 4]

Each round waits `--idle` seconds with no stream open (PulseAudio's null sink then renders in long blocks, so its
monitor sends its first sound late, as a suspended microphone or a Bluetooth headset changing profile does),
starts a Recorder on the default input through PortAudio, and plays a sentence (espeak-ng: a 3.4 s file, 3.2 s of speech) into the sink:
"before", 0.5 s after the stream started (when "● Recording" showed); "now", 0.3 s after ● Recording shows now
(`Recorder.take_begun`: the input's first sound, or 1.5 s of exact zeros — this idle sink's monitor sends only
zeros until the sentence, as a muted input or a noise filter's pause does). Prints, per round and as medians: how long the input took to send its first sound, the
seconds of speech the take's checks found, against the sentence's own, how far into the take the speech begins,
and whether its silence check passed. On this bed the idle sink holds the played sentence as long as it holds
its monitor, so "before" loses almost no speech: its takes begin with it, which the silence check fails as a
word cut off. A microphone that wakes late does not hold the speaker: what is said before its first sound is
lost (simulated by FakeInputStream's start_delay_s). Needs PulseAudio and PortAudio (apt-get install pulseaudio
libportaudio2)."""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for real_device.py

import numpy as np
from real_device import RealDesktop, read_aloud, speech_file

from spokenbench.core.audio.io import decode_audio
from spokenbench.core.recording.quality import analyse_take

READ_AFTER_START_S = 0.5  # before: the speaker read this long after R, once "● Recording" showed
READ_AFTER_SOUND_S = 0.3  # now: this long after the input's first sound, when "● Recording" shows


def take(desktop: RealDesktop, speech: Path, variant: str) -> tuple[float, float, float, bool]:
    """(seconds to the first sound, seconds of speech found, seconds before it in the take, silence check passed)
    of one take."""
    from spokenbench.core.recording.recorder import Recorder, input_devices

    [device] = [device for device in input_devices() if device.is_default]
    recorder = Recorder(device)
    started = time.monotonic()
    recorder.start()
    if variant == "before":
        time.sleep(READ_AFTER_START_S)
    else:
        while not recorder.take_begun and time.monotonic() - started < 10:  # ● Recording's own condition
            time.sleep(0.005)
        time.sleep(READ_AFTER_SOUND_S)
    read_aloud(desktop, speech)
    time.sleep(0.6)
    while recorder.first_block_at is None and time.monotonic() - started < 10:
        time.sleep(0.005)  # "before" may stop before the input woke: then its wake is measured anyway
    samples = recorder.stop()
    woke = (recorder.first_block_at or time.monotonic()) - started
    if len(samples) == 0:
        return woke, 0.0, 0.0, False
    analysis = analyse_take(samples, recorder.rate)
    lead = analysis.lead_trimmed_s + (analysis.check("silence").passed and 0.15)  # trimming keeps 0.15 s
    return woke, analysis.speech_s, lead, analysis.check("silence").passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--idle", type=float, default=4.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sb-bench-") as folder:
        work = Path(folder)
        speech = speech_file(work / "speech.wav")
        decoded = decode_audio(speech.read_bytes(), "the sentence")
        pause = np.zeros(decoded.rate // 2, dtype=np.float32)  # as in a take: the null sink is silent around it
        reference = analyse_take(np.concatenate([pause, decoded.samples, pause]), decoded.rate).speech_s
        with RealDesktop(work / "desktop") as desktop:
            os.environ["PULSE_SERVER"] = desktop.pulse_server  # PortAudio's ALSA pulse plugin, as the app's
            figures: dict[str, list[tuple[float, float, float, bool]]] = {"before": [], "now": []}
            for index in range(args.rounds):
                for variant in ("before", "now") if index % 2 == 0 else ("now", "before"):
                    time.sleep(args.idle)
                    result = take(desktop, speech, variant)
                    figures[variant].append(result)
                    woke, speech_s, lead, passed = result
                    print(f"round {index + 1} {variant:6}: first sound {woke:.2f} s after the start; {speech_s:.2f} "
                          f"of {reference:.2f} s of speech, {lead:.2f} s into the take; silence check "
                          f"{'passed' if passed else 'failed'}")  # fmt: skip
    for variant, results in figures.items():
        woke = statistics.median(r[0] for r in results)
        kept = statistics.median(r[1] for r in results)
        lead = statistics.median(r[2] for r in results)
        passed = sum(r[3] for r in results)
        print(f"{variant:6}: median first sound {woke:.2f} s; median speech {kept:.2f} of {reference:.2f} s, "
              f"{lead:.2f} s into the take; silence check passed in {passed} of {len(results)} takes")  # fmt: skip


if __name__ == "__main__":
    main()
