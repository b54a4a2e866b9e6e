"""nccl-tests' JSON document with per-iteration times (``-I 1 -J``), for the harness' own host programs.

The CPU benchmark (``mpi_allreduce.py``) and the torch sweep (``torch_dist.py``) write the document
nccl-tests 2.19 writes (src/util.cu: ``version`` 4, ``config.devices``, ``results`` with
``*_per_iter`` blocks), so one reader (``tools/nccl_json.py``) and one straggler analysis
(``tools/nccl_iter.py``, whose wrapper carries the file home on stdout) serve all three.
Standalone (stdlib only): it is copied to the hosts beside the programs that import it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TextIO


def iter_stats(times: Sequence[float]) -> dict[str, float]:
    """nccl-tests' per-iteration statistics of ``times`` in seconds (src/util.cu computeIterStats), in us."""
    ordered = sorted(times)
    n = len(ordered)

    def pct(q: int) -> float:
        return ordered[min(n - 1, (n * q + 99) // 100 - 1)]

    avg = sum(ordered) / n
    stdev = (sum((t - avg) ** 2 for t in ordered) / n) ** 0.5
    return {"min_us": ordered[0] * 1e6, "max_us": ordered[-1] * 1e6, "avg_us": avg * 1e6,
            "p50_us": ordered[n // 2] * 1e6, "p95_us": pct(95) * 1e6, "p99_us": pct(99) * 1e6,
            "stdev_us": stdev * 1e6, "cv_pct": stdev / avg * 100.0 if avg > 0 else 0.0}


def per_iter_block(per_process: Sequence[Sequence[float]]) -> dict[str, Any]:
    """``*_per_iter`` of one size and placement from each process's iteration times (seconds):
    statistics of the max over processes per iteration, ``times_us`` and, with more than one
    process, ``per_process_max_times_us``."""
    overall = [max(col) for col in zip(*per_process, strict=True)]
    block: dict[str, Any] = {"skipped_iterations": 0, **iter_stats(overall),
                             "times_us": [t * 1e6 for t in overall]}
    if len(per_process) > 1:
        block["per_process_max_times_us"] = [[t * 1e6 for t in p] for p in per_process]
    return block


def document(args: Sequence[str], minbytes: int, maxbytes: int, warmup: int, iters: int, per_iter: bool,
             devices: Sequence[dict[str, Any]], nccl_version: str | None = None) -> dict[str, Any]:
    """The document's head; ``results`` is filled size by size and :func:`finish` closes it."""
    return {"version": 4, "start_time": time.strftime("%Y-%m-%d %H:%M:%S"), "args": list(args),
            "nccl_version": nccl_version,
            "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": minbytes, "maximum_bytes": maxbytes,
                       "warmup_iters": warmup, "iterations": iters,
                       "per_iter_timing": "true" if per_iter else "false", "devices": list(devices)},
            "results": []}


def finish(doc: dict[str, Any], errors: int, avg_busbw: float) -> dict[str, Any]:
    """``doc`` with the tail nccl-tests writes after the last size."""
    doc.update({"out_of_bounds": {"count": errors, "okay": "false" if errors else "true"},
                "average_bus_bandwidth": {"bandwidth": avg_busbw, "okay": "unchecked"}, "errors": [""],
                "end_time": time.strftime("%Y-%m-%d %H:%M:%S")})
    return doc


def open_new(path: str) -> TextIO:
    """``path`` opened for writing, or ``path.0``, ``path.1`` ... when it exists (as nccl-tests)."""
    for candidate in [path] + [f"{path}.{i}" for i in range(1000)]:
        try:
            return open(candidate, "x", encoding="utf-8")
        except FileExistsError:
            continue
    raise FileExistsError(path)

