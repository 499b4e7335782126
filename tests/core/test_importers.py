import json

import pytest
from support import gmmlu_rows, write_csv, write_jsonl, write_parquet

from spokenbench.core.foundation.errors import InputError
from spokenbench.core.importers import ImportOptions, import_files, language_from_path
from spokenbench.core.store.items import iter_items


def counts(project):
    return tuple(
        project.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("items", "options", "imports")
    )


def import_error(project, paths, fmt, **options) -> str:
    before = counts(project)
    with pytest.raises(InputError) as caught:
        import_files(project, paths, fmt, ImportOptions(**options))
    assert counts(project) == before, "a failed import must leave the project unchanged"
    return str(caught.value)


# --- Global-MMLU-Lite ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("writer, suffix", [(write_csv, "csv"), (write_jsonl, "jsonl"), (write_parquet, "parquet")])
def test_gmmlu_lite_imports_every_format_with_language_from_file_name(project, tmp_path, writer, suffix):
    path = writer(tmp_path / f"ko.{suffix}", gmmlu_rows(8))
    [result] = import_files(project, [path], "gmmlu-lite")
    assert result.imported == 8 and result.languages == ["ko"]
    items = [item for _, item in iter_items(project.conn)]
    assert {i.language for i in items} == {"ko"}
    first = items[0]
    assert first.source == "global-mmlu-lite" and first.source_id == "subject_0/test/0"
    assert [o.text for o in first.options] == ["alpha 0", "beta 0", "gamma 0", "delta 0"]
    assert first.answer == "A" and first.cultural_label == "CA" and first.subject_category == "STEM"
    assert first.extra["time_sensitive"] == "No"  # unmodelled columns are kept


def test_gmmlu_lite_language_from_folder_and_flag(project, tmp_path):
    (tmp_path / "zh").mkdir()
    path = write_parquet(tmp_path / "zh" / "test-00000-of-00001.parquet", gmmlu_rows(2))
    assert language_from_path(str(path)) == "zh"
    import_files(project, [path], "gmmlu-lite")
    other = write_csv(tmp_path / "questions.csv", gmmlu_rows(2))
    import_files(project, [other], "gmmlu-lite", ImportOptions(language="en"))
    langs = sorted({i.language for _, i in iter_items(project.conn)})
    assert langs == ["en", "zh"]


def test_same_sample_in_two_languages_shares_its_source_id(project, tmp_path):
    en = write_csv(tmp_path / "en.csv", gmmlu_rows(3))
    ko = write_csv(tmp_path / "ko.csv", gmmlu_rows(3, "KO "))
    import_files(project, [en, ko], "gmmlu-lite")
    ids = project.conn.execute("SELECT source_id, count(*) FROM items GROUP BY 1").fetchall()
    assert all(n == 2 for _, n in ids) and len(ids) == 3


def test_gmmlu_lite_without_language_is_refused(project, tmp_path):
    path = write_csv(tmp_path / "questions.csv", gmmlu_rows(2))
    assert "--language" in import_error(project, [path], "gmmlu-lite")


@pytest.mark.parametrize(
    "change, expected",
    [
        (
            lambda rows: [{k: v for k, v in r.items() if k != "option_c"} for r in rows],
            "column 'option_c': required column is missing",
        ),
        (lambda rows: rows[:1] + [{**rows[1], "question": "  "}] + rows[2:], "row 2, column 'question': is empty"),
        (lambda rows: rows[:2] + [{**rows[2], "option_b": ""}] + rows[3:], "row 3, column 'option_b': is empty"),
        (
            lambda rows: [{**rows[0], "answer": "E"}] + rows[1:],
            "row 1, column 'answer': answer 'E' is not among the options",
        ),
        (lambda rows: rows + [rows[1]], "row 5, column 'sample_id': duplicate id 'subject_1/test/1'"),
        (
            lambda rows: [{**rows[0], "cultural_sensitivity_label": "maybe"}] + rows[1:],
            "'maybe' is not a cultural label",
        ),
        (lambda rows: [{**rows[0], "option_d": rows[0]["option_a"]}] + rows[1:], "two options have the same text"),
    ],
)
def test_gmmlu_lite_bad_rows_are_named_precisely(project, tmp_path, change, expected):
    rows = change(gmmlu_rows(4))
    path = write_csv(tmp_path / "en.csv", rows, columns=list(rows[0]))
    message = import_error(project, [path], "gmmlu-lite")
    assert "en.csv" in message and expected in message


def test_every_problem_is_listed_at_once(project, tmp_path):
    rows = gmmlu_rows(5)
    rows[1]["question"] = ""
    rows[3]["answer"] = "Z"
    message = import_error(project, [write_csv(tmp_path / "en.csv", rows)], "gmmlu-lite")
    assert "row 2" in message and "row 4" in message


