"""Parquet and Arrow tables that decode to far more than they weigh (one long string repeated by a dictionary,
or compressed): never more than MAX_TABLE_BYTES of data, as much as the largest text table read. Before, a 2 MB
Parquet file of Global-MMLU-Lite's columns declaring 17.9 GiB of text took 6.6 GB and 15 s to fail as "internal
error … This is a bug" under an 8 GB limit (and would take ~20 GB without one); a 534 KB one took 2.1 GB."""

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support import gmmlu_rows, import_in_bounded_memory, save_to_disk

from spokenbench.core.foundation import arrow_datasets, tables
from spokenbench.core.foundation.errors import InputError
from spokenbench.core.foundation.tables import read_columns, read_table

TEXT = "Which of the following is true? " * 60  # ~2,000 characters


def repeated(value: str, rows: int) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array([0] * rows, type=pa.int32()), pa.array([value]))


def gmmlu_bomb(rows: int) -> pa.Table:
    """Global-MMLU-Lite's columns, every text one value repeated `rows` times (dictionary-encoded)."""
    columns = {name: repeated(str(value), rows) for name, value in gmmlu_rows(1)[0].items() if name != "sample_id"}
    for name in ("question", "option_a", "option_b", "option_c", "option_d"):
        columns[name] = repeated(TEXT, rows)
    return pa.table({**columns, "sample_id": pa.array([f"s{i}" for i in range(rows)])})


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(arrow_datasets, "MAX_TABLE_BYTES", 10_000_000)


def test_a_parquet_file_of_repeated_text_past_the_bound_is_refused_by_name(tmp_path, small_bound):
    path = tmp_path / "repeated.parquet"
    pq.write_table(gmmlu_bomb(2_000), path, compression="zstd")  # 20 MB of text in a few kilobytes
    assert path.stat().st_size < 50_000
    for read in (read_table, read_columns):
        with pytest.raises(InputError, match=r"repeated.parquet: decodes to more than 10,000,000 bytes of data"):
            read(path)


@pytest.fixture
def no_row_group_read(monkeypatch):
    """Reading a row group fails the test: a refusal must come from the footer alone."""

    def refused(*_args, **_kwargs):
        raise AssertionError("a row group was read")

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", refused)


def test_a_compressed_plain_column_past_the_bound_is_refused_from_the_sizes_its_footer_declares(
    tmp_path, small_bound, no_row_group_read
):
    path = tmp_path / "compressed.parquet"
    table = pa.table({"question": pa.array([TEXT] * 6_000)})
    pq.write_table(table, path, compression="zstd", use_dictionary=False)  # 12 MB plain, zstd-compressed
    assert path.stat().st_size < 200_000
    with pytest.raises(InputError, match="compressed.parquet: decodes to more than"):
        read_table(path)


@pytest.mark.parametrize(
    "column",
    [pa.nulls(200_000), pa.array([0] * 200_000, type=pa.int64()), pa.array([True] * 200_000)],
    ids=["nulls", "zeros", "booleans"],
)
def test_rows_of_values_a_file_stores_in_a_few_bytes_count_what_they_cost_as_rows(
    tmp_path, small_bound, no_row_group_read, column
):
    """200,000 rows of one null, 0 or True: a few kilobytes of Parquet, ~40 MB as Python rows (counted 53 MB)."""
    path = tmp_path / "runs.parquet"
    pq.write_table(pa.table({"answer": column}), path, compression="zstd")
    assert path.stat().st_size < 20_000
    with pytest.raises(InputError, match="runs.parquet: decodes to more than 10,000,000 bytes"):
        read_table(path)


def test_a_parquet_file_with_a_column_name_twice_is_refused_by_name(tmp_path):
    """pyarrow reads it; the answers would silently stand in for the questions."""
    path = tmp_path / "twice.parquet"
    table = pa.Table.from_arrays([pa.array(["2+2?"]), pa.array(["4"])], names=["question", "question"])
    pq.write_table(table, path)
    for read in (read_table, read_columns):
        with pytest.raises(InputError, match="twice.parquet: column 'question' appears twice"):
            read(path)


def test_an_arrow_stream_with_compressed_batches_is_refused_before_any_is_decompressed(tmp_path):
    folder = save_to_disk(tmp_path / "ko", gmmlu_rows(2))
    shard = next(folder.glob("data-*.arrow"))
    table = pa.Table.from_pylist(gmmlu_rows(3))
    options = pa.ipc.IpcWriteOptions(compression="zstd")
    with pa.OSFile(str(shard), "wb") as sink, pa.ipc.new_stream(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    with pytest.raises(InputError, match="holds compressed record batches"):
        read_table(folder)


def test_a_table_within_the_bound_reads_as_pyarrow_reads_it(tmp_path):
    """Same columns, types and values as `pq.read_table`: strings, categories, nulls, numbers, a pandas index."""
    frame = pd.DataFrame(
        {
            "question": ["a", None, "ß ü 中文", "d"] * 50,
            "subject": pd.Categorical(["x", "y", "x", "z"] * 50),
            "answer": ["A", "B", "C", "D"] * 50,
            "score": [0.5, None, 2.0, 3.0] * 50,
            "raw": [b"\x00\x01", b"", None, b"z"] * 50,
        },
        index=pd.RangeIndex(200, 400, name="row"),
    )
    path = tmp_path / "plain.parquet"
    frame.to_parquet(path, row_group_size=64)
    expected = pq.read_table(path)
    assert tables._parquet(str(path), path.read_bytes()).equals(expected, check_metadata=True)  # schema too
    table = read_table(path)
    assert table.columns == expected.column_names
    assert table.rows == expected.to_pylist()
    dotted = tmp_path / "dotted.parquet"  # a top-level 'a.b' beside a struct 'a' with a field 'b'
    pq.write_table(pa.table({"a.b": ["x"], "a": pa.array([{"b": "y"}])}), dotted)
    assert tables._parquet(str(dotted), dotted.read_bytes()).equals(pq.read_table(dotted), check_metadata=True)
    large = tmp_path / "large.parquet"
    pq.write_table(pa.table({"q": pa.array(["x", "y"], type=pa.large_string())}), large)
    assert read_table(large).rows == [{"q": "x"}, {"q": "y"}]


def test_an_arrow_dataset_of_repeated_text_past_the_bound_is_refused_by_name(tmp_path, small_bound):
    folder = save_to_disk(tmp_path / "ko", gmmlu_rows(2))
    shard = next(folder.glob("data-*.arrow"))
    table = gmmlu_bomb(2_000)
    with pa.OSFile(str(shard), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=500)
    with pytest.raises(InputError, match="ko: decodes to more than 10,000,000 bytes"):
        read_table(folder)


def test_importing_a_4_mb_parquet_that_declares_18_gib_exits_2_in_bounded_memory(tmp_path):
    """A fresh `spokenbench import` under a 1.5 GB address-space limit: exit 2 naming the file."""
    path = tmp_path / "test-00000.parquet"
    pq.write_table(gmmlu_bomb(2_000_000), path, compression="zstd")
    assert path.stat().st_size < 4_000_000
    done = import_in_bounded_memory(tmp_path / "project", path, "gmmlu-lite", 1_500_000_000, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{path}: decodes to more than 2,147,483,648 bytes of data" in done.stderr
