"""``perfquery`` (infiniband-diags / rdma-core): an IB port's PortCounters, and with ``-x`` its
PortCountersExtended, as snapshot counters under the kernel's sysfs names.

Format (infiniband-diags ``src/perfquery.c`` through libibmad's ``mad_dump_fields``): an optional
``# Port counters: Lid L port P (CapMask: 0x...)`` or ``# Port extended counters: ...`` header
(``# <Attribute> counters: Lid L port P`` for the other attributes, e.g. ``-E``'s
``PortRcvErrorDetails``; ``DR path slid S; dlid D; 0,1 port P`` instead of ``Lid L`` with ``-D``),
then one ``Name:....value`` line per field, dots padding the name to a column. Field names are the
IBA spec's (``SymbolErrorCounter``, ``PortXmitWait`` ...); they are renamed to the names
``/sys/class/infiniband/<dev>/ports/<p>/counters/`` uses (``symbol_error``, ``port_xmit_wait``),
the names the health verdicts read. ``PortXmitData``/``PortRcvData`` count 4-octet words.
"""

from __future__ import annotations

import re
from typing import Any

from benchharness.telemetry.parsers._common import snake, undecorate, unreadable

#: perfquery field -> sysfs counter name (drivers/infiniband/core/sysfs.c).
SYSFS_NAMES = {
    "SymbolErrorCounter": "symbol_error", "LinkErrorRecoveryCounter": "link_error_recovery",
    "LinkDownedCounter": "link_downed", "PortRcvErrors": "port_rcv_errors",
    "PortRcvRemotePhysicalErrors": "port_rcv_remote_physical_errors",
    "PortRcvSwitchRelayErrors": "port_rcv_switch_relay_errors", "PortXmitDiscards": "port_xmit_discards",
    "PortXmitConstraintErrors": "port_xmit_constraint_errors",
    "PortRcvConstraintErrors": "port_rcv_constraint_errors",
    "LocalLinkIntegrityErrors": "local_link_integrity_errors",
    "ExcessiveBufferOverrunErrors": "excessive_buffer_overrun_errors", "VL15Dropped": "VL15_dropped",
    "PortXmitData": "port_xmit_data", "PortRcvData": "port_rcv_data", "PortXmitPkts": "port_xmit_packets",
    "PortRcvPkts": "port_rcv_packets", "PortXmitWait": "port_xmit_wait",
    "PortUnicastXmitPkts": "unicast_xmit_packets", "PortUnicastRcvPkts": "unicast_rcv_packets",
    "PortMulticastXmitPkts": "multicast_xmit_packets", "PortMulticastRcvPkts": "multicast_rcv_packets",
    "QP1Dropped": "qp1_dropped",
}
_SKIP = {"PortSelect", "CounterSelect", "CounterSelect2"}
_HEADER = re.compile(r"^#\s*(?:[A-Za-z]\w*\s+)+counters:\s*(?:Lid\s+(?P<lid>\d+)|DR path\s.*?)"
                     r"\s+port\s+(?P<port>\d+)", re.IGNORECASE)
#: Word starts in an IBA field name: ``PortDLIDMappingErrors`` -> Port, DLID, Mapping, Errors.
_WORDS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*):\.{2,}\s*(\S*)\s*$")


def counters_of(lines: list[str]) -> tuple[dict[str, int], set[int]]:
    """``(counters, indices of the lines read)`` from perfquery lines among others."""
    out: dict[str, int] = {}
    used: set[int] = set()
    obj = "-/-"
    for i, line in enumerate(lines):
        m = _HEADER.match(line.strip())
        if m:
            obj = f"lid{m['lid']}/{m['port']}" if m["lid"] else f"-/{m['port']}"
            used.add(i)
            continue
        f = _FIELD.match(line)
        if not f:
            continue
        used.add(i)
        name, value = f.groups()
        if name == "PortSelect" and obj == "-/-" and value.isdigit():
            obj = f"-/{value}"
        if name in _SKIP:
            continue
        if not re.fullmatch(r"\d+", value):
            raise unreadable(i + 1, line, f"perfquery field {name} has no count")
        out[f"ib:{obj}:{SYSFS_NAMES.get(name, snake(_WORDS.sub('_', name)))}"] = int(value)
    return out, used


def parse_perfquery(text: str) -> dict[str, Any]:
    """``perfquery [-x] [-C CA] [LID PORT]``: ``ib:lid<L>/<port>:<sysfs name>`` -> count."""
    lines = undecorate(text, keep=_HEADER).split("\n")
    counters, used = counters_of(lines)
    if used and not counters:
        first = min(used)
        raise unreadable(first + 1, lines[first], "a perfquery header without any counter")
    return counters


PARSERS = {"perfquery": parse_perfquery}
READS = {"perfquery": "perfquery [-x] [-E] [-C CA -P PORT] [LID PORT] (infiniband-diags 1.6 to rdma-core 5x; "
                      "PortCounters, PortCountersExtended with CapMask/CapMask2, PortRcvErrorDetails and other "
                      "'# <Attribute> counters:' headers, headers a mail wrapped) -> ib:lidL/P:<sysfs counter name>"}
