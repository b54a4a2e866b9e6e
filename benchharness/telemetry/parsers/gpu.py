"""GPU tools: ``nvidia-smi --query-gpu`` CSV, ``nvidia-smi topo -m``, ``amd-smi static/metric --json``."""

from __future__ import annotations

import csv
import json
import re
from itertools import pairwise
from typing import Any

from benchharness.telemetry.parsers._common import (
    clean_text,
    is_noise,
    strip_ansi,
    to_float,
    to_int,
    undecorate,
    unreadable,
)

#: nvidia-smi query fields -> names with units; anything else keeps its dotted name with ``_``.
#: The CSV header prints each field's long name (``--query-gpu=clocks.gr`` heads its column
#: ``clocks.current.graphics [MHz]``, ``gpu_name`` heads ``name``), so both spellings are listed
#: (``nvidia-smi --help-query-gpu``).
NVIDIA_FIELDS = {
    "index": "index", "name": "model", "gpu_name": "model", "pci.bus_id": "bus_id", "gpu_bus_id": "bus_id",
    "uuid": "uuid", "gpu_uuid": "uuid", "driver_version": "driver_version", "pstate": "pstate",
    "temperature.gpu": "temperature_c", "temperature.memory": "memory_temperature_c",
    "power.draw": "power_w", "power.limit": "power_limit_w",
    "pcie.link.gen.current": "pcie_gen_current", "pcie.link.gen.max": "pcie_gen_max",
    "pcie.link.width.current": "pcie_width_current", "pcie.link.width.max": "pcie_width_max",
    "clocks.sm": "clock_sm_mhz", "clocks.current.sm": "clock_sm_mhz",
    "clocks.mem": "clock_mem_mhz", "clocks.current.memory": "clock_mem_mhz",
    "clocks.gr": "clock_graphics_mhz", "clocks.current.graphics": "clock_graphics_mhz",
    "clocks.max.sm": "clock_sm_max_mhz", "clocks.max.mem": "clock_mem_max_mhz",
    "clocks.max.memory": "clock_mem_max_mhz", "clocks.max.gr": "clock_graphics_max_mhz",
    "clocks.max.graphics": "clock_graphics_max_mhz",
    "memory.total": "memory_total_mib", "memory.used": "memory_used_mib", "memory.free": "memory_free_mib",
    "utilization.gpu": "utilization_pct", "utilization.memory": "memory_utilization_pct",
    "fan.speed": "fan_speed_pct",
    "pci.device_id": "pci_device_id", "pci.sub_device_id": "pci_sub_device_id",
}
#: identifiers kept as printed (``pci.device_id`` ``0x232110DE`` is a name, not a bitmask)
_TEXT_FIELDS = {"model", "bus_id", "uuid", "driver_version", "pstate", "pci_device_id", "pci_sub_device_id",
                "timestamp", "serial", "vbios_version"}


_FIELD = re.compile(r"^[A-Za-z_][\w.]*(?:\s*\[[^\]]*\])?$")


_QUERY_NUMBER = re.compile(r"^([-+]?\d+(?:\.\d+)?)(?:\s*(?:%|[A-Za-z]+(?:/s)?))?$")


def _value(name: str, raw: str) -> Any:
    """A query cell: a number with or without its unit (``20 %``, ``16.01 W``, ``5934 MiB``), an
    ``0x`` bitmask (``clocks_event_reasons.active``) as its int, anything else (a timestamp, a
    VBIOS version, ``Enabled``, ``P0``) as printed; ``[N/A]`` and the like None."""
    raw = raw.strip()
    # "[N/A]", "[Not Supported]", "[Unknown Error]", "[Insufficient Permissions]" ...
    if raw.startswith("[") or raw in ("N/A", "Not Supported", ""):
        return None
    if name in _TEXT_FIELDS:
        return raw
    if re.fullmatch(r"0x[0-9A-Fa-f]+", raw):
        return int(raw, 16)
    m = _QUERY_NUMBER.match(raw)
    if m is None:
        return raw
    number = float(m.group(1))
    return int(number) if "." not in m.group(1) else number


