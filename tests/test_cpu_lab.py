"""Lab truth test of CPU cost per GB: a host made to spend more CPU per byte (TSO, GSO and GRO off
on its interface, so its TCP builds and the stack carries MSS-sized packets instead of 64 KiB
ones) shows a higher CPU-s/GB than its peers with the same paced iperf3 traffic, and the
``cpu_vs_peers`` verdict names that host only.

Real sshd in namespaces (each in its own CPU cgroup), real iperf3, ethtool, the real `bench`
command and sampler."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchharness.lab import cgroups as lab_cgroups
from benchharness.results import cpu
from benchharness.results.store import RunDir
from tests.conftest import health_verdicts, make_lab, need_programs, run_with_host_vars

pytestmark = pytest.mark.lab
SUITE = Path(__file__).parent / "fixtures" / "cpu" / "lab-cpu.yaml"


def test_offloads_off_cost_more_cpu_per_gb_and_the_verdict_names_the_host(tmp_path: Path) -> None:
    need_programs("iperf3", "ethtool")
    with make_lab("cpu", 3) as info:
        h1 = next(h for h in info.hosts if h.name == "h1")
        subprocess.run(["ip", "netns", "exec", h1.netns, "ethtool", "-K", "eth0", "tso", "off", "gso", "off",
                        "gro", "off"], check=True, capture_output=True, timeout=30)
        out, res = run_with_host_vars(info, tmp_path, SUITE, {})
        assert res.returncode == 1, res.stdout + res.stderr  # 1: a verdict failed (h1)
        run = RunDir(out)
        hosts = {h: c for (_, h, _), c in cpu.per_host(cpu.cpu_rows(run)).items()}
        assert set(hosts) == {"h1", "h2", "h3"}, hosts
        assert {c.scope for c in hosts.values()} == {"cgroup"}  # each host's own CPU time
        cost = {h: c.cpu_s_per_gb for h, c in hosts.items()}
        assert all(v is not None and v > 0 for v in cost.values()), cost
        print("CPU-s/GB", cost)
        assert cost["h1"] > 1.4 * max(cost["h2"], cost["h3"]), cost  # type: ignore[operator]
        verdicts = health_verdicts(out)
        check = "health: CPU per GB vs peers"
        assert verdicts[(check, "h1")]["status"] == "fail", verdicts
        assert "h1" in verdicts[(check, "h1")]["message"]
        assert verdicts[(check, "h2")]["status"] == "pass" and verdicts[(check, "h3")]["status"] == "pass"
        html = (out / "report.html").read_text()
        assert "CPU cost per host" in html and "CPU use per host" in html
    # the lab's cgroups and their bind mount went with it
    assert not (lab_cgroups.V1_CPUACCT / "bench-lab" / info.name).exists()
    assert not (info.dir / lab_cgroups.MOUNT_DIR).exists()
