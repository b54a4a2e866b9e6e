"""The shipped ``stragglers`` suite on the loopback lab: real sshd, real mpirun and real torchrun
across three namespace hosts, the CPU benchmark and torch timing every iteration of every rank. The per-iteration
document written on h1 (rank 0) comes home in the step's output, its processes are mapped to the
inventory's hosts, and each test gets a ``stragglers`` verdict from per-process data (not the
"nothing to judge" info). Which rank is slow is known truth only where a slow rank is made on
purpose: tests/test_nccl_iter.py does that under real mpirun."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_lab

from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir
from benchharness.tools import nccl_iter

pytestmark = pytest.mark.lab
TESTS = ("allreduce", "alltoall", "torch-allreduce")


@pytest.fixture(scope="module")
def lab3() -> Iterator[LabInfo]:
    with make_lab("st3", 3) as info:
        yield info


def test_stragglers_suite_judges_per_process_iterations(lab3: LabInfo, tmp_path: Path) -> None:
    before = {p for p in Path("/tmp").glob("tmp.*") if (p / "iterations.json").exists()}
    out = tmp_path / "run"
    run = subprocess.run([sys.executable, "-m", "benchharness", "run", "suite=stragglers", f"hosts={lab3.inventory}",
                          f"out={out}", "iters=20"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    store = RunDir(out)
    seen = store.samples_of_kind("iterations")
    assert {r["test"] for r in seen} == set(TESTS)
    assert all(r["processes"] == 3 and r["per_process"] and r["rank_hosts"] == ["h1", "h2", "h3"] for r in seen), seen
    for r in store.samples_of_kind("straggler", "spike"):
        assert set([r["host"]] if r["kind"] == "straggler" else r["spike_hosts"]) <= {"h1", "h2", "h3"}, r
    info = json.loads((out / "run.json").read_text())
    mine = [v for v in info["verdicts"] if v["check"] == "stragglers"]
    assert {v["test"] for v in mine} == set(TESTS)
    assert all(v["status"] in ("pass", "warn", "info") for v in mine)
    for test in TESTS:  # judged from per-process times: a pass or a named straggler
        assert any(v["test"] == test and v["status"] in ("pass", "warn") for v in mine), mine
    raw = "".join(p.read_text(errors="replace") for p in (out / "raw").rglob("*.stdout"))
    assert raw.count(nccl_iter.BEGIN) == 3 and raw.count(nccl_iter.END) == 3
    assert nccl_iter.BEGIN in (next((out / "raw").rglob("torchrun-h1.stdout"))).read_text()  # torch's rank 0
    after = {p for p in Path("/tmp").glob("tmp.*") if (p / "iterations.json").exists()}
    assert after <= before  # the wrapper removed the document's directory on h1
