"""Hugging Face `datasets` tables without the `datasets` package: a folder written by `Dataset.save_to_disk`
(`dataset_info.json`, `state.json`, `data-00000-of-0000N.arrow`) or one of its `.arrow` files, which are Arrow IPC
*stream* files, read with pyarrow. Folders and files come from others: each file is a bounded regular file,
the file names `state.json` lists must be plain names inside the folder, and every column is validated (UTF-8
strings) as a Parquet file's is. A `DatasetDict` folder (`dataset_dict.json`, one folder per split) is refused
with the split folders to choose from."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path

from spokenbench.core.foundation.errors import InputError, InputProblem, Problems
from spokenbench.core.foundation.safe_files import MAX_TABLE_BYTES, MAX_TEXT_FILE_BYTES, read_regular_file

ARROW_SUFFIX = ".arrow"
STATE_FILE = "state.json"
INFO_FILE = "dataset_info.json"
DICT_FILE = "dataset_dict.json"
_DATA_FILE = re.compile(r"^[A-Za-z0-9_.-]{1,200}\.arrow$")


def is_arrow_dataset(path: Path) -> bool:
    """A `.arrow` file, or a folder `save_to_disk` wrote (it holds state.json, dataset_info.json or
    dataset_dict.json)."""
    if path.suffix.lower() == ARROW_SUFFIX:
        return True
    return path.is_dir() and any((path / name).is_file() for name in (STATE_FILE, INFO_FILE, DICT_FILE))


def arrow_dataset_files(path: Path) -> list[Path]:
    """The `.arrow` files of a dataset, in order: the file itself, or those state.json lists (else data-*.arrow)."""
    if not path.is_dir():
        return [path]
    name = str(path)
    if (path / DICT_FILE).is_file():
        splits = sorted(child.name for child in path.iterdir() if (child / STATE_FILE).is_file())
        raise InputError(
            InputProblem(
                name,
                "is a DatasetDict folder (one folder per split); import one split's folder, e.g. "
                + (", ".join(str(path / split) for split in splits[:4]) or f"{path}/test"),
            )
        )
    state_path = path / STATE_FILE
    if state_path.is_file():
        try:
            state = json.loads(read_regular_file(state_path, MAX_TEXT_FILE_BYTES).decode("utf-8"))
            listed = [entry["filename"] for entry in state["_data_files"]]
        except (ValueError, KeyError, TypeError):
            raise InputError(
                InputProblem(str(state_path), "is not a datasets state.json (no _data_files list)")
            ) from None
        bad = [file for file in listed if not isinstance(file, str) or not _DATA_FILE.match(file)]
        if bad:
            raise InputError(
                InputProblem(str(state_path), f"lists a data file that is not a plain .arrow name: {bad[0]!r}")
            )
        files = [path / file for file in listed]
    else:
        files = sorted(path.glob("data-*.arrow"))
    if not files:
        raise InputError(InputProblem(name, "holds no data-*.arrow file"))
    return files


# What a row and a cell cost at least once read as Python values (a row's dict, a value and its slot in it; a
# None, a bool and a small number too): two million rows of one null column, which a file stores in a few bytes,
# take ~400 MB as rows and count 528 MB, not nothing
ROW_BYTES = 200
CELL_BYTES = 64


def decoded_bytes(table) -> int:
    """The bytes `table` holds once its dictionary-encoded columns are expanded (each value counted at every row
    that refers to it), every row counted at least ROW_BYTES and every cell CELL_BYTES: what reading its rows as Python values or pandas
    takes, however small its file."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = ROW_BYTES * table.num_rows
    for column in table.columns:
        for chunk in column.chunks:
            if pa.types.is_dictionary(chunk.type) and is_text_type(chunk.type.value_type):
                lengths = pc.take(pc.binary_length(chunk.dictionary), chunk.indices)
                size = (pc.sum(lengths).as_py() or 0) + chunk.indices.nbytes + 8 * len(chunk)
            else:
                size = chunk.nbytes
            total += max(size, CELL_BYTES * len(chunk))
    return total


def is_text_type(arrow_type) -> bool:
    """Strings or bytes, of either offset width."""
    import pyarrow as pa

    return any(check(arrow_type) for check in (pa.types.is_string, pa.types.is_large_string, pa.types.is_binary,
                                                 pa.types.is_large_binary))  # fmt: skip


