"""GPU tools: ``nvidia-smi --query-gpu`` CSV, ``nvidia-smi topo -m``, ``amd-smi static/metric --json``."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, to_float, to_int

#: nvidia-smi query fields -> names with units; anything else keeps its dotted name with ``_``.
NVIDIA_FIELDS = {
    "index": "index", "name": "model", "pci.bus_id": "bus_id", "uuid": "uuid",
    "driver_version": "driver_version", "temperature.gpu": "temperature_c",
    "temperature.memory": "memory_temperature_c", "power.draw": "power_w",
    "power.limit": "power_limit_w", "pcie.link.gen.current": "pcie_gen_current",
    "pcie.link.gen.max": "pcie_gen_max", "pcie.link.width.current": "pcie_width_current",
    "pcie.link.width.max": "pcie_width_max", "clocks.sm": "clock_sm_mhz", "clocks.mem": "clock_mem_mhz",
    "clocks.gr": "clock_graphics_mhz", "clocks.max.sm": "clock_sm_max_mhz",
    "clocks.max.mem": "clock_mem_max_mhz", "memory.total": "memory_total_mib",
    "memory.used": "memory_used_mib", "utilization.gpu": "utilization_pct",
}
_TEXT_FIELDS = {"model", "bus_id", "uuid", "driver_version"}


_FIELD = re.compile(r"^[A-Za-z_][\w.]*(?:\s*\[[^\]]*\])?$")


def _value(name: str, raw: str) -> Any:
    raw = raw.strip()
    # "[N/A]", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]" ...
    if raw.startswith("[") or raw in ("N/A", "Not Supported", ""):
        return None
    if name in _TEXT_FIELDS:
        return raw
    number = to_float(raw)
    if number is None:
        return raw
    return int(number) if number == int(number) and "." not in raw.split()[0] else number


def parse_nvidia_query(text: str, fields: list[str] | None = None) -> list[dict[str, Any]]:
    """``nvidia-smi --query-gpu=... --format=csv`` (header line) or ``noheader`` with ``fields``.

    Units in the header (``power.draw [W]``) or not (``nounits``) both work; lines before the
    header (the command line, a prompt) are skipped. Text that has no CSV header, such as
    ``nvidia-smi -q`` or a ``noheader`` capture parsed without ``fields``, gives ``[]``.
    """
    rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(clean_text(text).strip()), skipinitialspace=True)
            if any(c.strip() for c in r)]
    if fields is None:
        start = next((i for i, r in enumerate(rows) if all(_FIELD.match(c) for c in r)), None)
        if start is None:
            return []
        fields = [re.sub(r"\s*\[.*\]$", "", h) for h in rows[start]]
        rows = rows[start + 1:]
    names = [NVIDIA_FIELDS.get(f, f.replace(".", "_")) for f in fields]
    return [{n: _value(n, v) for n, v in zip(names, row, strict=False)} for row in rows]


def parse_nvidia_topo(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m``: the matrix, CPU/NUMA affinity per GPU, and the NIC legend.

    Returns ``devices`` (column names such as GPU0, NIC0), ``matrix`` (row -> column -> link
    type such as PIX, PXB, PHB, NODE, SYS, NV18), ``affinity`` (GPU -> cpus / numa) and ``nics``
    (NIC0 -> mlx5_0).
    """
    lines = clean_text(text).splitlines()
    nics: dict[str, str] = {}
    for line in lines:
        m = re.match(r"^\s*(NIC\d+):\s*(\S+)\s*$", line)
        if m:
            nics[m.group(1)] = m.group(2)
    header_i = next((i for i, ln in enumerate(lines) if re.match(r"^\s+GPU0\b", ln)), None)
    if header_i is None:
        return {"devices": [], "matrix": {}, "affinity": {}, "nics": nics}
    header = lines[header_i]
    cols = [c.strip() for c in header.strip().split("\t") if c.strip()] if "\t" in header else (
        re.split(r"\s{2,}", header.strip()))
    devices = [c for c in cols if re.match(r"^(GPU|NIC|mlx|CPU|ib|bnxt|ionic)\S*$", c) and " " not in c]
    extra = cols[len(devices):]
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, Any]] = {}
    for line in lines[header_i + 1:]:
        if not line.strip() or line.startswith("Legend"):
            break
        cells = [c.strip() for c in line.split("\t")] if "\t" in line else line.split()
        cells = [c for c in cells if c != ""]
        row, values = cells[0], cells[1:]
        matrix[row] = dict(zip(devices, values[: len(devices)], strict=False))
        rest = values[len(devices):]
        if rest:
            info = dict(zip(extra, rest, strict=False))
            affinity[row] = {
                "cpus": info.get("CPU Affinity"),
                "numa": to_int(info.get("NUMA Affinity")),
                "gpu_numa_id": to_int(info.get("GPU NUMA ID")),
            }
    return {"devices": devices, "matrix": matrix, "affinity": affinity, "nics": nics}


def _v(item: Any) -> Any:
    """amd-smi values are either scalars or ``{"value": x, "unit": u}``; N/A is None."""
    if isinstance(item, dict) and "value" in item:
        item = item["value"]
    if isinstance(item, str) and item.strip().upper() in ("N/A", ""):
        return None
    return item


def parse_amd_smi(text: str) -> list[dict[str, Any]]:
    """``amd-smi static --json`` or ``amd-smi metric --json`` (bare list or ``{"gpu_data": [...]}``)."""
    data = json.loads(text)
    if isinstance(data, dict):
        data = data.get("gpu_data", [data])
    gpus: list[dict[str, Any]] = []
    for item in data:
        asic, bus = item.get("asic") or {}, item.get("bus") or {}
        temp, power = item.get("temperature") or {}, item.get("power") or {}
        pcie, clock = item.get("pcie") or {}, item.get("clock") or {}
        speed = _v(bus.get("max_pcie_speed"))
        gpu: dict[str, Any] = {
            "index": item.get("gpu"), "model": asic.get("market_name"), "bus_id": bus.get("bdf"),
            "pcie_width_max": to_int(_v(bus.get("max_pcie_width"))),
            "pcie_speed_max_gts": to_float(speed),
            "pcie_width_current": to_int(_v(pcie.get("width"))),
            "pcie_speed_current_gts": to_float(_v(pcie.get("speed"))),
            "temperature_c": to_float(_v(temp.get("hotspot", temp.get("edge")))),
            "temperature_edge_c": to_float(_v(temp.get("edge"))),
            "memory_temperature_c": to_float(_v(temp.get("mem"))),
            "power_w": to_float(_v(power.get("socket_power"))),
            "numa_node": to_int((item.get("numa") or {}).get("node")),
        }
        gfx = clock.get("gfx_0") or clock.get("gfx") or {}
        if isinstance(gfx, dict):
            gpu["clock_gfx_mhz"] = to_float(_v(gfx.get("clk")))
        mem = clock.get("mem_0") or {}
        if isinstance(mem, dict):
            gpu["clock_mem_mhz"] = to_float(_v(mem.get("clk")))
        gpus.append({k: v for k, v in gpu.items() if v is not None})
    return gpus


PARSERS = {"nvidia-smi": parse_nvidia_query, "nvidia-smi-topo": parse_nvidia_topo, "amd-smi": parse_amd_smi}
