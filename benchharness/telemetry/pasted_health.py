"""Two pasted counter snapshots judged as a run judges a step (``bench health BEFORE AFTER seconds=N``).

Each file is read by ``counters.parse_snapshot`` (any form it reads: ``ethtool -S``, ``rdma
statistic show``, ``perfquery``, a ``hw_counters`` listing, ``netstat -s`` / ``nstat``, sysfs
``grep`` lines, the sampler's JSON), the two are differenced by ``counters.delta`` (wraps and
resets as in a run) and each counter object's delta is judged by ``health.judge`` with the limits
of a suite's ``health:`` block (``cli/health.py``: by default the first test of ``acceptance`` with one), host-wide
counters (TCP) going with the one object there is, as ``health.split_rails`` does in a run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.core.errors import ToolFailure, UsageError
from benchharness.telemetry.counters import delta, parse_snapshot
from benchharness.telemetry.health import Judged, judge, split_rails

#: Sources that count for the whole host, not one NIC (the sampler's ``tcp:-:...``, netstat's MIBs).
HOST_WIDE = ("tcp", "tcpext", "ip", "ipext", "udp", "udplite", "icmp", "icmpmsg", "ip6", "icmp6", "udp6",
             "mptcpext", "sctp", "udplite6")


@dataclass(frozen=True)
class PastedVerdict:
    """One limit judged on one counter object (``eth2``, ``mlx5_0/1``, ``lid10/1``; None: host-wide)."""

    obj: str | None
    judged: Judged


def read_snapshot(text: str, name: str) -> dict[str, int]:
    """The counters of one pasted file; a one-line error naming it when it has none."""
    try:
        counters = parse_snapshot(text)
    except ToolFailure as exc:
        raise ToolFailure(exc.kind, f"{name}: {exc.message}") from exc
    except ValueError as exc:
        raise ToolFailure("unreadable", f"{name}: {exc}") from exc
    if not counters:
        why = "it is empty" if not text.strip() else "no line of it is a counter of a known form"
        raise ToolFailure("no_counters", f"{name}: no counters read ({why})")
    return counters


_SLEEP = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)\b")


def read_pair(text: str, name: str) -> tuple[dict[str, int], dict[str, int]]:
    """The two snapshots of one paste that holds the same counters twice (``netstat -s | egrep ...;
    sleep 1; netstat -s | egrep ...``, or two ``ethtool -S`` runs one under the other): split
    where the two halves share the most counters. A one-line error naming the file when no split
    gives two snapshots of the same counters."""
    from benchharness.telemetry.parsers._common import is_noise

    lines = text.replace("\r\n", "\n").split("\n")
    head = next((ln.strip() for ln in lines if ln.strip()), "")
    # where a second run can start: a prompt or command line, a blank line, the first line again;
    # else (one command line, then both runs' lines) the first line that repeats an earlier one
    # but for its figures ("1542398375 requests sent out" after "1542387771 requests sent out")
    starts = [i for i in range(1, len(lines)) if is_noise(lines[i]) or not lines[i].strip()
              or lines[i].strip() == head]
    found = _best_split(lines, starts) or _best_split(lines, _repeat_starts(lines))
    if found is None:
        raise ToolFailure("no_counters", f"{name}: not two snapshots of the same counters; give BEFORE and "
                                         "AFTER as two files")
    return found


def _repeat_starts(lines: list[str]) -> list[int]:
    """The line where a run's first counter line comes again (its figures aside), or else the first
    line that repeats an earlier one so: where a second run of the same command begins."""
    shapes = [re.sub(r"(?<!\w)-?\d[\d.,]*", "#", ln.strip()) if re.search(r"\d", ln) else "" for ln in lines]
    first = next((i for i, s in enumerate(shapes) if s), None)
    if first is None:
        return []
    again = [i for i in range(first + 1, len(lines)) if shapes[i] == shapes[first]]
    if again:
        return again
    seen: set[str] = set()
    for i, shape in enumerate(shapes):
        if shape and shape in seen:
            return [i]
        seen.add(shape)
    return []


def _best_split(lines: list[str], cuts: Sequence[int]) -> tuple[dict[str, int], dict[str, int]] | None:
    best: tuple[int, int, dict[str, int], dict[str, int]] | None = None
    for cut in cuts:
        try:
            before = parse_snapshot("\n".join(lines[:cut]))
            after = parse_snapshot("\n".join(lines[cut:]))
        except (ToolFailure, ValueError):
            continue
        shared = len(set(before) & set(after))
        score = (shared, min(len(before), len(after)))
        if shared and (best is None or score > best[:2]):
            best = (*score, before, after)
    return (best[2], best[3]) if best else None


def pasted_seconds(text: str) -> float | None:
    """The interval a paste states by its ``sleep N`` between the two runs, when it states one."""
    found = {float(m.group(1)) for m in _SLEEP.finditer(text)}
    return found.pop() if len(found) == 1 else None


def _named_alike(snapshot: Mapping[str, int], other: Mapping[str, int]) -> dict[str, int]:
    """``snapshot`` with its unnamed port (``ethtool:-:...``: pasted without its ``ethtool -S DEV``
    line) named as the one port ``other`` names for that source, so the two pastes meet."""
    out = dict(snapshot)
    for source in {k.split(":")[0] for k in snapshot if k.split(":")[1:2] == ["-"]}:
        named = {k.split(":")[1] for k in other if k.startswith(f"{source}:") and k.split(":")[1] != "-"}
        if len(named) == 1:
            name = next(iter(named))
            out = {(f"{source}:{name}:{k.split(':', 2)[2]}" if k.startswith(f"{source}:-:") else k): v
                   for k, v in out.items()}
    return out


def judge_pasted(before: Mapping[str, int], after: Mapping[str, int], *, seconds: float,
                 limits: Mapping[str, Any], speed_gbps: float | None = None) -> list[PastedVerdict]:
    """Each limit on each counter object's delta from ``before`` to ``after`` over ``seconds``."""
    if seconds <= 0:
        raise UsageError(f"seconds={seconds:g}: the time between the snapshots must be positive")
    before, after = _named_alike(before, after), _named_alike(after, before)
    moved = delta(before, after)["counters"]
    if not moved:
        raise ToolFailure("no_common", "the two snapshots share no counter (other ports, hosts or tools?): "
                                       f"before has {', '.join(sorted({k.split(':')[1] for k in before})[:4])}, "
                                       f"after {', '.join(sorted({k.split(':')[1] for k in after})[:4])}")
    objects = sorted({key.split(":")[1] for key in moved
                      if len(key.split(":")) >= 3 and key.split(":")[0] not in HOST_WIDE})
    groups = split_rails(moved, {o: [o] for o in objects}, [])
    out: list[PastedVerdict] = []
    for obj in sorted(groups, key=lambda o: (o is None, o or "")):
        counters = groups[obj]
        segments = sum(v for k, v in counters.items() if k.startswith("tcp:") and k.endswith(":OutSegs")) or None
        ip_packets = sum(v for k, v in counters.items() if k.startswith("ip:") and k.endswith(":OutRequests")) or None
        for verdict in judge(counters, limits, seconds=seconds, speed_gbps=speed_gbps, tcp_segments=segments,
                             ip_packets=ip_packets):
            out.append(PastedVerdict(obj, verdict))
    return out
