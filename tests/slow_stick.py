"""A USB stick's pace for walks and slow tests: a FUSE file system passing every call through to a folder, moving
data at most at a USB 2 stick's measured speeds (8 MB/s written, 20 MB/s read, one request at a time, as a
stick's controller serves them). Copying a 112 MB pack onto it takes ~14.6 s, as on a real USB 2 stick.

    with SlowStick(folder) as stick:   # stick.mounted is the stick's root
        ...

Needs /dev/fuse, libfuse2 and fusepy (`pip install fusepy`, in the `test` extra); `missing()` says what is
missing. Run as a script it is the file system itself: `python tests/slow_stick.py BACK MOUNT WRITE_MBS READ_MBS`."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

WRITE_MB_S = 8.0
READ_MB_S = 20.0


def missing() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if shutil.which("fusermount") is None and shutil.which("fusermount3") is None:
        return "no fusermount (apt-get install fuse3)"
    try:
        import fuse  # noqa: F401  (fusepy)
    except (ImportError, OSError) as error:
        return f"fusepy cannot be used ({error}): pip install fusepy; apt-get install libfuse2"
    return None


class SlowStick:
    def __init__(self, folder: Path, write_mb_s: float = WRITE_MB_S, read_mb_s: float = READ_MB_S):
        self.backing, self.mounted = folder / "stick-data", folder / "stick"
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mounted.mkdir(parents=True, exist_ok=True)
        self.rates = (write_mb_s, read_mb_s)
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> SlowStick:
        command = [sys.executable, __file__, str(self.backing), str(self.mounted), *map(str, self.rates)]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not os.path.ismount(self.mounted):
            if self.process.poll() is not None or time.monotonic() > deadline:
                why = self.process.stderr.read() if self.process.poll() is not None else "not mounted after 20 s"
                raise OSError(f"the slow stick did not mount: {why}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        unmount = shutil.which("fusermount") or shutil.which("fusermount3")
        subprocess.run([unmount, "-u", str(self.mounted)], capture_output=True)
        if os.path.ismount(self.mounted):
            subprocess.run(["umount", "-l", str(self.mounted)], capture_output=True)
        if self.process is not None:
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def serve(backing: str, mounted: str, write_mb_s: float, read_mb_s: float) -> None:
    from fuse import FUSE, FuseOSError, Operations

    class Device:
        """One request at a time, each taking its bytes' time at the stick's speed."""

        def __init__(self):
            self.lock, self.free_at = threading.Lock(), time.monotonic()

        def take(self, size: int, bytes_per_s: float) -> None:
            with self.lock:
                now = time.monotonic()
                self.free_at = max(now, self.free_at) + size / bytes_per_s
                wait = self.free_at - now
            time.sleep(wait)

    class Passthrough(Operations):
        def __init__(self):
            self.device = Device()

        def _path(self, path: str) -> str:
            return os.path.join(backing, path.lstrip("/"))

        def access(self, path, mode):
            if not os.access(self._path(path), mode):
                raise FuseOSError(errno.EACCES)

        def chmod(self, path, mode):
            os.chmod(self._path(path), mode)

        def chown(self, path, uid, gid):
            os.chown(self._path(path), uid, gid)

        def create(self, path, mode, fi=None):
            return os.open(self._path(path), os.O_RDWR | os.O_CREAT | os.O_TRUNC, mode)

        def flush(self, path, fh):
            return 0

        def fsync(self, path, datasync, fh):
            return os.fsync(fh)

        def getattr(self, path, fh=None):
            st = os.lstat(self._path(path))
            keys = ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size", "st_uid")
            return {key: getattr(st, key) for key in keys}

        def link(self, target, source):
            return os.link(self._path(source), self._path(target))

        def mkdir(self, path, mode):
            return os.mkdir(self._path(path), mode)

        def open(self, path, flags):
            return os.open(self._path(path), flags)

        def read(self, path, size, offset, fh):
            data = os.pread(fh, size, offset)
            self.device.take(len(data), read_mb_s * 1e6)
            return data

        def readdir(self, path, fh):
            return [".", "..", *os.listdir(self._path(path))]

        def readlink(self, path):
            return os.readlink(self._path(path))

        def release(self, path, fh):
            return os.close(fh)

        def rename(self, old, new):
            return os.rename(self._path(old), self._path(new))

        def rmdir(self, path):
            return os.rmdir(self._path(path))

        def statfs(self, path):
            st = os.statvfs(self._path(path))
            keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag")
            return {key: getattr(st, key) for key in (*keys, "f_frsize", "f_namemax")}

        def symlink(self, target, source):
            return os.symlink(source, self._path(target))

        def truncate(self, path, length, fh=None):
            os.truncate(self._path(path), length)

        def unlink(self, path):
            return os.unlink(self._path(path))

        def utimens(self, path, times=None):
            return os.utime(self._path(path), times)

        def write(self, path, data, offset, fh):
            self.device.take(len(data), write_mb_s * 1e6)
            return os.pwrite(fh, data, offset)

    FUSE(Passthrough(), mounted, foreground=True, allow_other=True, big_writes=True, max_write=131072)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
