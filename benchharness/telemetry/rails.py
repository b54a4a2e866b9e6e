"""A host's rails as the host itself reports them: GPU<->NIC affinity from ``nvidia-smi topo -m``
(or, for AMD and hosts without the matrix, from the PCI paths in sysfs with the GPU order and NUMA
nodes of ``amd-smi topology`` / ``rocm-smi --showtopo``), and ``rails=auto`` (the probe's NICs, RDMA devices, addresses and GPU topology -> Rails).

Nearest GPU: per NIC the GPUs ranked by their relation (PIX < PXB < PHB < NODE < SYS); NICs
taken in order each get the best-ranked GPU that no earlier NIC took (two NICs behind one
switch with two GPUs get one GPU each), that GPU first in ``nearest_gpus``.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import Host, Rail
from benchharness.telemetry.parsers.gpu import parse_nvidia_topo

#: ``nvidia-smi topo -m`` relations, nearest first.
RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
#: Relations that keep GPU<->NIC traffic under one PCIe switch (GPUDirect RDMA at full rate).
NEAR = ("PIX", "PXB")


def nic_column(parsed: Mapping[str, Any], nic: str, position: int | None = None) -> str | None:
    """The matrix column of an RDMA device: its ``NICk`` legend entry, its own name (older drivers),
    or, when the capture has no legend, ``NIC<position>`` (default: the device's number, mlx5_3 ->
    NIC3, which is how nvidia-smi numbers a host's RDMA devices)."""
    by_name = {name: col for col, name in parsed["nics"].items()}
    if nic in by_name:
        return str(by_name[nic])
    if nic in parsed["devices"]:
        return nic
    m = re.search(r"(\d+)$", nic)
    if position is None and m:
        position = int(m.group(1))
    if not parsed["nics"] and position is not None and f"NIC{position}" in parsed["devices"]:
        return f"NIC{position}"
    return None


def gpu_relations(parsed: Mapping[str, Any], column: str) -> dict[int, str]:
    """GPU index -> relation to one NIC column, from the GPU rows (else the NIC's own row)."""
    out: dict[int, str] = {}
    for dev in parsed["devices"]:
        m = re.fullmatch(r"GPU(\d+)", dev)
        if not m:
            continue
        rel = (parsed["matrix"].get(dev) or {}).get(column) or (parsed["matrix"].get(column) or {}).get(dev)
        if rel and rel in RANK:
            out[int(m.group(1))] = rel
    return out


def nearest_gpus(topo_text: str, nics: Sequence[str], gpus: Sequence[int] | None = None
                 ) -> dict[str, tuple[int, ...]]:
    """NIC -> GPUs nearest it (under one PCIe switch, PIX/PXB; else the best there is), the GPU
    it should use first. ``nics`` in rail order (RDMA device names); ``gpus`` limits the choice."""
    parsed = parse_nvidia_topo(topo_text)
    relations: dict[str, dict[int, str]] = {}
    for nic in nics:
        col = nic_column(parsed, nic)
        relations[nic] = gpu_relations(parsed, col) if col else {}
    return assign_nearest(relations, gpus)


def assign_nearest(relations: Mapping[str, Mapping[int, str]], gpus: Sequence[int] | None = None
                   ) -> dict[str, tuple[int, ...]]:
    """NIC -> GPUs nearest it from NIC -> {GPU: relation}, as ``nearest_gpus`` explains."""
    nics = list(relations)
    relations = {n: {g: r for g, r in rel.items() if gpus is None or g in gpus} for n, rel in relations.items()}
    taken: set[int] = set()
    out: dict[str, tuple[int, ...]] = {}
    # NICs under a switch with a GPU choose first (PIX before PXB); a far NIC takes no GPU from them
    order = sorted(nics, key=lambda n: min((RANK[r] for r in relations[n].values()), default=9))
    for nic in order:
        rel = relations[nic]
        if not rel:
            out[nic] = ()
            continue
        best = min(RANK[r] for r in rel.values())
        close = sorted((g for g, r in rel.items() if RANK[r] <= max(best, RANK["PXB"])),
                       key=lambda g: (RANK[rel[g]], g))
        first = next((g for g in close if g not in taken and RANK[rel[g]] == best), close[0])
        if best <= RANK["PXB"]:
            taken.add(first)
        out[nic] = (first, *[g for g in close if g != first])
    return {nic: out[nic] for nic in nics}


def gpu_numa(topo_text: str) -> dict[int, int | None]:
    """GPU index -> its NUMA node (``NUMA Affinity`` column; None where it is a range or missing)."""
    parsed = parse_nvidia_topo(topo_text)
    return {int(dev[3:]): (parsed["affinity"].get(dev) or {}).get("numa")
            for dev in parsed["devices"] if re.fullmatch(r"GPU\d+", dev)}


def pci_relation(a: Sequence[str], b: Sequence[str], numa_a: int | None, numa_b: int | None) -> str | None:
    """``nvidia-smi topo -m``'s word for two devices from their PCI paths (``probe._pci_path``:
    root complex, then each PCI function down to the device): PIX under one switch (same parent
    bridge's parent), PXB below one root port, PHB same root complex, NODE another root complex on
    the same NUMA node, SYS across NUMA nodes. None when a path is unknown."""
    if not a or not b:
        return None
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    if common == 0:
        return "NODE" if numa_a is not None and numa_a == numa_b else "SYS"
    if common == 1:
        return "PHB"
    if len(a) - common <= 2 and len(b) - common <= 2 and common >= len(a) - 2 and common >= 3:
        return "PIX"
    return "PXB"


def gpu_table(facts: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The host's GPUs by index: ``index``, ``bdf``, ``numa`` and ``pci_path``, from nvidia-smi
    (index, bus id; NUMA from ``topo -m``), or for AMD from ``amd-smi topology`` (GPU index = its
    BDF's position) and ``rocm-smi --showtopo`` (NUMA), else sysfs GPUs in bus order (how both
    vendors' tools number them)."""
    from benchharness.telemetry.parsers.amd_gpu import parse_amd_smi_topology, parse_rocm_smi_topo

    gpus = facts.get("gpus") or {}
    pci = {str(g.get("pci_address")).lower(): g for g in gpus.get("pci") or [] if isinstance(g, Mapping)}
    order: list[str] = sorted(pci)
    numa: dict[int, int | None] = {}
    devices = gpus.get("devices")
    topo = gpus.get("topology") or {}
    amd = gpus.get("amd_topology") or {}
    if gpus.get("vendor") == "nvidia" and isinstance(devices, list):
        ids = {}
        for d in devices:
            bus = str(d.get("pci.bus_id") or "").lower()
            m = re.search(r"([0-9a-f]{4}):([0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$", bus[-12:]) if bus else None
            if m and str(d.get("index", "")).isdigit():
                ids[int(d["index"])] = f"{m.group(1)}:{m.group(2)}"
        order = [ids[i] for i in sorted(ids)] or order
        if topo.get("text"):
            numa = gpu_numa(topo["text"])
    elif amd.get("text"):
        if amd.get("tool") == "amd-smi":
            order = [b.lower() for b in parse_amd_smi_topology(amd["text"])["gpus"]] or order
        else:
            numa = {k: v for k, v in parse_rocm_smi_topo(amd["text"])["numa"].items()}
    out = []
    for i, bdf in enumerate(order):
        dev = pci.get(bdf) or {}
        node = numa.get(i)
        out.append({"index": i, "bdf": bdf, "numa": node if node is not None else dev.get("numa_node"),
                    "pci_path": list(dev.get("pci_path") or [])})
    return out


def nic_gpu_relations(facts: Mapping[str, Any], rdma_dev: str) -> dict[int, str]:
    """GPU index -> relation to one RDMA NIC: ``nvidia-smi topo -m`` where the host has it, else
    from the PCI paths of the NIC and of each GPU in sysfs (AMD, or NVIDIA without the matrix)."""
    topo = ((facts.get("gpus") or {}).get("topology") or {}).get("text")
    if topo:
        parsed = parse_nvidia_topo(topo)
        col = nic_column(parsed, rdma_dev)
        rel = gpu_relations(parsed, col) if col else {}
        if rel:
            return rel
    dev = next((d for d in (facts.get("rdma") or {}).get("devices") or []
                if isinstance(d, Mapping) and d.get("device") == rdma_dev), None)
    if not dev or not dev.get("pci_path"):
        return {}
    out: dict[int, str] = {}
    for gpu in gpu_table(facts):
        word = pci_relation(dev["pci_path"], gpu["pci_path"], dev.get("numa_node"), gpu["numa"])
        if word:
            out[int(gpu["index"])] = word
    return out


def relation(topo_text: str, nic: str, gpu: int, position: int | None = None) -> str | None:
    """The relation between one NIC and one GPU (``PIX``, ``SYS`` ...), None when unknown."""
    parsed = parse_nvidia_topo(topo_text)
    col = nic_column(parsed, nic, position)
    return gpu_relations(parsed, col).get(gpu) if col else None


# ---------------------------------------------------------------- rails=auto

def _serial(nic: Mapping[str, Any]) -> str | None:
    stack: list[Any] = [nic]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for k, v in item.items():
                if str(k).lower() in ("serial_number", "serial", "sn") and isinstance(v, str) and v.strip():
                    return v.strip()
                stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _roce_gid(port: Mapping[str, Any], address: str | None) -> int | None:
    """Index of the RoCE v2 GID that carries ``address`` (IPv4-mapped), None if there is none."""
    for gid in port.get("gids") or []:
        if "v2" not in str(gid.get("type") or "").lower() or not address:
            continue
        try:
            mapped = ipaddress.IPv6Address(str(gid.get("gid"))).ipv4_mapped
        except ValueError:
            continue
        if mapped is not None and str(mapped) == address:
            return int(gid["index"])
    return None


def rails_from_facts(facts: Mapping[str, Any], management: str | None = None) -> tuple[Rail, ...]:
    """The rails a probe document describes: physical NICs with an RDMA device and an IPv4 address
    (not the management address), those under one PCIe switch with a GPU when the GPU topology is
    known (the others are storage NICs); ordered by nearest GPU, then device name."""
    nics = [n for n in ((facts.get("nics") or {}).get("devices") or []) if isinstance(n, Mapping)]
    rdma = {d.get("device") or d.get("name"): d for d in ((facts.get("rdma") or {}).get("devices") or []) if isinstance(d, Mapping)}
    found: list[tuple[Mapping[str, Any], str | None, str]] = []
    for nic in nics:
        devs = nic.get("rdma_devices") or []
        addrs = [a for a in nic.get("ipv4") or [] if a != management]
        if not nic.get("virtual") and devs and addrs:
            found.append((nic, str(devs[0]), str(addrs[0])))
    if not found:  # no RDMA NIC at all (TCP-only hosts, lab namespaces): every addressed data NIC
        found = [(n, None, str(a[0])) for n in nics
                 if (a := [x for x in n.get("ipv4") or [] if x != management]) and n.get("netdev") != "lo"]
    near: dict[str, tuple[int, ...]] = {}
    if all(dev for _, dev, _ in found):
        names = [str(dev) for _, dev, _ in sorted(found, key=lambda f: _natural(str(f[1])))]
        relations = {n: nic_gpu_relations(facts, n) for n in names}
        if any(relations.values()):
            near = assign_nearest(relations)
            compute = [f for f in found if any(relations[str(f[1])].get(g) in NEAR for g in near[str(f[1])])]
            found = compute or found
    found.sort(key=lambda f: ((near.get(str(f[1])) or (999,))[0], _natural(str(f[1] or f[0].get("netdev")))))
    numa_of = {int(g["index"]): g["numa"] for g in gpu_table(facts)}
    rails = []
    for i, (nic, dev, addr) in enumerate(found):
        ports = (rdma.get(dev) or {}).get("ports") or [] if dev else []
        port = ports[0] if ports and isinstance(ports[0], Mapping) else {}
        speed = nic.get("speed_mbps")
        rails.append(Rail(index=i, netdev=str(nic.get("netdev")), rdma_dev=dev, rdma_port=int(port.get("port") or 1),
                          data_ip=addr, gid_index=_roce_gid(port, addr),
                          numa_node=nic.get("numa_node") if nic.get("numa_node") is not None
                          else numa_of.get((near.get(str(dev)) or (-1,))[0]),
                          line_rate_gbps=speed / 1000 if isinstance(speed, int | float) else None,
                          nearest_gpus=near.get(str(dev), ()), serial=_serial(nic),
                          pci_address=nic.get("pci_address")))
    return tuple(rails)


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def with_rails(host: Host, rails: Sequence[Rail]) -> Host:
    """``host`` with discovered rails, its single-NIC variables set from rail 0 (as the inventory does)."""
    if not rails:
        return host
    first = rails[0]
    values = {**host.vars, "netdev": first.netdev, "rdma_dev": first.rdma_dev, "rdma_port": first.rdma_port,
              "gid_index": first.gid_index, "numa_node": first.numa_node, "rails": "auto"}
    return dataclasses.replace(host, rails=tuple(rails), data_ip=first.data_ip, vars=values)

