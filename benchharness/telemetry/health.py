"""Fabric health judged from one step's counter deltas, per host and rail: limits and the judge.

A test's ``health:`` block (suites) sets limits; each is optional and unset means "not judged"::

    health:
      pause_share: 5%          # per priority (and link-level pause), rx and tx, of the step's time
      ecn_per_gb: 2000         # CNP / ECN marks per GB moved on the rail
      retrans_per_mpkt: 100    # retransmissions, out-of-sequence, timeouts per million packets
      discards_per_mpkt: 10    # discards per million packets
      out_of_buffer_per_mpkt: 10
      link_flaps: 0            # link-down events / carrier losses during the step
      symbol_errors: 0
      fec_uncorrected: 0       # FEC blocks that could not be corrected
      pre_fec_ber: 1e-8        # corrected bits / received bits (mlx5 rx_corrected_bits_phy / rx_bits_phy)
      pcie_errors: 0           # the NIC's PCIe link retrained for signal integrity (mlx5 *_pci_signal_integrity)
      pcie_stall_s: 0          # seconds the NIC lacked PCIe credits over 30% of the time (mlx5 outbound_pci_stalled_*_events)
      status: fail             # fail (default) or warn

``judge(counters, ...)`` takes the counters of one rail (``source:object:name`` -> delta) and
returns one ``Judged`` per limit: ``fail``/``warn`` over the limit, ``pass`` within it, and
``info`` when the driver exposes no counter of that kind - a counter that is absent is never read
as zero. Pure functions; the run directory side is ``results/health.py``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchharness.telemetry import counter_map
from benchharness.telemetry.load import LOAD_KEYS, LOAD_LIMITS, parse_load
from benchharness.telemetry.parsers._counter_names import base_name

#: Pause quanta: 512 bit times each; a pause frame asks for at most 65535 of them (IEEE 802.3
#: Annex 31B / 802.1Qbb). Frames x 65535 x 512 / link speed is an upper bound of the paused time.
QUANTUM_BITS = 512
MAX_QUANTA = 65535

LIMIT_KEYS = ("pause_share", "ecn_per_gb", "retrans_per_mpkt", "discards_per_mpkt",
              "out_of_buffer_per_mpkt", "link_flaps", "symbol_errors", "fec_uncorrected", "pre_fec_ber",
              "pcie_errors", "pcie_stall_s")
HEALTH_KEYS = (*LIMIT_KEYS, *LOAD_KEYS, "status")
#: What each limit is called in verdicts (``health: <label>``).
LABELS = {"pause_share": "pause share", "ecn_per_gb": "ECN/CNP marks", "retrans_per_mpkt": "retransmissions",
          "discards_per_mpkt": "discards", "out_of_buffer_per_mpkt": "out of buffer",
          "link_flaps": "link flaps", "symbol_errors": "symbol errors", "fec_uncorrected": "FEC uncorrected",
          "pre_fec_ber": "pre-FEC BER", "pcie_errors": "PCIe errors", "pcie_stall_s": "PCIe stalls"}

# ---------------------------------------------------------------- counter families (by base name)

_PAUSE_DURATION = re.compile(r"^(rx|tx)_prio(\d)_pause_duration$|^(rx|tx)_pause_duration(?:_phy)?$")  # mlx5, us
_PAUSE_FRAMES = [
    re.compile(r"^(rx|tx)_prio(\d)_pause$"),  # mlx5
    re.compile(r"^(rx|tx)_priority_(\d)_xoff(?:\.nic)?$"),  # ice, i40e
    re.compile(r"^(rx|tx)_pfc_ena_frames_pri(\d)$"),  # bnxt_en
    re.compile(r"^(rx|tx)_pause_ctrl_phy$"),  # mlx5 link-level
    re.compile(r"^link_xoff_(rx|tx)(?:\.nic)?$"),  # ice, i40e link-level
    re.compile(r"^(rx|tx)_pause_frames$"),  # bnxt_en link-level
]
ECN = frozenset({
    "np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rx_ecn_mark", "tx_cnp", "rx_cnp",
    "ecn_marked", "cnp_sent", "cnp_handled", "cnpHandled", "cnpSent",
})
#: Retransmissions, out-of-sequence and timeouts: mlx5 / bnxt_re / irdma hw_counters, rxe
#: (drivers/infiniband/sw/rxe/rxe_hw_counters.c) and the host's TCP (/proc/net/snmp).
RETRANS = frozenset({
    # mlx5
    "out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "duplicate_request",
    "implied_nak_seq_err", "rnr_nak_retry_err", "roce_adp_retrans", "roce_slow_restart",
    "req_transport_retries_exceeded",
    # rxe
    "out_of_seq_request", "rcvd_seq_err", "retry_exceeded_err", "retry_rnr_exceeded_err",
    "completer_retry_err", "rcvd_rnr_err", "send_rnr_err",
    # bnxt_re, irdma
    "to_retransmits", "seq_err_naks_rcvd", "max_retry_exceeded", "rnr_naks_rcvd", "missing_resp",
    "dup_req", "oos_drop_count", "tcpRetransSegs",
    # TCP of the host (sampler: tcp:-:RetransSegs)
    "RetransSegs",
})
_DISCARD = re.compile(r"^(?:rx|tx)_discards_phy$|^rx_prio\d_(?:buf|cong)_discard$|^(?:rx|tx)_dropped$|"
                      r"^rx_roce_discards$|^ip[46]InDiscards$|^port_(?:rcv|xmit)_discards$|"
                      r"^(?:rx|tx)_(?:discards|drops?)(?:\.nic)?$")
_BUFFER = re.compile(r"out_of_buffer|no_buffer|nobuf|rx_buff_alloc_err")
_LINK = ("carrier_down_count", "link_down_events_phy", "link_downed", "carrier_changes")
_SYMBOL = re.compile(r"^(?:rx_)?(?:pcs_)?symbol_err(?:or)?s?(?:_phy)?$")
_FEC_UNCORRECTED = re.compile(r"fec_uncorrect|uncorrectable_blocks|rx_fec_uncorr")
#: mlx5 (Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst): PCIe
#: physical-layer errors (transitions to recovery on framing and CRC errors), and the seconds in
#: which outbound reads / writes were stalled for lack of PCIe credits more than 30% of the time.
_PCIE_ERRORS = re.compile(r"^(?:rx|tx)_pci_signal_integrity$")
_PCIE_STALLS = re.compile(r"^outbound_pci_stalled_(?:rd|wr)_events$")
_FEC_CORRECTED_BITS = "rx_corrected_bits_phy"
_RX_BITS = "rx_bits_phy"
_PER_QUEUE = re.compile(r"^(?:rx|tx|ch|xdp)\d+_|queue_\d+|_q\d+_")


class HealthError(ValueError):
    """A malformed ``health:`` block; ``key`` names the offending key (for the file:line)."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or value is None:
        raise HealthError(key, f"health: {key} must be a number, not {value!r}")
    text = str(value).strip()
    try:
        number = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        raise HealthError(key, f"health: {key} must be a number (or a share like 5%), not {value!r}") from None
    if number < 0 or math.isnan(number):
        raise HealthError(key, f"health: {key} must not be negative: {value!r}")
    if key == "pause_share" and number > 1:
        raise HealthError(key, f"health: pause_share is a share of the step's time (0..100%), not {value!r}")
    return number