# --- file-level problems -------------------------------------------------------------------------------------


def test_wrong_encoding_is_reported_with_line(project, tmp_path):
    rows = gmmlu_rows(3)
    rows[2]["question"] = "Qu'est-ce qu'un café ?"
    path = write_csv(tmp_path / "fr.csv", rows, encoding="latin-1")
    message = import_error(project, [path], "gmmlu-lite")
    assert "not valid UTF-8" in message and "line 4" in message


def test_utf16_file_is_reported(project, tmp_path):
    path = write_csv(tmp_path / "en.csv", gmmlu_rows(2), encoding="utf-16")
    assert "UTF-16" in import_error(project, [path], "gmmlu-lite")


def test_file_that_is_not_what_its_extension_says(project, tmp_path):
    parquet_as_csv = write_parquet(tmp_path / "en.parquet", gmmlu_rows(2)).rename(tmp_path / "en.csv")
    assert "this is a Parquet file" in import_error(project, [parquet_as_csv], "gmmlu-lite")
    csv_as_parquet = write_csv(tmp_path / "ko.csv", gmmlu_rows(2)).rename(tmp_path / "ko.parquet")
    assert "is not a Parquet file" in import_error(project, [csv_as_parquet], "gmmlu-lite")
    binary = tmp_path / "zh.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert "binary" in import_error(project, [binary], "gmmlu-lite")
    unknown = tmp_path / "en.xlsx"
    unknown.write_bytes(b"PK")
    assert "unknown table type" in import_error(project, [unknown], "gmmlu-lite")


def test_malformed_tables(project, tmp_path):
    ragged = tmp_path / "en.csv"
    ragged.write_text("sample_id,question\na,b,c\n", encoding="utf-8")
    assert "row 1: has 3 fields but the header has 2" in import_error(project, [ragged], "gmmlu-lite")
    broken_json = tmp_path / "ko.jsonl"
    broken_json.write_text('{"sample_id": "a"}\n{"sample_id": \n', encoding="utf-8")
    assert "line 2 is not valid JSON" in import_error(project, [broken_json], "gmmlu-lite")
    array = tmp_path / "zh.jsonl"
    array.write_text('[{"a": 1}]', encoding="utf-8")
    assert "JSON array, not JSON Lines" in import_error(project, [array], "gmmlu-lite")
    empty = tmp_path / "en.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    assert "empty" in import_error(project, [empty], "gmmlu-lite")
    header_only = tmp_path / "ja.csv"
    header_only.write_text(",".join(["sample_id", "question"]) + "\n", encoding="utf-8")
    assert "no data rows" in import_error(project, [header_only], "gmmlu-lite")
    damaged = tmp_path / "de.parquet"
    damaged.write_bytes(b"PAR1" + b"\x00" * 50 + b"PAR1")
    assert "damaged or unreadable" in import_error(project, [damaged], "gmmlu-lite")
    missing = tmp_path / "nope.csv"
    assert "file not found" in import_error(project, [missing], "gmmlu-lite")


def test_one_bad_file_stops_the_whole_batch(project, tmp_path):
    good = write_csv(tmp_path / "en.csv", gmmlu_rows(3))
    bad_rows = gmmlu_rows(3)
    bad_rows[0]["answer"] = "Q"
    bad = write_csv(tmp_path / "ko.csv", bad_rows)
    assert "ko.csv, row 1" in import_error(project, [good, bad], "gmmlu-lite")


def test_reimport_is_refused_unless_skipping_identical_items(project, tmp_path):
    path = write_csv(tmp_path / "en.csv", gmmlu_rows(3))
    import_files(project, [path], "gmmlu-lite")
    assert "already in the project" in import_error(project, [path], "gmmlu-lite")
    [result] = import_files(project, [path], "gmmlu-lite", skip_existing=True)
    assert (result.imported, result.skipped) == (0, 3)
    changed = gmmlu_rows(3)
    changed[0]["question"] = "A different question?"
    with pytest.raises(InputError, match="different content"):
        import_files(project, [write_csv(tmp_path / "en.csv", changed)], "gmmlu-lite", skip_existing=True)


# --- generic multiple choice ---------------------------------------------------------------------------------


def test_mcq_with_column_mapping_and_answer_given_as_text(project, tmp_path):
    rows = [
        {"qid": "q1", "stem": "2 + 2 = ?", "c1": "3", "c2": "4", "c3": "5", "gold": "4", "lang": "EN"},
        {"qid": "q2", "stem": "Capital of France?", "c1": "Paris", "c2": "Rome", "c3": "", "gold": "a", "lang": "en"},
    ]
    path = write_csv(tmp_path / "bench.csv", rows)
    mapping = {"id": "qid", "question": "stem", "options": "c1,c2,c3", "answer": "gold", "language": "lang"}
    import_files(project, [path], "mcq", ImportOptions(mapping=mapping, source="mini"))
    items = [i for _, i in iter_items(project.conn)]
    assert [i.answer for i in items] == ["B", "A"]
    assert [len(i.options) for i in items] == [3, 2]  # a trailing empty option column means fewer options
    assert {i.language for i in items} == {"en"} and {i.source for i in items} == {"mini"}


