"""Clip playback that cannot block or deadlock its caller: a `ClipPlayer` owns one thread of its own, and the only
thing any other thread does is post a command (`play`, `stop`, `close`) to a queue that never blocks, and read
`state`, a frozen value the playback thread replaces.

Why it cannot deadlock (issue 22: Qt Multimedia's audio thread waited for the GIL held by the UI thread, which
waited in `QMediaPlayer.stop` for that audio thread):
- no thread outside Python ever runs Python code: the stream is PortAudio's blocking API (`sounddevice`'s
  `OutputStream.write`), fed by the playback thread, with no Python callback for an audio thread to call;
- sounddevice calls PortAudio through cffi, which releases the GIL for every C call (open, write, abort, stop,
  close), so the playback thread never holds the GIL while PortAudio waits;
- the playback thread writes only what the stream can take now (`write_available`), so even a stalled device
  never blocks it, and it waits for work on its own queue, not on the device;
- callers never wait: `queue.SimpleQueue.put` does not block, and `state` is read without a lock.

Clips arrive encoded (WAV/FLAC bytes, as stored) and are decoded on the playback thread; a speed change is
rendered before (`widgets.waveform.prepare_clip`), so playback is only copying samples. Commands that pile up
while the thread is busy are coalesced: only the newest play or stop is carried out."""

from __future__ import annotations

import atexit
import itertools
import queue
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spokenbench.core.audio.io import decode_audio
from spokenbench.core.audio.open_streams import count_open_stream, import_sounddevice

LATENCY_S = 0.1  # asked of PortAudio: enough to ride over a busy UI thread holding the GIL for a moment
POLL_S = 0.01  # how often the playback thread feeds the stream while a clip plays
TAIL_S = 0.3  # silence played after a clip, past its stream's buffer, before the stream is closed: what a sound
# server or a headset still holds downstream is heard, not dropped with the stream
STALL_S = 5.0  # an output that takes no audio for this long is reported stopped (a sound server that starts a
# stream only once its own latency is buffered takes up to ~2 s; a hung one never does)
DECODED_KEPT = 8  # decoded clips kept, so a replay or a speed toggle back starts at once
CLOSE_WAIT_S = 1.0  # at interpreter exit, before PortAudio is terminated


# PortAudio's errors for a format a device does not take (paInvalidChannelCount, paInvalidSampleRate,
# paSampleFormatNotSupported): playing again will not help, another output will
FORMAT_ERROR_CODES = frozenset({-9998, -9997, -9994})


def _portaudio_code(error: BaseException) -> int | None:
    """The PortAudio error code of a sounddevice.PortAudioError (its second argument), None for other errors."""
    args = getattr(error, "args", ())
    return args[1] if len(args) > 1 and isinstance(args[1], int) else None


@dataclass(frozen=True)
class PlaybackState:
    """What the player is doing, for a screen's playhead: read it from a timer, it never blocks."""

    request: int = 0  # the `play` call it describes (0: none yet)
    position_s: float = 0.0
    duration_s: float = 0.0
    playing: bool = False
    error: str | None = None  # why the request could not be played
    output_failed: bool = False  # the error is the sound output's, not the clip's: playing again works once it is back
    detail: str | None = None  # PortAudio's own words, ending `error` in brackets

    @property
    def short_error(self) -> str | None:
        """`error` without PortAudio's words, for a line that has room for one sentence (a status bar)."""
        if self.error and self.detail:
            return self.error.removesuffix(f" ({self.detail})")
        return self.error


@dataclass(frozen=True)
class OutputDevice:
    index: int | None
    name: str
    is_default: bool = False


def output_devices() -> list[OutputDevice]:
    """The output devices PortAudio sees, the default first; empty without PortAudio or devices."""
    try:
        sd = import_sounddevice()
        devices = sd.query_devices()
        default_output = sd.default.device[1] if sd.default.device is not None else -1
    except Exception:  # noqa: BLE001 - PortAudio missing or failing: no device
        return []
    found = [
        OutputDevice(index, str(info["name"]), index == default_output)
        for index, info in enumerate(devices)
        if int(info.get("max_output_channels", 0)) > 0
    ]
    return sorted(found, key=lambda device: not device.is_default)


