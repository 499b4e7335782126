"""The Results page's panels (core/results/): values on a hand-built table match the engine and hand
computation, intervals contain their estimates and equal the engine's bootstrap, the rows behind a point are the
right ones, and the published layer carries the CSVs' numbers with the paper and table they come from."""

import csv
import math
from statistics import mean

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from spokenbench.core.foundation.progress import no_progress
from spokenbench.core.metrics import mcq
from spokenbench.core.metrics.analysis import analyze_mcq, mcq_intervals
from spokenbench.core.metrics.gender_probe import compute_gender_probe, prepare_gender_probe
from spokenbench.core.metrics.selection_bias import ckld_interval
from spokenbench.core.metrics.synthetic import biasinear_like, gender_probe_like
from spokenbench.core.results.biasinear_panels import _median_with_interval
from spokenbench.core.results.compute import compute_panels, project_panels
from spokenbench.core.results.details import point_details
from spokenbench.core.results.engine import wilson
from spokenbench.core.results.gender_probe_panel import probe_group
from spokenbench.core.results.names import PANEL_ORDER
from spokenbench.core.results.order_panels import _kendall_tau_b
from spokenbench.core.results.published import published_table
from spokenbench.core.results.published_overlay import published_for
from spokenbench.core.store import opened

GOLD = {"q1": "A", "q2": "B", "q3": "C", "q4": "D"}
ORDERS = {"original": "ABCD", "reversed": "DCBA"}
BIASINEAR_ORDERS = {"original": "ABCD", "reversed": "DCBA", "order-backward": "ABCD", "token-backward": "DCBA"}


def tiny_table() -> pd.DataFrame:
    """m1 is always right except with the male voice in reversed order, where it says the presented 'A';
    m2 always says the presented 'B'. 2 models × 4 questions × 2 genders × 2 orders = 32 rows."""
    rows = []
    for model in ("m1", "m2"):
        for question, gold in GOLD.items():
            for gender in ("female", "male"):
                for order, presented in ORDERS.items():
                    if model == "m2":
                        letter = "B"
                    elif gender == "male" and order == "reversed":
                        letter = "A"
                    else:
                        letter = "ABCD"[presented.index(gold)]
                    rows.append(
                        {
                            "question_id": question,
                            "model": model,
                            "answer": gold,
                            "prediction": letter,
                            "option_order": presented,
                            "cultural_label": "CS" if question in ("q1", "q2") else "CA",
                            "gender": gender,
                            "order": order,
                        }
                    )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def tiny():
    return compute_panels(tiny_table(), simulated={"m2": True}, n_resamples=200)


def points(panels, key, **match):
    return [p for p in panels.panels[key].points if all(getattr(p, k) == v for k, v in match.items())]


def one(panels, key, **match):
    [found] = points(panels, key, **match)
    return found


@pytest.mark.slow
def test_every_panel_is_there_and_labels_who_made_the_numbers(tiny):
    assert list(tiny.panels) == list(PANEL_ORDER)
    assert tiny.series == ["m1", "m2"] and tiny.simulated == {"m1": False, "m2": True}
    assert {p.source for p in tiny.panels["accuracy_by_level"].points if p.series == "m2"} == {"yours (simulated)"}
    assert {p.source for p in tiny.panels["accuracy_by_level"].points if p.series == "m1"} == {"yours"}
    table = tiny.panels["accuracy_by_level"].tables["accuracy_by_level"]
    assert set(table.loc[table["model"] == "m2", "source"]) == {"yours (simulated)"}
    assert tiny.panels["gender_probe"].empty  # no probes in this table
    assert set(tiny.timings) >= set(PANEL_ORDER) | {"total"}


