"""A take being recorded, kept on disk as it comes in: a crash, a kill or a power cut in the middle of a take
loses at most its last second, and the take is offered back the next time the project is opened (as Audacity
offers a recording cut short). Before, a take lived in memory until R stopped it.

In the project folder, `recording-spool/` holds one pair of files per take being recorded:
- `ID.pcm`, the samples as they come (mono, 16-bit little-endian PCM), appended about four times a second by the
  recorder's spool thread (never by the audio callback) and made durable once a second;
- `ID.json`, what the take is of: the speaker's id, the prompt, the sample rate, the input device, when it began.

The process recording a take holds an `flock` on its `.pcm` until the take is saved or thrown away, when both
files go. A pair whose lock can be taken was left by a process that ended: `left_takes` lists those, `claim`
locks one for this process, `ClaimedTake.samples` reads it back and `ClaimedTake.remove` deletes it. A take
another process is still recording or recovering is never listed. The folder may come from someone else: every
field of the `.json` is checked, both files must be regular files (no symbolic links) of bounded size, and a
pair that fails a check is listed with the reason and can only be removed. `takes_to_offer` is what is asked
about: a take that never heard anything (the app ended while its input was waking) is removed instead."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import stat
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from spokenbench.core.foundation.errors import InputError, InputProblem
from spokenbench.core.foundation.safe_files import read_regular_file
from spokenbench.core.recording import store
from spokenbench.core.recording.prompts import Prompt
from spokenbench.core.recording.quality import waking_zeros

SPOOL_DIR_NAME = "recording-spool"
SYNC_EVERY_S = 1.0  # what a power cut may lose of a take
MAX_TAKE_S = 3600  # an hour of reading: a longer .pcm is not read back
READ_CHUNK = 1024 * 1024  # a left take is looked through this much at a time for its first sound
SOUNDLESS_GRACE_S = 30.0  # a soundless left take written since then is left alone (`takes_to_offer`)
MAX_PCM_BYTES = 512 * 1024 * 1024  # and never more than this (an hour and a half at 48 kHz)
MAX_META_BYTES = 64 * 1024
# a look or a claim waits this long for another process's look to end (`left_takes` locks a take while it reads its
# description): not the whole life of a take being recorded or recovered, which holds its lock throughout
LOCK_WAIT_S = 0.5
RATES = range(8_000, 384_001)
ID_PATTERN = re.compile(r"[0-9A-Za-z_-]{1,80}")
TEXT_LIMITS = {"key": 1_000, "text": 100_000, "part": 100, "label": 1_000}


def spool_folder(project_dir: Path) -> Path:
    return Path(project_dir) / SPOOL_DIR_NAME


_NO_LINKS = getattr(os, "O_NOFOLLOW", 0)
_CLOSE_ON_EXEC = getattr(os, "O_CLOEXEC", 0)
_NO_WAIT = getattr(os, "O_NONBLOCK", 0)  # a FIFO in a folder from someone else never holds the open


def _lock(fd: int, wait_s: float = 0.0) -> bool:
    """An exclusive flock, trying for up to `wait_s`; True where the file system has no locks (nothing else can be
    told there: a take a live process records on such a file system could be offered to another)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return True
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        except OSError:  # no locks on this file system
            return True
        else:
            return True


def _real_folder(folder: Path, make: bool = False) -> Path:
    """The spool folder, never through a symbolic link (a project from someone else could point it anywhere)."""
    if make:
        with contextlib.suppress(FileExistsError):
            folder.mkdir()
    status = os.lstat(folder)
    if not stat.S_ISDIR(status.st_mode):
        raise NotADirectoryError(f"{folder} is not a folder (a symbolic link or a file): takes are not kept there")
    return folder


