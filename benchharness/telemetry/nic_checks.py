"""Checks of a rail's NIC configuration, part of the one judge of host facts (``host_checks.py``).

Per rail, from what ``nic_config.read_nic`` parsed of the probe's raw outputs:

* ``pcie_bandwidth``: the slot's usable bandwidth (GT/s x lanes x encoding, ``core/pcie.py``)
  against the NIC's line rate (the higher of ``nic_line_rate_gbps`` / the rail's
  ``line_rate_gbps`` and the link speed): a 400G NIC on a Gen4 x16 slot (252 Gbit/s) fails.
* ``offloads``: TSO, GSO, GRO, rx and tx checksumming (``ethtool -k``) off.
* ``irq_spread`` / ``irq_numa``: every queue IRQ of the NIC on one CPU; queue IRQs allowed only
  on CPUs of another NUMA node than the NIC's (``/proc/irq/N/effective_affinity_list``).
* ``rss``: the indirection table (``ethtool -x``) sending every flow to one ring while the NIC
  has several channels (``ethtool -l``); rings (``ethtool -g``) below their maximum are named.
* ``rss_hash``: the header fields RSS hashes per flow type (``ethtool -n DEV rx-flow-hash
  tcp4|udp4|tcp6|udp6``); ``rss_hash_peers`` (across hosts, from preflight): a rail that hashes a
  flow type on IP addresses only while most rails of its driver also hash the L4 ports.
* ``pcie_payload``: MaxPayload and MaxReadReq (``lspci -vvv`` DevCtl) below ``MIN_PAYLOAD_BYTES``
  / ``MIN_READ_REQ_BYTES``.
* ``aer``: non-zero AER counters (fatal / non-fatal: fail; correctable: warn).

A fact the host cannot give is ``info`` "... not available on <driver>", never a pass. Virtual
interfaces (veth, bridges) have no PCIe, IRQs or AER: only offloads, channels and RSS are judged
there, and GRO, which veth leaves off by design, is not asked of them. Limits and sources:
docs/nic-config.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchharness.core.pcie import GENERATIONS, usable_gbps
from benchharness.telemetry.nic_config import FLOW_HASH_TYPES, NicConfig, cpulist, pcie_link, read_nic
from benchharness.telemetry.rail_facts import Finding, RailFacts

#: ethtool -k feature -> the name people use; each should be on for a NIC that moves 100s of Gbit/s
OFFLOADS = (("tcp-segmentation-offload", "TSO"), ("generic-segmentation-offload", "GSO"),
            ("generic-receive-offload", "GRO"), ("rx-checksumming", "rx-checksumming"),
            ("tx-checksumming", "tx-checksumming"))
#: PCIe MaxPayload below this warns: 128 B is the minimum every device supports, and the kernel's
#: MPS work (commit b03e7495) notes that clamping to it "dramatically" reduces a 10GE adapter's rate.
MIN_PAYLOAD_BYTES = 256
#: MaxReadReq below this warns: Ubuntu's Firmware Test Suite (fwts maxreadreq) calls less than 256 too low.
MIN_READ_REQ_BYTES = 256

Add = Callable[..., None]


def line_rate_gbps(rf: RailFacts, host_rate: Any) -> tuple[float | None, str]:
    """The NIC's line rate and where it came from: the highest of the inventory's figure and the
    link's speed (a slot must carry whatever the NIC runs at, whichever says more)."""
    found: list[tuple[float, str]] = []
    for value, source in ((rf.rail.line_rate_gbps, "inventory line_rate_gbps"),
                          (host_rate, "inventory nic_line_rate_gbps")):
        try:
            if value is not None and float(value) > 0:
                found.append((float(value), source))
                break
        except (TypeError, ValueError):
            pass
    speed = (rf.nic or {}).get("speed_mbps")
    rate = (rf.port or {}).get("rate_gbps")
    if speed:
        found.append((speed / 1000.0, "link speed"))
    elif rate and (rf.port or {}).get("state") == "ACTIVE":
        found.append((float(rate), "RDMA port rate"))
    if not found:
        return None, "unknown"
    return max(found, key=lambda f: f[0])


