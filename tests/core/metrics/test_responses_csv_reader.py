"""Responses CSV/TSV files are read by pyarrow's CSV reader when the file is well formed (core/foundation/tables.py
`_arrow_delimited`): the columns must be the frame pandas' reader gave (`as_clean_strings(pd.read_csv(...,
dtype=str, keep_default_na=False))`), and files pandas reads differently go to pandas. The reader gives text
columns (`read_columns`) without importing pandas: `spokenbench metrics` is timed as a whole process."""

from __future__ import annotations

import io
import subprocess
import sys

import pandas as pd
import pytest

from spokenbench.core.foundation.errors import InputError
from spokenbench.core.foundation.tables import TextColumn, _arrow_delimited, as_clean_strings, read_columns
from spokenbench.core.metrics.loading import read_responses_file


def _pandas_frame(text: str, delimiter: str) -> pd.DataFrame:
    frame = pd.read_csv(io.StringIO(text), sep=delimiter, dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip() for c in frame.columns]
    return as_clean_strings(frame)


WELL_FORMED = [
    "a,b,c\n1,2,3\n4,5,6\n",
    "a,b,c\r\n1,2,3\r\n4,5,6",  # CRLF, no final newline
    " a , b\n  x  , y\u00a0\n",  # white space around names and cells
    'q,text\n1,"with, comma"\n2,"two\nlines"\n3,"a ""quote"""\n',
    "q,text\n1,\n2,\n",  # empty cells
    'q,text\n1,""\n2,NA\n3,null\n4,NaN\n5,None\n6,#N/A\n',  # quoted empty, strings pandas would call missing
    "id,x\n007,1.50\n1e3,-0\n",  # numbers stay text as written
    "q,text\n1,ünïcødé ✓\n2,日本語\n",
    "a,b\n1,2\n\n3,4\n\n",  # blank lines
    "a,b\n,\n,\n",  # rows of empty cells
    "a,b\n1,2\n1,2\n 1,2 \n",  # repeated values, and values equal after stripping
]


@pytest.mark.parametrize("text", WELL_FORMED)
@pytest.mark.parametrize("delimiter", [",", "\t"])
def test_arrow_reader_gives_pandas_frame(text, delimiter):
    text = text.replace(",", delimiter) if delimiter == "\t" and '"' not in text else text
    fast = _arrow_delimited(text, delimiter)
    assert fast is not None
    columns, longest = fast
    expected = _pandas_frame(text, delimiter)
    pd.testing.assert_frame_equal(columns.to_frame(), expected)
    assert all(len(set(columns[c].values)) == len(columns[c].values) for c in columns.columns)  # each text once
    assert longest == max((expected[c].str.len().max() for c in expected.columns), default=0)


@pytest.mark.parametrize(
    "text",
    [
        "a,a\n1,2\n",  # duplicate names: pandas renames (a, a.1)
        "a, a\n1,2\n",  # names equal after stripping
        "a,b,\n1,2,3\n",  # an empty name: pandas names it Unnamed: 2
        "a,b\n1,2,3\n4,5,6\n",  # more cells than names: pandas makes the first an index
        "a,b,c\n1,2\n",  # fewer cells: pandas pads with missing values
        "a,b\n1,2,3\n4,5\n",  # ragged: pandas' error
    ],
)
def test_files_pandas_reads_differently_go_to_pandas(text):
    assert _arrow_delimited(text, ",") is None


def test_read_responses_file_same_with_either_reader(tmp_path, monkeypatch):
    text = "\ufeffquestion_id, model ,answer\n q1 ,m1,A\nq2,m1,\n" + "".join(f"q{i},m2,B\n" for i in range(3, 200))
    path = tmp_path / "responses.csv"
    path.write_text(text, encoding="utf-8")
    fast = read_responses_file(path)
    monkeypatch.setattr("spokenbench.core.foundation.tables._arrow_delimited", lambda text, delimiter: None)
    pd.testing.assert_frame_equal(fast, read_responses_file(path))
    assert list(fast.columns) == ["question_id", "model", "answer"]
    assert fast.iloc[0].tolist() == ["q1", "m1", "A"]