def parse_health(raw: Any) -> dict[str, Any]:
    """The validated limits of a ``health:`` mapping as plain data (floats, ``status``)."""
    if not isinstance(raw, Mapping):
        raise HealthError(None, "health: must be a mapping of limits, e.g. {pause_share: 5%, link_flaps: 0}")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in HEALTH_KEYS:
            raise HealthError(str(key), f"health: unknown key {key!r}; allowed: {', '.join(HEALTH_KEYS)}")
        if key == "status":
            if value not in ("fail", "warn"):
                raise HealthError(key, f"health: status must be fail or warn, not {value!r}")
            out[key] = value
        elif key in LOAD_KEYS:
            try:
                out[key] = parse_load(str(key), value)
            except ValueError as exc:
                raise HealthError(str(key), f"health: {exc}") from None
        else:
            out[key] = _number(str(key), value)
    if not any(k in out for k in (*LIMIT_KEYS, *LOAD_LIMITS)):
        raise HealthError(None, f"health: needs at least one limit ({', '.join((*LIMIT_KEYS, *LOAD_LIMITS))})")
    return out


# ---------------------------------------------------------------- the judge

@dataclass(frozen=True)
class Judged:
    """One limit judged on one rail in one step."""

    limit: str  # a LIMIT_KEYS name
    status: str  # fail | warn | pass | info
    value: float | None
    bound: float | None
    counter: str | None  # the counter (or counters) that decided it
    delta: int | None
    message: str


