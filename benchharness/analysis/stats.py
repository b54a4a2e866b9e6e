"""Small, dependency-light statistics for benchmark repetitions (numpy only, no scipy).

Confidence intervals are on the **median** and distribution-free: the interval between two order
statistics ``[x(l), x(n-l+1)]`` whose binomial coverage is at least 95 %. Benchmark samples are
often skewed (a few slow repetitions), so this is safer than a t-interval on the mean. Below six
samples no pair of order statistics reaches 95 %; the interval is then ``[min, max]`` and its real
coverage (``1 - 2 * 0.5**n``, e.g. 87.5 % for n=4) is reported alongside.

Significance uses the Mann-Whitney U test (two-sided): exact for small samples without ties,
normal approximation with tie and continuity correction otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

ALPHA = 0.05
MIN_REPS = 3  # fewer samples than this per side: never claim a difference


@lru_cache(maxsize=4096)
def median_ci_rank(n: int, level: float = 0.95) -> tuple[int, float]:
    """1-based rank ``l`` so that ``[x(l), x(n-l+1)]`` covers the median with >= ``level``.

    Returns ``(l, coverage)``. For n < 6 (at 95 %) no interval qualifies; ``l`` is 1 and the
    coverage is the true, lower one.
    """
    if n < 1:
        return 0, math.nan
    alpha = 1.0 - level
    if n > 300:  # normal approximation to Binomial(n, 1/2); exact sums get slow here
        z = _z(1 - alpha / 2)
        low = max(1, math.floor(n / 2 - z * math.sqrt(n) / 2))
        return low, level
    total = 2.0**n
    best, cdf = 0, 0.0
    # P(B <= l-1) for B ~ Binomial(n, 1/2); the interval misses when B < l or B > n-l.
    for rank in range(1, n // 2 + 1):
        cdf += math.comb(n, rank - 1) / total
        if 2 * cdf <= alpha:
            best = rank
        else:
            break
    if best == 0:
        return 1, 1.0 - 2 * 0.5**n if n > 1 else math.nan
    miss = sum(math.comb(n, k) for k in range(best)) / total
    return best, 1.0 - 2 * miss


def _z(p: float) -> float:
    """Inverse standard normal CDF (Acklam's rational approximation, |error| < 1e-9)."""
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
         1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
         6.680131188771972e01, -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
         -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    if p < 0.02425:
        q = math.sqrt(-2 * math.log(p))
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
    if p > 1 - 0.02425:
        return -_z(1 - p)
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


@dataclass(frozen=True)
class Describe:
    """Descriptive statistics of one set of repetitions."""

    n: int
    median: float
    mean: float
    min: float
    max: float
    stdev: float
    cv: float
    ci95_low: float
    ci95_high: float
    ci_coverage: float


def describe(values: Sequence[float]) -> Describe:
    """n, median, mean, min, max, stdev (n-1), cv (stdev/mean) and the median's 95 % CI."""
    arr = np.sort(np.asarray([v for v in values if v is not None], dtype=float))
    arr = arr[~np.isnan(arr)]
    n = int(arr.size)
    if n == 0:
        nan = math.nan
        return Describe(0, nan, nan, nan, nan, nan, nan, nan, nan, nan)
    mean = float(arr.mean())
    stdev = float(arr.std(ddof=1)) if n > 1 else math.nan
    cv = stdev / abs(mean) if n > 1 and mean != 0 else math.nan
    if n > 1:
        rank, coverage = median_ci_rank(n)
        low, high = float(arr[rank - 1]), float(arr[n - rank])
    else:
        low = high = coverage = math.nan
    return Describe(n, float(np.median(arr)), mean, float(arr[0]), float(arr[-1]), stdev, cv,
                    low, high, coverage)


@dataclass(frozen=True)
class TestResult:
    """Outcome of comparing two sets of repetitions."""

    p_value: float
    significant: bool
    reason: str  # "significant", "not significant", "insufficient repetitions", "CIs overlap"


def _rank(values: np.ndarray) -> tuple[np.ndarray, bool]:
    """Average ranks (1-based) and whether there were ties."""
    order = np.argsort(values, kind="mergesort")
    sorted_vals = values[order]
    ranks = np.empty(values.size, dtype=float)
    # Start of each run of equal values, and its average rank.
    starts = np.flatnonzero(np.r_[True, sorted_vals[1:] != sorted_vals[:-1]])
    ends = np.r_[starts[1:], values.size]
    avg = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks, bool((ends - starts > 1).any())


@lru_cache(maxsize=512)
def _u_distribution(n1: int, n2: int) -> tuple[float, ...]:
    """Exact null distribution of U (probabilities for u = 0 .. n1*n2), no ties."""
    # counts[i][j] as polynomials in u, built with the recursion f(i,j) = f(i-1,j)·x^j + f(i,j-1).
    prev = [np.zeros(1) for _ in range(n2 + 1)]
    for j in range(n2 + 1):
        prev[j] = np.ones(1)
    for i in range(1, n1 + 1):
        cur = [np.ones(1)]
        for j in range(1, n2 + 1):
            size = i * j + 1
            poly = np.zeros(size)
            shifted = prev[j]
            poly[j:j + shifted.size] += shifted
            left = cur[j - 1]
            poly[:left.size] += left
            cur.append(poly)
        prev = cur
    dist = prev[n2]
    return tuple(dist / dist.sum())


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: ``(U of a, p-value)``."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        return math.nan, math.nan
    ranks, ties = _rank(np.concatenate([x, y]))
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    u_min = min(u1, n1 * n2 - u1)
    if not ties and n1 <= 25 and n2 <= 25:
        dist = _u_distribution(n1, n2)
        p = 2 * sum(dist[: math.floor(u_min) + 1])
        return u1, min(1.0, p)
    n = n1 + n2
    _, counts = np.unique(np.concatenate([x, y]), return_counts=True)
    tie_term = float((counts**3 - counts).sum()) / (n * (n - 1))
    sigma = math.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term))
    if sigma == 0:
        return u1, 1.0
    z = (abs(u1 - n1 * n2 / 2) - 0.5) / sigma
    p = math.erfc(max(z, 0.0) / math.sqrt(2))
    return u1, min(1.0, p)


def min_p_value(n1: int, n2: int) -> float:
    """Smallest two-sided p the exact U test can give for these sample sizes (no ties)."""
    if not n1 or not n2:
        return math.nan
    log_comb = math.lgamma(n1 + n2 + 1) - math.lgamma(n1 + 1) - math.lgamma(n2 + 1)
    return min(1.0, 2.0 * math.exp(-log_comb))


def significance(a: Sequence[float], b: Sequence[float], alpha: float = ALPHA) -> TestResult:
    """Is ``a`` different from ``b``? Requires U-test p < alpha AND non-overlapping median CIs.

    With fewer than ``MIN_REPS`` samples on either side nothing is claimed.
    """
    da, db = describe(a), describe(b)
    if da.n < MIN_REPS or db.n < MIN_REPS:
        return TestResult(math.nan, False, "insufficient repetitions")
    _, p = mann_whitney_u(a, b)
    if not p < alpha:
        return TestResult(p, False, "not significant")
    if da.ci95_low <= db.ci95_high and db.ci95_low <= da.ci95_high:
        return TestResult(p, False, "CIs overlap")
    return TestResult(p, True, "significant")


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values (NaN when there are none)."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    return float(np.exp(np.log(arr).mean())) if arr.size else math.nan
