"""Recording real speakers (core/recording): profiles and self-described gender, the consent gate, quality checks
with their reasons on synthetic takes, takes through the fake input stream into the content-addressed store,
retakes, cloning from the best passing take (a stub backend), withdrawal deleting everything made from a voice,
migration 9 keeping existing data, and the `speakers` command's refusals (exit 2, a message, no traceback)."""

import json
import sqlite3
import time

import numpy as np
import pytest
from support import write_jsonl

from spokenbench.core.audio.io import decode_audio, encode_wav
from spokenbench.core.audio.tts.base import TTSBackend, VoiceSpec
from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.importers import ImportOptions, import_files
from spokenbench.core.recording import store as recording_store
from spokenbench.core.recording.cloning import create_cloned_voice
from spokenbench.core.recording.prompts import Prompt, project_prompts, reading_list_prompts
from spokenbench.core.recording.quality import InputBreak, VoiceOnset, analyse_take, level_verdict, waking_zeros
from spokenbench.core.recording.recorder import (
    DIGITAL_SILENCE_S,
    INPUT_STALL_S,
    FakeInputStream,
    InputDevice,
    InputState,
    Recorder,
    RecordingUnavailable,
    block_level,
    fake_stream_factory,
    recording_availability,
)
from spokenbench.core.recording.speakers import (
    ConsentRequired,
    add_speaker,
    give_consent,
    list_speakers,
    normalise_gender,
    withdraw_consent,
)
from spokenbench.core.recording.takes import (
    best_take,
    discard_take,
    prepare_take,
    save_take,
    script_progress,
    speaker_takes,
)
from spokenbench.core.store import Project, migrations

RATE = 16_000
CONSENT = "I agree that my voice is recorded and cloned for research."


def speech(seconds: float = 1.5, amplitude: float = 0.3, rate: int = RATE) -> np.ndarray:
    """A voiced, syllable-like signal: a 180 Hz tone with harmonics, modulated at 4 Hz."""
    t = np.arange(int(seconds * rate)) / rate
    tone = np.sin(2 * np.pi * 180 * t) + 0.5 * np.sin(2 * np.pi * 360 * t) + 0.25 * np.sin(2 * np.pi * 540 * t)
    envelope = 0.65 + 0.35 * np.sin(2 * np.pi * 4 * t)
    return (amplitude / 1.75 * tone * envelope).astype(np.float32)


def padded(signal: np.ndarray, lead_s: float = 0.5, tail_s: float = 0.6, noise: float = 1e-4, rate: int = RATE):
    rng = np.random.default_rng(3)
    out = np.concatenate([np.zeros(int(lead_s * rate)), signal, np.zeros(int(tail_s * rate))]).astype(np.float32)
    return out + rng.normal(0, noise, len(out)).astype(np.float32)


def record(signal: np.ndarray, rate: int = RATE) -> np.ndarray:
    """Record `signal` through the Recorder from a fake input stream (as fast as the fake can deliver it, then
    nothing: a test thread that stops the take late on a loaded machine must not add minutes of silence to it)."""
    factory = fake_stream_factory(signal, noise_dbfs=None, then_silence=False)
    recorder = Recorder(InputDevice(None, "fake", 1, rate), stream_factory=factory)
    recorder.start()
    recorder._stream.delivered_signal.wait(5)
    return recorder.stop()


@pytest.fixture
def speaker(project):
    return add_speaker(project, "Ana", "en", "British", "woman")


@pytest.fixture
def consented(project, speaker):
    give_consent(project, "Ana", CONSENT, "tester")
    return speaker


PROMPT = Prompt("line:test", "The quick brown fox.")


# -- profiles --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "group"),
    [
        ("Woman", "female"),
        ("male", "male"),
        ("non-binary", "other"),
        ("", "unspecified"),
        ("Prefer not to say", "unspecified"),
        ("여성", "female"),
    ],
)
def test_self_described_gender_is_kept_and_normalised(text, group):
    assert normalise_gender(text) == group


def test_a_speaker_keeps_their_own_words_for_gender(project):
    speaker = add_speaker(project, "Kim", "ko", "Seoul", "genderqueer")
    assert (speaker.gender_self_described, speaker.gender_group, speaker.voice_gender) == ("genderqueer", "other", None)
    assert add_speaker(project, "Bo", "zh", None, "Male").voice_gender == "male"
    with pytest.raises(SpokenBenchError, match="already exists"):
        add_speaker(project, "Kim", "ko")
    with pytest.raises(SpokenBenchError, match="not a known language"):
        add_speaker(project, "Zed", "zz")


def test_migration_9_keeps_existing_speakers_consents_and_recordings(tmp_path, monkeypatch):
    from spokenbench.core.store import database

    monkeypatch.setattr(database, "MIGRATIONS", migrations.MIGRATIONS[:8])
    monkeypatch.setattr(database, "SCHEMA_VERSION", 8)
    monkeypatch.setattr("spokenbench.core.store.project.SCHEMA_VERSION", 8)
    with Project.create(tmp_path / "p") as old, old.transaction() as conn:
        conn.execute("INSERT INTO speakers(name, gender, created_at) VALUES ('old', 'female', 'then')")
        conn.execute(
            "INSERT INTO consents(speaker_id, scope, consent_text, given_at, recorded_by) VALUES (1, 's', 't', 'then', 'me')"
        )
        conn.execute(
            "INSERT INTO recordings(speaker_id, consent_id, sha256, audio_format, duration_s, sample_rate, created_at) "
            "VALUES (1, 1, 'abc', 'wav', 1.0, 16000, 'then')"
        )
    monkeypatch.undo()
    with Project.open(tmp_path / "p") as project:
        assert project.conn.execute("PRAGMA user_version").fetchone()[0] == migrations.SCHEMA_VERSION  # 9 and later
        [speaker] = list_speakers(project.conn)
        assert (speaker.name, speaker.gender_group, speaker.gender_self_described) == ("old", "female", "female")
        assert speaker.consent_in_force and speaker.takes == 1
        project.conn.execute("INSERT INTO speakers(name, gender_group, created_at) VALUES ('x', 'other', 'now')")
        with pytest.raises(sqlite3.IntegrityError):
            project.conn.execute("INSERT INTO speakers(name, gender_group, created_at) VALUES ('y', 'robot', 'now')")


