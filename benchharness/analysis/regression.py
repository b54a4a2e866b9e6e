"""Regression detection over nights: a drop beyond the metric's own noise, or a slow decline.

Two robust tests on one series (oldest first), both needing a minimum relative change so that
a statistically clear but practically irrelevant move is not flagged:

* **step**: the newest value against the median of the previous ``window`` nights; flagged when
  it is worse by more than ``k`` × the scaled MAD (1.4826·MAD estimates σ for normal noise) and
  by more than ``min_change`` of that median. One outlier night in the history moves neither.
* **trend**: Mann-Kendall over the last ``window`` nights including the newest (rank based: no
  noise model) and the Theil-Sen slope; flagged when the decline is significant (one-sided
  z beyond ``z``) and the fitted decline over the window exceeds ``min_change``. This catches
  slow degradation that stays inside each night's noise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

MAD_SIGMA = 1.4826
Z_ONE_SIDED_99 = 2.326


@dataclass(frozen=True)
class Finding:
    """The verdict on the newest value of a series."""

    flagged: bool
    kind: str  # "step" | "trend" | "" (not flagged) | "short" (too little history)
    value: float
    center: float  # median of the previous nights
    sigma: float  # scaled MAD of the previous nights
    change: float  # relative change of value against center, signed (negative: lower)
    nights: int  # previous nights used
    message: str


def mad_sigma(values: Sequence[float]) -> float:
    """Scaled median absolute deviation: a robust estimate of σ."""
    center = statistics.median(values)
    return MAD_SIGMA * statistics.median(abs(v - center) for v in values)


def mann_kendall_z(values: Sequence[float]) -> float:
    """Mann-Kendall trend statistic as a z score (positive: rising), with the tie correction."""
    n = len(values)
    s = sum((values[j] > values[i]) - (values[j] < values[i]) for i in range(n) for j in range(i + 1, n))
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    var = (n * (n - 1) * (2 * n + 5) - sum(t * (t - 1) * (2 * t + 5) for t in counts.values())) / 18
    if var <= 0:
        return 0.0
    return (s - 1) / math.sqrt(var) if s > 0 else (s + 1) / math.sqrt(var) if s < 0 else 0.0


def theil_sen_slope(values: Sequence[float]) -> float:
    """Median of the pairwise slopes (per night)."""
    slopes = [(values[j] - values[i]) / (j - i) for i in range(len(values)) for j in range(i + 1, len(values))]
    return statistics.median(slopes) if slopes else 0.0


def check(history: Sequence[float], value: float, *, higher_is_better: bool = True, window: int = 10,
          min_history: int = 5, k: float = 4.0, min_change: float = 0.05, z: float = Z_ONE_SIDED_99,
          unit: str = "") -> Finding:
    """Whether ``value`` (the newest night) is a regression against ``history`` (older nights)."""
    recent = [float(v) for v in history if math.isfinite(v)][-window:]
    if len(recent) < min_history:
        return Finding(False, "short", value, math.nan, math.nan, math.nan, len(recent),
                       f"only {len(recent)} earlier nights (needs {min_history})")
    center = statistics.median(recent)
    sigma = mad_sigma(recent)
    sign = 1.0 if higher_is_better else -1.0
    worse = sign * (center - value)  # > 0: worse than usual
    scale = abs(center) or 1.0
    change = (value - center) / scale
    u = f" {unit}" if unit else ""
    base = (f"{value:.4g}{u} vs median {center:.4g}{u} of {len(recent)} earlier nights "
            f"({change * 100:+.1f}%, noise σ≈{sigma:.3g})")
    if worse > k * sigma and worse / scale > min_change:
        return Finding(True, "step", value, center, sigma, change, len(recent),
                       f"step: {base}, beyond {k:g}σ and {min_change * 100:g}%")
    series = [*recent[-(window - 1):], value]
    zscore = mann_kendall_z(series)
    decline = -sign * theil_sen_slope(series) * (len(series) - 1)
    if sign * zscore < -z and decline / scale > min_change:
        return Finding(True, "trend", value, center, sigma, change, len(recent),
                       f"trend: {'falling' if higher_is_better else 'rising'} over {len(series)} nights "
                       f"(Mann-Kendall z={zscore:.2f}, Theil-Sen {decline / scale * 100:.1f}% over the "
                       f"window); {base}")
    return Finding(False, "", value, center, sigma, change, len(recent), f"within noise: {base}")


def flags(series: Sequence[float], **kwargs: float | int | bool | str) -> list[Finding]:
    """``check`` for every point of a series against the points before it (for history views)."""
    return [check(series[:i], series[i], **kwargs) for i in range(len(series))]  # type: ignore[arg-type]
