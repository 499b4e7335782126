"""Recording from an input device through `sounddevice.InputStream`'s callback API, behind a small seam so tests
and benchmarks use `FakeInputStream` instead.

The stream's callback runs on PortAudio's audio thread: it copies the block, counts blocks the device dropped
(`status.input_overflow`), notes when blocks come (the first, the last, the longest wait between two), when the
first sample that is not exactly zero came and since when they are exact zeros, and puts the block's level (RMS
and peak dBFS) on a bounded, thread-safe deque that the screen's timer drains for the level meter; the screen reads
`input_state()` from those plain fields to say whether the input is up (it hears: an input waking up may send
exact zeros first), silent or stopped. Nothing in the callback waits, allocates much or touches the disk.

sounddevice is imported only when a device is listed or a stream opened: where PortAudio is missing its import
raises OSError, which becomes a `RecordingUnavailable` naming what to install."""

from __future__ import annotations

import atexit
import collections
import math
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from spokenbench.core.audio import open_streams
from spokenbench.core.audio.open_streams import count_open_stream
from spokenbench.core.foundation.errors import MissingDependencyError, SpokenBenchError
from spokenbench.core.recording.quality import DIGITAL_SILENCE_S, InputBreak, waking_zeros

DEFAULT_RATE = 48_000
DEFAULT_BLOCK = 1_024  # 21 ms at 48 kHz: about 47 level readings a second
LEVEL_QUEUE = 512  # level readings kept for the meter (about 10 s); older ones are dropped
# No block for this long while recording: the input stopped (a microphone pulled out, the sound server gone).
# Blocks come every ~21 ms; PortAudio's buffers and a busy machine may hold one back a few hundred ms, not 1 s.
INPUT_STALL_S = 1.0
# A stream's stop answers in milliseconds; one a sound server that does not answer holds is left this long, then
# the take is kept without it (the stream closes on its own thread once the server answers).
STOP_WAIT_S = 2.0
SPOOL_INTERVAL_S = 0.25  # how often the take's new blocks go to its spool file (core/recording/spool.py)
PORTAUDIO_HELP = (
    "install PortAudio (Debian/Ubuntu: apt-get install libportaudio2; Fedora: dnf install portaudio; "
    "macOS: brew install portaudio) and restart SpokenBench Studio"
)


NO_INPUT_DEVICE = (
    "No audio input device was found: connect a microphone (and check that the system's sound settings and "
    "PortAudio see it), then press Rescan devices on the Speakers page."
)


class RecordingUnavailable(MissingDependencyError):
    """This machine cannot record: PortAudio or sounddevice is missing, or there is no input device."""


def import_sounddevice():
    """The sounddevice module, or a RecordingUnavailable saying what to install."""
    try:
        sounddevice = open_streams.import_sounddevice()
    except OSError as error:  # the module loads libportaudio at import
        raise RecordingUnavailable(
            f"Recording needs the PortAudio library, which was not found ({error}): {PORTAUDIO_HELP}"
        ) from None
    except ImportError as error:
        raise RecordingUnavailable(
            f"Recording needs the Python package sounddevice ({error}): pip install sounddevice, and {PORTAUDIO_HELP}"
        ) from None
    return sounddevice


@dataclass(frozen=True)
class InputDevice:
    index: int | None  # PortAudio's device index; None for a fake device
    name: str
    channels: int
    default_rate: int
    is_default: bool = False

    @property
    def label(self) -> str:
        return f"{self.name}{' (default)' if self.is_default else ''}"


