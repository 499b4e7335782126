"""`-` as a file name: standard input for the commands that read a table (`import`, `parse`, `metrics`,
`report`, `import-transcripts`), standard output for those that write one (`export --out -`, `parse --out -`),
so they fit in shell pipes. Standard input is read like a file from others: bounded (the caller's cap, the same
one its files have), read once per process (a command that reads its input twice, as `import` does to hash it,
gets the same bytes), refused at once when it is a terminal. Its table type is recognised from its bytes;
standard output gets CSV."""

from __future__ import annotations

import sys

from spokenbench.core.foundation.errors import InputError, InputProblem

STANDARD_STREAM = "-"
STANDARD_INPUT_NAME = "standard input"
STANDARD_OUTPUT_FORMATS = ("csv", "jsonl")

_read_once: tuple[object, bytes] | None = None  # (the stream read, its bytes): one read per stream


def is_standard_stream(path) -> bool:
    """True for the file name `-`."""
    return str(path) == STANDARD_STREAM


def read_standard_input(max_bytes: int) -> bytes:
    """The bytes of standard input, at most `max_bytes` (more is an `InputError`, as for a file); the same bytes
    again when asked twice."""
    global _read_once
    stream = getattr(sys.stdin, "buffer", sys.stdin)
    if _read_once is not None and _read_once[0] is stream:
        return _read_once[1]
    if stream is None:
        raise InputError(InputProblem(STANDARD_INPUT_NAME, "there is no standard input to read"))
    if getattr(stream, "isatty", lambda: False)():
        raise InputError(
            InputProblem(
                STANDARD_INPUT_NAME, "is a terminal; pipe a table into it (… | spokenbench … -) or name a file"
            )
        )
    chunks, size = [], 0
    while size <= max_bytes:
        chunk = stream.read(min(max_bytes + 1 - size, 1 << 24))
        if not chunk:
            break
        if isinstance(chunk, str):  # a text stream without a buffer (an embedding host's)
            chunk = chunk.encode("utf-8")
        chunks.append(chunk)
        size += len(chunk)
    if size > max_bytes:
        raise InputError(
            InputProblem(STANDARD_INPUT_NAME, f"holds more than {max_bytes:,} bytes; at most that is read")
        )
    data = b"".join(chunks)
    _read_once = (stream, data)
    return data


def sniff_table_format(data: bytes) -> str:
    """The table type of bytes without a file name: Parquet by its magic, JSON Lines when the first non-blank
    character opens an object, TSV when the first line has tabs and no commas, else CSV."""
    if data.startswith(b"PAR1"):
        return "parquet"
    head = data[:65536].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"{"):
        return "jsonl"
    first_line = head.split(b"\n", 1)[0]
    if b"\t" in first_line and b"," not in first_line:
        return "tsv"
    return "csv"
