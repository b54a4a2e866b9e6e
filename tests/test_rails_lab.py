"""Rails on the loopback lab: 3 hosts with 2 NICs each, one NIC of one host slowed down.

Real sshd in namespaces, real iperf3, the real `bench` command. Every interface is shaped to
2 Gbit/s (unshaped veth pairs on a 2-core machine vary with the concurrent pair, which a
best-peer threshold would rightly flag) and h3's rail1 to 500 Mbit/s: all-pairs per rail must
name exactly h3.rail1, and the acceptance JUnit must fail only h3's rail1 testcases.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_lab

from benchharness.config.inventory import load_inventory
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SHAPE = {"h1": "2gbit", "h2": "2gbit", "h3": "2gbit", "h3.rail1": "500mbit"}


@pytest.fixture(scope="module")
def lab_rails() -> Iterator[LabInfo]:
    with make_lab("rl3", 3, shape=SHAPE, rails=2) as info:
        yield info


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_lab_hosts_have_one_interface_and_subnet_per_rail(lab_rails: LabInfo) -> None:
    inv = load_inventory(lab_rails.inventory)
    h3 = inv.host("h3")
    assert [(r.name, r.netdev, r.data_ip) for r in h3.rails] == [
        ("rail0", "eth1", h3.rails[0].data_ip), ("rail1", "eth2", h3.rails[1].data_ip)]
    subnets = {str(r.data_ip).rsplit(".", 1)[0] for h in inv.hosts for r in h.rails}
    assert len(subnets) == 2 and h3.address.rsplit(".", 1)[0] not in subnets  # own /24 per rail
    assert [r.line_rate_gbps for r in h3.rails] == [2, 0.5]
    assert h3.rails[1].serial == "LAB-h3-rail1"
    for host in lab_rails.hosts:
        out = subprocess.run(["ip", "-n", host.netns, "-o", "-4", "addr", "show"], capture_output=True,
                             text=True, check=True).stdout
        assert all(f" {dev} " in out for dev in ("eth0", "eth1", "eth2")), out


def test_rail_all_pairs_names_the_slow_rail_and_acceptance_fails_only_it(lab_rails: LabInfo,
                                                                         tmp_path: Path) -> None:
    out, xml = tmp_path / "run", tmp_path / "junit.xml"
    res = bench("run", "suite=rails", f"hosts={lab_rails.inventory}", "duration=2", f"junit={xml}", f"out={out}")
    assert res.returncode == 1, res.stdout + res.stderr  # the rail check fails: exit code 1
    assert "isolation: SUSPECT h3.rail1: h3.rail1 is in 2 of 2 bad pairs (h1.rail1-h3.rail1, h2.rail1-h3.rail1)" \
        in res.stdout, res.stdout
    assert "  suspect NIC: host h3, rail1, serial LAB-h3-rail1" in res.stdout
    run = RunDir(out)
    info = run.run_info()
    assert info["isolation"]["suspects"] == ["h3.rail1"]
    assert info["isolation"]["suspect_nics"] == [{"host": "h3", "rail": "rail1", "serial": "LAB-h3-rail1"}]

    summaries = [s for s in run.samples() if s.get("kind") == "summary" and not s.get("retest")]
    assert sorted({s["rail"] for s in summaries}) == ["rail0", "rail1"] and len(summaries) == 6
    slow = [s["bw_avg_gbps"] for s in summaries if "h3.rail1" in s["endpoints"].split(",")]
    fast = [s["bw_avg_gbps"] for s in summaries if "h3.rail1" not in s["endpoints"].split(",")]
    assert len(slow) == 2 and max(slow) < 0.6 < 1.5 < min(fast)

    roll = {(v["host"], v["rail"]): v["status"] for v in info["verdicts"] if v["check"] == "acceptance"}
    assert roll == {("h1", "rail0"): "pass", ("h1", "rail1"): "pass", ("h2", "rail0"): "pass",
                    ("h2", "rail1"): "pass", ("h3", "rail0"): "pass", ("h3", "rail1"): "fail", (None, None): "fail"}
    assert "  hosts FAILED: h3.rail1\n" in res.stdout
    page = (out / "report.html").read_text()
    assert "All-pairs bw_avg_gbps (median) at 128K, per rail" in page and ">h3.rail1<" in page

    root = ET.parse(xml).getroot()
    failing = [(s.get("name"), c.get("classname"), c.get("name")) for s in root.findall("testsuite")
               for c in s.findall("testcase") if c.find("failure") is not None]
    per_nic = [f for f in failing if not f[0].endswith(".run")]
    assert per_nic and all(suite == "rails.h3" and cls == "rails.h3.rail1" and name.startswith("rail1: ")
                           for suite, cls, name in per_nic), failing
    assert {f[0] for f in failing} == {"rails.h3", "rails.run"}
    cases = {(s.get("name"), c.get("name")) for s in root.findall("testsuite") for c in s.findall("testcase")}
    for host in ("h1", "h2", "h3"):  # one testcase per host and rail, for the roll-up and the check
        for rail in ("rail0", "rail1"):
            assert (f"rails.{host}", f"{rail}: acceptance") in cases
            assert (f"rails.{host}", f"{rail}: rail-bw: rail bandwidth vs best peer") in cases


def test_rails_auto_discovers_each_hosts_nics_over_ssh(lab_rails: LabInfo, tmp_path: Path) -> None:
    from benchharness.telemetry.discover import discover

    text = lab_rails.inventory.read_text()
    auto = tmp_path / "auto.ini"
    lines = []
    for line in text.splitlines():
        if line.startswith("h"):  # the host lines: rails=auto instead of the lists
            line = " ".join(w for w in line.split() if not w.startswith(("data_ip=", "netdev=", "nic_serial=",
                                                                            "nic_line_rate_gbps="))) + " rails=auto"
        lines.append(line)
    auto.write_text("\n".join(lines) + "\n")
    inv = load_inventory(auto)
    assert all(not h.rails and h.var("rails") == "auto" for h in inv.hosts)
    found = discover(inv.hosts)
    listed = load_inventory(lab_rails.inventory)
    for got, want in zip(found, listed.hosts, strict=True):
        assert [(r.name, r.netdev, r.data_ip) for r in got.rails] == \
            [(r.name, r.netdev, r.data_ip) for r in want.rails]
        assert got.data_ip == want.rails[0].data_ip
