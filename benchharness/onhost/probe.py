#!/usr/bin/env python3
"""benchharness host probe: prints one JSON document describing this host.

Copied to each host and run with the host's own interpreter::

    python3 probe.py [--root DIR] [--path-prefix DIR] [--no-commands] [--include-virtual] [--timeout S]
                     [--tools JSON]

Standard library only and no imports from benchharness; it runs on Python 3.6 and later (RHEL 8's
python3), hence ``typing`` generics below. Every missing source is recorded as
``{"available": false, "reason": "..."}``; every external command runs with a timeout; every section
is wrapped so that the probe never crashes. ``--root`` reads sysfs/procfs/etc under DIR (captured
trees in tests, lab hosts standing for GPU nodes); ``--path-prefix`` puts directories first on PATH
(stand-in ``nvidia-smi``/``amd-smi`` of such a lab host); ``--no-commands`` skips external commands;
``--tools`` names the programs whose versions to ask, ``{"iperf3": {"argv": ["iperf3", "--version"],
"pattern": "iperf\\s+(\\d+...)"}}``: the controller sends the tool adapters' facts
(``telemetry/requirements.py``), so no tool's version command is written here. Complex command outputs (``nvidia-smi
topo -m``, ``ethtool -m``, ``amd-smi``, ``lspci -vvv``, ``ethtool
-k/-l/-x/-g/-c``, AER counters, the NIC's ``/proc/interrupts`` lines) are kept raw for the parsers on the controller side.
"""
# Python 3.6 compatible on purpose: typing generics, no capture_output/text=, no zip(strict=).
# ruff: noqa: UP006, UP021, UP022, UP035, UP045, B905

import argparse
import glob
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional

PROBE_VERSION = 1
_PCI_ADDR = re.compile(r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_NVIDIA_FIELDS = [
    "index", "name", "pci.bus_id", "uuid", "driver_version", "temperature.gpu", "power.draw",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "clocks.sm", "clocks.mem", "clocks.max.sm", "memory.total",
]
#: the NIC configuration asked of ethtool per netdev, kept raw for the controller's parsers
_ETHTOOL_CONFIG = (("features", ["-k"]), ("channels", ["-l"]), ("rss", ["-x"]), ("rings", ["-g"]),
                   ("coalesce", ["-c"]))
#: the header fields RSS hashes per flow type (``ethtool -n DEV rx-flow-hash TYPE``), kept raw the same way
_RX_FLOW_HASH = ("tcp4", "udp4", "tcp6", "udp6")


def unavailable(reason: str) -> Dict[str, Any]:
    return {"available": False, "reason": reason}


def _speed_gts(text: Optional[str]) -> Optional[float]:
    m = re.search(r"(\d+(?:\.\d+)?)\s*GT/s", text or "")
    return float(m.group(1)) if m else None


def _int(text: Optional[str]) -> Optional[int]:
    try:
        return int(str(text).strip(), 0)
    except (TypeError, ValueError):
        return None


def _cpulist(text: Optional[str]) -> List[int]:
    cpus = []  # type: List[int]
    for part in (text or "").strip().split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        elif part.strip():
            cpus.append(int(part))
    return cpus


def _version(text: str, pattern: Optional[str]) -> Optional[str]:
    """The first group of ``pattern`` in ``text`` (the tool's own version pattern), else None."""
    try:
        m = re.search(pattern or r"(\d+\.\d+(?:\.\d+)*)", text)
    except re.error:
        return None
    return m.group(1) if m and m.groups() else None


def _pci_path(pci_dir: Optional[str]) -> List[str]:
    """Root complex (``pci0000:00``) and every PCI function from it down to the device."""
    if not pci_dir:
        return []
    parts = pci_dir.split(os.sep)
    out = [p for p in parts if p.startswith("pci") and re.match(r"^pci[0-9a-fA-F]{4}:[0-9a-fA-F]{2}$", p)][:1]
    return out + [p for p in parts if _PCI_ADDR.match(p)]


def _header_version(text: Optional[str]) -> Optional[str]:
    """``2.20.5`` from the ``#define NCCL_MAJOR 2`` ... lines of nccl.h / rccl.h."""
    found = {k: re.search(r"^#define\s+NCCL_" + k + r"\s+(\d+)", text or "", re.MULTILINE)
             for k in ("MAJOR", "MINOR", "PATCH")}
    if not all(found.values()):
        return None
    return ".".join(m.group(1) for m in found.values() if m)


class Probe:
    """Reads one host (or a captured tree under ``root``) into JSON-ready dicts."""

    def __init__(self, root: str = "/", commands: bool = True, include_virtual: bool = False,
                 timeout: float = 5.0, tools: Optional[Dict[str, Any]] = None) -> None:
        self.root = root
        self.tool_checks = tools or {}  # type: Dict[str, Any]
        self.real = os.path.abspath(root) == "/"
        self.commands = commands
        self.include_virtual = include_virtual
        self.timeout = timeout

    # -- reading -------------------------------------------------------------------------------
    def path(self, *parts: str) -> str:
        return os.path.join(self.root, *[p.lstrip("/") for p in parts])

    def read(self, *parts: str) -> Optional[str]:
        try:
            with open(self.path(*parts), errors="replace") as handle:
                return handle.read().strip()
        except (OSError, ValueError):
            return None

    def listdir(self, *parts: str) -> List[str]:
        try:
            return sorted(os.listdir(self.path(*parts)))
        except OSError:
            return []

    def run(self, argv: List[str], timeout: Optional[float] = None) -> Dict[str, Any]:
        """Run a command with a timeout; ``available`` false when skipped, missing or timed out."""
        if not self.commands:
            return unavailable("commands disabled (--no-commands)")
        exe = shutil.which(argv[0])
        if not exe:
            return unavailable(f"{argv[0]} not found in PATH")
        env = dict(os.environ, LC_ALL="C", LANG="C")
        try:
            proc = subprocess.run([exe, *argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, universal_newlines=True, errors="replace",
                                  timeout=timeout or self.timeout, env=env)
        except subprocess.TimeoutExpired:
            return unavailable("{} timed out after {}s".format(" ".join(argv), timeout or self.timeout))
        except OSError as exc:
            return unavailable(f"{argv[0]} could not run: {exc}")
        return {"available": True, "rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}

    # -- sections ------------------------------------------------------------------------------
    def host(self) -> Dict[str, Any]:
        osrel = self.read("etc/os-release") or ""
        m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', osrel, re.MULTILINE)
        kernel = self.read("proc/sys/kernel/osrelease") or (platform.release() if self.real else None)
        hostname = self.read("proc/sys/kernel/hostname") or (socket.gethostname() if self.real else None)
        uptime = self.read("proc/uptime")
        modules = self.read("proc/modules")
        pids = [p for p in self.listdir("proc") if p.isdigit()]
        return {"irqbalance": any(self.read("proc", p, "comm") == "irqbalance" for p in pids) if pids else None,
                "os": m.group(1) if m else None, "kernel": kernel, "hostname": hostname,
                "arch": platform.machine() if self.real else None,
                "uptime_s": float(uptime.split()[0]) if uptime else None,
                # loaded kernel modules (nvidia_peermem for GPUDirect RDMA ...); None: not readable
                "modules": [ln.split()[0] for ln in modules.splitlines() if ln.strip()] if modules else None}

    def cpu(self) -> Dict[str, Any]:
        info = self.read("proc/cpuinfo") or ""
        model = None
        for key in ("model name", "Model name", "Hardware", "cpu model", "cpu"):
            m = re.search(rf"^{re.escape(key)}\s*:\s*(.+)$", info, re.MULTILINE)
            if m:
                model = m.group(1).strip()
                break
        logical = len(re.findall(r"^processor\s*:", info, re.MULTILINE)) or (
            os.cpu_count() if self.real else None)
        cores = set()
        for block in info.split("\n\n"):
            phys = re.search(r"^physical id\s*:\s*(\d+)", block, re.MULTILINE)
            core = re.search(r"^core id\s*:\s*(\d+)", block, re.MULTILINE)
            if phys and core:
                cores.add((phys.group(1), core.group(1)))
        governors = {}  # type: Dict[str, int]
        for cpu in self.listdir("sys/devices/system/cpu"):
            if re.match(r"^cpu\d+$", cpu):
                gov = self.read("sys/devices/system/cpu", cpu, "cpufreq/scaling_governor")
                if gov:
                    governors[gov] = governors.get(gov, 0) + 1
        if governors:
            governor = next(iter(governors)) if len(governors) == 1 else "mixed"  # type: Any
        else:
            governor = unavailable("no cpufreq scaling_governor in sysfs (VM, or no cpufreq driver)")
        return {"model": model, "logical_cores": logical, "physical_cores": len(cores) or None,
                "sockets": len({c[0] for c in cores}) or None, "governor": governor,
                "governors": governors}

    def memory(self) -> Dict[str, Any]:
        text = self.read("proc/meminfo")
        if text is None:
            return unavailable("no /proc/meminfo")
        values = {k: int(v) * 1024 for k, v in re.findall(r"^(\w+):\s+(\d+) kB", text, re.MULTILINE)}
        pages = re.search(r"^HugePages_Total:\s+(\d+)", text, re.MULTILINE)
        return {"total_bytes": values.get("MemTotal"), "available_bytes": values.get("MemAvailable"),
                "hugepages_total": int(pages.group(1)) if pages else None,
                "hugepage_size_bytes": values.get("Hugepagesize")}

    def numa(self) -> Dict[str, Any]:
        base = "sys/devices/system/node"
        names = [n for n in self.listdir(base) if re.match(r"^node\d+$", n)]
        if not names:
            return unavailable(f"no {base} (kernel without NUMA)")
        nodes = []
        for name in sorted(names, key=lambda n: int(n[4:])):
            meminfo = self.read(base, name, "meminfo") or ""
            total = re.search(r"MemTotal:\s+(\d+) kB", meminfo)
            free = re.search(r"MemFree:\s+(\d+) kB", meminfo)
            cpus = _cpulist(self.read(base, name, "cpulist"))
            nodes.append({"node": int(name[4:]), "cpus": cpus, "cpulist": self.read(base, name, "cpulist"),
                          "has_cpu": bool(cpus),
                          "distances": [int(d) for d in (self.read(base, name, "distance") or "").split()],
                          "mem_total_bytes": int(total.group(1)) * 1024 if total else None,
                          "mem_free_bytes": int(free.group(1)) * 1024 if free else None})
        return {"nodes": nodes, "cpuless_nodes": [n["node"] for n in nodes if not n["has_cpu"]]}

    # -- PCI helpers ---------------------------------------------------------------------------
    def pci_dir(self, device_link: str) -> Optional[str]:
        """The PCI function directory at or above a sysfs device (virtio sits below its PCI device)."""
        real = os.path.realpath(self.path(device_link))
        if not os.path.exists(real):
            return None
        parts = real.split(os.sep)
        for i in range(len(parts) - 1, -1, -1):
            if _PCI_ADDR.match(parts[i]):
                return os.sep.join(parts[: i + 1])
        return None

    def pcie_link(self, pci_dir: Optional[str]) -> Dict[str, Any]:
        if not pci_dir:
            return unavailable("not a PCI device")
        def attr(name: str) -> Optional[str]:
            try:
                with open(os.path.join(pci_dir, name)) as handle:
                    return handle.read().strip()
            except OSError:
                return None
        cur_s, max_s = attr("current_link_speed"), attr("max_link_speed")
        cur_w, max_w = _int(attr("current_link_width")), _int(attr("max_link_width"))
        if cur_s is None and cur_w is None:
            return unavailable("no PCIe link attributes in sysfs (not PCIe, or a virtual function)")
        cur_g, max_g = _speed_gts(cur_s), _speed_gts(max_s)
        downgraded = bool((cur_g and max_g and cur_g < max_g) or (cur_w and max_w and cur_w < max_w))
        return {"current_link_speed": cur_s, "max_link_speed": max_s, "current_speed_gts": cur_g,
                "max_speed_gts": max_g, "current_width": cur_w, "max_width": max_w, "downgraded": downgraded}

    def lspci(self, address: Optional[str]) -> Dict[str, Any]:
        """``lspci -vvv -s BDF`` kept raw (``telemetry/parsers/lspci.py`` reads it on the controller)."""
        if not address:
            return unavailable("no PCI address")
        res = self.run(["lspci", "-vvv", "-s", address])
        if not res["available"]:
            return res
        text = res["stdout"]
        if res["rc"] != 0 or not text.strip():
            return unavailable("lspci -vvv -s {}: {}".format(address, (res["stderr"].strip() or "no output")[:200]))
        if "Capabilities: <access denied>" in text:
            return unavailable("lspci capabilities need root")
        return {"available": True, "raw": text}

    def aer(self, pci_dir: Optional[str]) -> Dict[str, Any]:
        """The device's AER counters (``aer_dev_correctable``/``_nonfatal``/``_fatal``), kept raw."""
        if not pci_dir:
            return unavailable("not a PCI device")
        raw = {}  # type: Dict[str, str]
        for kind in ("correctable", "nonfatal", "fatal"):
            text = self._read_abs(pci_dir, "aer_dev_" + kind)
            if text is not None:
                raw[kind] = text
        if not raw:
            return unavailable(f"no aer_dev_* counters in sysfs (kernel before 4.19, or AER off for {os.path.basename(pci_dir)})")
        return {"available": True, "raw": raw}

    def nic_irqs(self, name: str, pci_dir: Optional[str]) -> Dict[str, Any]:
        """The NIC's IRQs: their ``/proc/interrupts`` lines (header kept) and each one's affinity.

        The PCI function's ``msi_irqs`` name them; without it, lines naming the netdev or the PCI
        address (mlx5 names its vectors ``mlx5_comp0@pci:BDF``) are taken."""
        if not pci_dir:
            return unavailable("no PCI device (virtual interface)")
        text = self.read("proc/interrupts")
        if text is None:
            return unavailable("no /proc/interrupts")
        try:
            wanted = {int(n) for n in os.listdir(os.path.join(pci_dir, "msi_irqs")) if n.isdigit()}
        except OSError:
            wanted = set()
        address = os.path.basename(pci_dir)
        lines = text.splitlines()
        keep = []  # type: List[str]
        numbers = []  # type: List[int]
        for line in lines[1:]:
            m = re.match(r"^\s*(\d+):", line)
            if not m:
                continue
            irq = int(m.group(1))
            if irq in wanted or (not wanted and (address in line or re.search(
                    r"(?:^|[\s@-])" + re.escape(name) + r"(?:[-@:]|$)", line.split()[-1]))):
                keep.append(line)
                numbers.append(irq)
        if not keep:
            return unavailable(f"no IRQs of {name} ({address}) in /proc/interrupts")
        affinity = {}  # type: Dict[str, Any]
        for irq in numbers:
            affinity[str(irq)] = {key: self.read("proc/irq", str(irq), key)
                                  for key in ("smp_affinity_list", "effective_affinity_list")}
        return {"available": True, "interrupts": "\n".join(lines[:1] + keep), "affinity": affinity}

    def ethtool_config(self, name: str) -> Dict[str, Any]:
        """``ethtool -k/-l/-x/-g/-c`` and ``-n ... rx-flow-hash tcp4|udp4|tcp6|udp6`` of a netdev,
        each kept raw (or why the driver gave none)."""
        out = {}  # type: Dict[str, Any]
        asks = [(key, flags[:1], flags[1:]) for key, flags in _ETHTOOL_CONFIG]
        asks += [("rx_flow_hash_" + kind, ["-n"], ["rx-flow-hash", kind]) for kind in _RX_FLOW_HASH]
        for key, flag, rest in asks:
            argv = ["ethtool", *flag, name, *rest]
            res = self.run(argv)
            if res["available"] and res["rc"] == 0 and res["stdout"].strip():
                out[key] = {"available": True, "raw": res["stdout"]}
            elif res["available"]:
                out[key] = unavailable("{}: {}".format(" ".join(argv), (
                    res["stderr"].strip() or res["stdout"].strip() or "rc {}".format(res["rc"]))[:200]))
            else:
                out[key] = res
        return out

    # -- NICs ----------------------------------------------------------------------------------
    def nics(self) -> Dict[str, Any]:
        names = self.listdir("sys/class/net")
        if not names:
            return unavailable("no /sys/class/net")
        physical, virtual = [], []  # type: List[str], List[str]
        for name in names:
            real = os.path.realpath(self.path("sys/class/net", name))
            is_virtual = "/devices/virtual/" in real or not os.path.exists(self.path("sys/class/net", name,
                                                                                      "device"))
            (virtual if is_virtual else physical).append(name)
        chosen = list(physical)
        if self.include_virtual:
            chosen += [n for n in virtual if n != "lo"]
        elif not physical:
            chosen = [n for n in virtual if n != "lo"]  # e.g. a namespace with only veth
        chosen = sorted(chosen)
        with ThreadPoolExecutor(max_workers=max(1, min(8, len(chosen)))) as pool:
            records = list(pool.map(lambda n: self.nic(n, n in virtual), chosen))
        return {"devices": records, "skipped": [n for n in names if n not in chosen]}

    def nic(self, name: str, is_virtual: bool) -> Dict[str, Any]:
        base = "sys/class/net/" + name
        rec = {"netdev": name, "virtual": is_virtual}  # type: Dict[str, Any]
        speed = self.read(base, "speed")
        rec["speed_raw"] = speed
        mbps = _int(speed)  # -1 (or an unreadable file) while the link is down or unknown
        rec["speed_mbps"] = mbps if mbps is not None and mbps > 0 else None
        rec["mtu"] = _int(self.read(base, "mtu"))
        rec["operstate"] = self.read(base, "operstate")
        rec["carrier"] = _int(self.read(base, "carrier"))
        rec["mac"] = self.read(base, "address")
        rec["queues"] = {"rx": len([q for q in self.listdir(base, "queues") if q.startswith("rx-")]),
                         "tx": len([q for q in self.listdir(base, "queues") if q.startswith("tx-")])}
        driver_link = self.path(base, "device", "driver")
        rec["driver"] = os.path.basename(os.path.realpath(driver_link)) if os.path.exists(driver_link) else None
        pci_dir = None if is_virtual else self.pci_dir(base + "/device")
        rec["pci_address"] = os.path.basename(pci_dir) if pci_dir else None
        if pci_dir:
            numa = _int(self._read_abs(pci_dir, "numa_node"))
            rec["numa_node"] = numa if numa is not None and numa >= 0 else None
            rec["local_cpulist"] = self._read_abs(pci_dir, "local_cpulist")
            rec["pci_path"] = _pci_path(pci_dir)
            try:
                rec["rdma_devices"] = sorted(os.listdir(os.path.join(pci_dir, "infiniband")))
            except OSError:
                rec["rdma_devices"] = []
        else:
            rec.update({"numa_node": None, "local_cpulist": None, "rdma_devices": []})
        rec["pcie"] = self.pcie_link(pci_dir) if not is_virtual else unavailable("virtual interface")
        rec["lspci"] = self.lspci(rec["pci_address"])
        rec["aer"] = self.aer(pci_dir)
        rec["irqs"] = self.nic_irqs(name, pci_dir)
        rec["ethtool_config"] = self.ethtool_config(name)
        info = self.run(["ethtool", "-i", name])
        if info["available"] and info["rc"] == 0:
            kv = dict(re.findall(r"^([\w-]+):[ \t]*(.*)$", info["stdout"], re.MULTILINE))
            rec["firmware"] = kv.get("firmware-version") or None
            rec["driver_version"] = kv.get("version") or None
            rec["driver"] = rec["driver"] or kv.get("driver")
        else:
            rec["firmware"] = info if not info["available"] else unavailable(info["stderr"].strip()[:200])
        rec["module"] = self.module(name) if not is_virtual else unavailable("virtual interface")
        addr = self.run(["ip", "-o", "-4", "addr", "show", "dev", name]) if self.real else {}
        rec["ipv4"] = (re.findall(r"\binet (\d+\.\d+\.\d+\.\d+)/", addr["stdout"])
                       if addr.get("available") and addr.get("rc") == 0 else [])
        return rec

    def module(self, name: str) -> Dict[str, Any]:
        res = self.run(["ethtool", "-m", name])
        if not res["available"]:
            return res
        if res["rc"] != 0:
            return unavailable("ethtool -m: " + (res["stderr"].strip() or "rc {}".format(res["rc"]))[:200])
        temp = re.search(r"Module temperature\s*:\s*([-\d.]+) degrees C", res["stdout"])
        ident = re.search(r"Identifier\s*:\s*(.+)", res["stdout"])
        return {"available": True, "temperature_c": float(temp.group(1)) if temp else None,
                "identifier": ident.group(1).strip() if ident else None, "raw": res["stdout"]}

    def _read_abs(self, directory: str, name: str) -> Optional[str]:
        try:
            with open(os.path.join(directory, name)) as handle:
                return handle.read().strip()
        except OSError:
            return None

    # -- RDMA ----------------------------------------------------------------------------------
    def rdma(self) -> Dict[str, Any]:
        base = "sys/class/infiniband"
        names = self.listdir(base)
        if not names:
            return unavailable("no /sys/class/infiniband (no RDMA devices or no RDMA in the kernel)")
        devices = []
        for dev in names:
            d = {"device": dev, "ports": []}  # type: Dict[str, Any]
            for key in ("fw_ver", "node_guid", "sys_image_guid", "node_desc", "hca_type", "board_id"):
                d[key] = self.read(base, dev, key)
            pci_dir = self.pci_dir(base + "/" + dev + "/device")
            d["pci_address"] = os.path.basename(pci_dir) if pci_dir else None
            # the device's own PCIe link and NUMA node: a rail judged by its RDMA device alone
            d["pcie"] = self.pcie_link(pci_dir)
            numa = _int(self._read_abs(pci_dir, "numa_node")) if pci_dir else None
            d["numa_node"] = numa if numa is not None and numa >= 0 else None
            d["pci_path"] = _pci_path(pci_dir)
            driver = self.path(base, dev, "device", "driver")
            d["driver"] = os.path.basename(os.path.realpath(driver)) if os.path.exists(driver) else None
            for port in self.listdir(base, dev, "ports"):
                d["ports"].append(self.rdma_port(base + "/" + dev + "/ports/" + port, int(port)))
            devices.append(d)
        ber = [d for d in devices if str(d["driver"] or d["device"]).startswith("mlx5")]
        if ber and shutil.which("mlxlink"):
            # mlxlink takes seconds per device: all of a node's NICs at once
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=len(ber)) as pool:
                for d, res in zip(ber, pool.map(self.mlxlink, [b["device"] for b in ber])):
                    d["mlxlink"] = res
        out = {"source": "sysfs", "devices": devices}  # type: Dict[str, Any]
        if self.real:
            out["pyverbs"] = self.pyverbs()
        return out

    def mlxlink(self, device: str) -> Dict[str, Any]:
        """``mlxlink -d DEV -c``: the port's physical counters and BER, kept raw (judged on the controller)."""
        res = self.run(["mlxlink", "-d", device, "-c"], timeout=max(self.timeout, 30.0))
        if not res["available"]:
            return res
        if res["rc"] != 0 or "Physical Counters" not in res["stdout"]:
            return unavailable("mlxlink -d {} -c: {}".format(
                device, (res["stderr"].strip() or res["stdout"].strip() or "rc {}".format(res["rc"]))[-200:]))
        return {"available": True, "raw": res["stdout"]}

    def rdma_port(self, base: str, number: int) -> Dict[str, Any]:
        state, phys = self.read(base, "state") or "", self.read(base, "phys_state") or ""
        p = {"port": number, "state": state.split(":")[-1].strip() or None,
             "phys_state": phys.split(":")[-1].strip() or None, "link_layer": self.read(base, "link_layer"),
             "rate": self.read(base, "rate"), "lid": _int(self.read(base, "lid")),
             "sm_lid": _int(self.read(base, "sm_lid"))}  # type: Dict[str, Any]
        m = re.match(r"([\d.]+)\s*Gb/sec", p["rate"] or "")
        p["rate_gbps"] = float(m.group(1)) if m else None
        gids = []
        for idx in sorted(self.listdir(base, "gids"), key=lambda x: int(x) if x.isdigit() else 0):
            gid = self.read(base, "gids", idx)
            if not gid or set(gid.replace(":", "")) == {"0"}:
                continue
            gids.append({"index": int(idx), "gid": gid, "type": self.read(base, "gid_attrs/types", idx),
                         "netdev": self.read(base, "gid_attrs/ndevs", idx)})
        p["gids"] = gids
        p["netdevs"] = sorted({g["netdev"] for g in gids if g["netdev"]})
        return p

    def pyverbs(self) -> Dict[str, Any]:
        """What verbs itself reports; a failure here never costs the sysfs part of the section."""
        try:
            import pyverbs.device as verbs
        except Exception as exc:  # ImportError, or a broken install
            return unavailable(f"pyverbs does not import: {str(exc)[:120]}")
        out = {}  # type: Dict[str, Any]
        try:
            names = [d.name.decode() if isinstance(d.name, bytes) else str(d.name)
                     for d in verbs.get_device_list()]
        except Exception as exc:
            return unavailable(f"pyverbs get_device_list: {type(exc).__name__}: {str(exc)[:120]}")
        for name in names:
            try:
                with verbs.Context(name=name) as ctx:
                    attr = ctx.query_device()
                    ports = {}
                    for port in range(1, attr.phys_port_cnt + 1):
                        pa = ctx.query_port(port)
                        ports[str(port)] = {"state": int(pa.state), "active_mtu": 128 << int(pa.active_mtu),
                                            "max_mtu": 128 << int(pa.max_mtu), "link_layer": int(pa.link_layer)}
                    # rdma-core's pyverbs names it fw_version; some builds spell it fw_ver
                    fw = getattr(attr, "fw_version", None) or getattr(attr, "fw_ver", None)
                    if isinstance(fw, bytes):
                        fw = fw.decode(errors="replace")
                    out[name] = {"fw_ver": fw, "max_qp": attr.max_qp, "ports": ports}
            except Exception as exc:
                out[name] = unavailable(f"pyverbs {name}: {type(exc).__name__}: {str(exc)[:120]}")
        return {"available": True, "devices": out}

    # -- GPUs ----------------------------------------------------------------------------------
    def gpus(self) -> Dict[str, Any]:
        out = {"pci": self.pci_gpus()}  # type: Dict[str, Any]
        nv = self.run(["nvidia-smi", "--query-gpu=" + ",".join(_NVIDIA_FIELDS), "--format=csv,noheader,nounits"])
        if nv["available"] and nv["rc"] == 0:
            rows = [[c.strip() for c in line.split(",")] for line in nv["stdout"].splitlines() if line.strip()]
            out["vendor"] = "nvidia"
            out["fields"] = _NVIDIA_FIELDS
            out["devices"] = [dict(zip(_NVIDIA_FIELDS, row)) for row in rows]
            topo = self.run(["nvidia-smi", "topo", "-m"])
            out["topology"] = {"available": True, "text": topo["stdout"]} if topo["available"] else topo
            return out
        amd = self.run(["amd-smi", "static", "--json"], timeout=15)
        if amd["available"] and amd["rc"] == 0:
            out["vendor"] = "amd"
            out["static_json"] = amd["stdout"]
            metric = self.run(["amd-smi", "metric", "--json"], timeout=15)
            out["metric_json"] = metric.get("stdout") if metric["available"] else None
            out["amd_topology"] = self.amd_topology()
            return out
        rocm = self.run(["rocm-smi", "--showtemp"], timeout=15)
        if rocm["available"] and rocm["rc"] == 0:
            out["vendor"] = "amd"
            out["rocm_smi_temp"] = rocm["stdout"]
            out["amd_topology"] = self.amd_topology()
            return out
        out["devices"] = unavailable("nvidia-smi: {}; amd-smi: {}".format(
            nv.get("reason") or "rc {}".format(nv.get("rc")), amd.get("reason") or "rc {}".format(amd.get("rc"))))
        return out

    def amd_topology(self) -> Dict[str, Any]:
        """``amd-smi topology`` (GPU BDFs, link types), else ``rocm-smi --showtopo`` (NUMA nodes)."""
        for tool, argv in (("amd-smi", ["amd-smi", "topology"]), ("rocm-smi", ["rocm-smi", "--showtopo"])):
            res = self.run(argv, timeout=15)
            if res["available"] and res["rc"] == 0 and res["stdout"].strip():
                return {"available": True, "tool": tool, "text": res["stdout"]}
        return unavailable("neither amd-smi topology nor rocm-smi --showtopo answered")

    def pci_gpus(self) -> List[Dict[str, Any]]:
        """GPUs seen in sysfs (vendor NVIDIA/AMD; VGA, 3D or display class) with their PCIe link and path."""
        found = []
        base = "sys/bus/pci/devices"
        for addr in self.listdir(base):
            cls, vendor = self.read(base, addr, "class") or "", self.read(base, addr, "vendor") or ""
            # 0x0380: "display controller", the class of AMD Instinct (MI200/MI300) accelerators
            if vendor in ("0x10de", "0x1002") and cls[:6] in ("0x0300", "0x0302", "0x0380"):
                pci_dir = os.path.realpath(self.path(base, addr))
                numa = _int(self.read(base, addr, "numa_node"))
                found.append({"pci_address": addr, "vendor": vendor, "device": self.read(base, addr, "device"),
                              "numa_node": numa if numa is not None and numa >= 0 else None,
                              "pcie": self.pcie_link(pci_dir), "pci_path": _pci_path(pci_dir)})
        return found

    # -- fabric: PCIe ACS on the path to each RDMA NIC and GPU, RoCE QoS of each RDMA netdev ----
    def fabric(self) -> Dict[str, Any]:
        """Raw ACS control words of the bridges above each RDMA NIC and GPU (``setpci``, root
        only), and per RDMA netdev ``mlnx_qos -i``, ``dcb pfc show`` and the mlx5 ECN switches."""
        devices = []  # type: List[Any]
        rdma_netdevs = []  # type: List[str]
        for name in self.listdir("sys/class/net"):
            pci_dir = self.pci_dir("sys/class/net/" + name + "/device")
            if pci_dir and os.path.isdir(os.path.join(pci_dir, "infiniband")):
                devices.append(("nic", name, pci_dir))
                rdma_netdevs.append(name)
        for gpu in self.pci_gpus():
            devices.append(("gpu", gpu["pci_address"],
                            os.path.realpath(self.path("sys/bus/pci/devices", gpu["pci_address"]))))
        acs = {}  # type: Dict[str, Any]
        for kind, name, pci_dir in devices:
            bridges = [p for p in pci_dir.split(os.sep)[:-1] if _PCI_ADDR.match(p)]
            acs[name] = {"kind": kind, "pci_address": os.path.basename(pci_dir),
                         "bridges": [self.acs_word(b) for b in bridges]}
        qos = {}  # type: Dict[str, Any]
        for name in sorted(rdma_netdevs):
            entry = {}  # type: Dict[str, Any]
            for key, argv in (("mlnx_qos", ["mlnx_qos", "-i", name]),
                              ("dcb_pfc", ["dcb", "pfc", "show", "dev", name])):
                res = self.run(argv, timeout=10)
                entry[key] = res["stdout"] if res["available"] and res.get("rc") == 0 else None
            ecn = {}  # type: Dict[str, str]
            for point in ("roce_np", "roce_rp"):
                for prio in self.listdir("sys/class/net", name, "ecn", point, "enable"):
                    value = self.read("sys/class/net", name, "ecn", point, "enable", prio)
                    if value is not None:
                        ecn[f"{point}/enable/{prio}"] = value
            entry["ecn"] = ecn
            qos[name] = entry
        return {"acs": acs, "qos": qos}

    def acs_word(self, bdf: str) -> Dict[str, Any]:
        res = self.run(["setpci", "-s", bdf, "ECAP_ACS+0x6.w"], timeout=5)
        if not res["available"]:
            return {"bdf": bdf, "word": None, "reason": res.get("reason")}
        if res.get("rc") != 0:
            return {"bdf": bdf, "word": None, "reason": (res.get("stderr") or "").strip()[:200] or "no ACS"}
        return {"bdf": bdf, "word": res["stdout"].strip()}

    # -- temperatures and tools ----------------------------------------------------------------
    def temperatures(self) -> Dict[str, Any]:
        hwmon = []
        for mon in self.listdir("sys/class/hwmon"):
            base = "sys/class/hwmon/" + mon
            name = self.read(base, "name")
            for entry in self.listdir(base):
                m = re.match(r"^(temp\d+)_input$", entry)
                value = _int(self.read(base, entry)) if m else None
                if m and value is not None:
                    t = m.group(1)
                    crit, high = _int(self.read(base, t + "_crit")), _int(self.read(base, t + "_max"))
                    pci_dir = self.pci_dir(base + "/device") if os.path.exists(self.path(base, "device")) else None
                    hwmon.append({"chip": name, "sensor": t, "label": self.read(base, t + "_label"),
                                  "temperature_c": value / 1000.0,
                                  "crit_c": crit / 1000.0 if crit else None, "max_c": high / 1000.0 if high else None,
                                  "pci_address": os.path.basename(pci_dir) if pci_dir else None})
        zones = []
        for zone in self.listdir("sys/class/thermal"):
            if zone.startswith("thermal_zone"):
                value = _int(self.read("sys/class/thermal", zone, "temp"))
                if value is not None:
                    zones.append({"zone": zone, "type": self.read("sys/class/thermal", zone, "type"),
                                  "temperature_c": value / 1000.0})
        return {"hwmon": hwmon if hwmon else unavailable("no hwmon temperature sensors"),
                "thermal_zones": zones if zones else unavailable("no thermal zones")}

    def tools(self) -> Dict[str, Any]:
        checks = {name: c for name, c in self.tool_checks.items()
                  if isinstance(c, dict) and c.get("argv")}  # type: Dict[str, Dict[str, Any]]

        def version(check: Dict[str, Any]) -> Dict[str, Any]:
            argv = [str(a) for a in check["argv"]]
            res = self.run(argv)
            if not res["available"]:
                return res
            text = (res["stdout"] + "\n" + res["stderr"]).strip()
            # ib_write_bw --version prints "Version: 6.06" and exits 1: the text decides, not rc.
            return {"available": True, "version": _version(text, check.get("pattern")),
                    "path": shutil.which(argv[0]), "text": text.splitlines()[0][:200] if text else ""}

        results = {}  # type: Dict[str, Any]
        if checks:
            with ThreadPoolExecutor(max_workers=len(checks)) as pool:
                results = dict(zip(checks, pool.map(version, checks.values())))
        results["nccl-tests"] = self.nccl_tests()
        rccl = self.rccl_version()
        results["rccl"] = {"available": True, "version": rccl} if rccl else unavailable(
            "no rccl.h under /opt/rocm*/include")
        results["python"] = {"available": True, "version": platform.python_version(),
                             "executable": sys.executable}
        return results

    def nccl_tests(self) -> Dict[str, Any]:
        candidates = [shutil.which("all_reduce_perf")] if self.real else []
        dirs = [os.environ.get("NCCL_TESTS_DIR", ""), "/opt/nccl-tests/build", "/usr/local/nccl-tests/build",
                os.path.expanduser("~/nccl-tests/build")]
        candidates += [os.path.join(d, "all_reduce_perf") for d in dirs if d and self.real]
        found = next((c for c in candidates if c and os.access(c, os.X_OK)), None)
        # Named directories only: a recursive glob under /usr/lib follows symlink loops.
        lib_dirs = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                    "/usr/local/cuda/lib64", "/usr/local/lib", "/opt/nccl/lib"]
        libs = [p for d in lib_dirs for p in glob.glob(os.path.join(d, "libnccl.so.*"))] if self.real else []
        nccl = re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)", " ".join(libs))
        if not found:
            out = unavailable("all_reduce_perf not in PATH, $NCCL_TESTS_DIR or the usual build dirs")
        else:
            out = {"available": True, "path": found}
        out["nccl_version"] = nccl.group(1) if nccl else None
        return out

    def rccl_version(self) -> Optional[str]:
        """RCCL's version from its installed header (the library name carries ROCm's, not RCCL's)."""
        dirs = sorted(glob.glob(self.path("opt", "rocm*", "include")), reverse=True)
        for d in dirs:
            for name in ("rccl/rccl.h", "rccl.h"):
                version = _header_version(self._read_abs(d, name))
                if version:
                    return version
        return None

    # -- all -----------------------------------------------------------------------------------
    def collect(self) -> Dict[str, Any]:
        started = time.time()
        doc = {"probe_version": PROBE_VERSION, "collected_at": started, "root": self.root,
               "commands": self.commands, "errors": []}  # type: Dict[str, Any]
        sections = [("host", self.host), ("cpu", self.cpu), ("memory", self.memory), ("numa", self.numa),
                    ("nics", self.nics), ("rdma", self.rdma), ("gpus", self.gpus),
                    ("temperatures", self.temperatures), ("tools", self.tools),
                    ("fabric", self.fabric)]  # type: List[Any]
        for name, fn in sections:
            doc[name] = _guarded(name, fn, doc["errors"])
        doc["duration_s"] = round(time.time() - started, 3)
        return doc