@pytest.mark.slow
def test_accuracy_by_level_matches_hand_computation_and_the_engine(tiny):
    assert one(tiny, "accuracy_by_level", series="m1", facet="gender", x="female").value == 100
    assert one(tiny, "accuracy_by_level", series="m1", facet="gender", x="male").value == 62.5  # 4 + 1 of 8
    assert one(tiny, "accuracy_by_level", series="m1", facet="order", x="reversed").value == 62.5
    assert one(tiny, "accuracy_by_level", series="m2", facet="order", x="original").value == 25  # only q2
    engine = mcq.accuracy_by(analyze_mcq(tiny_table(), ["gender", "order"]).data, ["gender"])
    for row in engine.itertuples():
        assert one(tiny, "accuracy_by_level", series=row.model, facet="gender", x=row.gender).value == pytest.approx(
            100 * row.accuracy
        )
    male = one(tiny, "accuracy_by_level", series="m1", facet="gender", x="male")
    frame = tiny.responses_behind(male)
    assert len(frame) == male.n == 8 and set(frame["gender"]) == {"male"} and set(frame["model"]) == {"m1"}
    assert male.questions == ("q1", "q2", "q3", "q4")
    deltas = tiny.panels["accuracy_by_level"].tables["delta_by_factor"]
    m1_gender = deltas[(deltas["model"] == "m1") & (deltas["factor"] == "gender")].iloc[0]
    assert m1_gender["delta"] == "female − male" and m1_gender["delta_pct"] == 37.5
    assert m1_gender["ci_low"] <= 37.5 <= m1_gender["ci_high"]
    tiny.complete_tables()  # the tables the figures do not need, built afterwards
    assert not any(panel.tables.pending() for panel in tiny.panels.values())
    cross = tiny.panels["accuracy_by_level"].tables["delta_table_order"]
    assert "delta_original_minus_reversed_pct_ci_low" in cross.columns
    assert ((cross["ci_low"] <= cross["accuracy_pct"]) & (cross["accuracy_pct"] <= cross["ci_high"])).all()


@pytest.mark.slow
def test_a_text_only_run_keeps_the_audio_runs_gender_facet_and_simply_has_no_bar_there():
    with_text = tiny_table()
    text_run = with_text[(with_text["model"] == "m1") & (with_text["gender"] == "female")].assign(
        model="text-model", gender=""
    )  # a text run: the same questions and orders, no voice
    panels = compute_panels(pd.concat([with_text, text_run], ignore_index=True), n_resamples=50)
    panel = panels.panels["accuracy_by_level"]
    assert panel.facets == ["gender", "order"]  # in the panel factors' order, as without the text run
    alone = compute_panels(tiny_table(), n_resamples=50).panels["accuracy_by_level"]
    for model in ("m1", "m2"):  # the audio runs' gender bars are those they have without the text run
        for gender in ("female", "male"):
            assert one(panels, "accuracy_by_level", series=model, facet="gender", x=gender).value == pytest.approx(
                next(p.value for p in alone.points if (p.series, p.facet, p.x) == (model, "gender", gender))
            )
    assert points(panels, "accuracy_by_level", series="text-model", facet="gender") == []  # no bar there
    assert one(panels, "accuracy_by_level", series="text-model", facet="order", x="original").value == 100
    male = one(panels, "accuracy_by_level", series="m1", facet="gender", x="male")
    assert male.low <= male.value <= male.high and male.n == 8
    deltas = panel.tables["delta_by_factor"]
    assert set(deltas.loc[deltas["factor"] == "gender", "model"]) == {"m1", "m2"}
    assert "delta_table_gender" not in panel.tables  # the Δ table needs every row to have a level