def test_overlong_cell_located_by_row_and_column(tmp_path, monkeypatch):
    monkeypatch.setattr("spokenbench.core.foundation.tables.MAX_CELL_CHARS", 10)
    path = tmp_path / "responses.csv"
    path.write_text("question_id,model,raw_text\nq1,m1,short\nq2,m1,  twelve chars  \n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_responses_file(path)
    assert "row 2" in str(raised.value) and "raw_text" in str(raised.value)


def test_header_only_and_ragged_errors_unchanged(tmp_path):
    header_only = tmp_path / "header.csv"
    header_only.write_text("question_id,model,answer\n", encoding="utf-8")
    with pytest.raises(InputError, match="header but no data rows"):
        read_responses_file(header_only)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n1,2,3\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a well-formed table"):
        read_responses_file(ragged)


def test_read_columns_same_for_parquet_of_text_and_with_pandas(tmp_path):
    """A Parquet file of text columns (with missing values and padded cells) is read by pyarrow into the same
    columns pandas gives; one with a number column goes through pandas (numbers become text)."""
    frame = pd.DataFrame({"question_id": ["q1", " q2 ", None, "q1"], "model": ["m", "m", "n", None]})
    path = tmp_path / "r.parquet"
    frame.to_parquet(path)
    columns = read_columns(path)
    assert columns.columns == ["question_id", "model"]
    assert columns["question_id"].texts().tolist() == ["q1", "q2", "", "q1"]
    assert columns["model"].texts().tolist() == ["m", "m", "n", ""]
    pd.testing.assert_frame_equal(columns.to_frame(), as_clean_strings(frame))
    frame["speed"] = [1.0, 1.25, 2.0, 0.5]
    frame.to_parquet(path)
    assert read_columns(path)["speed"].texts().tolist() == ["1", "1.25", "2", "0.5"]


def test_text_column_from_values_merges_equal_texts_and_missing():
    column = TextColumn.from_values(pd.Series(["a", None, 1, "1", "a"], dtype=object))
    assert column.texts().tolist() == ["a", "", "1", "1", "a"]
    assert sorted(column.values) == ["", "1", "a"]
    assert column.is_empty().tolist() == [False, True, False, False, False]


@pytest.mark.slow
def test_reading_a_csv_into_columns_imports_no_pandas(tmp_path):
    path = tmp_path / "responses.csv"
    path.write_text("question_id,model,answer,prediction\nq1,m,A,B\nq2,m,B,\n", encoding="utf-8")
    probe = (
        "import sys\nfrom spokenbench.core.foundation.tables import read_columns\n"
        f"columns = read_columns({str(path)!r})\n"
        "print(columns['prediction'].texts().tolist(), 'pandas' in sys.modules, 'pyarrow.compute' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split("\n")[0] == "['B', ''] False False", done.stderr


@pytest.mark.parametrize(
    ("text", "columns"),
    [
        ("question_id,model,answer\nq1,m,A\n", ["question_id", "model", "answer"]),
        ('"question\nid",model\nq1,m\n', ["question\nid", "model"]),
    ],
)
def test_header_longer_than_the_scanned_head_is_still_read_right(tmp_path, monkeypatch, text, columns):
    """The fast reader parses the header from the file's head only; a header cut short there differs from
    pyarrow's, so the file goes to pandas and the table is the same."""
    path = tmp_path / "responses.csv"
    path.write_text(text, encoding="utf-8")
    expected = read_responses_file(path)
    assert list(expected.columns) == columns
    monkeypatch.setattr("spokenbench.core.foundation.tables.HEADER_SCAN_CHARS", 7)
    assert _arrow_delimited(text, ",") is None
    pd.testing.assert_frame_equal(read_responses_file(path), expected)
