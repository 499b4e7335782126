"""Content-addressed audio: a file is named by the sha256 of its bytes (audio/ab/abcd….wav), so equal
audio is stored once and a name always means the same sound. Writes go to a temp file that is fsynced and
renamed into place, so a kill at any moment leaves either the whole file or none. A temp file belongs to the
process that made it (its name starts with that process's host and pid): another process opening the project
removes only temp files whose owner is gone, never one still being written."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
from pathlib import Path

from spokenbench.core.errors import ProjectError
from spokenbench.core.processes import owner_tag, tagged_owner_alive

TEMP_DIR_NAME = ".incoming"
STALE_FOREIGN_TEMP_S = 86_400  # a temp file of unknown owner older than a day is garbage


class AudioStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.temp_dir = self.root / TEMP_DIR_NAME

    def path_for(self, sha256: str, extension: str) -> Path:
        return self.root / sha256[:2] / f"{sha256}.{extension.lstrip('.')}"

    def put_bytes(self, data: bytes, extension: str) -> str:
        """Store bytes durably and return their sha256. Storing the same bytes again is a no-op."""
        if not data:
            raise ValueError("refusing to store empty audio")
        sha256 = hashlib.sha256(data).hexdigest()
        target = self.path_for(sha256, extension)
        if target.exists() and target.stat().st_size == len(data) and _file_sha256(target) == sha256:
            return sha256  # already stored intact (a damaged file of the same size is replaced below)
        try:
            self.temp_dir.mkdir(parents=True, exist_ok=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, temp_name = tempfile.mkstemp(dir=self.temp_dir, prefix=f"{owner_tag()}.", suffix=".part")
        except OSError as error:  # a read-only project, a full disk: say so, never a traceback
            raise ProjectError(f"cannot store audio in {self.root}: {error.strerror or error}") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp_name, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp_name)
            raise
        _fsync_directory(target.parent)
        return sha256

    def has(self, sha256: str | None, extension: str | None) -> bool:
        """Whether the file is there (not whether it is intact: `read_bytes` and `spokenbench check` verify that)."""
        return bool(sha256 and extension) and self.path_for(sha256, extension).is_file()

    def read_bytes(self, sha256: str, extension: str) -> bytes:
        path = self.path_for(sha256, extension)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ProjectError(f"audio file {path} is missing from the project") from None
        if hashlib.sha256(data).hexdigest() != sha256:
            raise ProjectError(f"audio file {path} is damaged: its content no longer matches its name")
        return data

    def remove_stale_temp_files(self, foreign_max_age_s: float = STALE_FOREIGN_TEMP_S) -> int:
        """Remove temp files left by killed writers: those whose owner process is gone, and those of unknown
        owners (another machine, an older version) once they are older than `foreign_max_age_s`."""
        if not self.temp_dir.is_dir():
            return 0
        removed = 0
        now = time.time()
        for leftover in self.temp_dir.iterdir():
            alive = tagged_owner_alive(leftover.name)
            try:
                stale = alive is False or (alive is None and now - leftover.stat().st_mtime > foreign_max_age_s)
                if stale:
                    leftover.unlink()
                    removed += 1
            except OSError:  # gone meanwhile, or a read-only project: nothing to clean here
                continue
        return removed


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
