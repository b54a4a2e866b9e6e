"""The "Power" section of the single-run report: node watts over time (each host's BMC) beside the
NIC throughput the samplers saw, the run's energy per TB moved and W per Gbit/s, energy per step
and host, each BMC's state ("unavailable" with its one line where it refused or did not answer), and the
power of devices that expose it to hwmon (NIC, module) per step and host. For ``bench compare``
(``comparison_power``): each run's node watts over time and its energy figures side by side.

Data comes from ``results/power.py`` and ``results/runview.sampler_series``; strings reach the page
through the autoescaping template or ``charts`` (which escapes what it draws)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchharness.report import charts
from benchharness.results import power, runview
from benchharness.results.store import RunDir


def _figure(per_host: dict[str, list[tuple[float, float]]], t0: float, title: str, y_label: str) -> dict[str, Any] | None:
    lines = [charts.Series(name=h, points=charts.downsample([(t - t0, v) for t, v in pts]))
             for h, pts in sorted(per_host.items()) if pts]
    svg = charts.line_chart(lines, title=title, x_label="time since first reading [s]", y_label=y_label)
    return {"svg": svg, "caption": title} if svg else None


def power_section(run: RunDir) -> dict[str, Any] | None:
    """The section's data; None when no host of the run names a BMC."""
    states = power.bmc_states(run)
    rows = power.power_rows(run)
    devices = power.device_power(run)
    if not states and not rows and not devices:
        return None
    watts = power.power_series(run)
    net = {h: pts for h, pts in runview.sampler_series(run).get("net_gbps", {}).items() if h in watts}
    starts = [pts[0][0] for pts in (*watts.values(), *net.values()) if pts]
    t0 = min(starts, default=0.0)
    figures = [f for f in (_figure(watts, t0, "Node power per host (BMC)", "node_power_w [W]"),
                           _figure(net, t0, "NIC throughput per host (rx+tx, sampler)", "net_gbps [Gbit/s]")) if f]
    steps = [{"step": r.get("step"), "test": r.get("test"), "host": r.get("host"),
              "w_avg": r.get("node_power_w"), "w_max": r.get("node_power_w_max"),
              "j": r.get("node_energy_j"), "wh": r.get("node_energy_wh"), "readings": r.get("power_readings"),
              "source": r.get("power_source")} for r in rows]
    bmcs = [{"host": h, **s} for h, s in sorted(states.items())]
    return {"figures": figures, "run": power.run_power(run), "steps": steps, "bmcs": bmcs, "devices": devices}


def comparison_power(runs: Sequence[RunDir], labels: Sequence[str]) -> dict[str, Any] | None:
    """The comparison's "Power" section: each run's BMC node watts over time since its first reading
    (one colour per run, one line per host), and per run the figures of ``results/power.run_power``
    (mean node power, energy per TB moved, W per Gbit/s) or why it has none; None when no run
    stored a reading."""
    series, rows = [], []
    for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
        watts = power.power_series(run)
        t0 = min((pts[0][0] for pts in watts.values() if pts), default=0.0)
        for k, (host, pts) in enumerate(sorted(watts.items())):
            series.append(charts.Series(name=f"{label} · {host}", color=i, dash=k,
                                        points=charts.downsample([(t - t0, w) for t, w in pts])))
        rows.append({"label": label, **power.run_power(run)})
    if not series:
        return None
    svg = charts.line_chart(series, title="Node power per run and host (BMC)", x_label="time since the run's first reading [s]",
                            y_label="node_power_w [W]")
    figure = {"svg": svg, "caption": "BMC node power over each run, one colour per run and a line per host "
                                     "(results/power.py)"} if svg else None
    return {"figure": figure, "rows": rows}
