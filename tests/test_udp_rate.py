"""UDP small-packet rate from several iperf3 senders: received Mpps and drops summed over the
processes of a flow, and whether a sender's core (iperf3's own CPU figure), not the NIC, set the
ceiling. Outputs are real iperf3 3.12 ``-J`` captures (tests/fixtures/iperf3, capture.sh there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchharness.tools import iperf3_parse
from benchharness.tools.iperf3 import sum_processes

FIXTURES = Path(__file__).parent / "fixtures" / "iperf3"


def _summary(name: str) -> dict:
    [rec] = [r for r in iperf3_parse.parse_output((FIXTURES / name).read_text()) if r["kind"] == "summary"]
    return rec


def test_a_sender_at_its_core_is_named_the_ceiling() -> None:
    doc = json.loads((FIXTURES / "udp_small.json").read_text())
    rec = _summary("udp_small.json")
    host_total = doc["end"]["cpu_utilization_percent"]["host_total"]
    assert host_total >= 90 and rec["sender_cpu_pct"] == host_total and rec["sender_cpu_bound"] is True
    s = doc["end"]["sum"]
    assert rec["msg_rate_mpps"] == pytest.approx((s["packets"] - s["lost_packets"]) / s["seconds"] / 1e6)


def test_reverse_takes_the_servers_cpu_as_the_senders() -> None:
    doc = json.loads((FIXTURES / "udp_reverse.json").read_text())
    rec = _summary("udp_reverse.json")
    assert rec["direction"] == "reverse"
    assert rec["sender_cpu_pct"] == doc["end"]["cpu_utilization_percent"]["remote_total"]
    assert rec["sender_cpu_bound"] is False


def test_several_senders_sum_packets_and_drops_and_keep_the_busiest_core() -> None:
    runs = [iperf3_parse.parse_output((FIXTURES / n).read_text()) for n in ("udp_small.json", "udp_reverse.json")]
    a, b = _summary("udp_small.json"), _summary("udp_reverse.json")
    out = sum_processes([[r for r in run if r["kind"] == "summary"] for run in runs], [5201, 5202])
    # different directions are summed apart; one forward sender: its own figures, bound
    [fwd] = [r for r in out if r["kind"] == "summary" and r["direction"] == "forward"]
    assert fwd["sender_cpu_bound"] is True and fwd["msg_rate_mpps"] == pytest.approx(a["msg_rate_mpps"])
    two = sum_processes([[a], [dict(a, sender_cpu_pct=40.0, sender_cpu_bound=False)]], [5201, 5202])
    [total] = [r for r in two if r["kind"] == "summary"]
    assert total["msg_rate_mpps"] == pytest.approx(2 * a["msg_rate_mpps"])
    assert total["lost_packets"] == 2 * a["lost_packets"] and total["packets"] == 2 * a["packets"]
    assert total["sender_cpu_pct"] == a["sender_cpu_pct"] and total["sender_cpu_bound"] is True
    assert [r["sender_cpu_bound"] for r in two if r["kind"] == "process"] == [True, False]
    assert b["kind"] == "summary"
