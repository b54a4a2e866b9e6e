"""The compatibility matrix (results/frameworks.py) over run directories built from real outputs.

Each step's output is real: nccl-tests 2.17 on 2x4 H100 (tests/fixtures/nccl, SOURCES there), the
jax tool's table from a lab run (tests/fixtures/captured/jax), NCCL's own logs (tests/fixtures/nccl/
debug). Each is parsed by its adapter's ``parse_step`` and stored as the runner stores it (a
failure as the runner records a ToolFailure: status failed, its kind and message), so the matrix
reads what a run would have written. The lab's truth (a real run with torch, JAX and TensorFlow,
and a host without jax) is in tests/test_frameworks_lab.py.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.results import frameworks
from benchharness.results.store import RunDir
from benchharness.tools import get_tool

FIX = Path(__file__).parent / "fixtures"
JAX_TABLE = (FIX / "captured" / "jax" / "all_reduce_3hosts_gloo.txt").read_text()
NCCL_TESTS = (FIX / "nccl" / "nccl-tests-2.17-all_reduce-2x4-h100.txt").read_text()
FALLBACK = (FIX / "nccl" / "debug" / "nccl-2.11-socket-fallback.log").read_text()


def gpu_hosts() -> tuple[Host, ...]:
    return tuple(Host(f"g{i}", f"198.18.0.{i}", user="root", vars={"gpus": 4, "netdev": "eth0",
                                                                    "mpi_rsh_agent": "/x/agent"}) for i in (1, 2))


class Run:
    """A run directory filled step by step through the adapters' own parsers."""

    def __init__(self, path: Path) -> None:
        self.dir, self.n = RunDir.create(path), 0

    def step(self, tool: str, params: dict, hosts: tuple[Host, ...], stdout: str, stderr: str = "",
             rc: int = 0) -> None:
        test = f"{tool}-{params.get('op', 'all_reduce')}"
        step = Step(f"{self.n:04d}-{test}", test, tool, params, hosts, pattern="group", port=29650)
        self.n += 1
        cmds = get_tool(tool).commands(step)
        results = [CommandResult(c, rc, stdout if i == 0 else "", stderr, 1.0, 2.0) for i, c in enumerate(cmds)]
        entry = {"step": step.id, "test": test, "tool": tool, "hosts": [h.name for h in hosts],
                 "params": params, "host": None}
        try:
            records = get_tool(tool).parse_step(step, results)
            entry |= {"status": "ok", "kind": "", "message": "", "samples": len(records)}
        except ToolFailure as exc:
            records = list(exc.records)
            entry |= {"status": "failed", "kind": exc.kind, "message": exc.message, "samples": len(records)}
        self.dir.append_samples(records)
        self.dir.append_step(entry)


def test_framework_far_below_nccl_tests_on_the_same_hosts_is_a_finding(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    run.step("nccl-tests", {"op": "all_reduce"}, gpu_hosts(), NCCL_TESTS)
    run.step("jax", {"op": "all_reduce", "require_network": "any"}, gpu_hosts(), JAX_TABLE)
    found = frameworks.matrix(run.dir)
    assert found is not None and found["reference"] == ["nccl-tests"]
    (cell,) = found["rows"]
    assert cell["framework"] == "JAX" and cell["status"] == "ran" and cell["size_bytes"] == 1 << 20
    assert cell["busbw_GBps"] == pytest.approx(0.1653)  # the table's 1 MiB row
    # nccl-tests at the largest size not above JAX's: 512 KiB (its sizes step by 4 from 8 B)
    ref = [r for r in run.dir.summary_samples() if r["tool"] == "nccl-tests" and r["size_bytes"] == 524288]
    assert ref and cell["reference"] == "nccl-tests"
    assert cell["reference_busbw_GBps"] == pytest.approx(statistics.median(r["busbw_GBps"] for r in ref))
    assert cell["ratio"] == pytest.approx(cell["busbw_GBps"] / cell["reference_busbw_GBps"])
    assert cell["ratio"] < frameworks.FAR_BELOW and "below 50%" in cell["finding"]


def test_socket_fallback_is_a_finding_and_a_failed_transport_check_keeps_its_error(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    # the suite allows any network: the step runs, but NCCL's own log shows the fall back to sockets
    run.step("jax", {"op": "all_reduce", "require_network": "any"}, gpu_hosts(), JAX_TABLE, FALLBACK)
    # the default on RDMA rails requires IB: the same log fails the step
    rdma = tuple(Host(h.name, h.address, user="root", vars={**h.vars, "rdma_dev": "mlx5_0"}) for h in gpu_hosts())
    run.step("jax", {"op": "alltoall"}, rdma, JAX_TABLE, FALLBACK)
    cells = {c["collective"]: c for c in frameworks.matrix(run.dir)["rows"]}
    assert cells["all_reduce"]["status"] == "ran" and cells["all_reduce"]["transport"] == "Socket"
    assert cells["all_reduce"]["finding"] == "fell back to sockets"
    failed = cells["alltoall"]
    assert failed["status"] == "failed" and failed["error"].startswith("transport_mismatch:")
    assert "NCCL used Socket" in failed["error"] and failed["busbw_GBps"] is None


def test_missing_framework_is_not_installed_naming_the_host_never_a_pass(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    hosts = tuple(Host(f"h{i}", f"198.18.0.{i}", user="root", vars={"netdev": "eth0"}) for i in (1, 2))
    run.step("jax", {"op": "all_gather"}, hosts, "", "ModuleNotFoundError: No module named 'jax'\n", rc=1)
    (cell,) = frameworks.matrix(run.dir)["rows"]
    assert cell["status"] == "not installed" and cell["host"] == "h1" and "has no jax" in cell["error"]
    assert cell["busbw_GBps"] is None and cell["transport"] is None


def test_a_run_without_frameworks_has_no_matrix(tmp_path: Path) -> None:
    run = Run(tmp_path / "run")
    run.step("nccl-tests", {"op": "all_reduce"}, gpu_hosts(), NCCL_TESTS)
    assert frameworks.matrix(run.dir) is None
