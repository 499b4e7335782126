"""The clip player (core/audio/playback.py) over a fake PortAudio stream: its callers never wait, even on a
stalled device; a burst of commands ends with the newest; stop silences at once; damaged clips and missing
devices are reported in its state and the player keeps working. The real device is exercised by
tests/widgets/test_real_device_session.py."""

import threading
import time

import numpy as np
import pytest

from spokenbench.core.audio.io import encode_wav
from spokenbench.core.audio.playback import TAIL_S, FakeOutputStream

RATE = 8000


def tone(seconds: float, frequency: float = 440.0) -> tuple[np.ndarray, bytes]:
    samples = (0.3 * np.sin(2 * np.pi * frequency * np.arange(int(RATE * seconds)) / RATE)).astype(np.float32)
    return samples, encode_wav(samples, RATE)


class Streams:
    """A stream factory keeping every stream it made."""

    def __init__(self, stream=FakeOutputStream):
        self.made = []
        self.stream = stream

    def __call__(self, device, rate):
        stream = self.stream(device, rate)
        self.made.append(stream)
        return stream


class StalledStream(FakeOutputStream):
    """A device that takes nothing (a hung sound server)."""

    @property
    def write_available(self) -> int:
        return 0


def assert_clip_then_silence(stream, samples):
    """Every sample, in order, once; then only silence, at least TAIL_S of it, so the clip's end is heard."""
    written = np.concatenate(stream.written)
    assert np.allclose(written[: len(samples)], samples, atol=1e-4)
    assert not written[len(samples) :].any() and len(written) - len(samples) >= TAIL_S * RATE


