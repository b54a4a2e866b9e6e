"""The "Fabric health" section of the single-run report: pictures first, then the numbers.

* throughput over time beside pause share over time, one line per host and rail (counter series,
  ``counters_interval``); without a series, the samplers' netdev rates per host;
* temperatures over time (hottest NIC / transceiver / GPU / other sensor per host) beside throughput;
* a table per rail: counter deltas of the whole run normalized per GB moved ("not exposed" where
  the driver has no such counter, never zero);
* heat per step (peak and least-squares slope of the hottest sensors) and the load verdicts.

Data comes from ``results/fabric.py``; every string reaches the page through the autoescaping
templates or ``charts`` (which escapes what it draws).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchharness.report import charts
from benchharness.results import fabric
from benchharness.results.store import RunDir
from benchharness.telemetry import load
from benchharness.telemetry.health import FAMILIES

MAX_LINES = 16
#: Column titles of the per-rail table (family -> title, unit per GB).
TITLES = {"pause_us": "pause time [µs/GB]", "pause_frames": "pause frames [/GB]", "ecn": "ECN/CNP [/GB]",
          "retrans": "retransmissions [/GB]", "discards": "discards [/GB]", "out_of_buffer": "out of buffer [/GB]",
          "symbol_errors": "symbol errors [/GB]", "fec_uncorrected": "FEC uncorrected [/GB]",
          "link_flaps": "link flaps [count]", "pcie_errors": "PCIe errors [count]",
          "pcie_stall_s": "PCIe stalled [s]"}


#: Families shown as counts, not per GB (events and seconds do not scale with traffic).
COUNTED = ("link_flaps", "pcie_errors", "pcie_stall_s")


def _line(name: str, pts: list[tuple[float, float]], t0: float) -> charts.Series:
    return charts.Series(name=name, points=charts.downsample([(t - t0, v) for t, v in pts]))


def _chart(lines: list[charts.Series], title: str, y_label: str, caption: str, *, y_zero: bool = True,
           note: str = "") -> dict[str, Any] | None:
    svg = charts.line_chart(lines[:MAX_LINES], title=title, x_label="time since the run's first sample [s]",
                            y_label=y_label, y_zero=y_zero,
                            note=note or (f"first {MAX_LINES} of {len(lines)} lines shown" if len(lines) > MAX_LINES else ""))
    return {"svg": svg, "caption": caption} if svg else None


def _hottest_by_kind(sensors: Mapping[str, list[tuple[float, float]]]) -> dict[str, list[tuple[float, float]]]:
    """Per sensor kind, the sensor that got hottest (one line per kind and host keeps charts readable)."""
    best: dict[str, tuple[float, str]] = {}
    for name, pts in sensors.items():
        if pts:
            kind = load.sensor_kind(name)
            peak = max(v for _, v in pts)
            if kind not in best or peak > best[kind][0]:
                best[kind] = (peak, name)
    return {f"{kind} ({name})": list(sensors[name]) for kind, (_, name) in sorted(best.items())}


def _cell(value: float | None, raw: int | None) -> tuple[str, str]:
    if raw is None:
        return "not exposed", ""
    if value is None:
        return f"{raw:,} (no bytes counted)", str(raw)
    return charts.fmt(value), repr(value)


def fabric_section(run: RunDir, info: Mapping[str, Any]) -> dict[str, Any] | None:
    """Context for ``fabric.html.j2``; None when the run holds no per-rail counters (step deltas
    with their context, or a counter series): temperatures alone are in the Telemetry section."""
    totals = fabric.rail_totals(run)
    series = fabric.rail_series(run)
    temps = fabric.temperatures(run)
    net = fabric.host_throughput(run)
    if not (totals or series):
        return None
    starts = [p.t - p.seconds / 2 for pts in series.values() for p in pts[:1]]
    starts += [pts[0][0] for per in temps.values() for pts in per.values() if pts]
    starts += [pts[0][0] for pts in net.values() if pts]
    t0 = min(starts, default=0.0)
    pictures: list[list[dict[str, Any]]] = []
    rail_bw = [_line(who, [(p.t, p.gbps) for p in pts if p.gbps is not None], t0) for who, pts in sorted(series.items())]
    rail_bw = [s for s in rail_bw if s.points]
    if rail_bw:
        bw = _chart(rail_bw, "Throughput per rail (counter series)", "rx+tx [Gbit/s]",
                    "Bytes per interval from the NIC's counters (PHY, IB port or netdev), both directions")
    else:
        bw = _chart([_line(h, pts, t0) for h, pts in sorted(net.items())], "Throughput per host (sampler)",
                    "rx+tx [Gbit/s]", "The samplers' netdev rates (RDMA traffic bypasses them: set "
                    "counters_interval for per-rail counter series)")
    pause = [_line(who, [(p.t, p.pause_share * 100) for p in pts if p.pause_share is not None], t0)
             for who, pts in sorted(series.items())]
    pause = [s for s in pause if s.points]
    pause_fig = _chart(pause, "Pause share per rail", "paused [% of interval]",
                       "PFC / link pause: the driver's pause time (mlx5), else frames × 65535 quanta at link "
                       "speed (an upper bound)") if pause else None
    if bw or pause_fig:
        pictures.append([f for f in (bw, pause_fig) if f])
    temp_lines = [_line(f"{host} · {name}", pts, t0) for host, sensors in sorted(temps.items())
                  for name, pts in _hottest_by_kind(sensors).items()]
    temp_fig = _chart(temp_lines, "Temperatures under load", "temperature [°C]",
                      "Hottest sensor of each kind per host (NIC, transceiver, GPU, other), from the samplers",
                      y_zero=False) if temp_lines else None
    if temp_fig:
        pictures.append([f for f in (temp_fig, bw) if f])
    headers = ["host", "rail", "NIC", "serial", "steps", "GB moved", "paused [% of time]",
               *(TITLES[f] for f in FAMILIES)]
    rows = []
    for r in totals:
        cells = [(r.host, r.host), (r.rail or "", r.rail or ""), (r.nic or "", r.nic or ""),
                 (r.serial or "", r.serial or ""), (str(r.steps), str(r.steps)), (charts.fmt(r.gb), repr(r.gb))]
        paused = r.totals.get("pause_us")
        share = paused / 1e6 / r.seconds * 100 if paused is not None and r.seconds > 0 else None
        cells.append((charts.fmt(share), repr(share)) if share is not None else
                     (("not exposed", "") if paused is None else ("–", "")))
        for family in FAMILIES:
            raw = r.totals.get(family)
            cells.append((str(raw), str(raw)) if family in COUNTED and raw is not None
                         else _cell(r.per_gb(family), raw))
        rows.append(cells)
    heat_rows = []
    for step in sorted({p.parent.name for p in (run.path / "telemetry" / "samples").glob("*/*.jsonl")}):
        for host, sensors in sorted(fabric.temperatures(run, step).items()):
            for h in load.heat(_hottest_by_kind(sensors)):
                heat_rows.append({"step": step, "host": host, "sensor": h.sensor, "peak": h.peak_c,
                                  "slope": h.slope_c_per_min, "first": h.first_c, "last": h.last_c, "n": h.n})
    verdicts = [v.__dict__ for v in fabric.load_verdicts(fabric.load_rows(run, info))]
    return {"pictures": pictures, "headers": headers, "rows": rows, "heat": heat_rows[:400],
            "heat_total": len(heat_rows), "verdicts": verdicts}
