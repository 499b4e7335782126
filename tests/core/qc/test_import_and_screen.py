"""Importing transcripts from any ASR (good and bad input), screening with fixed transcripts, and Table 2's layout."""

import csv

import pytest
from qc_support import add_transcript
from support import write_csv, write_jsonl

from spokenbench.core.asr.screening import (
    TABLE2_COLUMNS,
    ScreeningSettings,
    compute_screening,
    ensure_screening,
    screen_project,
)
from spokenbench.core.results.published import published_dir

REFERENCE = published_dir("biasinear")  # the papers' tables, bundled in resources/published/


def test_import_transcripts_from_csv_and_jsonl(cli, qc_project, screened_clips, tmp_path):
    rows = [
        {"clip_id": screened_clips["en_q"], "text": "Which holiday is in November"},
        {"clip_id": screened_clips["zh_q"], "text": "硫酸的摩尔质量约为多少", "model": "large-v3"},
    ]
    result = cli(
        "import-transcripts",
        qc_project.path,
        write_csv(tmp_path / "t.csv", rows, ["clip_id", "text", "model"]),
        "--asr",
        "whisper-large-v3",
        "--model",
        "whisper",
        "--json",
    )
    assert result.code == 0, result.err
    assert result.json() == {"asr": "whisper-large-v3", "imported": 2, "replaced": 0}
    stored = qc_project.conn.execute("SELECT clip_id, model, text FROM transcripts ORDER BY clip_id").fetchall()
    assert [tuple(r) for r in stored] == [
        (screened_clips["en_q"], "whisper", "Which holiday is in November"),
        (screened_clips["zh_q"], "large-v3", "硫酸的摩尔质量约为多少"),
    ]
    again = cli(
        "import-transcripts",
        qc_project.path,
        write_jsonl(tmp_path / "t.jsonl", [{"clip_id": screened_clips["en_q"], "text": ""}]),
        "--asr",
        "whisper-large-v3",
    )
    assert again.code == 0 and "1 replaced" in again.out  # an empty transcript stands for silence


@pytest.mark.slow
@pytest.mark.parametrize(
    "rows, columns, message",
    [
        ([{"clip": 1, "text": "x"}], ["clip", "text"], "column 'clip_id': missing column"),
        ([{"clip_id": 1}], ["clip_id"], "column 'text': missing column"),
        ([{"clip_id": "CLIP", "text": "x"}], None, "row 2, column 'clip_id': not a clip id: 'abc'"),
        ([{"clip_id": "CLIP", "text": "x"}], None, "row 3, column 'clip_id': no clip 9999 in this project"),
        ([{"clip_id": "CLIP", "text": "x"}], None, "row 4, column 'clip_id': clip CLIP appears again (first in row 1)"),
    ],
)
def test_bad_transcript_files_are_rejected_whole_naming_file_row_and_column(
    cli, qc_project, screened_clips, tmp_path, rows, columns, message
):
    clip = screened_clips["en_q"]
    if columns is None:  # a file whose first row is fine and whose later rows are not
        rows = [
            {"clip_id": clip, "text": "fine"},
            {"clip_id": "abc", "text": "x"},
            {"clip_id": 9999, "text": "x"},
            {"clip_id": clip, "text": "again"},
        ]
    path = write_csv(tmp_path / "bad.csv", rows, columns)
    result = cli("import-transcripts", qc_project.path, path, "--asr", "external")
    assert result.code == 2
    assert f"{path}, {message.replace('CLIP', str(clip))}" in result.err
    assert "Traceback" not in result.err
    assert qc_project.conn.execute("SELECT count(*) FROM transcripts").fetchone()[0] == 0, "nothing is imported"


def test_bad_encoding_is_rejected_with_the_file_and_line(cli, qc_project, screened_clips, tmp_path):
    latin1 = write_csv(
        tmp_path / "latin1.csv", [{"clip_id": screened_clips["en_q"], "text": "café au lait"}], encoding="latin-1"
    )
    result = cli("import-transcripts", qc_project.path, latin1, "--asr", "external")
    assert result.code == 2 and str(latin1) in result.err and "not valid UTF-8" in result.err and "line 2" in result.err
    utf16 = write_csv(tmp_path / "utf16.csv", [{"clip_id": screened_clips["en_q"], "text": "x"}], encoding="utf-16")
    result = cli("import-transcripts", qc_project.path, utf16, "--asr", "external")
    assert result.code == 2 and "UTF-16" in result.err
    assert qc_project.conn.execute("SELECT count(*) FROM transcripts").fetchone()[0] == 0


