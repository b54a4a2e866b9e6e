"""RSS hash fields (``ethtool -n DEV rx-flow-hash tcp4|udp4|tcp6|udp6``) read by the real probe,
judged per rail and against the peers, and learned by the golden configuration.

* Three MI300X-shaped synthetic hosts (tests/synthetic_hosts.py: a stand-in ethtool printing real
  published outputs, tests/fixtures/real/ethtool-rx-flow-hash), n3's rail 2 hashing UDP over IPv4
  on the IP addresses only: the peer check names exactly that rail, the golden configuration
  learns ``sdfn`` and lists n3's ``sd``.
* A lab host's veth, probed by the real probe with the real ethtool: the driver cannot answer, so
  the finding is ``info`` "not available on veth", never a pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.telemetry import golden
from benchharness.telemetry.host_checks import judge
from benchharness.telemetry.preflight import run_findings
from benchharness.telemetry.requirements import probe_tools_arg
from tests import synthetic_hosts as sh

PROBE = Path(__file__).parents[1] / "benchharness" / "onhost" / "probe.py"


def _fleet(tmp: Path) -> tuple[dict[str, Any], list[Any]]:
    facts, lines = {}, []
    for name in ("n1", "n2", "n3"):
        built = sh.build("mi300x", tmp / name, {2: "udp4_ip"} if name == "n3" else {})
        out = subprocess.run([sys.executable, str(PROBE), "--tools", probe_tools_arg(), "--root", str(built["tree"]),
                              "--path-prefix", str(built["bin"])], capture_output=True, text=True, timeout=120,
                             check=True)
        facts[name] = json.loads(out.stdout)
        lines.append(" ".join([name, "ansible_host=127.0.0.1",
                               *(f"{k}={v}" for k, v in sh.inventory_vars("mi300x", built).items())]))
    inv = tmp / "fleet.ini"
    inv.write_text("[gpu]\n" + "\n".join(lines) + "\n")
    inventory = load_inventory(inv)
    return facts, [inventory.host(n) for n in facts]


def test_a_rail_hashing_udp4_on_addresses_only_is_named_against_its_peers(tmp_path: Path) -> None:
    facts, hosts = _fleet(tmp_path)
    records = run_findings(facts, hosts)
    peers = [r for r in records if r["check"] == "preflight.rss_hash_peers"]
    bad = [r for r in peers if r["status"] != "pass"]
    assert [(r["host"], r["rail"], r["status"]) for r in bad] == [("n3", "rail2", "warn")], peers
    netdev = sh.inventory_vars("mi300x", {"tree": Path(), "bin": Path()})["netdev"].split(",")[2]
    assert bad[0]["message"].startswith(  # the synthetic NICs name no driver
        "n3 rail2: udp4 RSS hashes IP SA/DA only; peers also hash L4 ports (23 of 23 rails: sdfn)")
    assert f"ethtool -N {netdev} rx-flow-hash udp4 sdfn" in bad[0]["message"]
    assert (bad[0]["observed"], bad[0]["expected"]) == ("udp4 sd", "udp4 sdfn")
    # tcp4 is hashed on the ports everywhere: no finding for it; one pass for the driver's rails
    assert [r["status"] for r in peers if r["host"] is None] == []
    assert len([r for r in peers if r["status"] == "pass"]) == 0  # one odd rail: no "alike" pass
    # per rail: what it hashes, and the flow types the driver does not answer, never passed
    per_rail = {(r["host"], r["rail"]): r for r in records if r["check"] == "preflight.rss_hash"}
    assert len(per_rail) == 24
    ok = per_rail[("n1", "rail0")]
    assert ok["status"] == "info" and "tcp4 sdfn (IP SA/DA, L4 bytes 0 & 1, L4 bytes 2 & 3)" in ok["message"]
    assert "tcp6, udp6 not available on" in ok["message"]
    assert "udp4 sd (IP SA/DA)" in per_rail[("n3", "rail2")]["message"]

    learned = golden.learn(facts)
    group = next(iter(learned))
    assert learned[group][f"nic.{netdev}.rss_hash_udp4"].value == "sdfn"
    found = golden.deviations(facts, learned)
    assert [(d.host, d.fact, d.value, d.expected) for d in found] == [("n3", "rss_hash_udp4", "sd", "sdfn")]


def test_rails_that_agree_pass_once(tmp_path: Path) -> None:
    facts, hosts = _fleet(tmp_path)
    del facts["n3"]
    peers = [r for r in run_findings(facts, hosts[:2]) if r["check"] == "preflight.rss_hash_peers"]
    assert [r["status"] for r in peers] == ["pass"] and "16 " in peers[0]["message"]


@pytest.mark.lab
def test_a_veth_cannot_answer_and_is_info_not_available(tmp_path: Path) -> None:
    from tests.conftest import make_lab

    with make_lab("rxh", 1) as lab:
        h1 = lab.hosts[0]
        out = subprocess.run(["ip", "netns", "exec", h1.netns, sys.executable, str(PROBE), "--tools",
                              probe_tools_arg()], capture_output=True, text=True, timeout=120, check=True)
        host = load_inventory(lab.inventory).host("h1")
    facts = json.loads(out.stdout)
    nic = next(n for n in facts["nics"]["devices"] if n.get("driver") == "veth")
    reason = nic["ethtool_config"]["rx_flow_hash_udp4"]
    assert reason["available"] is False and "Operation not supported" in reason["reason"], reason
    assert f"ethtool -n {nic['netdev']} rx-flow-hash udp4" in reason["reason"]
    (finding,) = [f for f in judge(host, facts, required_tools=[]) if f.check == "rss_hash"]
    assert finding.status == "info", finding
    assert f"RSS hash fields (rx-flow-hash) of {nic['netdev']} not available on veth" in finding.message
