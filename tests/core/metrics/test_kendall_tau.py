"""kendall_tau_b (core/metrics/agreement.py) gives scipy.stats.kendalltau's τ-b and two-sided p-value: the
metrics engine computes it itself so that a metrics run does not import scipy.stats."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import stats

from spokenbench.core.metrics.agreement import kendall_tau_b


def _scipy(x, y) -> tuple[float, float]:
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SmallSampleWarning for one value
        result = stats.kendalltau(x, y)
    return float(result.statistic), float(result.pvalue)


def _same(ours: tuple[float, float], theirs: tuple[float, float]) -> bool:
    """The same floats (NaN where scipy gives NaN), not merely close ones."""
    return all((math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(ours, theirs, strict=True))


@pytest.mark.parametrize("seed", range(40))
def test_random_samples_with_and_without_ties(seed):
    rng = np.random.default_rng(seed)
    for size in (2, 3, 5, 9, 20, 33, 34, 60, 200):
        for levels in (None, 2, 3, 5, size // 2 + 1):  # None: continuous values (no ties)
            if levels is None:
                x, y = rng.random(size), rng.random(size)
            else:
                x, y = rng.integers(0, levels, size) / levels, rng.integers(0, levels, size) / levels
            if rng.random() < 0.3:  # strongly (anti-)correlated: p-values in the far tail
                y = np.sign(rng.random() - 0.5) * x + rng.normal(0, 0.05, size)
            ours, theirs = kendall_tau_b(x, y), _scipy(x, y)
            assert _same(ours, theirs), (size, levels, ours, theirs)


@pytest.mark.parametrize(
    "x, y",
    [
        ([1, 2, 3, 4], [1, 2, 3, 4]),  # perfect agreement: exact c = 0
        ([1, 2, 3, 4], [4, 3, 2, 1]),
        ([1, 2, 3, 4, 5], [2, 1, 3, 4, 5]),  # one discordant pair
        (list(range(40)), [1, 0, *range(2, 40)]),  # n > 33 with one discordant pair: still exact
        (list(range(40)), [2, 1, 0, *range(3, 40)]),  # n > 33: normal approximation
        ([1, 1, 1, 1], [1, 2, 3, 4]),  # a constant sample: NaN
        ([0.5, 0.5, 0.7], [0.1, 0.2, 0.2]),
        ([1, 2], [2, 1]),
        ([0.3], [0.4]),
        ([1, 2, 3, 4], [1, 3, 2, 4]),  # 4c = n(n-1)
    ],
)
def test_edge_cases(x, y):
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    assert _same(kendall_tau_b(x, y), _scipy(x, y))


@pytest.mark.slow
def test_identical_to_scipy_bit_for_bit_on_model_accuracies():
    """Rankings compare 9-ish model accuracies, often tied: the same floats, not just close ones."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        n = int(rng.integers(2, 15))
        x = rng.integers(0, 400, n) / 400
        y = np.where(rng.random(n) < 0.3, x, rng.integers(0, 400, n) / 400)
        ours, theirs = kendall_tau_b(x, y), _scipy(x, y)
        assert _same(ours, theirs), (x, y, ours, theirs)
