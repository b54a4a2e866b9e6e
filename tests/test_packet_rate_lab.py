"""Lab truth test of the packet-rate table: UDP 64 B from 2 paced iperf3 senders per flow in a ring
of 3 lab hosts (h1 -> h2 -> h3 -> h1, all at once, 2 repetitions of 2 s), h3's link shaped by tbf to
4 Mbit/s. Each flow offers about 19,500 packets/s (2 x 5 Mbit/s of 64 B payload); h3's link carries
about 4,700 (106 B per datagram on the wire). The report's "Packet rate per host" must show h3's
lower Mpps and the drops of the flow into it, and the unshaped host h1 without them.

Real sshd in namespaces, real iperf3, the real `bench run` and report."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchharness.results import packet_rate
from benchharness.results.store import RunDir
from tests.conftest import make_lab, need_programs, run_with_host_vars

pytestmark = pytest.mark.lab
SUITE = Path(__file__).parent / "fixtures" / "packet_rate" / "lab-udp-rate.yaml"


def _report_hosts(html: str) -> dict[str, dict[str, float]]:
    """host -> the Mpps and loss % cells of its row in the report's packet-rate table."""
    table = html.split('class="sortable packet-rate-hosts"')[1].split("</table>")[0]
    out = {}
    for host, row in re.findall(r'<tr data-host="([^"]+)">(.*?)</tr>', table, flags=re.S):
        mpps = re.search(r'class="n mpps" data-v="([^"]+)"', row)
        loss = re.search(r'class="n loss" data-v="([^"]+)"', row)
        assert mpps and loss, row
        out[host] = {"mpps": float(mpps.group(1)), "loss_pct": float(loss.group(1))}
    return out


def test_a_shaped_host_shows_fewer_mpps_and_drops_in_the_report(tmp_path: Path) -> None:
    need_programs("iperf3")
    with make_lab("prate", 3, shape={"h3": "4mbit"}) as info:
        out, res = run_with_host_vars(info, tmp_path, SUITE, {})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = {r.who: r for r in packet_rate.host_rows(packet_rate.flows(RunDir(out)))}
    assert set(rows) == {"h1", "h2", "h3"}, rows
    print({h: (round(r.mpps * 1e6), r.lost_packets, r.loss_pct) for h, r in rows.items()})
    assert all(r.n == 4 for r in rows.values())  # 2 repetitions x (sent, received)
    assert rows["h3"].mpps < 0.75 * min(rows["h1"].mpps, rows["h2"].mpps), rows
    flows = {r.who: r for r in packet_rate.flow_rows(packet_rate.flows(RunDir(out)))}
    into_h3 = flows["h2 -> h3"]
    assert into_h3.loss_pct is not None and into_h3.loss_pct > 20, into_h3  # offered ~4x what tbf passes
    assert into_h3.mpps < 0.75 * flows["h1 -> h2"].mpps
    html = (out / "report.html").read_text()
    assert "Packet rate per host" in html
    shown = _report_hosts(html)
    assert shown["h3"]["mpps"] == pytest.approx(rows["h3"].mpps)
    assert shown["h3"]["mpps"] < min(shown["h1"]["mpps"], shown["h2"]["mpps"])
    assert shown["h3"]["loss_pct"] > 10 and shown["h1"]["loss_pct"] < shown["h3"]["loss_pct"] / 2, shown