def _guarded(name: str, fn: Callable[[], Any], errors: List[str]) -> Any:
    try:
        return fn()
    except Exception as exc:  # the probe must never crash: record and go on
        errors.append(f"{name}: {type(exc).__name__}: {exc}")
        return unavailable(f"probe error: {type(exc).__name__}: {exc}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Describe this host as one JSON document.")
    parser.add_argument("--root", default="/", help="read sysfs/procfs/etc under DIR (captured trees)")
    parser.add_argument("--no-commands", action="store_true", help="run no external commands")
    parser.add_argument("--include-virtual", action="store_true", help="list virtual interfaces too")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds per external command")
    parser.add_argument("--path-prefix", action="append", default=[],
                        help="directory searched first for commands (stand-in nvidia-smi, amd-smi ...)")
    parser.add_argument("--tools", default="{}",
                        help='JSON: programs whose versions to ask, {"NAME": {"argv": [...], "pattern": "RE"}}')
    args = parser.parse_args(argv)
    try:
        tools = json.loads(args.tools)
    except ValueError as exc:
        parser.error(f"--tools: not JSON: {exc}")
    if not isinstance(tools, dict):
        parser.error("--tools: must be a JSON object")
    if args.path_prefix:
        os.environ["PATH"] = os.pathsep.join([*args.path_prefix, os.environ.get("PATH", "")])
    probe = Probe(args.root, commands=not args.no_commands, include_virtual=args.include_virtual,
                  timeout=args.timeout, tools=tools)
    json.dump(probe.collect(), sys.stdout, indent=1, sort_keys=True, default=str)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
