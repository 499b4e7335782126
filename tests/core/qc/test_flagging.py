"""Diff-based flagging on hand-made cases, review decisions, and Table 9's layout."""

import csv

import pytest
from qc_support import item_id

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.results.published import published_dir
from spokenbench.core.rewriting.flagging import (
    AUTO_REVIEWER,
    char_diff,
    flag_rewrites,
    flagged_rewrites,
    inline_diff,
    normalize_for_diff,
    review_item,
    review_rewrite,
)
from spokenbench.core.rewriting.report import TABLE9_COLUMNS, rewrite_qc
from spokenbench.core.store.rewrites import add_rewrite, latest_rewrites

REFERENCE = published_dir("biasinear")  # the papers' tables, bundled in resources/published/


def test_normalization_removes_whitespace_and_case_only():
    assert normalize_for_diff("  What IS\tthe\nAnswer? ") == "whatistheanswer?"
    assert normalize_for_diff("韩国的 国旗") == "韩国的国旗"
    assert normalize_for_diff("H2SO4 (Sulfuric acid)") == "h2so4(sulfuricacid)"


@pytest.mark.parametrize(
    "original, rewritten, expected",
    [
        ("abc", "abc", []),
        ("x^2", "xsquared", [{"op": "replace", "original": "^2", "rewrite": "squared", "at": 1}]),
        (
            "louisxiv(thesunking)",
            "louisxiv,thesunking",
            [
                {"op": "replace", "original": "(", "rewrite": ",", "at": 8},
                {"op": "delete", "original": ")", "rewrite": "", "at": 19},
            ],
        ),
        ("98g/mol", "98gpermol", [{"op": "replace", "original": "/", "rewrite": "per", "at": 3}]),
        ("called____.", "calledblank.", [{"op": "replace", "original": "____", "rewrite": "blank", "at": 6}]),
        ("2和-5", "2和负5", [{"op": "replace", "original": "-", "rewrite": "负", "at": 2}]),
    ],
)
def test_character_level_diff_on_hand_made_cases(original, rewritten, expected):
    assert char_diff(original, rewritten) == expected


def test_inline_diff_shortens_unchanged_text():
    line = inline_diff("whatisthemolarmassofh2so4(sulfuricacid)?", "whatisthemolarmassofsulfuricacid?")
    assert line == "…armassof[-h2so4(-]sulfuricacid[-)-]?"


def _rewrite(project, source_id, language, texts: dict[str, str]):
    item = item_id(project, source_id, language)
    with project.transaction() as conn:
        for part, text in texts.items():
            add_rewrite(conn, item, part, text, "llm:test")
    return item


def test_flagging_flags_differences_and_accepts_unchanged_parts(qc_project):
    item = _rewrite(
        qc_project,
        "q3",
        "en",
        {
            "question": "Which  holiday is in november?",  # whitespace and case only: same text
            "option_A": "Thanksgiving",
            "option_B": "Easter",
            "option_C": "Halloween",
            "option_D": "Labour Day",  # a real change
        },
    )
    report = flag_rewrites(qc_project)
    assert (report.checked, report.flagged, report.accepted_unchanged) == (5, 1, 4)
    rewrites = latest_rewrites(qc_project.conn, item)
    assert rewrites["option_D"]["status"] == "flagged"
    assert rewrites["question"]["status"] == "accepted" and rewrites["question"]["reviewer"] == AUTO_REVIEWER
    [flag] = flagged_rewrites(qc_project.conn)
    assert (flag.part, flag.original, flag.rewrite) == ("option_D", "Labor Day", "Labour Day")
    assert flag.diff == "labo{+u+}rday"
    assert flag_rewrites(qc_project).checked == 0, "a rerun only sees parts still pending"


