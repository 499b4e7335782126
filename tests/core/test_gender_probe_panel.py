"""The Results page's gender-probe figure (core/results/) groups answers as the paper's tables and the gender
detail (core/results/gender_views.py) do: by model and answer setting (binary, neutral option, neutralized voice …), not by
run; κ against the project's declared backbone pairs; and models that answered only probes come after the
multiple-choice models in the series, so those keep their colours."""

import math

import pandas as pd
import pytest
from demo_copies import linked_copy

from spokenbench.core.metrics.synthetic import biasinear_like, gender_probe_like
from spokenbench.core.results.compute import compute_panels, project_panels
from spokenbench.core.results.gender_probe_panel import probe_group
from spokenbench.core.results.gender_views import gender_view
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.core.store import Project

FACETS = (("J", "J"), ("Δ", "delta"), ("ν", "neutral_rate"), ("κ", "kappa"))
# the free form's measures in the same facets (issue 25): J_s, Δ_s, ν, s
FREE_FORM_FACETS = (("J", "J_s"), ("Δ", "delta_s"), ("ν", "neutral_rate"), ("κ", "s"))
MCQ_LISTENERS = ["simulated:accent-sensitive", "simulated:order-sensitive", "simulated:steady"]


@pytest.fixture(scope="module")
def demo(built_demo, tmp_path_factory):
    return linked_copy(built_demo, tmp_path_factory.mktemp("probe-panel") / "demo-project")


@pytest.fixture(scope="module")
def demo_panels(demo):
    with Project.open(demo) as project:
        return project_panels(project, n_resamples=0), gender_view(project, n_resamples=0)


@pytest.mark.slow
def test_points_are_grouped_by_model_and_setting_with_the_detail_views_numbers(demo_panels):
    panels, view = demo_panels
    panel = panels.panels["gender_probe"]
    assert panel.empty is None and panel.points
    assert not any("(run" in p.series for p in panel.points)
    groups = list(dict.fromkeys(p.x for p in panel.points))
    assert groups[:3] == ["binary\nindep.", "binary\nstereo.", "binary\ndep."]  # by setting, then category
    assert {g.split("\n")[0] for g in groups} == {"binary", "neutral option", "free form", "neutralized"}
    points = {(p.facet, p.x, p.series): p for p in panel.points}
    checked = 0
    for row in view.summary.to_dict("records"):
        for facet, column in FREE_FORM_FACETS if row["setting"] == "free_form" else FACETS:
            value = row[column]
            key = (facet, probe_group(row["setting"], row["category"]), row["model"])
            if value is None or math.isnan(value):
                assert key not in points
                continue
            assert points[key].value == pytest.approx(value), key
            checked += 1
    assert checked == len(panel.points)
    for point in panel.points:  # a click lists that setting's answers of that model and category
        rows = panels.responses_behind(point, probe=True)
        assert len(rows) == point.n and set(rows["model"]) == {point.series}
        assert {probe_group(s, c) for s, c in zip(rows["setting"], rows["category"])} == {point.x}


@pytest.mark.slow
def test_kappa_is_against_the_declared_backbone_in_every_setting(demo_panels):
    panels, _ = demo_panels
    kappa = [p for p in panels.panels["gender_probe"].points if p.facet == "κ"]
    speech = {"simulated:male-leaning", "simulated:gender-balanced"}
    assert {(p.series, p.x.split("\n")[0]) for p in kappa} == {
        (m, s) for m in speech for s in ("binary", "neutral option", "free form", "neutralized")
    }
    assert all("against the backbone simulated:gender-balanced (text)" in p.note for p in kappa)
    free = [p for p in kappa if p.x.startswith("free form")]  # there the κ facet holds s, and says so
    assert free and all("s: mean cosine similarity to the backbone" in p.note for p in free)
    view = panels.panels["gender_probe"].in_view("free_form")
    assert view.ylabels["J"] == "response similarity J_s" and view.ylabels["κ"] == "backbone similarity s"
    assert panels.panels["gender_probe"].in_view("binary_option").ylabels["κ"] == "backbone κ"
    assert all(p.source == "yours (simulated)" for p in panels.panels["gender_probe"].points)


@pytest.mark.slow
def test_probe_only_models_leave_the_multiple_choice_series_alone(demo, demo_panels):
    panels, _ = demo_panels
    with Project.open(demo) as project:
        mcq_only = project_panels(project, run_ids=[1, 2, 3], n_resamples=0)
    assert mcq_only.series == MCQ_LISTENERS
    assert panels.series[:3] == MCQ_LISTENERS  # the same positions, so the same colours
    assert sorted(panels.color_order) == sorted(panels.series)  # probe-only models too: by their first run
    assert panels.color_order[: len(MCQ_LISTENERS)] == mcq_only.color_order  # the runs 4+ come after
    assert set(panels.series[3:]) == {
        "simulated:gender-balanced",
        "simulated:gender-balanced (text)",
        "simulated:male-leaning",
    }
    assert all(panels.simulated[s] for s in panels.series)
    for key in PANEL_ORDER[:-1]:
        assert {p.series for p in panels.panels[key].points if p.series in panels.series} <= set(MCQ_LISTENERS), key


@pytest.mark.slow
def test_a_table_is_grouped_by_its_setting_column():
    probes = gender_probe_like(30, seed=3)
    frame = pd.concat(
        [
            biasinear_like(20, 2, seed=1),
            probes.assign(setting="binary_option"),
            probes.assign(setting="neutral_option"),
        ],
        ignore_index=True,
    )
    panels = compute_panels(frame, n_resamples=0)
    mcq_models = sorted(set(biasinear_like(20, 2, seed=1)["model"]))
    assert panels.series[: len(mcq_models)] == mcq_models
    points = panels.panels["gender_probe"].points
    assert {p.x.split("\n")[0] for p in points} == {"binary", "neutral option"}
    assert {p.series for p in points} == {"speech_a", "speech_b", "text_a"}
    for setting in ("binary_option", "neutral_option"):  # the same answers in both: the same numbers
        [binary] = [
            p
            for p in points
            if p.facet == "Δ" and p.series == "speech_a" and p.x == probe_group(setting, "stereotypical")
        ]
        assert binary.value == pytest.approx(
            next(
                p.value
                for p in points
                if p.facet == "Δ" and p.series == "speech_a" and p.x == probe_group("binary_option", "stereotypical")
            )
        )
    # declared pairs win over the guess; without a text model in the pair, no κ
    unpaired = compute_panels(probes, n_resamples=0, backbones={})
    assert not [p for p in unpaired.panels["gender_probe"].points if p.facet == "κ"]
