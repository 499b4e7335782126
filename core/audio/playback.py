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
from spokenbench.core.audio.open_streams import count_open_stream

LATENCY_S = 0.1  # asked of PortAudio: enough to ride over a busy UI thread holding the GIL for a moment
POLL_S = 0.01  # how often the playback thread feeds the stream while a clip plays
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
        import sounddevice as sd

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
    import sounddevice as sd

    index = next((d.index for d in output_devices() if device and d.name == device), None)
    return sd.OutputStream(samplerate=rate, channels=1, dtype="float32", device=index, latency=LATENCY_S)


@dataclass
class _Playing:
    request: int
    what: str  # the clip, as messages name it
    samples: np.ndarray
    rate: int
    written: int = 0
    started_at: float = 0.0
    drained_at: float | None = None  # when the last sample written will have been heard

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.rate

    def position_s(self, now: float) -> float:
        return max(0.0, min(now - self.started_at, self.written / self.rate, self.duration_s))


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
        self._thread = threading.Thread(target=self._run, name="clip-playback", daemon=True)
        _players.add(self)
        _register_exit_hook()
        self._thread.start()

    # -- any thread: post and return --------------------------------------------------------------------

    def play(self, audio: bytes | Path, what: str = "clip", device: str | None = None) -> int:
        """Play encoded audio (bytes, or a file read on the playback thread) from its start, replacing whatever
        plays. Returns the request's number, which `state.request` shows once it plays."""
        request = next(self._requests)
        self._commands.put(("play", request, audio, what, device or None))
        return request

    def stop(self) -> None:
        self._commands.put(("stop",))

    def close(self) -> None:
        """Stop and end the thread (without waiting for it)."""
        self._commands.put(("quit",))

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
        try:
            while True:
                try:
                    wait = None if playing is None else POLL_S
                    commands = [self._commands.get(timeout=wait)]
                except queue.Empty:
                    commands = []
                while True:
                    try:
                        commands.append(self._commands.get_nowait())
                    except queue.Empty:
                        break
                if any(command[0] == "quit" for command in commands):
                    return
                last = commands[-1] if commands else None
                if last is not None:
                    playing = self._start(last) if last[0] == "play" else self._halt(playing)
                if playing is not None:
                    playing = self._feed(playing)
        finally:
            self._close_stream()
            self.state = PlaybackState(self.state.request, self.state.position_s, self.state.duration_s, False)

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
        playing = _Playing(request, what, samples, rate, started_at=time.monotonic())
        self.state = PlaybackState(request, 0.0, playing.duration_s, True)
        return playing

    def _halt(self, playing: _Playing | None) -> None:
        if playing is not None:
            self.state = PlaybackState(playing.request, playing.position_s(time.monotonic()), playing.duration_s)
        if self._stream is not None:
            try:
                self._stream.abort()
            except Exception:  # noqa: BLE001 - a stream already broken is closed below anyway
                self._close_stream()
        return None

    def _feed(self, playing: _Playing) -> _Playing | None:
        """Write what the stream can take now (never waiting on the device); close the clip once it is heard."""
        now = time.monotonic()
        try:
            if playing.drained_at is None:
                room = self._stream.write_available
                chunk = playing.samples[playing.written : playing.written + room]
                if len(chunk):
                    self._stream.write(chunk)
                    playing.written += len(chunk)
                if playing.written >= len(playing.samples):
                    buffered_s = max(LATENCY_S, float(getattr(self._stream, "latency", LATENCY_S) or 0.0))
                    playing.drained_at = now + max(0.0, playing.duration_s - (now - playing.started_at)) + buffered_s
            elif now >= playing.drained_at:
                self._stream.abort()  # all heard by now; abort, unlike stop, never waits on a stalled device
                self._close_stream()  # frees the device between clips
                self.state = PlaybackState(playing.request, playing.duration_s, playing.duration_s)
                return None
        except Exception as error:  # noqa: BLE001 - the device went away mid-clip
            self._close_stream()
            message = f"Playback of {playing.what} stopped: the sound output went away ({error})"
            self.state = PlaybackState(playing.request, error=message, output_failed=True, detail=str(error))
            return None
        self.state = PlaybackState(playing.request, playing.position_s(now), playing.duration_s, True)
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


def _register_exit_hook() -> None:
    """Registered after sounddevice's own exit hook (which terminates PortAudio), so it runs before it: exit
    hooks run last registered first."""
    if _exit_hook:
        return
    try:
        import sounddevice  # noqa: F401  (registers its hook at import)
    except Exception:  # noqa: BLE001 - no PortAudio: nothing to order against
        pass
    atexit.register(_close_players)
    _exit_hook.append(True)


def _close_players() -> None:
    """No stream is written while PortAudio goes away at exit."""
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
        self.written: list[np.ndarray] = []
        self.active = self.closed = False
        self._clock = time.monotonic()

    def _consume(self) -> None:
        now = time.monotonic()
        if self.active:
            self.buffered = max(0, self.buffered - int((now - self._clock) * self.rate))
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
