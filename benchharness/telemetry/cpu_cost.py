"""CPU cost of moving bytes: one host over one step, from its sampler lines (pure functions).

* **CPU-seconds per GB**: the CPU seconds the host spent over the step divided by the GB its NICs
  moved (rx + tx bytes of the step's netdevs, from the NIC byte counters the sampler reads every
  interval). The seconds are the busy (non-idle, non-iowait) time of every core from
  ``/proc/stat``, or, when the host names a cgroup (``telemetry_cpu_cgroup``: a container, a lab
  host), that cgroup's user + system time. 1 CPU-s/GB at 1 Gbit/s is 0.125 cores busy.
* **Busiest core**: the core with the most busy time over the step, as a share of the step's
  time, with the share of that busy time spent in softirq (packet processing). One core near
  100% in softirq caps a NIC's throughput while the host-wide mean looks idle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchharness.telemetry.parsers.sampler import SampleLine

#: Fewer bytes than this in a step: too little traffic to call a cost per GB.
MIN_BYTES = 10_000_000


@dataclass(frozen=True)
class CpuCost:
    """One host's CPU over one step (or several summed)."""

    cpu_s: float
    scope: str  # "host" (/proc/stat, all cores) or "cgroup"
    bytes: float
    seconds: float
    busiest_core: str | None
    busiest_pct: float | None
    busiest_softirq_share: float | None
    cores: int

    @property
    def gb(self) -> float:
        return self.bytes / 1e9

    @property
    def cpu_s_per_gb(self) -> float | None:
        return self.cpu_s / self.gb if self.bytes >= MIN_BYTES else None

    @property
    def gbps(self) -> float | None:
        return self.bytes * 8 / 1e9 / self.seconds if self.seconds > 0 else None


def step_cost(lines: Sequence[SampleLine], netdevs: set[str] | None = None) -> CpuCost | None:
    """The cost over one host's lines of one step; None when they carry no per-core times."""
    lines = [ln for ln in lines if ln.interval_s]
    if not lines or not any(ln.cores for ln in lines):
        return None
    seconds = sum(float(ln.interval_s or 0.0) for ln in lines)
    moved = [b for ln in lines if (b := ln.bytes_moved(netdevs)) is not None]
    busy: dict[str, float] = {}
    soft: dict[str, float] = {}
    for ln in lines:
        for core in ln.cores:
            busy[core.name] = busy.get(core.name, 0.0) + core.busy_s
            soft[core.name] = soft.get(core.name, 0.0) + core.softirq_s
    cgroup = [ln.cgroup for ln in lines if ln.cgroup is not None and ln.cgroup.error is None]
    if cgroup and len(cgroup) == len(lines):
        cpu_s, scope = sum(c.busy_s for c in cgroup), "cgroup"
    else:
        cpu_s, scope = sum(busy.values()), "host"
    top = max(busy, key=lambda c: busy[c]) if busy else None
    return CpuCost(cpu_s, scope, sum(moved), seconds, top,
                   100.0 * busy[top] / seconds if top is not None and seconds > 0 else None,
                   soft[top] / busy[top] if top is not None and busy[top] > 0 else None, len(busy))


def total(costs: Sequence[CpuCost]) -> CpuCost | None:
    """Several steps of one host summed: CPU and bytes add up, the busiest core is the worst step's."""
    if not costs:
        return None
    worst = max(costs, key=lambda c: c.busiest_pct or 0.0)
    scopes = {c.scope for c in costs}
    return CpuCost(sum(c.cpu_s for c in costs), scopes.pop() if len(scopes) == 1 else "mixed",
                   sum(c.bytes for c in costs), sum(c.seconds for c in costs), worst.busiest_core,
                   worst.busiest_pct, worst.busiest_softirq_share, max(c.cores for c in costs))
