"""The framework compatibility matrix of a run: framework x collective, each cell ran / failed (with
its error) / not installed, the transport it used, and its bus bandwidth at the largest size
against the reference on the same hosts.

A framework is a tool whose adapter declares ``framework`` (its display name); the reference is
a collective tool without one (nccl-tests, rccl-tests) when the run has it, else the framework
whose adapter declares ``framework_reference`` (torch), for the other frameworks. A cell is a
finding when its framework fell back to sockets on RDMA rails or reached less than
``FAR_BELOW`` of the reference's bus bandwidth. Derived from ``steps.jsonl`` and the summary
samples only, so ``bench report`` redraws it for any stored run.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchharness.results.store import RunDir
from benchharness.tools import registry

#: Below this share of the reference's bus bandwidth at the largest common size a framework cell
#: is a finding ("far below nccl-tests' busbw on the same rails", issue 35). Half: a framework
#: moving the same bytes over the same rails loses at most its own copy and launch overheads.
FAR_BELOW = 0.5
#: Framework backends that move data over TCP sockets, as the matrix names them.
SOCKET_BACKENDS = {"gloo": "gloo (TCP sockets)", "ring": "RING (gRPC, TCP sockets)"}
#: Failure kinds that mean the framework is not on the hosts (the tool's interpreter lacks it).
NOT_INSTALLED_KINDS = ("tool_missing",)


def framework_names() -> dict[str, str]:
    """Tool name -> framework display name, for every adapter that declares one."""
    found = {name: getattr(a, "framework", None) for name, a in registry().items()}
    return {name: str(fw) for name, fw in found.items() if fw}


def _reference_tools(tools_in_run: Iterable[str]) -> tuple[list[str], str | None]:
    """(reference collective tools of the run, the reference framework's tool or None)."""
    adapters = registry()
    plain = [t for t in tools_in_run if t in adapters and not getattr(adapters[t], "framework", None)]
    ref = next((t for t in tools_in_run if getattr(adapters.get(t), "framework_reference", False)), None)
    return plain, ref


def _transport(rows: list[Mapping[str, Any]]) -> str | None:
    """NCCL's network (with ``/GDRDMA`` when it used GPUDirect RDMA), else the framework's own
    backend (``gloo``: TCP sockets), from the samples' ``nccl_network`` and ``*_backend`` fields."""
    for r in rows:
        if r.get("nccl_network"):
            return f"{r['nccl_network']}{'/GDRDMA' if r.get('nccl_gdr') else ''}"
    for r in rows:
        backend = next((v for k, v in r.items() if k.endswith("_backend") and isinstance(v, str)), None)
        if backend:
            return SOCKET_BACKENDS.get(backend, backend)
    return None


def _largest(rows: list[Mapping[str, Any]]) -> tuple[int, float] | None:
    """(largest size, median busbw over repetitions there) of summary rows with ``busbw_GBps``."""
    sized = [r for r in rows if isinstance(r.get("size_bytes"), int) and isinstance(r.get("busbw_GBps"), int | float)]
    if not sized:
        return None
    top = max(r["size_bytes"] for r in sized)
    return top, statistics.median(r["busbw_GBps"] for r in sized if r["size_bytes"] == top)


def _at_most(rows: list[Mapping[str, Any]], size: int) -> float | None:
    """Median busbw of ``rows`` at the largest size not above ``size`` (sizes differ by a few bytes
    between collectives: counts are rounded to whole elements per rank)."""
    sized = [r for r in rows if isinstance(r.get("size_bytes"), int) and r["size_bytes"] <= size * 1.01
             and isinstance(r.get("busbw_GBps"), int | float)]
    if not sized:
        return None
    top = max(r["size_bytes"] for r in sized)
    return statistics.median(r["busbw_GBps"] for r in sized if r["size_bytes"] == top)


def _host_of(step: Mapping[str, Any]) -> str | None:
    """The host a failed step names: its ``host``, else the one of its hosts its message says it
    failed on (adapters word it "step S on HOST: ...")."""
    if step.get("host"):
        return str(step["host"])
    message = str(step.get("message") or "")
    return next((str(h) for h in step.get("hosts") or [] if f" on {h}:" in message), None)


def _collective(step: Mapping[str, Any]) -> str:
    return str((step.get("params") or {}).get("op") or "all_reduce")


def matrix(run: RunDir) -> dict[str, Any] | None:
    """The run's matrix (JSON-ready): ``rows`` (one per framework and collective), ``reference``
    and ``far_below``; None when the run has no framework step."""
    names = framework_names()
    steps = list(run.steps())
    last = {s["step"]: s for s in steps}  # a retried step's last line decides
    fw_steps = [s for s in last.values() if s.get("tool") in names]
    if not fw_steps:
        return None
    samples = [r for r in run.summary_samples() if r.get("kind", "summary") == "summary"]
    by_step: dict[str, list[Mapping[str, Any]]] = {}
    for r in samples:
        by_step.setdefault(str(r.get("step")), []).append(r)
    tools_in_run = list(dict.fromkeys(str(s["tool"]) for s in last.values() if s.get("tool")))
    plain, ref_fw = _reference_tools(tools_in_run)
    rows = []
    for tool in (t for t in tools_in_run if t in names):
        for op in dict.fromkeys(_collective(s) for s in fw_steps if s["tool"] == tool):
            cell_steps = [s for s in fw_steps if s["tool"] == tool and _collective(s) == op]
            rows.append(_cell(tool, names[tool], op, cell_steps, by_step, last, plain if plain else
                              ([ref_fw] if ref_fw and ref_fw != tool else [])))
    return {"rows": rows, "reference": plain or ([ref_fw] if ref_fw else []), "far_below": FAR_BELOW}


def _cell(tool: str, framework: str, op: str, cell_steps: Sequence[Mapping[str, Any]],
          by_step: Mapping[str, list[Mapping[str, Any]]], last: Mapping[str, Mapping[str, Any]],
          reference: list[str]) -> dict[str, Any]:
    rows = [r for s in cell_steps for r in by_step.get(s["step"], [])]
    hosts = sorted({h for s in cell_steps for h in s.get("hosts") or []})
    failed = [s for s in cell_steps if s.get("status") != "ok"]
    ok = [s for s in cell_steps if s.get("status") == "ok"]
    cell: dict[str, Any] = {"framework": framework, "tool": tool, "collective": op, "hosts": hosts,
                            "steps": len(cell_steps), "transport": _transport(rows), "finding": None}
    missing = [s for s in failed if s.get("kind") in NOT_INSTALLED_KINDS
               or str(s.get("message") or "").startswith("skipped:")]
    if missing:
        s = missing[0]
        cell |= {"status": "not installed", "error": s.get("message") or s.get("kind"), "host": _host_of(s)}
    elif failed or not ok:
        s = failed[0] if failed else cell_steps[0]
        cell |= {"status": "failed", "error": f"{s.get('kind') or 'failed'}: {s.get('message') or ''}".strip(),
                 "host": _host_of(s)}
    else:
        cell |= {"status": "ran", "error": None, "host": None}
    largest = _largest(rows)
    cell |= {"size_bytes": largest[0] if largest else None, "busbw_GBps": largest[1] if largest else None,
             "reference": None, "reference_busbw_GBps": None, "ratio": None}
    if largest and cell["status"] == "ran":
        for ref in reference:
            ref_rows = [r for s in last.values() if s.get("tool") == ref and s.get("status") == "ok"
                        and _collective(s) == op and sorted(s.get("hosts") or []) == hosts
                        for r in by_step.get(s["step"], [])]
            value = _at_most(ref_rows, largest[0])
            if value:
                cell |= {"reference": ref, "reference_busbw_GBps": value, "ratio": largest[1] / value}
                break
    sockets = any(str(r.get("nccl_network") or "").lower() == "socket" for r in rows)
    if sockets or any(r.get("nccl_socket_fallback") for r in rows):
        cell["finding"] = "fell back to sockets"
    elif cell["ratio"] is not None and cell["ratio"] < FAR_BELOW:
        cell["finding"] = (f"busbw {cell['busbw_GBps']:.4g} GB/s is {cell['ratio']:.0%} of {cell['reference']}'s "
                           f"{cell['reference_busbw_GBps']:.4g} GB/s (below {FAR_BELOW:.0%})")
    return cell


#: What ``side_by_side`` keeps of each run's cell (the rest is in that run's own report).
SIDE_BY_SIDE_FIELDS = ("status", "transport", "size_bytes", "busbw_GBps", "reference", "ratio", "finding", "error",
                       "host")


def side_by_side(runs: Sequence[RunDir], labels: Sequence[str]) -> dict[str, Any] | None:
    """The matrices of several runs (``bench compare``) side by side, JSON-ready: ``labels``, and
    ``rows`` of framework x collective (in the order they first appear) with ``cells``: label -> that
    run's cell (``SIDE_BY_SIDE_FIELDS``), or None where the run did not try that framework and
    collective. None when no run has a framework step."""
    found = [matrix(run) for run in runs]
    if not any(found):
        return None
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for label, m in zip(labels, found, strict=True):
        for cell in (m or {}).get("rows", []):
            row = rows.setdefault((cell["framework"], cell["collective"]), {
                "framework": cell["framework"], "collective": cell["collective"],
                "cells": dict.fromkeys(labels)})
            row["cells"][label] = {k: cell.get(k) for k in SIDE_BY_SIDE_FIELDS}
    return {"labels": list(labels), "rows": list(rows.values()), "far_below": FAR_BELOW}
