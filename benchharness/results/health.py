"""Fabric health of a stored run: each step's counter deltas judged per host and rail.

Reads ``telemetry/counters/<step>.json`` (the observer's per-host deltas with their ``context``:
test, seconds, rails and their counter objects, the rails the step used), the suite's ``health:``
limits from ``run.json`` and the hosts' facts (driver, link speed), and judges them with
``telemetry.health.judge``. Verdicts, isolation, the report and the Prometheus export read the
rows; nothing here is stored, so a stored run is judged again by ``bench report``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.core.model import Verdict, endpoint
from benchharness.results import runview
from benchharness.results.store import RunDir
from benchharness.telemetry.health import LABELS, Judged, judge, split_rails, traffic

CHECK_PREFIX = "health: "
_ORDER = {"fail": 0, "warn": 1, "pass": 2, "info": 3}


@dataclass(frozen=True)
class HealthRow:
    """One limit judged on one rail of one host in one step."""

    test: str
    step: str
    host: str
    rail: str | None  # None: the host's only NIC (verdicts name it by host, as its other checks do)
    nic: str | None  # the rail's netdev or RDMA device and the rail's name: "rail0 eth0"
    serial: str | None
    seconds: float
    bytes: int | None
    judged: Judged

    @property
    def check(self) -> str:
        return CHECK_PREFIX + LABELS[self.judged.limit]


def limits_by_test(info: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Test name -> its validated ``health:`` limits, from the run's suite snapshot."""
    suite = info.get("suite") if isinstance(info.get("suite"), Mapping) else {}
    return {str(t.get("name")): dict(t["health"]) for t in (suite or {}).get("tests") or []
            if isinstance(t, Mapping) and isinstance(t.get("health"), Mapping)}


def _driver(host_facts: Any, netdev: str | None, rdma_dev: str | None) -> str | None:
    for nic in runview.nic_entries(host_facts):
        names = {str(nic.get(k)) for k in ("name", "netdev", "ifname", "rdma_dev", "device")}
        if ((netdev and netdev in names) or (rdma_dev and rdma_dev in names)) and nic.get("driver"):
            return str(nic["driver"])
    if rdma_dev:
        for prefix, name in (("mlx5", "mlx5_core"), ("rxe", "rdma_rxe"), ("bnxt_re", "bnxt_re"),
                             ("irdma", "irdma"), ("siw", "siw")):
            if rdma_dev.startswith(prefix):
                return name
    return f"the driver of {netdev}" if netdev else None


def _step_seconds(run: RunDir) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in run.steps():
        started, ended = s.get("started"), s.get("ended")
        if isinstance(started, int | float) and isinstance(ended, int | float) and ended > started:
            out[str(s.get("step"))] = float(ended) - float(started)
    return out


def rows(run: RunDir, info: Mapping[str, Any] | None = None) -> list[HealthRow]:
    """Every health limit judged on every rail of every host in every step with limits."""
    from benchharness.core.naming import safe_name

    info = info if info is not None else run.run_info()
    limits = limits_by_test(info)
    folder = run.path / "telemetry" / "counters"
    if not limits or not folder.is_dir():
        return []
    facts = runview.read_facts(run)
    step_secs = {safe_name(k): v for k, v in _step_seconds(run).items()}
    out: list[HealthRow] = []
    for path in sorted(folder.glob("*.json")):
        try:
            per_host = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        for host, d in per_host.items() if isinstance(per_host, Mapping) else []:
            ctx = d.get("context") if isinstance(d, Mapping) else None
            if not isinstance(ctx, Mapping) or str(ctx.get("test")) not in limits:
                continue
            test = str(ctx["test"])
            seconds = float(ctx.get("seconds") or step_secs.get(path.stem) or 0.0)
            if seconds <= 0:
                continue
            rails: Mapping[str, Any] = ctx.get("rails") or {}
            counters = {str(k): int(v) for k, v in (d.get("counters") or {}).items()}
            used = [str(r) for r in ctx.get("step_rails") or []]
            split = split_rails(counters, {r: list(v.get("objects") or []) for r, v in rails.items()}, used)
            tcp_out = next((v for k, v in counters.items() if k.endswith(":OutSegs") and k.startswith("tcp:")), None)
            named = len(rails) > 1
            for rail, mine in split.items():
                if used and rail is not None and rail not in used:
                    continue  # a rail the step did not use: nothing to judge on it
                spec = rails.get(rail or "", {}) if rail else {}
                netdev, rdma = spec.get("netdev"), spec.get("rdma_dev")
                speed = runview.detected_line_rate(facts.get(host), netdev) if netdev else None
                shared_tcp = any(k.startswith("tcp:") for k in mine)
                for j in judge(mine, limits[test], seconds=seconds, speed_gbps=speed,
                               driver=_driver(facts.get(host), netdev, rdma),
                               tcp_segments=tcp_out if shared_tcp else None):
                    nic = " ".join(str(x) for x in (rail, netdev or rdma) if x) or None
                    out.append(HealthRow(test, path.stem, host, rail if named else None, nic,
                                         spec.get("serial"), seconds, traffic(mine)[0], j))
    return out


