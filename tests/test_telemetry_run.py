"""Telemetry wired into runs: facts, preflight, per-step samplers and counter deltas (real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.core.model import Host, Step
from benchharness.results.store import RunDir
from benchharness.telemetry.collect import (
    _flat_highlights,
    sampler_argv,
    script_path,
    split_sampler_output,
    step_pairs,
)
from benchharness.telemetry.counters import delta
from benchharness.transport import transport_for

pytestmark = pytest.mark.xdist_group("loopback")  # fixed ports on this machine's loopback: one worker (tests/turns.py)
LOCAL = Host("localhost", "127.0.0.1", local=True, data_ip="127.0.0.1", vars={"netdev": "lo"})


def test_sampler_stops_on_end_of_input_with_edge_snapshots() -> None:
    proc = transport_for(LOCAL).start(sampler_argv(LOCAL, script_path("sampler.py"), 0.2), stdin=True)
    assert not proc.wait(0.7)  # still sampling
    proc.close_stdin()
    assert proc.wait(10) == 0
    lines, snaps = split_sampler_output(proc.stdout)
    assert set(snaps) == {"start", "end"}
    assert lines and all("cpu" in line or "cpu_total_pct" in json.dumps(line) for line in lines)
    d = delta(snaps["start"], snaps["end"])
    assert d["counters"]["net:lo:rx_bytes"] >= 0


def test_highlights_are_flattened_per_priority() -> None:
    d = delta({"ethtool:eth0:rx_prio3_pause": 1, "ethtool:eth0:rx_discards_phy": 0},
              {"ethtool:eth0:rx_prio3_pause": 5, "ethtool:eth0:rx_discards_phy": 2})
    flat = _flat_highlights(d)
    assert flat["pfc_pause_rx_3"] == 4
    assert flat["discards_rx_discards_phy"] == 2


def test_pairs_for_mtu_check_come_from_pair_steps_only() -> None:
    a, b, c = (Host(n, n) for n in "abc")
    steps = [Step("1", "t", "iperf3", {}, (a, b), pattern="all-pairs"),
             Step("2", "t", "iperf3", {}, (a, a), pattern="self"),
             Step("3", "t", "collective", {}, (a, b, c), pattern="group")]
    assert step_pairs(steps) == [("a", "b")]


def test_a_local_run_stores_facts_preflight_samplers_and_counters(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "benchharness", "run", "suite=quick", "duration=1",
                          "length=16K", f"out={out}"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    run = RunDir(out)
    facts = json.loads((out / "telemetry" / "facts" / "localhost.json").read_text())
    assert facts["host"]["kernel"] and facts["cpu"]["logical_cores"] >= 1
    preflight = json.loads((out / "telemetry" / "preflight.json").read_text())
    assert any(v["check"] == "preflight.tool_version" and "iperf3" in v["message"] for v in preflight)
    assert run.run_info()["preflight"]["fail"] == 0
    steps = [s["step"] for s in run.steps()]
    assert [p.stem for p in (out / "telemetry" / "counters").glob("*.json")] == steps
    counters = [s for s in run.samples() if s.get("kind") == "counters"]
    assert counters and counters[0]["host"] == "localhost" and counters[0]["step"] == steps[0]


def test_telemetry_off_collects_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "benchharness", "run", "suite=quick", "duration=1",
                          "length=16K", "telemetry=off", f"out={out}"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert not list((out / "telemetry").rglob("*.json"))
