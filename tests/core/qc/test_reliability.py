"""Per-annotator reliability: control accuracy with its Wilson interval, agreement with the other annotators'
majority, median seconds, blocks of 20 positions, flags and their reasons, and qc-report's Annotators table,
--json fields and --exclude-flagged."""

import math

import pytest

from spokenbench.core.foundation.errors import SpokenBenchError
from spokenbench.core.qc.controls import control_clips
from spokenbench.core.qc.queues import RatingRow, queue_clips, rate_clips, sample_for_rating
from spokenbench.core.qc.reliability import Thresholds, annotator_reliability, wilson_interval

QUEUE = "c"


def wilson_by_hand(k, n, z=1.959963984540054):
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@pytest.mark.parametrize("k, n", [(5, 10), (10, 10), (0, 3), (7, 9)])
def test_the_wilson_interval_is_the_textbook_one(k, n):
    low, high = wilson_interval(k, n)
    assert (low, high) == pytest.approx(wilson_by_hand(k, n), abs=1e-4)
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize("k, n", [(5, 10), (10, 10), (0, 3), (7, 9), (1, 1), (3, 1000)])
def test_the_wilson_interval_matches_statsmodels(k, n):
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert wilson_interval(k, n) == [round(low, 4), round(high, 4)]


@pytest.fixture
def queue(qc_project, speech_clips):
    """Queue 'c': three sampled clips and six corrupted controls (expected Incorrect)."""
    sample_for_rating(qc_project, QUEUE, per_bin=3, seed=2, controls=6)
    known = control_clips(qc_project.conn)
    return [(clip.clip_id, known.get(clip.clip_id)) for clip in queue_clips(qc_project.conn, QUEUE)]


def rate_all(project, annotator, queue, verdict, seconds):
    rate_clips(project, QUEUE, annotator, [RatingRow(c, verdict(c, k), None, seconds) for c, k in queue])


def by_name(report):
    return {a["annotator"]: a for a in report["annotators"]}


def test_a_careless_annotator_is_flagged_with_reasons_and_an_attentive_one_is_not(qc_project, queue):
    rate_all(qc_project, "careless", queue, lambda c, k: "correct", 1)
    rate_all(qc_project, "attentive", queue, lambda c, k: k.expected if k else "correct", 6)
    report = annotator_reliability(qc_project.conn, QUEUE, Thresholds(min_median_seconds=2))
    careless, attentive = by_name(report)["careless"], by_name(report)["attentive"]
    assert careless["controls_rated"] == 6 and careless["ratings"] == 3
    assert careless["control_accuracy"] == 0.0 and careless["control_ci"] == pytest.approx(
        wilson_by_hand(0, 6), abs=1e-4
    )
    assert careless["flagged"] and careless["median_seconds"] == 1
    assert careless["reasons"][0].startswith("control accuracy 0% (0 of 6) is below 80%; missed")
    assert "median 1 s per clip is below 2 s" in careless["reasons"][1]
    assert not attentive["flagged"] and attentive["control_accuracy"] == 1.0 and attentive["reasons"] == []
    assert attentive["agreement_with_majority"] == 1.0 and attentive["shared_clips"] == 3
    assert attentive["distribution"] == {"correct": 1.0, "acceptable": 0.0, "incorrect": 0.0}
    assert report["pool_distribution"]["correct"] == 1.0


def test_agreement_is_with_the_majority_of_the_others_and_can_flag(qc_project, queue):
    ordinary = [c for c, k in queue if k is None]
    for name, verdicts in {"a": "CCC", "b": "CCC", "d": "CCC", "c": "CCA", "odd": "III"}.items():
        rows = [
            RatingRow(c, {"C": "correct", "A": "acceptable", "I": "incorrect"}[v]) for c, v in zip(ordinary, verdicts)
        ]
        rate_clips(qc_project, QUEUE, name, rows)
    entries = by_name(annotator_reliability(qc_project.conn, QUEUE, Thresholds(min_shared=3)))
    assert entries["a"]["agreement_with_majority"] == 1.0  # the others' majority is C on every clip
    assert entries["c"]["agreement_with_majority"] == pytest.approx(2 / 3, abs=1e-4)
    assert entries["odd"]["agreement_with_majority"] == 0.0 and entries["odd"]["flagged"]
    assert "agrees with the other annotators' majority on 0% of 3 shared clips" in entries["odd"]["reasons"][0]
    assert set(entries["a"]["cohen_kappa_with"]) == {"b", "c", "d", "odd"}
    assert entries["a"]["cohen_kappa_with"]["b"] == entries["b"]["cohen_kappa_with"]["a"]
    assert entries["odd"]["controls_rated"] == 0 and entries["odd"]["notes"] == ["no control clips rated"]