def judge_rail(add: Add, rf: RailFacts, host_rate: Any, irqbalance: bool | None) -> None:
    """Every NIC-configuration check of one rail (``add`` is ``HostJudge.add``)."""
    nic = rf.nic or {}
    virtual = bool(nic.get("virtual"))
    if not virtual:
        pcie_bandwidth(add, rf, host_rate)
    if rf.nic is None:
        return
    cfg = read_nic(nic)
    offloads(add, rf, cfg, virtual)
    rss(add, rf, cfg)
    rss_hash(add, rf, cfg)
    if virtual:
        return
    irqs(add, rf, cfg, irqbalance)
    payload(add, rf, cfg)
    aer(add, rf, cfg)


def _driver(rf: RailFacts) -> str:
    return str((rf.nic or {}).get("driver") or (rf.rdma or {}).get("driver") or "this host")


def _netdev(rf: RailFacts) -> str:
    return str(rf.rail.netdev or (rf.nic or {}).get("netdev") or rf.rail.rdma_dev)


def pcie_bandwidth(add: Add, rf: RailFacts, host_rate: Any) -> None:
    """The slot's usable bandwidth against the NIC's line rate."""
    link = pcie_link(rf.nic or {}, rf.rdma)
    if link is None:
        return  # pcie_link already says the link is not readable
    gts, width, gen = link.get("current_speed_gts"), link.get("current_width"), link.get("current_gen")
    usable = usable_gbps(gts, width)
    rate, source = line_rate_gbps(rf, host_rate)
    slot = f"PCIe Gen{gen or '?'} x{width}"
    if usable is None:
        add(rf, "pcie_bandwidth", "info", f"{slot} at {gts} GT/s: no PCIe generation runs at that rate")
        return
    if rate is None:
        add(rf, "pcie_bandwidth", "info", f"{slot} ({usable:.0f} Gbit/s usable); the NIC's line rate is unknown "
            "(set nic_line_rate_gbps in the inventory)", f"{usable:.0f} Gbit/s", None, usable)
        return
    if usable < rate:
        need = next((g for g in sorted(GENERATIONS) if (usable_gbps(GENERATIONS[g][0], width) or 0) >= rate), None)
        hint = f"; x{width} needs Gen{need}" if need else f"; no generation carries it at x{width}"
        add(rf, "pcie_bandwidth", "fail", f"{slot} ({usable:.0f} Gbit/s) caps this {rate:g}G NIC near "
            f"{usable:.0f} Gbit/s ({source} {rate:g} Gbit/s; GT/s x lanes x encoding, before TLP overhead"
            f"{hint})", f"{usable:.0f} Gbit/s", f">= {rate:g} Gbit/s", usable, rate)
    else:
        add(rf, "pcie_bandwidth", "pass", f"{slot} ({usable:.0f} Gbit/s usable) carries the NIC's {rate:g} Gbit/s "
            f"({source})", f"{usable:.0f} Gbit/s", f">= {rate:g} Gbit/s", usable, rate)


def offloads(add: Add, rf: RailFacts, cfg: NicConfig, virtual: bool) -> None:
    """TSO, GSO, GRO and the checksum offloads on (GRO not asked of virtual interfaces)."""
    nd = _netdev(rf)
    if cfg.features is None:
        add(rf, "offloads", "info", f"offloads of {nd} not available on {_driver(rf)} ({cfg.reasons.get('features')})")
        return
    feats, fixed = cfg.features["features"], set(cfg.features["fixed"])
    asked = [(k, label) for k, label in OFFLOADS if not (virtual and label == "GRO")]
    off = [f"{label}{' [fixed]' if k in fixed else ''}" for k, label in asked if feats.get(k) is False]
    unknown = [label for k, label in asked if k not in feats]
    if off:
        add(rf, "offloads", "warn", f"{', '.join(off)} off on {nd}: the CPU segments, coalesces or checksums "
            f"every packet itself; turn them on (ethtool -K {nd} tso on gso on gro on rx on tx on)",
            ", ".join(off) + " off", "on")
    elif unknown and len(unknown) == len(asked):
        add(rf, "offloads", "info", f"ethtool -k of {nd} names none of {', '.join(u for u in unknown)}")
    else:
        add(rf, "offloads", "pass", f"{', '.join(label for k, label in asked if feats.get(k))} on for {nd}",
            "on", "on")