def _sum(counters: Mapping[str, int], names: set[str]) -> tuple[int, list[str]]:
    keys = [k for k in counters if base_name(k) in names]
    return sum(int(counters[k]) for k in keys), keys


def traffic(counters: Mapping[str, int]) -> tuple[int | None, int | None, str]:
    """(bytes, packets, source) moved on a rail: the largest of the PHY, IB port, netdev and rxe
    counters (RDMA bypasses the netdev's statistics; the PHY counters see everything)."""
    by_name: dict[str, int] = {}
    for key, value in counters.items():
        name = ("ib." if key.startswith("ib:") else "") + base_name(key)
        by_name[name] = by_name.get(name, 0) + int(value)
    candidates = [
        ("PHY counters", ("rx_bytes_phy", "tx_bytes_phy"), ("rx_packets_phy", "tx_packets_phy"), 1),
        ("IB port counters", ("ib.port_rcv_data", "ib.port_xmit_data"),
         ("ib.port_rcv_packets", "ib.port_xmit_packets"), 4),
        ("netdev statistics", ("rx_bytes", "tx_bytes"), ("rx_packets", "tx_packets"), 1),
        ("ionic RDMA counters", ("rx_rdma_ucast_bytes", "tx_rdma_ucast_bytes"),
         ("rx_rdma_ucast_pkts", "tx_rdma_ucast_pkts"), 1),  # telemetry/counter_map.py
        ("ionic port counters", ("octets_rx_ok", "octets_tx_ok"), ("frames_rx_ok", "frames_tx_ok"), 1),
        ("rxe counters", (), ("sent_pkts", "rcvd_pkts"), 1),
    ]
    nbytes: int | None = None
    pkts: int | None = None
    source = ""
    for name, byte_names, pkt_names, factor in candidates:
        if any(n in by_name for n in byte_names):
            nbytes = max(nbytes or 0, sum(by_name.get(n, 0) for n in byte_names) * factor)
        if any(n in by_name for n in pkt_names):
            here = sum(by_name.get(n, 0) for n in pkt_names)
            if pkts is None or here > pkts:
                pkts, source = here, name
    return nbytes, pkts, source


def _over(value: float, bound: float) -> bool:
    return value > bound * (1 + 1e-9)