def _cells(line: str, columns: bool) -> list[str]:
    """A CSV line's values, or a ``column -t`` table row's (cells apart by two blanks or more)."""
    if columns:
        return re.split(r"\s{2,}", line.strip())
    return [c.strip() for c in next(csv.reader([line], skipinitialspace=True))]


def _header(line: str) -> tuple[list[str], bool] | None:
    """(field names, table?) when ``line`` is a query header: every cell a field name, one of
    them nvidia-smi's (``index``) or dotted (``power.draw [W]``); CSV, or ``| column -s, -t``."""
    for columns in (False, True):
        if columns and "," in line:
            continue
        cells = _cells(line, columns)
        names = [re.sub(r"\s*\[.*\]$", "", c) for c in cells]
        if (len(cells) > 1 or not columns) and all(_FIELD.match(c) for c in cells) \
                and any(n in NVIDIA_FIELDS or "." in n for n in names):
            return names, columns
    return None


#: the command itself, in a prompt line or echoed: ``nvidia-smi --query-gpu=index,name --format=csv,noheader``
_QUERY_COMMAND = re.compile(r"nvidia-smi(?:\.exe)?\b.*?--query-gpu[= ]+([\w.,]+)")
_QUERY_FORMAT = re.compile(r"--format[= ]+([\w,]+)")


def _command_fields(line: str) -> tuple[list[str], bool] | None:
    """(fields, noheader?) of an ``nvidia-smi --query-gpu=... --format=...`` command line."""
    m = _QUERY_COMMAND.search(line)
    if m is None:
        return None
    form = _QUERY_FORMAT.search(line)
    fields = [f for f in m.group(1).split(",") if f]
    return fields, form is not None and "noheader" in form.group(1).split(",")


def parse_nvidia_query(text: str, fields: list[str] | None = None) -> list[dict[str, Any]]:
    """``nvidia-smi --query-gpu=... --format=csv`` (header line) or ``noheader`` with ``fields``.

    Units in the header (``power.draw [W]``) or not (``nounits``) both work; values keep their
    number (``20 %`` -> 20), ``[N/A]`` and ``[Not Supported]`` are None, a ``timestamp`` column
    (``2024/01/15 10:01:02.345``) stays as printed. Lines before the header (the command line, a
    prompt) are skipped; a ``| column -s, -t`` table of it reads the same, as does a paste inside a
    terminal's box borders. A ``noheader`` capture reads with ``fields``, or with the fields of the
    ``nvidia-smi --query-gpu=... --format=csv,noheader`` command line printed above it (a prompt
    line or an echo). A blank line ends a table: what follows is read as rows only while it has
    the header's number of cells (``time``'s ``real 0m0,022s``, a second prompt and header start
    over). A row right under its header whose values do not match it names its line (ToolFailure
    ``unreadable``). Text without a header or command, such as ``nvidia-smi -q`` or a bare
    ``noheader`` capture parsed without ``fields``, gives ``[]``.
    """
    columns = False
    names = [NVIDIA_FIELDS.get(f, f.replace(".", "_")) for f in fields] if fields is not None else None
    ended = False  # a blank line since the header: the table may be over
    rows: list[dict[str, Any]] = []
    raw_lines = strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(undecorate(text).split("\n"), 1):
        command = _command_fields(raw_lines[number - 1]) if fields is None and number <= len(raw_lines) else None
        if command is not None:
            names = [NVIDIA_FIELDS.get(f, f.replace(".", "_")) for f in command[0]] if command[1] else None
            columns, ended = False, False
            continue
        if not line.strip():
            ended = names is not None and fields is None
            continue
        found = _header(line) if fields is None else None
        if found is not None:
            names = [NVIDIA_FIELDS.get(f, f.replace(".", "_")) for f in found[0]]
            columns, ended = found[1], False
            continue
        if names is None:
            continue
        cells = _cells(line, columns)
        if len(cells) != len(names):
            if ended:
                names = None  # other text after the table
                continue
            raise unreadable(number, line, f"{len(cells)} values for the {len(names)} fields of the header")
        rows.append({n: _value(n, v) for n, v in zip(names, cells, strict=True)})
    return rows


