"""Packet rate of a stored run: Mpps, packets and drops per flow (rail pair) and per host.

Read side over the run directory's summary samples that carry ``msg_rate_mpps`` (perftest's
message-rate steps, iperf3 UDP; ``docs/packet-rate.md``). Each such sample is one flow from a
sender to a receiver: the client sends, or the server where the sample's ``direction`` is
``reverse``; each side's rail comes from ``client_rail`` / ``server_rail``.

- per flow: one row per test, case and sender rail -> receiver rail, the median Mpps over the
  flow's repetitions, its packets and lost packets summed, loss recomputed from the sums;
- per host: the flows a host sent (or received) at once, in one round of one repetition, are
  summed over its rails (and peers); the row is the median of those sums, packets and drops are
  totals. ``sender_cpu_bound`` marks a flow (and its sender) whose sending core, not the NIC, set
  the ceiling.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchharness.core.units import format_size
from benchharness.results import cases
from benchharness.results.store import RunDir

#: Labels left out of a packet-rate case: they name the flow (its rails and direction) instead.
_FLOW_LABELS = frozenset({"rail", "direction", "server_rail", "client_rail", "endpoints"})


@dataclass(frozen=True)
class Flow:
    """One sample with a message rate: who sent to whom, in which repetition and round."""

    test: str
    case: str
    rep: int
    round: int
    sender: str
    receiver: str
    sender_rail: str
    receiver_rail: str
    mpps: float
    packets: int | None
    lost_packets: int | None
    sender_cpu_pct: float | None
    sender_cpu_bound: bool


@dataclass(frozen=True)
class RateRow:
    """A flow (rail pair) or a host over a test's repetitions."""

    test: str
    case: str
    who: str  # "h2.rail0 -> h1.rail0" for a flow, the host name for a host
    mpps: float  # median over repetitions (for a host: over its rounds, sending and receiving)
    n: int  # how many figures the median is of
    packets: int | None
    lost_packets: int | None
    loss_pct: float | None
    sender_cpu_pct: float | None  # the busiest sender's own CPU figure, percent
    sender_cpu_bound: bool
    rails: int  # rails the row covers
    mpps_sent: float | None = None  # a host's: median of what it sent per round, summed over rails
    mpps_received: float | None = None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _case_text(rec: Mapping[str, Any], keys: Sequence[str]) -> str:
    parts = []
    for key in keys:
        value = rec.get(key)
        if value is None or value == "":
            continue
        if key == "size_bytes" and _number(value) is not None:
            parts.append(f"size={format_size(int(value))}")
        else:
            parts.append(f"{key}={value}")
    return " · ".join(parts)


def flows(run: RunDir) -> list[Flow]:
    """Every summary sample with ``msg_rate_mpps`` between a server and a client, as a flow."""
    keys = [k for k in cases.run_case_keys(run.run_info())
            if k not in cases.TEST_LABELS and k not in _FLOW_LABELS and k not in cases.HOST_LABELS]
    return flows_of(run.summary_samples(), keys)


def flows_of(samples: Iterable[Mapping[str, Any]], case_keys: Sequence[str]) -> list[Flow]:
    """The flows of these summary samples (``case_keys``: the labels that tell cases apart)."""
    out = []
    for rec in samples:
        mpps = _number(rec.get("msg_rate_mpps"))
        if mpps is None or not rec.get("server") or not rec.get("client") or rec.get("kind", "summary") != "summary":
            continue
        reverse = rec.get("direction") == "reverse"
        sender, receiver = ("server", "client") if reverse else ("client", "server")
        packets, lost = _number(rec.get("packets")), _number(rec.get("lost_packets"))
        out.append(Flow(test=str(rec.get("test")), case=_case_text(rec, case_keys),
                        rep=int(rec.get("rep") or 0), round=int(rec.get("round") or 0),
                        sender=str(rec[sender]), receiver=str(rec[receiver]),
                        sender_rail=str(rec.get(f"{sender}_rail") or ""),
                        receiver_rail=str(rec.get(f"{receiver}_rail") or ""), mpps=mpps,
                        packets=int(packets) if packets is not None else None,
                        lost_packets=int(lost) if lost is not None else None,
                        sender_cpu_pct=_number(rec.get("sender_cpu_pct")),
                        sender_cpu_bound=bool(rec.get("sender_cpu_bound"))))
    return out


