"""Preflight checks of the fabric around the NICs: PCIe ACS between GPU and NIC, RoCE QoS.

From the probe's ``fabric`` section (raw ``setpci`` words, ``mlnx_qos`` / ``dcb pfc`` text, the
mlx5 ECN switches). ACS redirect on a PCIe switch port sends GPUDirect peer traffic up to the
CPU's root complex; RoCE QoS (PFC priorities, trust mode, ECN) is read and shown per NIC, and
hosts that disagree are named, since a priority lossless on one end only is lossy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import Host, Verdict
from benchharness.telemetry.parsers import pcie_acs, qos
from benchharness.tools.mpi_launch import gpu_count


def _gpu_rdma(host: Host) -> bool:
    try:
        gpus = gpu_count(host)
    except ValueError:
        gpus = 0
    return bool(gpus) and any(r.rdma_dev for r in host.nics())


def acs_verdicts(host: Host, facts: Mapping[str, Any]) -> list[Verdict]:
    """One verdict per host: ACS redirect off on every switch port above its RDMA NICs and GPUs
    (pass), on somewhere (fail where GPU memory meets RDMA, else warn), or not readable (info)."""
    entries = ((facts.get("fabric") or {}).get("acs") or {})
    rails = {r.netdev for r in host.nics() if r.netdev}
    chosen = {name: e for name, e in entries.items()
              if e.get("kind") == "gpu" or not rails or name in rails}
    if not chosen:
        return []
    bad: list[str] = []
    unread: set[str] = set()
    read = 0
    for name, entry in sorted(chosen.items()):
        for bridge in (entry.get("bridges") or [])[1:]:  # below the root port: the switch ports
            word = bridge.get("word")
            if word is None:
                if bridge.get("reason"):
                    unread.add(str(bridge["reason"]))
                continue
            try:
                flags = pcie_acs.parse_setpci_acs(str(word))["flags"]
            except ValueError:
                unread.add(f"setpci printed {str(word)[:40]!r}")
                continue
            read += 1
            on = pcie_acs.redirects(flags)
            if on:
                bad.append(f"{bridge['bdf']} ({'+'.join(on)}) above {entry.get('kind')} {name}")
    if bad:
        status = "fail" if _gpu_rdma(host) else "warn"
        return [Verdict("preflight.pcie_acs", status,
                        f"PCIe ACS redirect on switch ports {'; '.join(bad)}: GPUDirect peer traffic goes "
                        "up to the CPU root complex; disable ACS on those ports (setpci -s BDF "
                        "ECAP_ACS+0x6.w=0000, or in the BIOS)", host=host.name, value=float(len(bad)))]
    if read:
        return [Verdict("preflight.pcie_acs", "pass",
                        f"ACS redirect off on {read} switch port(s) above {len(chosen)} NIC/GPU(s)",
                        host=host.name)]
    if unread and _gpu_rdma(host):
        return [Verdict("preflight.pcie_acs", "info",
                        f"PCIe ACS not read ({'; '.join(sorted(unread))[:160]}): run the probe as root "
                        "with pciutils' setpci to check GPUDirect paths", host=host.name)]
    return []


def nic_qos(entry: Mapping[str, Any]) -> dict[str, Any]:
    """PFC priorities, trust mode and ECN of one netdev from its raw probe entry."""
    out: dict[str, Any] = {"pfc_enabled": None, "trust": None, "source": None}
    if entry.get("mlnx_qos"):
        try:
            out.update(qos.parse_mlnx_qos(str(entry["mlnx_qos"])), source="mlnx_qos")
        except ValueError:
            pass
    if out["source"] is None and entry.get("dcb_pfc"):
        try:
            parsed = qos.parse_dcb_pfc(str(entry["dcb_pfc"]))
            out.update(pfc_enabled=parsed["pfc_enabled"], source="dcb")
        except ValueError:
            pass
    out["ecn"] = qos.ecn_from_sysfs({str(k): str(v) for k, v in (entry.get("ecn") or {}).items()})
    return out


def qos_verdicts(facts_by_host: Mapping[str, Mapping[str, Any]], hosts: Sequence[Host]) -> list[Verdict]:
    """An info verdict per RDMA rail netdev with its PFC / trust / ECN, and a warning naming the
    hosts whose settings differ from the most common ones."""
    out: list[Verdict] = []
    seen: dict[str, tuple[Any, ...]] = {}
    for host in hosts:
        entries = (((facts_by_host.get(host.name) or {}).get("fabric") or {}).get("qos") or {})
        rails = [r.netdev for r in host.nics() if r.netdev and r.rdma_dev] or sorted(entries)
        for netdev in rails:
            entry = entries.get(netdev)
            if entry is None:
                continue
            found = nic_qos(entry)
            if found["source"] is None and not any(found["ecn"].values()):
                continue
            pfc = found["pfc_enabled"]
            text = (f"{netdev}: PFC on {'priorities ' + ','.join(map(str, pfc)) if pfc else 'no priority'}"
                    if pfc is not None else f"{netdev}: PFC not read")
            text += f", trust {found['trust']}" if found.get("trust") else ""
            ecn = found["ecn"]
            if any(ecn.values()):
                text += (f", ECN notification on {','.join(map(str, ecn['np'])) or 'none'}, "
                         f"reaction on {','.join(map(str, ecn['rp'])) or 'none'}")
            out.append(Verdict("preflight.roce_qos", "info", text + f" ({found['source'] or 'sysfs'})",
                               host=host.name))
            seen[f"{host.name}/{netdev}"] = (tuple(pfc or ()), found.get("trust"), tuple(ecn["np"]),
                                             tuple(ecn["rp"]))
    if len(set(seen.values())) > 1:
        counts: dict[tuple[Any, ...], int] = {}
        for value in seen.values():
            counts[value] = counts.get(value, 0) + 1
        common = max(counts, key=lambda v: counts[v])
        odd = sorted(k for k, v in seen.items() if v != common)
        out.append(Verdict("preflight.roce_qos_mismatch", "warn",
                           f"RoCE QoS differs from most NICs (PFC {list(common[0])}, trust {common[1]}) on "
                           f"{', '.join(odd)}: a priority lossless on one end only drops under congestion",
                           value=float(len(odd))))
    return out
