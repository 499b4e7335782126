"""The engine computes on numpy arrays; where it replaced a pandas operation (groupby quantile, rank, the
McNemar pairing by merge) the numbers must be the ones pandas gave, to the last bit, and the DataFrames the
report and the app's panels read are built from the same columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import responses

from spokenbench.core.foundation.tables import TextColumns
from spokenbench.core.metrics.analysis import analyze_mcq
from spokenbench.core.metrics.mcq import compute_mcq_metrics, model_summary, quantiles_by_model
from spokenbench.core.metrics.responses import prepare_mcq
from spokenbench.core.metrics.selection_bias import rank_descending
from spokenbench.core.metrics.synthetic import biasinear_like


@pytest.mark.parametrize("seed", range(40))
def test_quantiles_are_pandas_groupby_quantiles(seed):
    rng = np.random.default_rng(seed)
    frame = biasinear_like(n_questions=6, n_models=3, seed=seed)
    metrics = compute_mcq_metrics(prepare_mcq(frame, ["language", "gender"]))
    values = np.round(rng.random(metrics.data.n_groups) * 5) / 5 if seed % 2 else rng.random(metrics.data.n_groups)
    values[rng.random(len(values)) < 0.3] = np.nan
    values[metrics.data.group_model == 2] = np.nan  # a model without any value: NaN quantiles
    expected = (
        pd.DataFrame({"model": metrics.data.group_model, "value": values})
        .dropna()
        .groupby("model")["value"]
        .quantile([0.25, 0.5, 0.75])
        .unstack()
        .reindex(range(3))
        .to_numpy()
    )
    assert np.array_equal(quantiles_by_model(metrics, values), expected, equal_nan=True)


def test_rank_is_pandas_min_rank_descending():
    rng = np.random.default_rng(3)
    for _ in range(50):
        values = np.round(rng.random(rng.integers(1, 12)) * 4) / 4
        values[rng.random(len(values)) < 0.2] = np.nan
        expected = pd.Series(values).rank(ascending=False, method="min").to_numpy()
        assert np.array_equal(rank_descending(values), expected, equal_nan=True)


def test_mcnemar_pairs_repeats_in_row_order():
    """Repeats of a unit are paired in row order: the k-th original answer with the k-th reversed one; an
    original answer without a reversed partner is left out."""
    answers = [("ABCD", "A"), ("DCBA", "A"), ("ABCD", "B"), ("ABCD", "C"), ("DCBA", "D")]  # gold A = D of DCBA
    rows = [{"question_id": "q1", "option_order": order, "prediction": p} for order, p in answers]
    mcnemar = analyze_mcq(responses(rows, model="m", answer="A"), []).selection.mcnemar.iloc[0]
    # pairs: (A correct, A of DCBA wrong), (B wrong, D of DCBA correct); C has no reversed partner
    assert (mcnemar["n_pairs"], mcnemar["original_only_correct"], mcnemar["reversed_only_correct"]) == (2, 1, 1)


def test_text_columns_and_dataframe_give_the_same_analysis():
    frame = biasinear_like(n_questions=10, n_models=3, seed=2)
    columns = TextColumns.of(frame)
    factors = ["language", "accent", "gender", "order"]
    from_frame, from_columns = analyze_mcq(frame, factors), analyze_mcq(columns, factors)
    assert from_frame.to_json() == from_columns.to_json()
    pd.testing.assert_frame_equal(from_frame.summary, from_columns.summary)
    summary = model_summary(from_frame.metrics).merge(from_frame.selection.per_model, on="model", how="left")
    pd.testing.assert_frame_equal(from_frame.summary, summary)  # what core/results/ builds
