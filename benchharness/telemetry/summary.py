"""The facts a reader looks for first, from the probe's JSON: one row per host and per NIC."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchharness.core.pcie import gen_of
from benchharness.telemetry import requirements


def _available(section: Any) -> bool:
    return isinstance(section, Mapping) and section.get("available", True) is not False


def is_probe_facts(facts: Any) -> bool:
    """Whether ``facts`` is what the probe prints (and not an unreadable or foreign document)."""
    return isinstance(facts, Mapping) and isinstance(facts.get("host"), Mapping) and "cpu" in facts


def host_row(facts: Mapping[str, Any]) -> dict[str, str]:
    """OS, kernel, CPU, NUMA, memory, governor, GPUs and tool versions of one host."""
    host, cpu = facts.get("host") or {}, facts.get("cpu") or {}
    numa, memory, gpus = facts.get("numa") or {}, facts.get("memory") or {}, facts.get("gpus") or {}
    nodes = numa.get("nodes", []) if isinstance(numa, Mapping) else []
    cpuless = numa.get("cpuless_nodes", []) if isinstance(numa, Mapping) else []
    governor = cpu.get("governor")
    if isinstance(governor, Mapping):
        governor = "unknown" if governor.get("available") is False else governor.get("value")
    devices = gpus.get("devices") if isinstance(gpus, Mapping) else None
    if isinstance(devices, list):
        models = sorted({str(d.get("name") or d.get("model") or "?") for d in devices if isinstance(d, Mapping)})
        gpu_text = f"{len(devices)} × {', '.join(models)}" if devices else "none"
    else:
        pci = gpus.get("pci", []) if isinstance(gpus, Mapping) else []
        gpu_text = f"{len(pci)} on PCIe (no nvidia-smi/amd-smi)" if pci else "none"
    tools = facts.get("tools") or {}
    versions = [f"{name} {t.get('version') or '?'}" for name in requirements.shown()
                if isinstance(t := tools.get(name), Mapping) and t.get("available")]
    total = memory.get("total_bytes") if isinstance(memory, Mapping) else None
    return {
        "OS": str(host.get("os") or "?"), "kernel": str(host.get("kernel") or "?"),
        "CPU": f"{cpu.get('model', '?')} · {cpu.get('sockets', '?')} socket(s), "
               f"{cpu.get('physical_cores', '?')} cores, {cpu.get('logical_cores', '?')} threads",
        "NUMA": f"{len(nodes)} node(s)" + (f", {len(cpuless)} without CPUs" if cpuless else ""),
        "memory": f"{total / 2**30:.0f} GiB" if isinstance(total, int | float) else "?",
        "governor": str(governor or "?"), "GPUs": gpu_text,
        "tools": ", ".join(versions) or "none found",
    }


def pcie_text(pcie: Any) -> str:
    """``Gen5 x16`` or ``Gen4 x8 of Gen5 x16 — DOWNGRADED``; empty when sysfs had no link."""
    if not _available(pcie) or not isinstance(pcie, Mapping) or not pcie.get("current_width"):
        return ""
    now = f"Gen{gen_of(pcie.get('current_speed_gts')) or '?'} x{pcie.get('current_width')}"
    cap = f"Gen{gen_of(pcie.get('max_speed_gts')) or '?'} x{pcie.get('max_width', '?')}"
    if pcie.get("downgraded"):
        return f"{now} of {cap} — DOWNGRADED"
    return now


def nic_row(nic: Mapping[str, Any]) -> dict[str, str]:
    """Name, driver, firmware, speed, MTU, state, NUMA node, PCIe link and RDMA devices of a NIC."""
    firmware = nic.get("firmware")
    if isinstance(firmware, Mapping):
        firmware = None
    speed = nic.get("speed_mbps")
    return {
        "netdev": str(nic.get("netdev") or nic.get("name") or "?"),
        "driver": str(nic.get("driver") or ""), "firmware": str(firmware or ""),
        "speed": f"{speed / 1000:g} Gb/s" if isinstance(speed, int | float) and speed > 0 else "unknown",
        "MTU": str(nic.get("mtu") or ""), "state": str(nic.get("operstate") or ""),
        "NUMA": "" if nic.get("numa_node") in (None, -1) else str(nic.get("numa_node")),
        "PCIe": pcie_text(nic.get("pcie")),
        "RDMA": ", ".join(str(d) for d in nic.get("rdma_devices") or []),
        "virtual": "yes" if nic.get("virtual") else "",
    }


def tool_versions(facts_by_host: Mapping[str, Any]) -> dict[str, str]:
    """Tool → version across hosts; hosts that disagree are named (``6.06 (h1, h2); 5.9 (h3)``)."""
    seen: dict[str, dict[str, list[str]]] = {}
    for host, facts in sorted(facts_by_host.items()):
        tools = facts.get("tools") if isinstance(facts, Mapping) else None
        for name, tool in (tools or {}).items():
            if isinstance(tool, Mapping) and tool.get("available") and tool.get("version"):
                seen.setdefault(name, {}).setdefault(str(tool["version"]), []).append(host)
    out = {}
    for name, versions in sorted(seen.items()):
        if len(versions) == 1:
            out[name] = next(iter(versions))
        else:
            out[name] = "; ".join(f"{v} ({', '.join(hosts)})" for v, hosts in sorted(versions.items()))
    return out
