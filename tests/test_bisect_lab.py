"""`bench bisect` on the loopback lab: 8 hosts at 4 Gbit/s, h5 at 250 Mbit/s; the halving search
over the CPU all-reduce names h5 in at most log2(8)+1 rounds and no healthy host.

Real sshd in namespaces, real Open MPI and the mpi4py benchmark. A round's groups run one after
the other (``bisect_concurrent=false``): on a 2-core machine concurrent groups share the CPUs,
which then set the pace instead of the links. 8 MiB messages, 4 iterations. The healthy groups'
pace is the CPU's on a loaded 2-core machine (another worker's test beside them): at 1 Gbit/s
for h5 its group came within 0.605 of them once, so h5's link is a quarter of that, far below
the 60 % share whatever the load does to the healthy groups."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_lab

from benchharness.lab.control import LabInfo

pytestmark = [pytest.mark.lab, pytest.mark.long(40)]

SHAPE = {f"h{i}": "4gbit" for i in range(1, 9)} | {"h5": "250mbit"}


@pytest.fixture(scope="module")
def lab8() -> Iterator[LabInfo]:
    with make_lab("bi8", 8, shape=SHAPE) as info:
        yield info


def test_bisect_names_the_slow_host(lab8: LabInfo, tmp_path: Path) -> None:
    out = tmp_path / "bisect"
    run = subprocess.run([sys.executable, "-m", "benchharness", "bisect", f"hosts={lab8.inventory}",
                          "suite=allreduce", "minbytes=8M", "cpu_maxbytes=8M", "iters=4", "warmup=1",
                          "bisect_concurrent=false", "bisect_share=0.6", "bisect_seconds=400", f"out={out}",
                          f"junit={tmp_path / 'bisect.xml'}"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stdout + run.stderr  # 1: a node was named
    result = json.loads((out / "bisect.json").read_text())
    assert result["suspects"] == ["h5"], run.stdout
    assert result["rounds"] <= math.log2(8) + 1
    evidence = result["evidence"]["h5"]
    assert evidence and all(r["passed"] is False for r in evidence)
    assert "SUSPECT h5:" in run.stdout and "confirm" in run.stdout
    # every group that passed held healthy hosts only, and h5's groups all missed
    assert all("h5" not in r["members"] for r in result["results"] if r["passed"])
    # one JUnit testcase per node, failed for h5 only
    junit = ET.parse(tmp_path / "bisect.xml").getroot()
    failed = [c.get("classname") for c in junit.iter("testcase") if c.find("failure") is not None]
    assert failed == ["allreduce.h5"] and junit.get("tests") == "8", ET.tostring(junit, encoding="unicode")
    # the run's own report: the search, h5 named with its groups
    assert f"report: {out / 'report.html'}" in run.stdout
    page = (out / "report.html").read_text()
    assert 'id="halving-search"' in page and "<b>h5</b> drags the collective down" in page