def input_devices() -> list[InputDevice]:
    """The input devices PortAudio sees now, the default first (PortAudio is asked again on every call after the
    first, unless a recording is open). Raises RecordingUnavailable without PortAudio. Can take a moment: call it
    off the UI thread."""
    loaded_before = "sounddevice" in sys.modules  # else importing it just listed the devices
    sd = import_sounddevice()
    try:
        with open_streams.lock:  # one scan at a time (PortAudio is not thread-safe), none under an open stream
            if loaded_before and not open_streams.count:
                try:
                    sd._terminate()
                finally:
                    sd._initialize()
            devices = sd.query_devices()
            default_input = sd.default.device[0] if sd.default.device is not None else -1
    except Exception as error:  # PortAudio itself failing (no sound server, …)
        raise RecordingUnavailable(f"PortAudio could not list the audio devices ({error})") from None
    found = [
        InputDevice(
            index,
            str(info["name"]),
            int(info["max_input_channels"]),
            int(info["default_samplerate"]),
            index == default_input,
        )
        for index, info in enumerate(devices)
        if int(info.get("max_input_channels", 0)) > 0
    ]
    return sorted(found, key=lambda device: not device.is_default)


def recording_availability(
    lister: Callable[[], list[InputDevice]] = input_devices,
) -> tuple[list[InputDevice], str | None]:
    """(devices, None) when recording works here, else ([], what is missing and what to do)."""
    try:
        devices = lister()
    except RecordingUnavailable as error:
        return [], str(error)
    if not devices:
        return [], NO_INPUT_DEVICE
    return devices, None


class InputState:
    """What the input is doing during a take (`Recorder.input_state`), for the screen and its heartbeat."""

    # The stream has started, but the input does not hear yet: no block has come, or only blocks of exact zeros for
    # less than DIGITAL_SILENCE_S (an input waking up: WASAPI's and ASIO's first buffers, a USB microphone leaving
    # its power saving, a Bluetooth headset changing profile send zeros before the first sound).
    WAITING = "waiting"
    SOUND = "sound"  # the input hears: a sample that is not exactly zero has come (a microphone's noise floor)
    SILENT = "silent"  # blocks of exact zeros only, for DIGITAL_SILENCE_S (muted, or a noise gate's pause)
    STALLED = "stalled"  # no block for INPUT_STALL_S after the first (the input stopped)


@dataclass(frozen=True)
class Level:
    rms_dbfs: float
    peak_dbfs: float
    at: float  # time.monotonic() when the block arrived


def block_level(block: np.ndarray) -> tuple[float, float]:
    """(RMS dBFS, peak dBFS) of one block; -120 for digital silence. A full-scale square wave is 0 dBFS."""
    if block.size == 0:
        return -120.0, -120.0
    power = float(np.dot(block, block)) / block.size
    peak = float(np.max(np.abs(block)))
    return (10 * math.log10(power) if power > 1e-12 else -120.0), (20 * math.log10(peak) if peak > 1e-6 else -120.0)


# A stream factory builds something shaped like sounddevice.InputStream from the same keyword arguments.
StreamFactory = Callable[..., object]


def sounddevice_stream(**kwargs):
    return import_sounddevice().InputStream(**kwargs)


