"""Parse ``NCCL_DEBUG=INFO`` logs: which network NCCL used, over which devices, with GPUDirect RDMA or not.

Log lines look like ``host:pid:tid [dev] NCCL INFO <message>`` (RCCL prints the same). The
messages read here come from NCCL's init.cc, net.cc, transport/net_ib.cc, transport/net_socket.cc
and transport/net.cc, e.g.::

    NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [1]mlx5_1:1/IB ; OOB eth0:10.0.0.1<0>
    NCCL INFO Using network IB
    NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.core.errors import ToolFailure
from benchharness.tools.textclean import clean

#: What ``bench parse nccl-debug`` reads (``bench parse --list``).
READS = {"nccl-debug": "NCCL_DEBUG=INFO logs (NCCL 2.4 to 2.2x, RCCL): NCCL version, the network used "
                       "(IB / RoCE, Socket, aws-ofi-nccl, gIB, IBext with the SHARP collnet plugin), its "
                       "devices, GPUDirect RDMA on or off per HCA, channels via NET/.../GDRDMA; mpirun tags, "
                       "Ray and srun prefixes; an 'NET/IB : Using [RO]; OOB ...' line with no device (RCCL "
                       "2.27 after 'No device found') is not IB in use, nor is a net plugin (HPC-X IBext, "
                       "NCCL 2.21) whose IB transport found no device"}

_TAG = re.compile(r"\[\d+,\d+\]<(?:stdout|stderr|stddiag)>:")
_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+\S*)")
_RCCL_VERSION = re.compile(r"RCCL version[ :]*(\d+\.\d+\.\d+\S*)")
_USING_NETWORK = re.compile(r"NCCL INFO Using network (.+?)\s*$")
# "NET/Plugin: Loaded net plugin NCCL RDMA Plugin v6 (v6)", "Loaded collnet plugin SHARP (v6)" (2.12+),
# "Loaded coll plugin ..."; NCCL 2.26+ names the one it set up: "Initialized NET plugin IB" and
# "Assigned NET plugin IB to comm" (the network, as "Using network IB" does)
_PLUGIN = re.compile(r"NCCL INFO NET/Plugin\s*:?\s*Loaded (?:net|coll|collnet) plugin (.+?)(?: \(v\d+\))?\s*$")
_NET_PLUGIN = re.compile(r"NCCL INFO (?:Initialized NET plugin (.+?)|Assigned NET plugin (.+?) to comm)\s*$")
_IB_USING = re.compile(r"NCCL INFO NET/IB\s*: Using (.*)$")
_IB_DEVICE = re.compile(r"\[(\d+)\]([^:\s\[\]]+):(\d+)/(\w+)")
_SOCKET_USING = re.compile(r"NCCL INFO NET/Socket\s*: Using (.*)$")
_SOCKET_DEVICE = re.compile(r"\[(\d+)\]([^:\s\[\]]+):([^<\s]+)<\d+>")
_IB_ATTEMPT = re.compile(r"NET/IB\s*: No device found|NET/IB\s*: Unable to open|Failed to open libibverbs"
                         r"|NET/IB\s*:.*(?:error|failed)|NCCL_IB_HCA set")
_NO_IB_DEVICE = re.compile(r"NET/IB\s*: No device found")
# "via NET/IB/0/GDRDMA", "[send] via NET/IB/0(1)/GDRDMA/Shared" (PXN proxy rank in brackets),
# "via NET/NCCL RDMA Plugin v6/0/GDRDMA" (plugin names may hold spaces), "via NET/Socket/1"
_CHANNEL_NET = re.compile(r"NCCL INFO Channel \d+(?:/\d+)? : .* via NET/([^/]+)/(\d+)(?:\(\d+\))?(/GDRDMA)?")
_CHANNEL_RING = re.compile(r"NCCL INFO Channel (\d+)(?:/(\d+))? :(?:\s+\d+)+\s*$")
_COLL_CHANNELS = re.compile(r"NCCL INFO (\d+) coll channels")
# "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)", "NET/gIB : GPU Direct RDMA
# Enabled for HCA 0 'mlx5_0'": NCCL's verdict per HCA, logged before (or without) any channel line
_GDR_HCA = re.compile(r"NCCL INFO NET/\S+\s*: GPU Direct RDMA (Enabled|Disabled) for HCA \d+ '([^']+)'")
# aws-ofi-nccl: "NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR"
_OFI = re.compile(r"NCCL INFO NET/OFI\b")
_OFI_NO_GDR = re.compile(r"NCCL INFO NET/OFI .*disabling GDR")
_WARN = re.compile(r"NCCL WARN (.*?)\s*$")
_WHO = re.compile(r"(\S+:\d+:\d+) \[\d+\] NCCL ")

# what a suite may write for ``require_network`` -> names NCCL logs for it
_NETWORK_ALIASES = {"ib": ("ib", "ibext"), "socket": ("socket",), "ofi": ("aws libfabric", "libfabric", "ofi"),
                    "efa": ("aws libfabric", "libfabric", "ofi"), "anp": ("rccl-anp",)}

#: Network plugins that carry NCCL/RCCL over RDMA, by the name NCCL logs for them (the plugin's
#: ``ncclNet.name``: ``Using network <name>``, channels ``via NET/<name>/<dev>[/GDRDMA]``), each
#: with what it is and the document that names it (docs/collectives.md, "Network plugins").
#: ``require_network: IB`` (the default on RDMA rails) accepts them when their channels show
#: GPUDirect RDMA; a fallback to sockets still fails.
RDMA_PLUGINS: dict[str, tuple[str, str]] = {
    "rccl-anp": ("AMD's AI-NIC network plugin (ANP, librccl-anp.so) for Pensando Pollara",
                 "github.com/ROCm/amd-anp: README.md; src/net_ib.cc declares .name = \"RCCL-ANP\""),
    "aws libfabric": ("AWS's OFI plugin (aws-ofi-nccl / aws-ofi-rccl) over libfabric",
                      "github.com/aws/aws-ofi-nccl README.md"),
    "libfabric": ("AWS's OFI plugin (aws-ofi-nccl 1.14 and later) over libfabric",
                  "github.com/aws/aws-ofi-nccl README.md"),
    "gib": ("Google's gIB NCCL plugin (RoCE on A3 Ultra / A4)",
            "github.com/google/dranet site/content/docs/user/kuberay.md (NCCL with the gIB plugin, via NET/gIB)"),
}


def _devices_ib(text: str) -> list[dict[str, Any]]:
    return [{"name": m.group(2), "port": int(m.group(3)), "link": m.group(4)}
            for m in _IB_DEVICE.finditer(text.split(";")[0])]


def _devices_socket(text: str) -> list[dict[str, Any]]:
    return [{"name": m.group(2), "address": m.group(3)} for m in _SOCKET_DEVICE.finditer(text)]


def _log_lines(text: str) -> list[str]:
    """Lines of ``text`` without logger / terminal noise and mpirun ``--tag-output`` markers."""
    return _TAG.sub("", clean(text)).splitlines()


def parse_nccl_debug(text: str) -> dict[str, Any]:
    """Network, devices, GPUDirect RDMA, socket fallback, channels, version and warnings from a log."""
    networks: list[str] = []
    plugins: list[str] = []
    net_plugins: list[str] = []
    devices: list[dict[str, Any]] = []
    warnings: list[str] = []
    version: str | None = None
    ib_attempted = no_ib_device = False
    ib_used = socket_used = False
    net_channels = gdr_channels = 0
    channel_net: str | None = None
    ring_channels: set[int] = set()
    ring_total: int | None = None
    coll_channels: int | None = None
    gdr_hcas: dict[str, bool] = {}
    ofi_used = ofi_no_gdr = False
    for line in _log_lines(text):
        if version is None and (m := _VERSION.search(line) or _RCCL_VERSION.search(line)):
            version = m.group(1)
        if "NCCL" not in line:
            continue
        if m := _USING_NETWORK.search(line):
            if m.group(1) not in networks:
                networks.append(m.group(1))
        elif m := _PLUGIN.search(line):
            if m.group(1) not in plugins:
                plugins.append(m.group(1))
        elif m := _NET_PLUGIN.search(line):
            name = m.group(1) or m.group(2)
            if name not in net_plugins:
                net_plugins.append(name)
        elif m := _IB_USING.search(line):
            # "NET/IB : Using [RO]; OOB eth0:..." after "No device found" (RCCL 2.27 on hosts without
            # RDMA NICs) lists no device: IB opened nothing, the network is what comes next
            found = _devices_ib(m.group(1))
            ib_used = ib_used or bool(found)
            devices += [d for d in found if d not in devices]
        elif m := _SOCKET_USING.search(line):
            socket_used = True
            devices += [d for d in _devices_socket(m.group(1)) if d not in devices]
        elif m := _CHANNEL_NET.search(line):
            net_channels += 1
            gdr_channels += 1 if m.group(3) else 0
            channel_net = channel_net or m.group(1)
        elif m := _CHANNEL_RING.search(line):
            ring_channels.add(int(m.group(1)))
            if m.group(2):
                ring_total = int(m.group(2))
        elif m := _COLL_CHANNELS.search(line):
            coll_channels = max(coll_channels or 0, int(m.group(1)))
        if m := _GDR_HCA.search(line):
            gdr_hcas[m.group(2)] = m.group(1) == "Enabled"
        if _OFI.search(line):
            ofi_used = True
            ofi_no_gdr = ofi_no_gdr or bool(_OFI_NO_GDR.search(line))
        if _IB_ATTEMPT.search(line):
            ib_attempted = True
            no_ib_device = no_ib_device or bool(_NO_IB_DEVICE.search(line))
        if (m := _WARN.search(line)) and m.group(1) not in warnings:
            warnings.append(m.group(1))
    # a plugin that loaded but whose IB transport found no device ("NET/IB : No device found", HPC-X's
    # IBext on a host without RDMA NICs) carries nothing: without a Socket line the network is unknown
    carrying = [] if no_ib_device and not ib_used else plugins
    fallback = "IB" if ib_used else "Socket" if socket_used else carrying[0] if carrying else \
        "OFI" if ofi_used else None
    network = networks[0] if networks else (channel_net or (net_plugins[0] if net_plugins else None) or fallback)
    channels = coll_channels or ring_total or (len(ring_channels) or None)
    if net_channels:  # the channels say what was used
        gdr: bool | None = gdr_channels > 0
    elif gdr_hcas:  # no channel line yet: NCCL's per-HCA verdict
        gdr = any(gdr_hcas.values())
    else:
        gdr = False if ofi_no_gdr else None
    return {
        "network": network,
        "networks": networks or ([network] if network else []),
        "plugins": plugins,
        "devices": devices,
        "gdr": gdr,
        "gdr_disabled_hcas": [name for name, on in gdr_hcas.items() if not on],
        "net_channels": net_channels,
        "socket_fallback": bool(network and network.lower() == "socket" and ib_attempted),
        "channels": channels,
        "nccl_version": version,
        "warnings": warnings,
    }


def hcas_used(text: str) -> tuple[list[str], list[str]]:
    """(HCAs NCCL opened, HCAs its channels ran over) as ``dev:port``, from ``NET/IB : Using`` and channel lines.

    A channel line names the device by its index in that rank's ``Using`` list, so the index is
    looked up in the list of the same rank (host:pid) that logged the channel.
    """
    opened: list[str] = []
    by_rank: dict[str, list[str]] = {}
    used: list[str] = []
    for line in _log_lines(text):
        # "host:pid:tid [dev] NCCL INFO", also after a "[2025-08-22 17:44:36] " timestamp (NCCL
        # 2.26+ NCCL_DEBUG_TIMESTAMP_FORMAT) or an mpirun / srun rank tag ("[0] ", "0: ")
        who = _WHO.search(line)
        rank = who.group(1) if who else line.split(" ", 1)[0]
        if m := _IB_USING.search(line):
            names = [f"{d['name']}:{d['port']}" for d in _devices_ib(m.group(1))]
            by_rank[rank.rsplit(":", 1)[0]] = names
            opened += [n for n in names if n not in opened]
        elif (m := _CHANNEL_NET.search(line)) and (m.group(1).lower().startswith("ib") or rdma_plugin(m.group(1))):
            names = by_rank.get(rank.rsplit(":", 1)[0], [])
            idx = int(m.group(2))
            if idx < len(names) and names[idx] not in used:
                used.append(names[idx])
    return opened, used


def rdma_plugin(used: str | None) -> tuple[str, str, str] | None:
    """(name as logged, what it is, its document) when ``used`` is a known RDMA network plugin."""
    got = (used or "").strip().lower()
    for name, (what, doc) in RDMA_PLUGINS.items():
        if got == name or got.startswith(name + "_"):
            return str(used), what, doc
    return None


def network_matches(required: str, used: str | None) -> bool:
    """True when the network NCCL logged (``IBext_v8``, ``AWS Libfabric``) is the ``required`` kind."""
    if used is None:
        return False
    want, got = required.strip().lower(), used.strip().lower()
    return any(got == name or got.startswith(name) for name in _NETWORK_ALIASES.get(want, (want,)))


def parse_nccl_debug_text(text: str) -> dict[str, Any]:
    """``bench parse nccl-debug FILE``: :func:`parse_nccl_debug`, but a log without INFO lines is an error.

    With no ``NCCL INFO`` line there is nothing to read the network from (NCCL_DEBUG was unset or
    WARN, or the file is not an NCCL log): ToolFailure ``nccl_error`` quoting the first NCCL WARN
    line when there is one, else ``no_results``. The runner keeps calling :func:`parse_nccl_debug`,
    which always returns its dict.
    """
    lines = _log_lines(text)
    if not any("NCCL INFO" in line for line in lines):
        warn = next((line.strip() for line in lines if _WARN.search(line)), None)
        if warn is not None:
            raise ToolFailure("nccl_error", "no NCCL INFO line (run with NCCL_DEBUG=INFO); "
                                            f"first NCCL WARN line: {warn!r}")
        raise ToolFailure("no_results", "no NCCL INFO line in the output (run with NCCL_DEBUG=INFO)")
    return parse_nccl_debug(text)


PARSERS = {"nccl-debug": parse_nccl_debug_text}
