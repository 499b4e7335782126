"""Whether a process that left something behind (a job row, a temp file, a staging file) still runs (files and
rows carry their owner's host and pid; only the owner may remove them while it lives), and whether a second
process would get a core of its own."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

# Linux's first PID namespace (PROC_PID_INIT_INO): the machine's own, outside containers
INIT_PID_NAMESPACE = 0xEFFFFFFC


def host_identity(hostname: str, pid_namespace_link: str | None) -> str:
    """This machine's name as job rows and temporary names record it: the hostname, with the PID namespace added
    for a process in one of its own (a container that shares the machine's name, as `docker run --network=host`
    does). Its pids mean nothing outside it, so to every other process it is another machine, whose liveness
    only a heartbeat or age can tell — not a pid that may be absent, or another process's, out here."""
    namespace = None
    if pid_namespace_link and pid_namespace_link.startswith("pid:[") and pid_namespace_link.endswith("]"):
        digits = pid_namespace_link[5:-1]
        namespace = int(digits) if digits.isdigit() else None
    if namespace is None or namespace == INIT_PID_NAMESPACE:
        return hostname
    return f"{hostname}/pidns{namespace}"


def _pid_namespace_link() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:  # not Linux, or /proc not mounted
        return None


THIS_HOST = host_identity(socket.gethostname(), _pid_namespace_link())


def process_alive(pid: int, host: str = THIS_HOST) -> bool | None:
    """Whether the process runs; None when it runs on another machine (only a heartbeat or age can tell)."""
    if host != THIS_HOST:
        return None
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    # a killed child its parent has not reaped yet still answers kill(0): read its state
    return process_state(pid) not in ("Z", "X")


def process_stopped(pid: int) -> bool:
    """Whether a process on this machine is stopped (Ctrl+Z, SIGSTOP, a debugger's trace stop)."""
    return process_state(pid) in ("T", "t")