def check_decoded_size(name: str, decoded: int) -> None:
    """InputError when a table decodes to more than MAX_TABLE_BYTES: as much as the largest text table read, so a
    small Parquet or Arrow file of repeated or compressed values (a decompression bomb) never takes more."""
    if decoded > MAX_TABLE_BYTES:
        raise InputError(
            InputProblem(
                name,
                f"decodes to more than {MAX_TABLE_BYTES:,} bytes of data (repeated or compressed values), the most "
                "a table may hold; split it, or check that it is the file you meant",
            )
        )


def _compressed_batches(data: bytes) -> bool:
    """Whether the stream's record or dictionary batches use IPC body compression, from each message's
    flatbuffer header alone (nothing decoded): a compressed batch is decompressed whole before it can be counted."""
    import pyarrow as pa

    reader = pa.ipc.MessageReader.open_stream(pa.BufferReader(data))
    while (message := _next_message(reader)) is not None:
        if message.type in ("record batch", "dictionary"):
            header = message.metadata.to_pybytes()
            batch = _table_field(header, _root(header), 2)  # Message.header
            if message.type == "dictionary":
                batch = _table_field(header, batch, 1)  # DictionaryBatch.data
            if batch is not None and _table_field(header, batch, 3) is not None:  # RecordBatch.compression
                return True
    return False


def _next_message(reader):
    try:
        return reader.read_next_message()
    except StopIteration:
        return None


def _root(buffer: bytes) -> int:
    return struct.unpack_from("<I", buffer, 0)[0]


def _table_field(buffer: bytes, table: int | None, index: int) -> int | None:
    """The position of the table a flatbuffer table's field `index` points to; None when the field is absent."""
    if table is None:
        return None
    vtable = _inside(buffer, table - struct.unpack_from("<i", buffer, _inside(buffer, table))[0])
    slot = 4 + 2 * index
    if slot >= struct.unpack_from("<H", buffer, vtable)[0]:
        return None
    offset = struct.unpack_from("<H", buffer, vtable + slot)[0]
    if offset == 0:
        return None
    position = _inside(buffer, table + offset)
    return _inside(buffer, position + struct.unpack_from("<I", buffer, position)[0])


def _inside(buffer: bytes, position: int) -> int:
    """`position`, or struct.error when it is outside the buffer (struct would count a negative one from the
    end)."""
    if not 0 <= position < len(buffer):
        raise struct.error(f"offset {position} outside the {len(buffer)}-byte message header")
    return position


def read_arrow_dataset(path: Path):
    """The dataset as one pyarrow Table (its files concatenated), every column validated."""
    import pyarrow as pa

    tables, total, decoded = [], 0, 0
    for file in arrow_dataset_files(path):
        try:
            data = read_regular_file(file, MAX_TABLE_BYTES)
        except FileNotFoundError:
            raise InputError(InputProblem(str(file), "file not found (state.json lists it)")) from None
        total += len(data)
        if total > MAX_TABLE_BYTES:
            raise InputError(InputProblem(str(path), f"holds more than {MAX_TABLE_BYTES:,} bytes of data"))
        try:
            if _compressed_batches(data):
                raise InputError(
                    InputProblem(
                        str(file),
                        "holds compressed record batches (Arrow IPC body compression), which are not read: a "
                        "batch would be decompressed whole before its size is known; `datasets` writes them "
                        "uncompressed (save it again, or write it with pyarrow without compression)",
                    )
                )
            stream, batches = pa.ipc.open_stream(pa.BufferReader(data)), []
            for batch in stream:  # one batch at a time, each counted before the next is read
                decoded += decoded_bytes(pa.Table.from_batches([batch]))
                check_decoded_size(str(path), decoded)
                batches.append(batch)
            tables.append(pa.Table.from_batches(batches, schema=stream.schema))
        except (pa.ArrowException, OSError, struct.error) as error:
            raise InputError(
                InputProblem(str(file), f"is not an Arrow stream file as `datasets` writes them ({error})")
            ) from None
    try:
        table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    except pa.ArrowException as error:
        raise InputError(InputProblem(str(path), f"its files have different columns ({error})")) from None
    problems = Problems()
    for column_name, column in zip(table.column_names, table.columns):
        try:
            column.validate(full=True)
        except pa.ArrowException as error:
            problems.append(InputProblem(str(path), f"holds invalid data ({error})", column=column_name))
    if problems:
        raise InputError(problems)
    return table


def arrow_dataset_digest(path: Path) -> str:
    """sha256 over the dataset's data files, in order: what an import records as the file's hash."""
    digest = hashlib.sha256()
    for file in arrow_dataset_files(path):
        digest.update(read_regular_file(file, MAX_TABLE_BYTES))
    return digest.hexdigest()
