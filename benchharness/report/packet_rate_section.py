"""The "Packet rate per host" section of the single-run report: Mpps, packets and drops per host
(summed over its rails) and per flow (rail pair), from ``results/packet_rate.py``; shown only for
runs with ``msg_rate_mpps`` samples (perftest message-rate steps, iperf3 UDP)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from benchharness.results import packet_rate
from benchharness.results.store import RunDir


def packet_rate_section(run: RunDir) -> dict[str, Any] | None:
    """The section's data; None when no sample of the run carries a message rate."""
    flows = packet_rate.flows(run)
    if not flows:
        return None
    return {"hosts": [asdict(r) for r in packet_rate.host_rows(flows)],
            "flows": [asdict(r) for r in packet_rate.flow_rows(flows)],
            "bound": sum(1 for f in flows if f.sender_cpu_bound)}