# -- consent ---------------------------------------------------------------------------------------------------


def test_recording_is_refused_until_consent_is_given(project, speaker):
    prepared = prepare_take(padded(speech()), RATE, PROMPT)
    with pytest.raises(ConsentRequired, match="has not given consent"):
        save_take(project, speaker.id, prepared)
    assert list(project.audio.root.rglob("*.flac")) == []  # refused before anything is stored
    consent = give_consent(project, "Ana", CONSENT, "tester")
    assert consent.given_at and consent.recorded_by == "tester"
    take = save_take(project, speaker.id, prepared)
    assert take.take == 1 and take.passed
    with pytest.raises(SpokenBenchError, match="already given consent"):
        give_consent(project, "Ana", CONSENT, "tester")
    with pytest.raises(SpokenBenchError, match="empty"):
        give_consent(project, "Ana", "  ", "tester")


# -- quality checks ----------------------------------------------------------------------------------------------


def test_a_clean_take_passes_and_its_silence_is_trimmed():
    analysis = analyse_take(padded(speech(1.5)), RATE)
    assert analysis.passed, analysis.checks
    assert analysis.lead_trimmed_s == pytest.approx(0.35, abs=0.03)  # 0.5 s of silence, 0.15 s kept
    assert analysis.tail_trimmed_s == pytest.approx(0.45, abs=0.03)
    assert analysis.trimmed_duration_s == pytest.approx(1.8, abs=0.05)
    assert "trimmed" in analysis.check("silence").reason
    assert analysis.snr_db > 40


def test_a_clipped_sine_fails_the_clipping_check_with_its_share():
    clipped = np.clip(speech(1.5, amplitude=2.0), -1, 1)
    analysis = analyse_take(padded(clipped), RATE)
    check = analysis.check("clipping")
    assert not check.passed and check.value > 0.01
    assert "clipped" in check.reason and "lower the input gain" in check.reason
    assert analysis.check("snr").passed and analysis.check("speech_duration").passed


def test_a_noisy_take_fails_the_snr_check():
    rng = np.random.default_rng(0)
    noisy = padded(speech(1.5, amplitude=0.05))
    noisy = noisy + rng.normal(0, 0.03, len(noisy)).astype(np.float32)
    check = analyse_take(noisy, RATE).check("snr")
    assert not check.passed and check.value < 20 and "quieter" in check.reason


def test_a_too_short_take_fails_the_duration_check():
    check = analyse_take(padded(speech(0.2)), RATE).check("speech_duration")
    assert not check.passed and "only 0.2" in check.reason


def test_silence_and_cut_off_speech_fail_with_reasons():
    silent = analyse_take(np.random.default_rng(1).normal(0, 1e-4, RATE).astype(np.float32), RATE)
    assert not silent.passed and "no speech found" in silent.check("speech_duration").reason
    cut = analyse_take(padded(speech(1.5), lead_s=0.0), RATE).check("silence")
    assert not cut.passed and "start of the take" in cut.reason


def block_levels(samples: np.ndarray, block: int = 1024) -> tuple[list[float], list[float]]:
    """(RMS, peak) dBFS of each block, as the recorder's callback measures them for the meter."""
    levels = [block_level(samples[start : start + block]) for start in range(0, len(samples) - block + 1, block)]
    return [rms for rms, _ in levels], [peak for _, peak in levels]


@pytest.mark.parametrize(
    ("band", "signal", "clipping", "snr"),
    [
        ("good", lambda: padded(speech(2.0)), True, True),
        ("loud", lambda: padded(np.clip(speech(2.0, amplitude=2.0), -1, 1)), False, True),
        ("quiet", lambda: padded(speech(2.0, amplitude=0.02), noise=1e-5), True, True),
        (
            "noisy",
            lambda: padded(speech(2.0, amplitude=0.3)) + np.random.default_rng(0).normal(0, 0.03, 49_600),
            True,
            False,
        ),
    ],
)
def test_the_level_in_words_agrees_with_the_checks_a_take_at_that_level_gets(band, signal, clipping, snr):
    """L (the Speakers page) judges a level check's blocks as the meter measures them: too loud where the take's
    clipping check would fail, noisy where its SNR check would, and says what to do."""
    samples = np.asarray(signal(), dtype=np.float32)
    verdict = level_verdict(*block_levels(samples))
    analysis = analyse_take(samples, RATE)
    assert verdict.band == band, verdict
    assert (analysis.check("clipping").passed, analysis.check("snr").passed) == (clipping, snr)
    advice = {
        "good": "Level good: your voice peaked at -12 dBFS, ",
        "loud": "Level too loud: your voice reached full scale; lower the input gain",
        "quiet": "Level too quiet: your voice peaked at -36 dBFS, below -30",
        "noisy": "Level good, but the room is noisy: your voice peaked at -9 dBFS, only ",
    }[band]
    assert verdict.words.startswith(advice), verdict.words
    if band in ("good", "noisy"):
        assert verdict.snr_db == pytest.approx(analysis.snr_db, abs=6), (verdict, analysis.snr_db)


