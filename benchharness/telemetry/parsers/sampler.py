"""The one reader of ``onhost/sampler.py``'s output: its interval lines and counter snapshots.

Every consumer reads sampler text through ``read_sampler`` (the sampler's stdout, or a stored
``telemetry/samples/<step>/<host>.jsonl``), never with a JSON loop of its own: the runner's
observer, the counter series, fabric health, load limits, the report's charts and the CPU cost.
A line cut short (SIGKILL, a full disk, a host gone) is skipped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchharness.telemetry.counters import parse_snapshot

#: What a sampler line names the per-core modes when it has no ``cpu.modes`` of its own.
CPU_MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
IDLE_MODES = ("idle", "iowait")


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class CoreTime:
    """One core's seconds per mode over one interval (``/proc/stat`` deltas)."""

    name: str
    modes: dict[str, float]

    @property
    def busy_s(self) -> float:
        return sum(v for m, v in self.modes.items() if m not in IDLE_MODES)

    @property
    def total_s(self) -> float:
        return sum(self.modes.values())

    @property
    def softirq_s(self) -> float:
        return self.modes.get("softirq", 0.0)


@dataclass(frozen=True)
class CgroupCpu:
    """A cgroup's CPU seconds over one interval (``--cpu-cgroup``): per core (v1) or ``cpu`` (v2)."""

    path: str | None
    cores: dict[str, float]  # name -> seconds
    error: str | None = None

    @property
    def busy_s(self) -> float:
        return sum(self.cores.values())


@dataclass(frozen=True)
class NetRates:
    """One netdev over one interval: rates per second as the sampler computed them."""

    rx_bytes_per_s: float | None
    tx_bytes_per_s: float | None
    rx_gbps: float | None
    tx_gbps: float | None


@dataclass(frozen=True)
class SampleLine:
    """One interval line. ``raw`` is the line as written (for storing it again)."""

    ts: float
    interval_s: float | None
    source: str | None
    cpu_total_pct: float | None
    per_core_pct: tuple[float, ...]
    cores: tuple[CoreTime, ...]
    cgroup: CgroupCpu | None
    mem_used_pct: float | None
    net: dict[str, NetRates]
    temps: dict[str, float]
    raw: dict[str, Any] = field(repr=False, compare=False)
    power_w: dict[str, float] = field(default_factory=dict)  # hwmon power sensors (NIC, module ...), W

    def bytes_moved(self, netdevs: set[str] | None = None) -> float | None:
        """rx+tx bytes of the netdevs (all when None) over the interval; None when not read."""
        if self.interval_s is None:
            return None
        found = [v for nd, r in self.net.items() if netdevs is None or nd in netdevs
                 for v in (r.rx_bytes_per_s, r.tx_bytes_per_s) if v is not None]
        return sum(found) * self.interval_s if found else None


@dataclass(frozen=True)
class Snapshot:
    """One counter snapshot line (``--edge-snapshots``: phase start, interval or end)."""

    ts: float
    phase: str
    counters: dict[str, int]
    gpu: Any = None
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class SamplerOutput:
    """Everything one sampler run printed, in its order."""

    lines: list[SampleLine]
    snapshots: list[Snapshot]


def _cores(cpu: Mapping[str, Any]) -> tuple[CoreTime, ...]:
    modes: Sequence[Any] = cpu["modes"] if isinstance(cpu.get("modes"), list) else CPU_MODES
    per = cpu.get("modes_s")
    out = []
    for name, values in per.items() if isinstance(per, Mapping) else []:
        if isinstance(values, list) and len(values) == len(modes):
            nums = [_num(v) for v in values]
            out.append(CoreTime(str(name), {str(m): v for m, v in zip(modes, nums, strict=True) if v is not None}))
    return tuple(sorted(out, key=lambda c: (len(c.name), c.name)))


def _cgroup(cpu: Mapping[str, Any]) -> CgroupCpu | None:
    cg = cpu.get("cgroup")
    if not isinstance(cg, Mapping):
        return None
    raw = cg.get("cores")
    cores = {str(k): v for k, x in raw.items() if (v := _num(x)) is not None} if isinstance(raw, Mapping) else {}
    return CgroupCpu(str(cg["path"]) if cg.get("path") else None, cores,
                     str(cg["error"]) if cg.get("error") else None)