def process_state(pid: int) -> str | None:
    """The state letter of a process on this machine (R, S, T for stopped, Z, ...), None when it cannot be read."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError, ValueError):
        return None


_TAG_HOST = THIS_HOST.replace(".", "_").replace("/", "-")  # one name part: no dot, no folder
# what a process of unknown fate left (another machine, an older version) is garbage after a day
STALE_FOREIGN_S = 86_400


def owner_tag() -> str:
    """`host.pid`, the prefix of every temporary name this process creates in a project."""
    return f"{_TAG_HOST}.{os.getpid()}"


def tagged_owner_alive(name: str) -> bool | None:
    """Whether the process that created a file named `owner_tag()…` still runs; None when that cannot be told
    (another machine's file, or a name of another shape): then only the file's age can say it is stale."""
    parts = name.split(".")
    if len(parts) < 3 or not parts[1].isdigit() or parts[0] != _TAG_HOST:
        return None
    return process_alive(int(parts[1]))


def left_behind(path: Path, tag: str, foreign_max_age_s: float = STALE_FOREIGN_S) -> bool:
    """Whether `path`, named after its creator's `tag` (`owner_tag()…`), was left behind by a killed process: its
    creator is gone, or cannot be asked (another machine, an older version) and the file is older than
    `foreign_max_age_s`. OSError when the path is gone meanwhile."""
    alive = tagged_owner_alive(tag)
    return alive is False or (alive is None and time.time() - path.lstat().st_mtime > foreign_max_age_s)


def usable_cores() -> int:
    """Cores this process may run on (its affinity, where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def a_core_is_free() -> bool:
    """Whether a second process would get a core of its own: two cores or more and, where the load is known, at
    least one idle. On a machine already busy (measured: 2 cores, load 4-7) the second process only competes for
    the same cores (the scheduler shares them per session), so work split in two takes as long as one after the
    other, or longer, and adds its own start and hand-over to the CPU time. The 1-minute load average lags: for a
    minute after work ends (the previous model's batch file, written just before) it still says ~1 with both cores
    idle, so where the system tells how many threads run right now, the lower of the two is the load."""
    cores = usable_cores()
    if cores < 2:
        return False
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return True
    running = threads_running_now()
    if running is not None:
        load = min(load, running)
    return load <= cores - 1


LOADAVG_FILE = "/proc/loadavg"  # Linux: "0.52 0.58 0.59 2/467 12345", the 4th field runnable/all threads
RUNNING_SAMPLES = 3  # reads ~1 ms apart, the largest kept: a momentary lull on a busy machine is not idle


def threads_running_now() -> int | None:
    """Threads running or waiting to run on this machine now, other than the one asking (the largest of a few
    reads of /proc/loadavg); None where the system does not tell."""
    counts = []
    for sample in range(RUNNING_SAMPLES):
        if sample:
            time.sleep(0.001)
        try:
            with open(LOADAVG_FILE, "rb") as loadavg:
                counts.append(int(loadavg.read(256).split()[3].split(b"/")[0]) - 1)  # the reading thread runs too
        except (OSError, ValueError, IndexError):
            return None
    return max(0, *counts)


# Linux: every file lock on the machine, "1: POSIX ADVISORY WRITE pid maj:min:inode start end"
LOCKS_FILE = "/proc/locks"
WAL_WRITE_LOCK_BYTE = 120  # SQLite's WAL write lock: a byte of the -shm file (WAL_WRITE_LOCK at WALINDEX_LOCK_OFFSET)
RESERVED_LOCK_BYTE = 0x40000001  # a rollback-journal database's RESERVED lock: a byte of the database file


def write_lock_holders(database: str | os.PathLike, limit: int = 5) -> list[tuple[int, str, bool]]:
    """The other processes of this machine that hold an SQLite database's write lock, from the file locks the
    kernel lists (Linux /proc/locks: any user's processes, no per-process scan): (pid, command line, stopped).
    Empty where that cannot be read or no other process of this machine holds it (another machine sharing the
    folder, or another connection of this process)."""
    # inode → the byte whose write lock is the database's write lock. By inode alone: the kernel lists a file
    # system's own device number, which a btrfs subvolume's stat does not give; a WRITE lock on exactly that byte
    # of a file with that inode is SQLite's.
    wanted = {}
    for path, byte in ((f"{os.fspath(database)}-shm", WAL_WRITE_LOCK_BYTE), (database, RESERVED_LOCK_BYTE)):
        try:
            wanted[os.stat(path).st_ino] = byte
        except OSError:
            continue
    if not wanted:
        return []
    try:
        with open(LOCKS_FILE, "rb") as locks:
            lines = locks.read(4 << 20).decode("ascii", "replace").splitlines()
    except OSError:
        return []
    holders: list[tuple[int, str, bool]] = []
    for line in lines:
        fields = line.split()
        if "->" in fields or len(fields) < 8 or fields[3] != "WRITE":  # "->": a lock waited for, not held
            continue
        try:
            pid, inode = int(fields[4]), int(fields[5].rsplit(":", 1)[-1])
            start, end = int(fields[6]), (None if fields[7] == "EOF" else int(fields[7]))
        except ValueError:
            continue
        byte = wanted.get(inode)
        if byte is None or pid <= 0 or pid == os.getpid() or not start <= byte <= (byte if end is None else end):
            continue  # (this process: another of its own connections, not another process)
        if pid not in [holder[0] for holder in holders]:
            holders.append((pid, _command_line(pid), process_stopped(pid)))
        if len(holders) >= limit:
            break
    return holders


def _command_line(pid: int) -> str:
    """A process's command line as one short printable line ("" when it cannot be read)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            raw = file.read(4096)
    except OSError:
        return ""
    text = " ".join(part.decode("utf-8", "backslashreplace") for part in raw.split(b"\0") if part)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= 120 else text[:119] + "…"
