"""One value per case and set of hosts, from a run's stored samples (pure Python, no pandas).

A *unit* is one case of a test (its size, direction, swept parameters ...) on one set of hosts
(a pair, one host, or a whole group for collectives), reduced over repetitions by a statistic.
Verdicts compare units with limits; the history catalog stores per-host values built from them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.core.model import Record
from benchharness.core.values import SIZE_PARAMS
from benchharness.results.cases import test_case_keys

#: Units with more hosts than this are groups (collectives, incast): not attributed to one host.
PAIR_MAX = 2
GROUP = ""
"""Host name under which the catalog stores the value of a group unit."""


@dataclass(frozen=True)
class Unit:
    """One case on one set of hosts: ``value`` is the statistic over ``n`` repetitions."""

    case: tuple[tuple[str, Any], ...]
    hosts: tuple[str, ...]
    value: float
    n: int

    @property
    def size(self) -> int | None:
        size = dict(self.case).get("size_bytes")
        return int(size) if isinstance(size, int | float) and not isinstance(size, bool) else None

    @property
    def is_group(self) -> bool:
        return len(self.hosts) > PAIR_MAX


def is_summary(rec: Mapping[str, Any]) -> bool:
    """Summary rows only (interval rows repeat the same measurement over time)."""
    return rec.get("kind", "summary") in ("summary", None)


def swept_keys(test: Mapping[str, Any]) -> tuple[str, ...]:
    """Case-defining labels of a test (from the run's suite snapshot); see ``results.cases``."""
    return test_case_keys(test)


def record_hosts(rec: Mapping[str, Any]) -> tuple[str, ...]:
    """The hosts a sample measured, sorted: its ``endpoints`` (``h1.rail0,h2.rail0``: per-rail
    steps), else the ``hosts`` label, else server/client/host."""
    hosts = rec.get("endpoints") or rec.get("hosts")
    names: list[str] = []
    if isinstance(hosts, list | tuple):
        names = [str(h) for h in hosts]
    elif isinstance(hosts, str) and hosts:
        names = [h.strip() for h in hosts.split(",") if h.strip()]
    if not names:
        names = [str(rec[k]) for k in ("server", "client", "host") if rec.get(k)]
    return tuple(sorted(set(names)))


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def reduce(values: Sequence[float], stat: str = "median") -> float:
    """``median`` (default), ``mean``, ``min`` or ``max`` of the values."""
    if stat == "mean":
        return statistics.fmean(values)
    if stat == "min":
        return min(values)
    if stat == "max":
        return max(values)
    return statistics.median(values)


def _hashable(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), _hashable(v)) for k, v in value.items()))
    return value


def units(records: Iterable[Mapping[str, Any]], metric: str, keys: Sequence[str], *,
          stat: str = "median", select: Callable[[Mapping[str, Any]], bool] | None = None) -> list[Unit]:
    """Units of one metric: records grouped by (case labels in ``keys``, hosts), reduced by ``stat``."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    for rec in records:
        value = _number(rec.get(metric))
        if value is None or not is_summary(rec) or (select is not None and not select(rec)):
            continue
        if rec.get("retest") is True:  # bad-link isolation re-measures only the weak pairs
            continue
        case = tuple((k, _hashable(rec[k])) for k in keys if rec.get(k) is not None)
        groups.setdefault((case, record_hosts(rec)), []).append(value)
    out = [Unit(case, hosts, reduce(vals, stat), len(vals)) for (case, hosts), vals in groups.items()]
    out.sort(key=lambda u: (_sort_key(u.case), u.hosts))
    return out


def _sort_key(case: tuple[tuple[str, Any], ...]) -> tuple[Any, ...]:
    return tuple((k, (0, v, "") if isinstance(v, int | float) else (1, 0, str(v))) for k, v in case)


def case_text(case: Iterable[tuple[str, Any]]) -> str:
    """A case as short text: ``size=1M direction=forward`` (sizes in binary units)."""
    from benchharness.core.units import format_size

    parts = []
    for key, value in case:
        if key == "size_bytes" and isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"size={format_size(int(value))}")
        elif key in SIZE_PARAMS and "size_bytes" in dict(case):
            continue  # the parsed size says it already
        else:
            parts.append(f"{key}={value}")
    return " ".join(parts)


def host_values(found: Iterable[Unit], higher_is_better: bool = True
                ) -> list[tuple[tuple[tuple[str, Any], ...], str, float, int]]:
    """``(case, host, value, units)``: per host the best of the pair or single-host units it is
    in (a slow peer drags a pair down, so a host is as good as its best pair: one bad card does
    not blur its peers' history); group units stay one value under host ``GROUP`` (``""``)."""
    per: dict[tuple[Any, str], list[float]] = {}
    for unit in found:
        for host in ((GROUP,) if unit.is_group else unit.hosts):
            per.setdefault((unit.case, host), []).append(unit.value)
    best = max if higher_is_better else min
    return [(case, host, best(vals), len(vals)) for (case, host), vals in per.items()]


def test_records(records: Iterable[Record], test: str) -> list[Record]:
    """Summary records of one test."""
    return [r for r in records if r.get("test") == test and is_summary(r)]
