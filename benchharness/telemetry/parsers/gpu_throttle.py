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
_AMD_ITEM = re.compile(r"^\s*([A-Z][A-Z0-9_]*?)_(ACCUMULATED|VIOLATION_ACTIVE)\s*:\s*(.*?)\s*$")


def parse_amd_throttle(text: str) -> list[dict[str, Any]]:
    """``amd-smi metric --throttle``: one dict per GPU: ``gpu`` (index), ``active`` (``"PPT
    violation"`` ...), ``reasons`` (cause -> bool) and ``accumulated`` (cause -> counter)."""
    gpus: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for raw in text.splitlines():
        m = _AMD_GPU.match(raw.strip())
        if m:
            current = {"gpu": m.group(1), "active": [], "reasons": {}, "accumulated": {}}
            gpus.append(current)
            continue
        item = _AMD_ITEM.match(raw)
        if current is None or not item:
            continue
        cause, kind, value = item.groups()
        if kind == "ACCUMULATED" and re.match(r"^\d+$", value):
            current["accumulated"][cause] = int(value)
        elif kind == "VIOLATION_ACTIVE" and value.upper() in ("ACTIVE", "NOT ACTIVE"):
            current["reasons"][cause] = value.upper() == "ACTIVE"
            if value.upper() == "ACTIVE":
                current["active"].append(f"{cause} violation")
    return [g for g in gpus if g["reasons"] or g["accumulated"]]


PARSERS = {"amd-smi-metric-throttle": parse_amd_throttle}  # nvidia-smi -q as a whole: nvidia_smi_q.py
READS = {
    "amd-smi-metric-throttle": "amd-smi metric --throttle / --violation (ROCm 6.3+, MI300 and later)",
}