def test_entropy_points_are_the_per_question_entropies(tiny):
    # m1 on q1: A, A, A and D (the male voice, reversed order) → H = -(.75 ln .75 + .25 ln .25) / ln 4
    expected = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25)) / math.log(4)
    [q1] = [
        p for p in points(tiny, "entropy_distribution", series="m1", facet="question entropy") if p.questions == ("q1",)
    ]
    assert q1.value == pytest.approx(expected) and q1.n == 4
    [q4] = [
        p for p in points(tiny, "entropy_distribution", series="m1", facet="question entropy") if p.questions == ("q4",)
    ]
    assert q4.value == 0
    m2 = [p.value for p in points(tiny, "entropy_distribution", series="m2", facet="question entropy")]
    assert m2 == pytest.approx([0.5] * 4)  # B in the original order, C reversed: two answers, two each
    mean_point = one(tiny, "entropy_distribution", series="m2", facet="summary", x="mean")
    assert mean_point.value == pytest.approx(0.5) and mean_point.low == pytest.approx(0.5)


def test_gold_position_mcnemar_voting_and_ranks_match_hand_computation(tiny):
    # reversed order puts q4's gold at A, q3's at B, q2's at C, q1's at D; m1 misses only the male voice there
    deltas = {p.x: p.value for p in points(tiny, "gold_position", series="m1", facet="Δ accuracy vs original")}
    assert deltas == {"A": 0, "B": -50, "C": -50, "D": -50}
    mcnemar = one(tiny, "mcnemar", series="original − reversed", x="m1")
    assert mcnemar.value == pytest.approx(100 * 3 / 8)  # b = 3 pairs right only in the original order, c = 0
    assert mcnemar.n == 3 and len(mcnemar.rows) == 6  # both responses of each discordant pair
    assert mcnemar.questions == ("q1", "q2", "q3")
    table = tiny.panels["mcnemar"].tables["mcnemar"]
    assert table.loc[table["model"] == "m1", "original_only_correct"].item() == 3
    # full vote over both orders: the male voice on q1-q3 ties between gold and another option (1/2 each)
    full = one(tiny, "permutation_voting", series="full", x="m1", facet="accuracy")
    assert full.value == pytest.approx(100 * (4 + 0.5 * 3 + 1) / 8)
    engine = analyze_mcq(tiny_table(), ["gender", "order"]).selection
    for row in engine.voting.itertuples():
        assert one(tiny, "permutation_voting", series=row.permutation, x=row.model, facet="accuracy").value == (
            pytest.approx(100 * row.accuracy)
        )
        rsd = one(tiny, "permutation_voting", series=row.permutation, x=row.model, facet="RSD").value
        assert rsd == pytest.approx(row.rsd)
    ranks = {(p.series, p.x): p.value for p in tiny.panels["ranking_changes"].points}
    assert ranks[("m1", "original")] == 1 and ranks[("m2", "original")] == 2


