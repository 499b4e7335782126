"""BiasInEar Table 21's layout: APES of language, accent and gender under original and reversed order, with the
table's Δ = Rev − Ori column (issue 25)."""

import numpy as np
import pytest
from metrics_helpers import random_design

from spokenbench.core.metrics import mcq
from spokenbench.core.metrics.analysis import analyze_mcq


def test_table21_delta_is_reversed_minus_original_apes():
    frame = random_design(np.random.default_rng(7), n_questions=8)
    table = mcq.apes_by_stratum(analyze_mcq(frame, ["language", "accent", "gender", "order"]).metrics)
    order = table[table["stratum_factor"] == "order"]
    assert set(order["variable"]) == {"language", "accent", "gender"}
    for (model, variable), rows in order.groupby(["model", "variable"]):
        apes = rows.set_index("stratum_level")["apes"]
        assert rows["delta_rev_minus_orig"].tolist() == pytest.approx(
            [apes["reversed"] - apes["original"]] * len(rows), nan_ok=True
        ), (model, variable)
    assert table.loc[table["stratum_factor"] != "order", "delta_rev_minus_orig"].isna().all()


def _restricted(data, rows):
    """The encoded table restricted to some rows (codes, level lists and nesting unchanged), regrouped: what
    Table 21 computes on, one stratum level at a time."""
    from dataclasses import replace

    from spokenbench.core.metrics.encoding import combine, representative_row
    from spokenbench.core.metrics.responses import ROW_ARRAYS

    idx = np.flatnonzero(rows)
    group, n_groups = combine(data.model[idx], data.question[idx])
    first = representative_row(group, n_groups)
    changes = {name: getattr(data, name)[idx] for name in ROW_ARRAYS if getattr(data, name) is not None}
    changes["factor_codes"] = {f: codes[idx] for f, codes in data.factor_codes.items()}
    changes.update(
        group=group,
        group_model=data.model[idx][first],
        group_question=data.question[idx][first],
        group_n_options=data.n_options[idx][first],
        group_cultural_label=data.cultural_label[idx][first],
    )
    return replace(data, **changes)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("failures_as_category", "kappa_nesting"), [(False, "within"), (True, "across")])
def test_each_stratum_level_gets_the_numbers_of_its_rows_alone(seed, failures_as_category, kappa_nesting):
    """Each stratum is computed in one pass over all rows (issue 28, round 7); every number is the one the metrics
    give on that level's rows alone, to the bit."""
    frame = random_design(np.random.default_rng(seed), n_questions=6 + seed)
    metrics = analyze_mcq(
        frame,
        ["language", "accent", "gender", "order"],
        n_resamples=0,
        failures_as_category=failures_as_category,
        kappa_nesting=kappa_nesting,
    ).metrics
    data = metrics.data
    table = mcq.apes_by_stratum_columns(metrics)
    expected = {}
    for stratum in data.factors:
        for code, level in enumerate(data.factor_levels[stratum]):
            alone = _restricted(data, data.factor_codes[stratum] == code)
            varying = sorted(set(table["variable"][table["stratum_factor"] == stratum]))
            per_level = mcq.compute_mcq_metrics(alone, failures_as_category, kappa_nesting, varying)
            for f, result in per_level.factors.items():
                apes, n = mcq.mean_by_model(per_level, result.apes)
                kappa, _ = mcq.mean_by_model(per_level, result.kappa)
                for m, model in enumerate(data.models):
                    expected[(model, f, stratum, level)] = (int(n[m]), apes[m].tobytes(), kappa[m].tobytes())
    got = {
        (model, f, stratum, level): (int(n), np.float64(apes).tobytes(), np.float64(kappa).tobytes())
        for model, f, stratum, level, n, apes, kappa in zip(
            table["model"],
            table["variable"],
            table["stratum_factor"],
            table["stratum_level"],
            table["n_questions"],
            table["apes"],
            table["fleiss_kappa"],
        )
    }
    assert len(got) == len(table["model"]) > 0 and got == expected