def _pause(counters: Mapping[str, int], seconds: float, speed_gbps: float | None,
           bound: float) -> tuple[list[tuple[float, str, int, str]], bool]:
    """(share, counter, delta, how) per pause counter; and whether any pause counter exists."""
    durations: dict[tuple[str, str], tuple[str, int]] = {}
    frames: dict[tuple[str, str], tuple[str, int]] = {}
    for key, value in counters.items():
        name = base_name(key)
        m = _PAUSE_DURATION.match(name)
        if m:
            direction, prio = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), "link")
            durations[(direction, prio)] = (key, int(value))
            continue
        if mslot := counter_map.pause_slot(name):  # ionic, ...: telemetry/counter_map.py
            (durations if mslot[0] == "pause_us" else frames)[(mslot[1], mslot[2])] = (key, int(value))
            continue
        for pattern in _PAUSE_FRAMES:
            fm = pattern.match(name)
            if fm:
                prio = fm.group(2) if fm.lastindex and fm.lastindex >= 2 else "link"
                frames[(fm.group(1), prio)] = (key, int(value))
    found = bool(durations or frames)
    out = []
    for key, value in durations.values():
        out.append((value / 1e6 / seconds, key, value, "pause duration (us) from the driver"))
    for slot, (key, value) in frames.items():
        if slot[1] == "all" and any(d == slot[0] and p != "link" for d, p in durations):
            continue  # PFC frames of all priorities together: the per-priority times say more
        if slot in durations or speed_gbps is None or speed_gbps <= 0:
            if slot not in durations and value:
                out.append((math.nan, key, value, "frames only and the link speed is unknown"))
            continue
        paused = value * MAX_QUANTA * QUANTUM_BITS / (speed_gbps * 1e9)
        out.append((paused / seconds, key, value,
                    f"upper bound: frames x {MAX_QUANTA} quanta x {QUANTUM_BITS} bit times at {speed_gbps:g} Gbit/s"))
    return out, found


