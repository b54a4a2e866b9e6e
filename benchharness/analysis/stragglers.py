"""Stragglers and spikes from nccl-tests' per-iteration JSON (``-I 1 -J FILE``).

With more than one MPI process nccl-tests writes, per size and placement, each process's time of
every iteration (``per_process_max_times_us``: the max over that process's GPUs). A collective
waits for its slowest member, so:

- a **straggler** is a process whose median iteration time is more than ``factor`` (1.2) times
  the median process's: named with its ranks, host and GPU (``config.devices``);
- a **spike** is an iteration whose time (max over processes) exceeds ``spike`` (1.5) times the
  median iteration; it is *system-wide* when most processes spiked with it, else it names the
  processes that did (nccl-tests' own ``analyze_perf_json.py`` reads the same fields).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchharness.tools.nccl_json import IterationRows, iterations, load, process_ranks

DEFAULT_FACTOR = 1.2
DEFAULT_SPIKE = 1.5


@dataclass(frozen=True)
class Straggler:
    """A process slower than its peers at one size and placement."""

    size_bytes: int
    placement: str
    process: int
    ranks: list[dict[str, Any]]
    median_us: float
    peers_median_us: float

    @property
    def factor(self) -> float:
        return self.median_us / self.peers_median_us if self.peers_median_us else float("inf")

    def where(self) -> str:
        """``rank 3 on gpu-b GPU 1 (0000:05:00)``; the process number when devices are unknown."""
        if not self.ranks:
            return f"process {self.process}"
        return "; ".join(f"rank {r.get('rank')} on {r.get('hostname')} GPU {r.get('device')}"
                         + (f" ({r.get('device_hex')})" if r.get("device_hex") else "") for r in self.ranks)


@dataclass(frozen=True)
class Spike:
    """An iteration far above the median iteration of its size and placement."""

    size_bytes: int
    placement: str
    iteration: int
    time_us: float
    median_us: float
    processes: list[int] = field(default_factory=list)
    system_wide: bool = False


def _stragglers(rows: IterationRows, ranks: list[list[Mapping[str, Any]]], factor: float) -> list[Straggler]:
    medians = [statistics.median(p) for p in rows.processes if p]
    if len(medians) < 2:
        return []
    peers = statistics.median(medians)
    out = []
    for i, m in enumerate(medians):
        if peers > 0 and m > factor * peers:
            out.append(Straggler(rows.size_bytes, rows.placement, i,
                                 [dict(r) for r in ranks[i]] if i < len(ranks) else [], m, peers))
    return out


def _spikes(rows: IterationRows, threshold: float) -> list[Spike]:
    times = rows.overall or ([max(col) for col in zip(*rows.processes, strict=False)] if rows.processes else [])
    if len(times) < 3:
        return []
    median = statistics.median(times)
    out = []
    for i, t in enumerate(times):
        if median <= 0 or t <= threshold * median:
            continue
        procs: list[int] = []
        for p, series in enumerate(rows.processes):
            if i < len(series) and series:
                own = statistics.median(series)
                if own > 0 and series[i] > threshold * own:
                    procs.append(p)
        wide = bool(rows.processes) and len(procs) * 2 > len(rows.processes)
        out.append(Spike(rows.size_bytes, rows.placement, i, t, median, procs, wide))
    return out


def analyze(doc: Mapping[str, Any], factor: float = DEFAULT_FACTOR, spike: float = DEFAULT_SPIKE
            ) -> tuple[list[Straggler], list[Spike]]:
    """Stragglers and spikes of every size and placement with per-iteration data."""
    ranks = [list(p) for p in process_ranks(doc)]
    stragglers: list[Straggler] = []
    spikes: list[Spike] = []
    for rows in iterations(doc):
        stragglers += _stragglers(rows, ranks, factor)
        spikes += _spikes(rows, spike)
    return stragglers, spikes


def lines(stragglers: list[Straggler], spikes: list[Spike]) -> list[str]:
    """Console lines: the slow ranks with host and GPU, then the spiking iterations."""
    out = []
    for s in stragglers:
        out.append(f"straggler at {s.size_bytes} B {s.placement}: {s.where()}: median iteration "
                   f"{s.median_us:.4g} us = {s.factor:.2f}x the median process ({s.peers_median_us:.4g} us)")
    for k in spikes:
        who = ("system-wide" if k.system_wide else
               f"processes {', '.join(map(str, k.processes))}" if k.processes else "no single process")
        out.append(f"spike at {k.size_bytes} B {k.placement}: iteration {k.iteration} took {k.time_us:.4g} us "
                   f"= {k.time_us / k.median_us:.2f}x the median ({who})")
    return out


def report(text: str) -> dict[str, Any]:
    """``bench parse nccl-stragglers FILE.json``: the stragglers and spikes of one ``-J`` document."""
    found, spikes = analyze(load(text))
    return {"stragglers": [dict(s.__dict__, factor=round(s.factor, 3), where=s.where()) for s in found],
            "spikes": [dict(k.__dict__) for k in spikes], "lines": lines(found, spikes)}


PARSERS = {"nccl-stragglers": report}