def test_review_decisions_are_recorded_with_reviewer_and_time(qc_project):
    item = _rewrite(
        qc_project,
        "q1",
        "en",
        {
            "question": "What is the molar mass of sulfuric acid?",
            "option_A": "ninety-six grams per mole",
            "option_B": "eighty-nine grams per mole",
            "option_C": "eighty-two grams per mole",
            "option_D": "forty-nine grams per mole",
        },
    )
    flag_rewrites(qc_project)
    review_rewrite(
        qc_project, item, "option_B", "edit", "ana", text="ninety-eight grams per mole", note="digits swapped"
    )
    review_rewrite(qc_project, item, "option_D", "reject", "ana")
    assert review_item(qc_project, item, "accept", "ben") == 3  # question, A and C were still waiting
    rewrites = latest_rewrites(qc_project.conn, item)
    assert rewrites["option_B"]["text"] == "ninety-eight grams per mole" and rewrites["option_B"]["status"] == "edited"
    assert rewrites["option_B"]["origin"] == "manual" and rewrites["option_B"]["reviewer"] == "ana"
    assert rewrites["option_D"]["status"] == "rejected" and rewrites["question"]["reviewer"] == "ben"
    reviews = qc_project.conn.execute(
        "SELECT part, decision, reviewer, note, created_at FROM rewrite_reviews ORDER BY id"
    ).fetchall()
    assert [(r["part"], r["decision"], r["reviewer"]) for r in reviews] == [
        ("option_B", "edit", "ana"),
        ("option_D", "reject", "ana"),
        ("option_A", "accept", "ben"),
        ("option_C", "accept", "ben"),
        ("question", "accept", "ben"),
    ]
    assert reviews[0]["note"] == "digits swapped" and all(r["created_at"] for r in reviews)
    assert flagged_rewrites(qc_project.conn) == [], "nothing awaits review any more"
    qc = rewrite_qc(qc_project.conn)
    assert qc["table9"] == [
        {"language": "english", "qc_stage": "flagged", "n_questions": 5, "pct_of_language": 100.0},
        {"language": "english", "qc_stage": "verified_error", "n_questions": 2, "pct_of_language": 40.0},
    ]
    assert qc["by_language"]["en"]["accepted_after_review"] == 3


def test_review_refuses_what_it_cannot_do(qc_project):
    item = item_id(qc_project, "q2", "en")
    with pytest.raises(SpokenBenchError, match="no rewrite to accept"):
        review_rewrite(qc_project, item, "question", "accept", "ana")
    with pytest.raises(SpokenBenchError, match="reviewer"):
        review_rewrite(qc_project, item, "question", "edit", " ", text="x")
    with pytest.raises(SpokenBenchError, match="no part 'option_Z'"):
        review_rewrite(qc_project, item, "option_Z", "edit", "ana", text="x")
    # an item marked for manual rewriting gets its text by an edit
    review_rewrite(qc_project, item, "question", "edit", "ana", text="A ball falls for two seconds. How far?")
    assert latest_rewrites(qc_project.conn, item)["question"]["status"] == "edited"


def test_table9_matches_the_published_layout_and_counts_per_part(qc_project):
    for source_id, language in (("q1", "en"), ("q2", "en"), ("q1", "zh")):
        item = item_id(qc_project, source_id, language)
        with qc_project.transaction() as conn:
            for part in ("question", "option_A", "option_B", "option_C", "option_D"):
                original = (
                    conn.execute("SELECT question FROM items WHERE id = ?", (item,)).fetchone()[0]
                    if part == "question"
                    else conn.execute(
                        "SELECT text FROM options WHERE item_id = ? AND letter = ?", (item, part[-1])
                    ).fetchone()[0]
                )
                add_rewrite(conn, item, part, original + (" changed" if part == "option_A" else ""), "llm:test")
    flag_rewrites(qc_project)
    review_rewrite(qc_project, item_id(qc_project, "q1", "zh"), "option_A", "reject", "ana")
    table = rewrite_qc(qc_project.conn)["table9"]
    with open(REFERENCE / "table09_rewrite_qc.csv", encoding="utf-8") as handle:
        reference = list(csv.DictReader(handle))
    assert list(table[0]) == TABLE9_COLUMNS == list(reference[0])
    assert [(r["language"], r["qc_stage"]) for r in table] == [
        (r["language"], r["qc_stage"]) for r in reference if r["language"] != "korean"
    ]
    assert table == [
        {"language": "english", "qc_stage": "flagged", "n_questions": 2, "pct_of_language": 20.0},
        {"language": "english", "qc_stage": "verified_error", "n_questions": 0, "pct_of_language": 0.0},
        {"language": "chinese", "qc_stage": "flagged", "n_questions": 1, "pct_of_language": 20.0},
        {"language": "chinese", "qc_stage": "verified_error", "n_questions": 1, "pct_of_language": 20.0},
    ]


@pytest.mark.slow
def test_cli_flag_list_and_review(cli, qc_project):
    item = _rewrite(qc_project, "q3", "en", {"option_D": "Labour Day"})
    listed = cli("flag", qc_project.path, "--list")
    assert (
        listed.code == 0 and "labo{+u+}rday" in listed.out and f"item {item} q3 (en) option_D [flagged]" in listed.out
    )
    assert "await review" in listed.out
    missing = cli("review", qc_project.path, "--item", item, "--edit", "Labor Day", "--reviewer", "ana")
    assert missing.code == 2 and "--part" in missing.err
    done = cli("review", qc_project.path, "--item", item, "--reject", "--reviewer", "ana")
    assert done.code == 0 and "1 parts" in done.out
    assert cli("flag", qc_project.path, "--json").json()["by_language"]["en"]["verified_errors"] == 1
