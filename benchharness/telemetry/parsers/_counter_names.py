"""Which NIC / RDMA counters matter: PFC pauses per priority, ECN/CNP, discards, retransmissions.

Names follow the drivers: mlx5 (``rx_prio3_pause``, ``tx_pause_ctrl_phy``, ``rx_out_of_buffer``),
ice (``rx_priority_3_xoff.nic``, ``link_xoff_rx.nic``), bnxt_en (``rx_pfc_ena_frames_pri3``) and the
RDMA ``hw_counters`` of mlx5 (``np_cnp_sent``, ``rp_cnp_handled``, ``out_of_sequence`` ...), bnxt_re
(``to_retransmits``, ``seq_err_naks_rcvd``, ``oos_drop_count``, ``rx_roce_discards``: the kernel's
drivers/infiniband/hw/bnxt_re/hw_counters.c) and irdma (``cnpHandled``, ``cnpSent``,
``tcpRetransSegs``, ``ip4InDiscards``: drivers/infiniband/hw/irdma/verbs.c).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PRIO_PAUSE = [
    re.compile(r"^(rx|tx)_prio(\d)_pause$"),  # mlx5
    re.compile(r"^(rx|tx)_priority_(\d)_xoff(?:\.nic)?$"),  # ice, i40e
    re.compile(r"^(rx|tx)_pfc_ena_frames_pri(\d)$"),  # bnxt_en
]
_GLOBAL_PAUSE = [
    re.compile(r"^(rx|tx)_pause_ctrl_phy$"),  # mlx5
    re.compile(r"^link_xoff_(rx|tx)(?:\.nic)?$"),  # ice, i40e
    re.compile(r"^(rx|tx)_pause_frames$"),  # bnxt_en
    re.compile(r"^frames_(rx|tx)_pause$"),  # ionic (firmware port counters)
]
ECN_CNP = (
    "np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
    "rx_ecn_mark", "tx_cnp", "rx_cnp", "ecn_marked", "cnp_sent", "cnp_handled",
    "cnpHandled", "cnpIgnored", "cnpSent",  # irdma
)
RETRANSMISSION = (
    "out_of_sequence", "packet_seq_err", "local_ack_timeout_err", "duplicate_request",
    "implied_nak_seq_err", "rnr_nak_retry_err", "req_cqe_error", "resp_cqe_error",
    "roce_adp_retrans", "roce_slow_restart", "req_transport_retries_exceeded",
    "out_of_seq_request", "rcvd_seq_err", "retry_exceeded_err", "rcvd_rnr_err",
    # bnxt_re
    "to_retransmits", "seq_err_naks_rcvd", "max_retry_exceeded", "rnr_naks_rcvd", "missing_resp",
    "dup_req", "oos_drop_count",
    "tcpRetransSegs",  # irdma (iWARP)
)
#: per-queue names: mlx5 ``rx3_...``, ionic ``rx_0_dropped``, ena ``queue_0_...``, virtio ``rx_queue_0_...``,
#: gve ``rx_dropped_pkt[0]``, bnx2x / bnxt_en ``[3]: rx_discards``, be2net ``rxq0: rx_pkts``
_PER_QUEUE = re.compile(r"^(?:rx|tx|ch|xdp)\d+_|^(?:rx|tx)_\d+_|queue_\d+|_q\d+_|^rx_queue|^tx_queue|\[\d+\]$"
                        r"|^(?:\[\d+\]|[rt]xq\d+):\s")
_DISCARD = re.compile(r"discard|drop", re.IGNORECASE)
_BUFFER = re.compile(r"out_of_buffer|no_buffer|nobuf|rx_buff_alloc_err")
_ERRORS = re.compile(r"crc|symbol_err|fcs|_errors?$|_err_phy$|link_down_events|[a-z]Errors$")


_SOURCE_OBJECT = re.compile(r"^[a-z][a-z_]*:[^:\s]+:")


def base_name(key: str) -> str:
    """Counter name without a ``source:object:`` prefix (``ethtool:eth0:rx_crc`` -> ``rx_crc``); a
    name with a colon of its own keeps it (``ethtool:eth0:[3]: rx_discards`` -> ``[3]: rx_discards``,
    a queue's counter, not the port's ``rx_discards``)."""
    m = _SOURCE_OBJECT.match(key)
    return key[m.end():] if m else key


def highlights(counters: Mapping[str, Any]) -> dict[str, Any]:
    """The counters that explain a bad run, summed over objects by base name.

    ``pfc_pause`` maps rx/tx to ``{priority: count}``; ``global_pause`` rx/tx totals; ``ecn_cnp``,
    ``retransmission``, ``discards``, ``out_of_buffer`` and ``errors`` map counter names to values.
    Per-queue counters are left out of ``discards`` (their port-wide sums are kept).
    """
    out: dict[str, Any] = {
        "pfc_pause": {"rx": {}, "tx": {}}, "global_pause": {"rx": 0, "tx": 0},
        "ecn_cnp": {}, "retransmission": {}, "discards": {}, "out_of_buffer": {}, "errors": {},
    }

    def add(group: dict[str, Any], name: str, value: int) -> None:
        group[name] = group.get(name, 0) + value

    for key, raw in counters.items():
        if not isinstance(raw, int) or isinstance(raw, bool):
            continue
        name = base_name(key)
        matched = False
        for pattern in _PRIO_PAUSE:
            m = pattern.match(name)
            if m:
                add(out["pfc_pause"][m.group(1)], m.group(2), raw)
                matched = True
        for pattern in _GLOBAL_PAUSE:
            m = pattern.match(name)
            if m:
                out["global_pause"][m.group(1)] += raw
                matched = True
        if matched:
            continue
        if name in ECN_CNP or name.endswith("_marked"):
            add(out["ecn_cnp"], name, raw)
        elif name in RETRANSMISSION:
            add(out["retransmission"], name, raw)
        elif _BUFFER.search(name):
            add(out["out_of_buffer"], name, raw)
        elif _PER_QUEUE.search(name):
            continue
        elif _DISCARD.search(name):
            add(out["discards"], name, raw)
        elif _ERRORS.search(name):
            add(out["errors"], name, raw)
    return out
