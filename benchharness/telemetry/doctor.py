"""`bench doctor`: host facts and preflight verdicts, without running a benchmark."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchharness.core.errors import EXIT_OK, EXIT_STEPS_FAILED, EXIT_VERDICT_FAILED
from benchharness.core.model import Host
from benchharness.telemetry.collect import probe_all
from benchharness.telemetry.golden import (
    DEFAULT_ROLE,
    Deviation,
    GoldenValue,
    deviations,
    group_of,
    learn,
    lines,
    ungrouped,
)
from benchharness.telemetry.summary import host_row, is_probe_facts, nic_row
from benchharness.transport import transport_for

_MARK = {"fail": "FAIL", "warn": "WARN", "info": "info", "pass": "ok"}


def fact_line(name: str, facts: dict[str, Any]) -> str:
    """One line of the most telling facts of a host."""
    if not is_probe_facts(facts):
        return f"{name}: facts unavailable: {facts.get('reason', 'not the probe format')}"
    h = host_row(facts)
    nics = []
    for nic in (facts.get("nics") or {}).get("devices", []):
        n = nic_row(nic)
        pcie = f" PCIe {n['PCIe']}" if n["PCIe"] else ""
        nics.append(f"{n['netdev']} {n['speed']} mtu {n['MTU']} numa {n['NUMA'] or '?'}{pcie}")
    rdma = rdma_ports(facts)
    return (f"{name}: {h['OS']}, kernel {h['kernel']}, {h['CPU']}, {h['NUMA']}, {h['memory']}; "
            f"NICs: {'; '.join(nics) or 'none'}; " + (f"RDMA: {'; '.join(rdma)}; " if rdma else "")
            + f"tools: {h['tools']}")


def rdma_ports(facts: dict[str, Any]) -> list[str]:
    """``rxe0/1 ACTIVE Ethernet, RoCE v2 GID 1 198.18.0.254`` per RDMA port the probe saw."""
    rdma = facts.get("rdma") or {}
    out = []
    for dev in rdma.get("devices") or [] if rdma.get("available", True) else []:
        for port in dev.get("ports") or []:
            v4 = []
            for g in port.get("gids") or []:
                gid = str(g.get("gid") or "").lower()
                if g.get("type") == "RoCE v2" and gid.startswith("0000:0000:0000:0000:0000:ffff:"):
                    raw = gid.replace(":", "")[-8:]
                    v4.append(f"GID {g.get('index')} " + ".".join(str(int(raw[i:i + 2], 16)) for i in range(0, 8, 2)))
            roce = f", RoCE v2 {', '.join(v4)}" if v4 else ""
            out.append(f"{dev.get('device')}/{port.get('port')} {port.get('state') or '?'} "
                       f"{port.get('link_layer') or '?'}{roce}")
    return out


def reach_line(host: Host) -> str:
    """How ``host`` is reached, as ssh would (``ansible all -m ping`` parity): address, user, key, hops."""
    if host.local:
        return f"{host.name}: local (no ssh)"
    keys = host.ssh.get("key_files") or ([host.key_file] if host.key_file else [])
    via = (f"ProxyCommand {host.proxy_command}" if host.proxy_command else
           f"ProxyJump {host.proxy_jump}" if host.proxy_jump else "direct")
    target = host.ssh.get("target")
    alias = f" (alias {target})" if target and target != host.address else ""
    return (f"{host.name}: ssh {host.user or '(local user)'}@{host.address}:{host.port}{alias} "
            f"key {', '.join(keys) or '(agent/default keys)'}; via {via}; "
            f"known_hosts {host.known_hosts or '~/.ssh/known_hosts'}"
            f"{'' if host.strict_host_keys else ' (accept-new)'}; "
            f"ssh_config {host.ssh.get('config_file') or 'none'}")


def _ping(transport: Any) -> tuple[bool, str]:
    from benchharness.core.errors import TransportError

    try:
        rc, _, err, timed_out = transport.run(["true"], timeout=30)
    except TransportError as exc:
        return False, exc.message.removeprefix(f"{transport.host.name}: ")
    finally:
        transport.close()
    return rc == 0 and not timed_out, "" if rc == 0 else f"exit {rc} {err.strip()[:200]}"


def ping(hosts: Sequence[Host], echo: Any = print, workers: int = 32) -> int:
    """Connect to every host (``workers`` at once) and run ``true``: one line each, SUCCESS or
    UNREACHABLE, like ansible's ping."""
    from concurrent.futures import ThreadPoolExecutor

    transports = [transport_for(h) for h in hosts]
    with ThreadPoolExecutor(max_workers=min(workers, max(1, len(hosts)))) as pool:
        results = list(pool.map(_ping, transports))
    for host, t, (ok, why) in zip(hosts, transports, results, strict=True):
        retries = getattr(t, "retries", 0)
        echo(f"{host.name} | {'SUCCESS' if ok else 'UNREACHABLE!'}{' ' + why if why else ''}"
             + (f" ({retries} set-up retries)" if retries else ""))
        echo(f"  {reach_line(host)}")
    bad = sum(not ok for ok, _ in results)
    echo(f"{len(hosts)} host(s): {len(hosts) - bad} reached, {bad} unreachable")
    return EXIT_STEPS_FAILED if bad else EXIT_OK