def judge(counters: Mapping[str, int], limits: Mapping[str, Any], *, seconds: float,
          speed_gbps: float | None = None, driver: str | None = None,
          tcp_segments: int | None = None, ip_packets: int | None = None) -> list[Judged]:
    """Each limit of ``limits`` on one rail's counter deltas over a step of ``seconds``.

    ``tcp_segments``: TCP segments sent in the step (the denominator for TCP retransmissions).
    ``ip_packets``: IP packets sent (every protocol's), where TCP's own count is missing (a pasted
    ``netstat -s | grep``): an upper bound of the segments, so the rate it gives is a lower bound,
    which fails when it is over the limit and judges nothing when it is not.
    """
    bad = str(limits.get("status", "fail"))
    who = driver or "this driver"
    nbytes, pkts, source = traffic(counters)
    out: list[Judged] = []

    def missing(limit: str, what: str) -> None:
        out.append(Judged(limit, "info", None, limits[limit], None, None,
                          f"{what}: not exposed by {who}; not judged (absent, not zero)"))

    def verdict(limit: str, value: float, counter: str, delta: int, text: str) -> None:
        bound = float(limits[limit])
        status = bad if _over(value, bound) else "pass"
        cmp = ">" if status != "pass" else "≤"
        out.append(Judged(limit, status, value, bound, counter, delta,
                          f"{counter} +{delta} in {seconds:.3g} s: {text} {cmp} limit {bound:g}"))

    for limit in LIMIT_KEYS:
        if limit not in limits:
            continue
        if limit == "pause_share":
            shares, found = _pause(counters, max(seconds, 1e-9), speed_gbps, float(limits[limit]))
            if not found:
                missing(limit, "no pause counters")
                continue
            known = [s for s in shares if not math.isnan(s[0])]
            if not known:
                unknown = [s for s in shares if math.isnan(s[0])]
                if unknown:
                    s = unknown[0]
                    out.append(Judged(limit, "info", None, limits[limit], s[1], s[2],
                                      f"{s[1]} +{s[2]} pause frames but no link speed known: share not judged"))
                else:
                    out.append(Judged(limit, "pass", 0.0, float(limits[limit]), None, 0,
                                      "no pause frames or pause time in the step"))
                continue
            share, key, delta, how = max(known, key=lambda s: s[0])
            verdict(limit, share, key, delta, f"paused {share:.2%} of the time ({how})")
        elif limit == "ecn_per_gb":
            total, keys = _sum(counters, set(ECN) | {base_name(k) for k in counters
                                                     if (base_name(k).endswith("_marked")
                                                         and not _PER_QUEUE.search(base_name(k)))
                                                     or counter_map.in_family("ecn", base_name(k))})
            if not keys:
                missing(limit, "no ECN/CNP counters")
            elif not nbytes:
                out.append(Judged(limit, "info", None, limits[limit], ", ".join(map(base_name, keys)), total,
                                  f"{total} ECN/CNP marks but no byte counter: not normalized, not judged"))
            else:
                gb = nbytes / 1e9
                verdict(limit, total / gb, _names(keys, counters), total,
                        f"{total / gb:.4g} marks per GB over {gb:.3g} GB ({source})")
        elif limit == "retrans_per_mpkt":
            total, keys = _sum(counters, set(RETRANS) | {base_name(k) for k in counters
                                                         if counter_map.in_family("retrans", base_name(k))})
            if not keys:
                missing(limit, "no retransmission / out-of-sequence / timeout counters")
                continue
            tcp_only = all(base_name(k) == "RetransSegs" for k in keys)
            if tcp_only and not tcp_segments and ip_packets and total:
                per = total / ip_packets * 1e6
                if _over(per, float(limits[limit])):
                    verdict(limit, per, _names(keys, counters), total,
                            f"at least {per:.4g} per million TCP segments sent (their count is not in the "
                            f"snapshots; IP packets sent, {ip_packets}, bound it from above)")
                else:
                    out.append(Judged(limit, "info", None, limits[limit], _names(keys, counters), total,
                                      f"{_names(keys, counters)} +{total}: at least {per:.4g} per million TCP "
                                      f"segments (bounded by IP packets sent, {ip_packets}); TCP's own count is "
                                      "not in the snapshots: not judged"))
                continue
            denom = tcp_segments if tcp_only and tcp_segments else pkts
            what = "TCP segments sent" if tcp_only and tcp_segments else f"packets ({source})"
            if not denom:
                if total:
                    out.append(Judged(limit, bad, float(total), float(limits[limit]), _names(keys, counters), total,
                                      f"{_names(keys, counters)} +{total} with no packet counter to normalize"))
                else:
                    out.append(Judged(limit, "pass", 0.0, float(limits[limit]), _names(keys, counters), 0,
                                      f"{_names(keys, counters)} +0 (no packets counted)"))
                continue
            per = total / denom * 1e6
            verdict(limit, per, _names(keys, counters), total, f"{per:.4g} per million {what} ({denom})")
        elif limit in ("discards_per_mpkt", "out_of_buffer_per_mpkt"):
            rx = _DISCARD if limit == "discards_per_mpkt" else _BUFFER
            fam = "discards" if limit == "discards_per_mpkt" else "out_of_buffer"
            names = {base_name(k) for k in counters if (rx.search(base_name(k)) and not _PER_QUEUE.search(base_name(k)))
                     or counter_map.in_family(fam, base_name(k))}
            total, keys = _sum(counters, names)
            if not keys:
                missing(limit, "no discard counters" if limit == "discards_per_mpkt" else "no out-of-buffer counters")
            elif not pkts:
                st = bad if total and _over(float(total), float(limits[limit])) else "pass"
                out.append(Judged(limit, st, float(total), float(limits[limit]), _names(keys, counters), total,
                                  f"{_names(keys, counters)} +{total} (no packet counter to normalize)"))
            else:
                per = total / pkts * 1e6
                verdict(limit, per, _names(keys, counters), total, f"{per:.4g} per million packets ({source})")
        elif limit == "link_flaps":
            got = None
            for name in _LINK:
                total, keys = _sum(counters, {name})
                if keys:
                    flaps = (total + 1) // 2 if name == "carrier_changes" else total
                    got = (flaps, _names(keys, counters), total)
                    break
            if got is None:
                missing(limit, "no link-down / carrier counters")
            else:
                flaps, key, total = got
                verdict(limit, float(flaps), key, total, f"{flaps} link flap(s)")
        elif limit == "symbol_errors":
            names = {base_name(k) for k in counters if _SYMBOL.match(base_name(k))}
            total, keys = _sum(counters, names)
            if not keys:
                missing(limit, "no symbol error counters")
            else:
                verdict(limit, float(total), _names(keys, counters), total, f"{total} symbol errors")
        elif limit == "fec_uncorrected":
            names = {base_name(k) for k in counters if _FEC_UNCORRECTED.search(base_name(k))}
            total, keys = _sum(counters, names)
            if not keys:
                missing(limit, "no uncorrectable-FEC counters")
            else:
                verdict(limit, float(total), _names(keys, counters), total, f"{total} uncorrectable FEC blocks")
        elif limit in ("pcie_errors", "pcie_stall_s"):
            rx = _PCIE_ERRORS if limit == "pcie_errors" else _PCIE_STALLS
            total, keys = _sum(counters, {base_name(k) for k in counters if rx.match(base_name(k))})
            if not keys:
                missing(limit, "no PCIe signal-integrity counters" if limit == "pcie_errors"
                        else "no PCIe outbound-stall counters")
            else:
                verdict(limit, float(total), _names(keys, counters), total,
                        f"{total} PCIe link recoveries" if limit == "pcie_errors"
                        else f"{total} s stalled for PCIe credits over 30% of the time")
        elif limit == "pre_fec_ber":
            corrected, ckeys = _sum(counters, {_FEC_CORRECTED_BITS})
            bits, bkeys = _sum(counters, {_RX_BITS})
            if not ckeys:
                missing(limit, "no FEC corrected-bits counter")
                continue
            if not bkeys:
                rx_bytes, rkeys = _sum(counters, {"rx_bytes_phy"})
                bits = rx_bytes * 8 if rkeys else 0
            if not bits and not corrected:
                out.append(Judged(limit, "pass", 0.0, float(limits[limit]), _FEC_CORRECTED_BITS, 0,
                                  f"{_FEC_CORRECTED_BITS} +0 and no bits received in the step"))
                continue
            if not bits:
                out.append(Judged(limit, "info", None, limits[limit], _FEC_CORRECTED_BITS, corrected,
                                  f"{_FEC_CORRECTED_BITS} +{corrected} but no received-bits counter: BER not judged"))
                continue
            ber = corrected / bits
            verdict(limit, ber, _FEC_CORRECTED_BITS, corrected,
                    f"pre-FEC BER {ber:.3g} over {bits:.3g} bits ({_RX_BITS if bkeys else 'rx_bytes_phy x 8'})")
    return out