def _id_list(text: str | None) -> list[int] | None:
    """``"0,3-9,11-17"`` -> ``[0, 3, 4, ..., 17]`` (a ``NUMA Affinity`` cell: one node, or on Grace
    systems such as GB200 a list of ranges); None for ``N/A`` or anything else."""
    if not text or not re.fullmatch(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*", text.strip()):
        return None
    out: list[int] = []
    for part in text.strip().split(","):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


#: the header of a ``topo -m`` matrix: GPU0 then another device or the affinity columns (a row
#: starts ``GPU0  X`` or ``GPU0  NV18``); its leading blanks may be lost in a paste
_TOPO_HEAD = re.compile(r"^\s*GPU0\s+(?:GPU1|NIC0|CPU\s+Affinity|(?!X\b|NV\d|SYS\b|NODE\b|PHB\b|PXB\b|PIX\b)\S*\d)\b")
#: the affinity columns' headings (R4xx: CPU Affinity; R450+: NUMA Affinity; R535+: GPU NUMA ID),
#: also as a writer shortened them ("NUMA", "GPU NUMA")
_TOPO_EXTRA = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA(?:\s+ID)?|NUMA|CPU")
_TOPO_EXTRA_KEY = {"CPU": "CPU Affinity", "NUMA": "NUMA Affinity", "GPU NUMA": "GPU NUMA ID"}
#: a rule a writer drew under the header (``-----``), or a box line
_TOPO_RULE = re.compile(r"^\s*[-=+_|─━]{3,}\s*$")


def parse_nvidia_topo(text: str) -> dict[str, Any]:
    """``nvidia-smi topo -m`` / ``-mp``: the matrix, CPU/NUMA affinity per GPU, and the NIC legend.

    Returns ``devices`` (column names such as GPU0, NIC0, mlx5_0), ``matrix`` (row -> column ->
    link type such as PIX, PXB, PHB, NODE, SYS, NV18), ``affinity`` (GPU -> ``cpus``, ``numa``: the
    one NUMA node, None when the cell lists several, then given as ``numa_nodes``; ``gpu_numa_id``)
    and ``nics`` (NIC0 -> mlx5_0). The header may have lost its leading blanks and its affinity
    headings may be shortened (``NUMA``, ``GPU NUMA``); a rule drawn under it is no row. Several
    nodes' matrices pasted one after another give ``matrices``, one each with its own legend. A row
    short of the header's devices in the middle of a matrix (a wrapped or damaged line) names its
    line (ToolFailure ``unreadable``); the last row of a paste cut short is kept as far as it goes.
    """
    lines = clean_text(text).splitlines()
    headers = [i for i, ln in enumerate(lines) if _TOPO_HEAD.match(ln)]
    if len(headers) > 1:
        cuts = [0, *headers[1:], len(lines)]
        return {"matrices": [parse_nvidia_topo("\n".join(lines[a:b])) for a, b in pairwise(cuts)]}
    nics: dict[str, str] = {}
    for line in lines:
        m = re.match(r"^\s*(NIC\d+):\s*(\S+)\s*$", line)
        if m:
            nics[m.group(1)] = m.group(2)
    if not headers:
        return {"devices": [], "matrix": {}, "affinity": {}, "nics": nics}
    header_i = headers[0]
    tokens = lines[header_i].split()
    devices: list[str] = []
    for cell in tokens:
        if cell == "CPU" or not re.search(r"\d", cell):
            break
        devices.append(cell)
    rest = " ".join(tokens[len(devices):])
    extra = [_TOPO_EXTRA_KEY.get(re.sub(r"\s+", " ", m.group(0)), re.sub(r"\s+", " ", m.group(0)))
             for m in _TOPO_EXTRA.finditer(rest)]
    matrix: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, Any]] = {}
    body = lines[header_i + 1:]
    last = max((i for i, ln in enumerate(body) if ln.strip()), default=-1)
    for i, line in enumerate(body):
        if _TOPO_RULE.match(line):
            continue
        if not line.strip() or line.lstrip().startswith("Legend"):
            break
        cells = line.split()
        row, values = cells[0], cells[1:]
        if len(values) < len(devices) and i != last:
            raise unreadable(header_i + 2 + i, line, f"nvidia-smi topo: {len(values)} cells for the "
                             f"{len(devices)} devices of the header (a wrapped or damaged row)")
        matrix[row] = dict(zip(devices, values[: len(devices)], strict=False))
        rest_cells = values[len(devices):]
        if rest_cells and extra:
            info = dict(zip(extra, rest_cells, strict=False))
            numa_nodes = _id_list(info.get("NUMA Affinity"))
            affinity[row] = {
                "cpus": info.get("CPU Affinity"),
                "numa": numa_nodes[0] if numa_nodes is not None and len(numa_nodes) == 1 else None,
                "gpu_numa_id": to_int(info.get("GPU NUMA ID")),
            }
            if numa_nodes is not None and len(numa_nodes) > 1:
                affinity[row]["numa_nodes"] = numa_nodes
    return {"devices": devices, "matrix": matrix, "affinity": affinity, "nics": nics}


