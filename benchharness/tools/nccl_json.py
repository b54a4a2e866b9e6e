"""nccl-tests' JSON document (``-J FILE``, nccl-tests 2.17 and later), per-iteration timings included.

Format as written by nccl-tests' ``src/util.cu`` (NVIDIA/nccl-tests; file versions 2 to 4 seen):
``{"version", "nccl_version", "config": {..., "devices": [{"rank", "hostname", "device",
"device_hex", ...}]}, "results": [{"size", "count", "type", "redop", "root", "out_of_place":
{"time" | "cpu_time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {...}, and with ``-I 1``
"out_of_place_per_iter" / "in_place_per_iter": {"min_us", "max_us", "avg_us", "p50_us", "p95_us",
"p99_us", "stdev_us", "cv_pct", "times_us": [per iteration, the max over processes],
"per_process_max_times_us": [[per iteration] per MPI process] (more than one process only)}}],
"out_of_bounds": {"count", "okay"}, "average_bus_bandwidth": {"bandwidth", "okay"}, "errors"}``.
Booleans are written as the strings ``"true"``/``"false"``, NaN as ``"nan"``.

``parse_json`` gives the same records as the text parser (``tools/nccl_parse.py``, kept for
versions without ``-J``), plus the per-iteration statistics; ``iterations`` gives the per-process
timing rows that ``analysis/stragglers.py`` reads.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Record

#: What ``bench parse nccl-tests-json`` reads (``bench parse --list``).
READS = {"nccl-tests-json": "nccl-tests -J FILE documents (2.17 on, versions 2 to 4: step_factor or step_bytes, "
                            "-I 1 per-iteration statistics and times, one or many processes), a document cut "
                            "short (its complete rows kept) or closed after its config (no results: refused)"}

PLACEMENTS = (("out_of_place", "out-of-place"), ("in_place", "in-place"))
_STATS = ("min_us", "max_us", "avg_us", "p50_us", "p95_us", "p99_us", "stdev_us", "cv_pct")


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def load(text: str) -> dict[str, Any]:
    """The document, or a ToolFailure saying why it is not one (another tool's JSON, or cut short
    before any complete result row). A document cut short (the run was killed while writing it)
    keeps its complete ``results`` rows and its head, with ``truncated: True`` and ``cut_at``
    (``line L, column C``) added."""
    start = text.find("{")
    body = text[start:] if start >= 0 else text
    try:  # the first document; what follows it (the next shell prompt of a paste) is not read
        doc = json.JSONDecoder().raw_decode(body)[0]
    except ValueError as exc:
        doc = _salvage(body, exc)
    if isinstance(doc, dict) and not isinstance(doc.get("results"), list) \
            and isinstance(doc.get("config"), Mapping) and "nccl_version" in doc:
        # nccl-tests closes the document when the run stops before its first size (a GPU it
        # cannot use, an NCCL init failure): the head is whole, the results list never opened
        devices = doc["config"].get("devices")
        listed = f"{len(devices)} device record(s)" if isinstance(devices, list) else "no devices list"
        raise ToolFailure("no_results", f"nccl-tests JSON document without results: the run stopped "
                                        f"after writing its config ({listed})")
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ToolFailure("parse_error", "not an nccl-tests JSON document (no results list)")
    return doc


def _where(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


def _salvage(body: str, exc: ValueError) -> dict[str, Any]:
    """The complete rows of a document cut inside its ``results`` list, and the keys before it."""
    m = re.search(r'"results"\s*:\s*\[', body)
    if not m:
        raise ToolFailure("parse_error", f"not a complete nccl-tests JSON document: {exc}") from exc
    decoder = json.JSONDecoder()
    rows: list[Any] = []
    pos = m.end()
    while True:
        while pos < len(body) and body[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(body) or body[pos] == "]":
            break
        try:
            row, pos = decoder.raw_decode(body, pos)
        except ValueError:
            break
        rows.append(row)
    closed = pos < len(body) and body[pos] == "]"
    if closed:  # the list is whole: the cut is after it
        pos = getattr(exc, "pos", len(body))
    if not rows:
        raise ToolFailure("parse_error", f"nccl-tests JSON document cut at {_where(body, pos)}, "
                                         "before any complete result row") from exc
    head = body[:m.start()].rstrip().rstrip(",")
    try:
        doc = json.loads(head + "}")
    except ValueError:
        doc = {}
    doc = dict(doc) if isinstance(doc, dict) else {}
    doc.update(results=rows, truncated=True, cut_at=_where(body, pos))
    return doc


def parse_json(text: str) -> list[Record]:
    """One record per size and placement, then a footer record (devices, average bus bandwidth)."""
    doc = load(text)
    records: list[Record] = []
    name = _collective(doc)
    for row in doc["results"]:
        if not isinstance(row, Mapping):
            continue
        for key, placement in PLACEMENTS:
            figures = row.get(key)
            if not isinstance(figures, Mapping):
                continue
            rec: Record = {
                "kind": "summary", "collective": name, "redop": row.get("redop"),
                "root": int(_num(str(row.get("root", "")).strip()) or 0) if str(row.get("root", "")).strip() else None,
                "size_bytes": int(row["size"]), "count": row.get("count"), "type": row.get("type"),
                "placement": placement,
                "time_us": _num(figures.get("time", figures.get("cpu_time"))),
                "algbw_GBps": _num(figures.get("alg_bw")), "busbw_GBps": _num(figures.get("bus_bw")),
                "wrong": None if figures.get("nwrong") is None else int(_num(figures.get("nwrong")) or 0),
            }
            per_iter = row.get(f"{key}_per_iter")
            if isinstance(per_iter, Mapping):
                for stat in _STATS:
                    value = _num(per_iter.get(stat))
                    if value is not None:
                        rec["iter_" + stat] = value
                times = per_iter.get("times_us")
                if isinstance(times, list):
                    rec["iterations"] = len(times)
            if doc.get("truncated"):
                rec["truncated"] = True
            records.append(rec)
    devices = [d for d in (doc.get("config") or {}).get("devices") or [] if isinstance(d, Mapping)]
    per = _ranks_per_process(doc.get("config") or {})
    avg = doc.get("average_bus_bandwidth") or {}
    oob = doc.get("out_of_bounds") or {}
    records.append({
        "kind": "footer", "collective": name, "format": "json", "json_version": doc.get("version"),
        "nccl_version": doc.get("nccl_version"),
        "nranks": sum(max(per, len(p)) for p in process_ranks(doc)) or None,
        "ranks": [{"rank": d.get("rank"), "host": d.get("hostname"), "device": d.get("device"),
                   "pci": d.get("device_hex"), "model": d.get("device_info")} for d in devices],
        "avg_busbw_GBps": _num(avg.get("bandwidth")) if isinstance(avg, Mapping) else None,
        "out_of_bounds": oob.get("count") if isinstance(oob, Mapping) else None,
        "errors": [e for e in doc.get("errors") or [] if e],
        **({"truncated": True, "cut_at": doc.get("cut_at")} if doc.get("truncated") else {}),
    })
    return records


def _collective(doc: Mapping[str, Any]) -> str | None:
    """``all_reduce`` from the program name in ``args`` (``.../all_reduce_perf``)."""
    args = doc.get("args") or []
    if args and isinstance(args[0], str):
        base = args[0].rsplit("/", 1)[-1]
        return base.removesuffix("_perf") or None
    return None


@dataclass(frozen=True)
class IterationRows:
    """Per-iteration times of one size and placement: ``processes[p][i]`` in microseconds (the
    max over process p's GPUs), ``overall[i]`` the max over processes."""

    size_bytes: int
    placement: str
    overall: list[float]
    processes: list[list[float]]


def iterations(doc: Mapping[str, Any]) -> list[IterationRows]:
    """The per-iteration rows of every result that has them (``-I 1``)."""
    out = []
    for row in doc.get("results") or []:
        for key, placement in PLACEMENTS:
            per_iter = row.get(f"{key}_per_iter") if isinstance(row, Mapping) else None
            if not isinstance(per_iter, Mapping):
                continue
            overall = [v for v in (_num(t) for t in per_iter.get("times_us") or []) if v is not None]
            procs = [[float(_num(t) or 0.0) for t in p] for p in per_iter.get("per_process_max_times_us") or []
                     if isinstance(p, list)]
            out.append(IterationRows(int(row["size"]), placement, overall, procs))
    return out


def _ranks_per_process(config: Mapping[str, Any]) -> int:
    return max(1, int(config.get("ngpus") or 1) * int(config.get("nthreads") or 1))


def process_ranks(doc: Mapping[str, Any]) -> list[list[Mapping[str, Any]]]:
    """The device records of each MPI process, in process order. nccl-tests (util.cu) numbers the
    ranks rank = proc * nThreads * nGpus + i, but writes one record per process, the first rank of
    its ``# Using devices`` lines: with ``-g 2`` a process's second GPU is in no record. Records
    of one process (host and pid) are grouped; without pids, ``ngpus x nthreads`` consecutive
    records are taken as one process."""
    config = doc.get("config") or {}
    devices = sorted((d for d in config.get("devices") or [] if isinstance(d, Mapping)),
                     key=lambda d: int(d.get("rank") or 0))
    if devices and all(d.get("pid") is not None for d in devices):
        groups: dict[tuple[Any, Any], list[Mapping[str, Any]]] = {}
        for d in devices:
            groups.setdefault((d.get("hostname"), d.get("pid")), []).append(d)
        return list(groups.values())
    per = _ranks_per_process(config)
    return [devices[i:i + per] for i in range(0, len(devices), per)]


PARSERS = {"nccl-tests-json": parse_json}