def test_screening_keeps_the_better_of_two_systems_and_needs_two(qc_project, screened_clips):
    c = screened_clips
    add_transcript(qc_project, c["en_q"], "a", "Which holiday is in December?")  # 1/5
    add_transcript(qc_project, c["en_q"], "b", "which holiday is in november")  # 0
    add_transcript(qc_project, c["en_a"], "a", "Thanksgiving is on Thursday")  # 2 deletions / 6 words
    add_transcript(qc_project, c["en_a"], "b", "Thanks giving day is on a Thursday")  # 1 sub + 1 ins / 6
    add_transcript(qc_project, c["zh_q"], "a", "硫酸的摩尔质量约为多少")  # punctuation only: 0
    add_transcript(qc_project, c["zh_q"], "b", "流酸的摩尔质量约为多少")  # a homophone: 1/11
    add_transcript(qc_project, c["ko_q"], "a", "황산 몰 질량은 약 얼마입니까")  # one word of five changed
    result = compute_screening(qc_project.conn)
    assert result.screened == 3 and result.too_few_transcripts == {c["ko_q"]: 1}
    assert (result.scores[c["en_q"]].best_asr, result.scores[c["en_q"]].rate) == ("b", 0.0)
    assert result.scores[c["en_a"]].errors == 2 and result.scores[c["en_a"]].bin == 2  # 2/6 > 0.2
    assert result.scores[c["zh_q"]].rate == 0.0 and result.scores[c["zh_q"]].asr_count == 2
    assert result.metric_by_language == {"en": "wer", "zh": "cer", "ko": "wer"}
    one = compute_screening(qc_project.conn, ScreeningSettings(min_asr=1, metrics=(("ko", "cer"),)))
    assert one.screened == 4 and one.scores[c["ko_q"]].metric == "cer" and one.scores[c["ko_q"]].bin == 1


def test_screening_is_stored_and_recomputed_only_when_transcripts_change(qc_project, screened_clips):
    c = screened_clips
    for asr in ("a", "b"):
        add_transcript(qc_project, c["en_q"], asr, "Which holiday is in November")
    assert ensure_screening(qc_project) == 1
    stored = qc_project.conn.execute("SELECT screened_at FROM clip_screening").fetchone()[0]
    assert ensure_screening(qc_project) == 1
    assert qc_project.conn.execute("SELECT screened_at FROM clip_screening").fetchone()[0] == stored, (
        "unchanged: not recomputed"
    )
    for asr in ("a", "b"):
        add_transcript(qc_project, c["zh_q"], asr, "硫酸")
    assert ensure_screening(qc_project) == 2
    assert (
        qc_project.conn.execute("SELECT wer_bin FROM clip_screening WHERE clip_id = ?", (c["zh_q"],)).fetchone()[0] == 3
    )


def test_table2_has_the_published_layout(qc_project, screened_clips):
    c = screened_clips
    for clip, heard in (
        (c["en_q"], "Which holiday is in November"),
        (c["en_a"], "Thanksgiving day is on a Thursday"),
        (c["zh_q"], "硫酸的摩尔质量约为多少啊"),
        (c["ko_q"], "황산의 몰 질량은 약 얼마입니까"),
    ):
        add_transcript(qc_project, clip, "a", heard)
        add_transcript(qc_project, clip, "b", heard)
    table = screen_project(qc_project).table2()
    with open(REFERENCE / "table02_wer_intervals.csv", encoding="utf-8") as handle:
        reference = list(csv.DictReader(handle))
    assert list(table[0]) == TABLE2_COLUMNS == list(reference[0])
    assert [(r["wer_interval_order"], r["wer_interval"], r["language"]) for r in table] == [
        (int(r["wer_interval_order"]), r["wer_interval"], r["language"]) for r in reference
    ]
    counts = {(r["wer_interval"], r["language"]): (r["n_samples"], r["pct_of_language"]) for r in table}
    assert counts[("0", "english")] == (2, 100.0)
    assert counts[("(0, 0.2]", "chinese")] == (1, 100.0)  # one extra character in eleven
    assert counts[("0", "korean")] == (1, 100.0) and counts[(">0.6", "english")] == (0, 0.0)


def test_cli_screen_offline_says_what_screening_needs(cli, qc_project, screened_clips, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("MISTRAL_API_KEY", raising=False)
    monkeypatch.setattr("spokenbench.core.foundation.credentials._from_keyring", lambda variable: None)
    result = cli("screen", qc_project.path)
    assert result.code == 0
    assert "two independent ASR systems" in result.out and "import-transcripts" in result.out
    assert "No ASR backend is configured on this machine" in result.out or "local:MODEL_DIR" in result.out
    assert cli("screen", qc_project.path, "--json").json()["screened"] == 0


def test_cli_screen_reports_worst_clips_and_metric_overrides(cli, qc_project, screened_clips):
    c = screened_clips
    for asr in ("a", "b"):
        add_transcript(qc_project, c["ko_q"], asr, "황산의 몰질량은 약 얼마입니까")
        add_transcript(qc_project, c["en_q"], asr, "Which holiday")
    default = cli("screen", qc_project.path, "--json", "--worst", "1").json()
    assert default["worst"][0]["clip_id"] == c["en_q"] and default["worst"][0]["transcript"] == "Which holiday"
    korean = cli("screen", qc_project.path, "--metric", "ko=cer", "--json").json()
    assert korean["metric_by_language"]["ko"] == "cer"
    assert next(r for r in korean["table2"] if r["language"] == "korean" and r["wer_interval"] == "0")["n_samples"] == 1
    assert cli("screen", qc_project.path, "--metric", "ko=bleu").code == 2
