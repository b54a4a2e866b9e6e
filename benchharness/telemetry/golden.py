"""A learned golden configuration: per role and NIC model, the majority of each probed fact.

Before any traffic, the hosts that differ from their peers are the usual suspects: one NIC on
older firmware, one port left at MTU 1500, a NIC trained at PCIe x8, another driver. This module
turns each host's probe facts into a flat profile (``nic.<netdev>.firmware`` -> ``"28.39.1002"``,
``nic.<netdev>.gro`` -> ``"on"``: offloads, channels, rings, coalescing, MPS/MRRS, where the
queue IRQs run and the fields RSS hashes per flow type (``rss_hash_udp4`` -> ``"sdfn"``), read by
``nic_config.py``),
groups hosts by role (inventory variable ``role``, else ``all``) and NIC model, learns the value
most hosts of a group hold for every key (a strict majority; a split names no golden value), and
lists each host's departures from it. ``bench doctor`` prints them; ``bench doctor golden=TAG``
holds the hosts to a profile stored in the catalog instead (``results/golden.py``).

Pure functions over the probe's JSON: no transport, no storage.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from benchharness.telemetry import requirements
from benchharness.telemetry.fabric_checks import nic_qos
from benchharness.telemetry.nic_config import cpulist, read_nic
from benchharness.telemetry.parsers.lspci import device_of
from benchharness.telemetry.summary import is_probe_facts, pcie_text

#: Per-NIC facts, in the order they are reported.
NIC_FACTS = ("model", "driver", "driver_version", "firmware", "mtu", "speed", "pcie", "numa_node",
             "pfc", "trust", "ecn", "gid_index", "link_layer",
             # the NIC's configuration (nic_config.py): offloads, queues, rings, coalescing, PCIe, IRQs
             "tso", "gso", "gro", "lro", "rx_checksum", "tx_checksum", "channels", "rss_rings", "rx_ring",
             "tx_ring", "adaptive_rx", "rx_usecs", "max_payload", "max_read_req", "queue_irq_cpus", "irq_node",
             # the header fields RSS hashes, in ethtool -N letters (sdfn: addresses and ports)
             "rss_hash_tcp4", "rss_hash_udp4", "rss_hash_tcp6", "rss_hash_udp6")
DEFAULT_ROLE = "all"


@dataclass(frozen=True)
class GoldenValue:
    """The value a group's majority holds for one key, and how many hosts hold it."""

    value: str
    hosts: int
    total: int


@dataclass(frozen=True)
class Deviation:
    """One host's departure from its group's golden value."""

    host: str
    group: str
    key: str
    value: str
    expected: str
    hosts: int
    total: int

    @property
    def fact(self) -> str:
        """The fact's name without its NIC: ``firmware`` of ``nic.eth0.firmware``."""
        return self.key.rsplit(".", 1)[-1] if self.key.startswith("nic.") else self.key

    @property
    def nic(self) -> str | None:
        return self.key.split(".")[1] if self.key.startswith("nic.") else None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, Mapping) or value == "":
        return None
    if isinstance(value, list):
        return ",".join(str(v) for v in value) if value else "none"
    return str(value)


def nic_model(nic: Mapping[str, Any]) -> str:
    """What a NIC is: the device name lspci gave, else its driver, else ``unknown``."""
    lspci = nic.get("lspci") if isinstance(nic.get("lspci"), Mapping) else {}
    raw = lspci.get("raw") if isinstance(lspci, Mapping) else None
    dev = device_of(raw) if isinstance(raw, str) else None
    if dev and dev.get("name"):
        return str(dev["name"])
    return str(nic.get("driver") or "unknown")


def _on(value: Any) -> str | None:
    return None if value is None else ("on" if value else "off")