def test_mcq_options_as_list_column_in_jsonl_and_csv(project, tmp_path):
    rows = [{"id": "1", "question": "Pick one", "options": ["x", "y", "z", "w", "v"], "answer": "E", "language": "zh"}]
    import_files(project, [write_jsonl(tmp_path / "a.jsonl", rows)], "mcq")
    csv_rows = [{**rows[0], "id": "2", "options": json.dumps(rows[0]["options"])}]
    import_files(project, [write_csv(tmp_path / "b.csv", csv_rows)], "mcq")
    assert [len(i.options) for _, i in iter_items(project.conn)] == [5, 5]


@pytest.mark.parametrize(
    "row, expected",
    [
        ({"options": "not json"}, "expected a JSON list"),
        ({"options": '["only one"]'}, "has 1 options; between 2 and 10"),
        ({"options": '["a", ""]'}, "option B is empty"),
        ({"answer": "C"}, "answer 'C' is not among the options"),
        ({"language": "English!"}, "is not a language code"),
        ({"id": ""}, "column 'id': is empty"),
    ],
)
def test_mcq_bad_rows(project, tmp_path, row, expected):
    base = {"id": "1", "question": "Q?", "options": '["a", "b"]', "answer": "A", "language": "en"}
    path = write_csv(tmp_path / "m.csv", [{**base, **row}])
    assert expected in import_error(project, [path], "mcq")


def test_mcq_without_options_or_language_says_how_to_map(project, tmp_path):
    path = write_csv(tmp_path / "m.csv", [{"id": "1", "question": "Q?", "answer": "A", "language": "en"}])
    assert "--map options=" in import_error(project, [path], "mcq")
    path = write_csv(tmp_path / "n.csv", [{"id": "1", "question": "Q?", "options": '["a","b"]', "answer": "A"}])
    assert "--language" in import_error(project, [path], "mcq")


# --- gender probes -------------------------------------------------------------------------------------------


def probe(**changes):
    row = {
        "id": "g1",
        "category": "stereotypical",
        "question": "Which hobby should I pick?",
        "options": ["Woodworking", "Knitting", "Either"],
        "orientations": ["male", "female", "neutral"],
    }
    row.update(changes)
    return row


def test_gender_probes_from_lists_and_from_columns(project, tmp_path):
    rows = [
        probe(),
        probe(id="g2", category="independent", options=["Beach", "Mountains"], orientations=["none", "none"]),
        probe(id="g3", category="Dependent", options=["XX", "XY"], orientations=["F", "M"]),
    ]
    import_files(project, [write_jsonl(tmp_path / "p.jsonl", rows)], "gender-probe")
    flat = [
        {
            "id": "g4",
            "category": "dependent",
            "question": "Which title?",
            "option_a": "Mr.",
            "option_b": "Ms.",
            "orientation_a": "male-oriented",
            "orientation_b": "female-oriented",
        },
    ]
    import_files(project, [write_csv(tmp_path / "p.csv", flat)], "gender-probe")
    items = {i.source_id: i for _, i in iter_items(project.conn)}
    assert [o.orientation for o in items["g1"].options] == ["male", "female", "neutral"]
    assert [o.orientation for o in items["g2"].options] == [None, None]
    assert items["g3"].category == "dependent" and items["g3"].answer is None
    assert [o.orientation for o in items["g4"].options] == ["male", "female"]
    assert {i.kind for i in items.values()} == {"gender-probe"} and {i.language for i in items.values()} == {"en"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "changes, expected",
    [
        ({"category": "funny"}, "'funny' is not a category"),
        ({"orientations": ["male", "male", "neutral"]}, "needs exactly one male and one female"),
        ({"orientations": ["male", "female"]}, "gives 2 orientations for 3 options"),
        ({"orientations": ["male", "female", "boy"]}, "'boy' is not an orientation"),
        ({"category": "independent"}, "must not be gender-oriented"),
        (
            {"options": ["a", "b", "c", "d"], "orientations": ["male", "female", "neutral", "none"]},
            "gender probes have 2 or 3",
        ),
        ({"question": ""}, "column 'question': is empty"),
    ],
)
def test_gender_probe_bad_rows(project, tmp_path, changes, expected):
    path = write_jsonl(tmp_path / "p.jsonl", [probe(), probe(id="g2", **changes)])
    message = import_error(project, [path], "gender-probe")
    assert "p.jsonl, row 2" in message and expected in message
