"""Packet rate per flow and per host (results/packet_rate.py), on a run directory written by the
real code: the real planner (2 hosts, 2 rails, iperf3 UDP 64 B from 2 processes per rail), the
real iperf3 adapter parsing real iperf3 3.12 captures (tests/fixtures/iperf3, capture.sh there),
the real store; then the run report and `bench compare` render it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchharness.config.suites import load_suite
from benchharness.core.model import CommandResult, Host, Rail
from benchharness.planning.plan import build_plan
from benchharness.report.compare import render_comparison
from benchharness.report.html import render_run_report
from benchharness.results import packet_rate
from benchharness.results.store import RunDir
from benchharness.tools import registry

IPERF3 = Path(__file__).parent / "fixtures" / "iperf3"
SUITE = """description: packet rate unit test
settings: {duration: 1, repeat: 2, base_port: 5201}
tests:
  - name: udp-64b-rate
    tool: iperf3
    pattern: pairs
    rails: aligned
    params: {protocol: udp, length: 64, bitrate: 0, streams: 2, parallel: processes}
"""


def _host(name: str, n: int) -> Host:
    return Host(name, f"192.0.2.{n}", data_ip=f"198.18.1.{n}", vars={"netdev": "eth1"},
                rails=tuple(Rail(i, netdev=f"eth{i + 1}", rdma_dev=f"mlx5_{i}", data_ip=f"198.18.{i + 1}.{n}")
                            for i in range(2)))


def _run(tmp: Path, capture: dict[str, str]) -> RunDir:
    """Every step of the plan, each client given the real capture of its rail (``capture``)."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "s.yaml").write_text(SUITE)
    suite = load_suite(str(tmp / "s.yaml"))
    plan = build_plan(suite, [_host("h1", 1), _host("h2", 2)])
    adapter = registry()["iperf3"]
    run = RunDir.create(tmp / "run")
    for rnd in plan.rounds:
        for step in rnd:
            text = (IPERF3 / capture[step.labels["rail"]]).read_text()
            results = [CommandResult(command=c, rc=0, stdout=text if c.role == "client" else "", stderr="",
                                     started=0.0, ended=1.0, stopped=c.role == "server")
                       for c in adapter.commands(step)]
            records = adapter.parse_step(step, results)
            run.append_samples({**r, "step": step.id, "test": step.test, "tool": step.tool, "rep": step.repetition,
                                "round": step.round, "pattern": step.pattern} for r in records)
            run.append_step({"step": step.id, "test": step.test, "tool": step.tool, "round": step.round,
                             "rep": step.repetition, "hosts": [h.name for h in step.hosts], "status": "ok",
                             "samples": len(records), "started": 0.0, "ended": 1.0})
    run.write_run_info({"run_id": tmp.name, "suite": {"name": "pr", "tests": [{"name": "udp-64b-rate"}]},
                        "hosts": ["h1", "h2"], "state": "complete", "labels": {"nic": tmp.name}})
    return run


def _end(name: str) -> dict:
    return json.loads((IPERF3 / name).read_text())["end"]


def test_host_rate_is_the_sum_of_its_rails_and_each_flow_the_sum_of_its_processes(tmp_path: Path) -> None:
    run = _run(tmp_path, {"rail0": "udp_small.json", "rail1": "udp_small.json"})
    s = _end("udp_small.json")["sum"]
    one = (s["packets"] - s["lost_packets"]) / s["seconds"] / 1e6  # one sender's delivered Mpps
    flows = packet_rate.flow_rows(packet_rate.flows(run))
    assert [f.who for f in flows] == ["h2.rail0 -> h1.rail0", "h2.rail1 -> h1.rail1"]  # the client sends
    for f in flows:
        assert f.mpps == pytest.approx(2 * one) and f.n == 2  # 2 processes; 2 repetitions
        assert f.packets == 2 * 2 * s["packets"] and f.lost_packets == 2 * 2 * s["lost_packets"]
        assert f.loss_pct == pytest.approx(100 * s["lost_packets"] / s["packets"])
        assert f.sender_cpu_bound is True  # the capture's sender ran at its core (host_total >= 90%)
    hosts = {h.who: h for h in packet_rate.host_rows(packet_rate.flows(run))}
    assert set(hosts) == {"h1", "h2"}
    h1, h2 = hosts["h1"], hosts["h2"]
    assert h2.mpps == pytest.approx(4 * one) and h2.mpps_sent == pytest.approx(4 * one) and h2.mpps_received is None
    assert h1.mpps_received == pytest.approx(4 * one) and h1.mpps_sent is None
    assert h2.rails == 2 and h2.n == 2 and h2.packets == 8 * s["packets"]
    assert h2.sender_cpu_bound is True and h1.sender_cpu_bound is False  # h1 sent nothing
    [summary] = packet_rate.run_summary(run)
    assert summary["flows"] == 4 and summary["sender_cpu_bound"] == 4
    assert summary["packets"] == 8 * s["packets"]  # each flow once, not once per host


