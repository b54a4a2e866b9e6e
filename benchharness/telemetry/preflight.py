"""Preflight: the host checks (``host_checks.py``, the one judge of host facts) over every host of a
run, plus the checks between hosts (rail MTUs, MTU per pair, RoCE QoS) and the fabric (PCIe ACS).

``run_checks`` takes the probe document of each host (``probe.py`` output, keyed by inventory host
name), the inventory hosts (their rails say which NIC, RDMA device, NUMA node and GPU a benchmark
uses) and the pairs that will run, and returns verdicts with the evidence in their message;
``run_findings`` returns the same as records with the NIC, observed and expected values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import Host, Verdict
from benchharness.telemetry import nic_checks
from benchharness.telemetry.fabric_checks import acs_verdicts, qos_verdicts
from benchharness.telemetry.host_checks import MIN_VERSIONS, REQUIRED_TOOLS, HostJudge
from benchharness.telemetry.rail_facts import Finding, RailFacts, rail_mtus

__all__ = ["run_checks", "run_findings"]


def run_findings(facts_by_host: Mapping[str, Mapping[str, Any]], hosts: Sequence[Host],
                 pairs: Sequence[tuple[str, str]] | None = None, *,
                 limits: Mapping[str, tuple[float, float]] | None = None,
                 min_versions: Mapping[str, str] | None = None,
                 required_tools: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Every preflight result as a record: a verdict's fields plus ``nic``, ``observed``, ``expected``."""
    out: list[dict[str, Any]] = []
    rails: dict[str, list[RailFacts]] = {}
    for host in hosts:
        facts = facts_by_host.get(host.name)
        if not facts:
            out.append(Finding(host.name, None, None, "probe", "fail", None, None,
                               "no probe output for this host").record())
            continue
        judge = HostJudge(host, facts, limits)
        out += [f.record() for f in judge.run(REQUIRED_TOOLS if required_tools is None else required_tools,
                                              min_versions or MIN_VERSIONS)]
        out += [_record(v) for v in acs_verdicts(host, facts)]
        rails[host.name] = judge.rails
    out += [dict(f.record(), host=None) for f in rail_mtus(rails)]
    out += [dict(f.record(), host=f.host or None) for f in nic_checks.rss_hash_peers(rails)]
    out += [_record(v) for v in qos_verdicts(facts_by_host, hosts)]
    for a, b in pairs or []:
        ra = [r for r in rails.get(a, []) if r.nic is not None]
        rb = [r for r in rails.get(b, []) if r.nic is not None]
        if ra and rb:
            na, nb = ra[0].nic or {}, rb[0].nic or {}
            text = f"{a} {na['netdev']} MTU {na.get('mtu')}, {b} {nb['netdev']} MTU {nb.get('mtu')}"
            status = "pass" if na.get("mtu") == nb.get("mtu") else "fail"
            out.append(_record(Verdict("preflight.mtu_pair", status, text + (
                " (mismatch: set one MTU on both ends)" if status == "fail" else ""), host=a)))
    return out


def run_checks(facts_by_host: Mapping[str, Mapping[str, Any]], hosts: Sequence[Host],
               pairs: Sequence[tuple[str, str]] | None = None, *,
               limits: Mapping[str, tuple[float, float]] | None = None,
               min_versions: Mapping[str, str] | None = None,
               required_tools: Sequence[str] | None = None) -> list[Verdict]:
    """Verdicts (fail / warn / info / pass, evidence in the message) for every host, rail and pair."""
    return [to_verdict(r) for r in run_findings(facts_by_host, hosts, pairs, limits=limits,
                                                min_versions=min_versions, required_tools=required_tools)]


def to_verdict(record: Mapping[str, Any]) -> Verdict:
    """A preflight record (``run_findings``) as a Verdict."""
    return Verdict(check=record["check"], status=record["status"], message=record["message"],
                   host=record.get("host"), value=record.get("value"), limit=record.get("limit"),
                   rail=record.get("rail"))


def _record(v: Verdict) -> dict[str, Any]:
    return {"check": v.check, "status": v.status, "message": v.message, "host": v.host, "test": v.test,
            "value": v.value, "limit": v.limit, "rail": v.rail, "nic": None, "observed": v.value,
            "expected": v.limit}
