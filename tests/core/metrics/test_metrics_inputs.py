"""Reading responses tables (CSV, TSV, Parquet, JSONL) and the errors bad input gets: each names the file,
and where it can the row and column."""

import json

import pandas as pd
import pytest
from metrics_helpers import responses

from spokenbench.core.foundation.errors import InputError, SpokenBenchError
from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.gender_probe import prepare_gender_probe
from spokenbench.core.metrics.loading import read_responses_file
from spokenbench.core.metrics.responses import prepare_mcq

GOOD = [
    {"question_id": "q1", "model": "m", "answer": "B", "prediction": "B", "option_order": "ABCD", "gender": "f"},
    {"question_id": "q1", "model": "m", "answer": "B", "prediction": "", "option_order": "DCBA", "gender": "m"},
]


def problems(error: InputError) -> list[tuple]:
    return [(p.row, p.column, p.message) for p in error.problems]


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet", ".jsonl"])
def test_every_format_reads_to_the_same_strings(tmp_path, suffix):
    frame = pd.DataFrame(GOOD)
    path = tmp_path / f"r{suffix}"
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix == ".tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif suffix == ".parquet":
        frame.replace("", None).to_parquet(path)
    else:
        path.write_text("".join(json.dumps({k: (v or None) for k, v in r.items()}) + "\n" for r in GOOD))
    loaded = read_responses_file(path)
    assert loaded.to_dict("records") == GOOD
    assert analyze_mcq(loaded, ["gender"]).to_json()["m"]["accuracy"] == 0.5


def test_numbers_in_jsonl_become_text(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps({"question_id": 7, "model": "m", "answer": "A", "prediction": "A", "speed": 1.25}) + "\n"
    )
    loaded = read_responses_file(path)
    assert loaded.iloc[0].to_dict() == {
        "question_id": "7",
        "model": "m",
        "answer": "A",
        "prediction": "A",
        "speed": "1.25",
    }


def test_empty_file_header_only_and_unknown_type(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="empty"):
        read_responses_file(empty)
    header = tmp_path / "header.csv"
    header.write_text("question_id,model,answer,prediction\n")
    with pytest.raises(InputError, match="no data rows"):
        read_responses_file(header)
    other = tmp_path / "r.xlsx"
    other.write_text("x")
    with pytest.raises(InputError, match="unknown table type"):
        read_responses_file(other)
    with pytest.raises(SpokenBenchError, match="file not found"):
        read_responses_file(tmp_path / "missing.csv")


def test_bad_encoding_names_the_line(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("question_id,model,answer,prediction\nq1,m,A,A\nq2,caf\xe9,A,B\n".encode("latin-1"))
    with pytest.raises(InputError) as caught:
        read_responses_file(path)
    assert "UTF-8" in str(caught.value) and "line 3" in str(caught.value)


def test_bad_jsonl_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"question_id": "q1"}\n{not json}\n[1, 2]\n')
    with pytest.raises(InputError) as caught:
        read_responses_file(path)
    assert [(p.row, p.message.split(" (")[0]) for p in caught.value.problems] == [
        (2, "line 2 is not valid JSON"),
        (3, "line 3 is not a JSON object"),
    ]


def test_missing_columns_and_unknown_factors():
    frame = responses(GOOD).drop(columns=["answer"])
    with pytest.raises(InputError) as caught:
        prepare_mcq(frame, None, "r.csv")
    assert caught.value.problems[0].column == "answer" and "missing" in caught.value.problems[0].message
    with pytest.raises(InputError) as caught:
        prepare_mcq(responses(GOOD), ["gender", "accent"], "r.csv")
    [problem] = caught.value.problems
    assert problem.column == "accent" and "unknown factor" in problem.message and "gender" in problem.message


def test_letters_outside_the_options():
    frame = responses(GOOD)
    frame.loc[0, "prediction"] = "E"
    frame.loc[1, "answer"] = "Z"
    with pytest.raises(InputError) as caught:
        prepare_mcq(frame, [], "r.csv")
    found = problems(caught.value)
    assert (2, "answer", "letter outside the question's options") in found
    assert (1, "prediction", "letter outside the presented options") in found


def test_letters_outside_the_assumed_four_options_without_option_order():
    frame = responses(GOOD).drop(columns=["option_order"])
    frame.loc[0, "prediction"] = "E"
    with pytest.raises(InputError, match="4 options A-D are assumed"):
        prepare_mcq(frame, [], "r.csv")


def test_prediction_that_is_not_a_letter_and_bad_option_order():
    frame = responses(GOOD)
    frame.loc[0, "prediction"] = "B or C"
    frame.loc[1, "option_order"] = "ABCC"
    with pytest.raises(InputError) as caught:
        prepare_mcq(frame, [], "r.csv")
    found = problems(caught.value)
    assert (2, "option_order", "not a permutation of the option letters (expected e.g. 'ABCD' or 'DCBA')") in found


def test_a_question_whose_gold_answer_differs_between_rows():
    frame = responses(GOOD + [{**GOOD[0], "answer": "C"}])
    with pytest.raises(InputError) as caught:
        prepare_mcq(frame, [], "r.csv")
    message = str(caught.value)
    assert "question 'q1' has different gold answers: B (row 1), C (row 3)" in message


def test_cultural_label_and_empty_factor_levels():
    frame = responses(GOOD)
    frame["cultural_label"] = ["CS", "XX"]
    with pytest.raises(InputError, match="must be CS, CA or empty"):
        prepare_mcq(frame, [], "r.csv")
    frame = responses(GOOD)
    frame.loc[1, "gender"] = ""
    with pytest.raises(InputError, match="empty factor level"):
        prepare_mcq(frame, ["gender"], "r.csv")


def test_default_factors_skip_free_text_and_constant_columns():
    frame = responses(GOOD)
    frame["raw_text"] = ["The answer is B", ""]
    frame["dataset"] = "mmlu"
    data = prepare_mcq(frame, None, "r.csv")
    assert data.factors == ["gender"]
    assert set(data.ignored_columns) == {"raw_text", "dataset"}


def test_gender_probe_validation():
    rows = [
        {
            "question_id": "q1",
            "model": "s",
            "category": "dependent",
            "voice_gender": "female",
            "prediction": "C",
            "option_orientation": "MF",
        },
        {
            "question_id": "q1",
            "model": "s",
            "category": "independent",
            "voice_gender": "robot",
            "prediction": "A",
            "option_orientation": "MQ",
        },
        {
            "question_id": "q2",
            "model": "s",
            "category": "dependent",
            "voice_gender": "",
            "prediction": "A",
            "option_orientation": "MF",
        },
    ]
    with pytest.raises(InputError) as caught:
        prepare_gender_probe(responses(rows), "g.csv")
    messages = {(p.row, p.column) for p in caught.value.problems}
    assert {
        (1, "prediction"),
        (2, "voice_gender"),
        (2, "option_orientation"),
        (2, "category"),
        (3, "voice_gender"),
    } <= messages
