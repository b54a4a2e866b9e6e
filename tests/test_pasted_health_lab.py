"""``bench health BEFORE AFTER seconds=N`` on snapshots taken by hand on lab hosts around a real run,
against known truth: nftables drops 2% of h3's TCP data packets as they enter the lab's bridge (as
in test_health_lab.py). The pasted snapshots, in two forms (``nstat -az`` before, ``cat
/proc/net/snmp`` after), give the verdicts the run gave: h3 fails its retransmissions naming
``RetransSegs``, a clean host passes. Real sshd in namespaces, real iperf3, the real ``bench``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import need_programs

from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SUITE = Path(__file__).parent / "fixtures" / "acceptance" / "lab-health.yaml"


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def in_ns(netns: str, *argv: str) -> str:
    return subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True, text=True, check=True,
                          timeout=30).stdout


def test_pasted_snapshots_give_the_verdicts_the_run_gave(lab_maker, tmp_path: Path) -> None:
    need_programs("nft", "nstat")
    out = tmp_path / "run"
    with lab_maker("ph1", 3) as info:
        hosts = {h.name: h for h in info.hosts}
        h3 = hosts["h3"]
        table = f"bhpaste_{h3.veth}".replace("-", "_")
        subprocess.run(["nft", "add", "table", "netdev", table], check=True)
        try:
            subprocess.run(["nft", "add", "chain", "netdev", table, "in",
                            f"{{ type filter hook ingress device {h3.veth} priority 0; }}"], check=True)
            subprocess.run(["nft", "add", "rule", "netdev", table, "in", "ip", "protocol", "tcp",
                            "tcp", "sport", "!=", "22", "tcp", "dport", "!=", "22", "meta", "length", "gt", "200",
                            "numgen", "random", "mod", "100", "lt", "2", "drop"], check=True)
            for name in ("h1", "h3"):
                (tmp_path / f"{name}-before.txt").write_text(in_ns(hosts[name].netns, "nstat", "-az"))
            t0 = time.monotonic()
            res = bench("run", f"suite={SUITE}", f"hosts={info.inventory}", f"out={out}")
            seconds = time.monotonic() - t0
            for name in ("h1", "h3"):
                (tmp_path / f"{name}-after.txt").write_text(in_ns(hosts[name].netns, "cat", "/proc/net/snmp"))
        finally:
            subprocess.run(["nft", "delete", "table", "netdev", table], check=False)
    assert res.returncode == 1, res.stdout + res.stderr
    run = {v["host"]: v["status"] for v in RunDir(out).run_info()["verdicts"]
           if v["check"] == "health: retransmissions"}
    assert run["h3"] == "fail" and run["h1"] == "pass", run
    for name in ("h1", "h3"):
        pasted = bench("health", str(tmp_path / f"{name}-before.txt"), str(tmp_path / f"{name}-after.txt"),
                       f"seconds={seconds:.1f}", f"suite={SUITE}")
        line = next(ln for ln in pasted.stdout.splitlines() if "retransmissions:" in ln)
        print(name, line)
        assert line.split()[0].lower() == run[name], (name, pasted.stdout, pasted.stderr)
        assert "RetransSegs +" in line and "per million TCP segments sent" in line
        assert pasted.returncode == (1 if run[name] == "fail" else 0), pasted.stdout + pasted.stderr