def rss(add: Add, rf: RailFacts, cfg: NicConfig) -> None:
    """Channels, the RSS table's spread over rings, and RX rings below their maximum."""
    nd = _netdev(rf)
    current = (cfg.channels or {}).get("current") or {}
    queues = max([v for v in (current.get("combined"), current.get("rx")) if isinstance(v, int)] or [0]) or None
    if cfg.rss is None:
        add(rf, "rss", "info", f"RSS table of {nd} not available on {_driver(rf)} ({cfg.reasons.get('rss')})"
            + (f"; {queues} channel(s)" if queues else ""), None, None, float(queues) if queues else None)
    else:
        used, size = cfg.rss["rings_used"], cfg.rss["table_size"]
        func = cfg.rss["hash_function"] or "?"
        if queues and queues > 1 and len(used) == 1 and not cfg.rss["elided"]:
            add(rf, "rss", "warn", f"{nd}'s RSS table sends every flow to ring {used[0]} of {queues} channels "
                f"({size} entries, {func}): one queue and one CPU take all receive traffic; ethtool -X {nd} "
                f"equal {queues}", f"1 of {queues} rings", f"{queues} rings", 1.0, float(queues))
        else:
            add(rf, "rss", "pass", f"{nd}: RSS over {len(used)} ring(s){'+' if cfg.rss['elided'] else ''} "
                f"({size} entries, {func}), {queues or '?'} channel(s)", len(used), queues, float(len(used)))
    rings = cfg.rings or {}
    cur_rx, max_rx = (rings.get("current") or {}).get("rx"), (rings.get("max") or {}).get("rx")
    if isinstance(cur_rx, int) and isinstance(max_rx, int) and cur_rx < max_rx:
        add(rf, "rings", "info", f"{nd} RX ring {cur_rx} of {max_rx} entries: bursts at line rate overflow small "
            f"rings (ethtool -G {nd} rx {max_rx})", cur_rx, max_rx, float(cur_rx), float(max_rx))


def _hash_text(entry: Mapping[str, Any]) -> str:
    """``IP SA/DA`` for the two addresses, else the fields as ethtool names them."""
    fields = list(entry.get("fields") or [])
    if fields[:2] == ["IP SA", "IP DA"]:
        fields[:2] = ["IP SA/DA"]
    short = [f.split(" [")[0] for f in fields]
    return ", ".join(short) or "no field"


def rss_hash(add: Add, rf: RailFacts, cfg: NicConfig) -> None:
    """The header fields RSS hashes per flow type (``ethtool -n DEV rx-flow-hash TYPE``): said per
    rail; whether they match the peers' is ``rss_hash_peers``. A type the driver does not answer is
    named ``not available on <driver>``."""
    nd = _netdev(rf)
    missing = [k for k in FLOW_HASH_TYPES if k not in cfg.flow_hash]
    gone = f"{', '.join(missing)} not available on {_driver(rf)}" if missing else ""
    if not cfg.flow_hash:
        reason = cfg.reasons.get("rx_flow_hash_udp4") or cfg.reasons.get(f"rx_flow_hash_{missing[0]}")
        add(rf, "rss_hash", "info", f"RSS hash fields (rx-flow-hash) of {nd} not available on {_driver(rf)} "
            f"({reason})")
        return
    said = "; ".join(f"{k} {e['letters'] or 'none'} ({_hash_text(e)})" for k, e in cfg.flow_hash.items())
    narrow = [k for k, e in cfg.flow_hash.items() if not e["l4"]]
    status = "pass" if not narrow and not missing else "info"
    add(rf, "rss_hash", status, f"{nd} RSS hashes {said}" + (f"; {gone}" if gone else ""),
        ", ".join(f"{k} {e['letters'] or 'none'}" for k, e in cfg.flow_hash.items()), "L4 ports hashed")


