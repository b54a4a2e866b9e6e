"""Statistics for benchmark repetitions: descriptive figures, and the test that decides comparisons.

Confidence intervals are on the **median** and distribution-free: the interval between two order
statistics ``[x(l), x(n-l+1)]`` whose binomial coverage is at least 95 %. Benchmark samples are
often skewed (a few slow repetitions), so this is safer than a t-interval on the mean. Below six
samples no pair of order statistics reaches 95 %; the interval is then ``[min, max]`` and its real
coverage (``1 - 2 * 0.5**n``, e.g. 87.5 % for n=4) is reported alongside.

Two runs are compared with a **Welch t-test on log values** (``ratio_test``): throughput and latency
are positive and their noise is multiplicative, so the difference of log means is the log of the
ratio of geometric means, and its t-interval is a 95 % interval of the ratio. Unlike the
Mann-Whitney U test this harness used before (exact U cannot go below p = 0.1 with three
repetitions per side), it has power at the 2-5 repetitions benchmarks use. A practical threshold (default 2 %)
turns tiny but significant differences into "equivalent". scipy gives the t distribution.

A comparison makes many such tests at once (every size, metric and run), and at alpha = 0.05 one
in twenty of them would call two identical setups "different". ``judge_together`` holds the false
discovery rate of a family of tests at alpha (Benjamini-Hochberg): each test keeps its own p-value
and interval, and is "different" only where its q-value (the adjusted p) is below alpha.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

ALPHA = 0.05
MIN_REPS = 2  # fewer samples than this per side: never claim a difference
EQUIVALENCE = 0.02
"""Practical threshold: ratios within 1/(1+t) .. 1+t are "equivalent", however small the p."""
METHOD = ("Welch t-test on log values (95% interval of the ratio of geometric means); "
          "different where the Benjamini-Hochberg q < 0.05 over all of a comparison's cells (and over its bands)")


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
class RatioTest:
    """Outcome of comparing ``other`` with ``baseline``: ratio, its 95 % interval and a decision.

    ``decision`` is ``different``, ``equivalent`` or ``undecided``; ``reason`` says it in words
    (``not enough repetitions to decide (n = 1 vs 3)``). ``log_diff``/``log_se``/``df`` keep the
    test's inner figures so that cells can be combined into a size band (``combine``).
    """

    n_baseline: int
    n_other: int
    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    decision: str
    reason: str
    log_diff: float = math.nan
    log_se: float = math.nan
    df: float = math.nan
    #: the p-value adjusted for the family it was judged in (``judge_together``); NaN: alone
    q_value: float = math.nan

    @property
    def significant(self) -> bool:
        return self.decision == "different"


def _t_quantile(df: float, level: float = 0.975) -> float:
    from scipy.stats import t

    return float(t.ppf(level, df)) if math.isfinite(df) else _z(level)


def _t_two_sided_p(tval: float, df: float) -> float:
    from scipy.stats import t

    if not math.isfinite(df):
        return math.erfc(abs(tval) / math.sqrt(2))
    return float(2 * t.sf(abs(tval), df))


def _decide(n_a: int, n_b: int, ratio: float, low: float, high: float, p: float,
            alpha: float, threshold: float) -> tuple[str, str]:
    upper = 1.0 + threshold
    lower = 1.0 / upper
    if lower <= low and high <= upper:
        return "equivalent", f"equivalent (95% CI within ±{threshold * 100:g}%)"
    if p < alpha:
        if lower <= ratio <= upper:
            return "equivalent", f"equivalent (difference below {threshold * 100:g}%)"
        return "different", "different"
    return "undecided", f"not enough repetitions to decide (n = {n_b} vs {n_a})"


def ratio_test(baseline: Sequence[float], other: Sequence[float], alpha: float = ALPHA,
               threshold: float = EQUIVALENCE) -> RatioTest:
    """Compare ``other`` with ``baseline``: ratio of medians (other / baseline) and a decision.

    With at least ``MIN_REPS`` positive values per side: Welch's t-test on log values gives the
    95 % interval of the ratio and the p-value. Where the interval lies within the practical
    threshold the two are ``equivalent``; where p < alpha and the ratio is beyond it they are
    ``different``; otherwise the data cannot decide. Values <= 0 (loss 0 %, 0 retransmits) fall
    back to Welch on raw values, with the ratio of means.
    """
    a = np.asarray([v for v in baseline if v is not None], dtype=float)
    b = np.asarray([v for v in other if v is not None], dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    n_a, n_b = int(a.size), int(b.size)
    ratio = float(np.median(b) / np.median(a)) if n_a and n_b and np.median(a) != 0 else math.nan
    if n_a < MIN_REPS or n_b < MIN_REPS:
        return RatioTest(n_a, n_b, ratio, math.nan, math.nan, math.nan, "undecided",
                         f"not enough repetitions to decide (n = {n_b} vs {n_a})")
    logs = bool((a > 0).all() and (b > 0).all())
    xa, xb = (np.log(a), np.log(b)) if logs else (a, b)
    va, vb = float(xa.var(ddof=1)) / n_a, float(xb.var(ddof=1)) / n_b
    diff = float(xb.mean() - xa.mean())
    se = math.sqrt(va + vb)
    if se == 0:
        df, p = math.inf, (0.0 if diff != 0 else 1.0)
        half = 0.0
    else:
        df = (va + vb) ** 2 / ((va * va / (n_a - 1) if va else 0.0) + (vb * vb / (n_b - 1) if vb else 0.0))
        p = _t_two_sided_p(diff / se, df)
        half = _t_quantile(df) * se
    if logs:
        low, high = math.exp(diff - half), math.exp(diff + half)
    else:
        mean_a = float(xa.mean())
        if mean_a == 0:
            decision = "different" if p < alpha else ("equivalent" if se == 0 else "undecided")
            reason = "different" if decision == "different" else (
                "equivalent" if decision == "equivalent"
                else f"not enough repetitions to decide (n = {n_b} vs {n_a})")
            return RatioTest(n_a, n_b, ratio, math.nan, math.nan, p, decision, reason)
        low, high = 1 + (diff - half) / mean_a, 1 + (diff + half) / mean_a
        ratio = float(xb.mean() / mean_a)
    decision, reason = _decide(n_a, n_b, ratio, low, high, p, alpha, threshold)
    return RatioTest(n_a, n_b, ratio, low, high, p, decision, reason,
                     diff if logs else math.nan, se if logs else math.nan, df)


def bh_adjust(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg q-values of ``p_values`` (scipy's ``false_discovery_control``); NaN
    stays NaN and is not counted in the family."""
    from scipy.stats import false_discovery_control

    finite = [i for i, p in enumerate(p_values) if math.isfinite(p)]
    q = [math.nan] * len(p_values)
    if finite:
        for i, value in zip(finite, false_discovery_control([p_values[i] for i in finite], method="bh"),
                            strict=True):
            q[i] = float(value)
    return q