def _v(item: Any) -> Any:
    """amd-smi values are either scalars or ``{"value": x, "unit": u}``; N/A is None."""
    if isinstance(item, dict) and "value" in item:
        item = item["value"]
    if isinstance(item, str) and item.strip().upper() in ("N/A", ""):
        return None
    return item


#: a bracketed note a writer put in a text paste (``[output truncated]``, ``[...]``), not JSON
_AMD_NOTE = re.compile(r"^\s*\[\s*(?:\.\.\.|[A-Za-z][A-Za-z .,_-]*)\s*\]\s*$")


def _amd_documents(text: str) -> list[tuple[int, Any]]:
    """(line number, document) of each JSON document in an ``amd-smi ... --json`` capture.

    What amd-smi prints before its JSON is skipped: a prompt and the command, Python's
    ``SyntaxWarning`` lines from amdsmi_interface.py, ``'CTRL' + 'C' to stop watching output:``
    of ``-w``; watch mode prints one document per interval. Text that starts a document but
    does not parse names its line (ToolFailure ``unreadable``)."""
    lines = strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    docs: list[tuple[int, Any]] = []
    decoder = json.JSONDecoder()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip().startswith(("[", "{")) or is_noise(line) or _AMD_NOTE.match(line):
            i += 1
            continue
        body = "\n".join(lines[i:])
        try:
            doc, end = decoder.raw_decode(body.lstrip())
        except json.JSONDecodeError as e:
            at = i + e.lineno - 1
            raise unreadable(at + 1, lines[at] if at < len(lines) else "", f"amd-smi JSON: {e.msg}") from None
        docs.append((i + 1, doc))
        i += body.lstrip()[:end].count("\n") + 1
    return docs


_AMD_BLOCK = re.compile(r"^(GPU|CPU|CORE):\s*(\d+)\s*$")
_AMD_KEY = re.compile(r"^(\s*)([A-Z][A-Z0-9_ /.-]*?):(?:\s+(.*?))?\s*$")
_AMD_MONITOR_HEAD = re.compile(r"^\s*GPU(?:\s{2,}[A-Z][A-Z0-9_%]*)+\s*$")
#: ``amd-smi monitor`` columns -> the names the JSON reader gives (ROCm 6.0-6.3 and the short
#: 6.4+ spellings: ``GPU_T``, ``GFX_CLK``, ``GFX%``)
_AMD_MONITOR = {"GPU": "index", "POWER": "power_w", "GPU_TEMP": "temperature_c", "GPU_T": "temperature_c",
                "MEM_TEMP": "memory_temperature_c", "MEM_T": "memory_temperature_c",
                "GFX_UTIL": "utilization_pct", "GFX%": "utilization_pct", "GFX_CLOCK": "clock_gfx_mhz",
                "GFX_CLK": "clock_gfx_mhz", "MEM_UTIL": "memory_utilization_pct", "MEM%": "memory_utilization_pct",
                "MEM_CLOCK": "clock_mem_mhz", "MEM_CLK": "clock_mem_mhz", "VRAM_USED": "vram_used_mb",
                "VRAM_TOTAL": "vram_total_mb"}


