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