def _write_durably(path: Path, data: bytes) -> None:
    temp = path.with_name(path.name + ".part")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NO_LINKS | _CLOSE_ON_EXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def _sync_folder(folder: Path) -> None:
    """The folder's entries made durable (the renamed files survive a power cut)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _unlink_quietly(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):  # gone already, or a folder in its place: offered again, never raised
            path.unlink()


class TakeSpool:
    """The files of one take being recorded, locked by this process until `close`."""

    def __init__(self, project_dir: Path, speaker_id: int, prompt: Prompt, rate: int, device: str | None):
        """Made in this order, so that another process never sees a take of a live one unlocked or without its
        description: the samples' file under a temp name, locked; the description, durable; then the samples'
        file under its name. OSError when it cannot be made (the take is then recorded in memory only)."""
        folder = _real_folder(spool_folder(project_dir), make=True)
        self.id = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.pcm_path, self.meta_path = folder / f"{self.id}.pcm", folder / f"{self.id}.json"
        part = folder / f"{self.id}.pcm.part"
        self.fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NO_LINKS | _CLOSE_ON_EXEC, 0o644)
        self.frames = 0
        self.synced_at = time.monotonic()
        try:
            if not _lock(self.fd):  # a new file by its own name (O_EXCL), which no listing opens: never held
                raise OSError(f"{part}: could not be locked")
            meta = {
                "speaker_id": speaker_id,
                "prompt": {
                    "key": prompt.key,
                    "text": prompt.text,
                    "item_id": prompt.item_id,
                    "part": prompt.part,
                    "label": prompt.label,
                },  # fmt: skip
                "rate": rate,
                "device": device,
                "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            }
            _write_durably(self.meta_path, json.dumps(meta, ensure_ascii=False).encode("utf-8"))
            os.rename(part, self.pcm_path)
            _sync_folder(folder)
        except BaseException:
            with contextlib.suppress(OSError):
                part.unlink()
            self.close(remove=True)
            raise

    def write(self, samples: np.ndarray) -> None:
        """Append float samples as 16-bit PCM; durable once SYNC_EVERY_S has passed since the last time."""
        if len(samples) == 0 or self.fd < 0:
            return
        pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
        view = memoryview(pcm)
        while view:
            view = view[os.write(self.fd, view) :]
        self.frames += len(samples)
        if time.monotonic() - self.synced_at >= SYNC_EVERY_S:
            self.sync()

    def sync(self) -> None:
        if self.fd >= 0:
            os.fsync(self.fd)
            self.synced_at = time.monotonic()

    def close(self, remove: bool) -> None:
        """Let the take go: `remove` once it is saved or thrown away; kept (and offered at the next opening) when
        its save failed. Never raises: a file that cannot be removed is offered again, its lock let go."""
        try:
            if remove:
                _unlink_quietly(self.meta_path, self.pcm_path)
        finally:
            if self.fd >= 0:
                fd, self.fd = self.fd, -1
                with contextlib.suppress(OSError):
                    os.close(fd)  # and with it the lock


@dataclass(frozen=True)
class LeftTake:
    """A take a process that ended left in the spool. `problem`: why it cannot be read back (then only removed)."""

    id: str
    pcm_path: Path
    meta_path: Path
    speaker_id: int | None = None
    prompt: Prompt | None = None
    rate: int = 0
    device: str | None = None
    started: str = ""
    seconds: float = 0.0
    problem: str | None = None


def _text(value, name: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > TEXT_LIMITS.get(name, 1_000):
        raise ValueError(f"its {name} is not a text of at most {TEXT_LIMITS.get(name, 1_000):,} characters")
    return value


def _read_meta(meta_path: Path, pcm_size: int, take_id: str, pcm_path: Path) -> LeftTake:
    raw = read_regular_file(meta_path, MAX_META_BYTES, follow_links=False)
    meta = json.loads(raw.decode("utf-8"))
    if not isinstance(meta, dict) or not isinstance(meta.get("prompt"), dict):
        raise ValueError("it is not an object with a prompt")
    speaker_id, rate, prompt = meta.get("speaker_id"), meta.get("rate"), meta["prompt"]
    if not isinstance(speaker_id, int) or isinstance(speaker_id, bool) or not 1 <= speaker_id < 2**63:
        raise ValueError("its speaker_id is not a positive whole number")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate not in RATES:
        raise ValueError(f"its rate is not a sample rate from {RATES.start:,} to {RATES.stop - 1:,} Hz")
    item_id = prompt.get("item_id")
    if item_id is not None and (not isinstance(item_id, int) or isinstance(item_id, bool) or not 1 <= item_id < 2**63):
        raise ValueError("its prompt's item_id is not a whole number")
    if pcm_size > min(MAX_TAKE_S * rate * 2, MAX_PCM_BYTES):
        raise ValueError(f"its samples are longer than {MAX_TAKE_S // 60} minutes or {MAX_PCM_BYTES >> 20} MiB")
    return LeftTake(
        take_id,
        pcm_path,
        meta_path,
        speaker_id,
        Prompt(
            _text(prompt.get("key"), "key"),
            _text(prompt.get("text"), "text"),
            item_id,
            _text(prompt.get("part"), "part", optional=True),
            _text(prompt.get("label", ""), "label"),
        ),
        rate,
        _text(meta.get("device"), "device", optional=True),
        _text(meta.get("started", ""), "started") or "",
        pcm_size // 2 / rate,
    )


def left_takes(project_dir: Path) -> list[LeftTake]:
    """The takes processes that ended left in the project's spool, oldest first; none being recorded or recovered
    by a live process. Never raises for what the folder holds: a pair that fails a check is listed with its
    `problem`, and a spool folder that cannot be read (or is a link) lists nothing."""
    folder = spool_folder(project_dir)
    try:
        names = sorted(os.listdir(_real_folder(folder)))
    except OSError:
        return []
    left = []
    for name in names:
        take_id, dot, suffix = name.rpartition(".")
        if not dot or suffix != "pcm" or not ID_PATTERN.fullmatch(take_id):
            continue
        pcm_path, meta_path = folder / name, folder / f"{take_id}.json"
        try:
            fd = os.open(pcm_path, os.O_RDONLY | _NO_LINKS | _NO_WAIT | _CLOSE_ON_EXEC)
        except FileNotFoundError:
            continue  # saved and removed meanwhile
        except OSError as error:
            left.append(LeftTake(take_id, pcm_path, meta_path, problem=f"cannot be read ({error.strerror})"))
            continue
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                left.append(LeftTake(take_id, pcm_path, meta_path, problem="is not a regular file"))
                continue
            if not _lock(fd, LOCK_WAIT_S):
                continue  # a live process records or recovers it
            try:
                left.append(_read_meta(meta_path, status.st_size, take_id, pcm_path))
            except Exception as error:  # noqa: BLE001 - a description from anyone: deep nesting, bad bytes, …
                left.append(LeftTake(take_id, pcm_path, meta_path, problem=f"its description: {_reason(error)}"))
        finally:
            os.close(fd)
    return left


def takes_to_offer(project_dir: Path, now: float | None = None) -> list[LeftTake]:
    """The left takes to ask about: those holding sound, and those that cannot be read (to be removed). One that
    holds no sample other than exact zeros — the app ended while its input was still waking, or muted all along —
    holds nothing to keep, as R then keeps nothing, and is removed here; unless it was written in the last
    SOUNDLESS_GRACE_S, where a file system without `flock` could not tell it from a take being recorded now."""
    now = time.time() if now is None else now
    offered = []
    for left in left_takes(project_dir):
        if left.problem is None:
            try:
                claimed = ClaimedTake(left)
            except (InputError, OSError):
                continue  # claimed meanwhile: another process's
            try:
                if not claimed.holds_sound():
                    if now - os.fstat(claimed.fd).st_mtime >= SOUNDLESS_GRACE_S:
                        claimed.remove()
                    continue
            finally:
                claimed.release()
        offered.append(left)
    return offered


def _reason(error: Exception) -> str:
    if isinstance(error, RecursionError):
        return "it is nested too deeply"
    if isinstance(error, FileNotFoundError):
        return "it is missing"
    return str(error) or type(error).__name__


class ClaimedTake:
    """A left take locked by this process while it is read back and saved, or removed. One that cannot be opened
    (a link, a FIFO, a folder in its place: `problem`) is only removed: the entries themselves, never what they
    point to."""

    def __init__(self, left: LeftTake):
        self.left = left
        self.fd = -1
        if left.problem is not None:
            return
        self.fd = os.open(left.pcm_path, os.O_RDONLY | _NO_LINKS | _NO_WAIT | _CLOSE_ON_EXEC)
        if not _lock(self.fd, LOCK_WAIT_S):  # another process only looking lets go within milliseconds
            self.release()
            raise InputError(InputProblem(str(left.pcm_path), "another process is recovering this take"))

    def holds_sound(self) -> bool:
        """Whether its samples hold one that is not exactly zero: read until it is found, never past the length
        `left_takes` checked against the take's limit. An error reading says yes: reading it back tells why."""
        remaining = os.fstat(self.fd).st_size
        offset = 0
        try:
            while offset < remaining:
                chunk = os.pread(self.fd, min(remaining - offset, READ_CHUNK), offset)
                if not chunk:
                    return False
                if chunk.count(0) != len(chunk):
                    return True
                offset += len(chunk)
        except OSError:
            return True
        return False

    def samples(self) -> np.ndarray:
        """The take's samples as floats, as `Recorder.stop` returns them: without the zeros its input sent while
        waking up (`quality.waking_zeros`), and a last half sample, cut by the crash, dropped."""
        left = self.left
        if left.problem is not None:
            raise InputError(InputProblem(str(left.pcm_path), left.problem))
        limit = min(MAX_TAKE_S * left.rate * 2, MAX_PCM_BYTES)
        data = read_regular_file(left.pcm_path, limit, follow_links=False)
        usable = len(data) - len(data) % 2
        samples = np.frombuffer(data[:usable], dtype="<i2").astype(np.float32) / 32767.0
        return samples[waking_zeros(samples, left.rate) :]

    def remove(self) -> None:
        """Never raises: an entry that cannot be removed is offered again."""
        try:
            _unlink_quietly(self.left.meta_path, self.left.pcm_path)
        finally:
            self.release()

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            with contextlib.suppress(OSError):
                os.close(fd)


def prompt_as_it_is_now(conn, prompt: Prompt) -> Prompt:
    """The prompt of a take cut short as it can be stored now: an item deleted since is no longer linked (the
    prompt's key and text stay with the take)."""
    if prompt.item_id is None:
        return prompt
    return prompt if store.item_exists(conn, prompt.item_id) else dataclasses.replace(prompt, item_id=None)


def remove_left_takes_of(project_dir: Path, speaker_id: int) -> int:
    """Remove the left takes of a speaker whose consent was withdrawn (and those that cannot be read): nothing of
    their voice stays behind. How many were removed."""
    removed = 0
    for left in left_takes(project_dir):
        if left.speaker_id == speaker_id or left.problem is not None:  # an unreadable one may be theirs
            with contextlib.suppress(InputError, OSError):
                ClaimedTake(left).remove()
                removed += 1
    return removed