def _amd_text_gpus(lines: list[str]) -> list[dict[str, Any]]:
    """``amd-smi static`` / ``amd-smi metric`` without ``--json``: ``GPU: N`` blocks of indented
    ``KEY: value`` lines, a ``KEY:`` alone opening a sub-section, a ``[...]`` list possibly wrapped
    over lines. Keys are the JSON keys in capitals, so each block becomes the JSON document's
    dict (lower-case keys) for :func:`_amd_gpu`. ``CPU: N`` / ``CORE: N`` blocks are skipped."""
    gpus: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    pending: tuple[dict[str, Any], str, str] | None = None  # a list value still open
    for line in lines:
        if pending is not None:
            target, key, value = pending
            value += " " + line.strip()
            if value.rstrip().endswith("]"):
                target[key], pending = value, None
            else:
                pending = (target, key, value)
            continue
        block = _AMD_BLOCK.match(line.strip())
        if block and not line[:1].isspace():
            stack = []
            if block.group(1) == "GPU":
                gpu: dict[str, Any] = {"gpu": int(block.group(2))}
                gpus.append(gpu)
                stack = [(-1, gpu)]
            continue
        m = _AMD_KEY.match(line)
        if not stack or not m:
            continue
        depth, key, value = len(m.group(1)), m.group(2).strip().lower(), m.group(3)
        while len(stack) > 1 and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1]
        if value is None:
            child: dict[str, Any] = {}
            parent[key] = child
            stack.append((depth, child))
        elif value.startswith("[") and not value.endswith("]"):
            pending = (parent, key, value)
        else:
            parent[key] = value
    return gpus


def _amd_monitor(lines: list[str]) -> list[dict[str, Any]]:
    """``amd-smi monitor`` tables: a ``GPU  POWER  GPU_TEMP ...`` header, then one row per GPU
    (and per interval with ``-w``), cells apart by two blanks or more (``171 W``, ``32 °C``)."""
    rows: list[dict[str, Any]] = []
    names: list[str] | None = None
    for number, line in enumerate(lines, 1):
        if _AMD_MONITOR_HEAD.match(line):
            names = line.split()
            continue
        if names is None or not line.strip():
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if not re.fullmatch(r"\d+", cells[0]):
            names = None  # the table ended (a process table or other text follows)
            continue
        if len(cells) != len(names):
            raise unreadable(number, line, f"amd-smi monitor: {len(cells)} values for the {len(names)} columns")
        row: dict[str, Any] = {}
        for name, cell in zip(names, cells, strict=True):
            key = _AMD_MONITOR.get(name, name.lower().replace("%", "_pct"))
            number_value = to_float(_v(cell))
            row[key] = int(cell) if key == "index" else number_value if number_value is not None else _v(cell)
        rows.append({k: v for k, v in row.items() if v is not None})
    return rows