def test_a_check_read_without_pauses_hears_the_room_in_its_one_short_pause():
    """3 s read straight through after a pause of 0.1 s: the room is that pause (its lowest tenth of blocks was
    speech, and a quiet room was said to be noisy: 13 dB, measured on the real bed's espeak sentence)."""
    samples = padded(speech(2.9), lead_s=0.1, tail_s=0.0, noise=1e-4)
    rms, peaks = block_levels(samples, block=RATE * 1024 // 48_000)  # 21 ms: the recorder's block at 48 kHz
    verdict = level_verdict(rms, peaks)
    assert verdict.band == "good" and verdict.noise_dbfs < -75 and verdict.snr_db > 50, verdict
    assert float(np.percentile(rms, 10)) > -30  # the take's estimator would have heard speech as the room


def peaking_at(dbfs: float) -> np.ndarray:
    """2 s of speech whose loudest sample is at `dbfs`."""
    voiced = speech(2.0)
    return (voiced / np.max(np.abs(voiced)) * 10 ** (dbfs / 20)).astype(np.float32)


def test_a_voice_close_to_full_scale_is_good_with_a_warning_not_too_loud():
    """Too loud is said where the take's clipping check would fail (full scale), not at the meter's red (-1 dBFS):
    a take peaking at -0.5 dBFS passes every check, and was told to be read again."""
    samples = padded(peaking_at(-0.5))
    verdict = level_verdict(*block_levels(samples))
    assert analyse_take(samples, RATE).passed
    assert verdict.band == "good" and verdict.words.startswith(
        "Level good: your voice peaked at -0.5 dBFS, close to full scale (a louder word would clip), "
    ), verdict.words
    quiet = level_verdict(*block_levels(padded(peaking_at(-30.4), noise=1e-5)))
    assert "peaked at -31 dBFS, below -30 dBFS" in quiet.words  # never "-30 dBFS, below -30"


def test_a_voice_begins_after_the_room_and_a_keys_click_is_none():
    """A level check counts its seconds from the voice: three blocks in a row 10 dB above the room. L's own click (one
    block) and a steady noise are no voice."""
    onset = VoiceOnset()
    levels = [-70.0] * 5 + [-30.0] + [-70.0] * 5 + [-25.0, -24.0, -20.0, -22.0]  # room, click, room, voice
    assert [onset.feed(rms, at) for at, rms in enumerate(levels)][-4:] == [None, None, 11, 11]
    assert onset.at == 11 and onset.room == -70.0
    steady = VoiceOnset()
    assert all(steady.feed(-20.0, at) is None for at in range(200))  # a fan's noise, however loud, never began
    for room in ([-80.0, -120.0] + [-50.0] * 10, [-75.0, -72.0] + [-52.0] * 10):  # a zero block; an input fading in
        loud_room = VoiceOnset()
        assert all(loud_room.feed(rms, at) is None for at, rms in enumerate(room)), (room, loud_room.room)
    floor = VoiceOnset()
    assert all(floor.feed(rms, at) is None for at, rms in enumerate([-110.0] * 5 + [-80.0] * 10))  # under -55 dBFS


def test_a_check_that_heard_no_voice_says_so_not_that_the_room_is_a_voice():
    """A loud room with no one speaking was "Level good, but the room is noisy: your voice peaked at …"."""
    rms, peaks = block_levels(np.random.default_rng(0).normal(0, 0.01, 3 * RATE).astype(np.float32))
    verdict = level_verdict(rms, peaks, voice_heard=False)
    assert verdict.band == "no voice" and verdict.words.startswith("No voice heard: the loudest moment was -"), verdict
    assert "the room's noise -40 dBFS" in verdict.words and "your voice" not in verdict.words
    muted = level_verdict([-120.0] * 20, [-120.0] * 20, voice_heard=False)
    assert muted.band == "muted"  # what was heard still comes first


def test_the_level_of_exact_zeros_is_a_muted_input_and_of_a_quiet_room_nothing_heard():
    muted = level_verdict(*block_levels(np.zeros(RATE, dtype=np.float32)), within="in the last 3 seconds")
    assert muted.band == "muted" and muted.words.startswith("No sound at all in the last 3 seconds: every sample")
    room = np.random.default_rng(0).normal(0, 1e-4, RATE).astype(np.float32)
    quiet = level_verdict(*block_levels(room))
    assert quiet.band == "silent" and quiet.words.startswith("Nothing heard: the loudest moment was -")
    assert level_verdict([], []).band == "muted"  # no block at all says nothing of a room


def test_a_take_of_exact_zeros_is_said_to_come_from_a_muted_input_and_a_quiet_one_is_not():
    muted = analyse_take(np.zeros(RATE, dtype=np.float32), RATE).check("speech_duration").reason
    assert "every sample is exactly zero" in muted and "muted" in muted
    quiet = np.random.default_rng(0).normal(0, 1e-4, RATE).astype(np.float32)  # a live microphone in a quiet room
    reason = analyse_take(quiet, RATE).check("speech_duration").reason
    assert "no speech found" in reason and "exactly zero" not in reason


def test_a_take_whose_input_stopped_or_paused_fails_its_input_check_and_others_have_none():
    take = padded(speech(1.0))
    stopped = analyse_take(take, RATE, input_break=InputBreak(1.234))
    assert not stopped.passed and [check.name for check in stopped.failures()] == ["input"]
    assert stopped.check("input").value == 1.23
    assert "stopped sending sound 1.2 s into the take" in stopped.check("input").reason
    paused = analyse_take(take, RATE, input_break=InputBreak(0.8, 1.5)).check("input")
    assert not paused.passed and "sent nothing for 1.5 s, 0.8 s into the take" in paused.reason
    assert "input" not in [check.name for check in analyse_take(take, RATE).checks]
    cut = padded(speech(1.0), tail_s=0.0)  # speech up to where the input stopped: the input check says why
    assert analyse_take(cut, RATE, input_break=InputBreak(1.5)).check("silence").passed
    assert not analyse_take(cut, RATE, input_break=InputBreak(0.8, 1.5)).check("silence").passed


# -- the recorder ------------------------------------------------------------------------------------------------


def test_the_recorder_collects_blocks_levels_and_dropped_blocks():
    signal = padded(speech(1.0))
    recorder = Recorder(
        InputDevice(None, "fake", 1, RATE),
        blocksize=512,
        stream_factory=fake_stream_factory(signal, noise_dbfs=None, overflow_blocks=(3, 7), then_silence=False),
    )
    recorder.start()
    assert recorder._stream.delivered_signal.wait(5)
    samples = recorder.stop()
    assert np.array_equal(samples[: len(signal)], signal)
    assert recorder.dropped_blocks == 2 and recorder.blocks >= len(signal) // 512
    levels = recorder.drain_levels()
    assert len(levels) == recorder.blocks and max(level.peak_dbfs for level in levels) > -15
    assert recorder.drain_levels() == []


class UnansweredStop(FakeInputStream):
    """A stream whose stop waits for `answered`, as a hung sound server holds it (PulseAudio stopped); or raises,
    as a stream whose device is gone."""

    answered = None
    fails = False

    def stop(self):
        if self.fails:
            raise OSError("Error stopping stream: Unanticipated host error")
        self.answered.wait(30)
        super().stop()


def test_a_take_is_kept_when_its_streams_stop_is_never_answered():
    """Before, `stop()` waited on the server for good and the take was lost when the app quit meanwhile."""
    import threading

    from spokenbench.core.audio import open_streams

    signal = padded(speech(1.0))
    answered = threading.Event()
    recorder = Recorder(
        InputDevice(None, "fake", 1, RATE),
        blocksize=512,
        stream_factory=lambda **options: type("Held", (UnansweredStop,), {"answered": answered})(
            **{**options, "signal": signal, "noise_dbfs": None, "then_silence": False}
        ),
    )
    open_before = open_streams.count
    recorder.start()
    assert recorder._stream.delivered_signal.wait(5)
    started = time.perf_counter()
    samples = recorder.stop(wait_s=0.3)
    assert 0.25 < time.perf_counter() - started < 2.0 and recorder.stop_held
    assert np.array_equal(samples[: len(signal)], signal)
    assert recorder.closing.is_alive() and open_streams.count == open_before + 1  # still closing
    answered.set()
    recorder.closing.join(5)
    assert not recorder.closing.is_alive() and open_streams.count == open_before


def test_a_take_is_kept_when_its_stream_fails_to_stop():
    """Before, the error of a stream whose device had gone came out of `stop()` and the take was lost."""
    signal = padded(speech(0.5))
    recorder = Recorder(
        InputDevice(None, "fake", 1, RATE),
        blocksize=512,
        stream_factory=lambda **options: type("Failing", (UnansweredStop,), {"fails": True})(
            **{**options, "signal": signal, "noise_dbfs": None, "then_silence": False}
        ),
    )
    recorder.start()
    assert recorder._stream.delivered_signal.wait(5)
    samples = recorder.stop()
    assert np.array_equal(samples[: len(signal)], signal) and not recorder.stop_held


def test_a_recording_still_open_at_exit_is_stopped_before_the_interpreter_ends(tmp_path):
    """A stream still running while the interpreter ends calls its Python callback from PortAudio's thread into
    a finalized interpreter: the app died with SIGSEGV after Ctrl+Q in a take (1 of 9 quits on the real desktop).
    The exit hook stops it first; one a hung server holds is left after STOP_WAIT_S."""
    import subprocess
    import sys

    script = tmp_path / "exit.py"
    script.write_text(
        "import sys, threading, time\n"
        "from spokenbench.core.recording.recorder import FakeInputStream, Recorder\n"
        "hold = threading.Event()\n"
        "class Stream(FakeInputStream):\n"
        "    def stop(self):\n"
        "        if sys.argv[1] == 'held':\n"
        "            hold.wait()\n"
        "        super().stop()\n"
        "    def close(self):\n"
        "        super().close()\n"
        "        print('closed', flush=True)\n"
        "recorder = Recorder(stream_factory=lambda **o: Stream(realtime=True, **o))\n"
        "recorder.start()\n"
        "time.sleep(0.2)\n"
        "print('exiting', flush=True)\n"
    )
    for mode, wanted in (("answers", "exiting\nclosed\n"), ("held", "exiting\n")):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout == wanted, (mode, done.stdout, done.stderr)
        assert time.perf_counter() - started < 10, mode  # a held stop is left, not waited for


def test_the_recorder_says_whether_sound_comes_is_silent_or_stopped():
    """What the screen shows while recording: waiting for the input's first block, sound, exact zeros for
    DIGITAL_SILENCE_S (muted), no block for INPUT_STALL_S (stopped); where the input stopped is kept after stop."""
    signal = np.concatenate([padded(speech(0.5)), np.zeros(RATE // 2, dtype=np.float32)])  # ends in exact zeros
    recorder = Recorder(
        InputDevice(None, "fake", 1, RATE),
        blocksize=400,
        stream_factory=fake_stream_factory(signal, noise_dbfs=None, then_silence=False),
    )
    assert recorder.input_state() == InputState.WAITING and recorder.input_break is None
    recorder.start()
    assert recorder._stream.delivered_signal.wait(5)
    last, silent = recorder.last_block_at, recorder.silent_since
    assert silent is not None and recorder.first_block_at <= silent <= last
    assert recorder.input_state(last) == InputState.SOUND
    assert recorder.input_state(last + INPUT_STALL_S + 0.01) == InputState.STALLED
    recorder.last_block_at = silent + DIGITAL_SILENCE_S  # as if zeros had kept coming in real time
    assert recorder.input_state(silent + DIGITAL_SILENCE_S) == InputState.SILENT
    assert recorder.input_state(silent + DIGITAL_SILENCE_S - 0.1) == InputState.SOUND
    recorder.last_block_at = last
    assert recorder.recorded_s == pytest.approx(len(signal) / RATE, abs=400 / RATE)
    samples = recorder.stop()
    assert recorder.input_break is None  # stopped at once, no block late: the input never stopped
    recorder.stopped_at = last + INPUT_STALL_S + 0.5  # as if R came 1.5 s after the last block
    assert recorder.input_break == InputBreak(pytest.approx(len(samples) / RATE))


def test_a_pause_of_the_input_it_came_back_from_is_kept_as_the_takes_longest():
    """A wireless headset dropping out for 1.3 s mid-take: its blocks come again, so the page's line goes, but what
    was said meanwhile is missing; the take keeps the longest such pause for its input check."""
    recorder = Recorder(InputDevice(None, "fake", 1, RATE), blocksize=400, stream_factory=fake_stream_factory(None))
    block = np.full((400, 1), 0.01, dtype=np.float32)
    clock = iter([10.0, 10.025, 11.35, 11.375, 11.4, 13.0, 13.025])  # gaps of 1.3 s after 2 blocks, 1.6 s after 5
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "monotonic", lambda: next(clock))
        recorder._recording = True
        for _ in range(7):
            recorder._callback(block, 400, None, None)
    recorder._recording, recorder.stopped_at = False, 13.03
    assert recorder.input_break == InputBreak(pytest.approx(5 * 400 / RATE), pytest.approx(1.6 - 400 / RATE))


def fed_blocks(recorder: Recorder, blocks: list[tuple[float, float]]) -> None:
    """`blocks` of 400 samples given to the recorder's callback as (arrival time, level; 0: exact zeros)."""
    with pytest.MonkeyPatch.context() as patch:
        clock = iter([at for at, _ in blocks])
        patch.setattr(time, "monotonic", lambda: next(clock))
        recorder._recording = True
        for _, level in blocks:
            recorder._callback(np.full((400, 1), level, dtype=np.float32), 400, None, None)


def test_an_input_that_wakes_with_zeros_is_not_heard_until_its_first_sound():
    """WASAPI's and ASIO's first buffers, a USB microphone leaving its power saving and a Bluetooth headset changing
    profile send exact zeros before the first sound (python-sounddevice#44: 255 and 512 samples; voicebox#910: 1 s
    on a USB microphone). Before, the input counted as hearing at its first block, zeros or not: ● Recording showed
    while it was still deaf, and the speaker's first words were lost without a word."""
    recorder = Recorder(InputDevice(None, "fake", 1, RATE), blocksize=400, stream_factory=fake_stream_factory(None))
    fed_blocks(recorder, [(10.0 + 0.025 * index, 0.0) for index in range(32)])  # 0.8 s of exact zeros
    assert recorder.input_state(now=10.8) == InputState.WAITING and not recorder.take_begun
    fed_blocks(recorder, [(10.8, 0.001)])  # its noise floor: it hears now
    assert recorder.input_state(now=10.81) == InputState.SOUND and recorder.take_begun
    assert recorder.heard_at == 10.8 and recorder.first_block_at == 10.0
    fed_blocks(recorder, [(10.825, 0.0), (12.5, 0.0)])  # zeros after a sound: as before, silent after a while
    assert recorder.input_state(now=12.51) == InputState.SILENT and recorder.take_begun


def test_an_input_that_sends_only_zeros_is_said_silent_once_it_has_for_the_muted_wait():
    """A muted input, or a noise gate's pause at the start, sends zeros for good: the wait for its first sound is
    DIGITAL_SILENCE_S, then the take begins and the input is said silent (the speaker is told, and may read)."""
    recorder = Recorder(InputDevice(None, "fake", 1, RATE), blocksize=400, stream_factory=fake_stream_factory(None))
    waited = int(DIGITAL_SILENCE_S * RATE / 400)  # blocks of zeros in the wait: the last one ends it
    fed_blocks(recorder, [(20.0 + 0.025 * index, 0.0) for index in range(waited - 1)])
    assert recorder.input_state(now=20.0 + DIGITAL_SILENCE_S) == InputState.WAITING and not recorder.take_begun
    fed_blocks(recorder, [(20.0 + DIGITAL_SILENCE_S + 0.01, 0.0)])
    assert recorder.input_state(now=20.0 + DIGITAL_SILENCE_S + 0.02) == InputState.SILENT and recorder.take_begun
    waking = Recorder(InputDevice(None, "fake", 1, RATE), blocksize=400, stream_factory=fake_stream_factory(None))
    fed_blocks(waking, [(30.0, 0.0), (30.025, 0.0)])  # zeros, then nothing: a wait for it to wake, not a take
    assert waking.input_state(now=30.025 + INPUT_STALL_S + 0.1) == InputState.WAITING and not waking.take_begun


def test_the_zeros_an_input_woke_with_are_not_the_takes():
    """Its noise floor and speech are: before, 0.8 s of zeros (-120 dB frames) became the take's noise floor, so a
    take with 11 dB of SNR passed as 91 dB; and a wait while the input woke (zeros, nothing, then sound) failed the
    take's input check as a pause. The take's clock and a later pause's place count from its first sound."""
    recorder = Recorder(InputDevice(None, "fake", 1, RATE), blocksize=400, stream_factory=fake_stream_factory(None))
    fed_blocks(recorder, [(10.0, 0.0), (10.025, 0.0), (11.6, 0.0)])  # zeros, 1.5 s of nothing while it wakes
    fed_blocks(recorder, [(11.625, 0.001), (11.65, 0.001), (13.0, 0.001)])  # it hears; then a pause of 1.3 s
    assert recorder.lead_frames == 1_200 and recorder.recorded_s == pytest.approx(3 * 400 / RATE)
    samples = recorder.stop()
    recorder.stopped_at = 13.01
    assert len(samples) == 1_200 and samples.all()
    assert recorder.input_break == InputBreak(pytest.approx(2 * 400 / RATE), pytest.approx(1.35 - 400 / RATE))
    noisy = (np.random.default_rng(0).normal(0, 0.01, 3 * RATE) + 0.03 * speech(3.0)).astype(np.float32)
    snr = analyse_take(noisy, RATE).snr_db
    woken = np.concatenate([np.zeros(int(0.8 * RATE), dtype=np.float32), noisy])
    assert analyse_take(woken[waking_zeros(woken, RATE) :], RATE).snr_db == pytest.approx(snr)
    muted = np.concatenate([np.zeros(2 * RATE, dtype=np.float32), noisy])  # longer than the wait: it stays
    assert waking_zeros(muted, RATE) == 0


def test_a_fake_input_can_wake_with_zeros():
    blocks = []
    stream = FakeInputStream(RATE, 800, callback=lambda block, *a: blocks.append(block.copy()), zeros_s=0.1)
    stream.start()
    time.sleep(0.3)
    stream.stop()
    assert [bool(block.any()) for block in blocks[:3]] == [False, False, True]  # 100 ms of 50 ms blocks


def test_a_fake_input_can_wake_late_and_stop_mid_take():
    blocks = []
    stream = FakeInputStream(RATE, 800, callback=lambda *a: blocks.append(time.monotonic()), realtime=True,
                             start_delay_s=0.2, stop_after_s=0.15)  # fmt: skip
    started = time.monotonic()
    stream.start()
    time.sleep(0.6)
    stream.stop()
    assert blocks and blocks[0] - started >= 0.2 and len(blocks) == 3  # 150 ms of 50 ms blocks, then nothing


def test_block_level_is_in_dbfs():
    rms, peak = block_level(np.ones(100, dtype=np.float32) * 0.5)
    assert rms == pytest.approx(-6.02, abs=0.01) and peak == pytest.approx(-6.02, abs=0.01)
    assert block_level(np.zeros(10, dtype=np.float32)) == (-120.0, -120.0)


def test_a_realtime_fake_stream_paces_its_blocks():
    stream = FakeInputStream(RATE, 800, callback=lambda *a: None, realtime=True)  # 50 ms blocks
    stream.start()
    import time

    time.sleep(0.32)
    stream.stop()
    assert 4 <= stream.blocks_sent <= 7 and stream.late_blocks == 0


def test_a_fake_stream_says_its_signal_is_delivered_only_once_the_callback_has_the_last_sample():
    """A waiter that stops the recorder as soon as the signal is delivered must find every sample recorded (the
    event was set before the last block's callback: a slow callback lost that block)."""
    import threading
    import time

    received, last_call_returned = [], threading.Event()

    def slow_callback(block, frames, time_info, status):
        time.sleep(0.05)
        received.append(len(block))
        if len(received) == 3:
            last_call_returned.set()

    stream = FakeInputStream(RATE, 512, callback=slow_callback, signal=np.ones(1100, np.float32), then_silence=False)
    stream.start()
    assert stream.delivered_signal.wait(5)
    assert len(received) == 3 and last_call_returned.is_set()  # ceil(1100 / 512) blocks, the last one partial
    stream.stop()


def test_without_portaudio_recording_says_what_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_portaudio(name, *args, **kwargs):
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_portaudio)
    devices, problem = recording_availability()
    assert devices == [] and "libportaudio2" in problem and "PortAudio" in problem
    with pytest.raises(RecordingUnavailable, match="libportaudio2"):
        Recorder().start()
    assert "No audio input device" in recording_availability(lambda: [])[1]


def test_input_devices_are_listed_afresh_but_never_under_an_open_recording(monkeypatch):
    """PortAudio lists devices once, when initialized; `input_devices` re-initializes it (sounddevice's private
    _terminate/_initialize) so a microphone plugged in later is found — except while a recording is open, which
    re-initializing would close."""
    import sys

    from spokenbench.core.recording.recorder import input_devices

    calls = []

    class FakeSoundDevice:
        class default:
            device = (1, 0)

        def __init__(self):
            self.devices = [{"name": "Speakers", "max_input_channels": 0, "default_samplerate": 48000}]
            self.seen = list(self.devices)  # what PortAudio listed at its last initialization

        def query_devices(self):
            return list(self.seen)

        def _terminate(self):
            calls.append("terminate")

        def _initialize(self):
            calls.append("initialize")
            self.seen = list(self.devices)

    sd = FakeSoundDevice()
    monkeypatch.setitem(sys.modules, "sounddevice", sd)
    assert input_devices() == []
    sd.devices.append({"name": "USB mic", "max_input_channels": 1, "default_samplerate": 16000})
    assert input_devices() == [InputDevice(1, "USB mic", 1, 16000, True)]
    assert calls == ["terminate", "initialize"] * 2
    recorder = Recorder(InputDevice(1, "USB mic", 1, RATE), stream_factory=fake_stream_factory(speech(0.2)))
    recorder.start()
    try:
        sd.devices.append({"name": "Second mic", "max_input_channels": 2, "default_samplerate": 44100})
        assert [d.name for d in input_devices()] == ["USB mic"]  # the open stream is left alone
        assert len(calls) == 4
    finally:
        recorder.stop()
    assert [d.name for d in input_devices()] == ["USB mic", "Second mic"] and len(calls) == 6


# -- takes in the store ------------------------------------------------------------------------------------------


def test_a_recorded_take_is_stored_lossless_in_the_content_addressed_store(project, consented):
    samples = record(padded(speech(1.2)))
    take = save_take(project, consented.id, prepare_take(samples, RATE, PROMPT, device="fake"))
    path = project.audio.path_for(take.sha256, "flac")
    assert path.is_file() and path.parent.name == take.sha256[:2]
    audio = decode_audio(project.audio.read_bytes(take.sha256, "flac"), "take")
    assert audio.rate == RATE and audio.duration == pytest.approx(take.duration_s)
    assert take.duration_s < len(samples) / RATE  # stored trimmed
    [row] = speaker_takes(project.conn, consented.id)
    assert row.checks[0]["name"] == "clipping" and all(c["passed"] for c in row.checks)


def test_a_retake_numbers_the_takes_and_the_newest_counts(project, consented):
    prompts = [PROMPT, Prompt("line:2", "Second prompt.")]
    bad = save_take(project, consented.id, prepare_take(padded(speech(0.2)), RATE, PROMPT))
    assert not bad.passed and script_progress(prompts, speaker_takes(project.conn, consented.id)).passed == 0
    good = save_take(project, consented.id, prepare_take(padded(speech(1.4)), RATE, PROMPT))
    assert (bad.take, good.take) == (1, 2)
    progress = script_progress(prompts, speaker_takes(project.conn, consented.id))
    assert (progress.total, progress.recorded, progress.passed) == (2, 1, 1)
    assert best_take(speaker_takes(project.conn, consented.id)).id == good.id
    [listed] = list_speakers(project.conn)
    assert (listed.takes, listed.passing_takes, listed.prompts_done) == (2, 1, 1)
    save_take(project, consented.id, prepare_take(padded(speech(0.25)), RATE, PROMPT))  # a failing take 3 now counts
    [listed] = list_speakers(project.conn)
    assert (listed.takes, listed.passing_takes, listed.prompts_done) == (3, 1, 0)
    assert discard_take(project, bad.id)
    assert not project.audio.has(bad.sha256, "flac") and project.audio.has(good.sha256, "flac")


def test_prompts_come_from_rewritten_questions_or_a_reading_list(project, tmp_path):
    rows = [
        {"id": f"q{i}", "language": "en", "question": f"Question {i}?", "options": ["a", "b", "c", "d"], "answer": "A"}
        for i in range(3)
    ]
    import_files(project, [write_jsonl(tmp_path / "q.jsonl", rows)], "mcq", ImportOptions(source="t"))
    from spokenbench.core.store.rewrites import add_rewrite

    first = project.conn.execute("SELECT id FROM items ORDER BY id").fetchone()[0]
    with project.transaction() as conn:
        add_rewrite(conn, first, "question", "Question zero, spoken.", "manual", status="accepted")
    prompts = project_prompts(project.conn, "en")
    assert [p.text for p in prompts] == ["Question zero, spoken.", "Question 1?", "Question 2?"]
    assert prompts[0].key == f"item:{first}:question"
    assert project_prompts(project.conn, "ko") == []
    listed = reading_list_prompts("One.\n\n  Two.  \nOne.\n")
    assert [p.text for p in listed] == ["One.", "Two."]
    with pytest.raises(SpokenBenchError, match="no prompts"):
        reading_list_prompts("\n \n")


# -- cloning and withdrawal ----------------------------------------------------------------------------------------


class StubClone(TTSBackend):
    """An offline stand-in for the clone backend: speaks a tone, and remembers its references."""

    def __init__(self, references):
        super().__init__(
            name="clone",
            model="stub",
            accents={"en": (None,)},
            voices=tuple(VoiceSpec(n, g) for n, (g, _) in references.items()),
        )
        self.references = references

    async def synthesize(self, request):
        return encode_wav(speech(1.0, rate=24_000), 24_000)


@pytest.mark.slow
def test_cloning_uses_the_best_passing_take_and_withdrawal_deletes_everything(project, consented):
    failing = save_take(project, consented.id, prepare_take(padded(speech(0.2)), RATE, PROMPT))
    good = save_take(project, consented.id, prepare_take(padded(speech(1.5)), RATE, Prompt("line:b", "B.")))
    used = {}

    def factory(references):
        used.update(references)
        return StubClone(references)

    voice = create_cloned_voice(project, "Ana", backend_factory=factory)
    assert voice.take_id == good.id and used["Ana"][1] == project.audio.path_for(good.sha256, "flac")
    assert project.audio.has(voice.test_sha256, "wav") and voice.test_text.startswith("This is a test")
    # a clip synthesized with the cloned voice, and one by another backend sharing nothing
    with project.transaction() as conn:
        for backend, voice_name, sha in (("clone", "Ana", "c" * 64), ("espeak", "espeak-female", "d" * 64)):
            conn.execute(
                "INSERT INTO clips(part, text, language, voice, backend, cache_key, sha256, audio_format, created_at) "
                "VALUES ('token:x', 'x', 'en', ?, ?, ?, ?, 'wav', 'now')",
                (voice_name, backend, backend, sha),
            )
    clip_file = project.audio.path_for("c" * 64, "wav")
    clip_file.parent.mkdir(parents=True, exist_ok=True)
    clip_file.write_bytes(b"x")

    report = withdraw_consent(project, "Ana")
    assert (report.recordings_deleted, report.cloned_voices_deleted, report.clips_deleted) == (2, 1, 1)
    assert report.files_deleted == 4
    for sha, fmt in ((failing.sha256, "flac"), (good.sha256, "flac"), (voice.test_sha256, "wav"), ("c" * 64, "wav")):
        assert not project.audio.has(sha, fmt)
    assert speaker_takes(project.conn, consented.id) == []
    assert recording_store.cloned_voices_of(project.conn, consented.id) == []
    assert [r[0] for r in project.conn.execute("SELECT backend FROM clips")] == ["espeak"]
    [speaker] = list_speakers(project.conn)
    assert not speaker.consent_in_force and speaker.consent.withdrawn_at == report.withdrawn_at
    with pytest.raises(ConsentRequired):
        save_take(project, consented.id, prepare_take(padded(speech()), RATE, PROMPT))
    with pytest.raises(SpokenBenchError, match="no consent in force"):
        withdraw_consent(project, "Ana")


@pytest.mark.slow
def test_withdrawal_deletes_the_inputs_assembled_from_the_cloned_voice(project, consented):
    """Evaluation inputs assembled with the speaker's cloned voice (condition voice = the speaker, voice source
    'cloned') go with the consent, chunks and files included; an input of another voice stays."""
    from spokenbench.core.audio.store import replace_assembled_input
    from spokenbench.core.domain.conditions import Condition
    from spokenbench.core.domain.items import Item, Option
    from spokenbench.core.store.items import insert_items

    with project.transaction() as conn:
        [item_id] = insert_items(
            conn, [Item("t", "q1", "en", "Which?", tuple(Option(x, x.lower()) for x in "ABCD"), answer="A")]
        )
    cloned = Condition("en", None, "Ana", "female", voice_source="cloned")
    other = Condition("en", None, "Zephyr", "female")
    files = {}
    with project.transaction() as conn:
        for condition, tone in ((cloned, 220.0), (other, 330.0)):
            sha = project.audio.put_bytes(encode_wav(speech(0.3, rate=RATE) * (tone / 330), RATE), "wav")
            chunks = [
                (30.0, 0, project.audio.put_bytes(encode_wav(speech(0.1, rate=RATE) * (tone / 330), RATE), "wav"), 0.1)
            ]
            replace_assembled_input(
                conn, item_id, condition.key(), "ABCD", "ABCD", sha, sha, "wav", 0.3, RATE, 0, "text", "now", chunks
            )
            files[condition.voice] = (sha, chunks[0][2])
    report = withdraw_consent(project, "Ana")
    assert report.inputs_deleted == 1 and report.files_deleted == 2  # the input and its chunk
    keys = [r[0] for r in project.conn.execute("SELECT condition_key FROM assembled_inputs")]
    assert keys == [other.key()]
    assert project.conn.execute("SELECT count(*) FROM input_chunks").fetchone()[0] == 1
    assert not any(project.audio.has(sha, "wav") for sha in files["Ana"])
    assert all(project.audio.has(sha, "wav") for sha in files["Zephyr"])


def test_withdrawal_keeps_audio_another_row_still_uses(project, consented):
    prepared = prepare_take(padded(speech(1.5)), RATE, PROMPT)
    take = save_take(project, consented.id, prepared)
    other = add_speaker(project, "Ben", "en", None, "man")
    give_consent(project, "Ben", CONSENT, "tester")
    save_take(project, other.id, prepared)  # the very same bytes
    assert withdraw_consent(project, "Ana").files_deleted == 0
    assert project.audio.has(take.sha256, "flac")


def test_cloning_needs_a_passing_take_and_says_what_to_install(project, consented):
    with pytest.raises(SpokenBenchError, match="no take that passed"):
        create_cloned_voice(project, "Ana", backend_factory=StubClone)
    save_take(project, consented.id, prepare_take(padded(speech(1.5)), RATE, PROMPT))
    try:
        import chatterbox  # noqa: F401
    except ImportError:
        with pytest.raises(SpokenBenchError, match=r"spokenbench-studio\[cloning\]"):
            create_cloned_voice(project, "Ana")


# -- the CLI --------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_speakers_cli_adds_consents_lists_and_withdraws(cli, project, tmp_path):
    folder = project.path
    assert cli("speakers", folder).out.startswith("no speakers yet")
    added = cli(
        "speakers", folder, "--add", "Ana", "--language", "EN", "--accent", "British", "--gender", "woman", "--json"
    )
    assert added.code == 0, added.err
    assert added.json()["gender_group"] == "female" and added.json()["language"] == "en"
    text_file = tmp_path / "consent.txt"
    text_file.write_text(CONSENT, encoding="utf-8")
    consent = cli("speakers", folder, "--consent", "Ana", "--consent-text", text_file, "--by", "me", "--json")
    assert consent.code == 0 and consent.json()["text"] == CONSENT
    [listed] = cli("speakers", folder, "--json").json()
    assert listed["consent_in_force"] and listed["consent"]["recorded_by"] == "me"
    table = cli("speakers", folder)
    assert "Ana" in table.out and "given" in table.out
    withdrawn = cli("speakers", folder, "--withdraw", "Ana")
    assert withdrawn.code == 0 and "withdrawn" in withdrawn.out


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--add", "Ana"), "--add needs --language"),
        (("--add", "Ana", "--language", "klingon"), "not a language code"),
        (("--add", "", "--language", "en"), "needs a name"),
        (("--consent", "Nobody", "--consent-text", "I agree", "--by", "me"), "no speaker 'Nobody'"),
        (("--consent", "Ana"), "--consent needs --consent-text"),
        (("--consent", "Ana", "--consent-text", "I agree"), "--by"),
        (("--withdraw", "Ana"), "no consent in force"),
        (("--language", "en"), "can only be used with --add"),
        (("--by", "me"), "can only be used with --consent"),
    ],
)
def test_speakers_cli_refuses_bad_input_with_exit_2(cli, project, args, message):
    assert cli("speakers", project.path, "--add", "Ana", "--language", "en").code == 0
    result = cli("speakers", project.path, *args)
    assert result.code == 2 and message in result.err, result.err
    assert "Traceback" not in result.err and result.out == ""