class Recorder:
    """One take at a time from one input device. `start()` opens and starts the stream; the callback collects
    blocks; `stop()` stops the stream and returns the mono float32 samples. `levels` is drained by the meter."""

    def __init__(
        self,
        device: InputDevice | None = None,
        rate: int | None = None,
        blocksize: int = DEFAULT_BLOCK,
        stream_factory: StreamFactory | None = None,
    ):
        self.device = device
        self.rate = int(rate or (device.default_rate if device else DEFAULT_RATE))
        self.channels = 1
        self.blocksize = blocksize
        self.stream_factory = stream_factory or sounddevice_stream
        self.levels: collections.deque[Level] = collections.deque(maxlen=LEVEL_QUEUE)
        self.blocks = 0
        self.dropped_blocks = 0
        self.frames = 0  # samples received in this take
        self.first_block_at: float | None = None  # time.monotonic() of the take's first block: the stream is up
        self.heard_at: float | None = None  # of its first sample that is not exactly zero: the input hears
        self.lead_frames = 0  # the zeros the input sent while waking up (quality.waking_zeros): not the take's
        self.last_block_at: float | None = None
        self.longest_gap: tuple[float, float] | None = None  # (seconds into the take, seconds) of the longest wait
        self.silent_since: float | None = None  # when the current run of blocks of exact zeros began
        self.stopped_at: float | None = None
        self.stop_held = False  # the last stop was not answered within its wait (a hung sound server)
        self.closing: StreamCloser | None = None  # the thread that stops and closes the last take's stream
        self.spool = None  # the take's file on disk as it is recorded (a spool.TakeSpool), when one could be made
        self.spool_problem: str | None = None  # why the take is not (or no longer) kept on disk as it comes
        self.discarding = False  # thrown away (`abort`): its spool goes, even at the exit
        self._spooled = 0  # blocks of `_chunks` written to the spool
        self._spool_thread: threading.Thread | None = None
        self._spool_stop = threading.Event()
        self._chunks: list[np.ndarray] = []
        self._stream = None
        self._recording = False
        self._lock = threading.Lock()
        # the spool's last writes and sync at the stop, and its release, one at a time: released meanwhile (a page
        # closing as R stopped the take), the sync found it gone ("'NoneType' object has no attribute 'sync'")
        self._spool_lock = threading.Lock()

    @property
    def recording(self) -> bool:
        return self._recording

    @property
    def stream_open(self) -> bool:
        """Whether the stream's start has returned (a start the sound server holds has not)."""
        return self._stream is not None

    @property
    def device_name(self) -> str | None:
        return self.device.name if self.device else None

    def start(self, spool_opener: Callable[[int], object] | None = None) -> None:
        """Open and start the stream. `spool_opener(rate)`: the take's file on disk (spool.TakeSpool), written
        as the take comes in by a thread of its own; a take is recorded without it when it cannot be made."""
        if self._recording:
            raise SpokenBenchError("already recording")
        self._chunks = []
        self._spooled = 0
        self.spool, self.spool_problem = None, None
        self.blocks = self.dropped_blocks = self.frames = 0
        self.first_block_at = self.last_block_at = self.silent_since = self.stopped_at = self.longest_gap = None
        self.heard_at, self.lead_frames = None, 0
        self.levels.clear()
        count_open_stream(+1)  # before opening: the device list is not renewed under an opening stream
        try:
            stream = self.stream_factory(
                samplerate=self.rate,
                blocksize=self.blocksize,
                channels=self.channels,
                dtype="float32",
                device=self.device.index if self.device else None,
                callback=self._callback,
            )
            _register_exit_hook()  # after the factory imported sounddevice: its exit hook runs after this one
            _recorders.add(self)
            self._recording = True
            stream.start()
        except SpokenBenchError:
            self._recording = False
            count_open_stream(-1)
            raise
        except Exception as error:  # PortAudio refusing the device or rate
            self._recording = False
            count_open_stream(-1)
            name = self.device.name if self.device else "the default input device"
            raise SpokenBenchError(f"cannot record from {name} at {self.rate} Hz: {error}") from None
        with self._lock:
            if not self._recording or self.discarding:  # stopped or thrown away while it started (a held start)
                self._recording = False
                closing = StreamCloser(stream)
                with _closing_lock:
                    _closing[closing] = time.monotonic()
                closing.start()
                return
            self._stream = stream
            if spool_opener is not None and not self.discarding:
                self._start_spool(spool_opener)

    def _start_spool(self, spool_opener: Callable[[int], object]) -> None:
        try:
            self.spool = spool_opener(self.rate)
        except OSError as error:  # a read-only or full project folder: the take is in memory only, as before
            self.spool_problem = f"the take is not kept on disk as it is recorded ({error.strerror or error})"
            return
        self._spool_stop.clear()
        self._spool_thread = threading.Thread(target=self._spool_loop, name="recording-spool", daemon=True)
        self._spool_thread.start()

    def _spool_loop(self) -> None:
        while not self._spool_stop.wait(SPOOL_INTERVAL_S):
            self._spool_new_blocks()

    def _spool_new_blocks(self) -> None:
        """Write the blocks come since the last call to the spool (the callback only appends to `_chunks`)."""
        spool = self.spool
        if spool is None or self.spool_problem is not None:
            return
        chunks = self._chunks
        new = chunks[self._spooled : len(chunks)]
        if not new:
            return
        try:
            spool.write(np.concatenate(new))
        except OSError as error:  # a disk filling up mid-take: the take goes on in memory
            self.spool_problem = f"the take stopped being kept on disk ({error.strerror or error})"
            return
        self._spooled += len(new)

    def _end_spool_thread(self) -> None:
        """The spool thread ended: nothing writes to the spool's file any more (before it is closed, whose
        descriptor's number another file could take)."""
        thread, self._spool_thread = self._spool_thread, None
        if thread is not None:
            self._spool_stop.set()
            thread.join()

    def _finish_spool(self) -> None:
        """At the stop: the spool holds the whole take, durable, while it is checked and saved (a crash then
        loses nothing)."""
        self._end_spool_thread()
        with self._spool_lock:
            spool = self.spool
            if spool is None or self.spool_problem is not None:
                return
            self._spool_new_blocks()
            try:
                spool.sync()
            except OSError as error:
                self.spool_problem = f"the take could not be made durable on disk ({error.strerror or error})"

    def release_spool(self, remove: bool) -> None:
        """Let the take's spool go: `remove` once the take is saved or thrown away; kept when its save failed (it
        is offered back at the next opening). Safe to call twice."""
        self._end_spool_thread()
        with self._spool_lock:
            spool, self.spool = self.spool, None
        if spool is not None:
            spool.close(remove=remove)

    def _callback(self, indata, frames, time_info, status) -> None:
        """On the audio thread: copy, count, measure. Never blocks."""
        if not self._recording:
            return
        if status is not None and getattr(status, "input_overflow", False):
            self.dropped_blocks += 1
        block = np.asarray(indata, dtype=np.float32)
        mono = block[:, 0].copy() if block.ndim == 2 else block.reshape(-1).copy()
        now = time.monotonic()
        self._chunks.append(mono)
        self.blocks += 1
        if self.first_block_at is None:
            self.first_block_at = now
        elif self.last_block_at is not None:
            gap = now - self.last_block_at - len(mono) / self.rate  # beyond the block's own time
            if gap > INPUT_STALL_S and (self.longest_gap is None or gap > self.longest_gap[1]):
                self.longest_gap = ((self.frames - self.lead_frames) / self.rate, gap)
        sounding = mono.any()
        if sounding and self.heard_at is None:
            self.heard_at = now
            heard = self.frames + int(np.argmax(mono != 0))
            if heard < int(DIGITAL_SILENCE_S * self.rate):  # as quality.waking_zeros counts on the whole take
                self.lead_frames = heard
                self.longest_gap = None  # a wait while it woke up is not in the take
        self.frames += len(mono)
        self.last_block_at = now
        if sounding:
            self.silent_since = None
        elif self.silent_since is None:
            self.silent_since = now
        rms, peak = block_level(mono)
        self.levels.append(Level(rms, peak, now))

    @property
    def recorded_s(self) -> float:
        """Seconds of sound received so far: the take's length (without the zeros of an input waking up), which
        stops growing when the input stops."""
        return (self.frames - self.lead_frames) / self.rate

    @property
    def take_begun(self) -> bool:
        """Whether ● Recording is due: the input hears, or has sent DIGITAL_SILENCE_S of exact zeros (muted, or a
        noise filter's pause: the speaker is told, and may read). Before, what is said is lost or cut."""
        return self.heard_at is not None or self.frames >= DIGITAL_SILENCE_S * self.rate

    def input_state(self, now: float | None = None) -> str:
        """What the input is doing now (an InputState), read on the UI thread from the callback's plain fields."""
        now = time.monotonic() if now is None else now
        first, last, silent = self.first_block_at, self.last_block_at, self.silent_since
        if first is None or last is None or not self.take_begun:  # a stall then is still a wait for it to wake
            return InputState.WAITING
        if now - last > INPUT_STALL_S:
            return InputState.STALLED
        if silent is not None and now - silent >= DIGITAL_SILENCE_S:
            return InputState.SILENT
        return InputState.SOUND

    @property
    def input_break(self) -> InputBreak | None:
        """After `stop()`: when the input sent nothing for more than INPUT_STALL_S during the take — it stopped
        before the take was stopped (a microphone pulled out, the server gone: `seconds` None), or it paused and
        came back (a wireless headset dropping out: the longest pause); else None."""
        if self.stopped_at is None or self.last_block_at is None:
            return None
        if self.stopped_at - self.last_block_at > INPUT_STALL_S:
            return InputBreak(self.recorded_s)
        return None if self.longest_gap is None else InputBreak(*self.longest_gap)

    def drain_levels(self) -> list[Level]:
        """Every level reading since the last drain (for the meter, on the UI thread)."""
        drained = []
        while True:
            try:
                drained.append(self.levels.popleft())
            except IndexError:
                return drained

    def stop(self, wait_s: float | None = None) -> np.ndarray:
        """Stop collecting and return the take's samples. The stream is stopped and closed on a thread of its own
        (`StreamCloser`), waited for `wait_s` (STOP_WAIT_S): a sound server that does not answer holds that call for
        good (measured with PulseAudio stopped), while the take is in memory already. When the stop answered, the
        samples are exact (PortAudio waits for the callback in flight); when it did not (`stop_held`), a block in
        flight then may be missing. A stream that fails to stop (a device gone) keeps its take too. The zeros an
        input sent while waking up are not the take's (`quality.waking_zeros`): its noise floor and speech are."""
        wait_s = STOP_WAIT_S if wait_s is None else wait_s
        with self._lock:
            stream, self._stream = self._stream, None
            if self._recording:
                self.stopped_at = time.monotonic()
            self._recording = False
            if stream is not None:
                closing = StreamCloser(stream)
                with _closing_lock:
                    _closing[closing] = time.monotonic()
                try:
                    closing.start()
                    closing.join(wait_s)
                except RuntimeError:  # no new thread at the interpreter's end (Python 3.12.0-3.12.1): close here
                    closing.run()
                self.closing, self.stop_held = closing, closing.is_alive()
            self._finish_spool()
            chunks, self._chunks = self._chunks, []
        samples = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.float32)
        return samples[waking_zeros(samples, self.rate) :]

    def abort(self) -> None:
        """Throw the take away (the screen closed, the speaker changed, Discard): its spool first — removed even
        when the stream's stop is held or the process ends meanwhile (`close_recordings`) — then the stream."""
        self.discarding = True
        self.release_spool(remove=True)
        self.stop()
        self.release_spool(remove=True)  # one a start still under way made meanwhile


