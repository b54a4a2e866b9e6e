"""Context for the comparison report: reviewer summary, overlaid charts, per-cell tables."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchharness.analysis import parity, stats
from benchharness.analysis.comparison import Comparison, compare, headline_metrics
from benchharness.config.workloads import Workload
from benchharness.core.metrics import unit_of
from benchharness.report import charts, power_section, scaling_section
from benchharness.report.pages import environment, when, write_html
from benchharness.report.sections import label_text, varying
from benchharness.results.store import RunDir

if TYPE_CHECKING:
    import pandas as pd

MAX_ROWS = 400
BAND_ORDER = {"small": 0, "medium": 1, "large": 2, "all": 3}


def comparison_context(runs: Sequence[RunDir], threshold: float = stats.EQUIVALENCE,
                       workload: Workload | None = None) -> dict[str, Any]:
    """Everything ``compare.html.j2`` needs."""
    comp = compare(list(runs), threshold=threshold, workload=workload)
    tests = []
    if not comp.cells.empty and "test" in comp.cells:
        for test in dict.fromkeys(comp.cells["test"]):
            tests.append(_test(comp, str(test), comp.cells[comp.cells["test"] == test]))
    undecided = sum(1 for s in comp.statements if s["decision"] == "undecided")
    note = ""
    if undecided:
        note = (f"{undecided} of the verdicts below cannot be decided from the repetitions at hand: "
                "run more repetitions (repeat=5) or longer steps to narrow the intervals.")
    return {"comp": comp, "runs": [{**r, "started": when(r.get("started"))} for r in comp.runs],
            "statements": comp.statements, "method": stats.METHOD,
            "threshold_pct": f"{threshold * 100:g}",
            "summary": _summary(comp), "tests": tests, "note": note,
            "cost": comp.cost, "cost_chart": _cost_chart(comp), "noise": comp.noise,
            "projection": comp.projection, "projection_chart": _projection_chart(comp),
            "cpu": _cpu(runs, comp), "parity": parity.parity(runs, comp.labels),
            "packet_rate": packet_rate_rows(runs, comp), "frameworks": _frameworks(runs, comp),
            "power": power_section.comparison_power(list(runs), comp.labels),
            "generated": when(dt.datetime.now(dt.UTC).timestamp())}


def _cpu(runs: Sequence[RunDir], comp: Comparison) -> list[dict[str, Any]]:
    """Per run: the median and highest host CPU-s/GB, the busiest core (``results/cpu.py``);
    empty when no run has per-core sampler times."""
    from benchharness.results import cpu

    rows = [{"label": r.get("label"), **cpu.run_summary(run)} for r, run in zip(comp.runs, runs, strict=False)]
    return rows if any(v is not None for row in rows for k, v in row.items() if k != "label") else []


def packet_rate_rows(runs: Sequence[RunDir], comp: Comparison) -> list[dict[str, Any]]:
    """Per run, test and case: the median and lowest host Mpps, packets, drops and sender-CPU-bound
    flows (``results/packet_rate.py``); empty when no run has message-rate samples. The comparison
    page's "Packet rate per host" table and ``format=json``'s ``packet_rate`` are these rows."""
    from benchharness.results import packet_rate

    return [{"label": r.get("label"), **row} for r, run in zip(comp.runs, runs, strict=False)
            for row in packet_rate.run_summary(run)]


def _frameworks(runs: Sequence[RunDir], comp: Comparison) -> dict[str, Any] | None:
    """Each run's framework compatibility matrix side by side (``results/frameworks.side_by_side``);
    None when no run has a framework step."""
    from benchharness.results import frameworks

    return frameworks.side_by_side(runs, comp.labels)


def _case_text(row: dict[str, Any], cols: Sequence[str]) -> str:
    return " · ".join(f"{c}={label_text(c, row.get(c))}" for c in cols if label_text(c, row.get(c)))


def _summary(comp: Comparison) -> list[dict[str, Any]]:
    """One row per test, case and size band for headline metrics."""
    if comp.bands.empty:
        return []
    rows = comp.bands[comp.bands["headline"]].to_dict("records")
    extra = [k for k in comp.keys if k not in ("test", "size_bytes", "tool", "pattern")]
    extra = [k for k in extra if k in comp.bands and comp.bands[k].nunique(dropna=True) > 1]
    out = []
    for r in rows:
        out.append({"test": r.get("test", ""), "case": _case_text(r, extra), "band": r["band"],
                    "metric": r["metric"], "verdict": r["verdict"], "detail": r["detail"],
                    "winner": r["winner"],
                    "ratios": [r.get(f"ratio[{lab}]", math.nan) for lab in comp.labels]})
    out.sort(key=lambda r: (str(r["test"]), r["case"], BAND_ORDER.get(r["band"], 9), r["metric"]))
    return out


def _test(comp: Comparison, test: str, cells: pd.DataFrame) -> dict[str, Any]:
    keys = [k for k in comp.keys if k != "test"]
    show = varying(cells, keys)
    case_cols = [c for c in show if c != "size_bytes"]
    metrics = list(dict.fromkeys(cells["metric"]))
    figures = []
    for metric in [*headline_metrics(metrics), *(["busbw_GBps"] if "busbw_GBps" in metrics else [])]:
        fig = _overlay(comp, cells[cells["metric"] == metric], metric, case_cols,
                       "size_bytes" in show)
        if fig and fig not in figures:
            figures.append(fig)
    if (scaled := scaling_section.comparison_figure(cells, keys)) is not None:  # busbw vs host count
        figures.append(scaled)
    return {"name": test, "figures": figures, "table": _table(comp, cells, show)}


def _overlay(comp: Comparison, cells: pd.DataFrame, metric: str, case_cols: list[str],
             by_size: bool) -> dict[str, Any] | None:
    unit = unit_of(metric)
    if cells.empty:
        return None
    if not by_size:
        items = []
        for r in cells.to_dict("records"):
            case = _case_text(r, case_cols)
            items.append((f"{r['run']}{' · ' + case if case else ''}", r["median"], r["ci95_low"],
                          r["ci95_high"]))
        chart = charts.bar_chart(items, title=f"{metric} per run (median, 95% CI)",
                                 x_label=f"{metric} [{unit}]")
        return {"svg": chart, "caption": "One bar per run; whisker: 95% CI of the median"} \
            if chart else None
    series = []
    groups = list(cells.groupby(case_cols, dropna=False, sort=True)) if case_cols else [((), cells)]
    for k, (key, sub) in enumerate(groups[:4]):
        key = key if isinstance(key, tuple) else (key,)
        case = " · ".join(label_text(c, v) for c, v in zip(case_cols, key, strict=True) if label_text(c, v))
        for i, lab in enumerate(comp.labels):
            mine = sub[sub["run"] == lab].sort_values("size_bytes")
            if mine.empty:
                continue
            tips = [f"{label_text('size_bytes', r['size_bytes'])}: {charts.fmt(r['median'])} {unit}, "
                    f"cv {r['cv'] * 100:.1f}%, n={r['n']}" if isinstance(r["cv"], float)
                    and math.isfinite(r["cv"]) else f"{charts.fmt(r['median'])} {unit}"
                    for r in mine.to_dict("records")]
            series.append(charts.Series(
                name=f"{lab}{' · ' + case if case else ''}",
                points=list(zip(mine["size_bytes"].astype(float), mine["median"], strict=True)),
                band=list(zip(mine["ci95_low"], mine["ci95_high"], strict=True)),
                tooltips=tips, color=i, dash=k))
    note = f"first 4 of {len(groups)} cases shown" if len(groups) > 4 else ""
    chart = charts.line_chart(series, title=f"{metric} vs message size, one line per run",
                              x_label="message size [bytes, log2]", y_label=f"{metric} [{unit}]",
                              log2_x=True, note=note)
    return {"svg": chart, "caption": "Median per size; shaded band: 95% CI of the median "
                                     "(wide band = noisy run)"} if chart else None


def _table(comp: Comparison, cells: pd.DataFrame, show: list[str]) -> dict[str, Any]:
    labels = comp.labels
    group = [*show, "metric"]
    headers = [("size" if c == "size_bytes" else c) for c in show] + ["metric"]
    for lab in labels:
        headers += [f"{lab}: median", "95% CI", "cv", "n"]
        if lab != comp.baseline:
            headers += ["ratio", "p", "q"]
    headers.append("result")
    rows = []
    grouped = cells.groupby(group, dropna=False, sort=True) if group else [((), cells)]
    for key, sub in grouped:
        key = key if isinstance(key, tuple) else (key,)
        row = [(label_text(c, v), _sort(v)) for c, v in zip(group, key, strict=True)]
        per_run = {r["run"]: r for r in sub.to_dict("records")}
        for lab in labels:
            r = per_run.get(lab)
            if r is None:
                row += [("–", "")] * (4 if lab == comp.baseline else 7)
                continue
            row += [(charts.fmt(r["median"]), _sort(r["median"])),
                    (f"{charts.fmt(r['ci95_low'])} – {charts.fmt(r['ci95_high'])}", _sort(r["ci95_low"])),
                    (_pct(r["cv"]), _sort(r["cv"])), (str(r["n"]), str(r["n"]))]
            if lab != comp.baseline:
                row += [(f"×{r['ratio']:.3f}" if _finite(r["ratio"]) else "–", _sort(r["ratio"])),
                        (f"{r['p_value']:.3g}" if _finite(r["p_value"]) else "–", _sort(r["p_value"])),
                        (f"{r['q_value']:.3g}" if _finite(r.get("q_value")) else "–", _sort(r.get("q_value")))]
        first = next(iter(per_run.values()))
        result = first["cell_result"]
        if first["winner"] and _finite(first["winner_margin"]):
            margin = first["winner_margin"]
            change = (margin - 1) * 100 if first["higher_is_better"] else (1 - 1 / margin) * 100
            result = f"{result} ({change:.1f}% {'higher' if first['higher_is_better'] else 'lower'})"
        row.append((result, result))
        rows.append({"cells": row, "win": bool(first["winner"])})
    return {"headers": headers, "rows": rows[:MAX_ROWS], "total": len(rows),
            "truncated": len(rows) > MAX_ROWS}


def _cost_chart(comp: Comparison) -> Any:
    items = [(f"{c['run']} · {c['test']}", c["gbps_per_kusd"], None, None) for c in comp.cost
             if _finite(c["gbps_per_kusd"])]
    return charts.bar_chart(items, title="Gbit/s per 1,000 USD (best median, per host)",
                            x_label="Gbit/s per k$") if items else ""


def _projection_chart(comp: Comparison) -> Any:
    """Projected step time of the workload at other model sizes, one line per run."""
    series = [charts.Series(lab, pts) for lab, pts in (comp.projection.get("series") or {}).items()]
    if not series:
        return ""
    xs = [x for s in series for x, _ in s.points]
    ticks = [t for t in (1e8, 3e8, 1e9, 3e9, 1e10, 3e10, 1e11, 3e11, 1e12, 3e12) if min(xs) <= t <= max(xs)]
    return charts.line_chart(series, title=f"Step time vs model size ({comp.projection['workload']})",
                             x_label="parameters (log scale)", y_label="step time (s)", log2_x=True,
                             x_format=_params, x_ticks=ticks or None, y_zero=False)


def _params(x: float) -> str:
    """A parameter count as model sizes are named: 300M, 7B, 1.5T."""
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if x >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:,.0f}"


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _pct(v: Any) -> str:
    return f"{v * 100:.1f}%" if _finite(v) else "–"


def _sort(v: Any) -> str:
    if _finite(v):
        return repr(float(v))
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def render_comparison(runs: Sequence[RunDir], out: Path, threshold: float = stats.EQUIVALENCE,
                      workload: Workload | None = None) -> Path:
    """Render a comparison of runs (the first is the baseline) to one HTML file."""
    html = environment().get_template("compare.html.j2").render(
        **comparison_context(list(runs), threshold=threshold, workload=workload))
    return write_html(html, out)