def line_of(item: Mapping[str, Any]) -> SampleLine | None:
    """One interval line read from its JSON object; None for a snapshot or a line without time."""
    ts = _num(item.get("ts"))
    if ts is None or item.get("type") == "snapshot":
        return None
    cpu: Mapping[str, Any] = item["cpu"] if isinstance(item.get("cpu"), Mapping) else {}
    mem: Mapping[str, Any] = item["mem"] if isinstance(item.get("mem"), Mapping) else {}
    net: dict[str, NetRates] = {}
    for nd, rates in (item.get("net") or {}).items() if isinstance(item.get("net"), Mapping) else []:
        if isinstance(rates, Mapping):
            net[str(nd)] = NetRates(_num(rates.get("rx_bytes_per_s")), _num(rates.get("tx_bytes_per_s")),
                                    _num(rates.get("rx_gbps")), _num(rates.get("tx_gbps")))
    temps = {str(k): v for k, raw in (item.get("temps") or {}).items()
             if (v := _num(raw)) is not None} if isinstance(item.get("temps"), Mapping) else {}
    per_core: list[Any] = cpu["per_core_pct"] if isinstance(cpu.get("per_core_pct"), list) else []
    return SampleLine(ts, _num(item.get("interval_s")), str(item["source"]) if item.get("source") else None,
                      _num(cpu.get("total_pct")), tuple(v for p in per_core if (v := _num(p)) is not None),
                      _cores(cpu), _cgroup(cpu), _num(mem.get("used_pct")), net, temps, dict(item),
                      {str(k): v for k, raw in (item.get("power_w") or {}).items() if (v := _num(raw)) is not None}
                      if isinstance(item.get("power_w"), Mapping) else {})


def _snapshot_of(item: Mapping[str, Any]) -> Snapshot | None:
    ts = _num(item.get("ts"))
    if item.get("type") != "snapshot" or ts is None:
        return None
    counters = {str(k): int(v) for k, v in (item.get("counters") or {}).items()
                if isinstance(v, int) and not isinstance(v, bool)}
    return Snapshot(ts, str(item.get("phase", "?")), counters, item.get("gpu"),
                    tuple(str(e) for e in item.get("errors") or []))


def _items(text: str) -> list[dict[str, Any]]:
    out = []
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw:
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError:
            continue  # a line cut when the host went away
        if isinstance(item, dict):
            out.append(item)
    return out


def read_sampler(text: str) -> SamplerOutput:
    """The interval lines and counter snapshots of one sampler run's text."""
    lines: list[SampleLine] = []
    snaps: list[Snapshot] = []
    for item in _items(text):
        snap = _snapshot_of(item)
        if snap is not None:
            snaps.append(snap)
        elif (line := line_of(item)) is not None:
            lines.append(line)
    return SamplerOutput(lines, snaps)


def read_sampler_file(path: Path) -> SamplerOutput:
    """``read_sampler`` over a stored file; a file that cannot be read has no lines."""
    try:
        return read_sampler(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return SamplerOutput([], [])


def parse_sampler_output(text: str) -> list[dict[str, Any]]:
    """Every complete interval line as written (``bench parse sampler``)."""
    return [line.raw for line in read_sampler(text).lines]


PARSERS = {"sampler": parse_sampler_output, "counters-snapshot": parse_snapshot}
READS = {
    "sampler": "the harness's own onhost/sampler.py output (JSON lines: one per interval, with cpu, net, "
               "counters; a stored telemetry/samples/<step>/<host>.jsonl): every complete interval line as "
               "written, a line cut short skipped",
    "counters-snapshot": "a sampler --snapshot JSON document, or pasted counter listings in one text: ethtool -S "
                         "(any driver; [N]: / rxq0: per-queue names), rdma statistic show, perfquery [-x], "
                         "show_counters and grep . of /sys/class/infiniband/*/ports/*/(hw_)counters or the "
                         "/sys/devices/... path (mlx5, hfi1, i40iw 'N/A (no PMA)': an error), the same directory "
                         "listed after a cd or a prompt naming it (head/tail '==> f <==', echo '=== f ===' loop "
                         "banners, printf/paste name-value rows), "
                         "/sys/class/net/*/statistics, netstat -s / nstat -> '<source>:<device>:<counter>' "
                         "names the health verdicts read",
}
