"""Writing batch requests: the OpenAI batch-format request lines (for provider jobs and for vLLM's offline
`run_batch`), built through the online adapter with the audio inline as base64, and the whole batch file of a
prepared plan (`write_batch_file`), written in bounded memory and recorded as a batch of provider 'file'."""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import itertools
import json
import math
import os
import queue
import signal
import struct
import tempfile
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from spokenbench.core.evaluation import store
from spokenbench.core.evaluation.adapters import (
    AudioInput,
    ModelAdapter,
    ModelRequest,
    OpenAICompatibleAdapter,
)
from spokenbench.core.evaluation.batch_records import (
    _UNSEEN,
    _check_batchable,
    _Contexts,
    _ensure_run,
    _Line,
    _price_json,
    _store_cached,
    batch_price,
)
from spokenbench.core.evaluation.plans import PlannedRequest
from spokenbench.core.evaluation.preparation import (
    EvaluationPreparation,
    Job,
    JobParts,
    RequestBuilder,
    RunSettings,
    prepare_evaluation,
)
from spokenbench.core.foundation.child_process import ChildCallFailed, ChildCalls, child_start_method
from spokenbench.core.foundation.collection import automatic_collection_paused
from spokenbench.core.foundation.errors import ProjectError, SpokenBenchError
from spokenbench.core.foundation.processes import a_core_is_free
from spokenbench.core.foundation.progress import Progress, no_progress
from spokenbench.core.jobs.remote import strip_url_credentials
from spokenbench.core.store import Project
from spokenbench.core.store import batches as batch_store
from spokenbench.core.store.audio_files import IOV_MAX, AudioStore, _write_all
from spokenbench.core.store.verified_clips import VerifiedClips, create_verified_clips, open_verified_clips

try:  # the pipe to a second process: made larger, and how much it holds (Linux)
    import fcntl
    import termios
except ImportError:  # Windows, which forks nothing here
    fcntl = termios = None

try:  # SIMD base64 (a dependency): the same bytes as the standard library's at ~20x its speed
    from pybase64 import b64encode as _b64encode
except ImportError:  # an install without it (a platform with no wheel): the standard library's encoder
    _b64encode = base64.b64encode

OPENAI_ENDPOINT = "/v1/chat/completions"


@dataclass
class BatchFileSummary:
    run_id: int
    batch_id: int
    path: str
    lines: int
    requests: int
    cached: int
    bytes: int
    elapsed_s: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# --------------------------------------------------------------------------------------------------
# Writing request lines


# Conventions whose audio is one base64 string in the body: the body is encoded with a short placeholder there
# and the audio's base64 (which JSON never escapes) written in its place — the same bytes as encoding the whole
# body, without scanning megabytes of base64 for characters to escape. The encoded pieces around the audio depend
# only on the texts and the audio formats, so requests with the same texts (in audio mode, most of a plan) share
# them: the body is built (by the adapter, as online) and encoded once per distinct text, not once per line.
_SPLICED_CONVENTIONS = ("openai-input-audio", "mistral-input-audio", "audio-url")
_LINE_HEAD = b'{"custom_id":'
_LINE_MIDDLE = b',"method":"POST","url":' + json.dumps(OPENAI_ENDPOINT).encode() + b',"body":'
_LINE_END = b"}\n"
_json_ascii = json.encoder.encode_basestring_ascii  # json.dumps of a string (ensure_ascii), without its dispatch


# A line to write: its bytes up to its first audio, in pieces, then per audio (sha256, format, the bytes after its
# base64). The pieces keep a spliced line's key apart from the body up to the audio, which the lines of a
# presentation share, so a unit sent to a `_SplitSink`'s second process carries that body once (pickle writes a
# shared object once), not once per line: ~3x the lines in its pipe. Built by the planning side; a `_LineSink` reads,
# checks and encodes the audio (on a reader thread, for a large file, while this thread writes and plans the next
# lines).
LineSpec = tuple[tuple[bytes, ...], tuple[tuple[str, str, bytes], ...]]


