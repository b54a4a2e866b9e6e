"""AMD GPU tools: ``amd-smi topology``, ``rocm-smi --showtopo`` / ``--showtoponuma``, ``rocm-smi --showtemp``.

Neither topology lists NICs (unlike ``nvidia-smi topo -m``): they give the GPUs (their BDFs, in
GPU index order) and each GPU's NUMA node; the NIC <-> GPU relation comes from the PCI paths in
sysfs (``telemetry/rails.py``).
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, to_float, to_int

_BDF = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_TABLE = re.compile(r"^\s*([A-Z][A-Z0-9 /-]*?) TABLE:\s*$")
_ROCM_TITLE = re.compile(r"^=+\s*(.*?)\s*=+$")
_ROCM_NUMA = re.compile(r"^GPU\[(\d+)\]\s*:\s*\(Topology\)\s*Numa (Node|Affinity):\s*(-?\d+)")
_ROCM_TEMP = re.compile(r"^(?:GPU\[(\d+)\]\s*:\s*)?Temperature \(Sensor ([^)]+)\) \(C\):\s*([-\d.]+)")


def parse_amd_smi_topology(text: str) -> dict[str, Any]:
    """``amd-smi topology`` (human-readable): ``gpus`` (BDFs; GPU index = position) and ``tables``
    (``LINK TYPE`` -> row BDF -> column BDF -> ``XGMI`` ...; also WEIGHT, HOPS, ACCESS, NUMA BW)."""
    tables: dict[str, dict[str, dict[str, str]]] = {}
    gpus: list[str] = []
    name: str | None = None
    cols: list[str] = []
    for line in clean_text(text).splitlines():
        m = _TABLE.match(line)
        if m:
            name, cols = m.group(1).strip(), []
            tables[name] = {}
            continue
        cells = line.split()
        if name is None or not cells:
            continue
        if all(_BDF.match(c) for c in cells):
            cols = cells
            gpus = gpus or list(cells)
        elif _BDF.match(cells[0]) and cols:
            tables[name][cells[0]] = dict(zip(cols, cells[1:], strict=False))
        else:
            name = None  # the legend or other text ends a table
    return {"gpus": gpus, "tables": tables}


def parse_rocm_smi_topo(text: str) -> dict[str, Any]:
    """``rocm-smi --showtopo`` (or ``--showtoponuma``): ``numa`` (GPU index -> NUMA node), and the
    GPU x GPU ``tables`` it prints (``Weight``, ``Hops``, ``Link Type`` -> GPUi -> GPUj -> value)."""
    tables: dict[str, dict[str, dict[str, str]]] = {}
    numa: dict[int, int] = {}
    affinity: dict[int, int] = {}
    section: str | None = None
    cols: list[str] = []
    for line in clean_text(text).splitlines():
        title = _ROCM_TITLE.match(line.strip())
        if title:
            section = re.sub(r" between two GPUs$", "", title.group(1))
            cols = []
            continue
        m = _ROCM_NUMA.match(line.strip())
        if m:
            (numa if m.group(2) == "Node" else affinity)[int(m.group(1))] = int(m.group(3))
            continue
        cells = line.split()
        if not cells or section is None:
            continue
        if all(re.fullmatch(r"GPU\d+", c) for c in cells):
            cols = cells
            tables.setdefault(section, {})
        elif re.fullmatch(r"GPU\d+", cells[0]) and cols:
            tables[section][cells[0]] = dict(zip(cols, cells[1:], strict=False))
    return {"numa": numa, "numa_affinity": affinity, "tables": tables}


def parse_rocm_smi_temp(text: str) -> list[dict[str, Any]]:
    """``rocm-smi --showtemp``: one record per GPU and sensor (``edge``, ``junction``, ``memory``);
    ``gpu`` is None where the lines carry no ``GPU[N]`` prefix."""
    out: list[dict[str, Any]] = []
    for line in clean_text(text).splitlines():
        m = _ROCM_TEMP.match(line.strip())
        if m and to_float(m.group(3)) is not None:
            out.append({"gpu": to_int(m.group(1)) if m.group(1) else None, "sensor": m.group(2),
                        "temperature_c": to_float(m.group(3))})
    return out


_ROCM_POWER = re.compile(r"^(?:GPU\[(\d+)\]\s*:\s*)?((?:Average|Current|Max)[\w ]*? Power)\s*\(W\):\s*([-\d.]+)")


def parse_rocm_smi_power(text: str) -> list[dict[str, Any]]:
    """``rocm-smi --showpower`` / ``--showmaxpower`` lines (``Average Graphics Package Power (W)``,
    ROCm 6's ``Current Socket Graphics Package Power (W)``, ``Max Graphics Package Power (W)``)."""
    out: list[dict[str, Any]] = []
    for line in clean_text(text).splitlines():
        m = _ROCM_POWER.match(line.strip())
        if m and to_float(m.group(3)) is not None:
            out.append({"gpu": to_int(m.group(1)) if m.group(1) else None,
                        "reading": re.sub(r"[^0-9a-z]+", "_", m.group(2).lower()).strip("_"),
                        "power_w": to_float(m.group(3))})
    return out


def parse_rocm_smi(text: str) -> dict[str, Any]:
    """Any ``rocm-smi`` text (``--showtemp``, ``--showpower``, ``--showtopo[numa]``, or several in
    one): each section read by its reader; what a section did not print is absent."""
    out: dict[str, Any] = {}
    temps = parse_rocm_smi_temp(text)
    power = parse_rocm_smi_power(text)
    topo = parse_rocm_smi_topo(text)
    if temps:
        out["temperatures"] = temps
    if power:
        out["power"] = power
    if topo["numa"] or topo["tables"]:
        out["topology"] = topo
    return out


PARSERS = {"amd-smi-topology": parse_amd_smi_topology, "rocm-smi-topo": parse_rocm_smi_topo,
           "rocm-smi-temp": parse_rocm_smi_temp, "rocm-smi-power": parse_rocm_smi_power,
           "rocm-smi": parse_rocm_smi}
READS = {"rocm-smi": "rocm-smi [--showtemp] [--showpower] [--showtopo|--showtoponuma] (ROCm 5.x-6.x): temperatures, "
                     "package power and topology sections, in one text or apart",
         "rocm-smi-power": "rocm-smi --showpower / --showmaxpower (ROCm 5.x-6.x)"}
