"""PCIe Access Control Services (ACS) of the switch ports between a GPU and its NIC.

With ACS Request or Completion Redirect on in a switch's downstream port, peer-to-peer traffic
(GPUDirect RDMA: NIC <-> GPU memory) is sent up to the root complex instead of across the
switch: slower at best, broken at worst (NCCL's troubleshooting guide: disable ACS). Read from
``setpci -s BDF ECAP_ACS+0x6.w`` (the ACS control register, in hex) or from ``lspci -vvv``'s
``ACSCtl:`` lines.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import undecorate

#: ACS control register bits (PCIe base specification, 7.7.8.3), by lspci's names.
ACS_BITS = {"SrcValid": 0x01, "TransBlk": 0x02, "ReqRedir": 0x04, "CmpltRedir": 0x08,
            "UpstreamFwd": 0x10, "EgressCtrl": 0x20, "DirectTrans": 0x40}
#: Bits that send peer-to-peer requests or completions up to the root complex.
REDIRECT = ("ReqRedir", "CmpltRedir")

_DEVICE = re.compile(r"^(?:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]/)*((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+\S")
_CTL = re.compile(r"^\s*ACSCtl:\s*(.*)$")
_FLAG = re.compile(r"(\w+)([+-])")


def decode(control: int) -> dict[str, bool]:
    """The ACS control register as lspci names its bits."""
    return {name: bool(control & bit) for name, bit in ACS_BITS.items()}


def redirects(flags: dict[str, bool]) -> list[str]:
    """The redirect bits that are on (empty: peer traffic may stay below the switch)."""
    return [name for name in REDIRECT if flags.get(name)]


def parse_setpci_acs(text: str) -> dict[str, Any]:
    """``setpci -s BDF ECAP_ACS+0x6.w`` output: ``{"control": int, "flags": {...}}``; ValueError
    when it is no 16-bit hex value (the device has no ACS capability, or setpci needs root)."""
    word = text.strip().split()[-1] if text.strip() else ""
    if not re.fullmatch(r"[0-9a-fA-F]{1,4}", word):
        raise ValueError(f"not an ACS control word: {text.strip()[:80]!r}")
    control = int(word, 16)
    return {"control": control, "flags": decode(control)}


def parse_lspci_acs(text: str) -> dict[str, Any]:
    """``lspci -vvv`` text: ``{"devices": {BDF: flags}, "unattributed": [flags, ...]}``; an
    ``ACSCtl`` line before any device header (a cut listing) is kept, not dropped."""
    devices: dict[str, dict[str, bool]] = {}
    orphans: list[dict[str, bool]] = []
    current: str | None = None
    for line in undecorate(text).split("\n"):
        head = _DEVICE.match(line)
        if head:
            current = head.group(1).lower()
            continue
        ctl = _CTL.match(line)
        if ctl:
            flags = {name: sign == "+" for name, sign in _FLAG.findall(ctl.group(1)) if name in ACS_BITS}
            if current is None:
                orphans.append(flags)
            else:
                devices[current] = flags
    return {"devices": devices, "unattributed": orphans}


PARSERS = {"lspci-acs": parse_lspci_acs, "setpci-acs": parse_setpci_acs}
READS = {
    "lspci-acs": "lspci -vvv [-s BDF] (pciutils 3.x): each device's ACSCtl: line (SrcValid ReqRedir CmpltRedir "
                 "UpstreamFwd EgressCtrl DirectTrans as +/-) by BDF; ACSCtl lines before any header (a cut or "
                 "grepped listing) kept as unattributed; '> '-quoted copies",
    "setpci-acs": "setpci -s BDF ECAP_ACS+0x6.w (pciutils 3.x): the 16-bit ACS control word in hex, decoded by "
                  "lspci's bit names",
}
