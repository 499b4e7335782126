"""Vectorized building blocks: normalized entropy, the mean pairwise absolute difference (APES), Fleiss' κ
over many questions at once, Cohen's κ, Bowker's symmetry test and Kendall's τ-b. Each works on count arrays and group
ids, never on rows one at a time."""

from __future__ import annotations

import math

import numpy as np

# scipy.special (chi2.sf, t.sf, the normal sf) is imported by the functions that use it: its import costs
# ~150 ms (it pulls in numpy.f2py and numpy.testing), more than `spokenbench metrics` spends computing, and
# the multiple-choice metrics need none of it (McNemar's binomial tail is counted exactly below).
EXACT_BINOMIAL_MAX_TRIALS = 20_000


def normalized_entropy(counts: np.ndarray, base: np.ndarray | float) -> np.ndarray:
    """Shannon entropy of each row of `counts` with logarithm base `base` (per row or scalar).
    A row with no counts has no entropy (NaN)."""
    counts = np.asarray(counts, dtype=float)
    total = counts.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = counts / total[:, None]
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
        h = -terms.sum(axis=1) / np.log(np.asarray(base, dtype=float))
    h = np.where((h > 1.0) & (h < 1.0 + 1e-9), 1.0, np.maximum(h, 0.0))  # rounding only
    return np.where(total > 0, h, np.nan)