class StreamCloser(threading.Thread):
    """Stops and closes one recording's stream (`Recorder.stop`); the open-stream count goes once it is closed."""

    def __init__(self, stream):
        super().__init__(name="recording-close", daemon=True)
        self.stream = stream

    def run(self) -> None:
        try:
            try:
                self.stream.stop()
            finally:
                self.stream.close()
        except Exception:  # noqa: BLE001 - a stream whose device is gone: the take is kept all the same
            pass
        finally:
            count_open_stream(-1)
            with _closing_lock:
                _closing.pop(self, None)


_closing: dict[StreamCloser, float] = {}  # recording streams being stopped and closed: since when
_closing_lock = threading.Lock()


def wait_for_closing_streams(timeout_s: float = STOP_WAIT_S) -> bool:
    """Wait up to `timeout_s` in all for the recording streams being closed; whether none is left."""
    deadline = time.monotonic() + timeout_s
    with _closing_lock:
        closing = dict(_closing)
    for thread in closing:
        _join_by(thread, deadline)
    with _closing_lock:
        return not _closing


def _join_by(thread: threading.Thread, deadline: float) -> None:
    """Join until `deadline`, a thread registered just before it was started too (a join before its start
    raises)."""
    while thread.ident is None and time.monotonic() < deadline:
        time.sleep(0.005)
    if thread.ident is not None:
        thread.join(max(0.0, deadline - time.monotonic()))


