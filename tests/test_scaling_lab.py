"""Two of the session's lab runs (tests/nic_runs.py: the MPI CPU all-reduce of the `scaling` suite
on 2 then 3 hosts over real ssh, two repetitions), the second with MTU 1400 set on every host's
interface: the comparison keeps host counts apart and names the MTU."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.results.store import RunDir

pytestmark = [pytest.mark.lab, pytest.mark.long(160), pytest.mark.xdist_group("nic_runs")]  # one worker makes the session's three runs (tests/turns.py)


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True, timeout=300)


def test_scaling_runs_compare_per_host_count_and_name_the_mtu(nic_runs: dict[str, Path], tmp_path: Path) -> None:
    runs = [nic_runs["2gbit"], nic_runs["500mbit"]]  # MTU 1500 and 1400
    rows = [s for s in RunDir(runs[0]).samples() if s.get("kind", "summary") == "summary" and "busbw_GBps" in s]
    assert {r["nhosts"] for r in rows} == {2, 3}
    report = html.unescape((runs[0] / "report.html").read_text(encoding="utf-8"))
    assert "busbw vs host count" in report and "3 hosts: " in report  # the efficiency against 2 hosts

    page_path = tmp_path / "compare.html"
    res = _bench("compare", str(runs[0]), str(runs[1]), f"out={page_path}")
    assert res.returncode == 0, res.stdout + res.stderr
    page = html.unescape(page_path.read_text(encoding="utf-8"))
    assert "busbw vs host count, one line per run" in page and "Parity of set-up" in page
    assert "2gbit's MTU 1500 vs 500mbit's 1400" in page

    doc_path = tmp_path / "compare.json"
    res = _bench("compare", str(runs[0]), str(runs[1]), "format=json", f"out={doc_path}")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(doc_path.read_text())
    assert "2gbit's MTU 1500 vs 500mbit's 1400" in doc["parity"]["differences"], doc["parity"]
    cells = [c for c in doc["cells"] if c["metric"] == "busbw_GBps"]
    assert cells and {c["nhosts"] for c in cells} == {2, 3}
    # repeat=2: two samples per run, size, placement and host count; a cell pooling 2 and 3 hosts would hold 4
    per_run = {c["run"]: c for c in cells}
    assert set(per_run) == {"2gbit", "500mbit"} and all(c["n"] == 2 for c in cells)
    scaled = {s["run"]: s for s in doc["scaling"]}
    assert set(scaled) == {"2gbit", "500mbit"}
    for curve in scaled.values():
        points = {p["nhosts"]: p for p in curve["points"]}
        assert set(points) == {2, 3} and points[2]["efficiency"] == 1.0
        assert points[3]["efficiency"] == pytest.approx(points[3]["median"] / points[2]["median"])
        assert curve["size_bytes"] == max(r["size_bytes"] for r in rows)  # the largest size both counts ran
