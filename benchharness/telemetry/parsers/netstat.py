"""The kernel's SNMP / netstat MIB counters in the three forms people paste, as snapshot counters
named as the sampler names them (``tcp:-:RetransSegs``, ``tcpext:-:TCPLostRetransmit``):

- ``netstat -s`` (net-tools ``statistics.c``): ``Tcp:`` section headers, then indented lines
  ``48108 segments retransmitted`` (a phrase per MIB field; net-tools before 1.60 spelled some
  differently: ``segments send out``, ``segments retransmited``, ``active connections openings``)
  or ``TCPLostRetransmit: 5164`` for fields it has no phrase for; its lines grepped out of their
  sections (``netstat -s | grep retrans``) are read where the phrase names one field of the Tcp or
  Ip table and no other (``segments retransmitted``, ``requests sent out``), or a field of the
  kernel's IpExt list (``OutOctets: 1248437047``);
- ``nstat [-a|-z]`` (iproute2): ``#kernel`` then ``TcpRetransSegs   48108   0.0`` (MIB name
  glued to the field, value, rate); ``nstat -j``: ``{"kernel": {"TcpRetransSegs": 48108, ...}}``;
- ``/proc/net/snmp`` and ``/proc/net/netstat``: a ``Tcp: RtoAlgorithm RtoMin ...`` name line
  followed by a ``Tcp: 1 200 ...`` value line.

The health judge reads ``RetransSegs`` (retransmissions) over ``OutSegs`` (segments sent).
"""

from __future__ import annotations

import json
import re
from typing import Any

from benchharness.telemetry.parsers._common import snake, undecorate, unreadable

MIBS = ("TcpExt", "IpExt", "MPTcpExt", "UdpLite6", "UdpLite", "IcmpMsg", "Icmp6", "Udp6", "Ip6", "Tcp",
        "Udp", "Icmp", "Ip", "Sctp")
_PHRASES = {
    "Tcp": {"active connection openings": "ActiveOpens", "active connections openings": "ActiveOpens",
            "passive connection openings": "PassiveOpens", "failed connection attempts": "AttemptFails",
            "connection resets received": "EstabResets", "connections established": "CurrEstab",
            "segments received": "InSegs", "segments sent out": "OutSegs", "segments send out": "OutSegs",
            "segments retransmitted": "RetransSegs", "segments retransmited": "RetransSegs",
            "bad segments received.": "InErrs", "bad segments received": "InErrs", "resets sent": "OutRsts"},
    "Udp": {"packets received": "InDatagrams", "packets to unknown port received.": "NoPorts",
            "packets to unknown port received": "NoPorts", "packet receive errors": "InErrors",
            "packets sent": "OutDatagrams", "receive buffer errors": "RcvbufErrors",
            "send buffer errors": "SndbufErrors"},
    "Ip": {"total packets received": "InReceives", "forwarded": "ForwDatagrams",
           "incoming packets discarded": "InDiscards", "incoming packets delivered": "InDelivers",
           "requests sent out": "OutRequests", "outgoing packets dropped": "OutDiscards",
           "with invalid addresses": "InAddrErrors", "with invalid headers": "InHdrErrors"},
}
#: Phrases that name one field of the Tcp or Ip table and of no other table: read without their
#: section header too, as ``netstat -s | grep`` leaves them (the Udp phrases are UdpLite's as well).
_BARE = {phrase: mib for mib in ("Tcp", "Ip") for phrase in _PHRASES[mib]
         if sum(phrase in table for table in _PHRASES.values()) == 1}
#: The kernel's IpExt fields (net/ipv4/proc.c, snmp4_ipextstats_list), which netstat -s prints as
#: ``OutOctets: N``: read without their ``IpExt:`` header too.
_IPEXT = frozenset({"InNoRoutes", "InTruncatedPkts", "InMcastPkts", "OutMcastPkts", "InBcastPkts", "OutBcastPkts",
                    "InOctets", "OutOctets", "InMcastOctets", "OutMcastOctets", "InBcastOctets", "OutBcastOctets",
                    "InCsumErrors", "InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts", "ReasmOverlaps"})