#: ``amd-smi`` with no command (ROCm 6.4+): a box per GPU of two rows, cells apart by ``|``:
#: ``| BDF  GPU-Name | Mem-Uti  Temp  UEC  Power-Usage |`` then
#: ``| GPU  HIP-ID  OAM-ID  Partition-Mode | GFX-Uti  Fan  Mem-Usage |``
_AMD_DEFAULT_HEAD = re.compile(r"^\W*BDF\s+GPU-Name\s*\|\s*Mem-Uti\s+Temp\s+UEC\s+Power-Usage\W*$")
_AMD_DEFAULT_BDF = re.compile(r"^[|│]?\s*([0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.*?)\s*[|│]\s*(.*?)\s*[|│]?\s*$")
_AMD_DEFAULT_GPU = re.compile(r"^[|│]?\s*(\d+)\s+(\d+|N/A)\s+(\d+|N/A)\s+(\S+)\s*[|│]\s*(.*?)\s*[|│]?\s*$")
_PCT = r"(N/A|[\d.]+\s*%)"
_AMD_DEFAULT_RIGHT1 = re.compile(_PCT + r"\s+(N/A|[-\d.]+\s*\S*C)\s+(N/A|\d+)\s+(N/A|[\d.]+)?(?:\s*/\s*(N/A|[\d.]+))?\s*(?:W)?$")
_AMD_DEFAULT_RIGHT2 = re.compile(_PCT + r"\s+" + _PCT + r"\s+(?:(N/A|[\d.]+)\s*/\s*(N/A|[\d.]+)\s*MB|N/A)$")
_AMD_DEFAULT_VERSION = re.compile(r"ROCm\s+version:\s*([\d.]+)", re.IGNORECASE)


def _amd_default(lines: list[str]) -> list[dict[str, Any]]:
    """The summary table ``amd-smi`` prints when run without a command (ROCm 6.4 / amd-smi 25.x
    and later): per GPU its BDF and name, memory activity, hotspot temperature, uncorrectable ECC
    count, power (``189/266 W``: draw / cap; ``14 W``: draw; ``N/A/0 W``: neither), then its index,
    HIP and OAM ids, partition (``SPX/NPS1``), GFX activity, fan and VRAM used / total. The
    Processes box under it is left out. A GPU row whose cells this layout does not explain names
    its line (ToolFailure ``unreadable``)."""
    rows: list[dict[str, Any]] = []
    in_table, rocm = False, None
    current: dict[str, Any] | None = None
    for number, line in enumerate(lines, 1):
        version = _AMD_DEFAULT_VERSION.search(line)
        if version and not in_table:
            rocm = version.group(1)
        if _AMD_DEFAULT_HEAD.match(line.strip()):
            in_table, current = True, None
            continue
        if not in_table:
            continue
        if re.search(r"Processes:", line):
            in_table, current = False, None
            continue
        first = _AMD_DEFAULT_BDF.match(line.strip())
        if first:
            right = _AMD_DEFAULT_RIGHT1.match(first.group(3))
            if right is None:
                raise unreadable(number, line, "amd-smi: a GPU row whose Mem-Uti / Temp / UEC / Power-Usage "
                                 "cells are not of that layout")
            mem, temp, uec, draw, cap = right.groups()
            current = {"bus_id": first.group(1), "model": first.group(2) or None,
                       "memory_utilization_pct": to_float(_v(mem)), "temperature_c": to_float(_v(temp)),
                       "ecc_uncorrectable_count": to_int(_v(uec)), "power_w": to_float(_v(draw)),
                       "power_limit_w": to_float(_v(cap)) or None, "rocm_version": rocm}
            rows.append(current)
            continue
        second = _AMD_DEFAULT_GPU.match(line.strip())
        if second and current is not None and "index" not in current:
            right = _AMD_DEFAULT_RIGHT2.match(second.group(5))
            if right is None:
                raise unreadable(number, line, "amd-smi: a GPU row whose GFX-Uti / Fan / Mem-Usage cells are "
                                 "not of that layout")
            mode = _v(second.group(4))  # "SPX/NPS1", or "N/A" where the GPU has no partitions
            compute, _, memory = mode.partition("/") if mode else ("", "", "")
            current.update({
                "index": int(second.group(1)), "hip_id": to_int(_v(second.group(2))),
                "oam_id": to_int(_v(second.group(3))),
                "compute_partition": compute or None, "memory_partition": memory or None,
                "utilization_pct": to_float(_v(right.group(1))), "fan_speed_pct": to_float(_v(right.group(2))),
                "vram_used_mb": to_float(_v(right.group(3))), "vram_total_mb": to_float(_v(right.group(4))),
            })
    return [{k: v for k, v in row.items() if v is not None} for row in rows]


