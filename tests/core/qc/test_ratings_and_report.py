"""Rating results in Table 3's layout, per WER interval, annotator agreement cross-checked with statsmodels, the
disagreement list, the combined qc-report and its CSV files, and the demo's QC content."""

import csv
import time

import numpy as np
import pytest
from qc_support import add_clip, add_transcript, item_id
from statsmodels.stats.inter_rater import cohens_kappa, fleiss_kappa

from spokenbench.core.qc.queues import rate_clip, sample_for_rating
from spokenbench.core.qc.ratings import TABLE3_COLUMNS, consensus, rating_results
from spokenbench.core.results.published import published_dir

REFERENCE = published_dir("biasinear")  # the papers' tables, bundled in resources/published/
CATEGORIES = ("incorrect", "acceptable", "correct")


def test_consensus_is_the_majority_and_a_tie_goes_to_the_more_severe_rating():
    assert consensus(["correct", "correct", "incorrect"]) == "correct"
    assert consensus(["correct", "acceptable"]) == "acceptable"
    assert consensus(["correct", "incorrect", "acceptable"]) == "incorrect"


@pytest.fixture
def rated(qc_project):
    """Ten English and four Chinese clips; English rated by three annotators, Chinese by one."""
    en, zh = item_id(qc_project, "q3", "en"), item_id(qc_project, "q1", "zh")
    en_clips = [
        add_clip(qc_project, en, "question", "Which holiday is in November?", "en", voice=f"v{n}") for n in range(10)
    ]
    zh_clips = [
        add_clip(qc_project, zh, "question", "硫酸的摩尔质量约为多少？", "zh", accent="beijing", voice=f"v{n}")
        for n in range(4)
    ]
    ratings = {  # rows: clips; columns: ana, ben, cem
        0: "CCC",
        1: "CCA",
        2: "CAA",
        3: "AAA",
        4: "CCC",
        5: "IIA",
        6: "CCI",
        7: "AAC",
        8: "CCC",
        9: "IIC",
    }
    letters = {"C": "correct", "A": "acceptable", "I": "incorrect"}
    for clip, row in zip(en_clips, ratings.values()):
        for annotator, letter in zip(("ana", "ben", "cem"), row):
            rate_clip(qc_project, clip, annotator, letters[letter], note="hiss" if letter == "I" else None)
    rate_clip(qc_project, en_clips[0], "ana", "incorrect")  # ana changes her mind: the newest rating counts
    rate_clip(qc_project, en_clips[0], "ana", "correct")
    for clip, rating in zip(zh_clips, ("correct", "correct", "acceptable", "incorrect")):
        rate_clip(qc_project, clip, "ana", rating)
    return {"en": en_clips, "zh": zh_clips, "table": [[letters[x] for x in row] for row in ratings.values()]}


def test_table3_has_the_published_layout_and_counts_consensus_per_clip(qc_project, rated):
    results = rating_results(qc_project.conn)
    with open(REFERENCE / "table03_human_ratings.csv", encoding="utf-8") as handle:
        reference = list(csv.DictReader(handle))
    table = results["table3"]
    assert list(table[0]) == TABLE3_COLUMNS == list(reference[0])
    assert [(r["language"], r["rating"]) for r in table] == [
        (r["language"], r["rating"]) for r in reference if r["language"] != "korean"
    ]
    # English consensus: CCC C, CCA C, CAA A, AAA A, CCC C, IIA I, CCI C, AAC A, CCC C, IIC I
    assert table[:3] == [
        {"language": "english", "rating": "incorrect", "n_clips": 2, "pct_of_language": 20.0},
        {"language": "english", "rating": "acceptable", "n_clips": 3, "pct_of_language": 30.0},
        {"language": "english", "rating": "correct", "n_clips": 5, "pct_of_language": 50.0},
    ]
    assert [r["n_clips"] for r in table[3:]] == [1, 1, 2]
    assert results["rated_clips"] == 14 and results["annotators"] == ["ana", "ben", "cem"]
    assert {r["wer_interval"] for r in results["table3_by_wer_interval"]} == {"unscreened"}


def test_agreement_matches_statsmodels(qc_project, rated):
    agreement = rating_results(qc_project.conn)["agreement"]
    counts = np.array([[row.count(c) for c in CATEGORIES] for row in rated["table"]])
    assert agreement["clips_rated_by_several"] == 10
    assert agreement["fleiss_kappa"] == pytest.approx(fleiss_kappa(counts), abs=1e-4)
    assert agreement["fleiss_kappa_by_language"] == {"english": pytest.approx(fleiss_kappa(counts), abs=1e-4)}
    for pair in agreement["pairs"]:
        a, b = (("ana", "ben", "cem").index(name) for name in pair["annotators"])
        table = np.zeros((3, 3))
        for row in rated["table"]:
            table[CATEGORIES.index(row[a]), CATEGORIES.index(row[b])] += 1
        assert pair["cohen_kappa"] == pytest.approx(cohens_kappa(table).kappa, abs=1e-4)
        assert pair["shared_clips"] == 10
    assert [p["annotators"] for p in agreement["pairs"]] == [["ana", "ben"], ["ana", "cem"], ["ben", "cem"]]