_recorders: weakref.WeakSet[Recorder] = weakref.WeakSet()  # recorders that opened a stream
_exit_hook: list[bool] = []


def _register_exit_hook() -> None:
    """Register `close_recordings` once; exit hooks run last registered first, so it runs before sounddevice's
    (which terminates PortAudio) and open_streams' guard (which looks for a call still held)."""
    with _closing_lock:
        if not _exit_hook:
            atexit.register(close_recordings)
            _exit_hook.append(True)


def close_recordings() -> None:
    """At exit, before PortAudio goes (registered after sounddevice's own exit hook, so it runs first): every
    recording still open is stopped, and each stream's close is waited for until STOP_WAIT_S after it began; one
    a hung sound server holds is left (open_streams' guard then leaves PortAudio to the process's end). A stream
    still running while the interpreter ends calls its Python callback from PortAudio's thread into a finalized
    interpreter: the app died with SIGSEGV after Ctrl+Q in a take."""
    still_open = [recorder for recorder in list(_recorders) if recorder._stream is not None]
    try:
        for recorder in still_open:
            threading.Thread(target=recorder.stop, args=(0.0,), name="recording-exit", daemon=True).start()
    except RuntimeError:  # no new thread at the interpreter's end (Python 3.12.0-3.12.1): as before this hook
        for recorder in still_open:
            recorder._recording = False  # its callback returns at once
        return
    deadline = time.monotonic() + STOP_WAIT_S
    while any(recorder._stream is not None for recorder in list(_recorders)) and time.monotonic() < deadline:
        time.sleep(0.01)  # each stop hands its stream to a closing thread at once, unless another stop holds it
    with _closing_lock:
        closing = dict(_closing)
    for thread, began in closing.items():
        _join_by(thread, max(began + STOP_WAIT_S, time.monotonic() + 0.1))
    for recorder in list(_recorders):
        if recorder.discarding:  # thrown away on a thread the exit may not have waited for
            recorder.release_spool(remove=True)