#: Limits whose counters the sender or receiver of a path both see (TCP and RDMA retransmissions
#: are counted by the sender of the lost packet; CNPs by both ends): attributed like bandwidth.
PATH_SHARED = ("retrans_per_mpkt", "ecn_per_gb")


def explained(health_rows: Sequence[HealthRow]) -> dict[tuple[str, str, str | None, str], list[str]]:
    """(test, host, rail, limit) -> the peers that explain its failing steps: a peer over the
    limit in every step it is in (and in more than one), as a lossy link makes its peers
    retransmit too. Only for ``PATH_SHARED`` limits; a flap or an FEC error is never explained away."""
    out: dict[tuple[str, str, str | None, str], list[str]] = {}
    for test, limit in {(r.test, r.judged.limit) for r in health_rows if r.judged.limit in PATH_SHARED}:
        mine = [r for r in health_rows if r.test == test and r.judged.limit == limit and r.judged.status != "info"]
        steps: dict[tuple[str, str | None], set[str]] = {}
        bad: dict[tuple[str, str | None], set[str]] = {}
        members: dict[str, set[tuple[str, str | None]]] = {}
        for r in mine:
            who = (r.host, r.rail)
            steps.setdefault(who, set()).add(r.step)
            members.setdefault(r.step, set()).add(who)
            if r.judged.status in ("fail", "warn"):
                bad.setdefault(who, set()).add(r.step)
        always = {w for w, s in bad.items() if s == steps[w] and len(s) > 1}
        for who, failing in bad.items():
            if who in always:
                continue
            peers = [{o for o in members[s] if o != who and o in always} for s in failing]
            if all(peers):
                out[(test, who[0], who[1], limit)] = sorted({endpoint(*o) for p in peers for o in p})
    return out


def verdicts(health_rows: Sequence[HealthRow]) -> list[Verdict]:
    """One verdict per test, host, rail and limit: the worst step decides; the message names the
    rail, the counter and its delta (and which step). A path-shared limit failed only with a peer
    that fails everywhere passes, saying so (``explained``)."""
    groups: dict[tuple[str, str, str | None, str], list[HealthRow]] = {}
    for r in health_rows:
        groups.setdefault((r.test, r.host, r.rail, r.judged.limit), []).append(r)
    by_peer = explained(health_rows)
    out: list[Verdict] = []
    for key, mine in groups.items():
        test, host, rail, _limit = key
        worst = min(mine, key=lambda r: (_ORDER.get(r.judged.status, 9), -(r.judged.value or 0.0)))
        status = worst.judged.status
        if key in by_peer:
            who = endpoint(host, rail) + (f" [{worst.nic}]" if worst.nic else "")
            out.append(Verdict(worst.check, "pass", f"{who}: its steps over the limit are explained by "
                               f"{', '.join(by_peer[key])} (over the limit in every step it is in); "
                               f"worst step {worst.step}: {worst.judged.message}", host=host, test=test,
                               value=worst.judged.value, limit=worst.judged.bound, rail=rail))
            continue
        who = endpoint(host, rail) + (f" [{worst.nic}]" if worst.nic else "")
        nic = f" (NIC sn {worst.serial})" if worst.serial else ""
        judged = [r for r in mine if r.judged.status != "info"]
        bad = [r for r in judged if r.judged.status in ("fail", "warn")]
        if status in ("fail", "warn"):
            head = f"{who}{nic}: over the limit in {len(bad)} of {len(judged)} steps; worst step {worst.step}: "
        elif status == "pass":
            head = f"{who}{nic}: within the limit in all {len(judged)} steps; highest step {worst.step}: "
        else:
            head = f"{who}{nic}: "
        out.append(Verdict(worst.check, status, head + worst.judged.message, host=host, test=test,
                           value=worst.judged.value, limit=worst.judged.bound, rail=rail))
    return sorted(out, key=lambda v: (v.test or "", v.host or "", v.rail or "", v.check))


def bad_endpoints(health_rows: Sequence[HealthRow]) -> dict[str, list[str]]:
    """Endpoint (``h3.rail1``, or the host) -> the health checks it failed: suspects for isolation."""
    by_peer = explained(health_rows)
    out: dict[str, list[str]] = {}
    for r in health_rows:
        if r.judged.status == "fail" and (r.test, r.host, r.rail, r.judged.limit) not in by_peer:
            checks = out.setdefault(endpoint(r.host, r.rail), [])
            text = f"{r.check} ({r.judged.counter} +{r.judged.delta} in {r.step})"
            if not any(c.startswith(r.check) for c in checks):
                checks.append(text)
    return out