def test_speakers_cli_on_a_missing_project_exits_2(cli, tmp_path):
    result = cli("speakers", tmp_path / "nowhere")
    assert result.code == 2 and "no such project folder" in result.err


def test_checks_are_stored_as_json_with_reasons(project, consented):
    save_take(project, consented.id, prepare_take(np.clip(padded(speech(1.5, amplitude=2.0)), -1, 1), RATE, PROMPT))
    checks = json.loads(project.conn.execute("SELECT checks_json FROM recordings").fetchone()[0])
    assert {c["name"] for c in checks} == {"clipping", "snr", "speech_duration", "silence"}
    assert not next(c for c in checks if c["name"] == "clipping")["passed"]


@pytest.mark.slow
def test_synthesize_clone_references_the_cloned_voices_take_never_a_failed_one(project, consented):
    """`synthesize --tts clone` reads `cloning_references`: a failed take is never a reference, and once a voice
    was cloned on the Speakers page its take is the reference even when newer passing takes exist."""
    from spokenbench.core.audio.tts.project_settings import cloning_references

    good = save_take(project, consented.id, prepare_take(padded(speech(1.5)), RATE, Prompt("line:a", "A.")))
    failing = save_take(project, consented.id, prepare_take(padded(speech(0.2)), RATE, Prompt("line:b", "B.")))
    assert not failing.passed
    assert cloning_references(project)["Ana"][1] == project.audio.path_for(good.sha256, "flac")
    voice = create_cloned_voice(project, "Ana", backend_factory=StubClone)
    newer = save_take(project, consented.id, prepare_take(padded(speech(1.6)), RATE, Prompt("line:c", "C.")))
    assert newer.passed and voice.take_id == good.id
    assert cloning_references(project)["Ana"][1] == project.audio.path_for(good.sha256, "flac")