class _Writer:
    """Builds each line's request through the online adapter, loading each audio file when its line is written
    (a small cache keeps inputs shared by neighbouring lines), so memory stays bounded however many lines."""

    def __init__(self, project: Project, adapter: ModelAdapter):
        self.project, self.adapter = project, adapter
        self._audio = functools.lru_cache(maxsize=64)(project.audio.read_bytes)
        self._body_pieces = functools.lru_cache(maxsize=256)(self._spliced_body)  # bounded: text mode never repeats
        self.splice = adapter.preset.convention in _SPLICED_CONVENTIONS

    def loaded(self, request: ModelRequest) -> ModelRequest:
        if not request.audio:
            return request
        audio = tuple(dataclasses.replace(a, data=self._audio(a.sha256, a.format)) for a in request.audio)
        return dataclasses.replace(request, audio=audio)

    def _spliced_body(self, system: str | None, user: str, formats: tuple[str, ...]) -> tuple[bytes, tuple[bytes, ...]]:
        """A line with these texts and audio formats, in the pieces around its audios: what follows its custom_id
        up to the first audio, and what follows each audio (the last one ending the line)."""
        markers = [b"\xfb\xff\xbf" + b"%09d" % n for n in range(len(formats))]  # base64: '+/+/' + digits
        placeholder = ModelRequest(system, user, tuple(AudioInput(m, "", f, 0.0) for m, f in zip(markers, formats)))
        text = _LINE_MIDDLE + json.dumps(self.adapter.chat_body(placeholder), separators=(",", ":")).encode("utf-8")
        pieces, start = [], 0
        for marker in markers:
            token = base64.b64encode(marker)
            at = text.index(token, start)
            pieces.append(text[start:at])
            start = at + len(token)
        pieces.append(text[start:] + _LINE_END)
        return pieces[0], tuple(pieces[1:])

    def line_spec(self, line: _Line) -> LineSpec:
        """The line without its audio's base64: the audio spliced in later by a `_LineSink` (a line of a
        convention that does not splice, or without audio, is built whole here, its audio loaded)."""
        request = line.request
        if not (self.splice and request.audio):
            body = self.adapter.chat_body(self.loaded(request))
            record = {"custom_id": line.key, "method": "POST", "url": OPENAI_ENDPOINT, "body": body}
            return (json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n",), ()
        return self.spliced_spec(line.key, request.system, request.user, request.audio)

    def spliced_spec(self, key: str, system: str | None, user: str, audio: tuple[AudioInput, ...]) -> LineSpec:
        """line_spec of a request with audio, of a convention that splices."""
        if len(audio) == 1:  # most requests: one input
            (clip,) = audio
            middle, (after,) = self._body_pieces(system, user, (clip.format,))
            return (_LINE_HEAD + _json_ascii(key).encode(), middle), ((clip.sha256, clip.format, after),)
        middle, afters = self._body_pieces(system, user, tuple(a.format for a in audio))
        return (_LINE_HEAD + _json_ascii(key).encode(), middle), tuple(
            (a.sha256, a.format, after) for a, after in zip(audio, afters)
        )

    def openai_line(self, line: _Line) -> list[bytes]:
        """The line's bytes, in pieces (the audio read, checked and encoded here)."""
        head, audios = self.line_spec(line)
        pieces = list(head)
        for sha256, audio_format, after in audios:
            pieces += (_b64encode(self._audio(sha256, audio_format)), after)
        return pieces


class _LinePlanner:
    """A batch file's planned requests as (key, context, line), without an object per request: what depends only
    on the presentation and the clip's format (the texts, the context's JSON around the option texts and the audio
    estimate as one format string, the line's bytes after its key and after its audio) is made once, from
    `_Contexts` and `_Writer`, the pieces every other request is made of. Per request only the key, the item's
    encoded option texts, the seconds heard and the clip are put in. A request with other audio (none, several
    clips, a convention that does not splice) or texts holding its question is made by `_Contexts.of_parts` and
    `_Writer.line_spec`, as the pieces were."""

    KNOWN_SECONDS = 4096  # context endings kept per presentation, by the seconds heard

    def __init__(self, contexts: _Contexts, writer: _Writer):
        self.contexts, self.writer = contexts, writer
        self._presentations: dict[tuple, tuple | None] = {}

    def plan(self, entries: Iterable[tuple[JobParts, str | None]]) -> list[tuple[JobParts, str, str, tuple]]:
        """(parts, key, context, its line or how it is made: `line`'s argument) of each (parts, key); a key that
        is None (not keyed while preparing) is made here, as `RequestBuilder.answer`'s request's."""
        contexts, presentations = self.contexts, self._presentations
        heard, known_texts = contexts.heard, contexts._encoded
        planned_lines = []
        for parts, key in entries:
            planned, item, _question, option_texts, audio = parts
            if heard and len(audio) == 1 and key is not None:
                (clip,) = audio
                fields = (planned.option_order, planned.label_sequence, planned.condition_key, item.language)
                presentation = presentations.get(fields + (clip.format,), _UNSEEN)
                if presentation is _UNSEEN:
                    presentation = self._presentation(planned, item.language, clip.format)
                if presentation is not None:
                    template, (middle, after), endings, _texts = presentation
                    encoded = known_texts.get(option_texts, _UNSEEN)
                    if encoded is _UNSEEN:
                        encoded = contexts.encoded(option_texts)
                    seconds = 0 + clip.seconds  # as `_Contexts.of_parts` sums them
                    ending = endings.get((seconds, type(seconds))) or self._ending(presentation, seconds)
                    if encoded is not None and ending is not None:
                        line = ((_LINE_HEAD + _json_ascii(key).encode(), middle), ((clip.sha256, clip.format, after),))
                        planned_lines.append((parts, key, template.format(*encoded, ending), line))
                        continue
            system, user, context = contexts.of_parts(*parts)
            if key is None:
                heard_audio = audio if heard else ()
                key = contexts.keyer.request_key(ModelRequest(system, user, heard_audio, language=item.language))
            planned_lines.append((parts, key, context, (system, user)))
        return planned_lines

    def line(self, parts: JobParts, key: str, how: tuple) -> LineSpec:
        """The request's line: `how` itself when `plan` made it (its head is a tuple of bytes), else made by
        `_Writer` from the texts `how` holds (system: str or None, user): only for a line that is written (its audio
        may be read here)."""
        if type(how[0]) is tuple:
            return how
        audio = parts[4] if self.contexts.heard else ()
        system, user = how
        writer = self.writer
        if writer.splice and audio:
            return writer.spliced_spec(key, system, user, audio)
        return writer.line_spec(_Line(key, ModelRequest(system, user, audio, language=parts[1].language), []))

    def _presentation(self, planned: PlannedRequest, language: str, audio_format: str) -> tuple | None:
        """(the context's format string, the line's bytes after the key and after the audio, the context endings
        by seconds) of a presentation heard as one clip of this format; None: made per request."""
        shape = self.contexts.shape_of(
            planned.option_order, planned.label_sequence, planned.condition.spoken_labels, language
        )
        presentation = None
        if shape is not None and self.writer.splice:
            system, user, pieces, sources = shape
            escaped = [piece.replace("{", "{{").replace("}", "}}") for piece in pieces]
            template = escaped[0]
            for source, piece in zip(sources, escaped[1:]):
                template += f"{{{source}}}{piece}"
            template += f"{{{len(sources)}}}"  # the ending: the audio estimate and the seconds heard
            middle, (after,) = self.writer._body_pieces(system, user, (audio_format,))
            presentation = (template, (middle, after), {}, (system, user))
        key = (planned.option_order, planned.label_sequence, planned.condition_key, language, audio_format)
        self._presentations[key] = presentation
        return presentation

    def _ending(self, presentation: tuple, seconds) -> str | None:
        """The context's ending for this much audio (None: not a whole or finite number: made by json)."""
        number = type(seconds)
        if not (number is int or (number is float and math.isfinite(seconds))):
            return None
        _template, _line, endings, (system, user) = presentation
        if len(endings) >= self.KNOWN_SECONDS:
            endings.clear()
        ending = endings[(seconds, number)] = self.contexts.audio_tail(system, user, seconds)
        return ending


class _Clip:
    """One clip's base64, filled in by whoever reads it (a reader thread, or the writing thread itself); shared
    by the neighbouring lines that hear the same clip."""

    __slots__ = ("sha256", "format", "data")

    def __init__(self, sha256: str, audio_format: str):
        self.sha256, self.format, self.data = sha256, audio_format, b""


@dataclass(frozen=True)
class _ClipSource:
    """Where a sink's clips come from: the project's audio, checked through the user's cache of verified clips
    (None: every clip hashed). The cache is used by one thread at a time: the one reading. `looked_up`: what the
    cache knows of the clips about to be read is loaded already (a whole unit's, by the process that planned it),
    so reading them asks it nothing more."""

    audio: AudioStore
    verified: VerifiedClips | None
    looked_up: bool = False


def _read_clips(source: _ClipSource, clips: list[_Clip]) -> None:
    """Read, check and encode `clips` in order (`AudioStore.read_bytes`: the store's own refusal naming a
    missing, damaged, linked or oversized file; a file the cache of verified clips vouches for is not hashed
    again). The reads, the sha256 and the encoding release the GIL."""
    audio, verified = source.audio, source.verified
    if verified is not None and not source.looked_up:
        verified.look_up(clip.sha256 for clip in clips)
    for clip in clips:
        clip.data = _b64encode(audio.read_bytes(clip.sha256, clip.format, verified))


class _LineSink:
    """Writes lines to a file descriptor, in order: each clip read and checked against its name and base64-encoded
    once however many neighbouring lines share it, and the pieces gathered into `writev` calls (no copy of the
    audio into one line or a buffer). With `readers`, the lines are handed to a writing thread, and the clips of
    the next few lines are read, checked and encoded on reader threads while it writes: file reads, hashlib and
    writev release the GIL, so the sha256 and the writes run on the other core while the caller plans the next
    lines and records them in the database. Without, everything is done in the caller's thread (one core)."""

    CACHED_CLIPS = 64  # encoded clips kept for neighbouring lines that share them
    UNIT_LINES = 32  # lines whose clips one reader task reads (fewer hand-overs between the threads: measured
    # 2.3 s of CPU for 20,000 lines against 2.7 s with tasks of 8)
    AHEAD_UNITS = 2  # tasks read ahead of the writing: with CACHED_CLIPS, at most ~160 clips held (bounded memory)
    HANDED_CALLS = 16  # write() calls waiting for the writing thread (their lines hold no audio: ~2 MB at most)

    def __init__(self, audio: AudioStore, fd: int, readers: int = 0, verified: VerifiedClips | None = None):
        self.fd, self.written = fd, 0
        self._source = _ClipSource(audio, verified)
        self._recent: dict[tuple[str, str], _Clip] = {}  # the last CACHED_CLIPS clips, least recent first
        self._pieces: list = []  # the unit being filled: its lines' pieces, in order (bytes, or a _Clip)
        self._reads: list[_Clip] = []  # the clips it reads
        self._count = 0  # its lines
        self._units: collections.deque = collections.deque()  # (pieces, clips, their reading: a Future or None)
        self._pool = self._handed = self._writer = self._failure = None
        self._stopped = False
        if readers:
            self._pool = concurrent.futures.ThreadPoolExecutor(readers, thread_name_prefix="spokenbench-batch-clips")
            self._handed = queue.Queue(self.HANDED_CALLS)
            self._writer = threading.Thread(target=self._write_handed, name="spokenbench-batch-clips-writer")
            self._writer.start()

    def write(self, specs: Iterable[LineSpec]) -> None:
        """Write the lines, in order (the last few are written by a later call, or on leaving the sink). With a
        writing thread, they are handed to it (waiting while it is HANDED_CALLS behind); its error is raised here."""
        if self._handed is None:
            self._add(specs)
            return
        if self._failure is not None:
            raise self._failure
        self._handed.put(list(specs))

    def lead(self, lines: int) -> None:
        """`_SplitSink.lead`: nothing to do here (the writing thread has up to HANDED_CALLS calls of lines queued)."""

    def pause(self) -> None:
        """`_SplitSink.pause`: nothing to do here."""

    def last_pause(self, seconds: float) -> None:
        """`_SplitSink.last_pause`: nothing to do here (the reader threads do not end before the caller)."""

    def _write_handed(self) -> None:
        """The writing thread: every call's lines, then the rest at the end (None). After an error or a stop it
        only empties the queue, so the caller never waits on it."""
        while True:
            specs = self._handed.get()
            if self._failure is None and not self._stopped:
                try:
                    self._add(specs) if specs is not None else self._finish()
                except BaseException as error:  # noqa: BLE001 - raised in the caller's thread
                    self._failure = error
            if specs is None:
                return

    def _add(self, specs: Iterable[LineSpec]) -> None:
        recent, reads, pieces = self._recent, self._reads, self._pieces
        for head, audios in specs:
            pieces += head
            for sha256, audio_format, after in audios:
                clip = recent.pop((sha256, audio_format), None)
                if clip is None:
                    clip = _Clip(sha256, audio_format)
                    reads.append(clip)
                    if len(recent) >= self.CACHED_CLIPS:
                        del recent[next(iter(recent))]
                recent[(sha256, audio_format)] = clip
                pieces += (clip, after)
            self._count += 1
            if self._count >= self.UNIT_LINES:
                self._queue()
                reads, pieces = self._reads, self._pieces

    def _queue(self) -> None:
        """Hand the unit to a reader, and write the units it is now far enough ahead of."""
        if self._pieces:
            reading = None
            if self._pool and self._reads:
                reading = self._pool.submit(_read_clips, self._source, self._reads)
            self._units.append((self._pieces, self._reads, reading))
            self._pieces, self._reads, self._count = [], [], 0
        ahead = self.AHEAD_UNITS if self._pool else 0
        while len(self._units) > ahead:
            self._write_unit(*self._units.popleft())

    def _finish(self) -> None:
        self._queue()
        while self._units:
            self._write_unit(*self._units.popleft())

    def _write_unit(self, pieces: list, clips: list[_Clip], reading) -> None:
        """The unit's lines, in `writev` calls of at most IOV_MAX pieces (its clips read and encoded first)."""
        if reading is None:
            _read_clips(self._source, clips)
        else:
            reading.result()  # the reader's error (the first bad clip in line order), raised here
        data = [piece.data if type(piece) is _Clip else piece for piece in pieces]
        for first in range(0, len(data), IOV_MAX):
            _write_all(self.fd, data[first : first + IOV_MAX])
        self.written += sum(map(len, data))

    def __enter__(self) -> _LineSink:
        return self

    def __exit__(self, kind, error, trace) -> None:
        """The descriptor is the sink's once it is entered. On the way out, every line written (the writing
        thread's error raised); after an error or a cancel, the threads stopped (what they still read is dropped);
        then the descriptor closed."""
        try:
            if self._writer is None:
                if kind is None:
                    self._finish()
            else:
                self._stopped = kind is not None
                self._handed.put(None)
                self._writer.join()
                if kind is None and self._failure is not None:
                    raise self._failure
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
            self._units.clear()
            os.close(self.fd)
            if self._source.verified is not None:  # what was verified so far is kept, even after an error
                self._source.verified.close()


def _base64_size(size: int) -> int:
    """The length of the base64 of `size` bytes (padded, no newlines: pybase64's and the standard library's)."""
    return (size + 2) // 3 * 4


def _write_share(source: _ClipSource, fd: int, offset: int, specs: list[LineSpec], sizes: list[int]) -> None:
    """Write consecutive lines at `offset` of the file, UNIT_LINES at a time (their clips read, checked as by
    `_read_clips` and encoded, then written: the buffers stay small and hot in the CPU's cache; a whole share's
    clips at once measured twice the CPU, in page faults and copies from memory). A clip shared by neighbouring
    lines is read once. `sizes` are the planned base64 lengths of the lines' audios, in order: a clip whose
    base64 has another length changed since it was sized, and is refused, never spliced in."""
    os.lseek(fd, offset, os.SEEK_SET)
    recent: dict[tuple[str, str], _Clip] = {}
    planned = iter(sizes)
    for first in range(0, len(specs), _LineSink.UNIT_LINES):
        reads: list[tuple[_Clip, int]] = []
        pieces: list = []
        for head, audios in specs[first : first + _LineSink.UNIT_LINES]:
            pieces += head
            for sha256, audio_format, after in audios:
                size = next(planned)
                clip = recent.get((sha256, audio_format))
                if clip is None:
                    clip = recent[(sha256, audio_format)] = _Clip(sha256, audio_format)
                    reads.append((clip, size))
                pieces += (clip, after)
        _read_clips(source, [clip for clip, _ in reads])
        for clip, size in reads:
            if len(clip.data) != size:
                raise ProjectError(
                    f"audio file {source.audio.file_name(clip.sha256, clip.format)} changed while the batch file "
                    "was written (its size is not the one planned): write the batch file again"
                )
        if len(recent) > _LineSink.CACHED_CLIPS:  # bounded: the clips of the last lines kept
            recent = {(clip.sha256, clip.format): clip for clip, _ in reads[-_LineSink.CACHED_CLIPS :]}
        _write_all(fd, [piece.data if type(piece) is _Clip else piece for piece in pieces])


def _write_shares_in_child(
    audio_root: str, path: str, shares, parent_end, lines_written
) -> tuple[int, BaseException] | None:
    """The second process of a `_SplitSink`: writes each share it is sent at its offset, checking its clips through
    a connection of its own to the cache of verified clips (which records what it hashed), until told to stop
    (None), counting the lines written in `lines_written` (memory shared with the parent). Returns None, or (the
    share, its error): the first it met, its clip named as the store names it."""
    parent_end.close()  # only the parent sends: when it dies, the next receive here ends instead of waiting
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # ended by the parent (a fork inherits the CLI's SIGTERM handler)
    with contextlib.suppress(ValueError):
        signal.set_wakeup_fd(-1)  # ... and an event loop's wakeup socket, which signals here must not write to
    verified = open_verified_clips()
    source = _ClipSource(AudioStore(Path(audio_root)), verified, looked_up=verified is not None)
    share = -1
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        try:
            written = 0
            while (message := shares.recv()) is not None:
                share, offset, specs, sizes, entries = message
                if verified is not None:
                    verified.take(entries)  # what the parent's cache knows of these clips (looked up with the unit)
                _write_share(source, fd, offset, specs, sizes)
                written += len(specs)
                struct.pack_into("q", lines_written, 0, written)
        finally:
            os.close(fd)
    except EOFError:  # the parent stopped sending (it failed, or was killed): nothing to report
        raise
    except Exception as error:  # noqa: BLE001 - sent to the parent, which raises it
        return share, error
    finally:
        if source.verified is not None:
            source.verified.close()
    return None


class _SplitSink:
    """Writes lines with a second process, on a machine with a core free: the lines come in units of SPLIT_LINES,
    each line's offset in the file known in advance (its pieces are known after planning, and a clip's base64 is
    4 * ceil(size / 3) bytes, its size from one stat); the first part of a unit (`_balanced_share`) is written
    here, the rest sent to the child (`_write_shares_in_child`), which reads, checks, encodes and writes it at its
    offset while this process writes its part, plans the next lines and records their rows. The Python around the
    reads (checks, the cache of verified clips, hand-overs) kept a reader thread and this one on one core (the
    GIL); the two processes wait for each other only through the pipe's bounded buffer. Errors are as with
    `_LineSink`: the first bad clip in line order, named by the store; a child that dies is an error (the caller
    removes the file). Forked only: `_sink_for` decides."""

    def __init__(self, audio: AudioStore, fd: int, path: str, lines: int = 0):
        import mmap
        import multiprocessing

        self.fd, self.written, self._audio = fd, 0, audio
        self._offset = 0  # where the next unit starts
        self._share = 0  # shares handed out so far, in line order (this process's and the child's)
        self._share_here = PARENT_SHARE  # of each unit's lines, written here (`_balanced_share`)
        self._pending: list[LineSpec] = []
        self._leading = 0  # lines still to send whole to the child before this process pauses (`lead`)
        self._last_pause_s = 0.0  # this process's work after its last line (`last_pause`)
        self._write_s_here, self._lines_here = 0.0, 0  # its own writing so far: how long a line takes it
        self._lines_left = lines  # expected from here on (at most: lines answered by the cache are not written)
        self._lines_sent = 0  # to the child, and how many it has written (counted there: shared memory)
        self._lines_written_there = mmap.mmap(-1, 8)
        self._sizes: dict[tuple[str, str], int] = {}  # base64 lengths of recent clips (neighbours share clips)
        self._children = ChildCalls("fork")
        receiver, self._sender = multiprocessing.Pipe(duplex=False)
        with contextlib.suppress(OSError, AttributeError):  # room for a few shares: the child works through this
            fcntl.fcntl(self._sender.fileno(), fcntl.F_SETPIPE_SZ, SHARE_PIPE_BYTES)  # process's planning bursts
        create_verified_clips()  # made once here: the child and this process then open the same file at once
        try:
            self._children.start(
                _write_shares_in_child, str(audio.root), path, receiver, self._sender, self._lines_written_there
            )
        finally:
            receiver.close()  # the child's copy is its own: when it exits, a send here fails instead of waiting
        if self._children.calls[0][0] is None:  # no process could start (resources): `_sink_for` writes alone
            self._children.stop()
            self._sender.close()
            raise ChildCallFailed("no second process could be started")
        verified = open_verified_clips()  # opened after the fork: not shared with the child
        self._source = _ClipSource(audio, verified, looked_up=verified is not None)  # a unit at a time, by `_split`

    def lead(self, lines: int) -> None:
        """The caller pauses after its next `lines` lines (it records a chunk's rows in the database: ~40-80 ms for
        8,192 with its commit): the units split from now until then all go to the child, whose queue then lasts
        through the pause (it waited ~0.05-0.1 s per chunk for lines, idle, when this process kept its share of
        the last units)."""
        self._leading = lines

    def last_pause(self, seconds: float) -> None:
        """After its last line the caller pauses for about `seconds` (it records the last chunk's rows: ~30-60 ms):
        the last units are split so that the child's backlog lasts that long (`_ending_share`), instead of the
        child ending with this process and then waiting idle through that pause."""
        self._last_pause_s = seconds

    def pause(self) -> None:
        """The caller pauses now: the lines held back for a whole unit are split at once, not after the pause."""
        if self._pending:
            self._split(self._pending)
            self._pending = []

    def write(self, specs: Iterable[LineSpec]) -> None:
        pending = self._pending
        pending += specs
        while len(pending) >= SPLIT_LINES:
            self._split(pending[:SPLIT_LINES])
            del pending[:SPLIT_LINES]

    def _split(self, specs: list[LineSpec]) -> None:
        """Size the lines, send the child its part of them and write this process's part. The unit's clips are
        looked up in the cache of verified clips at once: it knows the size of those it holds (no stat for them:
        the next model's file stats none) and what it knows goes to whichever process reads each clip."""
        sizes: list[int] = []
        ends: list[tuple[int, int]] = []  # per line: the offset after it, the audios sized up to it
        offset = self._offset
        known, file_name, verified = self._sizes, self._audio.file_name, self._source.verified
        cached = {}
        if verified is not None:
            verified.look_up(sha256 for _head, audios in specs for sha256, _format, _after in audios)
            cached = verified.sizes()
        for number, (head, audios) in enumerate(specs):
            offset += sum(map(len, head))
            for sha256, audio_format, after in audios:
                size = known.get((sha256, audio_format))
                if size is None:
                    size = cached.get(sha256)
                    if size is None:
                        try:
                            size = os.stat(file_name(sha256, audio_format), follow_symlinks=False).st_size
                        except OSError:  # a missing clip: the lines before it written, then the store's own message
                            if number:
                                self._split(specs[:number])
                            self._conclude(self._share, self._unreadable(sha256, audio_format))
                    size = _base64_size(size)
                    if len(known) >= _LineSink.CACHED_CLIPS:
                        known.clear()
                    known[(sha256, audio_format)] = size
                sizes.append(size)
                offset += size + len(after)
            ends.append((offset, len(sizes)))
        share = self._balanced_share(len(specs))
        if self._leading > 0:
            self._leading -= len(specs)
            share = 0.0
        here = round(len(specs) * share)
        middle, sized_here = ends[here - 1] if here else (self._offset, 0)
        start, mine, theirs = self._offset, self._share, self._share + 1
        self._offset, self._share = offset, self._share + 2
        if here < len(specs):
            entries = []
            if cached:
                entries = verified.entries_for({sha256 for _head, audios in specs[here:] for sha256, _, _ in audios})
            try:
                self._sender.send((theirs, middle, specs[here:], sizes[sized_here:], entries))
                self._lines_sent += len(specs) - here
            except OSError:  # the child has ended (its error, or killed): what it says is raised
                self._conclude()
        if here:
            started = time.perf_counter()
            try:
                _write_share(self._source, self.fd, start, specs[:here], sizes[:sized_here])
            except Exception as error:
                self._conclude(mine, error)
            self._write_s_here += time.perf_counter() - started
            self._lines_here += here

    def _balanced_share(self, unit: int) -> float:
        """This process's share of the next `unit` lines: PARENT_SHARE at first, then moved by SHARE_STEP towards
        the balance (how much the child does per line and how much this process does besides differ with the clips
        already verified, the load, the prompts): more here while the child has more than SHARE_QUEUE_BYTES of lines
        waiting, less when it has none (its queue read from the pipe: FIONREAD). Near the end (`_ending_share`)
        the share is set so that the two processes finish together."""
        left, self._lines_left = self._lines_left, self._lines_left - unit
        steady = self._steady_share()
        ending = self._ending_share(left)
        return steady if ending is None else ending

    def _ending_share(self, left: int) -> float | None:
        """The share here with which both processes end together, once what the child has in hand beyond this
        process's last pause differs from it by at least half the `left` lines still to come (None before: the
        steady share). With SHARE_QUEUE_BYTES of lines queued, the child was left a backlog of a few thousand lines
        at the end, which this process waited for; with none, the child waited through this process's last pause
        (`last_pause`: 35-65 ms of 0.5-0.6 s, idle). At the balance `s` each process is busy for (1 - s) L lines of
        writing over the next L lines (this process writes s of them besides its other work); with B more lines in
        the child's hands and P lines' worth of work here after the last line (the pause over the time a line
        takes this process, at most LAST_PAUSE_LINES), both end together when this process writes s + (B - P) / 2L of them."""
        backlog = self._lines_sent - struct.unpack_from("q", self._lines_written_there)[0]
        if self._last_pause_s and self._write_s_here:
            backlog -= min(LAST_PAUSE_LINES, self._last_pause_s * self._lines_here / self._write_s_here)
        if left <= 0 or 2 * abs(backlog) < left:
            return None
        return min(1.0, max(0.0, self._share_here + backlog / (2 * left)))

    def _steady_share(self) -> float:
        """The share here moved by SHARE_STEP after the child's queue (`_balanced_share`)."""
        if SHARE_STEP:
            try:
                waiting = struct.unpack("i", fcntl.ioctl(self._sender.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]
            except (OSError, AttributeError, ValueError):
                return self._share_here
            if waiting > SHARE_QUEUE_BYTES:
                self._share_here = min(1.0, self._share_here + SHARE_STEP)
            elif waiting == 0:
                self._share_here = max(0.0, self._share_here - SHARE_STEP)
        return self._share_here

    def _unreadable(self, sha256: str, audio_format: str) -> Exception:
        """The store's error for a clip that cannot be sized (or one saying it changed, if it reads now)."""
        try:
            self._audio.read_bytes(sha256, audio_format)
        except ProjectError as error:
            return error
        path = self._audio.file_name(sha256, audio_format)
        return ProjectError(f"audio file {path} changed while the batch file was written: write the batch file again")

    def _conclude(self, share: int | None = None, error: Exception | None = None) -> None:
        """Tell the child to stop after what it was sent, wait for it and raise the first error in line order: this
        process's (`share`, `error`), the child's, or that the child ended without its result."""
        with contextlib.suppress(OSError):
            self._sender.send(None)
        self._sender.close()
        for _, result in self._children.finished():
            if isinstance(result, ChildCallFailed):
                if error is None:
                    raise SpokenBenchError(
                        "the second process writing the batch file ended before it was done (killed?); no file was "
                        "written: write it again"
                    ) from result
            elif result is not None and (error is None or result[0] < share):
                share, error = result
        if error is not None:
            raise error

    def __enter__(self) -> _SplitSink:
        return self

    def __exit__(self, kind, error, trace) -> None:
        """On the way out, every line written and the file's size checked (or, after an error or a cancel, the
        child ended); then the descriptor and the cache closed."""
        try:
            if kind is None:
                if self._pending:
                    self._split(self._pending)
                    self._pending = []
                self._conclude()
                if os.fstat(self.fd).st_size != self._offset:
                    raise SpokenBenchError("the batch file was not written whole: write it again")
                self.written = self._offset
        finally:
            self._children.stop()
            self._sender.close()
            self._lines_written_there.close()
            os.close(self.fd)
            if self._source.verified is not None:
                self._source.verified.close()


# --------------------------------------------------------------------------------------------------
# Batch files (vLLM run_batch) and importing their results


WRITE_CHUNK = 8192  # planned requests keyed, checked against the cache and written per step (one commit each:
# their rows go into an index keyed by random hashes, and a commit writes every index page it touched)
PLAN_LINES = 1024  # of a chunk, planned and checked against the cache at a time: a second process's queue (a pipe
# of ~1,400 lines) then covers the pauses between (planning 8,192 at once left it idle ~0.05 s a chunk)
SEND_LINES = 256  # lines handed to the sink at a time
LEAD_LINES = 2048  # of a chunk, the last lines planned before its rows are recorded (`_SplitSink.lead`): ~50 ms of
# a second process's writing (its pipe holds ~2,000-3,000 lines). Not the last chunk's: there the shares end together
# (`_SplitSink._ending_share`), the child's backlog sized to the time its rows will take (`_SplitSink.last_pause`,
# from the chunks recorded before and this process's time per line); a fixed 1,024 lines left this process waiting
# for the child at the end (0.08-0.10 s with every clip hashed: 0.83 s against 0.76 s, warm the same)
LAST_PAUSE_LINES = 2048  # at most, the lines of this process's last pause (`_SplitSink.last_pause`) left to the child:
# about what its pipe holds; a pause foretold longer (a chunk's rows that waited for another writer's lock) would
# block this process's sends while the child works through them
READERS_MIN_LINES = 256  # a file of fewer requests is read in this thread (threads cost more than they save)
READER_THREADS = 1  # clips read and checked beside the writing thread, when a core is free (and no fork)
SPLIT_MIN_LINES = 4096  # a file of fewer requests is written by one process (the fork costs more than it saves)
SPLIT_LINES = 512  # lines split between the two processes at a time
PARENT_SHARE = 0.3  # of each unit, written by the process that also plans the lines and records their rows (at
# first: then balanced by SHARE_STEP, `_SplitSink._balanced_share`)
SHARE_STEP = 0.05  # per unit: 0.3 to 0.15 in three units, a balance found within a few thousand lines
SHARE_PIPE_BYTES = 1 << 20  # the pipe to the second process (Linux's most for a user): a few units of its lines
SHARE_QUEUE_BYTES = SHARE_PIPE_BYTES // 2  # more of its lines waiting: the next unit's share here grows


def _sink_for(audio: AudioStore, fd: int, requests: int, path: str | None = None) -> _LineSink | _SplitSink:
    """The sink for a file of `requests` lines (it closes `fd` when it is done): with a core idle, the lines of
    a large file at `path` split with a second process (forked: where this process runs no other thread), else
    its clips read by a reader thread; on a busy machine, everything in this thread (two threads or processes
    would only share the same cores)."""
    free = requests >= READERS_MIN_LINES and a_core_is_free()
    if free and path is not None and requests >= SPLIT_MIN_LINES and child_start_method() == "fork":
        with contextlib.suppress(ChildCallFailed):
            return _SplitSink(audio, fd, path, requests)
    return _LineSink(audio, fd, READER_THREADS if free else 0, open_verified_clips())


def write_batch_file_for_settings(
    project: Project, settings: RunSettings, path: str | os.PathLike, progress: Progress | None = None
) -> tuple[BatchFileSummary, str]:
    """Plan the run from its settings and write its batch file: what the app's export does, as one picklable
    call for a job process. Returns the summary and the planned model's name."""
    prepared = prepare_evaluation(project, settings)
    return write_batch_file(project, prepared, path, progress), prepared.model_name


def write_batch_file(
    project: Project, prepared: EvaluationPreparation, path: str | os.PathLike, progress: Progress | None = None
) -> BatchFileSummary:
    """Write the OpenAI batch-format request file for the prepared plan (what the response cache already
    answers is stored, not written) and record it as a batch of provider 'file' for `import_results`. The plan
    is keyed, checked against the cache and written a chunk at a time, each line built and written on its own
    and its requests recorded as it goes (bounded memory); the file is written under a temporary name and
    renamed when complete (a failure removes it and its record)."""
    _check_batchable(prepared, None)
    with automatic_collection_paused():  # a few small acyclic tuples per request: passes over the plan cost more
        return _write_batch_file(project, prepared, path, progress)


def _write_batch_file(
    project: Project, prepared: EvaluationPreparation, path: str | os.PathLike, progress: Progress | None
) -> BatchFileSummary:
    progress = progress or no_progress()
    started = time.monotonic()
    target = Path(path)
    settings = prepared.settings
    run_id = _ensure_run(project, prepared)
    builder = RequestBuilder(settings, prepared.preset, None)
    keyer = ModelAdapter(prepared.preset, settings.params)
    stored = store.done_keys(project.conn, run_id)
    keys = prepared.request_keys or itertools.repeat(None)  # by plan position: keyed while preparing
    # made as they are planned, not as a list first: a second process starts on the first lines at once (the list
    # of 20,000 took ~45 ms before it was forked), and 100,800 (parts, key) pairs are never held at once
    todo = (
        (parts, key)
        for parts, key in zip(prepared.job_parts(), keys)
        if not stored or (parts[0].item_id, parts[0].condition_key) not in stored
    )
    requests = prepared.request_count - (
        sum((planned.item_id, planned.condition_key) in stored for planned in prepared.plan.requests) if stored else 0
    )
    planner = _LinePlanner(
        _Contexts(prepared, builder, keyer),
        _Writer(project, OpenAICompatibleAdapter(prepared.preset, settings.params, None)),
    )
    with project.transaction() as conn:
        batch_id = batch_store.insert_batch(
            conn,
            run_id=run_id,
            provider="file",
            model=prepared.model_name,
            api_model=prepared.preset.model,
            endpoint=strip_url_credentials(prepared.preset.base_url),
            input_file=str(target.resolve()),
            state="writing",
            requests=0,
            price_json=_price_json(batch_price(prepared.price)),
            max_output_tokens=settings.params.max_output_tokens,
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    seen: dict[str, bool] = {}  # request key → answered by the cache (else: its line is written)
    lines = cached = done = 0
    recording_s_per_row = 0.0  # measured on the chunks recorded so far: the last chunk's pause foretold
    try:
        with _sink_for(project.audio, handle, requests, temp_name) as sink:
            specs: list[LineSpec] = []
            while (head := next(todo, None)) is not None:
                progress.check_cancelled()
                chunk = itertools.chain((head,), itertools.islice(todo, WRITE_CHUNK - 1))
                rows, answered, hits = [], [], {}
                chunk_end = min(done + WRITE_CHUNK, requests)
                if chunk_end >= requests and recording_s_per_row:
                    sink.last_pause(recording_s_per_row * (requests - done))
                while keyed := planner.plan(itertools.islice(chunk, PLAN_LINES)):
                    if chunk_end < requests and done + len(keyed) > chunk_end - LEAD_LINES:
                        sink.lead(chunk_end - done)  # the chunk's last lines, before its rows are recorded
                    done += len(keyed)
                    hits.update(store.cached_replies(project.conn, sorted({entry[1] for entry in keyed})))
                    for parts, key, context, how in keyed:
                        from_cache = seen.get(key)
                        if from_cache is None:
                            from_cache = seen[key] = key in hits
                            if not from_cache:
                                specs.append(planner.line(parts, key, how))
                                lines += 1
                                if len(specs) >= SEND_LINES:  # the readers start on them while the next are planned
                                    sink.write(specs)
                                    specs.clear()
                        planned = parts[0]
                        if from_cache:
                            answered.append((Job(*parts), key, context))
                        else:
                            rows.append((planned.item_id, planned.condition_key, planned.option_order, key, context))
                sink.write(specs)
                specs.clear()
                sink.pause()
                cached += len(answered)
                recording_started = time.perf_counter()
                with project.transaction() as conn:
                    batch_store.insert_requests(conn, batch_id, rows)
                _store_cached(project, run_id, answered, hits)
                if rows or answered:
                    recording_s_per_row = (time.perf_counter() - recording_started) / (len(rows) + len(answered))
                progress.report(done, max(done, requests), "requests written")
        written = sink.written
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        with project.transaction() as conn:
            batch_store.delete_batch(conn, batch_id)
        raise
    with project.transaction() as conn:
        batch_store.update_batch(conn, batch_id, state="exported", requests=lines, bytes=written)
    return BatchFileSummary(
        run_id=run_id,
        batch_id=batch_id,
        path=str(target),
        lines=lines,
        requests=done - cached,
        cached=cached,
        bytes=written,
        elapsed_s=time.monotonic() - started,
    )
