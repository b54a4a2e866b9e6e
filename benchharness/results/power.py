"""Measured node power in a run directory (``telemetry/power.py`` writes it; ``docs/power.md``).

Per step and host: the ``kind: power`` samples (``node_power_w``, ``node_energy_j``,
``node_energy_wh``). Per run: the energy of the steps that moved data against the data they
moved, ``energy_per_tb_wh`` (Wh per 10^12 bytes) and ``w_per_gbps`` (watts per Gbit/s, which is
joules per Gbit), for the comparison; the readings over time for the report; each BMC's state.
Besides the node's BMC: the power of devices that expose it to hwmon (a NIC, a transceiver
module), as the samplers read it (``power_w`` of their lines), per step, host and sensor.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from benchharness.results.runview import sampler_files
from benchharness.results.store import RunDir


def power_rows(run: RunDir) -> list[dict[str, Any]]:
    """The run's ``kind: power`` samples (one per step and host with a readable BMC)."""
    return run.samples_of_kind("power")


def bmc_states(run: RunDir) -> dict[str, dict[str, Any]]:
    """host -> {bmc, status (ok | unavailable | not available | misconfigured), message, source}."""
    found = run.read_json("telemetry/power/bmcs.json", {}) or {}
    return found if isinstance(found, dict) else {}


def bits_moved(sample: Mapping[str, Any]) -> float | None:
    """Bits a summary sample moved: its ``bytes``, else ``bw_avg_gbps`` over ``duration_s``."""
    if isinstance(sample.get("bytes"), int | float) and sample["bytes"] > 0:
        return float(sample["bytes"]) * 8
    bw, secs = sample.get("bw_avg_gbps"), sample.get("duration_s")
    if isinstance(bw, int | float) and isinstance(secs, int | float) and bw > 0 and secs > 0:
        return float(bw) * float(secs) * 1e9
    return None


def run_power(run: RunDir) -> dict[str, Any]:
    """The run's power figures: ``node_energy_wh`` (all steps, all hosts with a BMC),
    ``node_power_w`` (mean over steps of the hosts' summed power), and over the steps that moved
    data ``energy_per_tb_wh`` and ``w_per_gbps``; ``not_measured`` names why a figure is missing."""
    rows = power_rows(run)
    if not rows:
        states = bmc_states(run)
        why = "; ".join(str(s.get("message")) for s in states.values() if s.get("message")) or \
            "no host of the run names a BMC (bmc_address)"
        return {"not_measured": why}
    per_step: dict[str, float] = {}
    watts: dict[str, float] = {}
    for r in rows:
        per_step[r["step"]] = per_step.get(r["step"], 0.0) + float(r["node_energy_j"])
        watts[r["step"]] = watts.get(r["step"], 0.0) + float(r["node_power_w"])
    moved: dict[str, float] = {}
    for s in run.summary_samples():
        bits = bits_moved(s)
        if bits is not None and s.get("step") in per_step:
            moved[s["step"]] = moved.get(s["step"], 0.0) + bits
    out: dict[str, Any] = {"node_energy_wh": sum(per_step.values()) / 3600.0,
                           "node_power_w": sum(watts.values()) / len(watts),
                           "power_hosts": len({r["host"] for r in rows}), "power_steps": len(per_step)}
    joules = sum(per_step[s] for s in moved)
    bits = sum(moved.values())
    if bits > 0:
        out["energy_per_tb_wh"] = joules / 3600.0 / (bits / 8 / 1e12)
        out["w_per_gbps"] = joules / (bits / 1e9)
        out["tb_moved"] = bits / 8 / 1e12
    else:
        out["not_measured"] = "no step with power readings reported the data it moved"
    return out


def power_series(run: RunDir) -> dict[str, list[tuple[float, float]]]:
    """host -> [(time, node watts)] of every stored reading, time-sorted."""
    out: dict[str, list[tuple[float, float]]] = {}
    base = run.path / "telemetry" / "power"
    for path in sorted(base.glob("*/*.jsonl")) if base.is_dir() else []:
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("node_power_w"), int | float):
                out.setdefault(str(rec.get("host") or path.stem), []).append((float(rec["ts"]), float(rec["node_power_w"])))
    for points in out.values():
        points.sort()
    return out


def device_power(run: RunDir) -> list[dict[str, Any]]:
    """Per step, host and hwmon power sensor: ``device_power_w_avg``, ``device_power_w_max`` and the
    readings behind them (sampler lines' ``power_w``; empty where no host exposes such a sensor)."""
    out = []
    for step, host, sampled in sampler_files(run):
        per: dict[str, list[float]] = {}
        for line in sampled.lines:
            for sensor, watts in line.power_w.items():
                per.setdefault(sensor, []).append(watts)
        out += [{"step": step, "host": host, "sensor": sensor, "device_power_w_avg": sum(v) / len(v),
                 "device_power_w_max": max(v), "readings": len(v)} for sensor, v in sorted(per.items())]
    return out