def _names(keys: list[str], counters: Mapping[str, int]) -> str:
    """The counters that count, biggest first (``rx_prio3_pause``; ``a+b`` when several)."""
    ordered = sorted(keys, key=lambda k: -int(counters[k]))
    names = list(dict.fromkeys(base_name(k) for k in ordered if counters[k])) or [base_name(ordered[0])]
    return "+".join(names[:3]) + ("+..." if len(names) > 3 else "")


def rail_objects(netdev: str | None, rdma_dev: str | None, rdma_port: int | None) -> list[str]:
    """The counter objects of one rail (``eth2``, ``mlx5_2/1``)."""
    return [o for o in (netdev, f"{rdma_dev}/{rdma_port or 1}" if rdma_dev else None) if o]


def split_rails(counters: Mapping[str, int], objects: Mapping[str, list[str]],
                step_rails: list[str]) -> dict[str | None, dict[str, int]]:
    """Counters per rail; host-wide ones (TCP) go to the step's rail when it used one, else to None."""
    owner = {o: rail for rail, objs in objects.items() for o in objs}
    out: dict[str | None, dict[str, int]] = {}
    shared: dict[str, int] = {}
    for key, value in counters.items():
        parts = key.split(":")
        rail = owner.get(parts[1]) if len(parts) >= 3 else None
        if rail is not None:
            out.setdefault(rail, {})[key] = value
        else:
            shared[key] = value
    if shared:
        target = step_rails[0] if len(step_rails) == 1 else (next(iter(objects)) if len(objects) == 1 else None)
        out.setdefault(target, {}).update(shared)
    return out


