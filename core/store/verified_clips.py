"""Clips this machine has already hashed, so a batch file does not hash them again (nine models evaluated on the
same clips write nine batch files over the same audio): git's index does the same for its working tree.

An entry says "the file at (device, inode) with this size, mtime and ctime had the bytes named sha256". It is
written only after this process hashed the bytes itself, and it is kept in the user's cache folder, never in a
project, so a project from someone else cannot vouch for its own files: its copies have inodes of their own and are
hashed on first use. A file's ctime is set by the kernel on every write, rename into place or `os.utime` (no user
tool sets it back), and a replaced file has a new inode, so a match means the bytes are unchanged since they were
hashed. A file changed within RACY_NS of the hash could still carry the same times (timestamps are coarse), so
such a file is not recorded (git's "racily clean" rule): it is hashed again next time.

The cache only ever saves work: when it is off ($SPOKENBENCH_VERIFY_EVERY_READ=1), unwritable, busy past its
timeout or damaged, every clip is hashed, as without it, and the user sees no error."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Iterable

from spokenbench.core.foundation.errors import ProjectError
from spokenbench.core.foundation.user_dirs import cache_dir
from spokenbench.core.store.database import connect_with_journal

VERIFY_EVERY_READ_VARIABLE = "SPOKENBENCH_VERIFY_EVERY_READ"
CACHE_FILE_NAME = "verified-clips.sqlite"
RACY_NS = 2_000_000_000  # a file written this close to its hash is not recorded (git's racily clean rule)
MAX_ENTRIES = 1 << 19  # ~60 MB of cache; beyond it the oldest quarter is dropped (they are hashed again if met)
BUSY_TIMEOUT_MS = 1000  # another process's write: waited for this long, then this one's entries are dropped
SAVE_EVERY = 2048  # entries kept before they are written (one short transaction each)
SKIP_UNIT_CLIPS = 32  # the unit the skipping below counts in: a reader thread's look-up (a task of 32 lines)
MAX_SKIPPED_LOOK_UPS = 16  # after look-ups that found nothing (clips never seen: a first batch file), the next 1, 3,
# 7, then up to this many units of clips are skipped (hashed, as they would be); one that finds an entry resets it.
# Counted in clips, so a look-up of a whole 512-line unit (a second process's) skips no more clips than 16 of 32
_INT64 = 1 << 63

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verified_clips (
    sha256 TEXT NOT NULL,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL,
    verified_at_ns INTEGER NOT NULL,
    PRIMARY KEY (sha256, dev, ino)
) WITHOUT ROWID
"""

StatKey = tuple[int, int, int, int, int]  # (dev, ino, size, mtime_ns, ctime_ns), each as SQLite stores it


def _signed(value: int) -> int:
    """An unsigned 64-bit stat field (an inode on some file systems) as SQLite's signed integer."""
    return value - (_INT64 << 1) if value >= _INT64 else value


def stat_key(status: os.stat_result) -> StatKey:
    return (
        _signed(status.st_dev),
        _signed(status.st_ino),
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
    )


