"""Pattern gpu-pairs on the loopback lab: 3 hosts standing for nodes of 2 "GPUs" each (one iperf3
process per GPU, the stand-in for nccl-tests sendrecv with one GPU per rank), h3 shaped to
1 Gbit/s. The GPU-pair matrix shows h3's rows and columns below every other cell, and the report
draws it. Real sshd in namespaces, real iperf3; each flow is capped at 2 Gbit/s so that the
healthy cells do not depend on how much CPU the loaded 2-core machine has left."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_lab

from benchharness.analysis.frames import load_run
from benchharness.analysis.gpu_pairs import gpu_pair_matrix
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir

pytestmark = pytest.mark.lab

SUITE = """\
description: GPU-pair stand-in - one iperf3 process per "GPU"
settings: {duration: 2, repeat: 1, base_port: 5301, timeout: 60, telemetry: "off", preflight: "off"}
tests:
  - name: gpu-pairs
    tool: iperf3
    pattern: gpu-pairs
    params: {protocol: tcp, bitrate: 2G}
"""


@pytest.fixture(scope="module")
def lab3() -> Iterator[LabInfo]:
    with make_lab("gp3", 3, shape={"h3": "1gbit"}) as info:
        yield info


def test_slow_node_shows_as_a_row_and_column(lab3: LabInfo, tmp_path: Path) -> None:
    text = Path(lab3.inventory).read_text()
    inventory = tmp_path / "hosts.ini"
    marker = "[all:vars]\n"
    inventory.write_text(text.replace(marker, marker + "gpus=2\n", 1) if marker in text
                         else text + "\n" + marker + "gpus=2\n")
    suite = tmp_path / "gpu-pairs-lab.yaml"
    suite.write_text(SUITE)
    out = tmp_path / "run"
    run = subprocess.run([sys.executable, "-m", "benchharness", "run", f"suite={suite}", f"hosts={inventory}",
                          f"out={out}"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    df, _ = load_run(RunDir(out))
    matrix = gpu_pair_matrix(df[df["test"] == "gpu-pairs"])
    assert matrix is not None
    ends = [f"h{n}.gpu{g}" for n in (1, 2, 3) for g in (0, 1)]
    assert matrix.endpoints == ends
    # every (i, j) across nodes measured: 3 node pairs x 2 x 2 GPU pairs, both triangles filled
    assert len(matrix.values) == 2 * 3 * 4
    slow = [v for (r, c), v in matrix.values.items() if "h3" in (r[:2], c[:2])]
    healthy = [v for (r, c), v in matrix.values.items() if "h3" not in (r[:2], c[:2])]
    assert len(slow) == 16 and len(healthy) == 8
    assert max(slow) < min(healthy), (sorted(slow), sorted(healthy))
    nodes = matrix.node_medians()
    assert nodes["h3"] < 0.6 * min(nodes["h1"], nodes["h2"]), nodes
    html = (out / "report.html").read_text()
    assert "GPU pairs" in html and "h3.gpu1" in html