def wait_for(condition, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_a_clip_plays_to_its_end_and_its_device_is_freed(player_of):
    streams = Streams()
    player = player_of(streams)
    samples, wav = tone(0.15)
    request = player.play(wav, "clip 7", device="Speakers")
    wait_for(lambda: player.state.request == request and not player.state.playing)
    state = player.state
    assert state.error is None and state.position_s == state.duration_s == pytest.approx(0.15)
    [stream] = streams.made
    assert stream.device == "Speakers" and stream.rate == RATE and stream.closed
    assert_clip_then_silence(stream, samples)


def test_posting_never_waits_even_on_a_stalled_device(player_of):
    streams = Streams(StalledStream)
    player = player_of(streams)
    _samples, wav = tone(0.1)
    started = time.perf_counter()
    for _index in range(2000):
        player.stop()
        last = player.play(wav)
    posted_in = time.perf_counter() - started
    assert posted_in < 0.5  # a few µs each: nothing here waits for the playback thread or the device
    wait_for(lambda: player.state.request == last and player.state.playing)  # the newest one, stuck on the device
    player.close()
    assert player.join(1.0)  # a stalled device does not hold the thread either


def test_a_burst_of_presses_ends_with_the_newest_clip(player_of):
    streams = Streams()
    player = player_of(streams)
    clips = [tone(0.05, 200.0 + 50 * index) for index in range(30)]
    for _samples, wav in clips:
        last = player.play(wav)
    wait_for(lambda: player.state.request == last and not player.state.playing)
    assert player.state.error is None
    assert len(streams.made) == 1  # the stream is reused: aborted and started again, not reopened
    written = np.concatenate(streams.made[0].written)
    final = written[np.flatnonzero(written)[-1] + 1 - len(clips[-1][0]) :]  # the newest clip, then silence only
    assert np.allclose(final[: len(clips[-1][0])], clips[-1][0], atol=1e-4) and not final[len(clips[-1][0]) :].any()


def test_stop_silences_at_once(player_of):
    streams = Streams()
    player = player_of(streams)
    _samples, wav = tone(5.0)
    request = player.play(wav)
    wait_for(lambda: player.state.request == request and player.state.position_s > 0.02)
    player.stop()
    wait_for(lambda: not player.state.playing, timeout=0.5)
    assert player.state.request == request and 0 < player.state.position_s < 1.0
    assert not streams.made[0].active and streams.made[0].buffered == 0  # aborted: nothing left to sound


def test_a_damaged_clip_is_reported_and_the_next_one_plays(player_of):
    streams = Streams()
    player = player_of(streams)
    broken = player.play(b"RIFF not really a wave", "clip 12")
    wait_for(lambda: player.state.request == broken and player.state.error is not None)
    assert player.state.error.startswith("Cannot play clip 12:") and not player.state.playing
    assert not player.state.output_failed  # the clip's fault: playing it again would not help
    _samples, wav = tone(0.05)
    good = player.play(wav)
    wait_for(lambda: player.state.request == good and not player.state.playing)
    assert player.state.error is None and player.state.position_s == pytest.approx(0.05)


def test_a_device_that_cannot_be_opened_is_reported(player_of):
    def no_device(device, rate):
        raise OSError(f"Error opening OutputStream: Invalid device {device!r}")

    player = player_of(no_device)
    _samples, wav = tone(0.05)
    request = player.play(wav, "clip 3", device="Gone")
    wait_for(lambda: player.state.request == request and player.state.error is not None)
    assert player.state.error == (
        "Cannot play clip 3: the sound output is not available (Error opening OutputStream: Invalid device 'Gone')"
    )
    assert player.state.output_failed


class VanishingStream(FakeOutputStream):
    """A device unplugged (or a sound server killed) after its first write."""

    def write(self, data):
        if self.written:
            raise OSError("Error writing to stream: Unanticipated host error [PaErrorCode -9999]")
        return super().write(data)


def test_an_output_gone_mid_clip_is_reported_and_the_next_play_works_once_it_is_back(player_of):
    """The clip is not at fault: the state says the output failed, and a later play opens a new stream."""
    streams = Streams(VanishingStream)
    player = player_of(streams)
    _samples, wav = tone(0.5)
    request = player.play(wav, "clip 5")
    wait_for(lambda: player.state.request == request and player.state.error is not None)
    assert player.state.error == (
        "Playback of clip 5 stopped: the sound output went away "
        "(Error writing to stream: Unanticipated host error [PaErrorCode -9999])"
    )
    assert player.state.output_failed and not player.state.playing
    streams.stream = FakeOutputStream  # the sound server is back
    again = player.play(wav, "clip 5")
    wait_for(lambda: player.state.request == again and player.state.playing)
    assert player.state.error is None and len(streams.made) == 2


def test_a_file_is_read_on_the_playback_thread(player_of, tmp_path, monkeypatch):
    streams = Streams()
    player = player_of(streams)
    samples, wav = tone(0.05)
    path = tmp_path / "clip.wav"
    path.write_bytes(wav)
    readers = []
    original = type(path).read_bytes

    def read_bytes(self):
        readers.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(type(path), "read_bytes", read_bytes)
    request = player.play(path, path.name)
    wait_for(lambda: player.state.request == request and not player.state.playing)
    assert readers == ["clip-playback"]
    assert_clip_then_silence(streams.made[0], samples)


def test_an_output_that_refuses_the_clips_rate_is_not_a_lost_output(player_of):
    """A device that does not take 8 kHz (an ALSA hw: device): another output helps, playing again does not."""

    class PortAudioError(Exception):  # shaped like sounddevice's: (message, PaErrorCode)
        def __str__(self):
            return f"{self.args[0]} [PaErrorCode {self.args[1]}]"

    def no_such_rate(device, rate):
        raise PortAudioError("Error opening OutputStream: Invalid sample rate", -9997)

    player = player_of(no_such_rate)
    _samples, wav = tone(0.05)
    request = player.play(wav, "clip 4", device="hw:0,0")
    wait_for(lambda: player.state.request == request and player.state.error is not None)
    assert player.state.error == (
        "Cannot play clip 4: the sound output does not take its audio (8000 Hz, mono: Error opening OutputStream: "
        "Invalid sample rate [PaErrorCode -9997]); choose another output in Settings (the system's default output "
        "converts)"
    )
    assert not player.state.output_failed


class LateStream(FakeOutputStream):
    """A stream that takes nothing for its first `LATE_S` once started, then plays at its rate: a sound server
    filling its own latency first (PulseAudio's null sink here: 1.5 s), a Bluetooth headset waking up."""

    LATE_S = 0.6

    def start(self) -> None:
        super().start()
        self.started_at = time.monotonic()

    def _consume(self) -> None:
        if self.active and time.monotonic() - self.started_at < self.LATE_S:
            self._clock = time.monotonic()
            return
        super()._consume()

    def abort(self) -> None:
        self.played_at_abort = self.played
        super().abort()


def test_a_clip_on_a_stream_that_starts_late_is_heard_to_its_end(player_of):
    """Before, the end was reckoned from the clock (start + duration + latency): the stream was aborted with the
    clip's last LATE_S still in it, never heard. (On PulseAudio's null sink the old player lost the last 20-30 ms
    of every clip: tests/benchmarks/bench_heard_clips.py.)"""
    streams = Streams(LateStream)
    player = player_of(streams)
    samples, wav = tone(0.4)
    request = player.play(wav, "clip 3")
    time.sleep(LateStream.LATE_S / 2)
    assert player.state.playing and player.state.position_s == 0.0  # the playhead waits for the sound
    wait_for(lambda: player.state.request == request and not player.state.playing)
    [stream] = streams.made
    assert player.state.error is None and stream.closed
    assert stream.played_at_abort >= len(samples) + TAIL_S * RATE  # the clip, then a tail of silence, heard
    assert_clip_then_silence(stream, samples)


def test_an_output_that_takes_nothing_for_long_is_reported(player_of, monkeypatch):
    monkeypatch.setattr("spokenbench.core.audio.playback.STALL_S", 0.3)
    streams = Streams(StalledStream)
    player = player_of(streams)
    _samples, wav = tone(0.1)
    request = player.play(wav, "clip 9")
    wait_for(lambda: player.state.request == request and player.state.error is not None)
    assert (
        player.state.error == "Playback of clip 9 stopped: the sound output is not playing (it took no audio for 0.3 s)"
    )
    assert player.state.output_failed and streams.made[0].closed


def test_a_player_held_by_a_sound_server_that_does_not_answer_never_holds_its_caller(player_of, monkeypatch):
    """sounddevice's import lists the devices through the sound server; a hung one (PulseAudio stopped) held it
    for more than 100 s, measured. Before, ClipPlayer() imported it on the caller's thread (the UI's): the app
    never showed its window. Now the playback thread imports it, and says how long it has not answered."""
    import importlib.abc
    import sys

    from spokenbench.core.audio import playback

    server_answers = threading.Event()

    class HungImport(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "sounddevice":
                server_answers.wait(10)
            return None  # then the normal finders

    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(sys, "meta_path", [HungImport(), *sys.meta_path])
    monkeypatch.setattr(playback, "_exit_hook", [])
    started = time.perf_counter()
    player = player_of(Streams())
    _samples, wav = tone(0.1)
    request = player.play(wav, "clip 2")
    assert time.perf_counter() - started < 0.5  # made and posted to without waiting for the import
    time.sleep(0.3)
    assert player.state.request < request and player.unanswered_s() >= 0.25
    server_answers.set()
    wait_for(lambda: player.state.request == request, timeout=10)
    assert player.unanswered_s() < 0.1  # answered; the clip fed every POLL_S
    wait_for(lambda: not player.state.playing)
    assert player.state.error is None


class HungMidClip(FakeOutputStream):
    """A sound server that stops answering 0.2 s into a clip: the stream takes nothing more, and closing it waits
    until the server goes on (as PulseAudio's ALSA plugin does with the server stopped)."""

    server_goes_on = threading.Event()  # one server for every stream of the test

    @property
    def write_available(self) -> int:
        hung = not self.server_goes_on.is_set() and time.monotonic() - self.started_at > 0.2
        return 0 if self.active and hung else super().write_available

    def start(self) -> None:
        super().start()
        self.started_at = time.monotonic()

    def close(self) -> None:
        self.server_goes_on.wait(10)
        super().close()


def test_a_sound_server_that_hangs_mid_clip_is_said_not_playing_and_then_not_answering(player_of, monkeypatch):
    """Before, the clip stayed "playing" where it stopped for as long as the server hung (measured: PulseAudio
    stopped 0.3 s into a clip, still "playing" at 0.3 s 11 s later)."""
    monkeypatch.setattr("spokenbench.core.audio.playback.STALL_S", 0.5)
    monkeypatch.setattr(HungMidClip, "server_goes_on", threading.Event())
    player = player_of(Streams(HungMidClip))
    _samples, wav = tone(3.0)
    request = player.play(wav, "clip 5")
    wait_for(lambda: player.state.request == request and player.state.error is not None)
    assert player.state.error.startswith("Playback of clip 5 stopped: the sound output is not playing")
    later = player.play(wav, "clip 6")  # the thread is held closing the stream: the next play is not taken up
    time.sleep(0.7)
    assert player.state.request < later and player.unanswered_s() > 0.5
    HungMidClip.server_goes_on.set()
    wait_for(lambda: player.state.request == later and player.state.playing)


def test_at_exit_a_thread_held_in_a_sounddevice_call_keeps_portaudio_from_being_terminated(monkeypatch):
    """sounddevice's exit hook (Pa_Terminate) waits on the server a held call waits on: measured, the app never
    ended after Ctrl+Q with PulseAudio stopped mid-clip. A thread inside sounddevice at exit unregisters the hook;
    none inside leaves it."""
    import sys
    import types

    from spokenbench.core.audio import open_streams

    held = threading.Event()
    source = "def abort(wait):\n    wait.wait(10)\n"
    fake = types.ModuleType("sounddevice")
    fake.__file__ = "/fake/site-packages/sounddevice.py"
    exec(compile(source, fake.__file__, "exec"), fake.__dict__)  # a function whose frames name sounddevice.py
    fake._exit_handler = lambda: None
    monkeypatch.setitem(sys.modules, "sounddevice", fake)
    unregistered = []
    monkeypatch.setattr(open_streams.atexit, "unregister", unregistered.append)
    open_streams._leave_held_portaudio()
    assert unregistered == []  # nothing held: PortAudio terminated as usual
    caller = threading.Thread(target=fake.abort, args=(held,), daemon=True)
    caller.start()
    time.sleep(0.1)
    open_streams._leave_held_portaudio()
    assert unregistered == [fake._exit_handler]
    held.set()
    caller.join(2)


class EmptyAtFirst(LateStream):
    """A 1 s buffer that reads 0 for its first 30 ms (as the review's probe found a stream may, before any write)."""

    LATE_S = 0.03

    def __init__(self, device, rate):
        super().__init__(device, rate, latency=1.0)

    @property
    def write_available(self) -> int:
        return 0 if time.monotonic() - self.started_at < self.LATE_S else super().write_available


def test_a_stream_that_reads_empty_before_any_write_still_plays_the_clip_to_its_end(player_of):
    """Before the review's fix the first 0 set the buffer's bound at 0 frames: the clip "ended" 0.04 s after the
    play with all of it still in the buffer, never heard."""
    streams = Streams(EmptyAtFirst)
    player = player_of(streams)
    samples, wav = tone(0.5)
    request = player.play(wav, "clip 4")
    wait_for(lambda: player.state.request == request and not player.state.playing, timeout=5)
    assert player.state.error is None
    assert streams.made[0].played_at_abort >= len(samples)  # the whole clip left the buffer before the abort
