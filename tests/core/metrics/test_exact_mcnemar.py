"""The exact McNemar p-value is counted in integers (core/metrics/agreement.py) so `metrics` need not import
scipy.special: it must agree with scipy's binomial test, and stay a valid p-value at the edges."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from spokenbench.core.metrics.agreement import EXACT_BINOMIAL_MAX_TRIALS, binomial_half_cdf, exact_mcnemar_p


def scipy_mcnemar(b, c):
    n = b + c
    return np.where(n > 0, np.minimum(1.0, 2 * special.bdtr(np.minimum(b, c), np.maximum(n, 1), 0.5)), 1.0)


def test_agrees_with_scipys_binomial_tail_over_many_counts():
    rng = np.random.default_rng(3)
    b, c = rng.integers(0, 3000, 400), rng.integers(0, 3000, 400)
    np.testing.assert_allclose(exact_mcnemar_p(b, c), scipy_mcnemar(b, c), rtol=1e-10, atol=0)


@pytest.mark.parametrize(("b", "c"), [(3, 0), (0, 3), (5, 5), (1, 9), (12, 30), (0, 1)])
def test_small_tables_match_binomtest(b, c):
    expected = stats.binomtest(b, b + c, 0.5).pvalue
    assert exact_mcnemar_p(np.array([b]), np.array([c]))[0] == pytest.approx(expected, rel=1e-12)


def test_no_discordant_pairs_gives_one_and_keeps_the_shape():
    p = exact_mcnemar_p(np.array([0, 4, 2]), np.array([0, 0, 2]))
    assert p.shape == (3,)
    assert p[0] == 1.0 and p[2] == 1.0
    assert p[1] == pytest.approx(2 / 16)


def test_tiny_tails_underflow_to_the_correctly_rounded_value():
    assert binomial_half_cdf(0, 1100) == 0.0  # 2^-1100 is below the smallest double
    assert binomial_half_cdf(0, 1074) == 2.0**-1074
    assert binomial_half_cdf(1000, 2000) + binomial_half_cdf(999, 2000) == pytest.approx(1.0, rel=1e-15)


def test_above_the_exact_limit_uses_scipys_tail_unchanged():
    n = EXACT_BINOMIAL_MAX_TRIALS + 1
    assert binomial_half_cdf(n // 2 - 50, n) == float(special.bdtr(n // 2 - 50, n, 0.5))
