"""PCIe AER counters of a device: ``/sys/bus/pci/devices/<BDF>/aer_dev_correctable``,
``aer_dev_nonfatal`` and ``aer_dev_fatal`` (kernel 4.19 and later).

Each line is an error name and its count (``Receiver Error 2``), ending with ``TOTAL_ERR_COR``,
``TOTAL_ERR_NONFATAL`` or ``TOTAL_ERR_FATAL``: the number of error messages, which may be smaller
than the sum of the lines (one message can report several errors).
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text

_KINDS = {"TOTAL_ERR_COR": "correctable", "TOTAL_ERR_NONFATAL": "nonfatal", "TOTAL_ERR_FATAL": "fatal"}


def parse_aer(text: str) -> dict[str, Any]:
    """``{"kind", "counters": {name: n}, "total"}``; ``total`` is the TOTAL_ERR_* line, else the sum."""
    counters: dict[str, int] = {}
    kind, total = None, None
    for line in clean_text(text).splitlines():
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
