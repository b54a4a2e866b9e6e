"""``rails=auto``: each such host's rails, from the probe run on it before the run is planned (and
its iperf3 version, ``iperf3_version``, when the inventory does not give it)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from benchharness.core.model import Host
from benchharness.telemetry.collect import probe_host
from benchharness.telemetry.rails import rails_from_facts, with_rails
from benchharness.transport import transport_for


def discover(hosts: Sequence[Host]) -> list[Host]:
    """Hosts with ``rails=auto`` given the rails their probe finds (others unchanged).

    ValueError naming the host when the probe fails or finds no NIC to test.
    """
    def one(host: Host) -> Host:
        if str(host.var("rails") or "").lower() != "auto" or host.rails:
            return host
        transport = transport_for(host)
        try:
            facts = probe_host(transport)
        finally:
            transport.close()
        if facts.get("available") is False:
            raise ValueError(f"host {host.name}: rails=auto: the probe failed: {facts.get('reason')}")
        rails = rails_from_facts(facts, management=host.address)
        if not rails:
            raise ValueError(f"host {host.name}: rails=auto found no NIC with an address besides the "
                             f"management one ({host.address}); list the rails in the inventory")
        iperf3 = (facts.get("tools") or {}).get("iperf3") or {}
        if host.var("iperf3_version") is None and iperf3.get("version"):
            host = dataclasses.replace(host, vars={**host.vars, "iperf3_version": str(iperf3["version"])})
        return with_rails(host, rails)

    if not any(str(h.var("rails") or "").lower() == "auto" for h in hosts):
        return list(hosts)
    with ThreadPoolExecutor(max_workers=min(16, len(hosts))) as pool:
        return list(pool.map(one, hosts))
