"""Locks and durable renames on whatever file system a project, report or pack sits on: a local disk, a USB
stick through FUSE, a network share. Locks are advisory `flock`s: where a file system has none (or does not
share them between machines), the work goes on without one rather than failing."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from spokenbench.core.foundation.processes import left_behind, owner_tag
from spokenbench.core.foundation.progress import Progress

LOCK_POLL_S = 0.05
_log = logging.getLogger(__name__)


def fsync_directory(directory: Path) -> None:
    """Make a rename into `directory` durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def folder_lock(folder: Path, progress: Progress | None = None, lock_file: str | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `folder` while the block runs, waiting for another thread or process that holds
    it; the wait ends with `Cancelled` when `progress` is cancelled. Threads of this process take turns whatever
    the file system; processes through an `flock` on the folder itself or, with `lock_file`, on that regular file
    in it (made if missing) — which NFS needs: it emulates `flock` with byte-range locks, which a folder opened for
    reading cannot take. Where the file system refuses locks (or is not POSIX), processes go on unlocked, once
    logged."""
    key = os.path.realpath(folder)
    with _IN_PROCESS_GUARD:
        in_process = _IN_PROCESS_LOCKS.setdefault(key, threading.Lock())
    while not in_process.acquire(timeout=LOCK_POLL_S):
        if progress is not None:
            progress.check_cancelled()
    try:
        with _file_lock(Path(folder), lock_file, progress):
            yield
    finally:
        in_process.release()


_IN_PROCESS_GUARD = threading.Lock()
_IN_PROCESS_LOCKS: dict[str, threading.Lock] = {}
_REFUSED: set[str] = set()  # folders whose file system refused a lock (logged once each)


@contextlib.contextmanager
def _file_lock(folder: Path, lock_file: str | None, progress: Progress | None) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    try:
        if lock_file is None:
            fd = os.open(folder, os.O_RDONLY)
        else:
            fd = os.open(folder / lock_file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o666)
    except OSError as error:
        _refused(folder, error)
        yield
        return
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if progress is not None:
                    progress.check_cancelled()
                time.sleep(LOCK_POLL_S)
            except OSError as error:  # no locks here
                _refused(folder, error)
                break
        yield
    finally:
        os.close(fd)  # and with it the lock


def _refused(folder: Path, error: OSError) -> None:
    if str(folder) not in _REFUSED:
        _REFUSED.add(str(folder))
        _log.warning(f"note: {folder}: no file lock here ({error.strerror or error}); other programs are not kept out")


def replace_atomically(
    path: Path, write: Callable[[BinaryIO], None], mode: int, before_replace: Callable[[], None] | None = None
) -> None:
    """Write `path` through a temp file beside it, made durable and then renamed into place with `mode`: a crash
    or a kill leaves the old file whole. `before_replace` runs once the new file is durable, before it
    appears: if it fails, nothing appears. The temp file is named after this process (`owner_tag`), so that one
    a killed process left can be told from one still being written (`remove_left_behind_temp_files`)."""
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f"{_temp_prefix(path)}{owner_tag()}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, mode)
        if before_replace is not None:
            before_replace()
        os.replace(temp_name, path)
    except BaseException:
        if os.path.exists(temp_name):
            os.unlink(temp_name)
        raise
    fsync_directory(path.parent)  # the rename too: "saved" must survive a stick pulled right after


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def make_temp_folder(path: Path) -> Path:
    """An empty temp folder beside `path`, named as `replace_atomically` names its files, for a folder that is to
    appear at `path` complete or not at all (`os.replace`); those killed processes left are removed first."""
    remove_left_behind_temp_files(path)
    return Path(tempfile.mkdtemp(dir=path.parent, prefix=f"{_temp_prefix(path)}{owner_tag()}.", suffix=".part"))


def remove_left_behind_temp_files(path: Path) -> int:
    """Remove the temp files (`replace_atomically`) and folders (`make_temp_folder`) of `path` that a process
    killed while writing left beside it (a quit that could not wait, a pulled stick): each can be as large as
    the file. One still being written, or another machine's from the last day, is left alone. Returns how many
    were removed."""
    prefix, removed = _temp_prefix(path), 0
    with contextlib.suppress(OSError):
        for entry in path.parent.iterdir():
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(".part")):
                continue
            with contextlib.suppress(OSError):  # gone meanwhile, or not ours to remove
                if entry.is_symlink() or not left_behind(entry, name[len(prefix) :]):
                    continue
                if entry.is_dir():
                    shutil.rmtree(entry)
                elif entry.is_file():
                    entry.unlink()
                removed += 1
    return removed
