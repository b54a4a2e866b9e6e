"""Latency under load on the loopback lab: real sockperf through `bench run`, real sshd, real tbf.

h3's link is shaped (tc tbf, 10 Mbit/s): its bulk flow queues the probe for tens of milliseconds,
while the unshaped pair h1-h2 queues nothing and waits only for the CPU. The suite
(tests/fixtures/latency/lab-latency.yaml) holds the under-load p99 to 15 ms, so h3 fails and only
h3 (a host fails when every pair it is in misses the limit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need_programs

from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SUITE = Path(__file__).parent / "fixtures" / "latency" / "lab-latency.yaml"
CHECK = "under-load p99 latency, absolute ceiling"
LIMIT_US = 15000.0


def test_shaped_host_fails_under_load_p99_alone(lab_maker, tmp_path: Path) -> None:
    need_programs("sockperf", "tc")
    out = tmp_path / "run"
    with lab_maker("splat", 3, shape={"h3": "10mbit"}) as info:
        res = subprocess.run([sys.executable, "-m", "benchharness", "run", f"suite={SUITE}",
                              f"hosts={info.inventory}", f"out={out}"], capture_output=True, text=True,
                             timeout=300, env={**os.environ})
    assert res.returncode == 1, res.stdout + res.stderr
    assert "  hosts FAILED: h3\n  hosts passed: h1, h2\n" in res.stdout, res.stdout

    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    probes = {s["pair"]: s for s in samples if s.get("kind", "summary") == "summary"}
    loads = [s for s in samples if s.get("kind") == "load"]
    assert set(probes) == {"h1-h2", "h2-h3", "h3-h1"}
    assert all(p["sockperf_mode"] == "under-load" and p["load_streams"] == 1 for p in probes.values())
    assert len(loads) == 3 and all(s["bw_avg_gbps"] > 0 for s in loads)  # the bulk flow really ran
    # the shaped pairs' bulk flows ran at the shaped rate; the unshaped one far above it
    by_pair = {s["pair"]: s["bw_avg_gbps"] for s in loads}
    assert by_pair["h2-h3"] < 0.02 and by_pair["h3-h1"] < 0.02 and by_pair["h1-h2"] > 0.1, by_pair
    # the truth: the unshaped pair under the ceiling, both pairs through the shaped link above it
    assert probes["h1-h2"]["lat_p99_us"] < LIMIT_US < min(probes["h2-h3"]["lat_p99_us"],
                                                          probes["h3-h1"]["lat_p99_us"]), probes

    verdicts = RunDir(out).run_info()["verdicts"]
    judged = {v["host"]: v["status"] for v in verdicts if v["check"] == CHECK and v["host"]}
    assert judged == {"h1": "pass", "h2": "pass", "h3": "fail"}, verdicts
    failed = next(v for v in verdicts if v["check"] == CHECK and v["host"] == "h3")
    assert failed["limit"] == LIMIT_US and failed["value"] > LIMIT_US