def config_values(nic: Mapping[str, Any]) -> dict[str, Any]:
    """The NIC-configuration facts of one netdev record (None where the host could not say)."""
    cfg = read_nic(nic)
    feats = (cfg.features or {}).get("features") or {}
    channels = (cfg.channels or {}).get("current") or {}
    rings = (cfg.rings or {}).get("current") or {}
    coalesce = cfg.coalesce or {}
    queue = [i for i in cfg.irqs or [] if i.queue]
    local = set(cpulist(nic.get("local_cpulist")))
    homes = {c for i in queue for c in i.cpus}
    return {
        "tso": _on(feats.get("tcp-segmentation-offload")), "gso": _on(feats.get("generic-segmentation-offload")),
        "gro": _on(feats.get("generic-receive-offload")), "lro": _on(feats.get("large-receive-offload")),
        "rx_checksum": _on(feats.get("rx-checksumming")), "tx_checksum": _on(feats.get("tx-checksumming")),
        "channels": channels.get("combined") if channels.get("combined") is not None else channels.get("rx"),
        "rss_rings": len(cfg.rss["rings_used"]) if cfg.rss and not cfg.rss["elided"] else None,
        "rx_ring": rings.get("rx"), "tx_ring": rings.get("tx"),
        "adaptive_rx": _on(coalesce.get("adaptive_rx")), "rx_usecs": (coalesce.get("settings") or {}).get("rx-usecs"),
        "max_payload": (cfg.lspci or {}).get("max_payload_bytes"),
        "max_read_req": (cfg.lspci or {}).get("max_read_req_bytes"),
        "queue_irq_cpus": len(homes) if queue else None,
        **{f"rss_hash_{kind}": (entry["letters"] or "none") for kind, entry in cfg.flow_hash.items()},
        "irq_node": None if not queue or not local else (
            "local" if homes <= local else "far" if not homes & local else "mixed"),
    }


def _roce_gid_index(port: Mapping[str, Any]) -> str | None:
    for gid in port.get("gids") or []:
        text = str(gid.get("gid") or "").lower()
        if gid.get("type") == "RoCE v2" and text.startswith("0000:0000:0000:0000:0000:ffff:"):
            return str(gid.get("index"))
    return None


