"""``numactl -H``: NUMA nodes, their CPUs, memory size and free, and the distance matrix."""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import undecorate, unreadable


def _cpus(text: str) -> list[int]:
    """``0 1 2 3`` as numactl prints them, or a CPU list of ranges (``0-95,192-287``)."""
    out: list[int] = []
    for part in re.split(r"[\s,]+", text.strip()):
        if part:
            low, _, high = part.partition("-")
            out.extend(range(int(low), int(high or low) + 1))
    return out


def parse_numactl(text: str) -> dict[str, Any]:
    """Nodes (a node without CPUs, e.g. CXL or HBM memory, has ``cpus: []``) and ``distances``.

    A ``node N cpus:`` list that a mail or terminal wrapped continues on the next line(s) of bare
    CPU numbers (``... 107 108`` / ``109``). A ``node N cpus:`` or distance row that is not numbers
    names its line (ToolFailure ``unreadable``)."""
    nodes: dict[int, dict[str, Any]] = {}
    distances: dict[int, list[int]] = {}
    header: list[int] = []
    in_distances = False
    available = None
    wrapped: dict[str, Any] | None = None  # the node whose cpus line may continue on the next line
    for line_no, line in enumerate(undecorate(text).split("\n"), 1):
        if wrapped is not None and re.fullmatch(r"\s*\d+(?:\s+\d+)*\s*", line):
            wrapped["cpus"].extend(int(c) for c in line.split())
            continue
        wrapped = None
        m = re.match(r"^available:\s*(\d+) nodes", line)
        if m:
            available = int(m.group(1))
            continue
        m = re.match(r"^node (\d+) (cpus|size|free):\s*(.*)$", line)
        if m:
            node = nodes.setdefault(int(m.group(1)), {"node": int(m.group(1)), "cpus": []})
            if m.group(2) == "cpus":
                if not re.fullmatch(r"[\d\s]*|\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\s*", m.group(3)):
                    raise unreadable(line_no, line, "CPU numbers expected")
                node["cpus"] = _cpus(m.group(3))
                wrapped = node
            else:
                mb = re.match(r"(\d+)\s*MB", m.group(3))
                node[f"{m.group(2)}_mb"] = int(mb.group(1)) if mb else None
            continue
        if line.startswith("node distances"):
            in_distances = True
            continue
        if in_distances:
            if line.strip().startswith("node"):
                header = [int(x) for x in line.split()[1:]]
                continue
            m = re.match(r"^\s*(\d+):\s*(.*)$", line)
            if m:
                if not re.fullmatch(r"[\d\s]*", m.group(2)):
                    raise unreadable(line_no, line, "distances expected")
                distances[int(m.group(1))] = [int(x) for x in m.group(2).split()]
    for number, node in nodes.items():
        node["has_cpu"] = bool(node["cpus"])
        node["distances"] = distances.get(number, [])
    return {
        "available_nodes": available,
        "nodes": [nodes[n] for n in sorted(nodes)],
        "distance_header": header,
        "cpuless_nodes": [n for n in sorted(nodes) if not nodes[n]["cpus"]],
    }


PARSERS = {"numactl": parse_numactl}
READS = {"numactl": "numactl -H / --hardware (numactl 2.x): 'available: N nodes', per node cpus, size and free MB "
                    "(CPU-less CXL / HBM memory nodes as cpus []), the node distances matrix; 2 to 8+ nodes, "
                    "cpus lists a mail or terminal wrapped, prompts and '> ' quotes"}
