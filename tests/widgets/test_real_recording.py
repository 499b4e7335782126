"""A speaker's takes recorded by the real app from a real sound input: `spokenbench-studio` on a real X server,
its Speakers page driven by xdotool's keys, recording through PortAudio from PulseAudio's null sink monitor, into
which the "speaker" reads (espeak-ng's speech played by paplay; tests/real_device.py).

Measured on this bed, the idle null sink's monitor sends its first sound 1.7-2.0 s after a recording starts (it
renders in long blocks while nothing plays), as a suspended microphone or a Bluetooth headset changing profile
wakes late; before, the page showed "● Recording" at once, and a speaker who read 0.5 s after it lost the first
words of every take ("speech reaches the start of the take"). A sound server killed mid-take, and a muted input,
were recorded without a word. Slow (15-25 s each); skipped where Xvfb, PulseAudio, xfwm4 or xdotool cannot be
installed."""

from __future__ import annotations

import signal
import time

import pytest
from real_device import (
    add_consented_speaker,
    missing_tools,
    missing_window_manager,
    read_aloud,
    recorded_takes,
    recording_session,
    speech_file,
    take_through_a_waking_input,
    type_keys,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def speaking(demo_copy, tmp_path):
    problem = missing_tools() or missing_window_manager()
    if problem:
        pytest.skip(f"a real desktop is needed: {problem}")
    add_consented_speaker(demo_copy)
    return speech_file(tmp_path / "speech.wav")


def recorded(demo_copy, tmp_path, steps) -> list[dict]:
    figures = recording_session(demo_copy, tmp_path, steps)
    assert not (figures.froze or figures.died), "\n".join(figures.lines())
    return recorded_takes(demo_copy)


def test_a_take_read_once_recording_shows_keeps_its_first_words(demo_copy, tmp_path, speaking):
    """R, then the speaker reads 0.3 s after ● Recording shows, and R again after a pause: twice (the second
    take on the next prompt, once the input has gone idle again). Both pass every check."""
    waited, seen = [], []

    def steps(desktop, heart):
        seen.append(heart.recorder_states)
        for _prompt in range(2):
            type_keys(desktop, "r")
            pressed = time.monotonic()
            assert heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10), heart.recorder
            waited.append(time.monotonic() - pressed)
            time.sleep(0.3)
            read_aloud(desktop, speaking)
            time.sleep(0.6)
            type_keys(desktop, "r")
            assert heart.wait_for(lambda *_: heart.recorder == "idle", 15), heart.recorder
            time.sleep(3.0)  # the input goes idle again, as between a speaker's prompts
            type_keys(desktop, "Right")

    takes = recorded(demo_copy, tmp_path, steps)
    assert [take["passed"] for take in takes] == [True, True], (takes, waited)
    assert seen[0].index("recording-waiting") < seen[0].index("recording-sound"), seen  # the first woke late
    assert not {"recording-stalled", "recording-silent"} & set(seen[0]), seen  # a late input is neither
    assert all(take["speech_duration"]["value"] >= 3.0 for take in takes), (
        takes
    )  # the whole sentence: 3.2 s of speech (a 3.4 s file)
    print(f"● Recording shown {', '.join(f'{s:.2f}' for s in waited)} s after R")


def test_an_input_waking_with_zeros_loses_no_word_of_a_take_read_once_recording_shows(demo_copy, tmp_path, speaking):
    """The input muted from before R until 1.0 s after the take's first samples (PulseAudio then sends exact zeros,
    as WASAPI's first buffers, a USB microphone leaving its power saving or a Bluetooth headset changing profile do);
    the speaker reads 0.3 s after ● Recording shows. Before, ● Recording showed at the first block of zeros, about
    0.7 s of the sentence was read into them and lost, and the take passed its checks (bench_input_waking.py). Then
    the room's noise ends: an input exactly zero until the sentence (as a noise filter's pause is) shows ● Recording
    DIGITAL_SILENCE_S after its first block, and that take passes too."""
    taken, seen = [], []

    def steps(desktop, heart):
        taken.append(take_through_a_waking_input(desktop, heart, demo_copy, speaking, 1.0))
        type_keys(desktop, "Right")
        time.sleep(3.0)  # the input goes idle again, as between a speaker's prompts
        desktop.quiet_room()
        heart.recorder_states.clear()
        taken.append(take_through_a_waking_input(desktop, heart, demo_copy, speaking, None))
        seen.extend(heart.recorder_states)

    takes = recorded(demo_copy, tmp_path, steps)
    waking, zero_floor = taken
    assert waking.zeros >= 0.9 and waking.read_before_heard == 0.0, waking
    assert waking.shown_after_r >= waking.first_block_after_r + 0.9, waking  # once the input heard
    assert zero_floor.shown_after_r >= zero_floor.first_block_after_r + 1.2, zero_floor  # after the muted wait
    assert seen.index("recording-waiting") < seen.index("recording-silent"), seen
    assert [take["passed"] for take in takes] == [True, True], takes
    assert all(take["speech_duration"]["value"] >= 3.0 for take in takes), takes  # the whole sentence: 3.2 s


