"""``numactl -H``: NUMA nodes, their CPUs, memory size and free, and the distance matrix."""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import undecorate, unreadable

_ELLIPSIS = ("...", "\u2026", "....")


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
    listed_nodes: list[int] | None = None  # "available: 16 nodes (0-15)": the node numbers
    wrapped: dict[str, Any] | None = None  # the node whose cpus line may continue on the next line
    elided = False
    for line_no, raw in enumerate(undecorate(text).split("\n"), 1):
        line = raw.strip()  # a listing indented as a whole (a Markdown admonition, a log) reads the same
        if wrapped is not None and re.fullmatch(r"\d+(?:\s+\d+)*", line):
            wrapped["cpus"].extend(int(c) for c in line.split())
            continue
        wrapped = None
        if line in _ELLIPSIS:  # the poster left nodes out
            elided = True
            continue
        m = re.match(r"^available:\s*(\d+) nodes?(?:\s*\(([\d,\s-]*)\))?", line)
        if m:
            available = int(m.group(1))
            listed_nodes = _cpus(m.group(2)) if m.group(2) and m.group(2).strip() else None
            continue
        m = re.match(r"^node (\d+) (cpus|size|free):\s*(.*)$", line)
        if m:
            node = nodes.setdefault(int(m.group(1)), {"node": int(m.group(1)), "cpus": []})
            if m.group(2) == "cpus":
                listed = m.group(3)
                if any(dots in listed.split() for dots in _ELLIPSIS):  # "128 129 130 ... 141 142 143"
                    node["cpus_elided"] = True
                    listed = " ".join(c for c in listed.split() if c not in _ELLIPSIS)
                if not re.fullmatch(r"[\d\s]*|\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*\s*", listed):
                    raise unreadable(line_no, raw, "CPU numbers expected")
                node["cpus"] = _cpus(listed)
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
                    raise unreadable(line_no, raw, "distances expected")
                distances[int(m.group(1))] = [int(x) for x in m.group(2).split()]
    for number, node in nodes.items():
        node["has_cpu"] = bool(node["cpus"])
        node["distances"] = distances.get(number, [])
    out: dict[str, Any] = {
        "available_nodes": available,
        "nodes": [nodes[n] for n in sorted(nodes)],
        "distance_header": header,
        "cpuless_nodes": [n for n in sorted(nodes) if not nodes[n]["cpus"] and not nodes[n].get("cpus_elided")],
    }
    if elided or any(node.get("cpus_elided") for node in nodes.values()):
        out["elided"] = True  # "..." in place of nodes or CPUs: the listing is not whole
    elif nodes:
        # a paste cut before its last nodes or distance rows: what "available:" or the distance
        # header announced and the listing does not show
        expected = listed_nodes or (list(range(available)) if available is not None else [])
        missing = sorted(set(expected) - set(nodes))
        rows_missing = sorted(set(header) - set(distances)) if header else []
        if missing:
            out["missing_nodes"] = missing
        if missing or rows_missing or (len(nodes) > 1 and not distances):
            out["cut"] = True
    return out


PARSERS = {"numactl": parse_numactl}
READS = {"numactl": "numactl -H / --hardware (numactl 2.x): 'available: N nodes', per node cpus, size and free MB "
                    "(CPU-less CXL / HBM / GPU-memory nodes as cpus []), the node distances matrix; 1 to 16 nodes "
                    "(Intel, AMD NPS1-NPS4 on one or two sockets, Grace), CPU lists as numbers or ranges, wrapped by a "
                    "mail or terminal, a listing indented as a whole, '...' where the poster left CPUs or nodes out "
                    "(elided: true), prompts and '> ' quotes; a listing cut before the nodes 'available: N nodes (list)' "
                    "announces or before its distance rows (missing_nodes, cut: true; Sapphire Rapids SNC4 with HBM)"}
