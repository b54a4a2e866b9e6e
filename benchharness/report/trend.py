"""Trend report: one metric over nights, per NIC model (or serial, or firmware), from the catalog.

One chart per (test, case): one line per NIC model (``by=model``), card (``by=serial``) or
firmware version; each point is one night's median over the matching hosts. Nights flagged by
``regression.check`` (against the nights before them) are listed under each chart.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchharness.analysis import regression
from benchharness.core.metrics import higher_is_better, unit_of
from benchharness.report import charts
from benchharness.results.catalog import Catalog, Point

MAX_CHARTS = 24


def _day(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%m-%d") if ts else "?"


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts else "?"


def trend_context(catalog: Catalog, metric: str, *, by: str = "model", nic: str | None = None,
                  suite: str | None = None, test: str | None = None, size: int | None = None,
                  last: int | None = None, window: int = 10, min_history: int = 5, k: float = 4.0,
                  min_change: float = 0.05) -> dict[str, Any]:
    """Everything the trend template needs (charts, flagged nights, the filters used)."""
    catalog.sync()
    groups: Sequence[str | None] = catalog.nic_groups(by, nic) or [nic]
    series: dict[tuple[str, str], dict[str, list[Point]]] = {}
    for group in groups:
        for pt in catalog.series(metric, suite=suite, test=test, size=size, nic=group):
            series.setdefault((pt.test, pt.case), {}).setdefault(group or "all hosts", []).append(pt)
    unit = unit_of(metric)
    better = higher_is_better(metric)
    charts_out, flagged_all = [], []
    for (test_name, case), per_group in list(series.items())[:MAX_CHARTS]:
        lines, flagged = [], []
        for group, points in sorted(per_group.items()):
            points = sorted(points, key=lambda p: p.started_ts)[-last:] if last else \
                sorted(points, key=lambda p: p.started_ts)
            values = [p.value for p in points]
            findings = regression.flags(values, higher_is_better=better, window=window,
                                        min_history=min_history, k=k, min_change=min_change, unit=unit)
            for p, f in zip(points, findings, strict=True):
                if f.flagged:
                    flagged.append({"group": group, "run_id": p.run_id, "when": _when(p.started_ts),
                                    "value": p.value, "center": f.center, "kind": f.kind, "message": f.message})
            lines.append(charts.Series(
                name=group, points=[(p.started_ts, p.value) for p in points],
                tooltips=[f"{_when(p.started_ts)} {p.run_id}: {charts.fmt(p.value)} {unit} ({p.hosts} hosts)"
                          for p in points]))
        title = f"{test_name} · {metric}" + (f" · {case}" if case else "")
        svg = charts.line_chart(lines, title=title, x_label="night (run start)", y_label=f"{metric} [{unit}]",
                                x_format=_day, y_zero=False)
        charts_out.append({"title": title, "svg": svg, "flagged": flagged,
                           "nights": max(len(v) for v in per_group.values())})
        flagged_all += [{**f, "test": test_name, "case": case} for f in flagged]
    return {"metric": metric, "unit": unit, "by": by, "nic": nic or "", "suite": suite or "", "test": test or "",
            "charts": charts_out, "flagged": flagged_all, "truncated": max(0, len(series) - MAX_CHARTS),
            "catalog": str(catalog.path),
            "generated": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "better": "higher is better" if better else "lower is better",
            "rule": f"flagged: worse than the median of the previous {window} nights by more than {k:g}σ "
                    f"(scaled MAD) and {min_change * 100:g}%, or a significant decline (Mann-Kendall) of "
                    f"more than {min_change * 100:g}% over {window} nights; needs {min_history} earlier nights"}


def render_trend(catalog: Catalog, out: Path, metric: str, **filters: Any) -> Path:
    """Render the trend report of ``metric`` to ``out`` (self-contained HTML)."""
    from benchharness.report.pages import environment, write_html

    html = environment().get_template("trend.html.j2").render(**trend_context(catalog, metric, **filters))
    return write_html(html, out)