def _rdma_ports(facts: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """RDMA device -> its first port record."""
    rdma = facts.get("rdma") if isinstance(facts.get("rdma"), Mapping) else {}
    out: dict[str, Mapping[str, Any]] = {}
    for dev in (rdma or {}).get("devices") or []:
        ports = dev.get("ports") or []
        if dev.get("device") and ports:
            out[str(dev["device"])] = ports[0]
    return out


def physical_nics(facts: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The NICs worth holding to a standard: physical ones, or any with an RDMA device."""
    nics = [n for n in (facts.get("nics") or {}).get("devices") or [] if isinstance(n, Mapping)]
    chosen = [n for n in nics if not n.get("virtual") or n.get("rdma_devices")]
    return chosen


def profile(facts: Mapping[str, Any]) -> dict[str, str]:
    """A host's facts as flat ``key -> value`` strings (missing facts are left out)."""
    if not is_probe_facts(facts):
        return {}
    out: dict[str, str] = {}
    host = facts.get("host") or {}
    for key, value in (("kernel", host.get("kernel")), ("os", host.get("os"))):
        if (text := _text(value)) is not None:
            out[key] = text
    for name in dict.fromkeys([*requirements.shown(), "ethtool"]):
        tool = (facts.get("tools") or {}).get(name)
        if isinstance(tool, Mapping) and tool.get("available") and tool.get("version"):
            out[f"tool.{name}"] = str(tool["version"])
    ports = _rdma_ports(facts)
    fabric = facts.get("fabric") if isinstance(facts.get("fabric"), Mapping) else {}
    qos = (fabric or {}).get("qos") if isinstance((fabric or {}).get("qos"), Mapping) else {}
    for nic in physical_nics(facts):
        netdev = str(nic.get("netdev") or "?")
        speed = nic.get("speed_mbps")
        port = next((ports[d] for d in nic.get("rdma_devices") or [] if d in ports), None)
        values: dict[str, Any] = {
            "model": nic_model(nic), "driver": nic.get("driver"), "driver_version": nic.get("driver_version"),
            "firmware": nic.get("firmware"), "mtu": nic.get("mtu"),
            "speed": f"{speed / 1000:g} Gb/s" if isinstance(speed, int | float) and speed > 0 else None,
            "pcie": pcie_text(nic.get("pcie")).replace(" — DOWNGRADED", "") or None,
            "numa_node": nic.get("numa_node"),
            "gid_index": _roce_gid_index(port) if port else None,
            "link_layer": port.get("link_layer") if port else None,
            **config_values(nic),
        }
        entry = (qos or {}).get(netdev)
        if isinstance(entry, Mapping) and (entry.get("mlnx_qos") or entry.get("dcb_pfc") or entry.get("ecn")):
            parsed = nic_qos(entry)
            values["pfc"] = parsed.get("pfc_enabled")
            values["trust"] = parsed.get("trust")
            ecn = parsed.get("ecn") or {}
            values["ecn"] = f"np {_text(ecn.get('np')) or 'none'}; rp {_text(ecn.get('rp')) or 'none'}"
        for fact in NIC_FACTS:
            if (text := _text(values.get(fact))) is not None:
                out[f"nic.{netdev}.{fact}"] = text
    return out


def group_of(facts: Mapping[str, Any], role: str = DEFAULT_ROLE) -> str:
    """``role/model``: hosts are held to the hosts of their role with the same NIC model."""
    models = Counter(nic_model(n) for n in physical_nics(facts))
    model = models.most_common(1)[0][0] if models else "no-nic"
    return f"{role}/{model}"


def learn(facts_by_host: Mapping[str, Mapping[str, Any]], roles: Mapping[str, str] | None = None
          ) -> dict[str, dict[str, GoldenValue]]:
    """Group -> key -> the strict majority's value. Keys where no value has a strict majority
    (a 50/50 split, or too few hosts) get none: there is nothing to hold a host to."""
    roles = roles or {}
    seen: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    members: Counter[str] = Counter()
    for host, facts in facts_by_host.items():
        if not is_probe_facts(facts):
            continue
        group = group_of(facts, roles.get(host, DEFAULT_ROLE))
        members[group] += 1
        for key, value in profile(facts).items():
            seen[group][key][value] += 1
    out: dict[str, dict[str, GoldenValue]] = {}
    for group, keys in seen.items():
        total = members[group]
        for key, counts in keys.items():
            value, n = counts.most_common(1)[0]
            if n * 2 > total:
                out.setdefault(group, {})[key] = GoldenValue(value, n, total)
    return out


def deviations(facts_by_host: Mapping[str, Mapping[str, Any]],
               golden: Mapping[str, Mapping[str, GoldenValue]],
               roles: Mapping[str, str] | None = None) -> list[Deviation]:
    """Every (host, key) whose value differs from its group's golden one (``missing`` when the
    host lacks a key the golden profile has), sorted by host and key."""
    roles = roles or {}
    out = []
    for host, facts in sorted(facts_by_host.items()):
        if not is_probe_facts(facts):
            continue
        group = group_of(facts, roles.get(host, DEFAULT_ROLE))
        mine = profile(facts)
        for key, want in sorted((golden.get(group) or {}).items()):
            value = mine.get(key, "missing")
            if value != want.value:
                out.append(Deviation(host, group, key, value, want.value, want.hosts, want.total))
    return out


def ungrouped(facts_by_host: Mapping[str, Mapping[str, Any]], golden: Mapping[str, Any],
              roles: Mapping[str, str] | None = None) -> list[str]:
    """Hosts whose group the golden profile does not know (nothing to hold them to)."""
    roles = roles or {}
    return sorted(h for h, f in facts_by_host.items()
                  if is_probe_facts(f) and group_of(f, roles.get(h, DEFAULT_ROLE)) not in golden)


def lines(found: Iterable[Deviation], reference: str) -> list[str]:
    """One line per host and fact: ``h07: firmware 28.36.1010 on eth0, eth1 (majority 28.39.1002,
    15 of 16 hosts)``; ``reference`` names what the hosts are held to."""
    grouped: dict[tuple[str, str, str, str], list[Deviation]] = defaultdict(list)
    for d in found:
        grouped[(d.host, d.fact, d.value, d.expected)].append(d)
    out = []
    for (host, fact, value, expected), items in grouped.items():
        nics = [d.nic for d in items if d.nic]
        where = f" on {', '.join(nics)}" if nics else ""
        first = items[0]
        out.append(f"{host}: {fact} {value}{where} ({reference} {expected}, "
                   f"{first.hosts} of {first.total} hosts, group {first.group})")
    return out