def rss_hash_peers(rails_by_host: Mapping[str, Sequence[RailFacts]]) -> list[Finding]:
    """Rails whose RSS leaves the L4 ports out of a flow type's hash while a strict majority of the
    other rails with the same driver hash them (a golden configuration in the making): all flows
    between two hosts then land on one receive queue. One ``pass`` per driver when they agree."""
    seen: dict[str, list[tuple[str, RailFacts, dict[str, dict[str, Any]], bool]]] = {}
    for host, rails in rails_by_host.items():
        for rf in rails:
            if rf.nic is None:
                continue
            cfg = read_nic(rf.nic)
            if cfg.flow_hash:
                driver = (rf.nic or {}).get("driver") or (rf.rdma or {}).get("driver")
                seen.setdefault(str(driver or ""), []).append((host, rf, cfg.flow_hash, len(rails) > 1))
    out: list[Finding] = []
    for driver, members in sorted(seen.items()):
        odd, which = 0, f"{driver} rails" if driver else "rails"
        for host, rf, hashes, multi in members:
            for kind, entry in hashes.items():
                peers = [h[kind] for p, r, h, _ in members if (p, r.rail.name) != (host, rf.rail.name) and kind in h]
                with_ports = [e for e in peers if e["l4"]]
                if entry["l4"] or len(with_ports) * 2 <= len(peers) or not peers:
                    continue
                odd += 1
                nd, rail = _netdev(rf), rf.rail.name if multi else None
                letters = Counter(e["letters"] for e in with_ports).most_common(1)[0][0]
                where = f"{host} {rail}" if rail else host
                out.append(Finding(host, rail, rf.label, "rss_hash_peers", "warn", f"{kind} {entry['letters'] or 'none'}",
                                   f"{kind} {letters}",
                                   f"{where}: {kind} RSS hashes {_hash_text(entry)} only; peers also hash L4 ports "
                                   f"({len(with_ports)} of {len(peers)} {which}: {letters}): flows between two "
                                   f"hosts share one receive queue; ethtool -N {nd} rx-flow-hash {kind} {letters}",
                                   float(len(with_ports)), float(len(peers))))
        if not odd and len(members) > 1:
            out.append(Finding("", None, None, "rss_hash_peers", "pass", None, None,
                               f"{len(members)} {which} hash each flow type alike"))
    return out


def irqs(add: Add, rf: RailFacts, cfg: NicConfig, irqbalance: bool | None) -> None:
    """The NIC's queue IRQs spread over CPUs of its own NUMA node."""
    nd = _netdev(rf)
    if cfg.irqs is None:
        add(rf, "irq_spread", "info", f"IRQ affinity of {nd} not available on {_driver(rf)} ({cfg.reasons.get('irqs')})")
        return
    queue = [i for i in cfg.irqs if i.queue]
    balance = {True: "irqbalance runs", False: "irqbalance does not run", None: "irqbalance unknown"}[irqbalance]
    if not queue:
        add(rf, "irq_spread", "info", f"no queue IRQs of {nd} among {[i.name for i in cfg.irqs]}")
        return
    homes = {i.cpus[0] for i in queue if len(i.cpus) == 1}
    pinned = all(len(i.cpus) == 1 for i in queue)
    if len(queue) > 1 and pinned and len(homes) == 1:
        cpu = next(iter(homes))
        add(rf, "irq_spread", "warn", f"all {len(queue)} queue IRQs of {nd} on CPU {cpu} ({balance}): one core takes "
            "every interrupt and its softirq; spread them over the NIC's local CPUs", f"CPU {cpu}",
            f"{len(queue)} CPUs", 1.0, float(len(queue)))
    else:
        spread = len({c for i in queue for c in i.cpus})
        add(rf, "irq_spread", "pass" if len(queue) > 1 else "info", f"{len(queue)} queue IRQ(s) of {nd} on "
            f"{spread} CPU(s) ({balance})", f"{spread} CPUs", None, float(spread))
    local = set(cpulist((rf.nic or {}).get("local_cpulist")))
    node = (rf.nic or {}).get("numa_node")
    if not local or node is None:
        add(rf, "irq_numa", "info", f"NUMA node of {nd} unknown: IRQ locality not judged")
        return
    far = [i for i in queue if i.cpus and not set(i.cpus) & local]
    if far:
        cpus = sorted({c for i in far for c in i.cpus})
        add(rf, "irq_numa", "warn", f"{len(far)} of {len(queue)} queue IRQs of {nd} run only on CPU(s) "
            f"{_ranges(cpus)}, off the NIC's NUMA node {node} (CPUs {_ranges(sorted(local))}): every interrupt "
            f"crosses the socket interconnect; pin them to {_ranges(sorted(local))}",
            _ranges(cpus), _ranges(sorted(local)), float(len(far)), 0.0)
    else:
        add(rf, "irq_numa", "pass", f"queue IRQs of {nd} on NUMA node {node}'s CPUs", node, node)


