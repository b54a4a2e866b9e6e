"""Ground truth for the comparison report: lab runs whose pair is shaped to a known rate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lab


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=300)


def measure(inventory: Path, out: Path) -> Path:
    res = bench("run", "suite=quick", f"hosts={inventory}", "length=128K", "duration=1", "repeat=5",
                "telemetry=off", f"out={out}")
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def bw_cell(comparison: dict, run_index: int) -> dict:
    label = comparison["runs"][run_index]["label"]
    cells = [c for c in comparison["cells"] if c["metric"] == "bw_avg_gbps" and c["run"] == label]
    assert len(cells) == 1, cells
    return cells[0]


def test_comparison_names_the_faster_setup_and_the_ratio(lab_maker, tmp_path: Path) -> None:
    with lab_maker("cmpa", 2, shape={"h2": "2gbit"}) as fast:
        a1 = measure(fast.inventory, tmp_path / "fast-1")
        a2 = measure(fast.inventory, tmp_path / "fast-2")
    with lab_maker("cmpb", 2, shape={"h2": "1gbit"}) as slow:
        b = measure(slow.inventory, tmp_path / "slow")

    res = bench("compare", str(a1), str(b), "format=json")
    assert res.returncode == 0, res.stderr
    comparison = json.loads(res.stdout)
    fast_label, slow_label = (r["label"] for r in comparison["runs"])
    assert fast_label != slow_label  # runs are labelled by what differs, not both "veth"
    slow_cell = bw_cell(comparison, 1)
    assert slow_cell["significant"] is True
    assert slow_cell["winner"] == fast_label
    assert abs(slow_cell["ratio"] - 0.5) < 0.05  # 1gbit / 2gbit, within 10%

    res = bench("compare", str(a1), str(a2), "format=json")
    same = json.loads(res.stdout)
    assert bw_cell(same, 1)["significant"] is False
    html = tmp_path / "cmp.html"
    assert bench("compare", str(a1), str(b), f"out={html}").returncode == 0
    text = html.read_text()
    assert fast_label in text and "wins" in text
