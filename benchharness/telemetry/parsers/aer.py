"""PCIe AER counters of a device: ``/sys/bus/pci/devices/<BDF>/aer_dev_correctable``,
``aer_dev_nonfatal`` and ``aer_dev_fatal`` (kernel 4.19 and later).

Each line is an error name and its count (``Receiver Error 2``), ending with ``TOTAL_ERR_COR``,
``TOTAL_ERR_NONFATAL`` or ``TOTAL_ERR_FATAL``: the number of error messages, which may be smaller
than the sum of the lines (one message can report several errors).

A ``grep . /sys/bus/pci/devices/*/aer_dev_*`` paste prefixes each line with its file
(``/sys/.../0000:3b:00.0/aer_dev_fatal:DLP 0``): it is read per device and file, as
``{"devices": [{"device", "bdf", "files": {kind: {"counters", "total"}}}]}``, the kind taken from
the file name. Lines of other files the same grep printed are left out; an ``aer_dev_*`` line that
is not ``NAME VALUE`` is an error naming the line.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text, unreadable

_KINDS = {"TOTAL_ERR_COR": "correctable", "TOTAL_ERR_NONFATAL": "nonfatal", "TOTAL_ERR_FATAL": "fatal"}


_FILES = {"aer_dev_correctable": "correctable", "aer_dev_nonfatal": "nonfatal", "aer_dev_fatal": "fatal"}
_PATH_LINE = re.compile(r"^\s*(\S*?)/?(aer_dev_(?:correctable|nonfatal|fatal)):(.*)$")
_BDF = re.compile(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]")


def parse_aer(text: str) -> dict[str, Any]:
    """``{"kind", "counters": {name: n}, "total"}``; ``total`` is the TOTAL_ERR_* line, else the sum.
    A paste of ``path:NAME VALUE`` lines: ``{"devices": [...]}`` (see the module's text)."""
    lines = clean_text(text).splitlines()
    if any(_PATH_LINE.match(line) for line in lines):
        return _parse_paths(lines)
    return _parse_file(lines)


def _parse_paths(lines: list[str]) -> dict[str, Any]:
    devices: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(lines, 1):
        m = _PATH_LINE.match(line)
        if not m:
            continue  # another sysfs file the grep printed, or grep's own complaint
        device, name = m.group(1) or ".", m.group(2)
        entry = re.match(r"^\s*(\S.*?)\s+(\d+)\s*$", m.group(3))
        if not entry:
            raise unreadable(n, line, f"not a {name} 'NAME VALUE' line")
        bdf = _BDF.findall(device)
        dev = devices.setdefault(device, {"device": device, "bdf": bdf[-1] if bdf else None, "files": {}})
        kind = _FILES[name]
        rec = dev["files"].setdefault(kind, {"counters": {}, "total": None})
        if entry.group(1) in _KINDS:
            rec["total"] = int(entry.group(2))
        else:
            rec["counters"][entry.group(1)] = int(entry.group(2))
    for dev in devices.values():
        for rec in dev["files"].values():
            if rec["total"] is None:  # a paste cut before the TOTAL_ERR_* line
                rec["total"], rec["total_from"] = sum(rec["counters"].values()), "sum"
    return {"devices": list(devices.values())}


def _parse_file(lines: list[str]) -> dict[str, Any]:
    counters: dict[str, int] = {}
    kind, total = None, None
    for line in lines:
        m = re.match(r"^\s*(\S.*?)\s+(\d+)\s*$", line)
        if not m:
            continue
        if m.group(1) in _KINDS:
            kind, total = _KINDS[m.group(1)], int(m.group(2))
        else:
            counters[m.group(1)] = int(m.group(2))
    return {"kind": kind, "counters": counters,
            "total": total if total is not None else (sum(counters.values()) if counters else None)}


PARSERS = {"aer": parse_aer}
READS = {"aer": "cat /sys/bus/pci/devices/<BDF>/aer_dev_correctable | aer_dev_nonfatal | aer_dev_fatal (kernel "
                "4.19+; 'NAME VALUE' lines and TOTAL_ERR_COR / TOTAL_ERR_NONFATAL / TOTAL_ERR_FATAL), and "
                "'grep . .../aer_dev_*' pastes (path-prefixed lines, several devices and files, cut before the "
                "TOTAL line)"}