def sounddevice_output_stream(device: str | None, rate: int):
    """A started-later PortAudio output stream (mono float32) on the device named, else the default one."""
    sd = import_sounddevice()
    index = next((d.index for d in output_devices() if device and d.name == device), None)
    return sd.OutputStream(samplerate=rate, channels=1, dtype="float32", device=index, latency=LATENCY_S)


@dataclass
class _Playing:
    """A clip on its stream, followed by what the stream says it took, never by the clock: a stream may start
    sounding a second or more after it was started (a sound server filling its own latency first, a headset
    waking up), and what it holds when it is aborted is never heard."""

    request: int
    what: str  # the clip, as messages name it
    samples: np.ndarray
    rate: int
    written: int = 0  # frames written: the clip's, then the silence after it
    buffer_bound: int | None = None  # frames written when the stream first read full: at least what it holds
    taken_at: float = 0.0  # when the stream last took frames (or started)

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.rate

    @property
    def taken(self) -> int:
        """Frames the stream has surely passed on (a lower bound): what was written less what its buffer can
        hold. Until its buffer was first seen full, all of it may still be there."""
        return 0 if self.buffer_bound is None else max(0, self.written - self.buffer_bound)

    @property
    def heard(self) -> bool:
        """The clip and TAIL_S of silence, plus one more buffer of it for what lies past the stream (a sound
        server's own buffer is as long as the stream's), have been passed on."""
        tail = (self.buffer_bound or 0) + int(TAIL_S * self.rate)
        silence = self.written - len(self.samples)  # a stream that never reads full (unclocked) ends there
        return self.taken >= len(self.samples) + tail or silence >= STALL_S * self.rate

    def position_s(self) -> float:
        return min(self.taken / self.rate, self.duration_s)


_players: weakref.WeakSet[ClipPlayer] = weakref.WeakSet()


