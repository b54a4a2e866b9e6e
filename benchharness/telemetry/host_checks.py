"""The one judge of host facts: every check over a probe document, per rail, in one place.

``judge(host, facts)`` returns ``Finding``s: each names the host, the rail (``rail5``; None for the
host as a whole), the NIC (RDMA device, netdev, PCI address, serial where known), the check, its
status (fail / warn / info / pass), what was observed, what was expected, and a message with the
evidence. ``bench doctor``, ``bench run``'s preflight (``telemetry/preflight.py``) and the report
(``results/runview.py``) all use these results; none of them judges a host fact itself. What it
reads per rail and the ``Finding`` it returns live in ``rail_facts.py``; temperature limits and
sensor kinds in ``temperature_checks.py``.

Per rail: PCIe width/speed against the card's capability, the NIC's configuration
(``nic_checks.py``: PCIe slot bandwidth against the line rate, offloads, IRQ spread and NUMA
locality, RSS, MaxPayload/MaxReadReq, AER counters), the NIC's NUMA node against the rail's
``numa_node`` (and against its GPU's NUMA node), link state and speed, MTU, GID index, the
link's bit error rate (``mlxlink -c``, ``telemetry/link_ber.py``), transceiver
and ASIC temperatures, GPU <-> NIC PCIe relation. Per host: GPUs' PCIe links and temperatures
(NVIDIA and AMD), GPUDirect RDMA module, tools, CPU governor, probe errors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from benchharness.core.model import Host
from benchharness.core.pcie import gts_of
from benchharness.core.values import gpu_indices
from benchharness.telemetry import nic_checks, requirements
from benchharness.telemetry.link_ber import judge_ber
from benchharness.telemetry.nic_config import pcie_link
from benchharness.telemetry.parsers.ethtool_module import parse_module
from benchharness.telemetry.rail_facts import Finding, RailFacts, available, carries, rail_facts
from benchharness.telemetry.rails import RANK, gpu_table, nic_gpu_relations
from benchharness.telemetry.temperature_checks import TEMPERATURE_LIMITS, amd_temperatures
from benchharness.tools.base import version_tuple
from benchharness.tools.mpi_launch import gpu_count

#: Oldest versions the harness's command lines and parsers rely on (each tool's ``ToolFacts``).
MIN_VERSIONS: dict[str, str] = requirements.min_versions()
REQUIRED_TOOLS: tuple[str, ...] = requirements.required_tools()
#: GPU <-> NIC relations that keep GPUDirect RDMA traffic under one PCIe switch.
GOOD_GPU_NIC = ("PIX", "PXB")
_MEANING = {"PHB": "through the PCIe host bridge", "NODE": "across host bridges within a NUMA node",
            "SYS": "across the inter-socket link"}


class HostJudge:
    """The checks of one host; each method appends findings."""

    def __init__(self, host: Host, facts: Mapping[str, Any],
                 limits: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.host, self.facts = host, facts
        self.limits = dict(TEMPERATURE_LIMITS, **(limits or {}))
        self.out: list[Finding] = []
        self.rails = rail_facts(host, facts)
        self.multi = len(self.rails) > 1

    def add(self, rf: RailFacts | None, check: str, status: str, message: str, observed: Any = None,
            expected: Any = None, value: float | None = None, limit: float | None = None) -> None:
        rail = rf.rail.name if rf is not None and (self.multi or self.host.rails) else None
        nic = rf.label if rf is not None else None
        prefix = f"{rf.rail.name} {nic}: " if rf is not None and rail else ""
        self.out.append(Finding(self.host.name, rail, nic, check, status, observed, expected, prefix + message,
                                value, limit))

    # -- per rail ---------------------------------------------------------------------------------
    def presence(self, rf: RailFacts) -> bool:
        """False (and a finding) when the probe saw none of the rail's NIC."""
        r = rf.rail
        if r.netdev and rf.nic is None:
            if r.netdev == "lo":
                self.add(rf, "netdev", "info", "traffic runs over loopback (lo): no NIC is measured on this host")
                return False
            known = ", ".join(str(n.get("netdev")) for n in (self.facts.get("nics") or {}).get("devices") or [])
            self.add(rf, "netdev", "fail", f"netdev {r.netdev} not found; interfaces: {known or 'none'}",
                     observed=None, expected=r.netdev)
        if r.rdma_dev and rf.port is None:
            rdma = self.facts.get("rdma") or {}
            found = ", ".join(str(d.get("device")) for d in rdma.get("devices") or []) if available(rdma) else None
            self.add(rf, "link_state", "fail", f"RDMA device {r.rdma_dev} port {r.rdma_port} not found "
                     f"({('found: ' + found) if found else rdma.get('reason') or 'found: none'})",
                     observed=None, expected=f"{r.rdma_dev}/{r.rdma_port}")
        return rf.nic is not None or rf.port is not None

    def pcie(self, rf: RailFacts) -> None:
        nic = rf.nic or {}
        link = pcie_link(nic, rf.rdma)  # sysfs, else lspci -vvv (one reader), else the RDMA device's
        if link is None:
            if not nic.get("virtual"):
                reason = (nic.get("pcie") if nic else (rf.rdma or {}).get("pcie")) or {}
                self.add(rf, "pcie_link", "info", f"PCIe link not readable ({reason.get('reason')})")
            return
        self.pcie_verdict(rf, "NIC", link, speed_is_idle=False)

    def pcie_verdict(self, rf: RailFacts | None, what: str, link: Mapping[str, Any], speed_is_idle: bool) -> None:
        cs, cw = link.get("current_speed_gts"), link.get("current_width")
        ms, mw = link.get("max_speed_gts"), link.get("max_width")
        if rf is not None and not (self.multi or self.host.rails):
            what = f"{what} {rf.label}"  # a single-NIC host's messages carry no rail prefix: name the NIC
        text = f"{what}: PCIe link {cs:g} GT/s x{cw}, capable of {ms:g} GT/s x{mw}" if all(
            v is not None for v in (cs, cw, ms, mw)) else f"{what}: PCIe link {dict(link)}"
        value = cs * cw if cs and cw else None
        limit = ms * mw if ms and mw else None
        observed, expected = f"{cs:g} GT/s x{cw}" if cs and cw else None, f"{ms:g} GT/s x{mw}" if ms and mw else None
        width_low = cw is not None and mw is not None and cw < mw
        speed_low = cs is not None and ms is not None and cs < ms
        if width_low or (speed_low and not speed_is_idle):
            self.add(rf, "pcie_link", "fail", text + " (trained below capability: reseat the card, check the "
                     "slot, riser and BIOS bifurcation/speed settings)", observed, expected, value, limit)
        elif speed_low:
            self.add(rf, "pcie_link", "info", text + " (GPUs lower their link speed when idle; check under "
                     "load)", observed, expected, value, limit)
        else:
            self.add(rf, "pcie_link", "pass", text, observed, expected, value, limit)

    def numa(self, rf: RailFacts, gpu_numa: Mapping[int, int | None]) -> None:
        """The NIC's NUMA node against the rail's ``numa_node`` and against its GPU's node."""
        node = (rf.nic or {}).get("numa_node")
        if node is None:
            node = (rf.rdma or {}).get("numa_node")
        nodes = (self.facts.get("numa") or {}).get("nodes") or []
        if (rf.nic or {}).get("virtual"):
            return
        if node is None:
            if len(nodes) > 1:
                self.add(rf, "numa_affinity", "warn", f"{self._nd(rf)} reports no NUMA node (numa_node -1) on a "
                         f"{len(nodes)}-node host: check the BIOS (SRAT/ACPI)", expected=rf.rail.numa_node)
            return
        want = rf.rail.numa_node
        gpu = self._rail_gpu(rf)
        gnode = gpu_numa.get(gpu) if gpu is not None else None
        cpus = (rf.nic or {}).get("local_cpulist")
        if want is not None and int(want) != node:
            self.add(rf, "numa_affinity", "warn", f"benchmark pinned to NUMA node {want} but {self._nd(rf)} is on "
                     f"NUMA node {node} (local CPUs {cpus}): traffic crosses the socket interconnect; "
                     f"set numa_node={node}", node, want, float(node), float(want))
        elif gnode is not None and gnode != node:
            self.add(rf, "numa_affinity", "warn", f"{self._nd(rf)} is on NUMA node {node} but its GPU{gpu} is on "
                     f"NUMA node {gnode}: GPUDirect traffic crosses the socket interconnect; use a GPU on node "
                     f"{node} with this NIC or move the card", node, gnode, float(node), float(gnode))
        elif want is None and gnode is None:
            self.add(rf, "numa_affinity", "info", f"{self._nd(rf)} is on NUMA node {node} (local CPUs {cpus}); "
                     f"set numa_node={node} in the inventory to pin benchmarks there", node, None, float(node))
        else:
            self.add(rf, "numa_affinity", "pass", f"{self._nd(rf)} is on NUMA node {node}, as expected",
                     node, want if want is not None else gnode, float(node))

    def _nd(self, rf: RailFacts) -> str:
        return str(rf.rail.netdev or rf.rail.rdma_dev or (rf.nic or {}).get("netdev"))

    def _rail_gpu(self, rf: RailFacts) -> int | None:
        if rf.rail.nearest_gpu is not None:
            return rf.rail.nearest_gpu
        if not rf.rail.rdma_dev:
            return None
        near = nic_gpu_relations(self.facts, rf.rail.rdma_dev)
        if not near:
            return None
        best = min(near, key=lambda g: (RANK.get(near[g], 9), g))
        return best if near[best] in GOOD_GPU_NIC else None

    def link(self, rf: RailFacts) -> None:
        nic, r = rf.nic, rf.rail
        want = r.line_rate_gbps or _float(self.host.var("nic_line_rate_gbps"))
        speed_gbps: float | None = None
        if nic is not None:
            state, speed = nic.get("operstate"), nic.get("speed_mbps")
            if state != "up":
                self.add(rf, "link_state", "fail", f"{nic['netdev']} link is {state} (carrier {nic.get('carrier')})",
                         state, "up")
            else:
                speed_gbps = speed / 1000 if speed else None
                shown = f"{speed_gbps:g} Gb/s" if speed_gbps else f"speed unknown ({nic.get('speed_raw')})"
                self.add(rf, "link_state", "pass", f"{nic['netdev']} is up at {shown}, MTU {nic.get('mtu')}",
                         "up", "up", speed_gbps)
        port = rf.port
        if port is not None:
            where = f"{r.rdma_dev}/{r.rdma_port}"
            if port.get("state") != "ACTIVE" or port.get("phys_state") != "LinkUp":
                self.add(rf, "link_state", "fail", f"{where} is {port.get('state')} / {port.get('phys_state')} "
                         f"({port.get('link_layer')})", f"{port.get('state')}/{port.get('phys_state')}",
                         "ACTIVE/LinkUp")
                return
            self.add(rf, "link_state", "pass", f"{where} ACTIVE/LinkUp at {port.get('rate')}", "ACTIVE/LinkUp",
                     "ACTIVE/LinkUp", port.get("rate_gbps"))
            speed_gbps = speed_gbps or port.get("rate_gbps")
        if want and speed_gbps and speed_gbps < float(want):
            self.add(rf, "link_speed", "warn", f"link at {speed_gbps:g} Gbit/s, the inventory says {float(want):g}",
                     speed_gbps, float(want), speed_gbps, float(want))

    def gid_index(self, rf: RailFacts) -> None:
        """The rail's ``gid_index`` against its port's link layer and GID table.

        RoCE: a RoCE v2 GID carrying the rail's address (the right one suggested); perftest, NCCL and
        UCX address the peer by that GID, and a RoCE v1 or link-local entry, or one of another
        address, connects to the wrong place or not at all; none set, perftest takes GID 0 (the
        link-local entry). InfiniBand: no GID index at all (the tools leave it out there). An
        inventory ``link_layer`` that is not the port's own is named too.
        """
        rail, port = rf.rail, rf.port
        if not rail.rdma_dev or port is None:
            return  # missing: link_state says so
        layer = port.get("link_layer")
        where = f"{rail.rdma_dev}/{rail.rdma_port} ({rail.name})"
        if rail.link_layer and layer in ("InfiniBand", "Ethernet") and rail.link != layer.lower():
            self.add(rf, "link_layer", "fail", f"{where}: link_layer={rail.link_layer} in the inventory, but the "
                     f"port is {layer}: the tools would take the wrong GID and traffic-class flags",
                     layer, rail.link_layer)
        if layer == "InfiniBand":
            if rail.gid_index is not None:
                self.add(rf, "gid_index", "warn", f"{where} gid_index={rail.gid_index} is set on an InfiniBand "
                         "port: it is left out there (perftest -x, NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX are for "
                         "RoCE); remove it from the rail", rail.gid_index, None, rail.gid_index)
            return
        if layer != "Ethernet":
            return
        gids = port.get("gids") or []
        # gid_ip: the address the GID carries when it is not the rail's own (an RDMA device
        # shared into a network namespace or container, whose GIDs hold the root's addresses)
        address = str(self.host.var("gid_ip")) if self.host.var("gid_ip") and \
            rail.rdma_dev == self.host.var("rdma_dev") else rail.data_ip
        good = [g for g in gids if g.get("type") == "RoCE v2" and carries(g.get("gid"), address)]
        hint = (f"; use gid_index={good[0]['index']}" if good else
                f"; no RoCE v2 GID carries {address or 'an IPv4 address'} (is the address on "
                f"{', '.join(port.get('netdevs') or []) or 'the netdev'}?)")
        suggested = float(good[0]["index"]) if good else None
        if rail.gid_index is None:
            self.add(rf, "gid_index", "fail", f"{where}: a RoCE port without gid_index: perftest would use GID 0 "
                     f"(the link-local entry){hint}", None, address, None, suggested)
            return
        entry = next((g for g in gids if g.get("index") == rail.gid_index), None)
        where = f"{where} gid_index={rail.gid_index}"
        if entry is not None and entry in good:
            self.add(rf, "gid_index", "pass", f"{where}: RoCE v2, {entry['gid']}", entry["gid"], address,
                     rail.gid_index)
            return
        found = "no such entry" if entry is None else f"{entry.get('type')} {entry.get('gid')}"
        self.add(rf, "gid_index", "fail", f"{where} is {found}{hint}", found, address, rail.gid_index, suggested)

    def link_ber(self, rf: RailFacts) -> None:
        """The port's bit error rate from ``mlxlink -c`` where the probe could run it (mlx5 NICs)."""
        ml = (rf.rdma or {}).get("mlxlink")
        if not ml:
            return  # not an mlx5 NIC, or no mlxlink on the host: nothing to say per rail
        if not available(ml):
            self.add(rf, "link_ber", "info", f"BER not read: {ml.get('reason')}")
            return
        got = judge_ber(str(ml.get("raw") or ""))
        self.add(rf, "link_ber", got.status, f"mlxlink: {got.message}", got.value, got.limit, got.value, got.limit)

    def nic_temperatures(self, rf: RailFacts) -> None:
        nic = rf.nic or {}
        module = nic.get("module") or {}
        if available(module) and module.get("temperature_c") is not None:
            warn, fail = self.limits["module"]
            parsed = parse_module(module["raw"]) if module.get("raw") else {}
            if parsed.get("temperature_high_warning_c"):
                warn = min(warn, parsed["temperature_high_warning_c"])
            self.temperature(rf, f"{nic['netdev']} transceiver", module["temperature_c"], warn, fail)
        address = nic.get("pci_address") or (rf.rdma or {}).get("pci_address")
        hwmon = (self.facts.get("temperatures") or {}).get("hwmon")
        for sensor in hwmon if isinstance(hwmon, list) and address else []:
            if sensor.get("pci_address") == address:
                crit = sensor.get("crit_c")
                warn, fail = (crit - 10.0, crit) if crit else self.limits["nic"]
                self.temperature(rf, f"{self._nd(rf)} ASIC ({sensor.get('chip')} "
                                 f"{sensor.get('label') or sensor.get('sensor')})",
                                 sensor.get("temperature_c"), warn, fail)

    def temperature(self, rf: RailFacts | None, what: str, value: float | None, warn: float, fail: float) -> None:
        if value is None:
            return
        status = "fail" if value >= fail else "warn" if value >= warn else "pass"
        self.add(rf, "temperature", status, f"{what} at {value:g} °C (warn {warn:g}, fail {fail:g})", value,
                 warn, value, fail if status == "fail" else warn)

    def gpu_nic_topology(self, rf: RailFacts, chosen: set[int] | None) -> None:
        """The rail's GPU (its ``nearest_gpu``, else the nearest of ``gpus``) against the PCIe relation
        (``nvidia-smi topo -m``, or sysfs PCI paths for AMD): fail a NIC whose GPU is across the host
        bridge or CPU interconnect while another GPU shares its switch; warn when none does."""
        if not rf.rail.rdma_dev:
            return
        near = nic_gpu_relations(self.facts, rf.rail.rdma_dev)
        if not near:
            return
        best = min(near, key=lambda g: (RANK.get(near[g], 9), g))
        pool = [g for g in near if chosen is None or g in chosen]
        if rf.rail.nearest_gpu is not None and rf.rail.nearest_gpu in near:
            pick = rf.rail.nearest_gpu
        elif pool:
            pick = min(pool, key=lambda g: (RANK.get(near[g], 9), g))
        else:
            return
        text = f"GPU{pick} <-> {rf.rail.rdma_dev}: {near[pick]}"
        if near[pick] in GOOD_GPU_NIC:
            self.add(rf, "gpu_nic_topology", "pass", text + " (same PCIe switch)", near[pick], "PIX/PXB")
        elif near[best] in GOOD_GPU_NIC:
            self.add(rf, "gpu_nic_topology", "fail", text + f" ({_MEANING.get(near[pick], 'not under one PCIe switch')}"
                     f"), but GPU{best} is {near[best]} (same PCIe switch): use GPU{best} with this NIC "
                     "(nearest_gpu in the inventory, use_cuda/use_rocm: nearest)", near[pick], near[best])
        else:
            self.add(rf, "gpu_nic_topology", "warn", text + f" ({_MEANING.get(near[pick], 'not under one PCIe switch')}"
                     "): GPUDirect RDMA traffic crosses the host bridge or CPU", near[pick], "PIX/PXB")

    # -- per host ---------------------------------------------------------------------------------
    def gpus(self) -> None:
        """GPUs' PCIe links (idle GPUs lower their speed: information only) and temperatures."""
        gpus = self.facts.get("gpus") or {}
        devices = gpus.get("devices")
        warn, fail = self.limits["gpu"]
        if gpus.get("vendor") == "nvidia" and isinstance(devices, list):
            for dev in devices:
                cur_gen, max_gen = _float(dev.get("pcie.link.gen.current")), _float(dev.get("pcie.link.gen.max"))
                cw, mw = _float(dev.get("pcie.link.width.current")), _float(dev.get("pcie.link.width.max"))
                link = {"current_speed_gts": gts_of(cur_gen) if cur_gen else None,
                        "max_speed_gts": gts_of(max_gen) if max_gen else None,
                        "current_width": int(cw) if cw else None, "max_width": int(mw) if mw else None}
                self.pcie_verdict(None, f"GPU{dev.get('index')} {dev.get('name')} ({dev.get('pci.bus_id')})", link,
                                  speed_is_idle=True)
                self.temperature(None, f"GPU{dev.get('index')}", _float(dev.get("temperature.gpu")), warn, fail)
            return
        for dev in gpus.get("pci") or []:
            if available(dev.get("pcie")):
                self.pcie_verdict(None, f"GPU {dev['pci_address']}", dev["pcie"], speed_is_idle=True)
        if gpus.get("vendor") == "amd":
            for gpu, what, value in amd_temperatures(gpus):
                self.temperature(None, f"GPU{gpu if gpu is not None else '?'} {what}", value, warn, fail)

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
        if str(self.host.var("gpu_vendor", "nvidia")) == "amd" or (self.facts.get("gpus") or {}).get("vendor") == "amd":
            return  # ROCm peer memory lives in amdgpu itself
        loaded = [m for m in ("nvidia_peermem", "nv_peer_mem") if m in modules]
        if loaded:
            self.add(None, "gpudirect", "pass", f"{loaded[0]} is loaded (GPUDirect RDMA)", loaded[0], "nvidia_peermem")
            return
        kernel = str((self.facts.get("host") or {}).get("kernel") or "")
        dmabuf = version_tuple(kernel) >= (5, 12)
        self.add(None, "gpudirect", "warn", "nvidia_peermem is not loaded: GPUDirect RDMA needs it"
                 + (f", or DMA-BUF (kernel {kernel} has it; needs NVIDIA's open kernel modules and NCCL >= 2.19)"
                    if dmabuf else f" (kernel {kernel or '?'} predates DMA-BUF, 5.12)")
                 + "; modprobe nvidia_peermem", None, "nvidia_peermem")

    def tools(self, required: Sequence[str], minimum: Mapping[str, str]) -> None:
        tools = self.facts.get("tools") or {}
        for name in required:
            info = tools.get(name) or {"available": False, "reason": "not probed"}
            if not info.get("available"):
                probed = self.facts.get("commands", True)
                hint = requirements.install_hint(name)
                self.add(None, "tool_version", "fail" if probed else "info",
                         f"{name} is missing: {info.get('reason')}" + (f" ({hint})" if hint else "")
                         if probed else f"{name} not probed (probe ran with --no-commands)", None, minimum.get(name))
                continue
            version, need = info.get("version"), minimum.get(name)
            if need and version and version_tuple(version) < version_tuple(need):
                self.add(None, "tool_version", "fail", f"{name} {version} is older than {need} ({info.get('path')})",
                         version, need)
            elif need and not version:
                self.add(None, "tool_version", "info", f"{name} version unknown ({info.get('text')!r})", None, need)
            else:
                self.add(None, "tool_version", "pass", f"{name} {version} ({info.get('path')})", version, need)

    def governor(self) -> None:
        gov = (self.facts.get("cpu") or {}).get("governor")
        if isinstance(gov, Mapping):
            self.add(None, "cpu_governor", "info", f"CPU governor unknown: {gov.get('reason')}")
        elif gov != "performance":
            counts = (self.facts.get("cpu") or {}).get("governors")
            self.add(None, "cpu_governor", "warn", f"CPU frequency governor is {gov} {counts or ''}: latency and "
                     "small-message rates vary; set it to performance (cpupower frequency-set -g performance)",
                     gov, "performance")
        else:
            self.add(None, "cpu_governor", "pass", "CPU frequency governor is performance", gov, "performance")

    def run(self, required_tools: Sequence[str], min_versions: Mapping[str, str]) -> list[Finding]:
        """Every check, rails first."""
        value = self.host.var("gpus")
        chosen = set(gpu_indices(value)) if isinstance(value, list | tuple) or (
            isinstance(value, str) and "," in value) else None
        gpu_numa = {int(g["index"]): g["numa"] for g in gpu_table(self.facts)}
        for rf in self.rails:
            self.gpu_nic_topology(rf, chosen)  # from the topology alone, even for a NIC the probe missed
            if not self.presence(rf):
                continue
            self.pcie(rf)
            self.numa(rf, gpu_numa)
            self.link(rf)
            nic_checks.judge_rail(self.add, rf, self.host.var("nic_line_rate_gbps"),
                                  (self.facts.get("host") or {}).get("irqbalance"))
            self.gid_index(rf)
            self.link_ber(rf)
            self.nic_temperatures(rf)
        self.gpus()
        self.gpudirect()
        self.tools(required_tools, min_versions)
        self.governor()
        for error in self.facts.get("errors") or []:
            self.add(None, "probe", "warn", f"probe section failed: {error}")
        return self.out


def judge(host: Host, facts: Mapping[str, Any], *, limits: Mapping[str, tuple[float, float]] | None = None,
          required_tools: Sequence[str] | None = None,
          min_versions: Mapping[str, str] | None = None) -> list[Finding]:
    """Every finding about one host's probe document (``probe.py`` output)."""
    return HostJudge(host, facts, limits).run(REQUIRED_TOOLS if required_tools is None else required_tools,
                                              min_versions or MIN_VERSIONS)


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None and str(value).strip() != "" else None
    except ValueError:
        return None