def judge_together(tests: Sequence[RatioTest], alpha: float = ALPHA,
                   threshold: float = EQUIVALENCE) -> list[RatioTest]:
    """The same tests decided as one family: "different" needs q < alpha (``bh_adjust``)."""
    return [rejudge(t, q, alpha, threshold) for t, q in zip(tests, bh_adjust([t.p_value for t in tests]),
                                                                strict=True)]


def rejudge(test: RatioTest, q: float, alpha: float = ALPHA, threshold: float = EQUIVALENCE) -> RatioTest:
    """``test`` decided by its family's q-value instead of its own p-value.

    Interval, ratio and p-value stay as they are; a test that an interval within the threshold
    made "equivalent" stays so; a difference that is significant alone but not in the family
    becomes undecided (more repetitions would decide it)."""
    if not math.isfinite(q):
        return test
    if math.isfinite(test.ci_low) and math.isfinite(test.ci_high):
        decision, reason = _decide(test.n_baseline, test.n_other, test.ratio, test.ci_low, test.ci_high,
                                   q, alpha, threshold)
    elif q < alpha:  # raw values around a zero baseline: no interval, the test alone decides
        decision, reason = "different", "different"
    elif test.decision == "different":
        decision, reason = "undecided", f"not enough repetitions to decide (n = {test.n_other} vs {test.n_baseline})"
    else:
        decision, reason = test.decision, test.reason
    return replace(test, decision=decision, reason=reason, q_value=q)


def combine(tests: Sequence[RatioTest], alpha: float = ALPHA,
            threshold: float = EQUIVALENCE) -> RatioTest:
    """One ratio for a band of cells: the mean of the cells' log ratios, its standard error from
    theirs (cells are independent measurements) and Welch-Satterthwaite degrees of freedom."""
    usable = [t for t in tests if math.isfinite(t.log_diff) and math.isfinite(t.log_se)]
    n_a = min((t.n_baseline for t in tests), default=0)
    n_b = min((t.n_other for t in tests), default=0)
    if not usable:
        ratios = [t.ratio for t in tests if math.isfinite(t.ratio) and t.ratio > 0]
        ratio = geomean(ratios)
        if tests and all(t.decision == "equivalent" for t in tests):
            return RatioTest(n_a, n_b, ratio, math.nan, math.nan, math.nan, "equivalent", "equivalent")
        return RatioTest(n_a, n_b, ratio, math.nan, math.nan, math.nan, "undecided",
                         f"not enough repetitions to decide (n = {n_b} vs {n_a})")
    k = len(usable)
    diff = sum(t.log_diff for t in usable) / k
    var = sum(t.log_se ** 2 for t in usable) / (k * k)
    se = math.sqrt(var)
    if se == 0:
        df, p, half = math.inf, (0.0 if diff != 0 else 1.0), 0.0
    else:
        denom = sum((t.log_se ** 2 / (k * k)) ** 2 / t.df for t in usable
                    if math.isfinite(t.df) and t.df > 0 and t.log_se > 0)
        df = var * var / denom if denom else math.inf
        p = _t_two_sided_p(diff / se, df)
        half = _t_quantile(df) * se
    ratio, low, high = math.exp(diff), math.exp(diff - half), math.exp(diff + half)
    decision, reason = _decide(n_a, n_b, ratio, low, high, p, alpha, threshold)
    return RatioTest(n_a, n_b, ratio, low, high, p, decision, reason, diff, se, df)


def geomean(values: Sequence[float]) -> float:
    """Geometric mean of positive values (NaN when there are none)."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr) & (arr > 0)]
    return float(np.exp(np.log(arr).mean())) if arr.size else math.nan
