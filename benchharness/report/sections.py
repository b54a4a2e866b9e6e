"""Per-test sections of the single-run report: statistics tables and charts.

Everything is aggregated (``analysis.summarize``) before it is drawn, so the size of the report
depends on the number of cases, not on the number of samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from benchharness.analysis import frames as analysis
from benchharness.core.metrics import higher_is_better, unit_of
from benchharness.core.units import format_size
from benchharness.report import charts
from benchharness.results import cases

if TYPE_CHECKING:
    import pandas as pd

MAX_ROWS = 400
MAX_SERIES = 10
THROUGHPUT = ("bw_avg_gbps", "bw_sent_gbps", "msg_rate_mpps")
LATENCY = (("lat_p50_us", "lat_typical_us", "lat_avg_us"), ("lat_p99_us",), ("lat_p999_us",))
_LABEL_ORDER = ("pair", "server", "client", "host", "hosts", "collective", "direction", "protocol",
                "placement", "streams", "size_bytes")


def label_text(col: str, value: Any) -> str:
    """A label value as shown in tables and legends (sizes as 64K, NaN as blank)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if col == "size_bytes":
        return format_size(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def varying(df: pd.DataFrame, cols: Sequence[str]) -> list[str]:
    """Columns of ``cols`` with more than one value in ``df`` (NaN counts as a value)."""
    out = [c for c in cols if c in df.columns and df[c].nunique(dropna=False) > 1]
    if "pair" in out:  # a pair label says it all
        out = [c for c in out if c not in ("server", "client")]
    return sorted(out, key=lambda c: (_LABEL_ORDER.index(c) if c in _LABEL_ORDER else 5, c))


def constants(df: pd.DataFrame, cols: Sequence[str]) -> dict[str, str]:
    """Labels with one value across the test (shown once, above its tables)."""
    return {c: label_text(c, df[c].iloc[0]) for c in cols
            if c in df.columns and df[c].nunique(dropna=False) == 1 and label_text(c, df[c].iloc[0])}


def _host_count(df: pd.DataFrame) -> int:
    for col in ("pair", "hosts", "server", "host"):
        if col in df.columns:
            return int(df[col].nunique())
    return 1


def test_section(test: str, df: pd.DataFrame, intervals: pd.DataFrame) -> dict[str, Any]:
    """Tables and charts for one test (``df``: its summary rows with line-rate columns)."""
    case_cols = analysis.case_columns(df)
    aggregate = _host_count(df) > MAX_SERIES
    keys = [c for c in case_cols if not aggregate or c not in cases.HOST_LABELS]
    show = varying(df, keys)
    summary = analysis.summarize(df, by=show)
    metrics = [m for m in analysis.metric_columns(df) if not m.endswith("_line_rate_pct")]
    tables = [t for m in _ordered(metrics) if (t := _table(summary, m, show))]
    figures = [f for f in (_throughput(df, summary, show), _latency(summary, show),
                           _busbw(summary, show), _over_time(intervals), _heatmap(df), _gpu_heatmap(df))
               if f]
    return {"name": test, "constants": constants(df, [c for c in case_cols if c not in show]),
            "samples": len(df), "steps": int(df["step"].nunique()) if "step" in df else 0,
            "aggregated": aggregate, "hosts_count": _host_count(df), "tables": tables,
            "figures": figures, "worst": _worst(df) if aggregate else None}


def _ordered(metrics: list[str]) -> list[str]:
    head = [m for group in (THROUGHPUT, ("busbw_GBps", "algbw_GBps"), *LATENCY) for m in group]
    return [m for m in head if m in metrics] + [m for m in metrics if m not in head]


def _by_size(rows: pd.DataFrame, show: list[str]) -> pd.DataFrame:
    """Rows in label order, message sizes numerically (16K before 128K), not as text."""
    keys: list[str] = []
    for col in show:
        col = "size_bytes" if col in ("length", "size", "sizes") and "size_bytes" in rows else col
        if col in rows and col not in keys:
            keys.append(col)
    try:
        return rows.sort_values(keys, kind="stable", na_position="last") if keys else rows
    except TypeError:  # a column with mixed types: keep the order it came in
        return rows


def _table(summary: pd.DataFrame, metric: str, show: list[str]) -> dict[str, Any] | None:
    rows = _by_size(summary[summary["metric"] == metric], show)
    if rows.empty:
        return None
    share = summary[summary["metric"] == f"{metric}_line_rate_pct"]
    share_map = {tuple(label_text(c, r[c]) for c in show): r["median"]
                 for r in share.to_dict("records")} if not share.empty else {}
    out_rows = []
    for r in rows.head(MAX_ROWS).to_dict("records"):
        key = tuple(label_text(c, r[c]) for c in show)
        cells = [(t, r[c] if c == "size_bytes" else t) for c, t in zip(show, key, strict=True)]
        ci = f"{charts.fmt(r['ci95_low'])} – {charts.fmt(r['ci95_high'])}" if r["n"] > 1 else "–"
        if r["n"] > 1 and r["ci_coverage"] < 0.95:
            ci += f" ({r['ci_coverage'] * 100:.0f}%)"
        cells += [(charts.fmt(r["median"]), r["median"]), (ci, r["ci95_low"]),
                  (_pct(r["cv"]), r["cv"]), (str(r["n"]), r["n"]),
                  (charts.fmt(r["min"]), r["min"]), (charts.fmt(r["max"]), r["max"])]
        if share_map:
            value = share_map.get(key, math.nan)
            cells.append((f"{value:.1f}%" if math.isfinite(value) else "–", value))
        out_rows.append([(text, _sortable(v)) for text, v in cells])
    headers = [("size" if c == "size_bytes" else c) for c in show] + \
        ["median", "95% CI of median", "cv", "n", "min", "max"] + (["line rate"] if share_map else [])
    return {"metric": metric, "unit": unit_of(metric), "headers": headers, "rows": out_rows,
            "total": len(rows), "truncated": len(rows) > MAX_ROWS,
            "better": "higher is better" if higher_is_better(metric) else "lower is better"}


SIZE_DERIVED = frozenset({"count", "length", "size", "sizes"})


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%" if isinstance(value, float) and math.isfinite(value) else "–"


def _sortable(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(float(value)) if math.isfinite(value) else ""
    return str(value)


def _series(summary: pd.DataFrame, metric: str, show: list[str], x: str,
            suffix: str = "") -> tuple[list[charts.Series], str]:
    rows = summary[summary["metric"] == metric]
    if rows.empty:
        return [], ""
    # Labels that follow the message size (nccl-tests' element count, the size as written in the
    # suite) name no series of their own: one line per setup, not one point per line.
    names = [c for c in show if c != x and not (x == "size_bytes" and c in SIZE_DERIVED)]
    groups = list(rows.groupby(names, dropna=False, sort=True)) if names else [((), rows)]
    series = []
    for key, sub in groups:
        key = key if isinstance(key, tuple) else (key,)
        name = " · ".join(label_text(c, v) for c, v in zip(names, key, strict=True) if label_text(c, v))
        sub = sub.sort_values(x)
        series.append(charts.Series(
            name=(name + suffix) if name else (suffix.strip(" ·") or metric),
            points=list(zip(sub[x].astype(float), sub["median"], strict=True)),
            band=list(zip(sub["ci95_low"], sub["ci95_high"], strict=True))))
    if len(series) <= MAX_SERIES:
        return series, ""
    # Too many lines to read: median across series per x, band = min..max of the series' medians.
    agg = rows.groupby(x)["median"].agg(["median", "min", "max"]).sort_index()
    return [charts.Series(name=f"median of {len(series)} series{suffix}",
                          points=list(zip(agg.index.astype(float), agg["median"], strict=True)),
                          band=list(zip(agg["min"], agg["max"], strict=True)))], \
        f"{len(series)} series collapsed: line = median, band = min–max of the series' medians"


def _x_axis(summary: pd.DataFrame, show: list[str]) -> str | None:
    for col in ("size_bytes", "streams"):
        if col in show:
            return col
    return None


def _figure(chart: Markup, caption: str) -> dict[str, Any] | None:
    return {"svg": chart, "caption": caption} if chart else None


def _throughput(df: pd.DataFrame, summary: pd.DataFrame, show: list[str]) -> dict[str, Any] | None:
    metric = next((m for m in THROUGHPUT if m in set(summary["metric"])), None)
    if metric is None:
        return None
    x = _x_axis(summary, show)
    unit = unit_of(metric)
    if x is None:
        if "pattern" in df and (df["pattern"] == "all-pairs").any():
            return None  # the heatmap shows it
        rows = summary[summary["metric"] == metric].head(30)
        items = [(" · ".join(label_text(c, r[c]) for c in show) or metric, r["median"],
                  r["ci95_low"], r["ci95_high"]) for r in rows.to_dict("records")]
        return _figure(charts.bar_chart(items, title=f"{metric} per case (median, 95% CI)",
                                        x_label=f"{metric} [{unit}]"), "Throughput per case")
    series, note = _series(summary, metric, show, x)
    log2 = x == "size_bytes"
    chart = charts.line_chart(series, title=f"Throughput vs {'message size' if log2 else x}",
                              x_label="message size [bytes, log2]" if log2 else x,
                              y_label=f"{metric} [{unit}]", log2_x=log2, note=note)
    return _figure(chart, "Median per size; shaded band: 95% CI of the median")


def _latency(summary: pd.DataFrame, show: list[str]) -> dict[str, Any] | None:
    present = set(summary["metric"])
    chosen = [next((m for m in group if m in present), None) for group in LATENCY]
    metrics = [m for m in chosen if m]
    x = _x_axis(summary, show)
    if not metrics or x is None:
        return None
    series: list[charts.Series] = []
    notes = []
    for k, metric in enumerate(metrics):
        part, note = _series(summary, metric, show, x, suffix=f" · {metric.removesuffix('_us')}")
        if len(part) > 3:  # many cases × percentiles: one line per percentile
            agg = summary[summary["metric"] == metric].groupby(x)["median"].median().sort_index()
            part = [charts.Series(name=f"{metric.removesuffix('_us')} (median of {len(part)})",
                                  points=list(zip(agg.index.astype(float), agg, strict=True)))]
        for j, s in enumerate(part):  # colour: case, dash: percentile
            s.color, s.dash = j, k
        series += part
        notes.append(note)
    log2 = x == "size_bytes"
    chart = charts.line_chart(series, title="Latency percentiles vs message size" if log2 else
                              f"Latency vs {x}", x_label="message size [bytes, log2]" if log2 else x,
                              y_label="latency [µs]", log2_x=log2, note=next((n for n in notes if n), ""))
    return _figure(chart, "p50 / p99 / p99.9 latency (median over repetitions)")


def _busbw(summary: pd.DataFrame, show: list[str]) -> dict[str, Any] | None:
    if "busbw_GBps" not in set(summary["metric"]) or _x_axis(summary, show) != "size_bytes":
        return None
    series, note = _series(summary, "busbw_GBps", show, "size_bytes")
    chart = charts.line_chart(series, title="Bus bandwidth vs message size",
                              x_label="message size [bytes, log2]", y_label="busbw_GBps [GB/s]",
                              log2_x=True, note=note)
    return _figure(chart, "nccl-tests bus bandwidth, median per size; band: 95% CI")


def _over_time(intervals: pd.DataFrame) -> dict[str, Any] | None:
    if intervals.empty or "t_start_s" not in intervals:
        return None
    metric = next((m for m in THROUGHPUT if m in intervals and intervals[m].notna().any()), None)
    if metric is None:
        return None
    rows = intervals[intervals[metric].notna() & intervals["t_start_s"].notna()].copy()
    if "size_bytes" in rows and rows["size_bytes"].notna().any():
        rows = rows[rows["size_bytes"] == rows["size_bytes"].max()]
    if "t_offset_s" in rows:  # flows of one step that started apart (stagger) share one axis
        rows["t_start_s"] = rows["t_start_s"] + rows["t_offset_s"].fillna(0.0)
    by = [c for c in ("step",) if c in rows]
    if "client" in rows and (rows.groupby(by or ["client"])["client"].nunique() > 1).any():
        by.append("client")  # incast and one-to-many: one line per flow
    groups = list(rows.groupby(by, sort=True)) if by else [("all", rows)]
    # case labels (on_off, bitrate ...) that tell steps apart, so same-pair lines differ by name
    skip = cases.HOST_LABELS | cases.REP_LABELS | {"size_bytes"}
    step_cases = [c for c in analysis.case_columns(rows) if c not in skip and by and
                  rows[c].nunique(dropna=False) > 1 and rows.groupby(by)[c].nunique(dropna=False).max() == 1]
    series = []
    for key, sub in groups[:8]:
        first = sub.iloc[0]
        parts = [label_text(c, first[c]) for c in ("pair", "host", *step_cases) if c in sub]
        if "client" in by:
            parts.append(f"{label_text('client', first['client'])} → {label_text('server', first.get('server'))}")
        if "rep" in sub and label_text("rep", first["rep"]):
            parts.append(f"rep {label_text('rep', first['rep'])}")
        name = " · ".join(p for p in parts if p) or str(key[0] if isinstance(key, tuple) else key)
        pts = sorted(zip(sub["t_start_s"].astype(float), sub[metric].astype(float), strict=True))
        series.append(charts.Series(name=name, points=charts.downsample(pts)))
    note = f"first 8 of {len(groups)} steps shown" if len(groups) > 8 else ""
    chart = charts.line_chart(series, title=f"{metric} over time (interval samples)",
                              x_label="time since step start [s]",
                              y_label=f"{metric} [{unit_of(metric)}]", note=note)
    return _figure(chart, "Per-interval throughput: dips show bursty or unstable transfers")


def _heatmap(df: pd.DataFrame) -> dict[str, Any] | None:
    if "pattern" not in df or not (df["pattern"] == "all-pairs").any():
        return None
    if not {"server", "client"} <= set(df.columns):
        return None
    metric = next((m for m in (*THROUGHPUT, "busbw_GBps") if m in df and df[m].notna().any()), None)
    if metric is None:
        return None
    rows = df[(df["pattern"] == "all-pairs") & df[metric].notna()]
    if "retest" in rows:  # bad-link retests are shown beside the heatmap, not in it
        rows = rows[rows["retest"].isna() | (rows["retest"] == False)]  # noqa: E712 - NaN-aware
    title = f"All-pairs {metric} (median)"
    if "size_bytes" in rows and rows["size_bytes"].notna().any():
        biggest = rows["size_bytes"].max()
        rows = rows[rows["size_bytes"] == biggest]
        title += f" at {format_size(int(biggest))}"
    if "server_rail" in rows and rows["server_rail"].notna().any():  # per-rail steps: a cell per NIC pair
        rows = rows.assign(server=rows["server"].astype(str) + "." + rows["server_rail"].fillna("").astype(str),
                           client=rows["client"].astype(str) + "." + rows["client_rail"].fillna("").astype(str))
        title += ", per rail"
    med = rows.groupby(["server", "client"])[metric].median()
    servers = sorted({str(s) for s, _ in med.index})
    clients = sorted({str(c) for _, c in med.index})
    values = {(str(s), str(c)): float(v) for (s, c), v in med.items()}
    chart = charts.heatmap(servers, clients, values, title=title, unit=unit_of(metric))
    return _figure(chart, "Each cell: median over repetitions for one server → client pair")


def _gpu_heatmap(df: pd.DataFrame) -> dict[str, Any] | None:
    """GPU i of one node against GPU j of another (pattern gpu-pairs), beside the per-rail matrix."""
    from benchharness.analysis.gpu_pairs import gpu_pair_matrix

    found = gpu_pair_matrix(df)
    if found is None:
        return None
    title = f"GPU pairs {found.metric} (median)"
    if found.size_bytes:
        title += f" at {format_size(found.size_bytes)}"
    chart = charts.heatmap(found.endpoints, found.endpoints, found.values, title=title,
                           unit=unit_of(found.metric), row_label="GPU", col_label="GPU")
    return _figure(chart, "Each cell: median over repetitions for one GPU of one node with one GPU of "
                          "another; a slow node is a light row and column, a slow GPU one of its own")


def _worst(df: pd.DataFrame) -> dict[str, Any] | None:
    """The ten weakest host pairs on the throughput metric (shown when pairs are aggregated)."""
    metric = next((m for m in (*THROUGHPUT, "busbw_GBps") if m in df and df[m].notna().any()), None)
    col = next((c for c in ("pair", "hosts", "server", "host") if c in df), None)
    if metric is None or col is None:
        return None
    rows = df[df[metric].notna()]
    if "size_bytes" in rows and rows["size_bytes"].notna().any():
        rows = rows[rows["size_bytes"] == rows["size_bytes"].max()]
    med = rows.groupby(col)[metric].agg(["median", "count"]).sort_values("median").head(10)
    return {"metric": metric, "label": col, "unit": unit_of(metric),
            "rows": [(str(k), charts.fmt(v["median"]), int(v["count"])) for k, v in med.iterrows()]}
