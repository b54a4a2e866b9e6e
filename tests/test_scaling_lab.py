"""Two lab `scaling` runs (the MPI CPU all-reduce on 2 then 3 hosts over real ssh), the second with
MTU 1400 set on every host's interface: the comparison keeps host counts apart and names the MTU."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.results.store import RunDir
from tests.conftest import need_programs

pytestmark = pytest.mark.lab


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True, timeout=300)


def test_scaling_runs_compare_per_host_count_and_name_the_mtu(lab_maker, tmp_path: Path) -> None:
    need_programs("mpirun", "ip")
    with lab_maker("tscal", 3) as info:
        runs = []
        for label, mtu in (("A", None), ("B", "1400")):
            if mtu:
                for host in info.hosts:
                    subprocess.run(["ip", "netns", "exec", host.netns, "ip", "link", "set", "dev", "eth0", "mtu", mtu],
                                   check=True, timeout=30)
            out = tmp_path / label
            res = _bench("run", "suite=scaling", f"hosts={info.inventory}", "cpu_maxbytes=2M", "repeat=2", f"label={label}",
                         f"out={out}")
            assert res.returncode == 0, res.stdout + res.stderr
            runs.append(out)
    rows = [s for s in RunDir(runs[0]).samples() if s.get("kind", "summary") == "summary" and "busbw_GBps" in s]
    assert {r["nhosts"] for r in rows} == {2, 3}
    report = html.unescape((runs[0] / "report.html").read_text(encoding="utf-8"))
    assert "busbw vs host count" in report and "3 hosts: " in report  # the efficiency against 2 hosts

    page_path = tmp_path / "compare.html"
    res = _bench("compare", str(runs[0]), str(runs[1]), f"out={page_path}")
    assert res.returncode == 0, res.stdout + res.stderr
    page = html.unescape(page_path.read_text(encoding="utf-8"))
    assert "busbw vs host count, one line per run" in page and "Parity of set-up" in page
    assert "A's MTU 1500 vs B's 1400" in page

    doc_path = tmp_path / "compare.json"
    res = _bench("compare", str(runs[0]), str(runs[1]), "format=json", f"out={doc_path}")
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads(doc_path.read_text())
    assert "A's MTU 1500 vs B's 1400" in doc["parity"]["differences"], doc["parity"]
    cells = [c for c in doc["cells"] if c["metric"] == "busbw_GBps"]
    assert cells and {c["nhosts"] for c in cells} == {2, 3}
    # repeat=2: two samples per run, size, placement and host count; a cell pooling 2 and 3 hosts would hold 4
    per_run = {c["run"]: c for c in cells}
    assert set(per_run) == {"A", "B"} and all(c["n"] == 2 for c in cells)
    scaled = {s["run"]: s for s in doc["scaling"]}
    assert set(scaled) == {"A", "B"}
    for curve in scaled.values():
        points = {p["nhosts"]: p for p in curve["points"]}
        assert set(points) == {2, 3} and points[2]["efficiency"] == 1.0
        assert points[3]["efficiency"] == pytest.approx(points[3]["median"] / points[2]["median"])
        assert curve["size_bytes"] == max(r["size_bytes"] for r in rows)  # the largest size both counts ran
