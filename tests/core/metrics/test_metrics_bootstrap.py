"""The question-level bootstrap: its fast weighted form must equal the slow definition (recompute every
metric on a table whose questions were drawn with replacement), and a fixed seed must fix the result."""

import numpy as np
import pandas as pd
import pytest
from metrics_helpers import random_design

from spokenbench.core.foundation.progress import Progress
from spokenbench.core.metrics.analysis import analyze_gender_probe, analyze_mcq
from spokenbench.core.metrics.bootstrap import question_weights
from spokenbench.core.metrics.synthetic import gender_probe_like

FACTORS = ["language", "accent", "gender", "order"]


def resampled_table(frame: pd.DataFrame, questions: list[str], weights: np.ndarray) -> pd.DataFrame:
    """The slow definition: each question copied as often as it was drawn, each copy its own question."""
    parts = []
    for question, count in zip(questions, weights.astype(int)):
        block = frame[frame["question_id"] == question]
        for copy in range(count):
            parts.append(block.assign(question_id=f"{question}#{copy}"))
    return pd.concat(parts, ignore_index=True)


def percentile_interval(values) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    with np.errstate(invalid="ignore"):
        return tuple(np.percentile(values, [2.5, 97.5])) if len(values) else (np.nan, np.nan)


@pytest.mark.slow
def test_mcq_intervals_equal_recomputing_on_resampled_tables():
    frame = random_design(np.random.default_rng(5), n_questions=10)
    resamples, seed = 25, 99
    analysis = analyze_mcq(frame, FACTORS, n_resamples=resamples, seed=seed)
    questions = analysis.data.questions
    weights = question_weights(len(questions), resamples, np.random.default_rng(seed))
    draws = [analyze_mcq(resampled_table(frame, questions, w), FACTORS).summary.set_index("model") for w in weights]
    for m, model in enumerate(analysis.data.models):
        ci = analysis.intervals[m]
        for ours, column in (
            [("accuracy", "accuracy"), ("entropy_mean", "entropy_mean"), ("rsd", "rsd"), ("ckld", "ckld")]
            + [(f"apes[{f}]", f"apes[{f}]") for f in FACTORS]
            + [(f"fleiss_kappa[{f}]", f"kappa[{f}]") for f in FACTORS]
        ):
            expected = percentile_interval([d.loc[model, column] for d in draws])
            assert ci[ours] == pytest.approx(expected), (model, ours)


@pytest.mark.slow
def test_gender_probe_intervals_equal_recomputing_on_resampled_tables():
    frame = gender_probe_like(n_questions=24, models=("speech_a",), backbone="text_a", seed=4)
    resamples, seed = 20, 5
    metrics = analyze_gender_probe(frame, ["speech_a=text_a"], n_resamples=resamples, seed=seed)
    questions = sorted(frame["question_id"].unique())
    weights = question_weights(len(questions), resamples, np.random.default_rng(seed))
    draws = [
        analyze_gender_probe(resampled_table(frame, questions, w), ["speech_a=text_a"]).table.set_index(
            ["model", "category"]
        )
        for w in weights
    ]
    table = metrics.table.set_index(["model", "category"])
    for key in table.index[table.index.get_level_values(0) == "speech_a"]:
        for name in ("J", "delta", "neutral_rate", "kappa"):
            expected = percentile_interval([d.loc[key, name] if key in d.index else np.nan for d in draws])
            got = (table.loc[key, f"{name}_ci_low"], table.loc[key, f"{name}_ci_high"])
            assert got == pytest.approx(expected, nan_ok=True), (key, name)


@pytest.mark.slow
def test_a_fixed_seed_fixes_the_intervals_and_progress_is_reported():
    frame = random_design(np.random.default_rng(1), n_questions=8)
    seen = []
    first = analyze_mcq(frame, FACTORS, n_resamples=600, seed=3, progress=Progress(lambda d, t, m: seen.append((d, t))))
    again = analyze_mcq(frame, FACTORS, n_resamples=600, seed=3)
    other = analyze_mcq(frame, FACTORS, n_resamples=600, seed=4)
    assert first.intervals == again.intervals
    assert first.intervals != other.intervals
    assert seen[-1] == (600, 600) and len(seen) == 3  # reported once per chunk of resamples


def test_cancelling_stops_the_bootstrap():
    from spokenbench.core.foundation.errors import Cancelled

    progress = Progress()
    progress.cancel()
    with pytest.raises(Cancelled):
        analyze_mcq(random_design(np.random.default_rng(1), n_questions=4), FACTORS, n_resamples=10, progress=progress)
