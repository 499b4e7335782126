"""Issue 24's demo check: on the demo project, a queue with 10 hidden controls rated by a careless annotator
(everything Correct, 1 s a clip) and an attentive one (controls right): the careless one is flagged, the attentive
one is not, and Table 3 is reported with and without the flagged annotators."""

import pytest
from support import CONTROL_QUEUE, rate_control_demo


@pytest.mark.slow
def test_a_careless_annotator_is_flagged_and_an_attentive_one_is_not(cli, demo_copy, tmp_path, capsys):
    setup = rate_control_demo(demo_copy, tmp_path)
    assert capsys.readouterr().out.count("stored 57 rating(s)") == 2
    assert len(setup["controls"]) == 10
    kinds = sorted(control.kind for control in setup["controls"].values())
    assert kinds.count("gold") == 5 and {"mismatch", "truncated", "noise", "speed"} <= set(kinds)
    report = cli("qc-report", demo_copy, "--queue", CONTROL_QUEUE, "--json").json()
    annotators = {a["annotator"]: a for a in report["annotators"]}
    careless, attentive = annotators["careless"], annotators["attentive"]
    sampled = len(setup["queue"]) - 10
    assert careless["ratings"] == attentive["ratings"] == sampled and careless["controls_rated"] == 10
    assert careless["control_accuracy"] == 0.5 and careless["control_ci"] == [0.2366, 0.7634]
    assert careless["flagged"] and careless["median_seconds"] == 1
    assert careless["reasons"][0].startswith("control accuracy 50% (5 of 10) is below 80%; missed")
    assert attentive["control_accuracy"] == 1.0 and attentive["control_ci"] == [0.7225, 1.0]
    assert not attentive["flagged"] and attentive["reasons"] == []
    # Table 3: controls never count; without the flagged annotators, their ratings are dropped and said so
    assert report["ratings"]["rated_clips"] == sampled
    excluded = cli("qc-report", demo_copy, "--queue", CONTROL_QUEUE, "--exclude-flagged", "--json").json()["ratings"]
    flagged = [a for a in report["annotators"] if a["flagged"]]
    assert "careless" in excluded["exclusion"]["excluded_annotators"]
    assert excluded["exclusion"]["ratings_dropped"] == sum(a["ratings"] for a in flagged)
    assert excluded["exclusion"]["table3_with_all_annotators"] == report["ratings"]["table3"]
    assert excluded["annotators"] == sorted(set(report["ratings"]["annotators"]) - {a["annotator"] for a in flagged})
    text = cli("qc-report", demo_copy, "--queue", CONTROL_QUEUE, "--exclude-flagged").out
    assert "careless: control accuracy 50% (5 of 10) is below 80%" in text and "ratings dropped" in text