def test_waiting_for_closing_streams_copes_with_a_closer_registered_before_it_started():
    """A stop registers its stream's closer, then starts it; the exit hook waiting in between raised "cannot join
    thread before it is started" (seen once in a CI run), and the exit hook's wait was lost."""
    import threading

    from spokenbench.core.audio import open_streams
    from spokenbench.core.recording import recorder as recorder_module

    before = open_streams.count
    recorder_module.count_open_stream(+1)  # as the stream's opening counted it: the closer counts it out
    closer = recorder_module.StreamCloser(FakeInputStream())
    with recorder_module._closing_lock:
        recorder_module._closing[closer] = time.monotonic()
    threading.Timer(0.1, closer.start).start()
    assert recorder_module.wait_for_closing_streams(5.0)  # waited for its start, then for its end
    assert not closer.is_alive() and open_streams.count == before


def test_a_spool_let_go_while_the_stop_makes_it_durable_waits_for_it():
    """A page closing as R stopped the take (the stop on a worker, the throwing away on a thread of its own): the
    release took the spool away between the stop's check and its sync, and the stop failed with "'NoneType' object
    has no attribute 'sync'" (seen in the Speakers page's tests). The release now waits for the sync."""
    import threading

    class SlowSpool:
        def __init__(self):
            self.writing, self.go, self.done = threading.Event(), threading.Event(), []

        def write(self, samples):
            self.writing.set()
            self.go.wait(5)
            self.done.append("write")

        def sync(self):
            self.done.append("sync")

        def close(self, remove):
            self.done.append(f"close remove={remove}")

    recorder = Recorder(InputDevice(None, "fake", 1, 16_000))
    spool = recorder.spool = SlowSpool()
    recorder._chunks = [np.zeros(160, dtype=np.float32)]
    failures = []

    def finish():
        try:
            recorder._finish_spool()
        except Exception as error:  # noqa: BLE001 - the failure this test is about
            failures.append(error)

    stopping = threading.Thread(target=finish)
    stopping.start()
    assert spool.writing.wait(5)
    releasing = threading.Thread(target=recorder.release_spool, args=(True,))
    releasing.start()
    time.sleep(0.1)  # the release comes while the stop writes the last blocks
    spool.go.set()
    stopping.join(5)
    releasing.join(5)
    assert failures == [] and spool.done == ["write", "sync", "close remove=True"]
