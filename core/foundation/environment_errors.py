"""Failures of the machine or of the files rather than of the program — a damaged project database, a full
disk, a folder without permission — put in words a user can act on. The CLI reports them like user errors
(exit code 2); every other exception that escapes a command is a bug and is reported as one."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

# SQLite's own error names (sqlite3.Error.sqlite_errorname), by prefix: what they mean for the user.
_DATABASE_PROBLEMS = {
    "SQLITE_CORRUPT": "the project database is damaged",
    "SQLITE_NOTADB": "the project database is damaged (it is not an SQLite database)",
    "SQLITE_FULL": "the disk is full",
    "SQLITE_IOERR": "the disk reported an input/output error",
    "SQLITE_CANTOPEN": "the project database cannot be opened",
    "SQLITE_READONLY": "the project database cannot be written",
}
_DATABASE_HINTS = {
    "SQLITE_CORRUPT": "restore project.sqlite from a backup (each upgrade keeps one as project.schemaN.bak.sqlite)",
    "SQLITE_NOTADB": "restore project.sqlite from a backup (each upgrade keeps one as project.schemaN.bak.sqlite)",
    "SQLITE_FULL": "free some space and try again; everything reported saved is kept",
    "SQLITE_IOERR": "check the disk, then try again",
}
# OS errors that describe the environment; the first group only when they name the file they are about.
_FILE_ERRNOS = {errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.EACCES, errno.EPERM}
_MACHINE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG, errno.EMFILE, errno.ENFILE}


def explain_environment_error(error: BaseException, project: str | os.PathLike | None = None) -> str | None:
    """A message for `error` if it is a problem of the disk, the files or the project database; None if it may
    be a bug. `project` (the command's project folder, if any) names the database in the message."""
    if isinstance(error, sqlite3.OperationalError) and str(error).startswith("Could not decode to UTF-8"):
        where = f"{Path(project) / 'project.sqlite'}: " if project is not None else ""
        return (
            f"{where}the project database holds text that is not UTF-8, which another program wrote ({error}); "
            "what was reported saved is kept. `spokenbench check PROJECT` lists every such value"
        )
    if isinstance(error, sqlite3.OperationalError) and (getattr(error, "sqlite_errorname", "") or "").startswith(
        "SQLITE_BUSY"
    ):
        return _write_lock_held(error, project)
    if isinstance(error, sqlite3.DatabaseError):
        name = getattr(error, "sqlite_errorname", "") or ""
        prefix = next((p for p in _DATABASE_PROBLEMS if name.startswith(p)), None)
        if prefix is None and type(error) is sqlite3.DatabaseError:  # SQLite without error names: by message
            text = str(error)
            prefix = "SQLITE_NOTADB" if "not a database" in text else "SQLITE_CORRUPT" if "malformed" in text else None
        if prefix is None:
            return None
        where = f"{Path(project) / 'project.sqlite'}: " if project is not None else ""
        unreachable = why_unreachable(project) if prefix in ("SQLITE_IOERR", "SQLITE_CANTOPEN") else None
        if unreachable is not None and prefix == "SQLITE_IOERR":  # it was there: the connection had read it
            return (
                f"{where}the project can no longer be reached ({unreachable}; {error}): was its drive removed, or "
                "its network share disconnected? Put it back, then try again; everything reported saved is kept"
            )
        if unreachable is not None:
            return (
                f"{where}{_DATABASE_PROBLEMS[prefix]} ({unreachable}; {error}): if it is on a drive that was "
                "removed or a network share that disconnected, put it back, then try again"
            )
        hint = _DATABASE_HINTS.get(prefix)
        database = Path(project) / "project.sqlite" if project is not None else None
        files = [f"{database}{suffix}" for suffix in ("", "-wal", "-journal")] if database else []
        limit = _size_limit_reached(files) if prefix in ("SQLITE_FULL", "SQLITE_IOERR") else None
        if limit is not None:  # under `ulimit -f` a write past the limit fails like a full disk or an I/O error
            hint = f"this process may not write files larger than {limit:,} bytes (ulimit -f); raise the limit and try again"
        return f"{where}{_DATABASE_PROBLEMS[prefix]} ({error})" + (f"; {hint}" if hint else "")
    if isinstance(error, OSError) and error.errno is not None:
        named = error.filename is not None
        if error.errno in _MACHINE_ERRNOS or (error.errno in _FILE_ERRNOS and named):
            reason = error.strerror or str(error)
            where = f"{_printable_path(error.filename)}: " if named else ""
            hint = "; free some space and try again" if error.errno in (errno.ENOSPC, errno.EDQUOT) else ""
            files = [error.filename] if named else []
            limit = _size_limit_reached(files) if error.errno in (errno.EFBIG, errno.EIO, errno.ENOSPC) else None
            if limit is not None:
                hint = f"; this process may not write files larger than {limit:,} bytes (ulimit -f)"
            return f"{where}{reason}{hint}"
    return None


def is_disk_full(error: BaseException | None) -> bool:
    """Whether `error` (or what caused it) is a full disk or an exhausted quota: room may come back, so a job
    holding paid results waits for it (core.jobs.loop) instead of throwing them away."""
    while error is not None:
        if isinstance(error, sqlite3.Error) and (getattr(error, "sqlite_errorname", "") or "").startswith(
            "SQLITE_FULL"
        ):
            return True
        if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        error = error.__cause__
    return False


# Errors after which a connection's open files may belong to a file system that went away (a USB stick pulled out
# and put back is a new mount: the old descriptors fail for good, while the path works again)
_LOST_FILE_ERRNOS = {errno.EIO, errno.ENOTCONN, errno.ENODEV, errno.ENXIO, errno.ESTALE}


def may_have_lost_its_files(error: BaseException | None) -> bool:
    """Whether a connection that failed with `error` should be opened again before its next use: an I/O error
    or a file that could not be opened, from SQLite or the system."""
    if isinstance(error, sqlite3.Error):
        return (getattr(error, "sqlite_errorname", "") or "").startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN"))
    return isinstance(error, OSError) and error.errno in _LOST_FILE_ERRNOS


def why_unreachable(project: str | os.PathLike | None) -> str | None:
    """Why the project's database cannot be looked at any more (its drive removed, its share disconnected:
    "No such file or directory", "Transport endpoint is not connected"), or None when it is there."""
    if project is None:
        return None
    try:
        os.stat(Path(project) / "project.sqlite")
    except OSError as error:
        return error.strerror or str(error)
    return None


def _write_lock_held(error: sqlite3.OperationalError, project: str | os.PathLike | None) -> str:
    """Another process kept the project's write lock for longer than we wait (SQLite's busy timeout): not a bug,
    and nothing half-written. Names the process that holds it, when it runs on this machine, and what to do:
    a stopped one (a command suspended with Ctrl+Z in another terminal) keeps it until it continues."""
    from spokenbench.core.foundation.processes import write_lock_holders

    database = Path(project) / "project.sqlite" if project is not None else None
    where = f"{database}: " if database is not None else ""
    message = (
        f"{where}another process kept the project's write lock for as long as SpokenBench waited for it (SQLite: "
        f"{error}), so nothing more was written; everything reported saved is kept"
    )
    holders = write_lock_holders(database) if database is not None else []
    stopped = [pid for pid, _command, is_stopped in holders if is_stopped]
    if holders:
        named = "; ".join(
            f"process {pid}"
            + (f" ({command})" if command else "")
            + (", stopped (Ctrl+Z or SIGSTOP)" if halted else "")
            for pid, command, halted in holders
        )
        advice = (
            f"a stopped process keeps it until it continues: continue it (`fg` in its terminal, or `kill -CONT "
            f"{' '.join(map(str, stopped))}`) or end it, then try again"
            if stopped
            else "try again once it has finished (a long import, a database browser with unsaved changes or an "
            "sqlite3 shell inside BEGIN keeps it until it commits)"
        )
        return f"{message}. It is held by {named}: {advice}"
    return (
        f"{message}. A process stopped with Ctrl+Z, a long import, a database browser with unsaved changes, or a "
        "process on another machine sharing the folder keeps it (the jobs panel, or `spokenbench jobs PROJECT`, shows a stopped job "
        "as paused); try again once it is released"
    )


def file_size_limit() -> int | None:
    """The largest file this process may write (RLIMIT_FSIZE, `ulimit -f`) when one is set, else None."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def _size_limit_reached(files) -> int | None:
    """The file-size limit (`ulimit -f`) when one is set and one of the files written has reached it (within a
    megabyte): a write past it fails like a full disk or an I/O error, but a full disk under a distant limit
    (ulimit -f of 20 GB) is a full disk, and the hint to free space must stay."""
    limit = file_size_limit()
    if limit is None:
        return None
    for path in files:
        try:
            if os.stat(path).st_size >= limit - (1 << 20):
                return limit
        except (OSError, TypeError, ValueError):
            continue
    return None


def _printable_path(path) -> str:
    try:
        return os.fsencode(path).decode("utf-8", "backslashreplace")
    except TypeError:
        return str(path)
