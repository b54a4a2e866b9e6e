"""``/proc/interrupts``: per IRQ its count on each CPU, interrupt chip, hardware IRQ and name.

The header names the CPU columns (``CPU0 CPU1 ...``; offline CPUs leave gaps). A grepped excerpt
without the header (``grep mlx5 /proc/interrupts``) is read too: its leading numbers are the counts,
and ``cpus`` is None. Rows that are not numbered IRQs (``NMI``, ``LOC`` ...) are left out.

A row of a many-CPU machine that a terminal or a mail wrapped goes on over the next lines (bare
counts, then the chip and name), the header likewise over several lines of ``CPUn`` names; a copy
that lost its line ends (``... ice-enp59s0f1-TxRx-32 293:   0   0``) starts the next row where its
``N:`` stands. With a header, a row whose counts do not fill its CPU columns before the chip is an
error naming the line. A row without its chip and name, where the listing stops (a cut paste),
is kept with the counts printed and ``cut: true``. A poster's ``...`` in place of CPU columns
(``CPU0 CPU1 ... CPU38 CPU39`` and the same in each row) or of rows leaves the counts of the CPUs
printed, with ``elided: true``.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import undecorate, unreadable

_ROW = re.compile(r"^\s*(\d+):(?:\s+(.*))?$")
_OTHER = re.compile(r"^\s*[A-Z][A-Z0-9]{1,4}:(?:\s|$)")  # NMI: LOC: ERR: MIS: IPI0: ...
_JOINED = re.compile(r"(?<=\S)\s+(?=\d+:(?:\s+\d|\s*$))")  # a row that starts mid-line
_HWIRQ = re.compile(r"^(?:\d+-)?(?:edge|level|fasteoi|simple)$|^\d+-\w+$")
_HEADER = re.compile(r"^\s*(?:(?:CPU\d+|\.{3,}|\u2026)\s*)*CPU\d+(?:\s*(?:CPU\d+|\.{3,}|\u2026))*\s*$")
_DOTS = re.compile(r"^(?:\.{3,}|\u2026)$")  # the poster's "..." for CPU columns or rows left out
#: the hardware IRQ number the kernel prints after a chip name of several words ("Hyper-V PCIe MSI
#: 2701534461953-edge", kernel/irq/proc.c: chip name, hwirq, then "-<handler name>")
_HWIRQ_GLUED = re.compile(r"^\d+-[A-Za-z]\w*$")


def _rows(lines: list[str]) -> tuple[list[int] | None, list[tuple[int, str, list[str]]], bool]:
    """(CPU numbers of the header, [(line number, irq, tokens after ``N:``)], whether the header has
    "..." in place of CPU columns) with wrapped rows joined."""
    cpus: list[int] | None = None
    rows: list[tuple[int, str, list[str]]] = []
    open_row: list[str] | None = None  # tokens of a row that may go on over the next line
    in_header = False  # a header wrapped over several lines goes on
    elided_columns = False
    for line_no, line in enumerate(lines, 1):
        if _HEADER.match(line):
            found = [int(c) for c in re.findall(r"CPU(\d+)", line)]
            if re.search(r"\.{3,}|\u2026", line):
                elided_columns = True
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
    return cpus, rows, elided_columns


def _incomplete(tokens: list[str], cpus: list[int] | None) -> bool:
    """A row still waiting for counts or for its chip and name."""
    counts = 0
    while counts < len(tokens) and (tokens[counts].isdigit() or _DOTS.match(tokens[counts])):
        counts += 1
    if cpus is not None and counts < len(cpus):
        return True
    return counts == len(tokens)


def parse_interrupts(text: str) -> dict[str, Any]:
    """``{"cpus": [0, 1, ...] | None, "irqs": [{"irq", "counts", "total", "chip", "hwirq", "name"}]}``."""
    lines = undecorate(text).split("\n")
    cpus, rows, header_elided = _rows(lines)
    irqs: list[dict[str, Any]] = []
    for at, (line_no, irq, row) in enumerate(rows):
        tokens = list(row)
        limit = len(cpus) if cpus is not None else len(tokens)
        counts: list[int] = []
        row_elided = False
        while tokens and len(counts) < limit and (tokens[0].isdigit() or _DOTS.match(tokens[0])):
            token = tokens.pop(0)
            if _DOTS.match(token):
                row_elided = True  # "...": the poster left CPU columns out here
            else:
                counts.append(int(token))
        if cpus is not None and len(counts) < len(cpus) and not row_elided and (tokens or at < len(rows) - 1):
            raise unreadable(line_no, lines[line_no - 1], f"{len(counts)} counts under {len(cpus)} CPU columns")
        chip, hwirq = _chip(tokens)
        record = {"irq": int(irq), "counts": counts, "total": sum(counts), "chip": chip,
                  "hwirq": hwirq, "name": " ".join(tokens) or None}
        if row_elided and not header_elided:
            record["elided"] = True  # counts of CPUs left out: total is of those printed
        if chip is None:
            # the listing stops inside this row (a paste or a terminal cut it): its chip and name
            # are lost, and its counts may be too (``total`` counts only the CPUs printed)
            record["cut"] = True
        irqs.append(record)
    out: dict[str, Any] = {"cpus": cpus, "irqs": irqs}
    if header_elided or any(r.get("elided") for r in irqs):
        # "CPU0 CPU1 ... CPU38 CPU39": counts go with the CPUs printed, totals are of those only
        out["elided"] = True
    return out


def _chip(tokens: list[str]) -> tuple[str | None, str | None]:
    """Take the interrupt chip and hardware IRQ off the front of ``tokens`` (what follows the counts).

    The chip's name may be several words (``Hyper-V PCIe MSI``): it ends where a hwirq glued to its
    handler (``2701534461953-edge``) or a hwirq before ``Level``/``Edge`` (ARM GIC) stands."""
    for i in range(1, min(len(tokens) - 1, 4)):
        if _HWIRQ_GLUED.match(tokens[i]) or (tokens[i].isdigit() and tokens[i + 1] in ("Level", "Edge")):
            words, number = " ".join(tokens[:i]), tokens[i]
            del tokens[:i + 1]
            if number.isdigit() and tokens and tokens[0] in ("Level", "Edge"):
                number = f"{number} {tokens.pop(0)}"
            return words, number
    chip = tokens.pop(0) if tokens else None
    hwirq = tokens.pop(0) if len(tokens) > 1 and _HWIRQ.match(tokens[0]) else None
    return chip, hwirq


PARSERS = {"interrupts": parse_interrupts}
READS = {"interrupts": "/proc/interrupts (kernel 2.6 to 6.x; x86 IO-APIC/PCI-MSI/IR-PCI-MSI <hwirq>-edge/IR-PCI-MSIX-<BDF>, "
                       "ARM GICv3 '<hwirq> Level', chip names of several words such as Hyper-V's 'Hyper-V PCIe MSI'): "
                       "per IRQ its count on each CPU, chip, hwirq and name (mlx5_comp<N>@pci:<BDF>, ice-<dev>-TxRx-<N>, "
                       "bnxt_en, ionic, virtio, i40e queues); with or without the CPU header, grep excerpts, rows and "
                       "headers wrapped over several lines, rows run together, a last row cut before its chip (kept with "
                       "cut: true), a poster's '...' for CPU columns or rows (counts of the CPUs printed, elided: true)"}
