"""Likely ASR hallucinations (issue 13 item 5a) on stored real-style transcripts — Whisper tiny.en's outputs on the
demo's one-word option clips and the classic Chinese and Korean subtitle phrases — and how screening reports them:
set aside from a clip's minimum, a clip with nothing else in Table 2's own row, WER untouched otherwise."""

import json
from pathlib import Path

import pytest
from qc_support import add_clip, add_transcript, item_id, tone_wav

from spokenbench.core.asr.hallucination import is_likely_hallucination
from spokenbench.core.asr.scoring import Scorer
from spokenbench.core.asr.screening import (
    HALLUCINATION_LABEL,
    ScreeningSettings,
    compute_screening,
    screen_project,
    stored_hallucinations,
    stored_table2,
    worst_clips,
)
from spokenbench.core.asr.store import store_no_speech

FIXTURE = Path(__file__).with_name("hallucination_transcripts.jsonl")
CASES = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['language']}:{c['reference'][:20]}" for c in CASES])
def test_detector_on_stored_transcripts(case):
    found = is_likely_hallucination(case["reference"], case["transcript"], case["language"], case["no_speech_prob"])
    assert (found.reason if found else None) == case["flag"], case["note"]


def test_detector_without_a_no_speech_probability():
    # imported transcripts and remote ASRs carry none: the text rules still apply, the probability rule does not
    assert is_likely_hallucination("Mitochondrion", "Thank you for watching.", "en").reason == "stock phrase"
    assert is_likely_hallucination("Hangul", "And go.", "en") is None


def _bins(rows):
    return {(r["wer_interval"], r["language"]): (r["n_samples"], r["pct_of_language"]) for r in rows}


def test_a_hallucinated_transcript_is_set_aside_for_the_other_system():
    scorer = Scorer()
    transcripts = [("gemini", "Mitochondria"), ("local:tiny.en", "Thank you for watching.")]
    plain = scorer.score_clip("en", "Mitochondrion", transcripts)
    checked = scorer.score_clip("en", "Mitochondrion", transcripts, check_hallucinations=True)
    assert (plain.errors, plain.best_asr) == (checked.errors, checked.best_asr) == (1, "gemini")
    assert checked.hallucinations == (("local:tiny.en", "stock phrase (thank you)"),)
    assert not checked.likely_hallucination  # one system still heard the clip
    only = scorer.score_clip("en", "Mitochondrion", transcripts[1:], check_hallucinations=True)
    assert only.likely_hallucination and only.errors == 4  # scored on what there is, but reported apart


def test_no_speech_probability_counts_when_given():
    scorer = Scorer()
    score = scorer.score_clip("en", "Hangul", [("local:tiny.en", "And go.")], True, {"local:tiny.en": 0.72})
    assert score.likely_hallucination and "no-speech probability 0.72" in score.hallucinations[0][1]
    assert not scorer.score_clip("en", "Hangul", [("local:tiny.en", "And go.")], True, {"other": 0.9}).hallucinations


@pytest.fixture
def screened(qc_project):
    """Four English option clips and one Chinese clip, one ASR system; two English clips hallucinated."""
    en, zh = item_id(qc_project, "q3", "en"), item_id(qc_project, "q1", "zh")
    heard = [
        ("en", en, "option_A", "Mitochondrion", "Thank you for watching."),  # stock phrase
        ("en", en, "option_B", "Hangul", "And go."),  # no speech (0.72 below)
        ("en", en, "option_C", "Chloroplast", "Chloroplast."),  # right
        (
            "en",
            en,
            "option_D",
            "Palace of Versailles",
            "Palace of Versailles is.",
        ),  # one word too many in three: (0.2, 0.6]
        ("zh", zh, "option_A", "光合作用", "光和作用"),
    ]
    ids = []
    for language, item, part, text, transcript in heard:
        clip = add_clip(qc_project, item, part, text, language, audio=tone_wav(200 + 40 * len(ids)))
        add_transcript(qc_project, clip, "local:tiny.en", transcript)
        ids.append(clip)
    with qc_project.transaction() as conn:
        store_no_speech(conn, "local:tiny.en", [ids[1]], 0.72)
    return qc_project, ids


def test_table2_reports_hallucinations_in_their_own_row(screened):
    project, ids = screened
    result = screen_project(project, ScreeningSettings(min_asr=1))
    assert set(result.hallucinated) == {ids[0], ids[1]}
    bins = _bins(result.table2())
    assert bins[(HALLUCINATION_LABEL, "english")] == (2, 50.0)
    assert bins[("0", "english")] == (1, 25.0) and bins[("(0.2, 0.6]", "english")] == (1, 25.0)
    assert bins[(">0.6", "english")] == (0, 0.0), "the hallucinations are not counted as TTS errors"
    assert bins[(HALLUCINATION_LABEL, "chinese")] == (0, 0.0) and bins[("(0.2, 0.6]", "chinese")] == (1, 100.0)
    assert result.table2()[-1]["wer_interval_order"] == 5
    assert _bins(stored_table2(project.conn)) == bins, "the stored screening gives the same Table 2"
    assert [h["clip_id"] for h in stored_hallucinations(project.conn)] == ids[:2]
    worst = {w["clip_id"]: w["likely_asr_hallucination"] for w in worst_clips(project.conn, 10)}
    assert worst[ids[0]] == "local:tiny.en: stock phrase (thank you)" and worst[ids[3]] is None
    summary = result.summary()
    assert summary["likely_asr_hallucination"] == {"en": 2}
    assert summary["corpus_error_rate"]["en"] == pytest.approx(1 / 4)  # 0/1 + 1/3 words: the two set apart


def test_without_the_check_table2_is_the_papers(screened):
    project, ids = screened
    result = compute_screening(project.conn, ScreeningSettings(min_asr=1, hallucinations=False))
    bins = _bins(result.table2())
    assert not result.hallucinated and (HALLUCINATION_LABEL, "english") not in bins
    assert bins[(">0.6", "english")] == (2, 50.0)
    checked = compute_screening(project.conn, ScreeningSettings(min_asr=1))
    for clip_id in ids[2:]:  # clips with no flagged transcript score exactly the same
        assert checked.scores[clip_id] == result.scores[clip_id]


def test_the_paper_layout_is_exactly_the_four_intervals_with_hallucinations_where_their_wer_puts_them(screened, cli):
    project, ids = screened
    result = screen_project(project, ScreeningSettings(min_asr=1))
    paper = result.table2("paper")
    assert [row["wer_interval"] for row in paper] == [
        interval for interval in ("0", "(0, 0.2]", "(0.2, 0.6]", ">0.6") for _ in ("english", "chinese")
    ]
    bins = _bins(paper)
    assert bins[("0", "english")] == (1, 25.0) and bins[("(0.2, 0.6]", "english")] == (1, 25.0)
    assert bins[(">0.6", "english")] == (2, 50.0), "both suspects score > 0.6 on their only transcript"
    assert _bins(stored_table2(project.conn, "paper")) == bins
    assert HALLUCINATION_LABEL in {row["wer_interval"] for row in result.table2()}, "the default is unchanged"
    shown = cli("screen", project.path, "--min-asr", "1", "--layout", "paper", "--json")
    assert shown.code == 0 and _bins(shown.json()["table2"]) == bins
    with pytest.raises(SystemExit) as refused:
        cli("screen", project.path, "--layout", "wide")
    assert refused.value.code == 2
    with pytest.raises(ValueError, match="default, paper"):
        result.table2("wide")
