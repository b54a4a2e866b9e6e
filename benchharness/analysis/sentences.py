"""Plain verdict sentences for a comparison: one per headline metric, size band and run.

"B is 49% slower than A for tcp 16K–1M (bw_avg_gbps; 95% CI 48–50%, n = 3 vs 3)". The figures
are the band's combined ratio (``stats.combine``) of the run against the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchharness.core.units import format_size

if TYPE_CHECKING:
    import pandas as pd

#: Labels of a band row that are neither the case nor figures.
_BAND_FIELDS = frozenset({"band", "metric", "headline", "cells", "winner", "runner_up", "factor",
                          "verdict", "detail", "higher_is_better", "size_min", "size_max", "test",
                          "tool", "pattern"})

_LATENCY_WORDS = {"p50": "median latency", "p99": "p99 latency", "p999": "p99.9 latency",
                  "typical": "typical latency", "avg": "average latency", "max": "maximum latency",
                  "min": "minimum latency"}


def _pct(value: float, fine: bool = False) -> str:
    value = abs(value) * 100
    return f"{value:.0f}" if value >= 10 and not fine else f"{value:.1f}"


def _sizes(low: Any, high: Any) -> str:
    if not isinstance(low, int | float) or not math.isfinite(low):
        return ""
    a, b = format_size(int(low)), format_size(int(high))
    return a if a == b else f"{a}–{b}"


def _what(metric: str) -> str:
    """Words for a lower-is-better metric: ``lat_p99_us`` -> ``p99 latency``."""
    if metric.startswith("lat_"):
        tag = metric[4:].rsplit("_", 1)[0]
        return _LATENCY_WORDS.get(tag, f"{tag} latency")
    return metric


def sentence(base: str, other: str, where: str, metric: str, higher: bool, ratio: float,
             low: float, high: float, decision: str, n_other: int, n_base: int,
             threshold: float) -> str:
    """One plain sentence for ``other`` against ``base``."""
    n = f"n = {n_other} vs {n_base}"
    where = f" for {where}" if where else ""
    if decision == "undecided" or not math.isfinite(ratio):
        ci = f"ratio ×{ratio:.3f}, 95% CI ×{low:.3f}–×{high:.3f}, " \
            if math.isfinite(low) and math.isfinite(ratio) else ""
        return f"Not enough repetitions to decide between {other} and {base}{where} ({metric}; {ci}{n})."
    if decision == "equivalent":
        ci = f", 95% CI ×{low:.3f}–×{high:.3f}" if math.isfinite(low) else ""
        return (f"{other} and {base} are equivalent{where} ({metric}; within {threshold * 100:g}%: "
                f"ratio ×{ratio:.3f}{ci}, {n}).")
    if higher:
        way = "faster" if ratio > 1 else "slower"
        lo, hi = (low - 1, high - 1) if ratio > 1 else (1 - high, 1 - low)
        fine = math.isfinite(lo) and math.isfinite(hi) and abs(hi - lo) < 0.05
        head = f"{other} is {_pct(ratio - 1, fine)}% {way} than {base}"
    else:
        way = "higher" if ratio > 1 else "lower"
        lo, hi = (low - 1, high - 1) if ratio > 1 else (1 - high, 1 - low)
        fine = math.isfinite(lo) and math.isfinite(hi) and abs(hi - lo) < 0.05
        head = f"{other} has {_pct(ratio - 1, fine)}% {way} {_what(metric)} than {base}"
    ci = f"95% CI {_pct(lo, fine)}–{_pct(hi, fine)}%, " if math.isfinite(lo) and math.isfinite(hi) else ""
    return f"{head}{where} ({metric}; {ci}{n})."


def band_statements(bands: pd.DataFrame, labels: Sequence[str], threshold: float) -> list[dict[str, Any]]:
    """Sentences for the headline band rows, every run against the baseline (the first)."""
    if bands.empty or len(labels) < 2:
        return []
    base = labels[0]
    out = []
    heads = bands[bands["headline"]]
    labels_of = [str(k) for k in heads.columns if k not in _BAND_FIELDS and "[" not in str(k)]
    groups = heads.groupby("test", sort=False) if "test" in heads else [("", heads)]
    varying = {test: [k for k in labels_of if sub[k].nunique(dropna=True) > 1] for test, sub in groups}
    for row in heads.to_dict("records"):
        case = ", ".join(f"{k}={row[k]}" for k in varying.get(row.get("test", ""), [])
                         if row.get(k) is not None and not (isinstance(row[k], float) and math.isnan(row[k])))
        where = " ".join(p for p in (str(row.get("test") or ""), _sizes(row.get("size_min"),
                                                                        row.get("size_max"))) if p)
        if case:
            where += f" ({case})"
        for lab in labels[1:]:
            decision = row.get(f"decision[{lab}]")
            if not isinstance(decision, str):
                continue
            text = sentence(base, lab, where, str(row["metric"]), bool(row["higher_is_better"]),
                            float(row[f"ratio[{lab}]"]), float(row[f"ci_low[{lab}]"]),
                            float(row[f"ci_high[{lab}]"]), decision, int(row[f"n[{lab}]"]),
                            int(row[f"n_base[{lab}]"]), threshold)
            out.append({"test": row.get("test"), "band": row["band"], "metric": row["metric"],
                        "run": lab, "decision": decision, "text": text})
    return out


def cost_statements(cost: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """"A costs 25 USD and 0.05 W per Gbit/s in rdma-bw (best median 392 Gbit/s)."""
    out = []
    for c in cost:
        parts = []
        usd, watts = c.get("usd_per_gbps"), c.get("w_per_gbps")
        if isinstance(usd, float) and math.isfinite(usd):
            parts.append(f"{usd:,.2f} USD")
        if isinstance(watts, float) and math.isfinite(watts):
            parts.append(f"{watts:.3g} W")
        if not parts:
            continue
        out.append({"test": c.get("test"), "band": "", "metric": c.get("metric"), "run": c.get("run"),
                    "decision": "cost",
                    "text": f"{c.get('run')} costs {' and '.join(parts)} per Gbit/s in {c.get('test')} "
                            f"(best median {c.get('best_gbps'):.3g} Gbit/s)."})
    return out
