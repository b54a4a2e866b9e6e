"""Preflight checks over probe facts: things that make a NIC benchmark wrong before it starts.

``run_checks`` takes the probe document of each host (``probe.py`` output, keyed by inventory host
name), the inventory hosts (their vars say which ``netdev``, ``rdma_dev``/``rdma_port``,
``numa_node`` and ``gpus`` a benchmark uses) and the pairs that will run, and returns verdicts with
the evidence in their message. Limits and minimum versions are plain data below.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import Host, Verdict
from benchharness.core.values import as_list, gpu_indices
from benchharness.telemetry.fabric_checks import acs_verdicts, qos_verdicts
from benchharness.telemetry.parsers.ethtool_module import parse_module
from benchharness.telemetry.parsers.gpu import parse_nvidia_topo
from benchharness.telemetry.rails import gpu_relations, nic_column
from benchharness.tools.mpi_launch import gpu_count

#: (warn, fail) in °C. A NIC ASIC sensor with its own ``crit`` uses (crit - 10, crit) instead.
TEMPERATURE_LIMITS: dict[str, tuple[float, float]] = {
    "module": (70.0, 80.0),
    "nic": (95.0, 105.0),
    "gpu": (83.0, 90.0),
}
#: Oldest versions the harness's command lines and parsers rely on.
MIN_VERSIONS: dict[str, str] = {"perftest": "4.5", "iperf3": "3.7"}
REQUIRED_TOOLS: tuple[str, ...] = ("perftest", "iperf3")
#: nvidia-smi topo relations that keep GPU<->NIC traffic under one PCIe switch.
GOOD_GPU_NIC = ("PIX", "PXB")


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))




def _available(section: Any) -> bool:
    return not (isinstance(section, Mapping) and section.get("available") is False)


class _HostChecks:
    """The checks for one host; each method appends verdicts."""

    def __init__(self, host: Host, facts: Mapping[str, Any], limits: Mapping[str, tuple[float, float]]):
        self.host, self.facts, self.limits = host, facts, limits
        self.out: list[Verdict] = []
        nics_section = facts.get("nics") or {}
        self.all_nics: list[dict[str, Any]] = list(nics_section.get("devices") or []) if _available(
            nics_section) else []
        wanted = as_list(host.var("netdev"))
        by_name = {n["netdev"]: n for n in self.all_nics}
        self.nics = [by_name[n] for n in wanted if n in by_name] if wanted else [
            n for n in self.all_nics if not n.get("virtual")]
        for name in wanted:
            if name == "lo" and name not in by_name:
                self.add("netdev", "info", "traffic runs over loopback (lo): no NIC is measured on this host")
            elif name not in by_name:
                self.add("netdev", "fail", f"netdev {name} not found; interfaces: {', '.join(by_name) or 'none'}")

    def add(self, check: str, status: str, message: str, value: float | None = None,
            limit: float | None = None) -> None:
        self.out.append(Verdict(check=f"preflight.{check}", status=status, message=message,
                                host=self.host.name, value=value, limit=limit))

    def pcie_nics(self) -> None:
        for nic in self.nics:
            link, where = nic.get("pcie") or {}, f"{nic['netdev']} ({nic.get('pci_address')})"
            if not _available(link):
                lspci = nic.get("lspci") or {}
                if _available(lspci) and lspci.get("lnksta"):
                    cur, cap = lspci["lnksta"], lspci["lnkcap"]
                    link = {"current_speed_gts": cur.get("speed_gts"), "current_width": cur.get("width"),
                            "max_speed_gts": cap.get("speed_gts"), "max_width": cap.get("width"),
                            "downgraded": lspci.get("downgraded")}
                else:
                    if not nic.get("virtual"):
                        self.add("pcie_link", "info", f"{where}: PCIe link not readable ({link.get('reason')})")
                    continue
            self._pcie_verdict("NIC " + where, link, speed_is_idle=False)

    def _pcie_verdict(self, what: str, link: Mapping[str, Any], speed_is_idle: bool) -> None:
        cs, cw = link.get("current_speed_gts"), link.get("current_width")
        ms, mw = link.get("max_speed_gts"), link.get("max_width")
        text = f"{what}: PCIe link {cs:g} GT/s x{cw}, capable of {ms:g} GT/s x{mw}" if all(
            v is not None for v in (cs, cw, ms, mw)) else f"{what}: PCIe link {link}"
        value = cs * cw if cs and cw else None
        limit = ms * mw if ms and mw else None
        width_low = cw is not None and mw is not None and cw < mw
        speed_low = cs is not None and ms is not None and cs < ms
        if width_low or (speed_low and not speed_is_idle):
            self.add("pcie_link", "fail", text + " (trained below capability: reseat the card, check the "
                     "slot, riser and BIOS bifurcation/speed settings)", value, limit)
        elif speed_low:
            self.add("pcie_link", "info", text + " (GPUs lower their link speed when idle; check under load)",
                     value, limit)
        else:
            self.add("pcie_link", "pass", text, value, limit)

    def pcie_gpus(self) -> None:
        gpus = self.facts.get("gpus") or {}
        devices = gpus.get("devices")
        if gpus.get("vendor") == "nvidia" and isinstance(devices, list):
            for dev in devices:
                def num(key: str, d: Mapping[str, Any] = dev) -> float | None:
                    try:
                        return float(d.get(key, ""))
                    except ValueError:
                        return None
                gens = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
                cur_gen, max_gen = num("pcie.link.gen.current"), num("pcie.link.gen.max")
                link = {"current_speed_gts": gens.get(int(cur_gen)) if cur_gen else None,
                        "max_speed_gts": gens.get(int(max_gen)) if max_gen else None,
                        "current_width": num("pcie.link.width.current"), "max_width": num("pcie.link.width.max")}
                link = {k: (int(v) if k.endswith("width") and v else v) for k, v in link.items()}
                self._pcie_verdict(f"GPU{dev.get('index')} {dev.get('name')} ({dev.get('pci.bus_id')})", link,
                                   speed_is_idle=True)
            return
        for dev in gpus.get("pci") or []:
            if _available(dev.get("pcie")):
                self._pcie_verdict(f"GPU {dev['pci_address']}", dev["pcie"], speed_is_idle=True)

    def numa(self) -> None:
        pinned = self.host.var("numa_node")
        nodes = (self.facts.get("numa") or {}).get("nodes") or []
        for nic in self.nics:
            if nic.get("virtual"):
                continue
            node = nic.get("numa_node")
            if node is None:
                if len(nodes) > 1:
                    self.add("numa_affinity", "warn", f"{nic['netdev']} reports no NUMA node (numa_node -1) on "
                             f"a {len(nodes)}-node host: check the BIOS (SRAT/ACPI)")
                continue
            cpus = nic.get("local_cpulist")
            if pinned is None:
                self.add("numa_affinity", "info", f"{nic['netdev']} is on NUMA node {node} (local CPUs {cpus}); "
                         f"set numa_node={node} in the inventory to pin benchmarks there", value=node)
            elif int(pinned) != node:
                self.add("numa_affinity", "warn", f"benchmark pinned to NUMA node {pinned} but {nic['netdev']} "
                         f"is on NUMA node {node} (local CPUs {cpus}): traffic crosses the socket "
                         f"interconnect; set numa_node={node}", value=node, limit=float(pinned))
            else:
                self.add("numa_affinity", "pass", f"{nic['netdev']} and the benchmark are on NUMA node {node}",
                         value=node, limit=float(pinned))

    def links(self) -> None:
        for nic in self.nics:
            state = nic.get("operstate")
            speed = nic.get("speed_mbps")
            if state != "up":
                self.add("link_state", "fail", f"{nic['netdev']} link is {state} (carrier {nic.get('carrier')})")
            else:
                shown = f"{speed / 1000:g} Gb/s" if speed else f"speed unknown ({nic.get('speed_raw')})"
                self.add("link_state", "pass", f"{nic['netdev']} is up at {shown}, MTU {nic.get('mtu')}",
                         value=speed / 1000 if speed else None)
        rdma = self.facts.get("rdma") or {}
        devices = {d["device"]: d for d in rdma.get("devices") or []} if _available(rdma) else {}
        for name in as_list(self.host.var("rdma_dev")):
            port_no = int(self.host.var("rdma_port", 1))
            dev = devices.get(name)
            port = next((p for p in (dev or {}).get("ports", []) if p.get("port") == port_no), None)
            if port is None:
                reason = rdma.get("reason") if not _available(rdma) else f"found: {', '.join(devices) or 'none'}"
                self.add("link_state", "fail", f"RDMA device {name} port {port_no} not found ({reason})")
            elif port.get("state") != "ACTIVE" or port.get("phys_state") != "LinkUp":
                self.add("link_state", "fail", f"{name}/{port_no} is {port.get('state')} / "
                         f"{port.get('phys_state')} ({port.get('link_layer')})")
            else:
                self.add("link_state", "pass", f"{name}/{port_no} ACTIVE/LinkUp at {port.get('rate')}",
                         value=port.get("rate_gbps"))

    def gid_index(self) -> None:
        """Each RoCE rail's configured ``gid_index``: a RoCE v2 GID carrying the rail's address.

        perftest, NCCL and UCX address the peer by that GID; a RoCE v1 or link-local entry, or one of
        another address, connects to the wrong place or not at all. The right index is suggested.
        """
        rdma = self.facts.get("rdma") or {}
        if not _available(rdma):
            return
        devices = {d["device"]: d for d in rdma.get("devices") or []}
        for rail in self.host.nics():
            if not rail.rdma_dev or rail.gid_index is None:
                continue
            dev = devices.get(rail.rdma_dev) or {}
            port = next((p for p in dev.get("ports", []) if p.get("port") == rail.rdma_port), None)
            if port is None or port.get("link_layer") != "Ethernet":
                continue  # missing: link_state says so; InfiniBand: GID 0 is right
            gids = port.get("gids") or []
            # gid_ip: the address the GID carries when it is not the rail's own (an RDMA device
            # shared into a network namespace or container, whose GIDs hold the root's addresses)
            address = str(self.host.var("gid_ip")) if self.host.var("gid_ip") and \
                rail.rdma_dev == self.host.var("rdma_dev") else rail.data_ip
            good = [g for g in gids if g.get("type") == "RoCE v2" and _carries(g.get("gid"), address)]
            entry = next((g for g in gids if g.get("index") == rail.gid_index), None)
            where = f"{rail.rdma_dev}/{rail.rdma_port} ({rail.name}) gid_index={rail.gid_index}"
            if entry is not None and entry in good:
                self.add("gid_index", "pass", f"{where}: RoCE v2, {entry['gid']}", value=rail.gid_index)
                continue
            found = "no such entry" if entry is None else f"{entry.get('type')} {entry.get('gid')}"
            hint = (f"; use gid_index={good[0]['index']}" if good else
                    f"; no RoCE v2 GID carries {address or 'an IPv4 address'} (is the address on "
                    f"{', '.join(port.get('netdevs') or []) or 'the netdev'}?)")
            self.add("gid_index", "fail", f"{where} is {found}{hint}", value=rail.gid_index,
                     limit=float(good[0]["index"]) if good else None)

    def gpudirect(self) -> None:
        """GPU hosts with RDMA rails: nvidia_peermem (or nv_peer_mem) loaded, else DMA-BUF is the only way.

        Without either, NCCL's ``GDRDMA`` channels silently become host-memory bounces.
        """
        try:
            gpus = gpu_count(self.host)
        except ValueError:
            return
        modules = (self.facts.get("host") or {}).get("modules")
        if not gpus or modules is None or not any(r.rdma_dev for r in self.host.nics()):
            return
        if str(self.host.var("gpu_vendor", "nvidia")) == "amd":
            return  # ROCm peer memory lives in amdgpu itself
        loaded = [m for m in ("nvidia_peermem", "nv_peer_mem") if m in modules]
        if loaded:
            self.add("gpudirect", "pass", f"{loaded[0]} is loaded (GPUDirect RDMA)")
            return
        kernel = str((self.facts.get("host") or {}).get("kernel") or "")
        dmabuf = _version_tuple(kernel) >= (5, 12)
        self.add("gpudirect", "warn", "nvidia_peermem is not loaded: GPUDirect RDMA needs it"
                 + (f", or DMA-BUF (kernel {kernel} has it; needs NVIDIA's open kernel modules and NCCL >= 2.19)"
                    if dmabuf else f" (kernel {kernel or '?'} predates DMA-BUF, 5.12)")
                 + "; modprobe nvidia_peermem")

    def tools(self, required: Sequence[str], minimum: Mapping[str, str]) -> None:
        tools = self.facts.get("tools") or {}
        for name in required:
            info = tools.get(name) or {"available": False, "reason": "not probed"}
            if not info.get("available"):
                probed = self.facts.get("commands", True)
                self.add("tool_version", "fail" if probed else "info",
                         f"{name} is missing: {info.get('reason')}" if probed else f"{name} not probed "
                         "(probe ran with --no-commands)")
                continue
            version, need = info.get("version"), minimum.get(name)
            if need and version and _version_tuple(version) < _version_tuple(need):
                self.add("tool_version", "fail", f"{name} {version} is older than {need} ({info.get('path')})")
            elif need and not version:
                self.add("tool_version", "info", f"{name} version unknown ({info.get('text')!r})")
            else:
                self.add("tool_version", "pass", f"{name} {version} ({info.get('path')})")

    def governor(self) -> None:
        gov = (self.facts.get("cpu") or {}).get("governor")
        if isinstance(gov, Mapping):
            self.add("cpu_governor", "info", f"CPU governor unknown: {gov.get('reason')}")
        elif gov != "performance":
            counts = (self.facts.get("cpu") or {}).get("governors")
            self.add("cpu_governor", "warn", f"CPU frequency governor is {gov} {counts or ''}: latency and small-"
                     "message rates vary; set it to performance (cpupower frequency-set -g performance)")
        else:
            self.add("cpu_governor", "pass", "CPU frequency governor is performance")

    def _temperature(self, what: str, value: float | None, warn: float, fail: float) -> None:
        if value is None:
            return
        status = "fail" if value >= fail else "warn" if value >= warn else "pass"
        self.add("temperature", status, f"{what} at {value:g} °C (warn {warn:g}, fail {fail:g})", value,
                 fail if status == "fail" else warn)

    def temperatures(self) -> None:
        for nic in self.nics:
            module = nic.get("module") or {}
            if _available(module) and module.get("temperature_c") is not None:
                warn, fail = self.limits["module"]
                parsed = parse_module(module["raw"]) if module.get("raw") else {}
                if parsed.get("temperature_high_warning_c"):
                    warn = min(warn, parsed["temperature_high_warning_c"])
                self._temperature(f"{nic['netdev']} transceiver", module["temperature_c"], warn, fail)
        addresses = {n.get("pci_address"): n["netdev"] for n in self.nics if n.get("pci_address")}
        hwmon = (self.facts.get("temperatures") or {}).get("hwmon")
        for sensor in hwmon if isinstance(hwmon, list) else []:
            if sensor.get("pci_address") in addresses:
                crit = sensor.get("crit_c")
                warn, fail = (crit - 10.0, crit) if crit else self.limits["nic"]
                self._temperature(f"{addresses[sensor['pci_address']]} ASIC ({sensor.get('chip')} "
                                  f"{sensor.get('label') or sensor.get('sensor')})",
                                  sensor.get("temperature_c"), warn, fail)
        gpus = self.facts.get("gpus") or {}
        if gpus.get("vendor") == "nvidia" and isinstance(gpus.get("devices"), list):
            warn, fail = self.limits["gpu"]
            for dev in gpus["devices"]:
                try:
                    value = float(dev.get("temperature.gpu", ""))
                except ValueError:
                    continue
                self._temperature(f"GPU{dev.get('index')}", value, warn, fail)

    def gpu_nic_topology(self) -> None:
        """Each rail's GPU (its ``nearest_gpu``, else the nearest of ``gpus``) against ``nvidia-smi topo -m``.

        Fails a NIC whose GPU is across the host bridge or the CPU interconnect (PHB/NODE/SYS)
        while another GPU sits under the NIC's own PCIe switch (PIX/PXB); warns when none does.
        ``gpus`` as a count (8) means GPUs 0..7, a list narrows the choice.
        """
        topo = (self.facts.get("gpus") or {}).get("topology") or {}
        if not topo.get("text"):
            return
        parsed = parse_nvidia_topo(topo["text"])
        value = self.host.var("gpus")
        chosen = set(gpu_indices(value)) if isinstance(value, list | tuple) or (
            isinstance(value, str) and "," in value) else None
        rails = [r for r in self.host.nics() if r.rdma_dev]
        names = [str(r.rdma_dev) for r in rails] or list(parsed["nics"].values())
        for i, nic in enumerate(names):
            rail = rails[i] if rails else None
            col = nic_column(parsed, nic)
            near = gpu_relations(parsed, col) if col else {}
            if not near:
                continue
            best = min(near, key=lambda g: (_RANK.get(near[g], 9), g))
            pool = [g for g in near if chosen is None or g in chosen]
            if rail is not None and rail.nearest_gpu is not None and rail.nearest_gpu in near:
                pick = rail.nearest_gpu
            elif pool:
                pick = min(pool, key=lambda g: (_RANK.get(near[g], 9), g))
            else:
                continue
            label = f"{rail.name} " if rail is not None and len(rails) > 1 else ""
            text = f"{label}GPU{pick} <-> {nic}: {near[pick]}"
            if near[pick] in GOOD_GPU_NIC:
                self.add("gpu_nic_topology", "pass", text + " (same PCIe switch)")
            elif near[best] in GOOD_GPU_NIC:
                self.add("gpu_nic_topology", "fail", text + f" ({_MEANING.get(near[pick], 'not under one PCIe switch')})"
                         f", but GPU{best} is {near[best]} (same PCIe switch): use GPU{best} with this NIC "
                         "(nearest_gpu in the inventory, use_cuda: nearest)")
            else:
                self.add("gpu_nic_topology", "warn", text + f" ({_MEANING.get(near[pick], 'not under one PCIe switch')}"
                         "): GPUDirect RDMA traffic crosses the host bridge or CPU")


_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4}
_MEANING = {"PHB": "through the PCIe host bridge", "NODE": "across host bridges within a NUMA node",
            "SYS": "across the inter-socket link"}


def _carries(gid: object, address: str | None) -> bool:
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


def rail_mtus(checks: Mapping[str, _HostChecks], hosts: Sequence[Host]) -> list[Verdict]:
    """One verdict: every rail netdev of every host has the same MTU (a smaller one caps RoCE's path MTU)."""
    mtus: dict[str, Any] = {}
    for host in hosts:
        hc = checks.get(host.name)
        if hc is None:
            continue
        by_name = {n["netdev"]: n for n in hc.all_nics}
        for rail in host.nics():
            if rail.netdev in by_name:
                mtus[f"{host.name}/{rail.netdev}"] = by_name[rail.netdev].get("mtu")
    if len(mtus) < 2:
        return []
    values = sorted({m for m in mtus.values() if m is not None})
    if len(values) <= 1:
        return [Verdict("preflight.mtu_rails", "pass", f"{len(mtus)} rails, MTU {values[0] if values else '?'}")]
    common = max(values, key=lambda v: sum(1 for m in mtus.values() if m == v))
    odd = ", ".join(f"{k} {m}" for k, m in mtus.items() if m != common)
    return [Verdict("preflight.mtu_rails", "fail", f"rail MTUs differ: most are {common}, but {odd}",
                    value=float(min(values)), limit=float(common))]


def run_checks(facts_by_host: Mapping[str, Mapping[str, Any]], hosts: Sequence[Host],
               pairs: Sequence[tuple[str, str]] | None = None, *,
               limits: Mapping[str, tuple[float, float]] | None = None,
               min_versions: Mapping[str, str] | None = None,
               required_tools: Sequence[str] | None = None) -> list[Verdict]:
    """Verdicts (fail / warn / info / pass, evidence in the message) for every host and pair."""
    verdicts: list[Verdict] = []
    lim = dict(TEMPERATURE_LIMITS, **(limits or {}))
    checks: dict[str, _HostChecks] = {}
    for host in hosts:
        facts = facts_by_host.get(host.name)
        if not facts:
            verdicts.append(Verdict("preflight.probe", "fail", "no probe output for this host", host=host.name))
            continue
        hc = _HostChecks(host, facts, lim)
        hc.pcie_nics()
        hc.pcie_gpus()
        hc.numa()
        hc.links()
        hc.gid_index()
        hc.gpudirect()
        hc.tools(REQUIRED_TOOLS if required_tools is None else required_tools, min_versions or MIN_VERSIONS)
        hc.governor()
        hc.temperatures()
        hc.gpu_nic_topology()
        hc.out += acs_verdicts(host, facts)
        for error in facts.get("errors") or []:
            hc.add("probe", "warn", f"probe section failed: {error}")
        verdicts.extend(hc.out)
        checks[host.name] = hc
    verdicts += rail_mtus(checks, hosts)
    verdicts += qos_verdicts(facts_by_host, hosts)
    for a, b in pairs or []:
        if a in checks and b in checks and checks[a].nics and checks[b].nics:
            na, nb = checks[a].nics[0], checks[b].nics[0]
            text = f"{a} {na['netdev']} MTU {na.get('mtu')}, {b} {nb['netdev']} MTU {nb.get('mtu')}"
            status = "pass" if na.get("mtu") == nb.get("mtu") else "fail"
            verdicts.append(Verdict("preflight.mtu_pair", status, text + (" (mismatch: set one MTU on both "
                                    "ends)" if status == "fail" else ""), host=a))
    return verdicts
