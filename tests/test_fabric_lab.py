"""A short soak on the loopback lab against known truth: the link of one host is slowed from
2 Gbit/s to 400 Mbit/s (tc tbf) two thirds into a 12 s step, so the last third moves a fifth of
the first: the degradation verdict fails and names the pair; the sampler's counter series
(counters_interval: 1) is stored and drawn in the report's Fabric health section.

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

from benchharness.lab import control as lab
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SUITE = Path(__file__).parent / "fixtures" / "health" / "lab-soak.yaml"


def _tbf(rate: str) -> list[str]:
    return ["tbf", "rate", rate, "burst", "131072", "latency", "20ms"]


def test_link_slowed_late_in_a_sustained_step_fails_degradation(lab_maker, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with lab_maker("hs1", 2, shape={"h2": "2gbit"}) as info:
        h2 = next(h for h in info.hosts if h.name == "h2")
        slowed: list[float] = []

        def slow_down() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # the client's iperf3 has started
                procs = lab.lab_processes(info.name, "iperf3", base_dir=info.dir.parent)
                if any(" -c " in f" {c} " for cs in procs.values() for c in cs):
                    break
                time.sleep(0.2)
            time.sleep(7.0)  # two thirds of 12 s, less the client's start
            subprocess.run(["tc", "qdisc", "replace", "dev", h2.veth, "root", *_tbf("400mbit")], check=True)
            subprocess.run(["tc", "-n", h2.netns, "qdisc", "replace", "dev", "eth0", "root", *_tbf("400mbit")],
                           check=True)
            slowed.append(time.time())

        worker = threading.Thread(target=slow_down)
        worker.start()
        res = subprocess.run([sys.executable, "-m", "benchharness", "run", f"suite={SUITE}",
                              f"hosts={info.inventory}", f"out={out}"],
                             capture_output=True, text=True, timeout=240, env=dict(os.environ))
        worker.join(130)
    assert slowed, "the link was never slowed"
    verdicts = [v for v in RunDir(out).run_info()["verdicts"] if v["check"] == "health: degradation"]
    assert len(verdicts) == 1 and verdicts[0]["status"] == "fail", res.stdout + res.stderr
    assert verdicts[0]["value"] > 0.3 and "tool interval samples" in verdicts[0]["message"], verdicts
    assert res.returncode == 1
    series = list((out / "telemetry" / "series").glob("*/*.jsonl"))
    assert {p.stem for p in series} == {"h1", "h2"}
    rows = [json.loads(x) for x in series[0].read_text().splitlines()]
    assert len(rows) >= 4 and all(r["t1"] > r["t0"] for r in rows)  # about 1 s apart, more when loaded
    assert any(k.endswith(":tx_bytes") or k.endswith(":rx_bytes") for r in rows for k in r["counters"])
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="fabric-health"' in html and "Throughput per rail (counter series)" in html