class ClipPlayer:
    """Plays one clip at a time on its own thread. `stream_factory(device, rate)` builds something shaped like
    `sounddevice.OutputStream` (tests pass a fake); `device` of `play` is a PortAudio device name, None or ""
    for the default."""

    def __init__(self, stream_factory: Callable | None = None):
        self._stream_factory = stream_factory or sounddevice_output_stream
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._requests = itertools.count(1)
        self._decoded: OrderedDict[bytes | str, tuple[np.ndarray, int]] = OrderedDict()
        self._stream = None
        self._stream_key: tuple[str | None, int] | None = None
        self.streams_opened = 0
        self.state = PlaybackState()
        self._posted_lock = threading.Lock()  # held for an assignment at a time, never across a device call
        self._unanswered_since: float | None = None  # when the oldest command the thread has not answered was posted
        self._last_posted = 0
        self._fed_at = time.monotonic()  # when the thread last came back from feeding a stream
        self._thread = threading.Thread(target=self._run, name="clip-playback", daemon=True)
        _players.add(self)
        self._thread.start()

    # -- any thread: post and return --------------------------------------------------------------------

    def play(self, audio: bytes | Path, what: str = "clip", device: str | None = None) -> int:
        """Play encoded audio (bytes, or a file read on the playback thread) from its start, replacing whatever
        plays. Returns the request's number, which `state.request` shows once it plays."""
        request = next(self._requests)
        self._post(("play", request, audio, what, device or None))
        return request

    def stop(self) -> None:
        self._post(("stop",))

    def _post(self, command: tuple) -> None:
        with self._posted_lock:  # numbered and queued in one step: SimpleQueue.put never blocks
            self._last_posted += 1
            if self._unanswered_since is None:
                self._unanswered_since = time.monotonic()
            self._commands.put((self._last_posted, command))

    def unanswered_s(self) -> float:
        """How long the playback thread has left the commands posted to it unanswered, or a clip it plays unfed
        (0: neither). A thread held in a call to a sound server that does not answer (PortAudio's first listing of
        the devices, a stream's opening, even asking a stream for room once the server hung mid-clip) answers
        nothing: a screen says so instead of showing a clip that plays, or waiting for one, for good."""
        now, since = time.monotonic(), self._unanswered_since
        posted = 0.0 if since is None else now - since
        unfed = now - self._fed_at if self.state.playing else 0.0  # fed every POLL_S while a clip plays
        return max(0.0, posted, unfed)

    def close(self) -> None:
        """Stop and end the thread (without waiting for it)."""
        self._commands.put((None, ("quit",)))  # not counted as unanswered

    def join(self, timeout: float) -> bool:
        """Wait for the thread to end after `close` (tests and interpreter exit only); whether it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- the playback thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        playing: _Playing | None = None
        _register_exit_hook()  # imports sounddevice: here, never on a caller's thread (see unanswered_s)
        try:
            while True:
                try:
                    wait = None if playing is None else POLL_S
                    posted = [self._commands.get(timeout=wait)]
                except queue.Empty:
                    posted = []
                while True:
                    try:
                        posted.append(self._commands.get_nowait())
                    except queue.Empty:
                        break
                commands = [command for _number, command in posted]
                if any(command[0] == "quit" for command in commands):
                    return
                last = commands[-1] if commands else None
                if last is not None:
                    playing = self._start(last) if last[0] == "play" else self._halt(playing)
                    self._answered(posted[-1][0])
                if playing is not None:
                    playing = self._feed(playing)
                    self._fed_at = time.monotonic()
        finally:
            self._close_stream()
            self.state = PlaybackState(self.state.request, self.state.position_s, self.state.duration_s, False)

    def _answered(self, number: int) -> None:
        with self._posted_lock:
            if number == self._last_posted:  # else newer commands wait in the queue, posted since
                self._unanswered_since = None

    def _start(self, command: tuple) -> _Playing | None:
        _kind, request, audio, what, device = command
        try:
            samples, rate = self._decode(audio, what)
        except Exception as error:  # noqa: BLE001 - a damaged or unreadable clip: say so, keep running
            self.state = PlaybackState(request, error=f"Cannot play {what}: {error}")
            return None
        try:
            key = (device, rate)
            if self._stream is not None and self._stream_key == key:
                self._stream.abort()  # drop what the last clip left buffered; the stream is reused
            else:
                self._close_stream()
                count_open_stream(+1)  # the device list is not renewed under an open stream
                try:
                    self._stream = self._stream_factory(device, rate)
                except BaseException:
                    count_open_stream(-1)
                    raise
                self._stream_key = key
                self.streams_opened += 1
            self._stream.start()
        except Exception as error:  # noqa: BLE001 - no sound server, a device gone: say so, keep running
            self._close_stream()
            if _portaudio_code(error) in FORMAT_ERROR_CODES:  # the device is there but refuses the clip's format
                message = (
                    f"Cannot play {what}: the sound output does not take its audio ({rate} Hz, mono: {error}); choose "
                    "another output in Settings (the system's default output converts)"
                )
                self.state = PlaybackState(request, error=message)
            else:
                message = f"Cannot play {what}: the sound output is not available ({error})"
                self.state = PlaybackState(request, error=message, output_failed=True, detail=str(error))
            return None
        playing = _Playing(request, what, samples, rate, taken_at=time.monotonic())
        self._fed_at = playing.taken_at
        self.state = PlaybackState(request, 0.0, playing.duration_s, True)
        return playing

    def _halt(self, playing: _Playing | None) -> None:
        if playing is not None:
            self.state = PlaybackState(playing.request, playing.position_s(), playing.duration_s)
        if self._stream is not None:
            try:
                self._stream.abort()
            except Exception:  # noqa: BLE001 - a stream already broken is closed below anyway
                self._close_stream()
        return None

    def _feed(self, playing: _Playing) -> _Playing | None:
        """Write what the stream can take now (never waiting on the device): the clip, then silence until the
        stream has passed the clip on and a tail after it; only then is the stream closed."""
        now = time.monotonic()
        try:
            for _refill in range(4):  # write, then read again: a stream reads 0 once its buffer is full
                room = self._stream.write_available
                if not room:
                    if playing.buffer_bound is None and playing.written:  # full of what was written (a stream
                        playing.buffer_bound = playing.written  # that reads 0 before any write is not full)
                    break
                playing.taken_at = now
                chunk = playing.samples[playing.written : playing.written + room]
                if len(chunk) < room:  # the clip is all written: silence carries it through the buffer
                    chunk = np.concatenate([chunk, np.zeros(room - len(chunk), dtype=np.float32)])
                self._stream.write(chunk)
                playing.written += room
            if playing.heard:
                self._stream.abort()  # only silence is left in it; abort, unlike stop, never waits on the device
                self._close_stream()  # frees the device between clips
                self.state = PlaybackState(playing.request, playing.duration_s, playing.duration_s)
                return None
            if now - playing.taken_at > STALL_S:  # a hung sound server: say so rather than "playing" for good
                detail = f"it took no audio for {STALL_S:g} s"
                message = f"Playback of {playing.what} stopped: the sound output is not playing ({detail})"
                self.state = PlaybackState(playing.request, error=message, output_failed=True, detail=detail)
                self._close_stream()  # said first: closing may wait on that server as long as it hangs
                return None
        except Exception as error:  # noqa: BLE001 - the device went away mid-clip
            self._close_stream()
            message = f"Playback of {playing.what} stopped: the sound output went away ({error})"
            self.state = PlaybackState(playing.request, error=message, output_failed=True, detail=str(error))
            return None
        self.state = PlaybackState(playing.request, playing.position_s(), playing.duration_s, True)
        return playing

    def _decode(self, audio: bytes | Path, what: str) -> tuple[np.ndarray, int]:
        key = str(audio) if isinstance(audio, Path) else audio
        if key in self._decoded:
            self._decoded.move_to_end(key)
            return self._decoded[key]
        data = audio.read_bytes() if isinstance(audio, Path) else audio
        decoded = decode_audio(data, what, expected_channels=None)  # mono float32, channels mixed down
        found = decoded.samples, decoded.rate
        self._decoded[key] = found
        while len(self._decoded) > DECODED_KEPT:
            self._decoded.popitem(last=False)
        return found

    def _close_stream(self) -> None:
        stream, self._stream, self._stream_key = self._stream, None, None
        if stream is None:
            return
        try:
            stream.close()  # discards anything buffered
        except Exception:  # noqa: BLE001 - closing a broken stream
            pass
        finally:
            count_open_stream(-1)


_exit_hook: list[bool] = []


_exit_hook_lock = threading.Lock()


def _register_exit_hook() -> None:
    """Registered after sounddevice's own exit hook (which terminates PortAudio), so it runs before it: exit
    hooks run last registered first. Called on a playback thread: sounddevice's import can hang."""
    with _exit_hook_lock:
        _register_exit_hook_once()