def test_a_reverse_flow_is_sent_by_the_server_and_its_drops_stay_with_it(tmp_path: Path) -> None:
    run = _run(tmp_path, {"rail0": "udp_small.json", "rail1": "udp_reverse.json"})
    fwd, rev = _end("udp_small.json")["sum"], _end("udp_reverse.json")["sum"]
    flows = {f.who: f for f in packet_rate.flow_rows(packet_rate.flows(run))}
    assert set(flows) == {"h2.rail0 -> h1.rail0", "h1.rail1 -> h2.rail1"}
    back = flows["h1.rail1 -> h2.rail1"]
    assert back.lost_packets == 4 * rev["lost_packets"] and back.sender_cpu_bound is False
    assert back.mpps == pytest.approx(2 * (rev["packets"] - rev["lost_packets"]) / rev["seconds"] / 1e6)
    assert back.case.startswith("size=1400")  # the capture's own datagram length makes it a case of its own
    hosts = {(h.case, h.who): h for h in packet_rate.host_rows(packet_rate.flows(run))}
    h1_big, h1_small = hosts[(back.case, "h1")], hosts[(flows["h2.rail0 -> h1.rail0"].case, "h1")]
    assert h1_big.mpps_sent == pytest.approx(back.mpps) and h1_big.mpps_received is None
    assert h1_small.mpps_received == pytest.approx(flows["h2.rail0 -> h1.rail0"].mpps) and h1_small.mpps_sent is None
    assert h1_big.lost_packets == 4 * rev["lost_packets"] and h1_small.lost_packets == 4 * fwd["lost_packets"]
    assert h1_big.sender_cpu_bound is False and hosts[(h1_small.case, "h2")].sender_cpu_bound is True
    assert {r["case"] for r in packet_rate.run_summary(run)} == {back.case, h1_small.case}


def test_a_rate_without_packet_counts_is_not_zero_drops() -> None:
    rec = {"test": "rdma-msg-rate", "server": "h1", "client": "h2", "msg_rate_mpps": 12.5, "size_bytes": 64}
    [flow] = packet_rate.flows_of([rec, {**rec, "kind": "process"}, {**rec, "msg_rate_mpps": None}], ["size_bytes"])
    [row] = packet_rate.flow_rows([flow])
    assert (row.mpps, row.packets, row.lost_packets, row.loss_pct) == (12.5, None, None, None)
    assert row.case == "size=64"


def test_the_run_report_and_the_comparison_show_packet_rate(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", {"rail0": "udp_small.json", "rail1": "udp_small.json"})
    b = _run(tmp_path / "b", {"rail0": "udp_small.json", "rail1": "udp_reverse.json"})
    html = render_run_report(a).read_text()
    assert "Packet rate per host" in html and 'data-host="h2"' in html and "sender CPU bound" in html
    h2 = {h.who: h for h in packet_rate.host_rows(packet_rate.flows(a))}["h2"]
    assert f">{h2.packets}<" in html
    page = render_comparison([a, b], tmp_path / "c.html").read_text()
    assert "Packet rate per run" in page
    rows = page.split("runs-packet-rate")[1].split("</table>")[0]
    assert rows.count("<tr>") == 4  # a header; a row per run and case (b has two datagram lengths)
    assert "4 of 4 flows" in rows and "2 of 2 flows" in rows and "0 of 2 flows" in rows
    # format=json carries the same rows as the page's table, one per run and case
    import json

    from benchharness.report.exports import comparison_json

    doc = json.loads(json.dumps(comparison_json([a, b]), default=str))
    labels = [r["label"] for r in doc["runs"]]
    expected = [{"label": lab, **row} for lab, run in zip(labels, (a, b), strict=True)
                for row in packet_rate.run_summary(run)]
    assert doc["packet_rate"] == json.loads(json.dumps(expected)) and len(doc["packet_rate"]) == 3
    assert sum(r["sender_cpu_bound"] for r in doc["packet_rate"]) == 4 + 2
