"""A NIC's configuration as the probe keeps it (raw text), read through the one parser of each format.

The probe (``onhost/probe.py``) keeps per netdev the raw ``ethtool -k/-l/-x/-g/-c`` outputs (and
``-n DEV rx-flow-hash tcp4|udp4|tcp6|udp6``), the
``lspci -vvv -s BDF`` text, the ``aer_dev_*`` files and the NIC's ``/proc/interrupts`` lines with
each IRQ's affinity; ``read_nic`` parses them with ``telemetry/parsers`` (ethtool, lspci, aer,
interrupts), so the judge (``nic_checks.py``), the golden profile (``golden.py``) and ``bench parse``
read each format the same way. A part the host could not give is left None, with its reason in
``reasons``. ``pcie_link`` is the one reading of a NIC's PCIe link: sysfs, else lspci's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from benchharness.core.pcie import gen_of
from benchharness.telemetry.parsers.aer import parse_aer
from benchharness.telemetry.parsers.ethtool import (
    parse_channels,
    parse_coalesce,
    parse_features,
    parse_rings,
    parse_rss,
    parse_rx_flow_hash,
)
from benchharness.telemetry.parsers.interrupts import parse_interrupts
from benchharness.telemetry.parsers.lspci import device_of

_ETHTOOL = {"features": parse_features, "channels": parse_channels, "rss": parse_rss, "rings": parse_rings,
            "coalesce": parse_coalesce}
#: flow types whose RSS hash fields the probe asks for (``ethtool -n DEV rx-flow-hash TYPE``)
FLOW_HASH_TYPES = ("tcp4", "udp4", "tcp6", "udp6")
#: IRQ names of a NIC's vectors that carry no queue (control, async events, config changes)
_NOT_QUEUE = re.compile(r"async|config|misc|ctrl|cmd|pages|_eq\b|-aux", re.IGNORECASE)


@dataclass(frozen=True)
class Irq:
    """One of the NIC's IRQs: where it may run (``cpus``), and whether it serves a queue."""

    irq: int
    name: str | None
    cpus: tuple[int, ...]
    total: int
    queue: bool


@dataclass
class NicConfig:
    """What ``read_nic`` found; None where the host could not say (``reasons`` says why)."""

    features: dict[str, Any] | None = None
    channels: dict[str, Any] | None = None
    rss: dict[str, Any] | None = None
    rings: dict[str, Any] | None = None
    coalesce: dict[str, Any] | None = None
    lspci: dict[str, Any] | None = None
    aer: dict[str, dict[str, Any]] | None = None
    irqs: list[Irq] | None = None
    #: flow type (``udp4``) -> the fields its RSS hash uses (``parsers.ethtool.parse_rx_flow_hash``);
    #: a type the driver did not answer is absent, its reason under ``reasons["rx_flow_hash_<type>"]``
    flow_hash: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


def cpulist(text: Any) -> tuple[int, ...]:
    """``0-3,8`` -> (0, 1, 2, 3, 8); empty for None or text that is no CPU list."""
    out: list[int] = []
    for part in str(text or "").strip().split(","):
        m = re.fullmatch(r"\s*(\d+)(?:-(\d+))?\s*", part)
        if m:
            out.extend(range(int(m.group(1)), int(m.group(2) or m.group(1)) + 1))
    return tuple(out)


def _raw(section: Any) -> tuple[Any, str | None]:
    if isinstance(section, Mapping) and section.get("available") is not False:
        return section.get("raw"), None
    reason = section.get("reason") if isinstance(section, Mapping) else None
    return None, str(reason or "not probed (older probe)")


def read_nic(nic: Mapping[str, Any]) -> NicConfig:
    """Parse what the probe kept raw for one netdev record."""
    out = NicConfig()
    config = nic.get("ethtool_config") if isinstance(nic.get("ethtool_config"), Mapping) else {}
    for key, parser in _ETHTOOL.items():
        raw, reason = _raw((config or {}).get(key))
        parsed = parser(raw) if isinstance(raw, str) else None
        if key == "rss" and parsed is not None and not parsed["table"] and not parsed["functions"]:
            parsed, reason = None, "ethtool -x printed no table (Operation not supported)"
        setattr(out, key, parsed)
        if parsed is None:
            out.reasons[key] = reason or "no output"
    for kind in FLOW_HASH_TYPES:
        raw, reason = _raw((config or {}).get(f"rx_flow_hash_{kind}"))
        parsed = parse_rx_flow_hash(raw).get(kind) if isinstance(raw, str) else None
        if parsed is not None:
            out.flow_hash[kind] = parsed
        else:
            out.reasons[f"rx_flow_hash_{kind}"] = reason or f"ethtool printed no {kind} hash fields"
    raw, reason = _raw(nic.get("lspci"))
    out.lspci = device_of(raw) if isinstance(raw, str) else None
    if out.lspci is None:
        out.reasons["lspci"] = reason or "lspci printed no device"
    raw, reason = _raw(nic.get("aer"))
    if isinstance(raw, Mapping) and raw:
        out.aer = {kind: parse_aer(str(text)) for kind, text in raw.items()}
    else:
        out.reasons["aer"] = reason or "no AER counters"
    out.irqs = _irqs(nic.get("irqs"), out.reasons)
    return out


def _irqs(section: Any, reasons: dict[str, str]) -> list[Irq] | None:
    if not isinstance(section, Mapping) or section.get("available") is False:
        reason = section.get("reason") if isinstance(section, Mapping) else None
        reasons["irqs"] = str(reason or "not probed (older probe)")
        return None
    parsed = parse_interrupts(str(section.get("interrupts") or ""))
    affinity = section.get("affinity") if isinstance(section.get("affinity"), Mapping) else {}
    out = []
    for row in parsed["irqs"]:
        aff = (affinity or {}).get(str(row["irq"])) or {}
        cpus = cpulist(aff.get("effective_affinity_list")) or cpulist(aff.get("smp_affinity_list"))
        name = row.get("name")
        out.append(Irq(row["irq"], name, cpus, row["total"], not _NOT_QUEUE.search(str(name or ""))))
    return out


def pcie_link(nic: Mapping[str, Any], rdma: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The NIC's PCIe link as sysfs gives it (``current_speed_gts``, ``current_width``, ``max_*``),
    else from its ``lspci -vvv`` text, else its RDMA device's; generations from ``core/pcie.py``."""
    for link in (nic.get("pcie"), (rdma or {}).get("pcie")):
        if isinstance(link, Mapping) and link.get("available") is not False and link.get("current_width"):
            return {**link, "current_gen": gen_of(link.get("current_speed_gts")),
                    "max_gen": gen_of(link.get("max_speed_gts"))}
    raw, _ = _raw(nic.get("lspci"))
    dev = device_of(raw) if isinstance(raw, str) else None
    if dev and dev.get("link_sta"):
        cur, cap = dev["link_sta"], dev.get("link_cap") or {}
        return {"current_speed_gts": cur.get("speed_gts"), "current_width": cur.get("width"),
                "max_speed_gts": cap.get("speed_gts"), "max_width": cap.get("width"),
                "current_gen": cur.get("gen"), "max_gen": cap.get("gen"), "downgraded": dev.get("downgraded"),
                "source": "lspci"}
    return None