# --------------------------------------------------------------------------------------------------
# A fake input stream for tests and benchmarks


@dataclass
class FakeStatus:
    """What sounddevice's CallbackFlags offers the callback."""

    input_overflow: bool = False

    def __bool__(self) -> bool:
        return self.input_overflow


class FakeInputStream:
    """Shaped like sounddevice.InputStream: calls `callback(indata, frames, time, status)` from a thread of its own
    with `signal` cut into blocks, then silence (or nothing, with `then_silence=False`). With `realtime=True` blocks
    arrive at the pace a device would deliver them, and a block whose callback returned after the next block was
    due is reported with `status.input_overflow`, as PortAudio does when its buffer overruns. An input that wakes
    late (`start_delay_s`: its first block comes that long after the start, and the signal meanwhile is lost), one
    that wakes with zeros (`zeros_s`: its blocks are exact zeros that long, the signal meanwhile lost) and one that
    stops mid-take (`stop_after_s` of blocks, then none) are simulated too."""

    def __init__(
        self,
        samplerate: int = DEFAULT_RATE,
        blocksize: int = DEFAULT_BLOCK,
        channels: int = 1,
        dtype: str = "float32",
        device=None,
        callback=None,
        signal: np.ndarray | None = None,
        realtime: bool = False,
        then_silence: bool = True,
        noise_dbfs: float | None = -80.0,
        overflow_blocks: tuple[int, ...] = (),
        max_seconds: float = 600.0,
        start_delay_s: float = 0.0,
        stop_after_s: float | None = None,
        zeros_s: float = 0.0,
    ):
        self.samplerate, self.blocksize, self.channels = int(samplerate), int(blocksize or DEFAULT_BLOCK), channels
        self.callback = callback
        self.signal = np.zeros(0, dtype=np.float32) if signal is None else np.asarray(signal, dtype=np.float32)
        self.realtime, self.then_silence = realtime, then_silence
        self.noise = 0.0 if noise_dbfs is None else 10 ** (noise_dbfs / 20)
        self.overflow_blocks = set(overflow_blocks)
        self.max_blocks = int(max_seconds * self.samplerate / self.blocksize)
        self.start_delay_s = start_delay_s
        self.first_block = int(start_delay_s * self.samplerate / self.blocksize)  # blocks lost while waking
        self.zero_blocks = self.first_block + int(zeros_s * self.samplerate / self.blocksize)  # then zeros before this
        self.last_block = (
            None if stop_after_s is None else self.first_block + int(stop_after_s * self.samplerate / self.blocksize)
        )
        self.delivered_signal = threading.Event()  # every sample of `signal` has been delivered
        self.active = False
        self.blocks_sent = 0
        self.late_blocks = 0
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._rng = np.random.default_rng(0)

    def start(self) -> None:
        self.active = True
        self._thread = threading.Thread(target=self._run, name="fake-input-stream", daemon=True)
        self._thread.start()

    def _block(self, index: int) -> np.ndarray | None:
        if index < self.zero_blocks:  # waking: what it hears is not sent yet
            return np.zeros((self.blocksize, self.channels), dtype=np.float32)
        start = index * self.blocksize
        block = self.signal[start : start + self.blocksize]
        if len(block) < self.blocksize:
            if not self.then_silence and len(block) == 0:
                self.delivered_signal.set()
                return None
            block = np.concatenate([block, np.zeros(self.blocksize - len(block), dtype=np.float32)])
        if self.noise:
            block = block + self._rng.normal(0, self.noise, self.blocksize).astype(np.float32)
        return block.reshape(-1, 1).repeat(self.channels, axis=1) if self.channels > 1 else block.reshape(-1, 1)

    def _run(self) -> None:
        period = self.blocksize / self.samplerate
        if self.start_delay_s and self._stopping.wait(self.start_delay_s):
            self.active = False
            return
        began = time.perf_counter() - self.first_block * period
        late = False
        for index in range(self.first_block, self.max_blocks):
            if self._stopping.is_set():
                break
            if self.last_block is not None and index >= self.last_block:  # the input stopped: nothing comes
                self._stopping.wait()
                break
            if self.realtime:
                due = began + (index + 1) * period  # a block is complete once its last sample was captured
                wait = due - time.perf_counter()
                if wait > 0:
                    self._stopping.wait(wait)
                    if self._stopping.is_set():
                        break
            block = self._block(index)
            if block is None:
                self._stopping.wait(period)
                continue
            status = FakeStatus(input_overflow=late or index in self.overflow_blocks)
            self.callback(block, self.blocksize, None, status)
            self.blocks_sent += 1
            if (index + 1) * self.blocksize >= len(self.signal):  # set once the callback has had the last sample
                self.delivered_signal.set()
            late = self.realtime and time.perf_counter() > began + (index + 2) * period
            self.late_blocks += int(late)
        self.active = False

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5.0)
        self.active = False

    def close(self) -> None:
        self.stop()


def fake_stream_factory(signal: np.ndarray | None = None, **options) -> StreamFactory:
    """A stream factory giving a FakeInputStream that plays `signal` (tests, benchmarks, demos)."""

    def make(**kwargs):
        return FakeInputStream(signal=signal, **{**kwargs, **options})

    return make