def test_ranks_of_a_setting_without_rows_leave_their_interval_empty_without_a_warning():
    """A setting some model has no rows in (8 questions: gold never at some position for it) has no rank in any
    resample; its interval stays NaN, and nothing is printed: numpy's "All-NaN slice" RuntimeWarning reached the
    user's stderr before."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        panels = compute_panels(biasinear_like(8, 2, seed=3), n_resamples=20)
    ranks = panels.panels["ranking_changes"].points
    assert ranks and all(p.low <= p.value <= p.high for p in ranks)  # every ranked point keeps its interval


def test_gold_position_panel_keeps_a_question_whose_gold_at_p_order_is_the_identity():
    # issue 13's two questions (gold A): q1's gold-at-A order is ABCD, asked once as 'original' (wrong); q2's
    # ACDB (right); both originals wrong -> the paper's Δ_A = 1/2 - 0 = +50 points (was +100: q1 dropped)
    orders = [
        ("q1", "original", "ABCD", "B"),
        ("q1", "BACD", "BACD", "B"),
        ("q1", "BCAD", "BCAD", "C"),
        ("q1", "BCDA", "BCDA", "D"),
        ("q2", "original", "ABCD", "B"),
        ("q2", "ACDB", "ACDB", "A"),
        ("q2", "CABD", "CABD", "B"),
        ("q2", "DCAB", "DCAB", "C"),
        ("q2", "BDCA", "BDCA", "D"),
    ]
    frame = pd.DataFrame(
        [
            {"question_id": q, "model": "m1", "answer": "A", "prediction": p, "option_order": oo, "order": o}
            for q, o, oo, p in orders
        ]
    )
    panels = compute_panels(frame, n_resamples=50)
    at_a = one(panels, "gold_position", series="m1", facet="Δ accuracy vs original", x="A")
    assert at_a.value == pytest.approx(50)
    assert at_a.questions == ("q1", "q2")
    for letter in "BCD":  # both right there: 2/2 - 0
        assert one(panels, "gold_position", series="m1", facet="Δ accuracy vs original", x=letter).value == 100


def test_order_backward_rows_are_not_original_rows_in_the_panels():
    # 4 questions (gold A) × original, reversed, order-backward, token-backward. Right in the original and
    # order-backward orders, reversed right on q0 only, token-backward never: 4 original rows (was 8), McNemar
    # over 4 pairs (was 0), b = 3, c = 0
    rows = []
    for q in range(4):
        for name, option_order in BIASINEAR_ORDERS.items():
            right = name in ("original", "order-backward") or (name == "reversed" and q == 0)
            letter = "ABCD"[option_order.index("A" if right else "B")]
            rows.append(
                {"question_id": f"q{q}", "model": "m1", "answer": "A", "prediction": letter}
                | {"option_order": option_order, "order": name}
            )
    panels = compute_panels(pd.DataFrame(rows), n_resamples=50)
    assert panels.panels["mcnemar"].empty is None
    table = panels.panels["mcnemar"].tables["mcnemar"]
    assert table["n_pairs"].item() == 4
    assert (table["original_only_correct"].item(), table["reversed_only_correct"].item()) == (3, 0)
    original = one(panels, "permutation_voting", series="original", x="m1", facet="accuracy")
    assert original.value == 100 and original.n == 4
    full = one(panels, "permutation_voting", series="full", x="m1", facet="accuracy")
    assert full.value == pytest.approx(100 * 2.5 / 4)  # q0 votes A; q1-q3 tie A/B (1/2 each)


def test_the_voting_panel_uses_the_default_tie_rule_and_says_so(tiny):
    panel = tiny.panels["permutation_voting"]
    assert "fractional credit, the default tie rule" in panel.description
    table = panel.tables["permutation_voting"]
    assert set(table.loc[table["permutation"] != "original", "tie_rule"]) == {"fractional"}


def test_ckld_interval_is_over_the_finite_resamples_with_the_infinite_share():
    draws = np.array([[0.1, np.inf], [0.2, np.inf], [np.inf, np.nan], [np.nan, np.nan], [0.3, np.inf]])
    low, high, share = ckld_interval(draws, 0.95)
    assert (low[0], high[0]) == pytest.approx(tuple(np.percentile([0.1, 0.2, 0.3], [2.5, 97.5])))
    assert share[0] == pytest.approx(1 / 4)  # the NaN resample is in neither count
    assert math.isnan(low[1]) and math.isnan(high[1]) and share[1] == 1.0


def rare_gold_cyclic_table(n_questions: int = 20) -> pd.DataFrame:
    """Hearing the Order's cyclic design on a small project: 20 questions, only one with gold D, so many
    resamples have no gold D while the votes still choose D: CKLD is infinite there."""
    rng = np.random.default_rng(1)
    rows = []
    for model in ("m1", "m2"):
        for q in range(n_questions):
            gold = "D" if q == 5 else "ABC"[q % 3]
            for order in ("ABCD", "BCDA", "CDAB", "DABC"):
                letter = "ABCD"[order.index(gold)] if rng.random() < 0.6 else "A"
                row = {"question_id": f"q{q:02d}", "model": model, "answer": gold, "prediction": letter}
                rows.append({**row, "option_order": order, "order": order})
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_voting_ckld_has_an_interval_on_a_small_project_and_says_how_many_resamples_were_infinite():
    panels = compute_panels(rare_gold_cyclic_table(), n_resamples=300)
    ckld = points(panels, "permutation_voting", facet="CKLD")
    assert len(ckld) == 6
    for point in ckld:
        assert point.has_interval and "(no interval)" not in point.tooltip(), point.tooltip()
        assert point.low - 1e-9 <= point.value <= point.high + 1e-9
    voted = one(panels, "permutation_voting", facet="CKLD", series="cyclic", x="m1")
    table = panels.panels["permutation_voting"].tables["permutation_voting"]
    share = table.loc[(table["model"] == "m1") & (table["permutation"] == "cyclic"), "ckld_infinite_resamples"].item()
    assert 0.05 < share < 1
    assert f"infinite in {100 * share:.3g}%" in voted.tooltip() and "finite" in voted.interval


@pytest.mark.slow
def test_intervals_contain_their_estimates_on_a_benchmark_shaped_table():
    frame = pd.concat([biasinear_like(40, 3, seed=1), gender_probe_like(24, seed=1)], ignore_index=True)
    panels = compute_panels(frame, n_resamples=300)
    checked = 0
    for key, panel in panels.panels.items():
        assert panel.empty is None, key
        for point in panel.points:
            if panel.key == "entropy_distribution" and point.facet != "summary":
                continue  # a single question's entropy is shown as it is (its summaries carry intervals)
            assert point.has_interval, (key, point.facet, point.x, point.series)
            assert point.low - 1e-9 <= point.value <= point.high + 1e-9, (key, point)
            if point.xvalue is not None:
                assert point.xlow - 1e-9 <= point.xvalue <= point.xhigh + 1e-9
            checked += 1
    assert checked > 150


@pytest.mark.slow
def test_the_joint_bootstrap_gives_the_engines_intervals():
    frame = biasinear_like(30, 3, seed=2)
    panels = compute_panels(frame, factors=["language", "accent", "gender", "order"], n_resamples=250)
    analysis = analyze_mcq(frame, ["language", "accent", "gender", "order"])
    engine = mcq_intervals(analysis.metrics, analysis.selection, 250, 20240521, no_progress())
    for point in panels.panels["kappa_vs_apes"].points:
        m = analysis.data.models.index(point.series)
        assert (point.low, point.high) == pytest.approx(engine[m][f"fleiss_kappa[{point.x}]"], abs=1e-12)
        assert (point.xlow, point.xhigh) == pytest.approx(engine[m][f"apes[{point.x}]"], abs=1e-12)
    for point in points(panels, "gold_position", facet="RSD"):
        assert (point.low, point.high) == pytest.approx(engine[analysis.data.models.index(point.x)]["rsd"], abs=1e-12)


@pytest.mark.slow
def test_gender_probe_panel_matches_the_engine():
    frame = gender_probe_like(30, seed=3)
    panels = compute_panels(frame, n_resamples=200)
    data = prepare_gender_probe(frame)
    # the one text model (no voice) becomes every speech model's backbone
    engine = compute_gender_probe(data, {"speech_a": "text_a", "speech_b": "text_a"}, n_resamples=200).table
    for row in engine.itertuples():
        for facet, column in (("J", "J"), ("Δ", "delta"), ("ν", "neutral_rate"), ("κ", "kappa")):
            value = getattr(row, column)
            if math.isnan(value):
                continue
            point = one(
                panels, "gender_probe", series=row.model, x=probe_group("binary_option", row.category), facet=facet
            )
            assert point.value == pytest.approx(value)
            assert (point.low, point.high) == pytest.approx(
                (getattr(row, f"{column}_ci_low"), getattr(row, f"{column}_ci_high"))
            )
    point = one(panels, "gender_probe", series="speech_a", x=probe_group("binary_option", "stereotypical"), facet="J")
    assert set(panels.responses_behind(point, probe=True)["category"]) == {"stereotypical"}


def read_csv(study, name):
    with published_table(study, name).open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def published_points(key, table):
    [found] = [p for p in published_for(key) if p.table == table]
    return found


def test_published_numbers_are_the_csvs_with_their_paper_and_table():
    accent = published_points("accuracy_by_level", "Table 19")
    assert accent.label == "published — BiasInEar, Table 19" and accent.file == "table19_accuracy_accent.csv"
    rows = read_csv("biasinear", "table19_accuracy_accent.csv")
    beijing = mean(float(r["accuracy_pct"]) for r in rows if r["accent"] == "beijing")
    [point] = [p for p in accent.points if p.x == "beijing"]
    assert point.series == "Gemini 2.5 Flash" and point.value == pytest.approx(beijing)
    assert point.source == accent.label and not point.has_interval
    assert len(accent.frame) == len(rows) and list(accent.frame.columns) == list(rows[0])

    order = published_points("accuracy_by_level", "Tables 6, 11-17")
    assert len({p.series for p in order.points}) == 9  # every BiasInEar model

    gender = published_points("gender_probe", "Table 1")
    assert gender.label == "published — Acoustic-based Gender Differentiation, Table 1"
    assert "Gender paper" not in published_for("gender_probe")[0].label
    table1 = {
        (r["model"], r["category"], r["metric"]): float(r["value"])
        for r in read_csv("gender_differentiation", "table01_speechlm_baseline.csv")
    }
    table8 = {
        (r["model"], r["category"]): r
        for r in read_csv("gender_differentiation", "table08_overlap_ci_sec3_baseline.csv")
    }
    [j] = [p for p in gender.points if p.series == "LLaMA-Omni1 8B" and p.x == "independent" and p.facet == "J"]
    assert j.value == table1[("LLaMA-Omni1 8B", "independent", "response_overlap_j")]
    ci = table8[("LLaMA-Omni1 8B", "independent")]
    assert (j.low, j.high) == (float(ci["ci95_lower"]), float(ci["ci95_upper"]))
    [delta] = [p for p in gender.points if p.series == "LLaMA-Omni2 0.5B" and p.x == "stereotypical" and p.facet == "Δ"]
    assert delta.value == table1[("LLaMA-Omni2 0.5B", "stereotypical", "gender_preference_delta")]

    voting = published_points("permutation_voting", "Table 3")
    assert voting.label == "published — Hearing the Order, Table 3"
    table3 = read_csv("hearing_the_order", "table03_permutation_results.csv")
    for permutation in ("original", "full"):
        [printed] = [
            r
            for r in table3
            if r["model"] == "Phi-4-Multimodal"
            and r["permutation"] == permutation
            and r["dataset"] == "SPEECH-MMAU"
            and r["metric"] == "rsd"
        ]
        [p] = [
            p
            for p in voting.points
            if p.x == "Phi-4-Multimodal" and p.series == permutation and p.facet == "RSD · SPEECH-MMAU"
        ]
        assert p.value == float(printed["value"])
    for key in PANEL_ORDER:
        assert published_for(key), key  # every panel has the papers' numbers beside it


def test_small_helpers():
    low, high = wilson(np.array([8]), np.array([10]))
    assert (low[0], high[0]) == pytest.approx((0.4902, 0.9433), abs=1e-4)
    values = np.arange(100, dtype=float)
    median, (low, high) = _median_with_interval(values)
    assert median == 49.5 and low < median < high and (low, high) == (40.0, 60.0)
    rng = np.random.default_rng(0)
    x, y = rng.random((5, 6)), rng.random((5, 6))
    y[:, 2] = x[:, 2]
    for row in range(5):
        assert _kendall_tau_b(x[row : row + 1], y[row : row + 1])[0] == pytest.approx(
            stats.kendalltau(x[row], y[row]).statistic
        )


def summary(point):
    def rounded(value):
        return None if value is None or math.isnan(value) else round(value, 9)

    return (point.facet, point.x, point.series, rounded(point.value), rounded(point.low), rounded(point.high))


@pytest.fixture
def tiny_project(tmp_path):
    """The hand-built table stored as a project: m1 a run in audio mode, m2 a simulated run."""
    from spokenbench.core.domain.conditions import Condition
    from spokenbench.core.domain.items import Item, Option
    from spokenbench.core.evaluation.store import ResponseRecord, create_run, mark_run, upsert_responses
    from spokenbench.core.store import Project
    from spokenbench.core.store.database import utc_now
    from spokenbench.core.store.items import insert_items

    frame = tiny_table()
    path = tmp_path / "tiny"
    with Project.create(path) as project, project.transaction() as conn:
        items = [
            Item(
                source="tiny",
                source_id=question,
                language="en",
                question=f"Which letter is right for {question}?",
                options=tuple(Option(letter, f"{question} option {letter}") for letter in "ABCD"),
                answer=gold,
                cultural_label="CS" if question in ("q1", "q2") else "CA",
            )
            for question, gold in GOLD.items()
        ]
        item_ids = dict(zip(GOLD, insert_items(conn, items)))
        for model, mode in (("m1", "audio"), ("m2", "simulated")):
            run = create_run(conn, f"tiny {model}", model, "test", mode, "standard", "", {}, 16, None)
            records = [
                ResponseRecord(
                    run_id=run,
                    item_id=item_ids[row.question_id],
                    condition_key=Condition(language="en", gender=row.gender, order=row.order).key(),
                    option_order=row.option_order,
                    created_at=utc_now(),
                    raw_text=f"Answer: [[{row.prediction}]]",
                    parsed_letter=row.prediction,
                    parse_status="ok",
                    mapped_option=row.option_order["ABCD".index(row.prediction)],
                )
                for row in frame[frame["model"] == model].itertuples()
            ]
            upsert_responses(conn, records)
            mark_run(conn, run, "finished")
    return path


@pytest.mark.slow
def test_a_projects_panels_are_the_tables_panels_and_its_points_list_their_questions(tiny_project, tiny):
    with opened(tiny_project) as project:
        panels = project_panels(project, n_resamples=200)
        assert [r["simulated"] for r in panels.runs] == [False, True]
        assert panels.simulated == {"m1": False, "m2": True}
        for key in PANEL_ORDER:  # the same numbers and intervals as from the table itself
            assert sorted(map(summary, panels.panels[key].points)) == sorted(map(summary, tiny.panels[key].points))
        male = one(panels, "accuracy_by_level", series="m1", facet="gender", x="male")
        details = point_details(project, panels, male)
        assert panels.item_ids(male) == sorted(details["item_id"].unique().tolist()) and len(details) == 8
    assert set(details["question_id"]) == {"q1", "q2", "q3", "q4"} and set(details["gender"]) == {"male"}
    assert details["question_text"].str.startswith("Which letter is right for q").all()
    assert details["options"].str.contains("A. q").all()
    assert (details["raw_text"] == "Answer: [[" + details["prediction"] + "]]").all()
    assert set(details["audio_path"]) == {""}  # no audio stored in this project


@pytest.mark.slow
def test_the_cache_reads_again_only_the_runs_whose_answers_changed(tiny_project):
    from spokenbench.core.evaluation.store import update_parses
    from spokenbench.core.results.compute import ResponseCache

    cache = ResponseCache()
    with opened(tiny_project) as project:
        first = project_panels(project, cache=cache, n_resamples=0)
        assert cache.reads == 2
        project_panels(project, cache=cache, n_resamples=0)
        assert cache.reads == 2  # nothing changed: nothing read
        response = first.responses[first.responses["run_id"] == 2].iloc[0]
        letter = "C"  # m2 always said B: a re-parse to another letter keeps every count
        with project.transaction() as conn:
            update_parses(
                conn,
                [(letter, "ok", response["option_order"]["ABCD".index(letter)], None, int(response["response_id"]))],
            )
        again = project_panels(project, cache=cache, n_resamples=0)
    assert cache.reads == 3  # run 2 only
    changed = again.responses[again.responses["response_id"] == response["response_id"]].iloc[0]
    assert changed["prediction"] == letter


@pytest.mark.slow
def test_many_questions_take_the_chunked_bootstrap_with_the_same_intervals(monkeypatch):
    import spokenbench.core.results.engine as panels_module

    frame = biasinear_like(40, 3, seed=5)
    dense = compute_panels(frame, n_resamples=300)
    monkeypatch.setattr(panels_module, "MAX_KEPT_WEIGHTS", 0)  # as with tens of thousands of questions
    monkeypatch.setattr(panels_module, "MAX_DENSE_SUMS", 0)
    chunked = compute_panels(frame, n_resamples=300)
    for key in PANEL_ORDER:
        assert sorted(map(summary, chunked.panels[key].points)) == sorted(map(summary, dense.panels[key].points))


def test_a_panel_with_views_shows_one_at_a_time():
    """The gender probes' answer settings are views: the figure draws one setting's categories, not all twelve
    setting-category groups on one axis."""
    from spokenbench.core.results.model import Panel, Point

    panel = Panel("gender_probe", "Gender probes", "Table 1", "", "bars", ["J"], {})
    panel.views = {"binary_option": "binary", "neutral_option": "neutral option"}
    panel.points = [
        Point("J", "binary\nstereo.", "m", 0.5),
        Point("J", "binary\ndep.", "m", 0.4),
        Point("J", "neutral option\nstereo.", "m", 0.3),
    ]
    binary = panel.in_view(None)
    assert [p.x for p in binary.points] == ["stereo.", "dep."] and binary.title == "Gender probes · binary"
    neutral = panel.in_view("neutral_option")
    assert [(p.x, p.value) for p in neutral.points] == [("stereo.", 0.3)]
    assert len(panel.points) == 3  # the panel itself keeps every setting
    plain = Panel("accuracy", "Accuracy", "Fig. 2", "", "bars", ["J"], {}, points=panel.points)
    assert plain.in_view("binary_option") is plain


@pytest.mark.slow
def test_a_model_keeps_its_colour_when_a_run_of_another_model_is_added(tiny_project):
    """The colours' order follows the models' first runs, not their names: a later model that sorts first takes the next
    colour and leaves m1's and m2's alone (the legend still lists the models by name)."""
    from spokenbench.core.evaluation.store import ResponseRecord, create_run, mark_run, upsert_responses
    from spokenbench.core.store import Project
    from spokenbench.core.store.database import utc_now

    with opened(tiny_project) as project:
        before = project_panels(project, n_resamples=0)
    with Project.open(tiny_project) as project, project.transaction() as conn:
        run = create_run(conn, "tiny a0", "a0", "test", "audio", "standard", "", {}, 16, None)
        copied = conn.execute("SELECT item_id, condition_key, option_order FROM responses WHERE run_id = 1").fetchall()
        upsert_responses(
            conn,
            [
                ResponseRecord(
                    run_id=run,
                    item_id=item_id,
                    condition_key=condition_key,
                    option_order=option_order,
                    created_at=utc_now(),
                    raw_text="Answer: [[A]]",
                    parsed_letter="A",
                    parse_status="ok",
                    mapped_option=option_order[0],
                )
                for item_id, condition_key, option_order in copied
            ],
        )
        mark_run(conn, run, "finished")
    with opened(tiny_project) as project:
        after = project_panels(project, n_resamples=0)
    assert before.color_order == ["m1", "m2"] and after.color_order == ["m1", "m2", "a0"]
    assert after.series == ["a0", "m1", "m2"]  # legends by name
    assert after.color_order.index("m1") == before.color_order.index("m1")  # the colour is the place
