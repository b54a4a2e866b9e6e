"""What the one judge of host facts (``host_checks.py``) looks at and what it returns.

``rail_facts`` pairs each rail of a host with the probe's records of its NIC (netdev record, RDMA
device, port); ``Finding`` is one judged fact, as preflight, ``bench doctor`` and the report keep it.
``rail_mtus`` is the one check across hosts; ``carries`` says whether a GID carries an address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.core.model import Host, Rail, Verdict


@dataclass(frozen=True)
class Finding:
    """One judged host fact."""

    host: str
    rail: str | None
    nic: str | None
    check: str
    status: str  # "fail" | "warn" | "info" | "pass"
    observed: Any
    expected: Any
    message: str
    value: float | None = None
    limit: float | None = None

    def verdict(self) -> Verdict:
        """As a preflight verdict (``preflight.<check>``)."""
        return Verdict(check=f"preflight.{self.check}", status=self.status, message=self.message,
                       host=self.host, value=self.value, limit=self.limit, rail=self.rail)

    def record(self) -> dict[str, Any]:
        """The verdict's fields plus ``nic``, ``observed`` and ``expected`` (what preflight.json holds)."""
        v = self.verdict()
        return {"check": v.check, "status": v.status, "message": v.message, "host": v.host, "test": None,
                "value": v.value, "limit": v.limit, "rail": v.rail, "nic": self.nic,
                "observed": self.observed, "expected": self.expected}


def available(section: Any) -> bool:
    """False for a probe section that says ``available: false`` (its tool or file was missing)."""
    return not (isinstance(section, Mapping) and section.get("available") is False)


@dataclass
class RailFacts:
    """What the probe saw of one rail: its netdev record, RDMA device and port (any may be missing)."""

    rail: Rail
    nic: dict[str, Any] | None
    rdma: dict[str, Any] | None
    port: dict[str, Any] | None

    @property
    def label(self) -> str:
        """``mlx5_5 (ibp5s0, 0000:a5:00.0, serial MT123)``: the NIC as a technician finds it."""
        r, nic, dev = self.rail, self.nic or {}, self.rdma or {}
        name = r.rdma_dev or r.netdev or nic.get("netdev") or "?"
        extra = [x for x in (r.netdev if r.rdma_dev else None, nic.get("pci_address") or dev.get("pci_address")
                             or r.pci_address) if x]
        serial = r.serial or nic.get("serial")
        if serial:
            extra.append(f"serial {serial}")
        return f"{name} ({', '.join(extra)})" if extra else str(name)


def rail_facts(host: Host, facts: Mapping[str, Any]) -> list[RailFacts]:
    """Each rail of ``host`` (``Host.nics()``) with the probe's records of its NIC."""
    nics_section = facts.get("nics") or {}
    nics = list(nics_section.get("devices") or []) if available(nics_section) else []
    by_netdev = {n.get("netdev"): n for n in nics}
    rdma = facts.get("rdma") or {}
    devices = {d.get("device"): d for d in rdma.get("devices") or []} if available(rdma) else {}
    out = []
    for rail in host.nics():
        nic = by_netdev.get(rail.netdev) if rail.netdev else None
        if nic is None and rail.rdma_dev:
            nic = next((n for n in nics if rail.rdma_dev in (n.get("rdma_devices") or [])), None)
        dev = devices.get(rail.rdma_dev) if rail.rdma_dev else None
        port = next((p for p in (dev or {}).get("ports", []) if p.get("port") == rail.rdma_port), None)
        out.append(RailFacts(rail, nic, dev, port))
    return out


def rail_mtus(rails_by_host: Mapping[str, Sequence[RailFacts]]) -> list[Finding]:
    """One finding: every rail netdev of every host has the same MTU (a smaller one caps RoCE's path MTU)."""
    mtus: dict[str, Any] = {}
    for host, rails in rails_by_host.items():
        for rf in rails:
            if rf.nic is not None and rf.rail.netdev:
                mtus[f"{host}/{rf.rail.netdev}"] = rf.nic.get("mtu")
    if len(mtus) < 2:
        return []
    values = sorted({m for m in mtus.values() if m is not None})
    if len(values) <= 1:
        common = values[0] if values else None
        return [Finding("", None, None, "mtu_rails", "pass", common, common,
                        f"{len(mtus)} rails, MTU {common if common is not None else '?'}")]
    common = max(values, key=lambda v: sum(1 for m in mtus.values() if m == v))
    odd = ", ".join(f"{k} {m}" for k, m in mtus.items() if m != common)
    return [Finding("", None, None, "mtu_rails", "fail", min(values), common,
                    f"rail MTUs differ: most are {common}, but {odd}", float(min(values)), float(common))]


def carries(gid: object, address: str | None) -> bool:
    """True when ``gid`` is the IPv4-mapped form of ``address`` (any IPv4 GID when no address is known)."""
    try:
        ip = ipaddress.IPv6Address(str(gid))
    except ValueError:
        return False
    if ip.ipv4_mapped is None:
        return address is not None and ip == _v6(address)
    return address is None or str(ip.ipv4_mapped) == address


def _v6(address: str) -> ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return None
    return ip if isinstance(ip, ipaddress.IPv6Address) else None