def test_a_sound_server_killed_mid_take_is_said_and_the_take_fails_its_input_check(demo_copy, tmp_path, speaking):
    def steps(desktop, heart):
        type_keys(desktop, "r")
        assert heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10), heart.recorder
        read_aloud(desktop, speaking, wait=False)
        time.sleep(1.5)
        desktop.stop_pulse()  # SIGKILL, as a crash; PortAudio's stream gets nothing more
        assert heart.wait_for(lambda *_: heart.recorder == "recording-stalled", 5), heart.recorder
        desktop.screenshot(tmp_path / "stalled.png")
        type_keys(desktop, "r")
        # the input looked for again once the take was saved: PortAudio finds none with the server gone
        assert heart.wait_for(lambda *_: heart.recorder == "unavailable", 15), heart.recorder_states

    [take] = recorded(demo_copy, tmp_path, steps)
    assert not take["passed"] and not take["input"]["passed"], take
    assert 1.0 < take["input"]["value"] < 3.5, take  # where the server died, not where R was pressed


def test_a_take_stopped_while_the_sound_server_hangs_is_saved_without_waiting_for_it(demo_copy, tmp_path, speaking):
    """PulseAudio stopped (SIGSTOP, as a hung server) right before R: the stream's stop waits on it. Before, the
    take waited with it ("Checking the take…" until the server went on). Now the page stays answering (the
    watchdog), and the take is checked and saved while the server is still stopped."""

    def steps(desktop, heart):
        type_keys(desktop, "r")
        assert heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10), heart.recorder
        time.sleep(0.3)
        read_aloud(desktop, speaking)
        time.sleep(0.4)
        desktop.hang_pulse()
        try:
            type_keys(desktop, "r")
            assert heart.wait_for(lambda *_: heart.recorder == "idle", 8), heart.recorder_states  # still hung
            desktop.screenshot(tmp_path / "held.png")
        finally:
            desktop.resume_pulse()

    figures = recording_session(demo_copy, tmp_path, steps)
    assert not (figures.froze or figures.died) and figures.longest_gap_s < 1.0, "\n".join(figures.lines())
    [take] = recorded_takes(demo_copy)
    assert take["passed"], take


def quit_in_a_take(desktop, heart, speaking, keys: tuple[str, ...], hung: bool = False) -> float | None:
    """R, the sentence read, (the server hung and R,) Ctrl+Q, then `keys` a second later (("SIGTERM",): that
    signal instead of Ctrl+Q): the seconds from then to the app's end (None: it had not ended 20 s later)."""
    type_keys(desktop, "r")
    assert heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10), heart.recorder
    read_aloud(desktop, speaking)
    time.sleep(0.5)
    if hung:
        desktop.hang_pulse()
        desktop.xdotool("key", "r")
        time.sleep(0.2)
    pressed = time.monotonic()
    if keys == ("SIGTERM",):  # a logout or shutdown: told to end, nobody to answer
        heart.process.send_signal(signal.SIGTERM)
        keys = ()
    else:
        desktop.xdotool("key", "ctrl+q")
    try:
        time.sleep(1.0)
        for key in keys:
            desktop.xdotool("key", key)
        while heart.process.poll() is None and time.monotonic() - pressed < 20:
            time.sleep(0.05)
    finally:
        if hung:
            desktop.resume_pulse()
    return time.monotonic() - pressed if heart.process.poll() is not None else None