def parse_amd_smi(text: str) -> list[dict[str, Any]]:
    """``amd-smi static`` / ``amd-smi metric`` (``--json``: bare list or ``{"gpu_data": [...]}``;
    or the human-readable ``GPU: N`` blocks) and ``amd-smi monitor`` tables.

    Reads ROCm 6.0 to 7.x layouts: values bare or ``{"value": x, "unit": u}`` (text: ``20 W``,
    ``100 °C``), ``N/A`` absent; ``power_w`` is metric's socket power, ``power_limit_w`` static's
    socket power cap. A document that is not a GPU list names its line (ToolFailure
    ``unreadable``), as does a monitor row whose cells do not match its header."""
    gpus: list[dict[str, Any]] = []
    documents = _amd_documents(text)
    for line_no, data in documents:
        if isinstance(data, dict):
            data = data.get("gpu_data", [data])
        if not isinstance(data, list) or not all(isinstance(item, dict) and "gpu" in item for item in data):
            raise unreadable(line_no, text.splitlines()[line_no - 1],
                             "amd-smi JSON is not a list of GPUs (each with its \"gpu\" index; a jq-filtered "
                             "part of a document does not say which GPU it is)")
        gpus.extend(_amd_gpu(item) for item in data)
    if documents:
        return gpus
    default = _amd_default(clean_text(text).split("\n"))
    if default:
        return default
    lines = undecorate(text).split("\n")
    blocks = [_amd_gpu(item) for item in _amd_text_gpus(lines)]
    if blocks and all(set(block) <= {"index"} for block in blocks):
        at = next(i for i, line in enumerate(lines) if _AMD_BLOCK.match(line.strip()))
        raise unreadable(at + 1, lines[at], "amd-smi GPU blocks without a reading this reader knows "
                         "(temperature, power, clock, usage, memory, PCIe, ECC, partition, limits)")
    return blocks + _amd_monitor(lines)


#: further sections of ``amd-smi metric`` / ``static`` (text or JSON) -> names; the monitor table's
#: GFX_UTIL / MEM_UTIL / VRAM_* columns are the same readings (ROCm 6.0-7.x key spellings)
_AMD_SECTIONS = {
    "usage": {"gfx_activity": "utilization_pct", "umc_activity": "memory_utilization_pct",
              "mm_activity": "mm_utilization_pct"},
    "mem_usage": {"total_vram": "vram_total_mb", "used_vram": "vram_used_mb", "free_vram": "vram_free_mb"},
    "vram": {"size": "vram_size_mb", "type": "vram_type"},
    "partition": {"compute_partition": "compute_partition", "memory_partition": "memory_partition",
                  "partition_id": "partition_id"},
    "ecc": {"total_correctable_count": "ecc_correctable_count",
            "total_uncorrectable_count": "ecc_uncorrectable_count",
            "total_deferred_count": "ecc_deferred_count"},
    "pcie": {"replay_count": "pcie_replay_count", "l0_to_recovery_count": "pcie_l0_to_recovery_count",
             "nak_sent_count": "pcie_nak_sent_count", "nak_received_count": "pcie_nak_received_count"},
    "energy": {"total_energy_consumption": "energy_j"},
}
_AMD_TEXT = {"vram_type", "compute_partition", "memory_partition"}


