"""The "Halving search" section of the single-run report, for a ``bench bisect`` run.

From ``bisect.json`` (``planning/halving.HalvingSearch.as_dict``): the named nodes with every group
they were in, a node x round grid (each cell: the figure of the group the node was in that round,
marked pass or miss), every group's figure in order, and the notes that say why a missing group
named nobody. Strings reach the page through the autoescaping templates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchharness.results.store import RunDir


def _cell(row: Mapping[str, Any], reference: float | None) -> dict[str, Any]:
    value = row.get("value")
    share = value / reference if isinstance(value, int | float) and reference else None
    status = "pass" if row.get("passed") else "fail"
    return {"value": value, "share": share, "status": status, "purpose": row.get("purpose"),
            "members": list(row.get("members") or []), "round": row.get("round")}


def bisect_section(run: RunDir, info: Mapping[str, Any]) -> dict[str, Any] | None:
    """What ``bisect.html.j2`` shows, or None for a run that is not a halving search."""
    doc = run.read_json("bisect.json")
    if not isinstance(doc, Mapping):
        return None
    reference = doc.get("reference")
    share = float(doc.get("share") or 0.0)
    rows = [r for r in doc.get("results") or [] if isinstance(r, Mapping)]
    rounds = int(doc.get("rounds") or 0)
    hosts = [str(h) for h in doc.get("hosts") or []]
    suspects = [str(h) for h in doc.get("suspects") or []]
    grid = []
    for host in sorted(hosts, key=lambda h: (h not in suspects, hosts.index(h))):
        cells: list[list[dict[str, Any]]] = [[] for _ in range(rounds)]
        for r in rows:
            if host in (r.get("members") or []) and 0 <= int(r.get("round", -1)) < rounds:
                cells[int(r["round"])].append(_cell(r, reference))
        grid.append({"host": host, "suspect": host in suspects, "cells": cells})
    evidence = {h: [_cell(r, reference) for r in (doc.get("evidence") or {}).get(h) or []] for h in suspects}
    return {"test": info.get("test"), "hosts": len(hosts), "rounds": rounds, "max_rounds": doc.get("max_rounds"),
            "reference": reference, "share": share, "bar": reference * share if reference else None,
            "limit": doc.get("limit"), "suspects": suspects, "evidence": evidence, "notes": doc.get("notes") or [],
            "grid": grid, "groups": [_cell(r, reference) for r in rows]}