def _register_exit_hook_once() -> None:
    if _exit_hook:
        return
    try:
        import_sounddevice()  # its exit hook, then the guard's
    except Exception:  # noqa: BLE001 - no PortAudio: nothing to order against
        pass
    atexit.register(_close_players)  # last: runs first, then the guard, then sounddevice's hook
    _exit_hook.append(True)


def _close_players() -> None:
    """No stream is written while PortAudio goes away at exit; a player held in a call to a sound server that
    does not answer is waited for CLOSE_WAIT_S, then left (open_streams.import_sounddevice)."""
    players = list(_players)
    for player in players:
        player.close()
    for player in players:
        player.join(CLOSE_WAIT_S)


class FakeOutputStream:
    """Shaped like `sounddevice.OutputStream` for tests and for machines without a device: it takes samples at
    `rate` per second of the monotonic clock into a buffer of `latency` seconds, and keeps what was written."""

    def __init__(self, device: str | None, rate: int, latency: float = LATENCY_S):
        self.device, self.rate, self.latency = device, rate, latency
        self.capacity = max(1, int(rate * latency))
        self.buffered = 0
        self.played = 0  # frames taken out of the buffer: what a listener heard
        self.written: list[np.ndarray] = []
        self.active = self.closed = False
        self._clock = time.monotonic()

    def _consume(self) -> None:
        now = time.monotonic()
        if self.active:
            taken = min(self.buffered, int((now - self._clock) * self.rate))
            self.buffered -= taken
            self.played += taken
        self._clock = now

    @property
    def write_available(self) -> int:
        self._consume()
        return self.capacity - self.buffered

    def write(self, data: np.ndarray) -> bool:
        self._consume()
        if len(data) > self.capacity - self.buffered:
            raise AssertionError("wrote more than write_available: a real stream would have blocked")
        self.buffered += len(data)
        self.written.append(np.array(data))
        return False

    def start(self) -> None:
        self._consume()
        self.active = True

    def stop(self) -> None:
        self.active = False
        self.buffered = 0

    def abort(self) -> None:
        self.active = False
        self.buffered = 0

    def close(self) -> None:
        self.active = False
        self.closed = True
