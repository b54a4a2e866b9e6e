"""Synthetic 8-rail GPU nodes for known-truth tests: a sysfs/procfs tree and stand-in GPU tools.

``build(kind, root, degrade)`` writes, under ``root/tree``, what the probe reads of a DGX-shaped
(8 GPUs, 8 ConnectX InfiniBand NICs, the PCIe layout of the real ``nvidia-smi topo -m`` of a GKE A4
B200 node in tests/fixtures/real/nvidia-smi-topo) or an MI300X-shaped node (8 MI300X at the BDFs of
the real ``amd-smi topology`` in tests/fixtures/real/amd-smi-topology, 8 Broadcom bnxt_re RoCE
NICs), each on 2 NUMA nodes with 4 NICs per node; and under ``root/bin`` the stand-in
``nvidia-smi`` / ``amd-smi`` / ``rocm-smi`` that print the real published topology outputs (the
``--query-gpu`` CSV and ``amd-smi metric`` JSON they print are written here, in the tools' formats).
``degrade`` maps rail index -> ``"x8"`` (PCIe trained at x8 of x16), ``"down"`` (link down),
``"numa"`` (the NIC reports the other NUMA node), ``"gen4"`` (a Gen4 x16 slot: 16 GT/s at full
width, which cannot carry 400 Gbit/s), ``"irq_far"`` (every queue IRQ on one CPU of the other NUMA
node), ``"tso"`` / ``"gro"`` (TCP segmentation / generic receive offload off), ``"udp4_ip"`` (RSS
hashes UDP over IPv4 on the IP addresses only), ``"aer"`` (correctable AER errors) or, on the DGX,
``"ber"`` (its ``mlxlink -c`` reports errors past FEC). ``inventory_vars`` gives the matching host line.

Each NIC has 4 queue IRQs and a control IRQ (``msi_irqs``, ``/proc/interrupts`` lines in the
driver's naming, ``/proc/irq/N/*affinity_list``; healthy: each queue on its own CPU of the NIC's
node), AER counters, and a stand-in ``ethtool`` (``-k/-l/-g/-c``, ``-n DEV rx-flow-hash tcp4|udp4``
with the ports hashed; ``-x`` and tcp6/udp6 unsupported) and ``lspci``
printing real published outputs from tests/fixtures/real (SOURCES there), with the netdev's name
put in and, for a degraded rail, the one value changed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REAL = Path(__file__).parent / "fixtures" / "real"
NV_TOPO = REAL / "nvidia-smi-topo" / "8gpu_8nic_b200_pix_pairs_nic_legend.txt"
AMD_TOPO = REAL / "amd-smi-topology" / "8gpu_mi300x_bdf_tables_prompt.txt"
ROCM_NUMA = REAL / "rocm-smi-topo" / "showtoponuma_8gpu_two_nodes_tabs_prompt.txt"
MLXLINK_400G = Path(__file__).parent / "fixtures" / "health" / "real" / "mlxlink_400g_counters_ansi.txt"
AMD_BDFS = ["0c", "22", "38", "5c", "9f", "af", "bf", "df"]
ETHTOOL_K = REAL / "ethtool-k" / "firewalla_grep_v_fixed_sudo_prompt.txt"
ETHTOOL_L = REAL / "ethtool-l" / "sfc_onload_combined_4_of_31_hash_prompt.txt"
ETHTOOL_G = REAL / "ethtool-g" / "ifupdown2_4096_tabs.txt"
ETHTOOL_C = REAL / "ethtool-c" / "ena_5.10_adaptive_off_cut.txt"
RXHASH = REAL / "ethtool-rx-flow-hash"
RXHASH_TCP4 = RXHASH / "gbtcp_tcp4_l4_ports_show_ntuple.txt"
RXHASH_UDP4, RXHASH_UDP4_IP = RXHASH / "intel_echobench_udp4_sdfn_tabs.txt", RXHASH / "intel_echobench_udp4_ip_only_tabs.txt"
LSPCI_DEVCTL = REAL / "lspci" / "vvv_devctl_fragment_gen5_x8_downgraded_mps256.txt"
AER = REAL / "aer"
QUEUES = 4


def _w(root: Path, path: str, text: str) -> None:
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text + "\n")


def _ln(root: Path, path: str, target: str) -> None:
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(root / target, full.parent), full)


def _pci(root: Path, path: str, vendor: str, cls: str, numa: int, width: int = 16, gts: str = "32.0") -> None:
    for name, value in (("vendor", vendor), ("class", cls), ("numa_node", str(numa)),
                        ("current_link_speed", f"{gts} GT/s PCIe"), ("max_link_speed", f"{gts} GT/s PCIe"),
                        ("current_link_width", str(width)), ("max_link_width", "16"),
                        ("local_cpulist", "0-15" if numa == 0 else "16-31")):
        _w(root, f"{path}/{name}", value)
    _ln(root, f"sys/bus/pci/devices/{path.rsplit('/', 1)[-1]}", path)


def _common(root: Path, hostname: str, modules: str) -> None:
    _w(root, "proc/sys/kernel/hostname", hostname)
    _w(root, "proc/sys/kernel/osrelease", "6.8.0-synthetic")
    _w(root, "etc/os-release", 'PRETTY_NAME="Ubuntu 22.04.4 LTS"')
    _w(root, "proc/modules", modules)
    _w(root, "proc/cpuinfo", "\n\n".join(f"processor\t: {i}\nmodel name\t: AMD EPYC 9654\nphysical id\t: "
                                          f"{i // 16}\ncore id\t\t: {i % 16}" for i in range(32)))
    _w(root, "proc/meminfo", "MemTotal:       2113000000 kB\nMemAvailable:   2000000000 kB")
    for i in range(32):
        _w(root, f"sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor", "performance")
    for n in (0, 1):
        _w(root, f"sys/devices/system/node/node{n}/cpulist", "0-15" if n == 0 else "16-31")
        _w(root, f"sys/devices/system/node/node{n}/distance", "10 32" if n == 0 else "32 10")
        _w(root, f"sys/devices/system/node/node{n}/meminfo", f"Node {n} MemTotal:       1056500000 kB")


def _without_prompt(path: Path) -> str:
    """A published output without the shell prompt line it was pasted after."""
    lines = path.read_text().splitlines()
    return "\n".join(lines[1:] if "$ " in lines[0] or "# " in lines[0] else lines) + "\n"


def _nic_config(root: Path, tools: Path, pci: str, numa: int, rail: int, netdev: str, ib: bool,
                degrade: str | None) -> list[str]:
    """IRQs, AER counters and ethtool/lspci outputs of one NIC; returns its /proc/interrupts lines."""
    bdf = pci.rsplit("/", 1)[-1]
    out = tools.parent / "outputs" / netdev
    out.mkdir(parents=True)
    features = _without_prompt(ETHTOOL_K)
    if degrade in ("tso", "gro"):
        key = "tcp-segmentation-offload" if degrade == "tso" else "generic-receive-offload"
        features = features.replace(f"{key}: on", f"{key}: off")
    for name, text in (("k", features), ("l", _without_prompt(ETHTOOL_L)), ("g", ETHTOOL_G.read_text()),
                       ("c", ETHTOOL_C.read_text())):
        (out / name).write_text(re.sub(r"for (eth\d|enp2s0f0|ens7):", f"for {netdev}:", text))
    udp4 = RXHASH_UDP4_IP if degrade == "udp4_ip" else RXHASH_UDP4
    for kind, path in (("tcp4", RXHASH_TCP4), ("udp4", udp4)):  # the output without its command line
        (out / f"n-{kind}").write_text("\n".join(ln for ln in path.read_text().splitlines()
                                                 if "rx-flow-hash" not in ln and ln.strip()) + "\n")
    (tools.parent / "lspci").mkdir(exist_ok=True)
    (tools.parent / "lspci" / bdf).write_text(LSPCI_DEVCTL.read_text())
    cor = (AER / "kernel_doc_correctable_receiver_error_2.txt").read_text().splitlines()[1:]
    if degrade != "aer":
        cor = [re.sub(r" 2$", " 0", ln) for ln in cor]
    _w(root, f"{pci}/aer_dev_correctable", "\n".join(cor))
    for kind in ("fatal", "nonfatal"):
        _w(root, f"{pci}/aer_dev_{kind}", "\n".join((AER / f"kernel_doc_{kind}_all_zero.txt").read_text()
                                                   .splitlines()[1:]))
    lines = []
    base = 100 + rail * 8
    driver = "mlx5" if ib else "bnxt"
    for q in range(-1, QUEUES):
        irq = base + q + 1
        name = (f"mlx5_async0@pci:{bdf}" if q < 0 else f"mlx5_comp{q}@pci:{bdf}") if driver == "mlx5" else (
            f"bnxt_en-{bdf}:async" if q < 0 else f"{netdev}-TxRx-{q}")
        if degrade == "irq_far":
            cpu = (16 if numa == 0 else 0) + 5
        else:
            cpu = numa * 16 + (rail % 4) * QUEUES + max(q, 0)
        _w(root, f"{pci}/msi_irqs/{irq}", "msix")
        _w(root, f"proc/irq/{irq}/smp_affinity_list", str(cpu) if q >= 0 else ("0-15" if numa == 0 else "16-31"))
        _w(root, f"proc/irq/{irq}/effective_affinity_list", str(cpu))
        counts = "".join(f" {(1000 + irq if c == cpu else 0):10d}" for c in range(32))
        lines.append(f"{irq:4d}:{counts}  IR-PCI-MSI {irq * 4096}-edge      {name}")
    return lines


def _nic(root: Path, pci: str, numa: int, dev: str, netdev: str, vendor: str, state: str, ib: bool,
         width: int, ipv4: str | None, gts: str = "32.0") -> None:
    _pci(root, pci, vendor, "0x020700" if ib else "0x020000", numa, width, gts)
    bdf = pci.rsplit("/", 1)[-1]
    (root / pci / "infiniband" / dev).mkdir(parents=True)
    _ln(root, f"sys/class/infiniband/{dev}/device", pci)
    _ln(root, f"sys/class/net/{netdev}/device", pci)
    up = state == "up"
    for name, value in (("mtu", "4092" if ib else "9000"), ("speed", "400000" if up else "-1"),
                        ("operstate", "up" if up else "down"), ("carrier", "1" if up else "0"),
                        ("address", f"02:00:00:00:{bdf[5:7]}:01")):
        _w(root, f"sys/class/net/{netdev}/{name}", value)
    port = f"sys/class/infiniband/{dev}/ports/1"
    _w(root, f"{port}/state", "4: ACTIVE" if up else "1: DOWN")
    _w(root, f"{port}/phys_state", "5: LinkUp" if up else "3: Disabled")
    _w(root, f"{port}/rate", "400 Gb/sec (4X NDR)" if up else "10 Gb/sec (4X SDR)")
    _w(root, f"{port}/link_layer", "InfiniBand" if ib else "Ethernet")
    gids = [("fe80:0000:0000:0000:0000:0000:0000:0001", "IB/RoCE v1")]
    if not ib and ipv4:
        mapped = "0000:0000:0000:0000:0000:ffff:{:02x}{:02x}:{:02x}{:02x}".format(*map(int, ipv4.split(".")))
        gids += [("fe80:0000:0000:0000:0000:0000:0000:0001", "RoCE v2"), (mapped, "IB/RoCE v1"), (mapped, "RoCE v2")]
    for i, (gid, kind) in enumerate(gids):
        _w(root, f"{port}/gids/{i}", gid)
        _w(root, f"{port}/gid_attrs/types/{i}", kind)
        _w(root, f"{port}/gid_attrs/ndevs/{i}", netdev)


def rail_address(kind: str, i: int) -> str:
    return f"198.19.{200 + i}.{1 if kind == 'dgx' else 2}"


def _script(path: Path, cases: Mapping[str, str]) -> None:
    """A stand-in tool: prints the file named for the first matching argument prefix, else fails."""
    body = ["#!/bin/sh", 'case "$*" in']
    body += [f"  \"{prefix}\"*) cat '{file}' ;;" for prefix, file in cases.items()]
    body += ['  *) echo "stand-in $0: unsupported: $*" >&2; exit 2 ;;', "esac", ""]
    path.write_text("\n".join(body))
    path.chmod(0o755)


def build(kind: str, root: Path, degrade: Mapping[int, str] | None = None) -> dict[str, Path]:
    """Write the tree and stand-in tools of one node; returns ``{"tree": ..., "bin": ...}``."""
    degrade = degrade or {}
    tree, tools = root / "tree", root / "bin"
    tools.mkdir(parents=True)
    irq_lines: list[str] = []
    if kind == "dgx":
        _common(tree, "dgx-synthetic", "nvidia_peermem 16384 0 - Live 0x0\nmlx5_ib 466944 0 - Live 0x0")
        rows = []
        for s in range(4):  # one PCIe switch per GPU pair and NIC pair, as the real topo's PIX pairs
            numa, b = (0 if s < 2 else 1), 0x10 + s * 0x20
            rc, rp, usp = f"pci0000:{b:02x}", f"0000:{b:02x}:01.0", f"0000:{b + 1:02x}:00.0"
            base = f"sys/devices/{rc}/{rp}/{usp}"
            for k in range(4):
                dsp, leaf = f"0000:{b + 2:02x}:{k:02x}.0", f"0000:{b + 3 + k:02x}:00.0"
                i = 2 * s + k % 2
                if k < 2:  # GPUs
                    _pci(tree, f"{base}/{dsp}/{leaf}", "0x10de", "0x030200", numa)
                    rows.append(f"{i}, NVIDIA B200, 00000000:{b + 3 + k:02x}:00.0, GPU-{i:08d}, 570.86.15, "
                                f"{34 + i}, 140.00, 5, 5, 16, 16, 345, 3996, 1965, 183359")
                else:
                    nic_numa = 1 - numa if degrade.get(i) == "numa" else numa
                    _nic(tree, f"{base}/{dsp}/{leaf}", nic_numa, f"mlx5_{i}", f"ibp{b + 3 + k:x}s0", "0x15b3",
                         "down" if degrade.get(i) == "down" else "up", True, 8 if degrade.get(i) == "x8" else 16,
                         None, "16.0" if degrade.get(i) == "gen4" else "32.0")
                    irq_lines += _nic_config(tree, tools, f"{base}/{dsp}/{leaf}", nic_numa, i, f"ibp{b + 3 + k:x}s0",
                                             True, degrade.get(i))
        rows.sort(key=lambda r: int(r.split(",")[0]))
        (root / "query.csv").write_text("\n".join(rows) + "\n")
        _script(tools / "nvidia-smi", {"topo -m": str(NV_TOPO), "--query-gpu=": str(root / "query.csv")})
        # mlxlink -c: the real 400G counters of tests/fixtures/health/real; a "ber" rail's errors
        # get past FEC (effective BER 1E-11, raw BER 3E-4)
        good = MLXLINK_400G.read_text()
        (root / "mlxlink-good.txt").write_text(good)
        (root / "mlxlink-ber.txt").write_text(good.replace("2E-9", "3E-4").replace("15E-255", "1E-11").replace(
            "Effective Physical Errors          : 0", "Effective Physical Errors          : 42"))
        _script(tools / "mlxlink", {f"-d mlx5_{i} -c": str(root / ("mlxlink-ber.txt" if degrade.get(i) == "ber"
                                                                   else "mlxlink-good.txt")) for i in range(8)})
    elif kind == "mi300x":
        _common(tree, "mi300x-synthetic", "amdgpu 16384 0 - Live 0x0\nbnxt_re 466944 0 - Live 0x0")
        metric = []
        for i, g in enumerate(AMD_BDFS):
            gb, numa = int(g, 16), (0 if i < 4 else 1)
            rc, rp, usp = f"pci0000:{gb - 4:02x}", f"0000:{gb - 4:02x}:01.1", f"0000:{gb - 3:02x}:00.0"
            base = f"sys/devices/{rc}/{rp}/{usp}"
            _pci(tree, f"{base}/0000:{gb - 2:02x}:00.0/0000:{gb:02x}:00.0", "0x1002", "0x038000", numa)
            nic_numa = 1 - numa if degrade.get(i) == "numa" else numa
            _nic(tree, f"{base}/0000:{gb - 2:02x}:01.0/0000:{gb + 1:02x}:00.0", nic_numa, f"bnxt_re{i}",
                 f"enp{gb + 1}s0np0", "0x14e4", "down" if degrade.get(i) == "down" else "up", False,
                 8 if degrade.get(i) == "x8" else 16, rail_address(kind, i), "16.0" if degrade.get(i) == "gen4" else "32.0")
            irq_lines += _nic_config(tree, tools, f"{base}/0000:{gb - 2:02x}:01.0/0000:{gb + 1:02x}:00.0", nic_numa, i,
                                     f"enp{gb + 1}s0np0", False, degrade.get(i))
            metric.append({"gpu": i, "temperature": {"edge": {"value": 38 + i, "unit": "C"},
                                                      "hotspot": {"value": 45 + i, "unit": "C"},
                                                      "mem": {"value": 40 + i, "unit": "C"}}})
        _w(tree, "opt/rocm-6.2.0/include/rccl/rccl.h", "#define NCCL_MAJOR 2\n#define NCCL_MINOR 20\n"
           "#define NCCL_PATCH 5")
        (root / "metric.json").write_text(json.dumps(metric))
        (root / "static.json").write_text("[]")
        _script(tools / "amd-smi", {"topology": str(AMD_TOPO), "static --json": str(root / "static.json"),
                                    "metric --json": str(root / "metric.json")})
        _script(tools / "rocm-smi", {"--showtopo": str(ROCM_NUMA)})
    else:
        raise ValueError(kind)
    header = "      " + "".join(f"{f'CPU{c}':>11}" for c in range(32))
    _w(tree, "proc/interrupts", "\n".join([header, *irq_lines]))
    outputs = root / "outputs"
    _script(tools / "ethtool", {**{f"-{flag} {nd.name}": str(nd / flag) for nd in sorted(outputs.iterdir())
                                   for flag in "klgc"},
                                **{f"-n {nd.name} rx-flow-hash {kind}": str(nd / f"n-{kind}")
                                   for nd in sorted(outputs.iterdir()) for kind in ("tcp4", "udp4")}})
    _script(tools / "lspci", {f"-vvv -s {f.name}": str(f) for f in sorted((root / "lspci").iterdir())})
    return {"tree": tree, "bin": tools}


def inventory_vars(kind: str, built: Mapping[str, Path], numa: bool = True) -> dict[str, Any]:
    """Host variables of the node: 8 rails (parallel lists), NUMA 0 for rails 0-3 and 1 for 4-7."""
    if kind == "dgx":
        netdevs = [f"ibp{0x10 + s * 0x20 + 3 + k:x}s0" for s in range(4) for k in (2, 3)]
        devs = [f"mlx5_{i}" for i in range(8)]
    else:
        netdevs = [f"enp{int(g, 16) + 1}s0np0" for g in AMD_BDFS]
        devs = [f"bnxt_re{i}" for i in range(8)]
    out: dict[str, Any] = {
        "netdev": ",".join(netdevs), "rdma_dev": ",".join(devs),
        "data_ip": ",".join(rail_address(kind, i) for i in range(8)),
        "nic_serial": ",".join(f"SYN-{kind}-{i}" for i in range(8)), "gpus": 8,
        "telemetry_root": str(built["tree"]), "telemetry_path": str(built["bin"]),
    }
    if numa:
        out["numa_node"] = ",".join("0" if i < 4 else "1" for i in range(8))
    if kind == "mi300x":
        out |= {"gid_index": 3, "gpu_vendor": "amd"}
    return out
