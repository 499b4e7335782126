"""Opening files that come from others — clips in a project's audio/, tables, transcripts, batch results, packs —
so that a hostile one cannot hang or exhaust the process. Every such file must be a regular file of bounded size,
checked on the open descriptor before a byte is read: a symbolic link to /dev/zero, a FIFO, a device or a folder
is refused at once with a message naming it, and a read never goes past the size the check saw.

`read_regular_file` returns the bytes; `open_regular_file` a binary file object for streaming. Both raise
`InputError` (exit code 2 on the CLI, a dialog in the app) naming the file; FileNotFoundError is raised as is,
so callers keep their own words for a missing file."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from spokenbench.core.foundation.errors import InputError, InputProblem

GiB = 1 << 30
MiB = 1 << 20
# The bounds, one place for each kind of file (docs/reliability.md, "Trust model", lists them).
MAX_TABLE_BYTES = 2 * GiB  # an items, responses, answers or transcripts table
MAX_AUDIO_FILE_BYTES = 1 * GiB  # one stored clip or assembled input (30 minutes of 48 kHz stereo WAV is 330 MB)
MAX_BATCH_RESULTS_BYTES = 16 * GiB  # a batch output file: streamed line by line, never held whole
MAX_TEXT_FILE_BYTES = 16 * MiB  # a prompt template, consent text, listener profile or other small text file

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def display_name(path: str | os.PathLike) -> str:
    """A path as it can be printed: bytes that are not UTF-8 shown as \\xff."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _refuse(path, message: str) -> InputError:
    return InputError(InputProblem(display_name(path), message))


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
_READ_FLAGS_NO_LINKS = _READ_FLAGS | getattr(os, "O_NOFOLLOW", 0)


def open_regular_descriptor(
    path: str | os.PathLike, max_bytes: int, follow_links: bool = True
) -> tuple[int, os.stat_result]:
    """An open read-only descriptor of `path` and its stat, after checking — on the descriptor, so nothing can be
    swapped in between — that it is a regular file of at most `max_bytes`. Opened with O_NONBLOCK, so a FIFO does
    not wait for a writer; with follow_links=False (files inside a project) a symbolic link is refused too."""
    flags = _READ_FLAGS if follow_links else _READ_FLAGS_NO_LINKS
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as error:
        if not follow_links and os.path.islink(path):  # ELOOP from O_NOFOLLOW
            raise _refuse(path, "is a symbolic link, not a regular file; it is not read") from None
        if isinstance(error, IsADirectoryError):
            raise _refuse(path, "is a folder, not a file") from None
        raise _refuse(path, f"cannot be read ({error.strerror or error})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            kind = next((name for test, name in _KINDS if test(status.st_mode)), "not a regular file")
            raise _refuse(path, f"is {kind}, not a regular file; it is not read")
        if status.st_size > max_bytes:
            raise _refuse(path, f"is {_size(status.st_size)}; at most {_size(max_bytes)} is read")
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor, status


def read_regular_file(path: str | os.PathLike, max_bytes: int, follow_links: bool = True) -> bytes:
    """The bytes of a regular file of at most `max_bytes`, read up to the size checked (a file that grows while
    it is read is cut there; one that shrinks ends early)."""
    return read_regular_file_and_status(path, max_bytes, follow_links)[0]


def read_regular_file_and_status(
    path: str | os.PathLike, max_bytes: int, follow_links: bool = True
) -> tuple[bytes, os.stat_result]:
    """`read_regular_file`, with the stat of the descriptor read (what a cache of verified files is keyed by)."""
    descriptor, status = open_regular_descriptor(path, max_bytes, follow_links)
    try:
        chunks = []
        left = status.st_size
        while left > 0:
            chunk = os.read(descriptor, min(left, 64 * MiB))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        raise _refuse(path, f"cannot be read ({error.strerror or error})") from None
    finally:
        os.close(descriptor)
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), status


def read_regular_text(path: str | os.PathLike, max_bytes: int = MAX_TEXT_FILE_BYTES, encoding: str = "utf-8") -> str:
    """A small text file (prompt, consent, profile): regular, bounded, and valid in `encoding`."""
    data = read_regular_file(path, max_bytes)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        raise _refuse(path, f"is not {encoding.upper().removesuffix('-SIG')} text (byte {error.start})") from None


def open_regular_file(path: str | os.PathLike, max_bytes: int, follow_links: bool = True) -> BinaryIO:
    """A binary file object for streaming a regular file of at most `max_bytes` (checked as above)."""
    descriptor, _ = open_regular_descriptor(path, max_bytes, follow_links)
    with contextlib.suppress(OSError, AttributeError):
        os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "rb")


def _size(size: int) -> str:
    if size >= GiB:
        return f"{size / GiB:.1f} GiB"
    if size >= MiB:
        return f"{size / MiB:.1f} MiB"
    return f"{size:,} bytes"


def check_regular_file(path: str | Path, max_bytes: int, follow_links: bool = True) -> os.stat_result:
    """Only the check (for readers that open the file themselves, as SQLite or pyarrow do)."""
    descriptor, status = open_regular_descriptor(path, max_bytes, follow_links)
    os.close(descriptor)
    return status


def check_output_file(path: str | os.PathLike, inputs: tuple = ()) -> None:
    """Refuse an output file before any work: its folder must exist (it is not created: a typo would otherwise
    scatter folders), it must not be a folder, and it must not be one of the command's `inputs` (writing the
    output would destroy the input it is made from). Raises InputError naming the file."""
    target = Path(path)
    parent = target.parent
    if not parent.is_dir():
        what = "is not a folder" if parent.exists() else "does not exist"
        raise _refuse(target, f"the folder {display_name(parent)} {what}; create it first or choose another path")
    if target.is_dir():
        raise _refuse(target, "is a folder; give a file name")
    for given in inputs:
        with contextlib.suppress(OSError):
            if target.exists() and os.path.samefile(target, given):
                raise _refuse(target, f"is also the input {display_name(given)}; write the output to another file")


def check_output_folder(path: str | os.PathLike) -> None:
    """Refuse an output folder that could never be made: one that is a file, or lies under a file. (A missing
    folder is made by the command that writes into it.) Raises InputError naming the file in the way."""
    target = Path(path)
    for folder in (target, *target.parents):
        if folder.exists():
            if not folder.is_dir():
                shown = "is a file, not a folder" if folder == target else f"lies under {display_name(folder)}, a file"
                raise _refuse(target, shown)
            return
