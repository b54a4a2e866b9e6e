"""The scaling chart: bus bandwidth against host count at the largest size, with the efficiency
at N hosts against 2 (``analysis/scaling.py``), for one run's test and for a comparison."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from benchharness.analysis import scaling
from benchharness.core.units import format_size
from benchharness.report import charts

if TYPE_CHECKING:
    import pandas as pd


def _hosts(x: float) -> str:
    return f"{x:g}"


def _chart(by_name: Mapping[str, Sequence[scaling.ScalingCurve]], title: str) -> dict[str, Any] | None:
    series, notes = [], []
    for i, (name, found) in enumerate(by_name.items()):
        for k, curve in enumerate(found):
            label = " · ".join(p for p in (name, curve.case) if p)
            series.append(charts.Series(
                name=label or "busbw", points=[(float(h), v) for h, v, _ in curve.points], color=i, dash=k,
                tooltips=[f"{h} hosts: {charts.fmt(v)} GB/s, efficiency {e:.2f}, n={n}"
                          for (h, v, n), (_, e) in zip(curve.points, curve.efficiency(), strict=True)]))
            notes.append(f"{label + ': ' if label else ''}{scaling.efficiency_text(curve)} "
                         f"at {format_size(curve.size_bytes)}")
    if not series:
        return None
    ticks = sorted({x for s in series for x, _ in s.points})
    svg = charts.line_chart(series, title=title, x_label="hosts", y_label=f"{scaling.METRIC} [GB/s]",
                            x_format=_hosts, x_ticks=ticks)
    if not svg:
        return None
    return {"svg": svg, "caption": "Median bus bandwidth per host count at the largest size every count "
                                   "measured; efficiency at N hosts against the smallest count: "
                                   + "; ".join(notes)}


def run_figure(df: pd.DataFrame) -> dict[str, Any] | None:
    """The scaling figure of one run's test (its summary rows), None without two host counts."""
    found = scaling.curves(df)
    return _chart({"": found}, "busbw vs host count") if found else None


def comparison_figure(cells: pd.DataFrame, keys: list[str]) -> dict[str, Any] | None:
    """One line per run (and case) of a comparison's cells of one test, None without two host counts."""
    found = scaling.cell_curves(cells, keys)
    return _chart(found, "busbw vs host count, one line per run") if found else None


def comparison_json(cells: pd.DataFrame, keys: list[str]) -> list[dict[str, Any]]:
    """Per test and run, the scaling curves with their efficiency (for ``format=json``)."""
    out: list[dict[str, Any]] = []
    if cells.empty or "test" not in cells:
        return out
    for test in dict.fromkeys(cells["test"]):
        for run, found in scaling.cell_curves(cells[cells["test"] == test], keys).items():
            out += [{"test": test, "run": run, **c.to_dict()} for c in found]
    return out