def roles_of(hosts: Sequence[Host]) -> dict[str, str]:
    """Host -> its ``role`` inventory variable (the golden configuration's grouping), where set."""
    return {h.name: str(h.var("role")) for h in hosts if h.var("role")}


def golden_report(facts: Mapping[str, Any], golden: Mapping[str, Mapping[str, GoldenValue]] | None,
                  roles: Mapping[str, str] | None = None, reference: str = "",
                  echo: Any = print) -> list[Deviation]:
    """Print the hosts that differ from the golden configuration (learned from ``facts`` when
    ``golden`` is None) and how; returns the deviations."""
    learned = golden is None
    golden = learn(facts, roles) if golden is None else golden
    found = deviations(facts, golden, roles)
    what = "the majority" if learned else f"golden {reference}"
    hosts = sorted({d.host for d in found})
    echo(f"golden configuration ({what}): "
         + (f"{len(hosts)} host(s) differ: {', '.join(hosts)}" if hosts else "every host matches"))
    for line in lines(found, "majority" if learned else f"golden {reference}:"):
        echo(f"  {'WARN' if learned else 'FAIL'} {line}")
    for host in ungrouped(facts, golden, roles):
        echo(f"  info {host}: no golden values for its role and NIC model ({group_of(facts[host], (roles or {}).get(host, DEFAULT_ROLE))})")
    return found


def doctor_facts(path: str, golden: Mapping[str, Mapping[str, GoldenValue]] | None = None,
                 reference: str = "", roles: Mapping[str, str] | None = None,
                 echo: Any = print) -> tuple[int, dict[str, Any]]:
    """Judge stored facts (``bench doctor out=`` JSON, or host -> probe facts) against the golden
    configuration without probing; exit 1 when a host differs from a tagged reference."""
    from benchharness.core.errors import UsageError

    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"facts={path}: cannot read probe facts: {exc}") from exc
    facts = data.get("facts", data) if isinstance(data, dict) else None
    if not isinstance(facts, dict) or not facts:
        raise UsageError(f"facts={path}: expected {{host: probe facts}} or bench doctor's out= JSON")
    for name, f in facts.items():
        echo(fact_line(name, f))
    found = golden_report(facts, golden, roles, reference, echo)
    return (EXIT_VERDICT_FAILED if found and golden is not None else EXIT_OK), facts


def doctor(hosts: Sequence[Host], out: str | None = None, echo: Any = print,
           golden: Mapping[str, Mapping[str, GoldenValue]] | None = None, reference: str = "",
           facts_sink: Any = None, workers: int = 32) -> int:
    """Probe ``hosts`` (``workers`` at once), print facts, verdicts and departures from the golden
    configuration (the hosts' majority, or ``golden``); exit 1 on a failed check or a departure
    from a tagged golden configuration, 3 if a host is unreachable. ``facts_sink`` receives the facts."""
    from benchharness.telemetry.preflight import run_findings, to_verdict

    transports = [transport_for(h) for h in hosts]
    try:
        facts = probe_all(transports, workers=workers)
    finally:
        for t in transports:
            t.close()
    if facts_sink is not None:
        facts_sink(facts)
    records = run_findings(facts, list(hosts), None)
    verdicts = [to_verdict(r) for r in records]
    for name, f in facts.items():
        echo(fact_line(name, f))
    for v in verdicts:
        if v.status != "pass":
            where = f"{v.host}.{v.rail}" if v.host and v.rail else v.host or ""
            echo(f"  {_MARK[v.status]:<4} {v.check} {where}: {v.message}")
    drift = golden_report(facts, golden, roles_of(hosts), reference, echo)
    echo("how each host was reached:")
    for h in hosts:
        echo(f"  {reach_line(h)}")
    counts = {s: sum(v.status == s for v in verdicts) for s in ("fail", "warn", "info", "pass")}
    unreachable = [n for n, f in facts.items() if f.get("available") is False]
    echo(f"{len(hosts)} host(s): {counts['fail']} failed, {counts['warn']} warnings, {counts['pass']} passed"
         + (f"; no facts from {', '.join(unreachable)}" if unreachable else ""))
    if out:
        Path(out).write_text(json.dumps({"facts": facts, "verdicts": records},
                                        indent=2, default=str) + "\n")
    if unreachable:
        return EXIT_STEPS_FAILED
    return EXIT_VERDICT_FAILED if counts["fail"] or (drift and golden is not None) else EXIT_OK
