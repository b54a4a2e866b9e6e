"""Lab truth test of the offload check on real interfaces: `bench doctor` over real ssh probes each
lab host, whose veth answers the real `ethtool -k`; TSO and GSO turned off on h1's interface are
named on h1 only, with the fact and the expected value, and h2 (its offloads as veth leaves them)
passes. Real sshd in namespaces, real ethtool, the real probe and `bench` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import make_lab, need_programs

pytestmark = pytest.mark.lab


def test_doctor_names_tso_off_on_a_real_interface(tmp_path: Path) -> None:
    need_programs("ethtool")
    with make_lab("nicoff", 2) as info:
        h1 = next(h for h in info.hosts if h.name == "h1")
        subprocess.run(["ip", "netns", "exec", h1.netns, "ethtool", "-K", "eth0", "tso", "off", "gso", "off"],
                       check=True, capture_output=True, timeout=30)
        out = tmp_path / "doctor.json"
        res = subprocess.run([sys.executable, "-m", "benchharness", "doctor", f"hosts={info.inventory}",
                              f"out={out}"], capture_output=True, text=True, timeout=300)
        records = json.loads(out.read_text())["verdicts"]
    offloads = {r["host"]: r for r in records if r["check"] == "preflight.offloads"}
    assert set(offloads) == {"h1", "h2"}, res.stdout + res.stderr
    assert offloads["h1"]["status"] == "warn", offloads["h1"]
    assert (offloads["h1"]["observed"], offloads["h1"]["expected"]) == ("TSO, GSO off", "on")
    assert "ethtool -K eth0 tso on gso on" in offloads["h1"]["message"]
    assert offloads["h2"]["status"] == "pass", offloads["h2"]
    # a veth has no PCIe, IRQs or AER: nothing is said of them, and its RSS is "not available"
    assert not [r for r in records if r["check"] in ("preflight.pcie_bandwidth", "preflight.aer",
                                                      "preflight.irq_spread")]
    rss = {r["host"]: r for r in records if r["check"] == "preflight.rss"}
    assert rss["h2"]["status"] == "info" and "not available on veth" in rss["h2"]["message"]
    assert "WARN preflight.offloads h1" in res.stdout
