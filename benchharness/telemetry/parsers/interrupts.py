"""``/proc/interrupts``: per IRQ its count on each CPU, interrupt chip, hardware IRQ and name.

The header names the CPU columns (``CPU0 CPU1 ...``; offline CPUs leave gaps). A grepped excerpt
without the header (``grep mlx5 /proc/interrupts``) is read too: its leading numbers are the counts,
and ``cpus`` is None. Rows that are not numbered IRQs (``NMI``, ``LOC`` ...) are left out.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import clean_text

_ROW = re.compile(r"^\s*(\d+):\s+(.*)$")
_HWIRQ = re.compile(r"^(?:\d+-)?(?:edge|level|fasteoi|simple)$|^\d+-\w+$")


def parse_interrupts(text: str) -> dict[str, Any]:
    """``{"cpus": [0, 1, ...] | None, "irqs": [{"irq", "counts", "total", "chip", "hwirq", "name"}]}``."""
    cpus: list[int] | None = None
    irqs: list[dict[str, Any]] = []
    for line in clean_text(text).splitlines():
        head = re.findall(r"\bCPU(\d+)\b", line)
        if head and not _ROW.match(line):
            cpus = [int(c) for c in head]
            continue
        m = _ROW.match(line)
        if not m:
            continue
        tokens = m.group(2).split()
        limit = len(cpus) if cpus is not None else len(tokens)
        counts: list[int] = []
        while tokens and len(counts) < limit and tokens[0].isdigit():
            counts.append(int(tokens.pop(0)))
        chip = tokens.pop(0) if tokens else None
        hwirq = tokens.pop(0) if len(tokens) > 1 and _HWIRQ.match(tokens[0]) else None
        irqs.append({"irq": int(m.group(1)), "counts": counts, "total": sum(counts), "chip": chip,
                     "hwirq": hwirq, "name": " ".join(tokens) or None})
    return {"cpus": cpus, "irqs": irqs}


PARSERS = {"interrupts": parse_interrupts}
