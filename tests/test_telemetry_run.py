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
    TelemetryObserver,
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


class _Ended:
    """A sampler process that has ended with ``stdout`` (what the real one printed, or part of it)."""

    def __init__(self, stdout: str, log: list[str], name: str) -> None:
        self.stdout, self.stderr, self.log, self.name = stdout, "", log, name

    def close_stdin(self) -> None:
        self.log.append(f"close {self.name}")

    def wait(self, timeout: float | None = None) -> int:
        self.log.append(f"wait {self.name}")
        return 0

    def poll(self) -> int:
        return 0

    def stop(self, grace_s: float = 2.0) -> None:
        raise AssertionError("an ended sampler is not stopped")


def test_a_host_whose_sampler_gave_no_end_snapshot_is_named_and_the_others_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The step's end closes every sampler's input before it waits for any (the end snapshots run
    at once), and a host without both edge snapshots is named in a warning, not silently dropped."""
    proc = transport_for(LOCAL).start(sampler_argv(LOCAL, script_path("sampler.py"), 0.2), stdin=True)
    proc.wait(0.5)
    proc.close_stdin()
    assert proc.wait(30) == 0
    whole = proc.stdout
    cut = "".join(line for line in whole.splitlines(keepends=True) if '"phase": "end"' not in line)
    assert cut != whole  # the real sampler's last line is its end snapshot
    h1, h2 = Host("h1", "h1", vars={"netdev": "lo"}), Host("h2", "h2", vars={"netdev": "lo"})
    step = Step("s1", "t", "iperf3", {}, (h1, h2), pattern="pairs")
    log: list[str] = []
    runner = type("R", (), {"run_dir": RunDir.create(tmp_path / "run"), "untrack": lambda self, p: None})()
    observer = TelemetryObserver()
    observer._samplers[step.id] = [(h1, _Ended(cut, log, "h1")), (h2, _Ended(whole, log, "h2"))]  # type: ignore[list-item]
    observer.after_step(runner, step)
    assert log[:2] == ["close h1", "close h2"]
    counters = json.loads((tmp_path / "run" / "telemetry" / "counters" / "s1.json").read_text())
    assert list(counters) == ["h2"] and "net:lo:rx_bytes" in counters["h2"]["counters"]
    assert "warning: h1: s1: no counter delta: the sampler gave no end snapshot" in capsys.readouterr().err


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
