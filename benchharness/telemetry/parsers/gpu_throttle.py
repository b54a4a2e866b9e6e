"""Clock throttle state per GPU. ``nvidia-smi -q -d PERFORMANCE``: clock throttle reasons per GPU (which are active, and the
accumulated time per cause where the driver counts it).

Two headings exist: "Clocks Event Reasons" (drivers since about R535) and the older "Clocks
Throttle Reasons"; each reason line reads ``Name : Active`` or ``Name : Not Active``
(``HW Thermal Slowdown`` and ``HW Power Brake Slowdown`` are indented under ``HW Slowdown``).
"Clocks Event Reasons Counters" lines read ``SW Power Capping : 50284264713 us``. A GPU whose
section is ``N/A`` gives no reasons (absent, not "none active"). The judge of the reasons is
``telemetry.load.throttled``.

``amd-smi metric --throttle`` (MI300 and later; an alias of ``--violation`` since ROCm 7.0):
per GPU ``<CAUSE>_ACCUMULATED`` counters and ``<CAUSE>_VIOLATION_ACTIVE: ACTIVE | NOT ACTIVE`` for
PROCHOT, PPT (package power), SOCKET_THERMAL, VR_THERMAL and HBM_THERMAL.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import undecorate, unreadable
from benchharness.telemetry.parsers.gpu import _amd_documents

_GPU = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_HEAD = re.compile(r"^(\s*)Clocks (?:Event|Throttle) Reasons(\s+Counters)?\s*(?::\s*(.*))?$")
_ITEM = re.compile(r"^(\s*)(\S.*?)\s*:\s*(.*?)\s*$")


def parse_performance(text: str) -> list[dict[str, Any]]:
    """One dict per GPU: ``gpu`` (PCI bus id, or ``"0"`` for a bare excerpt), ``active`` (reason
    names), ``reasons`` (name -> bool) and ``counters_us`` (cause -> microseconds)."""
    gpus: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    section: str | None = None
    indent = 0
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        m = _GPU.match(line.strip())
        if m:
            current = {"gpu": m.group(1), "active": [], "reasons": {}, "counters_us": {}}
            gpus.append(current)
            section = None
            continue
        head = _HEAD.match(line)
        if head:
            if current is None:
                current = {"gpu": "0", "active": [], "reasons": {}, "counters_us": {}}
                gpus.append(current)
            section = "counters" if head.group(2) else "reasons"
            indent = len(head.group(1))
            if head.group(3) and head.group(3).strip().upper() == "N/A":
                section = None
            continue
        item = _ITEM.match(line)
        if section is None or current is None or not item or len(item.group(1)) <= indent:
            section = None if item and len(item.group(1)) <= indent else section
            continue
        name, value = item.group(2), item.group(3)
        if section == "reasons" and value in ("Active", "Not Active"):
            current["reasons"][name] = value == "Active"
            if value == "Active":
                current["active"].append(name)
        elif section == "counters":
            num = re.match(r"^(\d+)\s*us$", value)
            if num:
                current["counters_us"][name] = int(num.group(1))
    return [g for g in gpus if g["reasons"] or g["counters_us"]]


_AMD_GPU = re.compile(r"^GPU:\s*(\d+)\s*$")
#: ``<CAUSE>_ACCUMULATED`` / ``<CAUSE>_VIOLATION_ACCUMULATED``, ``<CAUSE>_VIOLATION_ACTIVE`` (ROCm 6.3) /
#: ``_VIOLATION_STATUS`` (6.4 on), ``<CAUSE>_VIOLATION_PERCENT`` (6.3) / ``_VIOLATION_ACTIVITY`` (6.4 on)
_AMD_ITEM = re.compile(r"^(\s*)([A-Z][A-Z0-9_]*?)_(VIOLATION_ACCUMULATED|ACCUMULATED|VIOLATION_ACTIVE|VIOLATION_STATUS|"
                       r"VIOLATION_PERCENT|VIOLATION_ACTIVITY)\s*:\s*(.*?)\s*$")
_AMD_COUNTER = re.compile(r"^\s*ACCUMULATION_COUNTER\s*:\s*(.*?)\s*$")
_AMD_XCP = re.compile(r"^\s*(XCP_\d+)\s*:\s*(.*?)\s*$")
_AMD_KIND = {"VIOLATION_ACCUMULATED": "accumulated", "ACCUMULATED": "accumulated", "VIOLATION_ACTIVE": "status",
             "VIOLATION_STATUS": "status", "VIOLATION_PERCENT": "activity", "VIOLATION_ACTIVITY": "activity"}
#: causes that say the graphics clock sat below the host's limit for any reason, low load included
#: (100 % on an idle GPU): reported, never a throttle
_AMD_NOT_THROTTLE = ("LOW_UTILIZATION", "GFX_CLK_BELOW_HOST_LIMIT", "TOTAL_GFX_CLK_BELOW_HOST_LIMIT")
_AMD_NA = ("N/A", "NA", "")


def _amd_scalar(kind: str, raw: str, line_no: int, line: str) -> Any:
    """One value of a THROTTLE line: int (accumulated), bool (status), float (activity %); None for N/A."""
    value = raw.strip()
    if value.upper() in _AMD_NA:
        return None
    if kind == "accumulated" and re.fullmatch(r"\d+", value):
        return int(value)
    if kind == "status" and value.upper() in ("ACTIVE", "NOT ACTIVE", "TRUE", "FALSE"):
        return value.upper() in ("ACTIVE", "TRUE")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*%?", value)
    if kind == "activity" and m:
        return float(m.group(1))
    raise unreadable(line_no, line, f"amd-smi metric --throttle: not a {kind} value")


def _amd_list(kind: str, raw: str, line_no: int, line: str) -> list[Any]:
    """``[0, 0, N/A]`` / ``[NOT ACTIVE, N/A]`` / ``[0 %, N/A]`` (one value per XCC of a partition)."""
    if not (raw.startswith("[") and raw.endswith("]")):
        raise unreadable(line_no, line, "amd-smi metric --throttle: an XCP line without its [...] list")
    return [_amd_scalar(kind, item, line_no, line) for item in raw[1:-1].split(",")] if raw[1:-1].strip() else []


def _amd_record(gpu: str) -> dict[str, Any]:
    return {"gpu": gpu, "active": [], "reasons": {}, "accumulated": {}, "activity_pct": {}, "per_xcp": {},
            "clock_below_limit": {}}


def _amd_store(current: dict[str, Any], cause: str, kind: str, value: Any, per_xcp: bool) -> None:
    """A cause's value: scalar throttle causes into ``reasons`` / ``accumulated`` / ``activity_pct``;
    a per-XCP throttle cause (ROCm 7's GFX_CLK_BELOW_HOST_LIMIT_POWER / _THERMAL) too, as any XCC
    active and the sum of the XCCs' counters; the clock-below-limit causes into ``clock_below_limit``."""
    if value is None:
        return
    if per_xcp:
        known = [v for values in value.values() for v in values if v is not None]
        if not known:
            return
        value = any(known) if kind == "status" else sum(known) if kind == "accumulated" else max(known)
    if cause in _AMD_NOT_THROTTLE:
        current["clock_below_limit"].setdefault(cause, {})[kind] = value
        return
    if kind == "status":
        current["reasons"][cause] = value
        if value:
            current["active"].append(f"{cause} violation")
    elif kind == "accumulated":
        current["accumulated"][cause] = value
    else:
        current["activity_pct"][cause] = value


def _amd_json(docs: list[tuple[int, Any]], text: str) -> list[dict[str, Any]]:
    """``amd-smi metric --throttle --json``: ``[{"gpu": 0, "throttle": {"ppt_accumulated": ...}}]``
    (or under ``gpu_data``); values bare or ``{"value": v, "unit": u}``, per-XCP ones as
    ``{"xcp_0": [...]}``."""
    out: list[dict[str, Any]] = []
    for line_no, data in docs:
        items = data.get("gpu_data", [data]) if isinstance(data, dict) else data
        if not isinstance(items, list):
            raise unreadable(line_no, text.splitlines()[line_no - 1], "amd-smi JSON is not a list of GPUs")
        for item in items:
            throttle = item.get("throttle") if isinstance(item, dict) else None
            if not isinstance(throttle, dict):
                continue
            current = _amd_record(str(item.get("gpu")))
            for key, raw in throttle.items():
                m = re.fullmatch(r"([a-z][a-z0-9_]*?)_(violation_accumulated|accumulated|violation_active|"
                                 r"violation_status|violation_percent|violation_activity)", key)
                if key == "accumulation_counter":
                    counter = raw.get("value") if isinstance(raw, dict) else raw
                    if isinstance(counter, int):
                        current["accumulation_counter"] = counter
                if not m:
                    continue
                cause, kind = m.group(1).upper(), _AMD_KIND[m.group(2).upper()]
                if isinstance(raw, dict) and "value" in raw:
                    raw = raw["value"]
                line = text.splitlines()[line_no - 1]
                if isinstance(raw, dict):  # per XCP
                    lists = {x.upper(): [_amd_scalar(kind, str(v.get("value") if isinstance(v, dict) else v),
                                                     line_no, line) for v in vs]
                             for x, vs in raw.items() if isinstance(vs, list)}
                    current["per_xcp"][f"{cause}_{kind}".lower()] = lists
                    _amd_store(current, cause, kind, lists, True)
                elif isinstance(raw, bool):
                    _amd_store(current, cause, kind, raw, False)
                else:
                    _amd_store(current, cause, kind, _amd_scalar(kind, str(raw), line_no, line), False)
            out.append(current)
    return out


def parse_amd_throttle(text: str) -> list[dict[str, Any]]:
    """``amd-smi metric --throttle`` / ``-v`` / ``--violation`` (text or ``--json``): one dict per GPU
    with a THROTTLE section: ``gpu`` (index, a string), ``active`` (``"PPT violation"`` ...),
    ``reasons`` (cause -> bool), ``accumulated`` (cause -> counter), ``activity_pct`` (cause -> %),
    ``accumulation_counter``, ``per_xcp`` (ROCm 7's per-partition lists, ``XCP_0`` -> one value per
    XCC) and ``clock_below_limit`` (LOW_UTILIZATION, GFX_CLK_BELOW_HOST_LIMIT and its TOTAL: the
    clock below the host's limit for any cause, idle included; not a throttle). ``N/A`` is absent;
    a GPU whose every value is N/A (an APU, a GPU before MI300) keeps its record with empty dicts.
    A THROTTLE value that is neither a number, a percentage, ACTIVE / NOT ACTIVE nor N/A names its
    line (ToolFailure ``unreadable``)."""
    docs = _amd_documents(text)
    if docs:
        return _amd_json(docs, text)
    gpus: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    open_list: tuple[str, str, int] | None = None  # (cause, kind, indent) of a key whose XCP lines follow
    seen: set[int] = set()  # the GPUs that printed THROTTLE lines (all N/A included)
    for line_no, raw in enumerate(undecorate(text).split("\n"), 1):
        line = raw.rstrip()
        m = _AMD_GPU.match(line.strip())
        if m:
            current, open_list = _amd_record(m.group(1)), None
            gpus.append(current)
            continue
        if current is None or not line.strip():
            continue
        xcp = _AMD_XCP.match(line)
        if xcp and open_list is not None and len(line) - len(line.lstrip()) > open_list[2]:
            cause, kind, _ = open_list
            lists = current["per_xcp"].setdefault(f"{cause}_{kind}".lower(), {})
            lists[xcp.group(1)] = _amd_list(kind, xcp.group(2), line_no, line)
            continue
        if open_list is not None:
            cause, kind, _ = open_list
            _amd_store(current, cause, kind, current["per_xcp"].get(f"{cause}_{kind}".lower(), {}), True)
            open_list = None
        counter = _AMD_COUNTER.match(line)
        item = _AMD_ITEM.match(line)
        if counter or item:
            seen.add(id(current))
        if counter:
            value = _amd_scalar("accumulated", counter.group(1), line_no, line)
            if value is not None:
                current["accumulation_counter"] = value
            continue
        if not item:
            continue
        indent, cause, kind, value = len(item.group(1)), item.group(2), _AMD_KIND[item.group(3)], item.group(4)
        if not value:
            open_list = (cause, kind, indent)
            continue
        if value.startswith("["):
            lists = {"XCP_0": _amd_list(kind, value, line_no, line)}
            current["per_xcp"][f"{cause}_{kind}".lower()] = lists
            _amd_store(current, cause, kind, lists, True)
            continue
        _amd_store(current, cause, kind, _amd_scalar(kind, value, line_no, line), False)
    if current is not None and open_list is not None:
        _amd_store(current, open_list[0], open_list[1], current["per_xcp"].get(f"{open_list[0]}_{open_list[1]}".lower(), {}),
                   True)
    return [g for g in gpus if id(g) in seen]


PARSERS = {"amd-smi-metric-throttle": parse_amd_throttle}  # nvidia-smi -q as a whole: nvidia_smi_q.py
READS = {
    "amd-smi-metric-throttle": "amd-smi metric --throttle / -v / --violation, text or --json (ROCm 6.3: "
                               "*_VIOLATION_ACTIVE / _PERCENT; 6.4+: _VIOLATION_STATUS / _ACTIVITY, "
                               "GFX_CLK_BELOW_HOST_LIMIT; 7.x: per-XCP lists; MI300 and later, all N/A elsewhere)",
}