@pytest.mark.parametrize(("keys", "kept"), [(("alt+k",), 1), (("alt+d",), 0), (("SIGTERM",), 1)])
def test_quitting_in_a_take_asks_and_keeps_or_discards_it(demo_copy, tmp_path, speaking, keys, kept):
    """Ctrl+Q while recording: before, the window closed at once and the take was gone, and 1 quit in 9 ended in
    SIGSEGV (a stream still running as the interpreter ended). Now the app asks; Alt+K keeps the take, Alt+D
    discards it, and the app ends cleanly either way. SIGTERM (a logout, a shutdown) keeps it without asking;
    before, it ended the app at once (exit -15)."""
    ended = []
    figures = recording_session(
        demo_copy, tmp_path, lambda desktop, heart: ended.append(quit_in_a_take(desktop, heart, speaking, keys))
    )
    assert ended[0] is not None and ended[0] < 6.0 and figures.exit_code == 0, "\n".join(figures.lines())
    assert len(recorded_takes(demo_copy)) == kept


def test_quitting_while_a_hung_sound_server_holds_the_stop_saves_the_take_and_ends(demo_copy, tmp_path, speaking):
    """R while PulseAudio is stopped, then Ctrl+Q at once: no question (the take is already stopped); the app
    saves it without the server and ends. Before, the take was lost."""
    ended = []
    figures = recording_session(
        demo_copy, tmp_path, lambda desktop, heart: ended.append(quit_in_a_take(desktop, heart, speaking, (), True))
    )
    assert ended[0] is not None and ended[0] < 10.0 and figures.exit_code == 0, "\n".join(figures.lines())
    [take] = recorded_takes(demo_copy)
    assert take["passed"], take


def test_a_muted_microphone_is_said_while_recording_and_unmuting_it_clears_that(demo_copy, tmp_path, speaking):
    """A room's noise plays all along (`recording_session`'s: a live microphone is never exactly silent); the input is muted mid-take
    (`pactl set-source-mute`: PulseAudio then sends exact zeros) and unmuted again; the speaker reads, and the
    sentence is in the take."""

    def steps(desktop, heart):
        type_keys(desktop, "r")
        assert heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10), heart.recorder
        time.sleep(2.0)
        assert heart.recorder_states[-1] == "recording-sound", heart.recorder_states  # a room's noise is sound
        desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "1")
        assert heart.wait_for(lambda *_: heart.recorder == "recording-silent", 5), heart.recorder
        desktop.screenshot(tmp_path / "muted.png")
        desktop.pactl("set-source-mute", "@DEFAULT_SOURCE@", "0")
        assert heart.wait_for(lambda *_: heart.recorder == "recording-sound", 5), heart.recorder
        read_aloud(desktop, speaking)
        time.sleep(0.6)
        type_keys(desktop, "r")
        assert heart.wait_for(lambda *_: heart.recorder == "idle", 15), heart.recorder

    [take] = recorded(demo_copy, tmp_path, steps)
    assert 3.0 <= take["speech_duration"]["value"] <= 3.6, take  # the sentence (3.2 s), not the room


def test_a_take_cut_short_by_killing_the_app_is_offered_and_kept_at_the_next_start(demo_copy, tmp_path, speaking):
    """SIGKILL in the middle of a take (as a crash or a power cut ends it): before, the take was gone. Now it is on
    disk as it comes; the next start's Speakers page asks, and Enter (Keep the take, the default) keeps it."""
    from spokenbench.core.recording.spool import left_takes

    def killed(desktop, heart):
        type_keys(desktop, "r")
        assert heart.wait_for(lambda *_: heart.recorder == "recording-sound", 10), heart.recorder
        read_aloud(desktop, speaking)
        time.sleep(0.6)
        heart.process.send_signal(signal.SIGKILL)
        heart.process.wait(10)

    first = recording_session(demo_copy, tmp_path / "first", killed)
    assert first.exit_code == -signal.SIGKILL and recorded_takes(demo_copy) == []
    [left] = left_takes(demo_copy)
    assert left.problem is None and 3.0 < left.seconds < 6.0, left

    def kept(desktop, heart):
        asked = desktop.xdotool("search", "--sync", "--name", "Keep a take cut short", timeout=30)
        assert asked.returncode == 0, "the page never asked about the take cut short"
        time.sleep(0.3)
        desktop.screenshot(tmp_path / "asked.png")
        type_keys(desktop, "Return")
        deadline = time.monotonic() + 15
        while not recorded_takes(demo_copy) and time.monotonic() < deadline:
            time.sleep(0.2)

    second = recording_session(demo_copy, tmp_path / "second", kept, enter=False)
    assert second.exit_code == 0, "\n".join(second.lines())
    [take] = recorded_takes(demo_copy)
    assert take["passed"] and take["speech_duration"]["value"] >= 3.0, take  # the whole sentence
    assert left_takes(demo_copy) == []