def snapshot_seconds(sampler_output: str) -> float | None:
    """Seconds between the sampler's start and end counter snapshots (their ``ts``), if both exist."""
    from benchharness.telemetry.parsers.sampler import read_sampler

    times = {s.phase: s.ts for s in read_sampler(sampler_output).snapshots}
    if "start" in times and "end" in times and times["end"] > times["start"]:
        return times["end"] - times["start"]
    return None


def step_context(host: Any, step: Any, seconds: float | None) -> dict[str, Any]:
    """What the health judge needs beside a host's counter delta: the step's test and length, each
    rail's counter objects and serial, and the rails of this host that the step used."""
    rails = {r.name: {"objects": rail_objects(r.netdev, r.rdma_dev, r.rdma_port), "netdev": r.netdev,
                      "rdma_dev": r.rdma_dev, "serial": r.serial} for r in host.nics()}
    used = [h.var("rail") for h in step.hosts if h.name == host.name and h.var("rail")]
    return {"test": step.test, "seconds": seconds, "rails": rails, "step_rails": list(dict.fromkeys(used))}


#: The counter families the report shows per rail, in its column order.
FAMILIES = ("pause_us", "pause_frames", "ecn", "retrans", "discards", "out_of_buffer", "symbol_errors",
            "fec_uncorrected", "link_flaps", "pcie_errors", "pcie_stall_s")


def families(counters: Mapping[str, int]) -> dict[str, int | None]:
    """Each family's summed delta on one rail (``FAMILIES``); None where the driver exposes no
    counter of that family (absent, never zero). Pause time in microseconds (mlx5), frames elsewhere."""
    names = {base_name(k) for k in counters}
    out: dict[str, int | None] = dict.fromkeys(FAMILIES)

    def add(family: str, wanted: set[str]) -> None:
        total, keys = _sum(counters, wanted)
        if keys:
            out[family] = total

    mapped = {n: (counter_map.pause_slot(n), {r.family for r in counter_map.family_of(n)}) for n in names}
    add("pause_us", {n for n in names if _PAUSE_DURATION.match(n) or "pause_us" in mapped[n][1]})
    add("pause_frames", {n for n in names if any(p.match(n) for p in _PAUSE_FRAMES) or "pause_frames" in mapped[n][1]})
    add("ecn", {n for n in names if n in ECN or (n.endswith("_marked") and not _PER_QUEUE.search(n))
                or "ecn" in mapped[n][1]})
    add("retrans", {n for n in names if n in RETRANS or "retrans" in mapped[n][1]})
    add("discards", {n for n in names if (_DISCARD.search(n) and not _PER_QUEUE.search(n)) or "discards" in mapped[n][1]})
    add("out_of_buffer", {n for n in names if (_BUFFER.search(n) and not _PER_QUEUE.search(n))
                          or "out_of_buffer" in mapped[n][1]})
    add("symbol_errors", {n for n in names if _SYMBOL.match(n)})
    add("fec_uncorrected", {n for n in names if _FEC_UNCORRECTED.search(n)})
    add("pcie_errors", {n for n in names if _PCIE_ERRORS.match(n)})
    add("pcie_stall_s", {n for n in names if _PCIE_STALLS.match(n)})
    for name in _LINK:
        total, keys = _sum(counters, {name})
        if keys:
            out["link_flaps"] = (total + 1) // 2 if name == "carrier_changes" else total
            break
    return out


def pause_seconds(counters: Mapping[str, int], speed_gbps: float | None) -> float | None:
    """Paused time on one rail over an interval: the largest direction/priority's pause duration
    (mlx5, us), else frames x 65535 quanta x 512 bit times at the link speed (an upper bound);
    None when no pause counter is exposed or only frames with an unknown speed."""
    shares, found = _pause(counters, 1.0, speed_gbps, 1.0)
    known = [s[0] for s in shares if not math.isnan(s[0])]
    if not found:
        return None
    if known:
        return max(known)
    return None if shares else 0.0
