"""CPU cost of a stored run: per step, host (and rail) from the samplers, and its limits judged.

Read side over the run directory: each host's sampler lines of a step
(``telemetry/samples/<step>/<host>.jsonl``) give ``telemetry/cpu_cost.step_cost``; the step's
counter context (``telemetry/counters/<step>.json``) says which rail a per-rail step used, and
then only that rail's netdev counts as bytes moved. iperf3's own CPU figures
(``cpu_local_pct`` of the client, ``cpu_remote_pct`` of the server) sit beside them.
Limits (a test's ``health:``): ``cpu_s_per_gb`` and ``busiest_core_pct`` per step and host,
``cpu_vs_peers`` per host over the test against the median of the other hosts.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from benchharness.core.naming import safe_name
from benchharness.results import runview
from benchharness.results.store import RunDir
from benchharness.telemetry.cpu_cost import CpuCost, step_cost, total


@dataclass(frozen=True)
class CpuRow:
    """One host (and rail) in one step."""

    test: str
    step: str  # safe step name
    host: str
    rail: str | None
    cost: CpuCost
    iperf3_cpu_pct: float | None  # iperf3's own figure for this host (mean), percent


def _step_tests(run: RunDir) -> dict[str, str]:
    return {safe_name(str(s.get("step"))): str(s.get("test")) for s in run.iter_steps()}


def _rail_netdevs(run: RunDir, step: str, host: str) -> tuple[str | None, set[str] | None]:
    """(rail, {its netdev}) when the step used exactly one rail of the host, else (None, None)."""
    try:
        data = json.loads((run.path / "telemetry" / "counters" / f"{step}.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None, None
    entry = data.get(host) if isinstance(data, Mapping) else None
    ctx = entry.get("context") if isinstance(entry, Mapping) else None
    used = (ctx or {}).get("step_rails") if isinstance(ctx, Mapping) else None
    if not isinstance(used, list) or len(used) != 1 or not isinstance(ctx, Mapping):
        return None, None
    spec = (ctx.get("rails") or {}).get(used[0]) or {}
    netdev = spec.get("netdev") if isinstance(spec, Mapping) else None
    return str(used[0]), ({str(netdev)} if netdev else None)


def _iperf3_cpu(run: RunDir) -> dict[tuple[str, str], list[float]]:
    """(safe step, host) -> iperf3's own CPU percent: the client's ``cpu_local_pct``, the server's
    ``cpu_remote_pct``."""
    out: dict[tuple[str, str], list[float]] = {}
    for rec in run.summary_samples():
        if rec.get("step") is None:
            continue
        step = safe_name(str(rec["step"]))
        for who, key in (("client", "cpu_local_pct"), ("server", "cpu_remote_pct")):
            value = rec.get(key)
            if rec.get(who) and isinstance(value, int | float) and not isinstance(value, bool):
                out.setdefault((step, str(rec[who])), []).append(float(value))
    return out


def cpu_rows(run: RunDir) -> list[CpuRow]:
    """Every host's CPU cost in every step that has sampler lines with per-core times."""
    tests = _step_tests(run)
    tool_cpu: dict[tuple[str, str], list[float]] | None = None
    out = []
    for step, host, sampled in runview.sampler_files(run):
        rail, netdevs = _rail_netdevs(run, step, host)
        cost = step_cost(sampled.lines, netdevs)
        if cost is None:
            continue
        if tool_cpu is None:
            tool_cpu = _iperf3_cpu(run)
        own = tool_cpu.get((step, host))
        out.append(CpuRow(tests.get(step, "?"), step, host, rail, cost, statistics.fmean(own) if own else None))
    return sorted(out, key=lambda r: (r.test, r.step, r.host, r.rail or ""))


def per_host(rows: list[CpuRow]) -> dict[tuple[str, str, str | None], CpuCost]:
    """(test, host, rail) -> the cost summed over the test's steps."""
    groups: dict[tuple[str, str, str | None], list[CpuCost]] = {}
    for r in rows:
        groups.setdefault((r.test, r.host, r.rail), []).append(r.cost)
    return {k: c for k, v in groups.items() if (c := total(v)) is not None}


def run_summary(run: RunDir) -> dict[str, float | None]:
    """One run in a comparison: the median host CPU-s/GB and the highest busiest-core share."""
    hosts = [c for c in per_host(cpu_rows(run)).values()]
    costs = [c.cpu_s_per_gb for c in hosts if c.cpu_s_per_gb is not None]
    busiest = [c.busiest_pct for c in hosts if c.busiest_pct is not None]
    return {"cpu_s_per_gb_median": statistics.median(costs) if costs else None,
            "cpu_s_per_gb_max": max(costs) if costs else None,
            "busiest_core_pct_max": max(busiest) if busiest else None}


