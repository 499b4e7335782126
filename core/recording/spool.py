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
pair that fails a check is listed with the reason and can only be removed."""

from __future__ import annotations

import contextlib
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
from spokenbench.core.recording.prompts import Prompt

SPOOL_DIR_NAME = "recording-spool"
SYNC_EVERY_S = 1.0  # what a power cut may lose of a take
MAX_TAKE_S = 3600  # an hour of reading: a longer .pcm is not read back
MAX_META_BYTES = 64 * 1024
RATES = range(8_000, 384_001)
ID_PATTERN = re.compile(r"[0-9A-Za-z_-]{1,80}")
TEXT_LIMITS = {"key": 1_000, "text": 100_000, "part": 100, "label": 1_000}


def spool_folder(project_dir: Path) -> Path:
    return Path(project_dir) / SPOOL_DIR_NAME


def _lock(fd: int) -> bool:
    """An exclusive flock without waiting; True where the file system has no locks (nothing else can be told)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # no locks on this file system
        return True
    return True


class TakeSpool:
    """The files of one take being recorded, locked by this process until `close`."""

    def __init__(self, project_dir: Path, speaker_id: int, prompt: Prompt, rate: int, device: str | None):
        folder = spool_folder(project_dir)
        folder.mkdir(exist_ok=True)
        self.id = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.pcm_path, self.meta_path = folder / f"{self.id}.pcm", folder / f"{self.id}.json"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self.fd = os.open(self.pcm_path, flags, 0o644)
        self.frames = 0
        self.synced_at = time.monotonic()
        try:
            _lock(self.fd)
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
            temp = self.meta_path.with_suffix(".json.part")
            temp.write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")
            os.replace(temp, self.meta_path)
        except BaseException:
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
        its save failed."""
        if remove:
            for path in (self.meta_path, self.pcm_path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
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
    if not isinstance(speaker_id, int) or isinstance(speaker_id, bool) or speaker_id < 1:
        raise ValueError("its speaker_id is not a positive whole number")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate not in RATES:
        raise ValueError(f"its rate is not a sample rate from {RATES.start:,} to {RATES.stop - 1:,} Hz")
    item_id = prompt.get("item_id")
    if item_id is not None and (not isinstance(item_id, int) or isinstance(item_id, bool)):
        raise ValueError("its prompt's item_id is not a whole number")
    if pcm_size > MAX_TAKE_S * rate * 2:
        raise ValueError(f"its samples are longer than {MAX_TAKE_S // 60} minutes")
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
    by a live process. Never raises for a file: one that fails a check is listed with its `problem`."""
    folder = spool_folder(project_dir)
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    left = []
    for name in names:
        take_id, dot, suffix = name.rpartition(".")
        if not dot or suffix != "pcm" or not ID_PATTERN.fullmatch(take_id):
            continue
        pcm_path, meta_path = folder / name, folder / f"{take_id}.json"
        try:
            fd = os.open(pcm_path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as error:
            left.append(LeftTake(take_id, pcm_path, meta_path, problem=f"cannot be read ({error.strerror})"))
            continue
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode):
                left.append(LeftTake(take_id, pcm_path, meta_path, problem="is not a regular file"))
                continue
            if not _lock(fd):
                continue  # a live process records or recovers it
            try:
                left.append(_read_meta(meta_path, status.st_size, take_id, pcm_path))
            except (OSError, InputError, ValueError, UnicodeDecodeError) as error:
                left.append(LeftTake(take_id, pcm_path, meta_path, problem=f"its description: {error}"))
        finally:
            os.close(fd)
    return left


class ClaimedTake:
    """A left take locked by this process while it is read back and saved, or removed."""

    def __init__(self, left: LeftTake):
        self.left = left
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self.fd = os.open(left.pcm_path, flags)
        if not _lock(self.fd):
            os.close(self.fd)
            raise InputError(InputProblem(str(left.pcm_path), "another process is recovering this take"))

    def samples(self) -> np.ndarray:
        """The take's samples as floats (a last half sample, cut by the crash, is dropped)."""
        left = self.left
        if left.problem is not None:
            raise InputError(InputProblem(str(left.pcm_path), left.problem))
        limit = MAX_TAKE_S * left.rate * 2
        data = read_regular_file(left.pcm_path, limit, follow_links=False)
        usable = len(data) - len(data) % 2
        return np.frombuffer(data[:usable], dtype="<i2").astype(np.float32) / 32767.0

    def remove(self) -> None:
        for path in (self.left.meta_path, self.left.pcm_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.release()

    def release(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def remove_left_takes_of(project_dir: Path, speaker_id: int) -> int:
    """Remove the left takes of a speaker whose consent was withdrawn (and those that cannot be read): nothing of
    their voice stays behind. How many were removed."""
    removed = 0
    for left in left_takes(project_dir):
        if left.speaker_id == speaker_id or left.problem is not None:
            with contextlib.suppress(InputError, OSError):
                ClaimedTake(left).remove()
                removed += 1
    return removed