def _endpoint(host: str, rail: str) -> str:
    return f"{host}.{rail}" if rail else host


def _totals(members: Sequence[Flow]) -> tuple[int | None, int | None, float | None]:
    """Packets and lost packets summed over the flows that report them, and the loss of the sums."""
    packets = [f.packets for f in members if f.packets is not None]
    lost = [f.lost_packets for f in members if f.lost_packets is not None]
    if not packets or not lost:
        return (sum(packets) if packets else None), None, None
    total, dropped = sum(packets), sum(lost)
    return total, dropped, (100.0 * dropped / total if total else None)


def _cpu(members: Sequence[Flow]) -> float | None:
    cpu = [f.sender_cpu_pct for f in members if f.sender_cpu_pct is not None]
    return max(cpu) if cpu else None


def flow_rows(items: Sequence[Flow]) -> list[RateRow]:
    """One row per test, case and sender rail -> receiver rail, over its repetitions."""
    groups: dict[tuple[str, str, str], list[Flow]] = {}
    for f in items:
        who = f"{_endpoint(f.sender, f.sender_rail)} -> {_endpoint(f.receiver, f.receiver_rail)}"
        groups.setdefault((f.test, f.case, who), []).append(f)
    return [RateRow(test, case, who, statistics.median(f.mpps for f in members), len(members),
                    *_totals(members), _cpu(members), any(f.sender_cpu_bound for f in members), 1)
            for (test, case, who), members in sorted(groups.items())]


def _median_of(sums: Mapping[tuple[str, int, int], float], role: str) -> float | None:
    values = [v for k, v in sums.items() if k[0] == role]
    return statistics.median(values) if values else None


def host_rows(items: Sequence[Flow]) -> list[RateRow]:
    """One row per test, case and host: what it sent, and what it received, in one round of one
    repetition, each summed over its rails (and peers); ``mpps`` is the median of all those sums,
    ``mpps_sent`` / ``mpps_received`` of each role's. Packets and drops are of every flow the
    host took part in; ``sender_cpu_bound`` only of the flows it sent."""
    groups: dict[tuple[str, str, str], dict[tuple[str, int, int], list[Flow]]] = {}
    for f in items:
        for role, host in (("sent", f.sender), ("received", f.receiver)):
            groups.setdefault((f.test, f.case, host), {}).setdefault((role, f.rep, f.round), []).append(f)
    out = []
    for (test, case, host), by_round in sorted(groups.items()):
        sums = {key: sum(f.mpps for f in fs) for key, fs in by_round.items()}
        members = list(dict.fromkeys(f for fs in by_round.values() for f in fs))
        sent = [f for f in members if f.sender == host]
        rails = {f.sender_rail if f.sender == host else f.receiver_rail for f in members}

        out.append(RateRow(test, case, host, statistics.median(sums.values()), len(sums), *_totals(members),
                           _cpu(sent), any(f.sender_cpu_bound for f in sent), len(rails),
                           _median_of(sums, "sent"), _median_of(sums, "received")))
    return out


def run_summary(run: RunDir) -> list[dict[str, Any]]:
    """One run in a comparison, per test and case: the median and the lowest host's Mpps, the
    packets and drops of its flows (each counted once), and how many flows a sender's CPU bounded;
    [] without message-rate samples."""
    items = flows(run)
    rows = host_rows(items)
    out = []
    for test, case in dict.fromkeys((r.test, r.case) for r in rows):
        mine = [r for r in rows if (r.test, r.case) == (test, case)]
        own = [f for f in items if (f.test, f.case) == (test, case)]
        low = min(mine, key=lambda r: r.mpps)
        packets, lost, loss = _totals(own)
        out.append({"test": test, "case": case, "hosts": len(mine),
                    "mpps_median": statistics.median(r.mpps for r in mine), "mpps_lowest": low.mpps,
                    "lowest_host": low.who, "packets": packets, "lost_packets": lost, "loss_pct": loss,
                    "flows": len(own), "sender_cpu_bound": sum(1 for f in own if f.sender_cpu_bound)})
    return out