def test_disagreements_list_every_clip_the_annotators_split_on(qc_project, rated):
    listed = rating_results(qc_project.conn)["disagreements"]
    assert [d["clip_id"] for d in listed] == [rated["en"][i] for i in (1, 2, 5, 6, 7, 9)]
    assert listed[2]["ratings"] == {"ana": "incorrect", "ben": "incorrect", "cem": "acceptable"}
    assert listed[2]["notes"] == {"ana": "hiss", "ben": "hiss"}


def test_ratings_per_wer_interval_use_the_queue_interval(qc_project):
    item = item_id(qc_project, "q2", "en")
    clips = [add_clip(qc_project, item, "question", "one two three four five", "en", voice=f"v{n}") for n in range(6)]
    for clip, heard in zip(clips, ("one two three four", "one two three four", "one two", "one two", "six", "six")):
        add_transcript(qc_project, clip, "a", heard)
        add_transcript(qc_project, clip, "b", heard)
    sample_for_rating(qc_project, "qc", per_bin=2, seed=0)
    for clip, rating in zip(clips, ("correct", "correct", "acceptable", "correct", "incorrect", "incorrect")):
        rate_clip(qc_project, clip, "ana", rating, queue="qc")
    rows = rating_results(qc_project.conn, "qc")["table3_by_wer_interval"]
    got = {(r["wer_interval"], r["rating"]): r["n_clips"] for r in rows}
    assert (
        got[("(0, 0.2]", "correct")] == 2 and got[("(0.2, 0.6]", "acceptable")] == 1 and got[(">0.6", "incorrect")] == 2
    )
    assert [r["wer_interval_order"] for r in rows][::3] == [2, 3, 4]


@pytest.mark.slow
def test_qc_report_cli_writes_the_tables_in_the_published_layouts(cli, qc_project, rated, tmp_path):
    out = tmp_path / "report"
    out.mkdir()  # `--out` never creates its folder
    result = cli("qc-report", qc_project.path, "--out", out)
    assert result.code == 0, result.err
    assert "Fleiss' κ" in result.out and "ASR screening needs transcripts" in result.out
    for name in ("table02_wer_intervals.csv", "table03_human_ratings.csv", "table09_rewrite_qc.csv"):
        with open(out / name, encoding="utf-8") as mine, open(REFERENCE / name, encoding="utf-8") as published:
            assert next(csv.reader(mine)) == next(csv.reader(published)), name
    with open(out / "table03_human_ratings.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[0] == {"language": "english", "rating": "incorrect", "n_clips": "2", "pct_of_language": "20.0"}
    with open(out / "annotators.csv", encoding="utf-8") as handle:
        annotators = list(csv.DictReader(handle))
    assert [a["annotator"] for a in annotators] == ["ana", "ben", "cem"] and annotators[0]["controls_rated"] == "0"
    body = cli("qc-report", qc_project.path, "--json").json()
    assert set(body) == {"rewriting", "screening", "queues", "ratings", "annotators", "reliability"}
    assert len(body["ratings"]["disagreements"]) == 6


@pytest.mark.slow
def test_the_demo_holds_flagged_rewrites_and_a_queue(cli, demo_copy):
    """`spokenbench demo` calls add_demo_qc; calling it again changes nothing."""
    from spokenbench.core.qc.demo import DEMO_QUEUE, add_demo_qc
    from spokenbench.core.store import opened

    with opened(demo_copy) as project:
        clips_before = project.conn.execute("SELECT count(*) FROM clips").fetchone()[0]
        rewrites_before = project.conn.execute("SELECT count(*) FROM rewrites").fetchone()[0]
        started = time.perf_counter()
        again = add_demo_qc(project)
        assert time.perf_counter() - started < 2.0
        assert again["flagged"] == 0 and again["queue"] == DEMO_QUEUE, "a second call changes nothing"
        assert project.conn.execute("SELECT count(*) FROM rewrites").fetchone()[0] == rewrites_before
    flagged = cli("flag", demo_copy, "--list", "--json").json()["flagged_rewrites"]
    assert {f["language"] for f in flagged} == {"zh", "ko"} and any(f["rewrite"] == "2和5" for f in flagged)
    report = cli("qc-report", demo_copy, "--json").json()
    by_language = report["rewriting"]["by_language"]
    assert by_language["en"]["verified_errors"] == 1 and by_language["en"]["awaiting_review"] == 0
    assert by_language["zh"]["awaiting_review"] > 0 and by_language["ko"]["awaiting_review"] > 0
    [queue] = report["queues"]
    # 47 clips: 53 until issue 25 took the demo probes' third options (16 clips fewer to sample from)
    assert queue["name"] == DEMO_QUEUE and queue["clips"] == 47 and queue["strategy"] == "wer-bins"
    assert queue["rated_by"] == {"demo-annotator-1": 8, "demo-annotator-2": 6}
    systems = {row["asr"] for row in report["screening"]["transcripts_by_asr"]}
    assert systems == {"simulated-asr-a", "simulated-asr-b"}, "the demo's ASR systems are labelled simulated"
    bins = {row["wer_interval"] for row in report["screening"]["table2"] if row["n_samples"]}
    assert len(bins) >= 3, "the simulated errors spread the clips over several WER intervals"
    with opened(demo_copy) as project:
        assert project.conn.execute("SELECT count(*) FROM clips").fetchone()[0] == clips_before, (
            "no audio is added or lost"
        )