def _amd_gpu(item: dict[str, Any]) -> dict[str, Any]:
    """One GPU of an amd-smi JSON document, in the names the nvidia-smi reader gives."""
    asic, bus = item.get("asic") or {}, item.get("bus") or {}
    temp, power = item.get("temperature") or {}, item.get("power") or {}
    pcie, clock, limit = item.get("pcie") or {}, item.get("clock") or {}, item.get("limit") or {}
    speed = _v(bus.get("max_pcie_speed"))
    gpu: dict[str, Any] = {
        "index": item.get("gpu"), "model": asic.get("market_name"), "bus_id": _v(bus.get("bdf")),
        "pcie_width_max": to_int(_v(bus.get("max_pcie_width"))),
        "pcie_speed_max_gts": to_float(speed),
        "pcie_width_current": to_int(_v(pcie.get("width"))),
        "pcie_speed_current_gts": to_float(_v(pcie.get("speed"))),
        "temperature_c": to_float(_v(temp.get("hotspot"))) if _v(temp.get("hotspot")) is not None
        else to_float(_v(temp.get("edge"))),
        "temperature_edge_c": to_float(_v(temp.get("edge"))),
        "memory_temperature_c": to_float(_v(temp.get("mem"))),
        "power_w": to_float(_v(power.get("socket_power"))) if isinstance(power, dict) else None,
        "power_limit_w": to_float(_v(limit.get("socket_power"))) if isinstance(limit, dict) else None,
        "power_limit_max_w": to_float(_v(limit.get("max_power"))) if isinstance(limit, dict) else None,
        "numa_node": to_int(_v((item.get("numa") or {}).get("node"))),
        "timestamp": item.get("timestamp"),
    }
    for section, fields in _AMD_SECTIONS.items():
        values = item.get(section)
        if isinstance(values, dict):
            for key, name in fields.items():
                raw = _v(values.get(key))
                number = to_float(raw)
                if name in _AMD_TEXT or number is None:
                    gpu[name] = raw
                else:
                    gpu[name] = int(number) if name.endswith(("_count", "_id")) and number.is_integer() else number
    if isinstance(clock, dict):
        gfx = clock.get("gfx_0") or clock.get("gfx") or {}
        if isinstance(gfx, dict):
            gpu["clock_gfx_mhz"] = to_float(_v(gfx.get("clk")))
        mem = clock.get("mem_0") or {}
        if isinstance(mem, dict):
            gpu["clock_mem_mhz"] = to_float(_v(mem.get("clk")))
    return {k: v for k, v in gpu.items() if v is not None}


PARSERS = {"nvidia-smi": parse_nvidia_query, "nvidia-smi-topo": parse_nvidia_topo, "amd-smi": parse_amd_smi}
READS = {
    "nvidia-smi": "nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits] [-l N] (drivers R4xx-R5xx): "
                  "header with long names and [units], values with or without units, [N/A] / [Not Supported] "
                  "absent, a timestamp column as printed, repeated samples; a '| column -s, -t' table; "
                  "noheader with the fields given or those of the --query-gpu command line above it (prompt, "
                  "echo or Markdown); a table ends at a blank line followed by other text (time's real/user/sys)",
    "nvidia-smi-topo": "nvidia-smi topo -m / -mp (drivers R4xx-R5xx; DGX-2, A100, H100, B200 and GB200 nodes): "
                       "GPUn/NICn (or mlx5_N) matrix (X, PIX, PXB, PHB, NODE, SYS, NV#), CPU and NUMA affinity "
                       "(single node or Grace range lists), GPU NUMA ID, the NIC legend (mlx5_bond_N too); 3 to 16 GPUs, "
                       "up to 18 NICs; a header that lost its leading blanks, headings a writer shortened (NUMA, "
                       "GPU NUMA), a rule under the header; two nodes' matrices in one paste apart (matrices); a "
                       "row short of its cells inside a matrix is refused at its line",
    "amd-smi": "amd-smi static / metric [--usage --power --clock --temperature --pcie --ecc --mem-usage "
               "--partition --limit --asic --bus] (text GPU: N blocks, wrapped lists, a writer's [output truncated]; "
               "or --json: a bare list or {gpu_data: [...]}) and amd-smi monitor tables (ROCm 6.0-7.x; MI210, MI250, "
               "MI300A, MI300X, MI308X, partitions, Radeon): usage, power, clocks, temperatures, VRAM, partition, ECC "
               "totals, PCIe link and counters, limits; a jq-filtered fragment is refused; the summary table of a bare "
               "'amd-smi' (amd-smi 25.x-27.x, ROCm 6.4-7.x; MI300A, Radeon): BDF, name, Mem-Uti, hotspot Temp, UEC, "
               "power draw/cap, HIP / OAM ids, partition, GFX-Uti, fan, VRAM used/total (the Processes box left out)",
}