def mean_pairwise_abs_difference(
    values: np.ndarray, groups: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per group: the mean of |x_i - x_j| over all pairs i < j of its values (Eq. 3's APES when the values
    are level entropies), and how many values it had. Groups with fewer than two values get NaN.

    Uses the sorted-order identity sum_{i<j} |x_i - x_j| = sum_k x_(k) (2k - n - 1), so it costs a sort,
    not n^2 pairs."""
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups, dtype=np.int64)
    order = np.lexsort((values, groups))
    v, g = values[order], groups[order]
    count = np.bincount(g, minlength=n_groups)
    start = np.concatenate(([0], np.cumsum(count)[:-1]))
    rank = np.arange(len(v)) - start[g] + 1  # 1-based rank within group
    n_of = count[g]
    total = np.bincount(g, weights=v * (2 * rank - n_of - 1), minlength=n_groups)
    pairs = count * (count - 1) / 2
    with np.errstate(divide="ignore", invalid="ignore"):
        result = np.where(count >= 2, total / pairs, np.nan)
    return result, count


def fleiss_kappa_by_group(
    item_group: np.ndarray, item_counts: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Fleiss' κ per group from its items' category counts (BiasInEar Appendix C.4).

    Items with fewer than 2 ratings are dropped; P̄ is weighted by n_i (Eq. 7); P_e uses the group's
    pooled category shares (Eq. 6). Returns κ per group (NaN where undefined: no items, or P_e = 1) and
    the number of items used."""
    counts = np.asarray(item_counts, dtype=float)
    n_i = counts.sum(axis=1)
    keep = n_i >= 2
    counts, n_i, item_group = counts[keep], n_i[keep], np.asarray(item_group)[keep]
    n_items = np.bincount(item_group, minlength=n_groups)
    # n_i * P_i = sum_j n_ij (n_ij - 1) / (n_i - 1)
    weighted_agreement = (counts * (counts - 1)).sum(axis=1) / (n_i - 1)
    ratings = np.bincount(item_group, weights=n_i, minlength=n_groups)
    agreement = np.bincount(item_group, weights=weighted_agreement, minlength=n_groups)
    k = counts.shape[1]
    category_totals = np.stack(
        [np.bincount(item_group, weights=counts[:, j], minlength=n_groups) for j in range(k)], axis=1
    )
    sum_squares = (category_totals**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_bar = agreement / ratings
        p_e = sum_squares / ratings**2
        # computed from integer counts so that P_e = 1 (one category only) is detected exactly
        denominator = ratings**2 - sum_squares
        kappa = np.where((n_items > 0) & (denominator > 0), (p_bar - p_e) / (1.0 - p_e), np.nan)
    return kappa, n_items


def cohen_kappa_from_tables(tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cohen's κ and raw agreement for a stack of square contingency tables (..., k, k)."""
    tables = np.asarray(tables, dtype=float)
    total = tables.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.trace(tables, axis1=-2, axis2=-1) / total
        expected = (tables.sum(axis=-1) * tables.sum(axis=-2)).sum(axis=-1) / total**2
        kappa = np.where((total > 0) & (expected < 1), (observed - expected) / (1 - expected), np.nan)
    return kappa, np.where(total > 0, observed, np.nan)


def bowker_symmetry(table: np.ndarray) -> tuple[float, int, float]:
    """Bowker's test of symmetry for one square table, as statsmodels' SquareTable.symmetry computes it:
    sum over i<j of (n_ij - n_ji)^2 / (n_ij + n_ji) (empty pairs contribute 0), df = k(k-1)/2, chi-square
    p-value. Categories neither rater used must be removed by the caller."""
    table = np.asarray(table, dtype=float)
    k = table.shape[0]
    if k < 2:
        return float("nan"), 0, float("nan")
    upper = np.triu_indices(k, 1)
    a, b = table[upper], table.T[upper]
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = float(np.where(a + b > 0, (a - b) ** 2 / (a + b), 0.0).sum())
    df = k * (k - 1) // 2
    from scipy import special

    return statistic, df, float(special.chdtrc(df, statistic))


def one_sample_t(
    values: np.ndarray, groups: np.ndarray, n_groups: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: mean, count, and the two-sided one-sample t-test of mean = 0, as
    scipy.stats.ttest_1samp computes it (sd with n-1; zero variance gives ±inf and p = 0, or NaN for a
    zero mean; fewer than 2 values give NaN). Returns (mean, n, t, p)."""
    from scipy import special

    values = np.asarray(values, dtype=float)
    n = np.bincount(groups, minlength=n_groups).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.bincount(groups, weights=values, minlength=n_groups) / n
        deviation = values - mean[groups]
        variance = np.bincount(groups, weights=deviation * deviation, minlength=n_groups) / (n - 1)
        t = mean / np.sqrt(variance / n)
        p = 2 * special.stdtr(n - 1, -np.abs(t))
    enough = n >= 2
    return np.where(n > 0, mean, np.nan), n, np.where(enough, t, np.nan), np.where(enough, p, np.nan)


def exact_mcnemar_p(b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Two-sided exact McNemar p-value: binomial test of b successes in b + c trials at 1/2 (as
    scipy.stats.binomtest gives for p = 0.5), the tail counted in integers, so correctly rounded (scipy's
    incomplete beta, used before, agrees within 1e-10 relative) and without importing scipy."""
    b, c = np.broadcast_arrays(np.asarray(b), np.asarray(c))
    p = np.ones(b.shape)
    for index in np.ndindex(b.shape):
        trials = int(b[index]) + int(c[index])
        if trials > 0:
            p[index] = min(1.0, 2 * binomial_half_cdf(min(int(b[index]), int(c[index])), trials))
    return p


def binomial_half_cdf(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, 1/2): the sum of C(n, i) for i ≤ k over 2^n, in exact integers (one
    float rounding, at the end). Above EXACT_BINOMIAL_MAX_TRIALS trials the integers grow slow to sum
    (n bits each), and scipy's bdtr is used."""
    if n > EXACT_BINOMIAL_MAX_TRIALS:
        from scipy import special

        return float(special.bdtr(k, n, 0.5))
    term, total = 1, 1
    for i in range(k):
        term = term * (n - i) // (i + 1)
        total += term
    return total / (1 << n)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Kendall's τ-b of two equally long samples without NaN, and its two-sided p-value, as
    scipy.stats.kendalltau computes them by default (same integer pair counts and the same float operations,
    so the same numbers): the exact null distribution without ties when n ≤ 33 or at most one pair is
    discordant (or concordant), else the normal approximation with the tie-corrected variance. NaN, NaN when
    either sample is constant. Pairs are compared all at once (n² memory): meant for the few models ranked."""
    x = np.asarray(x, dtype=float).ravel()
    y = np.asarray(y, dtype=float).ravel()
    size = x.size
    if size != y.size:
        raise ValueError("kendall_tau_b: x and y differ in length")
    if size == 0:
        return float("nan"), float("nan")
    upper = np.triu_indices(size, 1)
    sign_x = np.sign(x[:, None] - x[None, :])[upper]
    sign_y = np.sign(y[:, None] - y[None, :])[upper]
    concordance = sign_x * sign_y
    dis = int((concordance < 0).sum())
    con_minus_dis = int(concordance.sum())
    xtie, x0, x1 = _tie_counts(x)
    ytie, y0, y1 = _tie_counts(y)
    tot = (size * (size - 1)) // 2
    if xtie == tot or ytie == tot:
        return float("nan"), float("nan")
    tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    tau = float(np.minimum(1.0, max(-1.0, tau)))
    if xtie == 0 and ytie == 0 and (size <= 33 or min(dis, tot - dis) <= 1):
        return tau, _kendall_p_exact(size, tot - dis)
    m = size * (size - 1.0)
    var = (m * (2 * size + 5) - x1 - y1) / 18 + (2 * xtie * ytie) / m + x0 * y0 / (9 * m * (size - 2))
    z = con_minus_dis / np.sqrt(var)
    from scipy import special

    return tau, float(2 * special.ndtr(-np.abs(z)))


def _tie_counts(values: np.ndarray) -> tuple[int, int, int]:
    """Pairs tied in `values` and the two tie sums of the τ-b variance (scipy's count_rank_tie)."""
    cnt = np.unique(values, return_counts=True)[1].astype(np.int64)
    cnt = cnt[cnt > 1]
    return (
        int((cnt * (cnt - 1) // 2).sum()),
        int((cnt * (cnt - 1.0) * (cnt - 2)).sum()),
        int((cnt * (cnt - 1.0) * (2 * cnt + 5)).sum()),
    )


def _kendall_p_exact(n: int, c: int) -> float:
    """Two-sided exact p-value of c concordant pairs among n untied values (Kendall 1970; scipy's
    _kendall_p_exact, same recurrence)."""
    c = int(min(c, (n * (n - 1)) // 2 - c))
    if n == 1 or n == 2:
        prob = 1.0
    elif c == 0:
        prob = 2.0 / math.factorial(n) if n < 171 else 0.0
    elif c == 1:
        prob = 2.0 / math.factorial(n - 1) if n < 172 else 0.0
    elif 4 * c == n * (n - 1):
        prob = 1.0
    elif n < 171:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new)
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = 2.0 * np.sum(new) / math.factorial(n)
    else:
        new = np.zeros(c + 1)
        new[0:2] = 1.0
        for j in range(3, n + 1):
            new = np.cumsum(new) / j
            if j <= c:
                new[j:] -= new[: c + 1 - j]
        prob = np.sum(new)
    return float(np.clip(prob, 0, 1))