def describe(cost: CpuCost) -> str:
    """``0.82 CPU-s/GB (host CPU, 3.1 GB by NIC counters); busiest core cpu3 71% (softirq 64%)``."""
    per = f"{cost.cpu_s_per_gb:.3g} CPU-s/GB" if cost.cpu_s_per_gb is not None else "CPU-s/GB not judged"
    text = f"{per} ({cost.cpu_s:.2f} CPU-s of the {cost.scope}, {cost.gb:.3g} GB by NIC byte counters)"
    if cost.busiest_core is not None and cost.busiest_pct is not None:
        soft = f", softirq {cost.busiest_softirq_share:.0%}" if cost.busiest_softirq_share is not None else ""
        text += f"; busiest core {cost.busiest_core} {cost.busiest_pct:.0f}%{soft}"
    return text


class LoadRow(NamedTuple):
    """One CPU limit judged: the fields of ``results/fabric.LoadRow``, in its order."""

    test: str
    step: str
    host: str
    rail: str | None
    limit: str
    status: str
    value: float | None
    bound: float | None
    message: str


def judge(run: RunDir, limits: Mapping[str, Mapping[str, Any]]) -> list[LoadRow]:
    """The CPU limits of each test judged (``results/fabric.load_rows`` makes them its rows)."""
    wanted = {t: lim for t, lim in limits.items() if any(k in lim for k in ("cpu_s_per_gb", "cpu_vs_peers",
                                                                            "busiest_core_pct"))}
    if not wanted:
        return []
    rows = [r for r in cpu_rows(run) if r.test in wanted]
    out: list[LoadRow] = []
    for r in rows:
        lim = wanted[r.test]
        bad = str(lim.get("status", "fail"))
        who = f"{r.host}.{r.rail}" if r.rail else r.host
        if "cpu_s_per_gb" in lim:
            bound, value = float(lim["cpu_s_per_gb"]), r.cost.cpu_s_per_gb
            if value is None:
                out.append(LoadRow(r.test, r.step, r.host, r.rail, "cpu_s_per_gb", "info", None, bound,
                                   f"{who}: {r.cost.gb * 1000:.1f} MB moved: too little to judge CPU per GB"))
            else:
                status = bad if value > bound else "pass"
                out.append(LoadRow(r.test, r.step, r.host, r.rail, "cpu_s_per_gb", status, value, bound,
                                   f"{who}: {describe(r.cost)} {'>' if status != 'pass' else '≤'} limit {bound:g}"))
        if "busiest_core_pct" in lim and r.cost.busiest_pct is not None:
            bound, value = float(lim["busiest_core_pct"]), r.cost.busiest_pct
            status = bad if value > bound else "pass"
            out.append(LoadRow(r.test, r.step, r.host, r.rail, "busiest_core_pct", status, value, bound,
                               f"{who}: {describe(r.cost)} {'>' if status != 'pass' else '≤'} limit {bound:g}%"))
    for test, lim in wanted.items():
        if "cpu_vs_peers" in lim:
            out += _peer_rows(test, float(lim["cpu_vs_peers"]), str(lim.get("status", "fail")),
                              {k: v for k, v in per_host(rows).items() if k[0] == test})
    return out


def _peer_rows(test: str, bound: float, bad: str,
               hosts: Mapping[tuple[str, str, str | None], CpuCost]) -> list[LoadRow]:
    costs = {(h, r): c.cpu_s_per_gb for (_, h, r), c in hosts.items() if c.cpu_s_per_gb is not None}
    out = []
    for (host, rail), value in sorted(costs.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        peers = [v for k, v in costs.items() if k[0] != host and v is not None]
        who = f"{host}.{rail}" if rail else host
        if not peers or value is None:
            out.append(LoadRow(test, "all steps", host, rail, "cpu_vs_peers", "info", None, bound,
                               f"{who}: no peer with a CPU cost per GB in {test}; not judged"))
            continue
        median = statistics.median(peers)
        ratio = value / median if median > 0 else float("inf")
        status = bad if ratio > bound else "pass"
        out.append(LoadRow(test, "all steps", host, rail, "cpu_vs_peers", status, ratio, bound,
                           f"{who}: {value:.3g} CPU-s/GB is {ratio:.2f}x the median of its {len(peers)} peers "
                           f"({median:.3g}) {'>' if status != 'pass' else '≤'} limit {bound:g}x"))
    return out
