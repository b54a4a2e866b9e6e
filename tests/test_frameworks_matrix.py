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
from benchharness.report.compare import render_comparison
from benchharness.report.exports import comparison_json
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


def test_compare_puts_each_runs_matrix_side_by_side(tmp_path: Path) -> None:
    """``bench compare``'s matrix (``side_by_side``): one row per framework and collective any run
    tried, each run's own cell in it (None where the run did not try it)."""
    hosts = tuple(Host(f"h{i}", f"198.18.0.{i}", user="root", vars={"netdev": "eth0"}) for i in (1, 2, 3))
    a, b = Run(tmp_path / "a"), Run(tmp_path / "b")
    a.step("jax", {"op": "all_reduce"}, hosts, JAX_TABLE)
    a.step("jax", {"op": "alltoall"}, hosts, (FIX / "captured" / "jax" / "alltoall_3hosts_gloo.txt").read_text())
    b.step("jax", {"op": "all_reduce"}, hosts, "", "ModuleNotFoundError: No module named 'jax'\n", rc=1)
    side = frameworks.side_by_side([a.dir, b.dir], ["nic-a", "nic-b"])
    assert side is not None and side["labels"] == ["nic-a", "nic-b"]
    rows = {(r["framework"], r["collective"]): r["cells"] for r in side["rows"]}
    assert list(rows) == [("JAX", "all_reduce"), ("JAX", "alltoall")]
    ran, missing = rows[("JAX", "all_reduce")]["nic-a"], rows[("JAX", "all_reduce")]["nic-b"]
    assert ran == {k: frameworks.matrix(a.dir)["rows"][0][k] for k in frameworks.SIDE_BY_SIDE_FIELDS}
    assert ran["status"] == "ran" and ran["transport"] == "gloo (TCP sockets)" and ran["busbw_GBps"] > 0
    assert missing["status"] == "not installed" and missing["host"] == "h1" and "has no jax" in missing["error"]
    assert rows[("JAX", "alltoall")]["nic-a"]["status"] == "ran" and rows[("JAX", "alltoall")]["nic-b"] is None
    # bench compare's JSON and HTML carry it, under the comparison's own run labels
    for run, name in ((a, "nic-a"), (b, "nic-b")):
        run.dir.write_run_info({"run_id": name, "suite": {"name": "frameworks"}, "hosts": ["h1", "h2", "h3"],
                                "state": "complete", "labels": {"label": name}})
    assert comparison_json([a.dir, b.dir])["frameworks"] == side
    page = render_comparison([a.dir, b.dir], tmp_path / "c.html").read_text()
    table = page.split("frameworks-compare")[1].split("</table>")[0]
    assert table.count("<tr>") == 3 and "has no jax" in table and "gloo (TCP sockets)" in table  # header, 2 rows
    empty = Run(tmp_path / "c")
    empty.step("nccl-tests", {"op": "all_reduce"}, gpu_hosts(), NCCL_TESTS)
    assert frameworks.side_by_side([empty.dir, empty.dir], ["x", "y"]) is None
