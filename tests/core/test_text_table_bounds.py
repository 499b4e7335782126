"""CSV and JSONL tables from others are read within the same bound as Parquet: rows and cells count what they cost
as Python values (a row at least ROW_BYTES, a cell CELL_BYTES besides its text), at most MAX_TABLE_BYTES. Before,
a 112 MB CSV of 8 million short rows took 12.2 GB and 204 s to import (its duplicate ids listed as 8 million
problems), and an 80 MB CSV of malformed rows 9.6 GB and 69 s — naming every problem "row 1". Problems are now
kept up to Problems.MAX_KEPT and counted beyond it, and each malformed row is named by its own number."""

import pickle

import pytest
from support import import_in_bounded_memory

from spokenbench.core.foundation import tables
from spokenbench.core.foundation.errors import InputError, InputProblem, Problems
from spokenbench.core.foundation.tables import read_table

HEADER = "id,question,option_a,option_b,option_c,option_d,answer\n"


@pytest.fixture
def small_bound(monkeypatch):
    monkeypatch.setattr(tables, "MAX_TABLE_BYTES", 100_000)


def test_each_malformed_row_is_named_by_its_own_number(tmp_path):
    path = tmp_path / "items.csv"
    good = "1,q,a,b,c,d,A\n"
    path.write_text(HEADER + good + "x\n" + "y,z\n" + "\n" + good + "w\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_table(path)
    assert [(p.row, p.message) for p in caught.value.problems] == [
        (2, "has 1 fields but the header has 7"),
        (3, "has 2 fields but the header has 7"),
        (5, "has 1 fields but the header has 7"),  # the blank line is not a row
    ]


def test_a_text_table_past_the_bound_is_refused_at_the_row_that_crosses_it(tmp_path, small_bound):
    row = "1,q,a,b,c,d,A\n"  # 200 + 7 × 64 + 7 = 655 bytes as values: the 153rd row crosses 100,000
    path = tmp_path / "items.csv"
    path.write_text(HEADER + row * 1_000, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_table(path)
    (problem,) = caught.value.problems
    assert problem.row == 153 and "more rows and cells than one table may hold" in problem.message
    assert "more than 100,000 bytes" in problem.message
    path.write_text(HEADER + row * 152, encoding="utf-8")
    assert len(read_table(path).rows) == 152  # within it, read as before

    lines = tmp_path / "items.jsonl"
    lines.write_text('{"id": "1", "question": "q"}\n' * 1_000, encoding="utf-8")
    with pytest.raises(InputError, match="more rows and cells than one table may hold"):
        read_table(lines)


def test_problems_past_the_cap_are_counted_not_kept_and_survive_pickling():
    problems = Problems(InputProblem("f.csv", "bad", row) for row in range(1, 5_001))
    assert list.__len__(problems) == Problems.MAX_KEPT and len(problems) == 5_000 and problems.full
    error = InputError(problems)
    assert str(error).endswith("... and 4,980 more problem(s)") and len(error.problems) == 5_000
    again = pickle.loads(pickle.dumps(error))  # a job process sends it to the app
    assert len(again.problems) == 5_000 and str(again) == str(error)
    merged = Problems([InputProblem("g.csv", "bad")])
    merged.extend(error.problems)
    assert len(merged) == 5_001


def test_a_malformed_row_on_every_line_is_refused_in_bounded_memory(tmp_path):
    """Each of 200,000 rows malformed: the problems kept stay at MAX_KEPT, the rest are counted."""
    path = tmp_path / "items.csv"
    path.write_text(HEADER + "x\n" * 200_000, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_table(path)
    assert len(caught.value.problems) == 200_000 and list.__len__(caught.value.problems) == Problems.MAX_KEPT
    assert [p.row for p in caught.value.problems[:3]] == [1, 2, 3]
    assert str(caught.value).endswith("... and 199,980 more problem(s)")


@pytest.mark.slow
def test_importing_a_112_mb_csv_of_8_million_rows_exits_2_in_bounded_memory(tmp_path):
    """A fresh `spokenbench import` under a 3 GB address-space limit (it took 12.2 GB before): exit 2 naming the
    row where the table passes the bound."""
    path = tmp_path / "items.csv"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(HEADER)
        handle.write("1,q,a,b,c,d,A\n" * 8_000_000)
    done = import_in_bounded_memory(tmp_path / "project", path, "mcq", 3_000_000_000)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{path}, row 3278601: has more rows and cells than one table may hold" in done.stderr


def test_a_csv_is_read_line_by_line_not_from_a_copy_of_its_text(tmp_path):
    """Read through io.StringIO, a CSV took its bytes, its text, a copy of 4 bytes a character and its rows (an
    80 MB file of malformed rows 470 MB). Decoded line by line: its bytes, its text while it is checked, then its
    rows."""
    import tracemalloc

    path = tmp_path / "items.csv"
    path.write_text("id,question\n" + "".join(f"{n},{'q' * 1_000}\n" for n in range(2_000)), encoding="utf-8")
    tracemalloc.start()
    try:
        assert len(read_table(path).rows) == 2_000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * path.stat().st_size, peak / path.stat().st_size