class VerifiedClips:
    """The cache, opened by `open_verified_clips`. Used by one thread at a time (a batch file's reader): `look_up`
    the clips about to be read, ask `vouches` per file, `record` each file hashed, `close` at the end."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn: sqlite3.Connection | None = conn
        self._known: set[tuple] = set()
        self._pending: list[tuple] = []
        self._recorded = 0
        self._missed = self._skipping = 0  # clips in a row looked up and not found; clips still to skip

    def look_up(self, sha256s: Iterable[str]) -> None:
        """Load what is known of these clips (one query; what was loaded before is forgotten, memory bounded).
        While look-ups find nothing, more and more of them are skipped: a first batch file queries ~40 times for
        20,000 clips instead of 625 (its clips are hashed all the same)."""
        self._known = set()
        if self._conn is None:
            return
        names = list(dict.fromkeys(sha256s))
        if not names:
            return
        if self._skipping > 0:
            self._skipping -= len(names)
            return
        try:
            rows = self._conn.execute(
                "SELECT sha256, dev, ino, size, mtime_ns, ctime_ns FROM verified_clips "
                f"WHERE sha256 IN ({','.join('?' * len(names))})",
                names,
            ).fetchall()
        except sqlite3.Error:
            self._give_up()
            return
        self._known = set(rows)
        self._missed = 0 if rows else self._missed + len(names)
        units_missed = min(self._missed // SKIP_UNIT_CLIPS, MAX_SKIPPED_LOOK_UPS.bit_length())
        self._skipping = min(MAX_SKIPPED_LOOK_UPS, (1 << units_missed) - 1) * SKIP_UNIT_CLIPS

    def sizes(self) -> dict[str, int]:
        """The size of each clip the last `look_up` found (any entry of a sha256 has its bytes' size: a file that
        has another size no longer holds those bytes, and is hashed and refused when read)."""
        return {entry[0]: entry[3] for entry in self._known}

    def entries_for(self, sha256s: set[str]) -> list[tuple]:
        """What the last `look_up` found of these clips, for another process to `take`."""
        return [entry for entry in self._known if entry[0] in sha256s]

    def take(self, entries: Iterable[tuple]) -> None:
        """Vouch for the clips about to be read by what another process's `look_up` found of them (a batch file's
        second process: its lines' clips are looked up with the unit they were planned in, one query, not one per
        read); nothing if this cache has failed."""
        self._known = set(entries) if self._conn is not None else set()

    def vouches(self, sha256: str, status: os.stat_result) -> bool:
        """Whether the file with this stat was hashed as `sha256` and is unchanged since (`look_up` first)."""
        return (sha256, *stat_key(status)) in self._known

    def record(self, sha256: str, status: os.stat_result, read_started_ns: int) -> None:
        """Remember a file this process hashed as `sha256`, unless it changed within RACY_NS of the read."""
        if self._conn is None or max(status.st_mtime_ns, status.st_ctime_ns) > read_started_ns - RACY_NS:
            return
        self._pending.append((sha256, *stat_key(status), read_started_ns))
        if len(self._pending) >= SAVE_EVERY:
            self.save()

    def save(self) -> None:
        """Write the recorded entries in one short transaction (on any failure they are dropped)."""
        pending, self._pending = self._pending, []
        if self._conn is None or not pending:
            return
        try:
            with self._conn:
                self._conn.executemany("INSERT OR REPLACE INTO verified_clips VALUES (?, ?, ?, ?, ?, ?, ?)", pending)
            self._recorded += len(pending)
        except sqlite3.Error:
            self._give_up()

    def close(self) -> None:
        """Save, drop the oldest entries past MAX_ENTRIES (when this process added some), and close."""
        self.save()
        if self._conn is None:
            return
        try:
            if self._recorded:
                self._prune()
        except sqlite3.Error:
            pass
        finally:
            self._conn.close()
            self._conn = None

    def _prune(self) -> None:
        (count,) = self._conn.execute("SELECT count(*) FROM verified_clips").fetchone()
        if count <= MAX_ENTRIES:
            return
        keep = MAX_ENTRIES * 3 // 4
        with self._conn:
            self._conn.execute(
                "DELETE FROM verified_clips WHERE verified_at_ns < (SELECT verified_at_ns FROM verified_clips "
                "ORDER BY verified_at_ns DESC LIMIT 1 OFFSET ?)",
                (keep - 1,),
            )

    def _give_up(self) -> None:
        """The cache failed (damaged, locked too long, disk full): every clip is hashed from now on."""
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn, self._known, self._pending = None, set(), []


def create_verified_clips() -> None:
    """Make the cache's file if there is none yet, before two processes open it at once (a batch file's second
    process): both making it, one could find it locked while the other turns on WAL or creates the table, and go
    without the cache (its clips hashed again by the next file). Nothing when the file exists or the cache is off."""
    with contextlib.suppress(OSError, RuntimeError):
        if (cache_dir() / CACHE_FILE_NAME).exists():
            return
    verified = open_verified_clips()
    if verified is not None:
        verified.close()


def open_verified_clips() -> VerifiedClips | None:
    """The user's cache of verified clips, or None when it is off or cannot be used (then every clip is hashed)."""
    if os.environ.get(VERIFY_EVERY_READ_VARIABLE, "").strip() not in ("", "0"):
        return None
    conn = None
    try:
        folder = cache_dir()  # RuntimeError: no home folder to be found
        path = folder / CACHE_FILE_NAME
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.lstat(path).st_mode):  # a link or anything else there: not ours, not used
                return None
        if not os.access(folder, os.W_OK):
            return None
        # WAL, or a rollback journal where the home folder cannot share WAL's index, as for a project
        conn, mode = connect_with_journal(
            path, lambda: sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        )
        if mode.lower() == "wal":  # with a rollback journal it stays FULL: there NORMAL could damage the file
            conn.execute("PRAGMA synchronous = NORMAL")  # a lost entry only costs a hash
        conn.execute(_SCHEMA)
        conn.execute("SELECT 1 FROM verified_clips LIMIT 1").fetchall()
    except (OSError, RuntimeError, sqlite3.Error, ProjectError):
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        return None
    return VerifiedClips(conn)
