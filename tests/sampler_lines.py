"""Sampler lines written by the real sampler (``onhost/sampler.py``) for stored test runs.

A host is a small procfs/sysfs tree (``/proc/stat``, ``/proc/meminfo``, hwmon temperatures, a
netdev's statistics) that the test moves forward between readings; the sampler's own
``Sources`` reads it (``--root``, no psutil) and its own ``sample_line`` writes each line. Only
the clock is the test's: readings are stamped with the instants asked for, so a stored run's
lines fall inside its steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchharness.onhost import sampler

TICK = 100  # USER_HZ of /proc/stat


@dataclass
class HostTree:
    """A host's counters as /proc and /sys show them, advanced by ``advance``."""

    root: Path
    netdev: str = "eth0"
    cores: int = 4
    #: per core: user nice system idle iowait irq softirq steal, in ticks since boot
    ticks: list[list[int]] = field(default_factory=list)
    rx_bytes: int = 10**9
    tx_bytes: int = 10**9
    temps: dict[str, float] = field(default_factory=dict)  # hwmon chip name -> °C

    def __post_init__(self) -> None:
        if not self.ticks:
            self.ticks = [[1000, 0, 500, 50000, 10, 0, 20, 0] for _ in range(self.cores)]
        (self.root / "proc").mkdir(parents=True, exist_ok=True)
        (self.root / "proc" / "meminfo").write_text("MemTotal:       263842000 kB\nMemAvailable:   250000000 kB\n")
        self.write()

    def write(self) -> None:
        total = [sum(col) for col in zip(*self.ticks, strict=True)]
        rows = [f"cpu  {' '.join(map(str, total))} 0 0"] + [
            f"cpu{i} {' '.join(map(str, t))} 0 0" for i, t in enumerate(self.ticks)]
        (self.root / "proc" / "stat").write_text("\n".join(rows) + "\nintr 0\nctxt 0\n")
        stats = self.root / "sys" / "class" / "net" / self.netdev / "statistics"
        stats.mkdir(parents=True, exist_ok=True)
        for name, value in (("rx_bytes", self.rx_bytes), ("tx_bytes", self.tx_bytes), ("rx_packets", 0),
                            ("tx_packets", 0), ("rx_errors", 0), ("tx_errors", 0), ("rx_dropped", 0),
                            ("tx_dropped", 0)):
            (stats / name).write_text(f"{value}\n")
        for i, (chip, temp) in enumerate(sorted(self.temps.items())):
            mon = self.root / "sys" / "class" / "hwmon" / f"hwmon{i}"
            mon.mkdir(parents=True, exist_ok=True)
            (mon / "name").write_text(chip + "\n")
            (mon / "temp1_input").write_text(f"{int(temp * 1000)}\n")

    def advance(self, seconds: float, busy: Sequence[float], softirq: Sequence[float] = (),
                gbps: float = 0.0, temps: Mapping[str, float] | None = None) -> None:
        """Move time on: core i busy ``busy[i]`` of the time (``softirq[i]`` of it in softirq), and
        ``gbps`` each way through the netdev."""
        for i, t in enumerate(self.ticks):
            share = busy[i] if i < len(busy) else 0.0
            soft = softirq[i] if i < len(softirq) else 0.0
            span = round(seconds * TICK)
            work = round(span * share)
            sirq = round(work * soft)
            t[0] += round((work - sirq) * 0.7)
            t[2] += work - sirq - round((work - sirq) * 0.7)
            t[6] += sirq
            t[3] += span - work
        moved = int(gbps * 1e9 / 8 * seconds)
        self.rx_bytes += moved
        self.tx_bytes += moved
        if temps:
            self.temps.update(temps)
        self.write()


def real_lines(tree: HostTree, start: float, interval: float,
               phases: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One sampler line per phase (``HostTree.advance`` keyword arguments), from wall time ``start``
    on, every ``interval`` seconds: what ``sampler.py --root TREE --no-psutil`` prints."""
    src = sampler.Sources(str(tree.root), use_psutil=False)
    prev = dict(sampler.reading(src, [tree.netdev]), t=0.0, wall=start)
    out = []
    for k, phase in enumerate(phases, start=1):
        tree.advance(interval, **phase)
        now = dict(sampler.reading(src, [tree.netdev]), t=k * interval, wall=start + k * interval)
        out.append(sampler.sample_line(src, [tree.netdev], prev, now))
        prev = now
    return out
