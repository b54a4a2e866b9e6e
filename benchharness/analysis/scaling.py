"""Scaling by host count: a collective's bus bandwidth as the job grows, and its efficiency.

A ``scaling`` test measures the same collective on 2, 4, 8 ... hosts; each sample carries its
``nhosts`` (a case label, ``results/cases.py``), so no figure pools host counts. Here: one curve
per case (collective, placement ...) of the median ``busbw_GBps`` at the largest message size
that every host count measured, and the efficiency at N hosts against the smallest count (2):
``busbw(N) / busbw(2)``. Bus bandwidth is normalised for the rank count already (nccl-tests'
``busbw``), so a fabric that scales keeps the efficiency near 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchharness.analysis import frames

if TYPE_CHECKING:
    import pandas as pd

METRIC = "busbw_GBps"
#: Labels that are the curve's axis or its fixed size, never a curve of their own.
_AXIS = {"nhosts", "nranks", "size_bytes", "test", "tool", "pattern"}
MAX_CURVES = 4


@dataclass(frozen=True)
class ScalingCurve:
    """Median bus bandwidth per host count at one message size (the largest all counts share)."""

    case: str
    size_bytes: int
    points: tuple[tuple[int, float, int], ...]  # (hosts, median GB/s, samples)

    @property
    def base(self) -> tuple[int, float]:
        """The smallest host count and its median, the efficiency's reference."""
        return self.points[0][0], self.points[0][1]

    def efficiency(self) -> list[tuple[int, float]]:
        """(hosts, busbw(hosts) / busbw(smallest count)) per host count; NaN when the base is 0."""
        _, ref = self.base
        return [(h, v / ref if ref else float("nan")) for h, v, _ in self.points]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the efficiency per host count."""
        return {"case": self.case, "size_bytes": self.size_bytes, "metric": METRIC,
                "points": [{"nhosts": h, "median": v, "n": n, "efficiency": e}
                           for (h, v, n), (_, e) in zip(self.points, self.efficiency(), strict=True)]}


def curves(df: pd.DataFrame) -> list[ScalingCurve]:
    """The scaling curves of one test's summary rows; empty unless it measured two host counts."""
    if df.empty or not {METRIC, "nhosts", "size_bytes"} <= set(df.columns):
        return []
    rows = df[df[METRIC].notna() & df["nhosts"].notna() & df["size_bytes"].notna()]
    if "kind" in rows:
        rows = rows[rows["kind"].isna() | (rows["kind"] == "summary")]
    return _build(rows, frames.case_columns(rows, hosts=False), METRIC, None)


def cell_curves(cells: pd.DataFrame, keys: list[str]) -> dict[str, list[ScalingCurve]]:
    """Per run label, the scaling curves of a comparison's cells (``median`` and ``n`` per case,
    ``analysis/comparison.py``) of one test; runs without two host counts are left out."""
    if cells.empty or not {"metric", "run", "nhosts", "size_bytes", "median"} <= set(cells.columns):
        return {}
    mine = cells[(cells["metric"] == METRIC) & cells["nhosts"].notna() & cells["size_bytes"].notna()]
    out = {}
    for label, sub in mine.groupby("run", sort=False):
        found = _build(sub, keys, "median", "n")
        if found:
            out[str(label)] = found
    return out


def _build(rows: pd.DataFrame, keys: list[str], value: str, count: str | None) -> list[ScalingCurve]:
    if rows.empty or rows["nhosts"].nunique() < 2:
        return []
    keys = [c for c in keys if c in rows and c not in _AXIS and rows[c].nunique(dropna=True) > 1]
    groups = list(rows.groupby(keys, dropna=False, sort=True)) if keys else [((), rows)]
    out = []
    for key, sub in groups[:MAX_CURVES]:
        key = key if isinstance(key, tuple) else (key,)
        counts = sorted(int(h) for h in sub["nhosts"].unique())
        shared = set.intersection(*(set(sub.loc[sub["nhosts"] == h, "size_bytes"]) for h in counts))
        if len(counts) < 2 or not shared:
            continue
        size = max(shared)
        at = sub[sub["size_bytes"] == size].groupby("nhosts")
        points = tuple((int(h), float(g[value].median()), int(g[count].sum()) if count else int(g[value].count()))
                       for h, g in at)
        case = " · ".join(f"{k}={v}" for k, v in zip(keys, key, strict=True))
        out.append(ScalingCurve(case, int(size), points))
    return out


def efficiency_text(curve: ScalingCurve) -> str:
    """``3 hosts: 0.82 of 2 hosts' busbw`` for every count past the smallest."""
    base_hosts, _ = curve.base
    return ", ".join(f"{h} hosts: {e:.2f}" for h, e in curve.efficiency()[1:]) + \
        f" of {base_hosts} hosts' bus bandwidth"
