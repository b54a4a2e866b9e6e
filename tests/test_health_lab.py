"""Fabric health on the loopback lab, against known truth: real packet loss (nftables dropping 2%
of one host's TCP data packets as they enter the lab's bridge; the kernel has no netem) and a real
link flapped twice. The lossy host measured 19000-25000 retransmissions per million segments.

The traffic is paced (300 Mbit/s each way): unpaced, the veths saturate the 2 cores and softirq
backlog drops gave clean links thousands of retransmissions per million segments. Paced, the
clean hosts show 0-20 per million, against acceptance's limit of 100.

Real sshd in namespaces, real iperf3, the real `bench` command and sampler."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import need_programs

from benchharness.lab import control as lab
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SUITE = Path(__file__).parent / "fixtures" / "acceptance" / "lab-health.yaml"


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def health(run: Path, check: str) -> dict[str, dict]:
    """Host -> its verdict of one health check."""
    verdicts = RunDir(run).run_info()["verdicts"]
    return {v["host"]: v for v in verdicts if v["check"] == check}


def test_packet_loss_on_one_host_fails_its_retransmission_verdict(lab_maker, tmp_path: Path) -> None:
    need_programs("nft")
    out = tmp_path / "run"
    with lab_maker("hl1", 3) as info:
        h3 = next(h for h in info.hosts if h.name == "h3")
        # The loss is on the wire, not in h3's own stack: a packet dropped at h3's output hook is
        # reported to TCP at once and never counted as a retransmission. So 2% of the TCP data
        # packets h3 sends are dropped as they enter the lab's bridge, at the ingress of the
        # bridge's end of h3's link (a veth the lab created); ssh and pure ACKs are left alone.
        table = f"bhloss_{h3.veth}".replace("-", "_")
        subprocess.run(["nft", "add", "table", "netdev", table], check=True)
        try:
            subprocess.run(["nft", "add", "chain", "netdev", table, "in",
                            f"{{ type filter hook ingress device {h3.veth} priority 0; }}"], check=True)
            subprocess.run(["nft", "add", "rule", "netdev", table, "in", "ip", "protocol", "tcp",
                            "tcp", "sport", "!=", "22", "tcp", "dport", "!=", "22", "meta", "length", "gt", "200",
                            "numgen", "random", "mod", "100", "lt", "2", "drop"], check=True)
            res = bench("run", f"suite={SUITE}", f"hosts={info.inventory}", f"out={out}",
                        f"prom={tmp_path / 'bench.prom'}")
        finally:
            subprocess.run(["nft", "delete", "table", "netdev", table], check=False)
    assert res.returncode == 1, res.stdout + res.stderr
    got = health(out, "health: retransmissions")
    assert {h: v["status"] for h, v in got.items()} == {"h1": "pass", "h2": "pass", "h3": "fail"}, got
    assert "h3 [rail0 eth0]" in got["h3"]["message"] and "RetransSegs +" in got["h3"]["message"]
    assert got["h3"]["value"] > 100
    # the lab's veths expose no pause counters: said, not judged as zero
    pause = health(out, "health: pause share")
    assert all(v["status"] == "info" and "not exposed" in v["message"] for v in pause.values()), pause
    assert "  hosts FAILED: h3\n" in res.stdout
    assert 'host="h3"' in (tmp_path / "bench.prom").read_text()


def test_link_flapped_twice_during_a_step_fails_its_link_verdict(lab_maker, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with lab_maker("hl2", 2) as info:
        veth = next(h.veth for h in info.hosts if h.name == "h2")  # the bridge's end of h2's link

        def flap() -> None:
            deadline = time.monotonic() + 120
            # wait for the step's iperf3 client on h2; the step's sampler starts beside it and its
            # start snapshot, which the flaps must follow, takes a python start-up (slow on a
            # loaded machine)
            while time.monotonic() < deadline:
                if lab.lab_processes(info.name, r"iperf3 .*-c ", base_dir=info.dir.parent).get("h2"):
                    break
                time.sleep(0.2)
            time.sleep(2.0)
            for _ in range(2):
                subprocess.run(["ip", "link", "set", veth, "down"], check=True)
                time.sleep(0.3)
                subprocess.run(["ip", "link", "set", veth, "up"], check=True)
                time.sleep(0.5)

        flapper = threading.Thread(target=flap)
        flapper.start()
        res = bench("run", f"suite={SUITE}", f"hosts={info.inventory}", f"out={out}", "duration=10")
        flapper.join(130)
    got = health(out, "health: link flaps")
    assert {h: v["status"] for h, v in got.items()} == {"h1": "pass", "h2": "fail"}, res.stdout + res.stderr
    assert "carrier_down_count +2" in got["h2"]["message"] and got["h2"]["value"] == 2
    counters = json.loads(next((out / "telemetry" / "counters").glob("*.json")).read_text())
    assert counters["h2"]["counters"]["link:eth0:carrier_changes"] == 4