def payload(add: Add, rf: RailFacts, cfg: NicConfig) -> None:
    """MaxPayload and MaxReadReq of the NIC's PCIe function (lspci DevCtl)."""
    dev = cfg.lspci or {}
    mps, mrrs = dev.get("max_payload_bytes"), dev.get("max_read_req_bytes")
    if mps is None or mrrs is None:
        add(rf, "pcie_payload", "info", f"MaxPayload/MaxReadReq not available on {_driver(rf)} "
            f"({cfg.reasons.get('lspci') or 'no DevCtl line in lspci -vvv'})")
        return
    low = [f"{name} {v} B < {lim} B" for name, v, lim in (("MaxPayload", mps, MIN_PAYLOAD_BYTES),
                                                         ("MaxReadReq", mrrs, MIN_READ_REQ_BYTES)) if v < lim]
    text = f"MaxPayload {mps} B, MaxReadReq {mrrs} B"
    if low:
        add(rf, "pcie_payload", "warn", f"{text}: {'; '.join(low)}: small PCIe transactions cost bandwidth "
            "(BIOS PCIe settings, or setpci)", text, f">= {MIN_PAYLOAD_BYTES} B / >= {MIN_READ_REQ_BYTES} B",
            float(min(mps, mrrs)), float(MIN_PAYLOAD_BYTES))
    else:
        add(rf, "pcie_payload", "pass", text, text, f">= {MIN_PAYLOAD_BYTES} B / >= {MIN_READ_REQ_BYTES} B")


def aer(add: Add, rf: RailFacts, cfg: NicConfig) -> None:
    """The NIC's AER counters since boot."""
    if cfg.aer is None:
        add(rf, "aer", "info", f"AER counters not available on {_driver(rf)} ({cfg.reasons.get('aer')})")
        return
    totals = {kind: (parsed.get("total") or 0) for kind, parsed in cfg.aer.items()}
    named = "; ".join(f"{kind} {total} ({_nonzero(cfg.aer[kind])})" for kind, total in totals.items() if total)
    bad = totals.get("fatal", 0) + totals.get("nonfatal", 0)
    if bad:
        add(rf, "aer", "fail", f"uncorrectable PCIe errors since boot: {named}: check the slot, riser and card",
            named, 0, float(bad), 0.0)
    elif totals.get("correctable"):
        add(rf, "aer", "warn", f"correctable PCIe errors since boot: {named}: the link retries (signal "
            "integrity); reseat or move the card if they grow", named, 0, float(totals["correctable"]), 0.0)
    else:
        add(rf, "aer", "pass", f"no AER errors ({', '.join(sorted(totals))})", 0, 0, 0.0)


def _nonzero(parsed: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in (parsed.get("counters") or {}).items() if v) or "no detail"


def _ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> ``0-2,5``."""
    out: list[str] = []
    for c in cpus:
        if out and "-" not in out[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)