def test_blocks_of_positions_show_drift(qc_project, speech_clips, monkeypatch):
    from spokenbench.core.qc import reliability

    assert reliability.BLOCK == 20
    monkeypatch.setattr(reliability, "BLOCK", 10)  # the fixture's queue holds 15 clips
    sample_for_rating(qc_project, QUEUE, per_bin=3, seed=2, controls=12)
    known = control_clips(qc_project.conn)
    queue = [(clip.clip_id, known.get(clip.clip_id)) for clip in queue_clips(qc_project.conn, QUEUE)]
    position = {clip: index for index, (clip, _) in enumerate(queue)}
    # right on controls in the first 10 positions, tired after: everything Correct
    rate_all(qc_project, "tiring", queue,
             lambda c, k: (k.expected if k and position[c] < 10 else "correct"), None)  # fmt: skip
    entry = by_name(annotator_reliability(qc_project.conn, QUEUE))["tiring"]
    assert [b["positions"] for b in entry["blocks"]] == ["1–10", "11–15"]
    assert entry["blocks"][0]["control_accuracy"] == 1.0 and entry["blocks"][1]["control_accuracy"] == 0.0
    assert entry["median_seconds"] is None


def test_thresholds_are_checked():
    with pytest.raises(SpokenBenchError, match="min-control-accuracy"):
        Thresholds(min_control_accuracy=1.5)


def test_qc_report_annotators_json_and_exclude_flagged(cli, qc_project, queue, tmp_path):
    import csv

    rate_all(qc_project, "careless", queue, lambda c, k: "correct", 1)
    rate_all(qc_project, "attentive", queue, lambda c, k: k.expected if k else "acceptable", 6)
    (tmp_path / "out").mkdir()  # `--out` never creates its folder
    assert cli("qc-report", qc_project.path, "--queue", QUEUE, "--out", tmp_path / "out").code == 0
    with open(tmp_path / "out" / "annotators.csv", encoding="utf-8") as handle:
        written = {row["annotator"]: row for row in csv.DictReader(handle)}
    assert written["careless"]["flagged"] == "True" and written["careless"]["control_ci"].startswith("0.0–0.39")
    assert written["careless"]["reasons"].startswith("control accuracy 0% (0 of 6)")
    body = cli("qc-report", qc_project.path, "--queue", QUEUE, "--json").json()
    keys = {"annotator", "ratings", "controls_rated", "control_accuracy", "control_ci", "agreement_with_majority",
            "median_seconds", "flagged", "reasons"}  # fmt: skip
    assert all(keys <= set(entry) for entry in body["annotators"])
    assert [a["annotator"] for a in body["annotators"] if a["flagged"]] == ["careless"]
    assert body["ratings"]["ratings"] == 6 and "exclusion" not in body["ratings"]  # controls never count
    excluded = cli("qc-report", qc_project.path, "--queue", QUEUE, "--exclude-flagged", "--json").json()["ratings"]
    assert excluded["exclusion"]["excluded_annotators"] == ["careless"]
    assert excluded["exclusion"]["ratings_dropped"] == 3 and excluded["ratings"] == 3
    assert {r["rating"]: r["n_clips"] for r in excluded["table3"]}["acceptable"] == 3
    text = cli("qc-report", qc_project.path, "--queue", QUEUE, "--exclude-flagged").out
    assert "Annotators" in text and "FLAGGED" in text and "3 ratings dropped" in text
    assert "careless: control accuracy 0% (0 of 6) is below 80%" in text
    with pytest.raises(SystemExit) as exited:
        cli("qc-report", qc_project.path, "--min-agreement", "2")
    assert exited.value.code == 2
