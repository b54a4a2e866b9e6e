"""Temperatures judged against their kind's limits: NIC ASIC, transceiver module, GPU, host.

``TEMPERATURE_LIMITS`` are the (warn, fail) limits per sensor kind; ``judge_sensor`` judges the
hottest reading of a sampler sensor during a run (the report), ``amd_temperatures`` reads AMD GPU
temperatures from the probe's ``amd-smi`` / ``rocm-smi`` output (``host_checks.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchharness.telemetry.parsers.amd_gpu import parse_rocm_smi_temp
from benchharness.telemetry.parsers.gpu import parse_amd_smi
from benchharness.telemetry.rail_facts import Finding

#: (warn, fail) in °C. A NIC ASIC sensor with its own ``crit`` uses (crit - 10, crit) instead;
#: ``host`` is any other sensor (CPU, board) the samplers read during a run.
TEMPERATURE_LIMITS: dict[str, tuple[float, float]] = {
    "module": (70.0, 80.0),
    "nic": (95.0, 105.0),
    "gpu": (83.0, 90.0),
    "host": (85.0, 95.0),
}


def amd_temperatures(gpus: Mapping[str, Any]) -> list[tuple[int | None, str, float]]:
    """(GPU index, sensor, °C) from ``amd-smi metric --json`` (hotspot, else edge) or ``rocm-smi --showtemp``
    (junction, else edge)."""
    out: list[tuple[int | None, str, float]] = []
    if gpus.get("metric_json"):
        try:
            for g in parse_amd_smi(str(gpus["metric_json"])):
                if g.get("temperature_c") is not None:
                    out.append((g.get("index"), "hotspot", float(g["temperature_c"])))
        except ValueError:
            pass
    if not out and gpus.get("rocm_smi_temp"):
        by_gpu: dict[int | None, dict[str, float]] = {}
        for rec in parse_rocm_smi_temp(str(gpus["rocm_smi_temp"])):
            by_gpu.setdefault(rec["gpu"], {})[rec["sensor"]] = rec["temperature_c"]
        for gpu, sensors in by_gpu.items():
            name = next((s for s in ("junction", "edge", "memory") if s in sensors), next(iter(sensors)))
            out.append((gpu, name, sensors[name]))
    return out


def sensor_kind(name: str) -> str:
    """Which limit a sampler sensor (``hwmon/hwmon3/mlx5/asic``, ``thermal/...``) is judged by."""
    low = name.lower()
    if any(k in low for k in ("amdgpu", "nvidia", "gpu")):
        return "gpu"
    if any(k in low for k in ("sfp", "qsfp", "module", "transceiver")):
        return "module"
    if any(k in low for k in ("mlx", "bnxt", "ionic", "ice", "irdma", "nic")):
        return "nic"
    return "host"


def judge_sensor(host: str, name: str, peak: float,
                 limits: Mapping[str, tuple[float, float]] | None = None) -> Finding:
    """The hottest reading of one sensor during a run, against its kind's (warn, fail) limits."""
    kind = sensor_kind(name)
    warn, fail = dict(TEMPERATURE_LIMITS, **(limits or {}))[kind]
    status = "fail" if peak >= fail else "warn" if peak >= warn else "pass"
    return Finding(host, None, None, "temperature", status, peak, warn,
                   f"{name} reached {peak:.0f} °C during the run ({kind}: warn {warn:g}, fail {fail:g})",
                   peak, fail if status == "fail" else warn)
