"""GPU temperatures and clock throttling over a step, from the sampler's raw GPU tool outputs.

On a host with GPUs (inventory ``gpus``; vendor ``gpu_vendor``, default nvidia) the sampler runs
with ``--gpu VENDOR`` and keeps the tool's text raw (``onhost/sampler.py`` ``GPU_COMMANDS``):
every interval the temperatures, at the step's start and end the clock throttle state. They are
parsed here, on the controller, by the parsers the probe's outputs use:

- temperatures become sensors ``gpu<i>/<tool>/<sensor>`` beside the NIC's in each sample line,
  so the heat limits (``temp_peak_c``, ``temp_slope_c_per_min``) judge them as any other;
- the throttle state becomes ``telemetry/gpu/<step>/<host>.json``: the reasons active at the end,
  and each reason whose counter grew during the step (nvidia-smi's "Clocks Event Reasons
  Counters" in microseconds, amd-smi's ``*_ACCUMULATED``), so a throttle that came and went
  within the step is still seen. ``results/fabric.py`` judges it with ``throttle:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchharness.core.model import Host
from benchharness.telemetry.parsers.amd_gpu import parse_rocm_smi_temp
from benchharness.telemetry.parsers.gpu import parse_nvidia_query
from benchharness.telemetry.parsers.gpu_throttle import parse_amd_throttle, parse_performance
from benchharness.tools.mpi_launch import gpu_count

#: the fields of the sampler's nvidia-smi temperature query, in its order
NVIDIA_TEMP_FIELDS = ["index", "temperature.gpu", "temperature.memory"]


def sampler_gpu_vendor(host: Host) -> str | None:
    """``nvidia`` or ``amd`` for a host with GPUs (the sampler's ``--gpu``), else None."""
    try:
        if not gpu_count(host):
            return None
    except ValueError:  # the inventory's own check names a malformed gpus=
        return None
    return "amd" if str(host.var("gpu_vendor") or "nvidia").lower() == "amd" else "nvidia"


def _tool(raw: Mapping[str, Any]) -> str:
    return str(raw.get("cmd") or "").split(" ")[0]


def interval_temperatures(raw: Any) -> dict[str, float]:
    """Sensor name -> °C from one interval's ``gpu_raw`` (empty when the tool failed)."""
    if not isinstance(raw, Mapping) or raw.get("error") or not isinstance(raw.get("text"), str):
        return {}
    out: dict[str, float] = {}
    if _tool(raw) == "nvidia-smi":
        for row in parse_nvidia_query(raw["text"], NVIDIA_TEMP_FIELDS):
            for field, sensor in (("temperature_c", "core"), ("memory_temperature_c", "memory")):
                value = row.get(field)
                if isinstance(value, int | float) and row.get("index") is not None:
                    out[f"gpu{row['index']}/nvidia-smi/{sensor}"] = float(value)
    else:
        for rec in parse_rocm_smi_temp(raw["text"]):
            if rec.get("temperature_c") is not None:
                out[f"gpu{rec['gpu'] if rec['gpu'] is not None else 0}/rocm-smi/{rec['sensor']}"] = \
                    float(rec["temperature_c"])
    return out


def _parse_throttle(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    text = str(raw.get("text") or "")
    return parse_performance(text) if _tool(raw) == "nvidia-smi" else parse_amd_throttle(text)


def throttle_record(start: Any, end: Any) -> dict[str, Any] | None:
    """What ``telemetry/gpu/<step>/<host>.json`` holds: ``{"gpus": [{"gpu", "active"}], "source"}``,
    or ``{"gpus": [], "source", "error"}`` when the tool could not be read; None without GPU data."""
    if not isinstance(end, Mapping):
        return None
    source = str(end.get("cmd") or "GPU tool")
    if end.get("error"):
        return {"gpus": [], "source": source, "error": str(end["error"])}
    after = _parse_throttle(end)
    if not after:
        return {"gpus": [], "source": source, "error": "no clock throttle state in its output"}
    before = {g["gpu"]: g for g in _parse_throttle(start)} if isinstance(start, Mapping) and not start.get(
        "error") else {}
    gpus = []
    for g in after:
        active = list(g["active"])
        was = before.get(g["gpu"], {})
        for key, unit in (("counters_us", "us"), ("accumulated", "")):
            for cause, value in (g.get(key) or {}).items():
                grew = value - (was.get(key) or {}).get(cause, value)
                words = cause.lower().split()[:2]
                if grew > 0 and not any(a.lower().split()[:len(words)] == words for a in g["active"]):
                    amount = f"{grew / 1e6:.3g} s" if unit == "us" else f"+{grew} accumulated"
                    active.append(f"{cause} during the step ({amount})")
        gpus.append({"gpu": g["gpu"], "active": active})
    return {"gpus": gpus, "source": source}
