"""AMD GPU tools: ``amd-smi topology``, ``rocm-smi --showtopo`` / ``--showtoponuma``, ``rocm-smi --showtemp``.

Neither topology lists NICs (unlike ``nvidia-smi topo -m``): they give the GPUs (their BDFs, in
GPU index order) and each GPU's NUMA node; the NIC <-> GPU relation comes from the PCI paths in
sysfs (``telemetry/rails.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, to_float, to_int, unreadable

_BDF = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_TABLE = re.compile(r"^\s*([A-Z][A-Z0-9 /-]*?) TABLE:\s*$")
_ROCM_TITLE = re.compile(r"^=+\s*(.*?)\s*=+$")
_ROCM_NUMA = re.compile(r"^GPU\[(\d+)\]\s*:\s*\(Topology\)\s*Numa (Node|Affinity):\s*(-?\d+)")
_ROCM_TEMP = re.compile(r"^(?:GPU\[(\d+)\]\s*:\s*)?Temperature \(Sensor ([^)]+)\) \(C\):\s*([-\d.]+)")


#: ``amd-smi topology --json`` keys -> the text form's table names: ROCm 6.0 / 6.1.0 give each GPU
#: ``{"link_accessibility": {"gpu_1": ...}, "weight": ..., ...}``, ROCm 6.1.1 on a ``links`` list of
#: ``{"gpu", "bdf", "weight", "link_status", "link_type", "num_hops", "bandwidth", ...}``
_AMD_TOPO_JSON = {"link_accessibility": "ACCESS", "link_status": "ACCESS", "weight": "WEIGHT", "hops": "HOPS",
                  "num_hops": "HOPS", "link_type": "LINK TYPE", "numa_bandwidth": "NUMA BW",
                  "bandwidth": "NUMA BW", "coherent": "CACHE COHERANCY", "atomics": "ATOMICS", "dma": "DMA",
                  "bi_dir": "BI-DIRECTIONAL"}


def _amd_topology_json(text: str) -> dict[str, Any] | None:
    """``amd-smi topology --json``, either layout; None when the text holds no JSON list."""
    body = clean_text(text)
    start = body.find("[")
    while start >= 0 and not body[start + 1:].lstrip().startswith(("{", "]")):
        start = body.find("[", start + 1)
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError as e:
        at = body[:start].count("\n") + e.lineno
        raise unreadable(at, body.splitlines()[at - 1], f"amd-smi topology JSON: {e.msg}") from None
    if not isinstance(data, list) or not all(isinstance(g, dict) and "gpu" in g for g in data):
        at = body[:start].count("\n") + 1
        raise unreadable(at, body.splitlines()[at - 1], "amd-smi topology JSON is not a list of GPUs")
    name = {g["gpu"]: str(g.get("bdf") or f"gpu_{g['gpu']}") for g in data}
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for g in data:
        row = name[g["gpu"]]
        for link in g.get("links") or []:
            col = str(link.get("bdf") or name.get(link.get("gpu"), f"gpu_{link.get('gpu')}"))
            for key, value in link.items():
                if key in _AMD_TOPO_JSON:
                    tables.setdefault(_AMD_TOPO_JSON[key], {}).setdefault(row, {})[col] = str(value)
        for key, table in g.items():
            if key in _AMD_TOPO_JSON and isinstance(table, dict):
                for peer, value in table.items():
                    m = re.fullmatch(r"gpu_(\d+)", str(peer))
                    peer_name = name.get(int(m.group(1))) if m else None
                    col = peer_name if peer_name is not None else str(peer)
                    tables.setdefault(_AMD_TOPO_JSON[key], {}).setdefault(row, {})[col] = str(value)
    return {"gpus": list(name.values()), "tables": tables}


def parse_amd_smi_topology(text: str) -> dict[str, Any]:
    """``amd-smi topology`` (human-readable): ``gpus`` (BDFs; GPU index = position) and ``tables``
    (``LINK TYPE`` -> row BDF -> column BDF -> ``XGMI`` ...; also WEIGHT, HOPS, ACCESS, NUMA BW).
    ``--json`` gives the same (``gpu_N`` for a GPU whose BDF the document does not give)."""
    found = _amd_topology_json(text)
    if found is not None:
        return found
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


_ROCM_POWER = re.compile(r"^(?:GPU\[(\d+)\]\s*:\s*)?((?:Average|Current|Max)[\w ]*? Power)\s*\(W\):\s*(.*?)\s*$")
_ROCM_POWER_KEY = re.compile(r"^((?:Average|Current|Max)[\w ]*? Power) \(W\)$")


def _rocm_power_record(gpu: int | None, label: str, raw: str) -> dict[str, Any] | None:
    """A power reading; ``N/A (Secondary die)`` (the second GCD of an MI250/MI250X, whose power the
    primary die's reading includes) is kept with ``secondary_die`` and no figure; other non-numbers
    (``N/A``, ``Unsupported``) are no reading."""
    reading = re.sub(r"[^0-9a-z]+", "_", label.lower()).strip("_")
    value = raw.strip()
    if re.fullmatch(r"-?\d+(?:\.\d+)?", value):
        return {"gpu": gpu, "reading": reading, "power_w": float(value)}
    if "secondary die" in value.lower():
        return {"gpu": gpu, "reading": reading, "secondary_die": True}
    return None


def _rocm_json(text: str) -> dict[str, Any] | None:
    """``rocm-smi ... --json``: ``{"card0": {"Label (unit)": "value", ...}, "system": {...}}``; None when
    the text is not one JSON object (a prompt or banner around it is allowed)."""
    body = "\n".join(ln for ln in clean_text(text).splitlines() if ln.strip())
    start = body.find("{")
    if start < 0 or body[:start].strip().endswith(":"):
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(body[start:])
    except json.JSONDecodeError:
        return None
    return data if isinstance(data, dict) and any(re.fullmatch(r"card\d+", k) for k in data) else None


def parse_rocm_smi_power(text: str) -> list[dict[str, Any]]:
    """``rocm-smi --showpower`` (``-P``) / ``--showmaxpower`` lines or their ``--json`` keys: ROCm 5's
    ``Average Graphics Package Power (W)``, ROCm 6's ``Current Socket Graphics Package Power (W)``,
    ``Max Graphics Package Power (W)`` (the cap); ``gpu`` from ``GPU[N]`` / ``cardN`` (None without
    a prefix). A secondary die's ``N/A (Secondary die)`` gives ``secondary_die`` and no figure."""
    data = _rocm_json(text)
    out: list[dict[str, Any]] = []
    if data is not None:
        for card, values in data.items():
            m = re.fullmatch(r"card(\d+)", card)
            if not m or not isinstance(values, dict):
                continue
            for key, raw in values.items():
                label = _ROCM_POWER_KEY.match(str(key))
                record = _rocm_power_record(int(m.group(1)), label.group(1), str(raw)) if label else None
                if record:
                    out.append(record)
        return out
    for line in clean_text(text).splitlines():
        m = _ROCM_POWER.match(line.strip())
        record = _rocm_power_record(to_int(m.group(1)) if m.group(1) else None, m.group(2), m.group(3)) if m else None
        if record:
            out.append(record)
    return out


_CONCISE_HEAD = re.compile(r"^(.*?)\b(?:GPU|Device)\s.*\bTemp\b.*\bSCLK\s+MCLK\s+Fan\s+Perf\s+PwrCap\s+VRAM%\s+GPU%\s*$")
_CONCISE_TEMP = re.compile(r"^(-?\d+(?:\.\d+)?)(?:°C|c|C)$")
_CONCISE_WATTS = re.compile(r"^(\d+(?:\.\d+)?)W$")


def _concise_number(token: str) -> float | None:
    m = re.match(r"^(-?\d+(?:\.\d+)?)\s*(?:°C|c|C|W|Mhz|MHz|%)?$", token)
    return float(m.group(1)) if m else None


def parse_rocm_smi_concise(text: str) -> list[dict[str, Any]]:
    """``rocm-smi`` without options (its "Concise Info" table): one record per GPU row.

    The header differs by version (ROCm 5: ``GPU  Temp  AvgPwr  SCLK ...``, later ``GPU  Temp
    (DieEdge)  AvgPwr``; ROCm 6: ``Device  Node  IDs ... Temp  Power  Partitions`` or ``Device
    [Model : Revision]  Temp  Power  Partitions`` with a second header line and a model-name line
    under each row); every version ends in ``SCLK MCLK Fan Perf PwrCap VRAM% GPU%``, so those are
    read from the row's end and temperature / power from the first ``°C`` (or ``c``) reading and
    the cell after it. A prefix on the header (``node out: ``, ``srun -l``'s ``0: ``) is taken off
    the rows too. ``N/A`` is absent. A row the header cannot account for names its line."""
    rows: list[dict[str, Any]] = []
    prefix: str | None = None
    sensor: str | None = None
    lines = clean_text(text).splitlines()
    for number, line in enumerate(lines, 1):
        head = _CONCISE_HEAD.match(line)
        if head:
            prefix = head.group(1)
            near = line + " " + (lines[number] if number < len(lines) else "")
            found = re.search(r"\((DieEdge|Edge|Junction|Memory|Hotspot)\)", near)
            sensor = {"dieedge": "edge"}.get(found.group(1).lower(), found.group(1).lower()) if found else None
            continue
        if prefix is None:
            continue
        if not line.startswith(prefix):
            continue
        tokens = line[len(prefix):].split()
        if not tokens or not tokens[0].isdigit():
            if tokens and tokens[0].startswith("=") and "End of ROCm SMI Log" in line:
                prefix = None
            continue
        if len(tokens) < 9:
            raise unreadable(number, line, "rocm-smi concise row without its SCLK ... GPU% columns")
        tail = tokens[-7:]
        lead = tokens[1:-7]
        temp_at = next((i for i, t in enumerate(lead) if _CONCISE_TEMP.match(t)), None)
        power: float | None = None
        if temp_at is not None and temp_at + 1 < len(lead):
            power = _concise_number(lead[temp_at + 1])
        elif temp_at is None:
            power = next((_concise_number(t) for t in lead if _CONCISE_WATTS.match(t)), None)
        record = {"gpu": int(tokens[0]), "sensor": sensor,
                  "temperature_c": _concise_number(lead[temp_at]) if temp_at is not None else None,
                  "power_w": power, "sclk_mhz": _concise_number(tail[0]), "mclk_mhz": _concise_number(tail[1]),
                  "fan_pct": _concise_number(tail[2]), "perf": tail[3] if tail[3].lower() != "n/a" else None,
                  "power_cap_w": _concise_number(tail[4]), "vram_pct": _concise_number(tail[5]),
                  "gpu_pct": _concise_number(tail[6])}
        rows.append({k: v for k, v in record.items() if v is not None})
    return rows


_ROCM_PRODUCT = re.compile(r"^GPU\[(\d+)\]\s*:\s*(Card (?:series|model|vendor|SKU)|Subsystem ID|Device Rev|Node ID|"
                           r"GUID|GFX Version)\s*:\s*(.*?)\s*$", re.IGNORECASE)


def parse_rocm_smi_products(text: str) -> list[dict[str, Any]]:
    """``rocm-smi --showproductname`` ("Product Info"): one record per GPU, ``gpu`` and the labels
    it printed in snake case (``card_series`` ``Instinct MI210`` or ``AMD Instinct MI300X OAM``,
    ``card_model``, ``card_vendor``, ``card_sku``; ROCm 6 adds ``subsystem_id``, ``device_rev``,
    ``node_id``, ``guid``, ``gfx_version``), values as printed."""
    found: dict[int, dict[str, Any]] = {}
    for line in clean_text(text).splitlines():
        m = _ROCM_PRODUCT.match(line.strip())
        if m and m.group(3) and m.group(3).upper() != "N/A":
            gpu = int(m.group(1))
            found.setdefault(gpu, {"gpu": gpu})[re.sub(r"[^0-9a-z]+", "_", m.group(2).lower())] = m.group(3)
    return list(found.values())


def parse_rocm_smi(text: str) -> dict[str, Any]:
    """Any ``rocm-smi`` text (the default "Concise Info" table, ``--showtemp``, ``--showpower``,
    ``--showtopo[numa]``, ``--showproductname``, or several in one): each section read by its
    reader; what a section did not print is absent."""
    out: dict[str, Any] = {}
    concise = parse_rocm_smi_concise(text)
    if concise:
        out["concise"] = concise
    temps = parse_rocm_smi_temp(text)
    power = parse_rocm_smi_power(text)
    topo = parse_rocm_smi_topo(text)
    products = parse_rocm_smi_products(text)
    if products:
        out["products"] = products
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
READS = {"rocm-smi": "rocm-smi (Concise Info table) [--showtemp] [--showpower] [--showtopo|--showtoponuma] "
                     "[--showproductname] (ROCm 5.x-6.x; MI210, MI250/MI250X GCDs, MI300X, DPX partitions): "
                     "temperatures, package power, topology and Product Info (card series, model, SKU, GFX "
                     "version) sections, in one text or apart",
         "rocm-smi-power": "rocm-smi --showpower (-P) / --showmaxpower / -a, text or --json (ROCm 5.x-6.x): Average "
                           "(ROCm 5) or Current Socket (ROCm 6) Graphics Package Power, Max Graphics Package Power, "
                           "a secondary die's N/A (MI250/MI250X)",
         "rocm-smi-temp": "rocm-smi --showtemp / -a Temperature section (ROCm 5.x-6.x): edge, junction, memory "
                          "sensors, with or without the GPU[N] prefix",
         "rocm-smi-topo": "rocm-smi --showtopo / --showtoponuma (ROCm 5.x-6.x): Weight, Hops, Link Type tables "
                          "between GPUs, NUMA node and affinity per GPU",
         "amd-smi-topology": "amd-smi topology (every table, or some: -cndz) (ROCm 6.1-7.x; MI300X): BDF-headed ACCESS, "
                             "WEIGHT, HOPS, LINK TYPE, NUMA BW, CACHE COHERANCY, ATOMICS, DMA, BI-DIRECTIONAL tables; "
                             "--json of ROCm 6.0-6.1.0 (per-GPU gpu_N maps) and 6.1.1+ (links lists with BDFs)"}
