"""`bench doctor`: host facts and preflight verdicts, without running a benchmark."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchharness.core.errors import EXIT_OK, EXIT_STEPS_FAILED, EXIT_VERDICT_FAILED
from benchharness.core.model import Host
from benchharness.telemetry.collect import probe_all
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
    return (f"{name}: {h['OS']}, kernel {h['kernel']}, {h['CPU']}, {h['NUMA']}, {h['memory']}; "
            f"NICs: {'; '.join(nics) or 'none'}; tools: {h['tools']}")


def doctor(hosts: Sequence[Host], out: str | None = None, echo: Any = print) -> int:
    """Probe ``hosts``, print facts and verdicts; exit 1 on a failed check, 3 if a host is unreachable."""
    from benchharness.telemetry.preflight import run_checks

    transports = [transport_for(h) for h in hosts]
    try:
        facts = probe_all(transports)
    finally:
        for t in transports:
            t.close()
    verdicts = run_checks(facts, list(hosts), None)
    for name, f in facts.items():
        echo(fact_line(name, f))
    for v in verdicts:
        if v.status != "pass":
            echo(f"  {_MARK[v.status]:<4} {v.check} {v.host or ''}: {v.message}")
    counts = {s: sum(v.status == s for v in verdicts) for s in ("fail", "warn", "info", "pass")}
    unreachable = [n for n, f in facts.items() if f.get("available") is False]
    echo(f"{len(hosts)} host(s): {counts['fail']} failed, {counts['warn']} warnings, {counts['pass']} passed"
         + (f"; no facts from {', '.join(unreachable)}" if unreachable else ""))
    if out:
        Path(out).write_text(json.dumps({"facts": facts, "verdicts": [asdict(v) for v in verdicts]},
                                        indent=2, default=str) + "\n")
    if unreachable:
        return EXIT_STEPS_FAILED
    return EXIT_VERDICT_FAILED if counts["fail"] else EXIT_OK
