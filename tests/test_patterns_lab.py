"""Patterns on the loopback lab: all-pairs rounds and bad-link isolation, incast, staggered starts.

One 4-host lab for the module. h4 is shaped to 1 Gbit/s; h1..h3 are shaped to 3 Gbit/s, the
"line rate" of the other NICs: unshaped pairs on a 2-core machine are CPU-bound and vary by ±20%
with what the concurrent pair is doing, which a 90%-of-best threshold would rightly flag.
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_lab

from benchharness.core.naming import safe_name
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module")
def lab4() -> Iterator[LabInfo]:
    with make_lab("pa4", 4, shape={"h1": "3gbit", "h2": "3gbit", "h3": "3gbit", "h4": "1gbit"}) as info:
        yield info


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_all_pairs_runs_in_three_rounds_and_names_the_slow_host(lab4: LabInfo, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = bench("run", "suite=all-pairs", f"hosts={lab4.inventory}", "duration=2", f"out={out}")
    # Isolation is informational: a named suspect does not change the exit code.
    assert res.returncode == 0, res.stderr + res.stdout
    assert "isolation: SUSPECT h4: h4 is in 3 of 3 bad pairs (h1-h4, h2-h4, h3-h4)" in res.stdout
    assert "  ISOLATION suspect h4:" in res.stdout
    run = RunDir(out)
    info = run.run_info()
    assert info["isolation"]["suspects"] == ["h4"]
    assert info["isolation"]["bad_pairs"] == [["h1", "h4"], ["h2", "h4"], ["h3", "h4"]]
    # h4's three pairs are retested, and any other pair that fell below 90% of the best
    assert info["isolation"]["flagged"] >= 3
    assert info["steps"]["total"] == info["steps"]["ok"] == 6 + info["isolation"]["flagged"]

    first = [s for s in run.steps() if not s["step"].endswith("-retest")]
    by_round: dict[int, list[dict]] = defaultdict(list)
    for s in first:
        by_round[s["round"]].append(s)
    assert sorted(by_round) == [0, 1, 2] and all(len(v) == 2 for v in by_round.values())
    # The two steps of a round run at the same time, and rounds one after the other.
    for steps in by_round.values():
        a, b = steps
        assert a["started"] < b["ended"] and b["started"] < a["ended"], steps
    for r in (0, 1):
        assert max(s["ended"] for s in by_round[r]) <= min(s["started"] for s in by_round[r + 1]) + 0.5

    summaries = [s for s in run.samples() if s.get("kind") == "summary" and not s.get("retest")]
    slow = [s["bw_avg_gbps"] for s in summaries if "h4" in (s["server"], s["client"])]
    fast = [s["bw_avg_gbps"] for s in summaries if "h4" not in (s["server"], s["client"])]
    assert len(slow) == len(fast) == 3 and max(slow) < 1.1 < 2.5 < min(fast)
    assert "Bad-link isolation" in (out / "report.html").read_text()


def test_staggered_incast_overlaps_three_senders_at_one_receiver(lab4: LabInfo, tmp_path: Path) -> None:
    suite = tmp_path / "incast3.yaml"
    suite.write_text(
        "settings: {duration: 2, telemetry: off}\n"
        "tests:\n"
        "  - name: incast\n"
        "    tool: iperf3\n"
        "    pattern: incast\n"
        "    params: {protocol: tcp, length: 128K, stagger: 300ms, interval: 0.1}\n")
    out = tmp_path / "run"
    res = bench("run", f"suite={suite}", f"hosts={lab4.inventory}", f"out={out}")
    assert res.returncode == 0, res.stderr + res.stdout
    run = RunDir(out)
    samples = run.samples()
    steps = {s["step"]: s for s in run.steps()}
    assert len(steps) == 4  # every host receives once
    receiving_h1 = [s for s in samples if s["server"] == "h1" and s.get("kind") == "summary"]
    assert sorted(s["client"] for s in receiving_h1) == ["h2", "h3", "h4"]
    # the three flows ran at once: their raw start/end times overlap
    (step_id,) = {s["step"] for s in receiving_h1}
    metas = [run.read_json(f"raw/{safe_name(step_id)}/client-{s['client']}-{5201 + i}.json")
             for i, s in enumerate(sorted(receiving_h1, key=lambda r: r["client"]))]
    assert max(m["started"] for m in metas) < min(m["ended"] for m in metas)
    # ... started 0.3 s apart, which the interval samples carry as their flow's offset
    # (host-side starts: each sender waited for its instant on its own host and marked it)
    offsets = sorted({s["t_offset_s"] for s in samples if s["step"] == step_id})
    assert offsets[0] == 0.0 and offsets[1] == pytest.approx(0.3, abs=0.1)
    assert offsets[2] == pytest.approx(0.6, abs=0.1)
    clocks = run.run_info()["clock_offsets"]
    assert set(clocks) == {"h1", "h2", "h3", "h4"}
    assert all(abs(c["offset_s"]) <= c["rtt_s"] / 2 + 0.01 for c in clocks.values())  # one clock
    stderr = (out / "raw" / safe_name(step_id) / "client-h2-5201.stderr")
    assert stderr.exists() and "bench-started-at" not in stderr.read_text()
    # h1 receives at most its 3 Gbit/s in total over the time the flows ran; each gets a share
    span = max(m["ended"] for m in metas) - min(m["started"] for m in metas)
    assert sum(s["bytes"] for s in receiving_h1) * 8 / span / 1e9 < 3.2
    assert all(s["bw_avg_gbps"] > 0.3 for s in receiving_h1)