_SECTION = re.compile(rf"^({'|'.join(MIBS)}):\s*$")
_NSTAT = re.compile(rf"^({'|'.join(MIBS)})([A-Z0-9]\w*)\s+(\d+)(?:\s+[-\d.]+)?\s*$")
_PROC = re.compile(rf"^({'|'.join(MIBS)}):((?:\s+\S+)+)\s*$")
_NAMED = re.compile(r"^\s+([A-Za-z][\w ]*?):\s+(\d+)\s*$")
_LEADING = re.compile(r"^\s+(\d+)\s+(.+?)\s*$")
#: A reader's note after a value, as tutorials publish their pastes (``4 segments retransmitted
#: //重传报文数``, ``OutOctets: 5  # bytes sent``): not the tool's; the line is read without it.
_ANNOTATION = re.compile(r"(?<=\S)\s+//.*$|(?<=\d)\s{2,}#.*$")


def _key(mib: str, field: str) -> str:
    return f"{mib.lower()}:-:{field}"


def counters_of(lines: list[str]) -> tuple[dict[str, int], set[int]]:
    """``(counters, indices of the lines read)`` from netstat -s / nstat / /proc/net lines."""
    out: dict[str, int] = {}
    used: set[int] = set()
    section: str | None = None
    pending: tuple[str, list[str]] | None = None  # a /proc/net/snmp name line
    for i, line in enumerate(lines):
        line = _ANNOTATION.sub("", line)
        stripped = line.strip()
        if stripped == "#kernel":
            used.add(i)
            continue
        m = _SECTION.match(stripped) if not line[:1].isspace() else None
        if m:
            section = m.group(1)
            used.add(i)
            continue
        if section and line[:1].isspace() and stripped:
            used.add(i)
            named = _NAMED.match(line)
            lead = _LEADING.match(line)
            if named:
                out[_key(section, named.group(1).replace(" ", ""))] = int(named.group(2))
            elif lead:
                phrase = lead.group(2)
                field = _PHRASES.get(section, {}).get(phrase) or snake(phrase)
                out[_key(section, field)] = int(lead.group(1))
            elif (num := re.search(r"\b(\d+)\b", stripped)) is not None:
                out[_key(section, snake(stripped[:num.start()] + "N" + stripped[num.end():]))] = int(num.group(1))
            continue
        if stripped and not line[:1].isspace():
            section = None
        bare = _LEADING.match(line)
        if bare and bare.group(2) in _BARE:
            mib = _BARE[bare.group(2)]
            out[_key(mib, _PHRASES[mib][bare.group(2)])] = int(bare.group(1))
            used.add(i)
            continue
        named = _NAMED.match(line)
        if named and named.group(1) in _IPEXT:
            out[_key("IpExt", named.group(1))] = int(named.group(2))
            used.add(i)
            continue
        n = _NSTAT.match(stripped)
        if n:
            out[_key(n.group(1), n.group(2))] = int(n.group(3))
            used.add(i)
            continue
        p = _PROC.match(stripped)
        if p:
            fields = p.group(2).split()
            if all(re.fullmatch(r"-?\d+", f) for f in fields):
                if pending and pending[0] == p.group(1):
                    if len(pending[1]) != len(fields):
                        raise unreadable(i + 1, line, f"{len(fields)} values under {len(pending[1])} names")
                    out.update({_key(p.group(1), k): int(v) for k, v in zip(pending[1], fields, strict=True)})
                    used.add(i)
                pending = None
            else:
                pending = (p.group(1), fields)
                used.add(i)
    return out, used


def parse_netstat(text: str) -> dict[str, int]:
    """``netstat -s``, ``nstat [-a|-z|-j]`` or ``/proc/net/snmp`` text: ``<mib>:-:<field>`` -> count."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            doc = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise unreadable(exc.lineno, stripped.splitlines()[exc.lineno - 1], "not a complete nstat -j document") from exc
        flat: dict[str, Any] = doc.get("kernel", doc) if isinstance(doc, dict) else {}
        out = {}
        for name, value in flat.items():
            m = re.match(rf"^({'|'.join(MIBS)})(\w+)$", name)
            if m and isinstance(value, int):
                out[_key(m.group(1), m.group(2))] = value
        return out
    lines = undecorate(text, keep=re.compile(r"^#kernel$")).split("\n")
    counters, used = counters_of(lines)
    if used and not counters:
        first = min(used)
        raise unreadable(first + 1, lines[first], "netstat/nstat sections without any counter")
    return counters


PARSERS = {"netstat": parse_netstat, "nstat": parse_netstat}
READS = {
    "netstat": "netstat -s (net-tools 1.60 and 2.10, older spellings too; its Tcp and Ip lines grepped out of "
               "their sections too), nstat and /proc/net/snmp as well -> tcp:-:RetransSegs ...",
    "nstat": "nstat [-a|-z|-j] (iproute2) -> tcp:-:RetransSegs, tcpext:-:TCPLostRetransmit ...",
}
