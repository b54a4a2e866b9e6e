"""``/proc/interrupts``: per IRQ its count on each CPU, interrupt chip, hardware IRQ and name.

The header names the CPU columns (``CPU0 CPU1 ...``; offline CPUs leave gaps). A grepped excerpt
without the header (``grep mlx5 /proc/interrupts``) is read too: its leading numbers are the counts,
and ``cpus`` is None. Rows that are not numbered IRQs (``NMI``, ``LOC`` ...) are left out.

A row of a many-CPU machine that a terminal or a mail wrapped goes on over the next lines (bare
counts, then the chip and name), the header likewise over several lines of ``CPUn`` names; a copy
that lost its line ends (``... ice-enp59s0f1-TxRx-32 293:   0   0``) starts the next row where its
``N:`` stands. With a header, a row whose counts do not fill its CPU columns before the chip is an
error naming the line. A row without its chip and name, where the listing stops (a cut paste),
is kept with the counts printed and ``cut: true``.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import undecorate, unreadable

_ROW = re.compile(r"^\s*(\d+):(?:\s+(.*))?$")
_OTHER = re.compile(r"^\s*[A-Z][A-Z0-9]{1,4}:(?:\s|$)")  # NMI: LOC: ERR: MIS: IPI0: ...
_JOINED = re.compile(r"(?<=\S)\s+(?=\d+:(?:\s+\d|\s*$))")  # a row that starts mid-line
_HWIRQ = re.compile(r"^(?:\d+-)?(?:edge|level|fasteoi|simple)$|^\d+-\w+$")
_HEADER = re.compile(r"^\s*(?:CPU\d+\s*)+$")


def _rows(lines: list[str]) -> tuple[list[int] | None, list[tuple[int, str, list[str]]]]:
    """(CPU numbers of the header, [(line number, irq, tokens after ``N:``)]) with wrapped rows joined."""
    cpus: list[int] | None = None
    rows: list[tuple[int, str, list[str]]] = []
    open_row: list[str] | None = None  # tokens of a row that may go on over the next line
    in_header = False  # a header wrapped over several lines goes on
    for line_no, line in enumerate(lines, 1):
        if _HEADER.match(line):
            found = [int(c) for c in re.findall(r"CPU(\d+)", line)]
            cpus = (cpus or []) + found if in_header else found
            in_header, open_row = True, None
            continue
        in_header = False
        if not line.strip() or _OTHER.match(line):
            open_row = None
            continue
        for part in _JOINED.split(line):
            m = _ROW.match(part)
            if m:
                open_row = (m.group(2) or "").split()
                rows.append((line_no, m.group(1), open_row))
            elif open_row is not None and _incomplete(open_row, cpus):
                open_row.extend(part.split())
            else:
                open_row = None
    return cpus, rows


def _incomplete(tokens: list[str], cpus: list[int] | None) -> bool:
    """A row still waiting for counts or for its chip and name."""
    counts = 0
    while counts < len(tokens) and tokens[counts].isdigit():
        counts += 1
    if cpus is not None and counts < len(cpus):
        return True
    return counts == len(tokens)


def parse_interrupts(text: str) -> dict[str, Any]:
    """``{"cpus": [0, 1, ...] | None, "irqs": [{"irq", "counts", "total", "chip", "hwirq", "name"}]}``."""
    lines = undecorate(text).split("\n")
    cpus, rows = _rows(lines)
    irqs: list[dict[str, Any]] = []
    for at, (line_no, irq, row) in enumerate(rows):
        tokens = list(row)
        limit = len(cpus) if cpus is not None else len(tokens)
        counts: list[int] = []
        while tokens and len(counts) < limit and tokens[0].isdigit():
            counts.append(int(tokens.pop(0)))
        if cpus is not None and len(counts) < len(cpus) and (tokens or at < len(rows) - 1):
            raise unreadable(line_no, lines[line_no - 1], f"{len(counts)} counts under {len(cpus)} CPU columns")
        chip = tokens.pop(0) if tokens else None
        hwirq = tokens.pop(0) if len(tokens) > 1 and _HWIRQ.match(tokens[0]) else None
        record = {"irq": int(irq), "counts": counts, "total": sum(counts), "chip": chip,
                  "hwirq": hwirq, "name": " ".join(tokens) or None}
        if chip is None:
            # the listing stops inside this row (a paste or a terminal cut it): its chip and name
            # are lost, and its counts may be too (``total`` counts only the CPUs printed)
            record["cut"] = True
        irqs.append(record)
    return {"cpus": cpus, "irqs": irqs}


PARSERS = {"interrupts": parse_interrupts}
READS = {"interrupts": "/proc/interrupts (kernel 2.6 to 6.x; x86 IO-APIC/PCI-MSI/IR-PCI-MSIX-<BDF>, ARM GICv3, "
                       "Hyper-V PCIe MSI chips): per IRQ its count on each CPU, chip, hwirq and name (mlx5_comp<N>@pci:"
                       "<BDF>, ice-<dev>-TxRx-<N>, bnxt_en, ionic, virtio, i40e queues); with or without the CPU "
                       "header, grep excerpts, rows and headers wrapped over several lines, rows run together, a last "
                       "row cut before its chip (kept with cut: true)"}
