"""Tool ``torch`` and ``torch-train``: command lines, parsing, real torchrun on this machine, projection."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import shlex
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from statistics import NormalDist

import pandas as pd
import pytest
from torch_runs import captured, captured_run

from benchharness.analysis import projection as pj
from benchharness.analysis.comparison import compare
from benchharness.config.inventory import load_inventory
from benchharness.config.workloads import Workload, list_workloads, load_workload, workload_from
from benchharness.core.errors import ConfigError
from benchharness.core.model import CommandResult, Host, Step
from benchharness.results.store import RunDir
from benchharness.tools import get_tool
from benchharness.transport.base import wrap_command

pytestmark = pytest.mark.xdist_group("loopback")  # fixed ports on this machine's loopback: one worker (tests/turns.py)
CAPTURED = Path(__file__).parent / "fixtures" / "captured" / "torch"
SYSTEM_PYTHON = "/usr/bin/python3"
HOSTILE = "a b; $(touch /tmp/bench-pwned) 'q' `id`"


def has_torch() -> bool:
    return Path(SYSTEM_PYTHON).exists() and subprocess.run(
        [SYSTEM_PYTHON, "-c", "import torch.distributed.run"], capture_output=True).returncode == 0


def hosts(n: int = 3, **extra: object) -> tuple[Host, ...]:
    return tuple(Host(f"h{i}", f"198.18.0.{i}", user="root", data_ip=f"198.18.0.{i}",
                      vars={"netdev": "eth0", "torch_python": SYSTEM_PYTHON, **extra}) for i in range(1, n + 1))


def step(params: dict, tool: str = "torch", hs: tuple[Host, ...] | None = None) -> Step:
    return Step("0000-x", "x", tool, params, hs or hosts(), pattern="group", port=29600)


def test_torchrun_c10d_one_command_per_host_first_serves_the_store() -> None:
    cmds = get_tool("torch").commands(step({"op": "all_reduce", "minbytes": "1K", "maxbytes": "4K"}))
    assert [c.host.name for c in cmds] == ["h1", "h2", "h3"]
    for i, c in enumerate(cmds):
        argv = list(c.argv)
        assert argv[:6] == [SYSTEM_PYTHON, "/tmp/benchharness/torch_dist.py", "torchrun", "--local-addr",
                            f"198.18.0.{i + 1}", "--"]
        assert argv[argv.index("--rdzv_endpoint") + 1] == "198.18.0.1:29600"
        assert argv[argv.index("--rdzv_conf") + 1] == f"is_host={'true' if i == 0 else 'false'}"
        assert argv[argv.index("--nnodes") + 1] == "3" and argv[argv.index("--op") + 1] == "all_reduce"
        assert c.env["GLOO_SOCKET_IFNAME"] == "eth0"
        assert c.uploads[0][1] == "/tmp/benchharness/torch_dist.py" and Path(c.uploads[0][0]).is_file()


def test_static_rdzv_mpirun_and_srun_with_a_container() -> None:
    tool = get_tool("torch")
    static = tool.commands(step({"rdzv": "static"}))[2].argv
    assert static[static.index("--node_rank") + 1] == "2" and "--master_addr" in static
    mpi = tool.commands(step({"launch": "mpirun"}, hs=hosts(mpi_rsh_agent="/x/agent")))
    assert len(mpi) == 1 and mpi[0].argv[0] == "mpirun" and "MASTER_ADDR=198.18.0.1" in mpi[0].argv
    srun = tool.commands(step({"container_image": "nvcr.io#nvidia/pytorch:24.05-py3"}, hs=hosts(gpus=8)),
                         launcher="slurm")[0]
    assert srun.argv[0] == "srun" and "--mpi=none" in srun.argv and "--gpus-per-node=8" in srun.argv
    assert "--container-image=nvcr.io#nvidia/pytorch:24.05-py3" in srun.argv
    assert srun.env["MASTER_ADDR"] == "198.18.0.1" and srun.env["MASTER_PORT"] == "29600"


def test_nccl_fabric_env_and_hostile_values_stay_one_argument() -> None:
    hs = hosts(gpus=8, rdma_dev="mlx5_0", mgmt_netdev="eno1")
    cmd = get_tool("torch").commands(step({"env": {"NCCL_DEBUG": HOSTILE}}, hs=hs))[0]
    assert cmd.env["NCCL_IB_HCA"] == "=mlx5_0:1" and cmd.env["NCCL_SOCKET_IFNAME"] == "=eno1"
    assert cmd.env["NCCL_DEBUG"] == HOSTILE
    argv = list(cmd.argv)
    assert shlex.split(wrap_command(argv))[-len(argv):] == argv


@pytest.mark.parametrize("params, word", [({"op": "reduce"}, "op"), ({"launch": "pdsh"}, "launch"),
                                          ({"iters": 0}, "iters"), ({"minbytes": "8M", "maxbytes": "1M"}, "minbytes"),
                                          ({"nope": 1}, "unknown"), ({"python": ""}, "python")])
def test_bad_params_name_the_parameter(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        get_tool("torch").check_params(params)


def test_mixed_gpu_and_cpu_hosts_are_refused() -> None:
    mixed = (*hosts(1, gpus=8), *hosts(2)[1:])
    with pytest.raises(ConfigError, match="mix GPU and CPU"):
        get_tool("torch").commands(step({}, hs=mixed))


def test_captured_sweep_parses_like_nccl_tests() -> None:
    recs = get_tool("torch").parse_text((CAPTURED / "all_reduce_3hosts_gloo.txt").read_text())
    rows = [r for r in recs if r["kind"] == "summary"]
    assert [r["size_bytes"] for r in rows] == [1024 * 4 ** k for k in range(7)]
    assert all(r["collective"] == "all_reduce" and r["placement"] == "in-place" and r["wrong"] == 0 for r in rows)
    # nccl-tests' bus bandwidth: busbw = algbw * 2(n-1)/n, n = 3
    assert rows[-1]["busbw_GBps"] == pytest.approx(rows[-1]["algbw_GBps"] * 4 / 3, rel=0.05)
    footer = recs[-1]
    assert footer["nranks"] == 3 and [r["host"] for r in footer["ranks"]] == ["h1", "h2", "h3"]
    assert rows[0]["torch_version"].startswith("1.13") and rows[0]["torch_backend"] == "gloo"
    assert rows[0]["nccl_version"] is None


def test_captured_ddp_proxy_parses() -> None:
    (rec,) = get_tool("torch-train").parse_text((CAPTURED / "ddp_3hosts_gloo.txt").read_text())
    assert rec["proxy"] == "ddp" and rec["params"] == 1050624 and rec["buckets"] == 1
    assert rec["exposed_ms"] == pytest.approx(rec["step_ms"] - rec["compute_ms"], abs=1e-3)


def test_failures_are_named() -> None:
    tool = get_tool("torch")
    s = step({})
    missing = [CommandResult(c, 1, "", "ModuleNotFoundError: No module named 'torch'", 0.0, 1.0)
               for c in tool.commands(s)]
    with pytest.raises(Exception, match="has no torch"):
        tool.parse_step(s, missing)
    crashed = [CommandResult(c, 1, "", "RuntimeError: Connection refused", 0.0, 1.0) for c in tool.commands(s)]
    with pytest.raises(Exception, match=r"exited with status 1.*Connection refused"):
        tool.parse_step(s, crashed)


def free_port() -> int:
    """A TCP port nobody listens on now (two runs of this test at once must not share a rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.skipif(not has_torch(), reason="Debian's python3-torch is not installed (setup.sh installs it)")
def test_real_torchrun_on_this_machine(tmp_path: Path) -> None:
    """torchrun with 2 gloo ranks on localhost, via the adapter's own command line and parser."""
    local = (Host("local", "127.0.0.1", local=True, vars={"torch_python": SYSTEM_PYTHON, "netdev": "lo"}),)
    for tool, params, marker in (("torch", {"op": "all_reduce", "minbytes": "4K", "maxbytes": "64K",
                                            "stepfactor": 4, "iters": 2, "warmup": 1, "procs_per_host": 2},
                                  "busbw_GBps"),
                                 ("torch-train", {"proxy": "ddp", "model_params": "100K", "width": 128,
                                                  "iters": 2, "procs_per_host": 2}, "exposed_ms")):
        s = Step("0000-local", "t", tool, params, local, pattern="group", port=free_port())
        (cmd,) = get_tool(tool).commands(s)
        for src, dst in cmd.uploads:  # what the runner's upload does, into a private folder
            Path(tmp_path / Path(dst).name).write_bytes(Path(src).read_bytes())
        argv = [str(tmp_path / Path(a).name) if a.startswith("/tmp/benchharness/") else a for a in cmd.argv]
        if Path("/sys/devices/system/node/node0/cpulist").exists():  # both ranks bind to node 0's CPUs
            argv += ["--numa-nodes", "0,0"]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**cmd.env, "PATH": "/usr/bin:/bin"})
        assert "not bound" not in proc.stderr, proc.stderr[-2000:]
        res = CommandResult(cmd, proc.returncode, proc.stdout, proc.stderr, 0.0, 1.0)
        recs = [r for r in get_tool(tool).parse_step(s, [res]) if r["kind"] == "summary"]
        assert recs and all(r[marker] is not None for r in recs), proc.stderr[-2000:]
        assert all(r["torch_backend"] == "gloo" for r in recs)


#: torch_dist.py as the hosts run it, with rank 2 ending every operation 20 ms late.
SLOW_TORCH_RANK = """
import sys, time
import torch_dist_real as td
real = td.Op.run
def run(self):
    real(self)
    if self.rank == 2:
        time.sleep(0.02)
td.Op.run = run
sys.exit(td.main())
"""


@pytest.mark.skipif(not has_torch(), reason="Debian's python3-torch is not installed (setup.sh installs it)")
def test_real_torch_slow_rank_is_named_through_the_adapter(tmp_path: Path) -> None:
    """3 gloo ranks under real torchrun, the adapter's own command line with per_iteration, rank 2
    slower: the document comes home after the table, and process 2 is named at every size."""
    local = (Host("local", "127.0.0.1", local=True, vars={"torch_python": SYSTEM_PYTHON, "netdev": "lo"}),)
    params = {"op": "all_reduce", "minbytes": "4K", "maxbytes": "64K", "stepfactor": 4, "iters": 15, "warmup": 2,
              "procs_per_host": 3, "per_iteration": True}
    tool = get_tool("torch")
    tool.check_params(params)
    s = Step("0000-slow", "stragglers", "torch", params, local, pattern="group", port=free_port())
    (cmd,) = tool.commands(s)
    assert list(cmd.argv[-2:]) == ["-I", "1"]
    assert {Path(dst).name for _, dst in cmd.uploads} == {"torch_dist.py", "iter_json.py"}
    for src, dst in cmd.uploads:  # what the runner's upload does, into a private folder
        (tmp_path / Path(dst).name).write_bytes(Path(src).read_bytes())
    (tmp_path / "torch_dist.py").rename(tmp_path / "torch_dist_real.py")
    (tmp_path / "torch_dist.py").write_text(SLOW_TORCH_RANK)
    argv = [str(tmp_path / Path(a).name) if a.startswith("/tmp/benchharness/") else a for a in cmd.argv]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**cmd.env, "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    records = tool.parse_step(s, [CommandResult(cmd, proc.returncode, proc.stdout, proc.stderr, 0.0, 1.0)])
    summary = [r for r in records if r["kind"] == "summary"]
    assert sorted(r["size_bytes"] for r in summary) == [4096, 16384, 65536]
    (looked,) = [r for r in records if r["kind"] == "iterations"]
    assert looked["processes"] == 3 and looked["per_process"] and looked["sizes"] == 3, looked
    slow = [r for r in records if r["kind"] == "straggler"]
    named = {r["size_bytes"]: r for r in slow if r["process"] == 2}
    assert set(named) == {r["size_bytes"] for r in summary}, slow
    for size, r in named.items():
        assert r["median_us"] > r["peers_median_us"] + 15_000, r  # the 20 ms, less timer noise
        assert r["factor"] == max(o["factor"] for o in slow if o["size_bytes"] == size)
        assert r["step"] == s.id and r["straggler_ranks"] == [2]


# ---------------------------------------------------------------- workloads and projection

def test_shipped_workloads_load_and_bad_ones_are_named(tmp_path: Path) -> None:
    assert {"llama-70b-1024", "moe-8x7b-256"} <= set(list_workloads())
    w = load_workload("llama-70b-1024")
    assert w.parameters == 70e9 and w.data * w.tensor * w.pipeline == w.gpus
    with pytest.raises(ConfigError, match="data x tensor x pipeline"):
        workload_from({"name": "x", "parameters": "1B", "gpus": 16, "parallel": {"data": 3},
                       "compute_ms_per_step": 1, "steps": 1}, "w.yaml")
    with pytest.raises(ConfigError, match=r"w\.yaml: missing key steps"):
        workload_from({"name": "x", "parameters": "1B", "gpus": 16, "compute_ms_per_step": 1}, "w.yaml")


def test_allreduce_time_follows_the_bus_bandwidth_definition() -> None:
    curve = pj.Curve((1e6, 1e8), (10.0, 10.0), nranks=8)
    # t = S * 2(n-1)/n / busbw at the measured n (nccl-tests doc/PERFORMANCE.md)
    assert pj.allreduce_s(curve, 1e8, 8) == pytest.approx(1e8 * 2 * 7 / 8 / 10e9)
    # more ranks: the bandwidth term barely grows, the ring's latency term grows with 2(N-1)
    alpha = 1e6 * 2 * 7 / 8 / 10e9 / 14
    assert pj.allreduce_s(curve, 1e8, 1024) == pytest.approx(1e8 * 2 * 1023 / 1024 / 10e9 + alpha * (2046 - 14))
    assert pj.allreduce_s(curve, 1e8, 1024, "tree") < pj.allreduce_s(curve, 1e8, 1024, "ring")


def test_half_the_bandwidth_doubles_the_exposed_time_and_the_sentence_says_so() -> None:
    w = load_workload("llama-70b-1024")
    fast = pj.Curve((1e6, 1e9), (40.0, 40.0), nranks=16)
    slow = fast.scaled([0.5, 0.5])
    a, b = pj.project(w, fast), pj.project(w, slow)
    assert b.comm_ms == pytest.approx(2 * a.comm_ms, rel=0.01)
    assert b.step_ms > a.step_ms and b.usd > a.usd and b.mwh > a.mwh
    assert a.gpu_hours == pytest.approx(w.steps * a.step_ms / 3.6e6 * w.gpus)
    curves = {"A": {"curve": fast, "test": "t", "sizes": [1e6, 1e9], "ratio": [1, 1], "ratio_low": [1, 1],
                    "ratio_high": [1, 1]},
              "B": {"curve": slow, "test": "t", "sizes": [1e6, 1e9], "ratio": [0.5, 0.5],
                    "ratio_low": [0.45, 0.45], "ratio_high": [0.55, 0.55]}}
    rows = pj.compare_projection(w, curves, ["A", "B"])
    row = rows[1]
    assert row["delta_days_low"] < row["delta_days"] < row["delta_days_high"]
    text = pj.projection_sentence(w, row, "A")
    assert text.startswith("With B, a 70B-parameter run on 1,024 GPUs takes ") and "days longer (95% CI" in text
    assert "MWh more" in text and "$" in text


def test_ddp_prediction_matches_the_captured_proxy() -> None:
    """The lab's known truth at one size, offline: the all-reduce curve captured at 200 Mbit/s
    predicts the DDP proxy's exposed time of the same run within 20% (the lab test does it live
    at two sizes)."""
    rows = [r for r in get_tool("torch").parse_text((CAPTURED / "all_reduce_200mbit_gloo.txt").read_text())
            if r["kind"] == "summary"]
    (ddp,) = get_tool("torch-train").parse_text((CAPTURED / "ddp_3hosts_gloo.txt").read_text())
    curve = pj.Curve(tuple(r["size_bytes"] for r in rows), tuple(r["busbw_GBps"] for r in rows), 3)
    _, exposed = pj.ddp_exposed_ms(curve, ddp["grad_bytes"], ddp["bucket_cap_bytes"], ddp["ranks"],
                                   ddp["compute_ms"] * 2 / 3, overlap=1.0)
    assert exposed == pytest.approx(ddp["exposed_ms"], rel=0.2)


# ---------------------------------------------------------------- what each parallel group crosses

def _flat(busbw: float, nranks: int, per_node: int) -> pj.Curve:
    return pj.Curve((1e6, 1e10), (busbw, busbw), nranks, ranks_per_node=per_node)


def _dense(tensor: int) -> Workload:
    """A 70B model on 1,024 GPUs of 8-GPU nodes, PP 4, with TP 8 or TP 1 (DP 32 or 256)."""
    return workload_from({"name": f"tp{tensor}", "parameters": "70B", "gpus": 1024, "gpus_per_node": 8,
                          "parallel": {"data": 1024 // (tensor * 4), "tensor": tensor, "pipeline": 4},
                          "compute_ms_per_step": 9000, "steps": 1000, "overlap": 0.8, "bucket_mb": 25},
                          "w.yaml")


def _by_hand(w: Workload, busbw_gbs: float) -> float:
    """Exposed gradient all-reduce ms, computed apart from the module: flat curves have no latency
    term at the measured n, so each bucket takes b * 2(N-1)/N / busbw plus alpha * (hops(N) - hops(n))."""
    grad = 70e9 * 2 / (w.tensor * 4)
    bucket = 25 * (1 << 20)
    sizes = [bucket] * int(grad // bucket) + ([grad - bucket * int(grad // bucket)] if grad % bucket else [])
    n, n_meas = w.data, 16
    alpha = 1e6 * 2 * (n_meas - 1) / n_meas / (busbw_gbs * 1e9) / (2 * (n_meas - 1))
    times = [(s * 2 * (n - 1) / n / (busbw_gbs * 1e9) + alpha * (2 * (n - 1) - 2 * (n_meas - 1))) * 1e3
             for s in sizes]
    return max(times[-1], sum(times) - 0.8 * 9000 * 2 / 3)


def test_a_tp8_group_moves_at_one_rails_rate_and_tp1_at_the_nodes() -> None:
    """One NIC carries 45 GB/s of busbw; a node of 8 rails 360. TP 8: each DP group has one rank
    per node, so it crosses one rail: 45 GB/s whether the run measured one rank per node or eight.
    TP 1: eight ranks per node drive all eight rails: 360 GB/s."""
    one_nic, node = _flat(45.0, 16, 1), _flat(360.0, 16, 8)
    tp8, tp1 = _dense(8), _dense(1)
    assert (tp8.dp_ranks_per_node, tp1.dp_ranks_per_node) == (1, 8)
    assert pj.project(tp8, one_nic).exposed_ms == pytest.approx(_by_hand(tp8, 45.0), rel=0.01)
    assert pj.project(tp8, node).exposed_ms == pytest.approx(_by_hand(tp8, 45.0), rel=0.01)
    assert pj.project(tp1, node).exposed_ms == pytest.approx(_by_hand(tp1, 360.0), rel=0.01)
    assert pj.project(tp1, one_nic).exposed_ms == pytest.approx(_by_hand(tp1, 360.0), rel=0.01)
    # the old reading (the node's busbw for a TP 8 group) understated its time eightfold
    assert _by_hand(tp8, 45.0) > 4 * _by_hand(tp8, 360.0)


def test_swapping_the_one_nic_curve_changes_tp8_and_not_tp1(tmp_path: Path) -> None:
    """A run that measured both shapes: TP 8's projection reads the one-rank-per-node curve, TP 1's
    the node-wide one. A worse single NIC (half) therefore changes TP 8 only."""
    def cells(one_nic: float) -> pd.DataFrame:
        rows = []
        for nranks, nhosts, busbw in ((2, 2, one_nic), (16, 2, 360.0)):
            rows += [{"run": "A", "test": "t", "collective": "all_reduce", "metric": "busbw_GBps",
                      "size_bytes": s, "median": busbw, "nranks": nranks, "nhosts": nhosts, "ratio": 1.0,
                      "ratio_ci_low": 1.0, "ratio_ci_high": 1.0, "n": 3} for s in (1e6, 1e10)]
        return pd.DataFrame(rows)

    def project(w: Workload, one_nic: float) -> pj.Projection:
        entry = pj.curves_from_cells(cells(one_nic), ["A"], w.dp_ranks_per_node)["A"]
        return pj.project(w, entry["curve"])

    # half the NIC: TP 8's gradient all-reduce takes twice as long (most of it hidden behind backward)
    assert project(_dense(8), 22.5).comm_ms == pytest.approx(2 * project(_dense(8), 45.0).comm_ms, rel=0.01)
    assert project(_dense(8), 22.5).step_ms > project(_dense(8), 45.0).step_ms
    assert project(_dense(1), 22.5) == project(_dense(1), 45.0)
    assert pj.curves_from_cells(cells(45.0), ["A"], 8)["A"]["curve"].ranks_per_node == 8
    assert pj.curves_from_cells(cells(45.0), ["A"], 1)["A"]["curve"].ranks_per_node == 1


# ---------------------------------------------------------------- the projection's interval

def _sentence_and_row(runs: list[RunDir]) -> tuple[str, dict]:
    comp = compare(runs)
    (statement,) = [s for s in comp.statements if s["decision"] == "projection"]
    return statement["text"], comp.projection["rows"][1]


def test_one_repetition_says_there_is_no_interval_and_three_give_one(tmp_path: Path) -> None:
    """Captured lab runs (h2 at 200 vs 100 Mbit/s, three repetitions each): with one repetition
    per run the sentence says why it has no interval; with three it has one around the estimate."""
    fast = [captured(f"all_reduce_200mbit_r{r}.txt") for r in range(3)]
    slow = [captured(f"all_reduce_100mbit_r{r}.txt") for r in range(3)]
    text, row = _sentence_and_row([captured_run(tmp_path / "f1", "fast", fast[:1]),
                                   captured_run(tmp_path / "s1", "slow", slow[:1])])
    assert "days longer (no interval: one repetition per run) than with fast" in text, text
    assert "delta_days_low" not in row
    text, _ = _sentence_and_row([captured_run(tmp_path / "f3a", "fast", fast),
                                 captured_run(tmp_path / "s1b", "slow", slow[:1])])
    assert "(no interval: one repetition in slow)" in text, text

    text, row = _sentence_and_row([captured_run(tmp_path / "f3", "fast", fast),
                                   captured_run(tmp_path / "s3", "slow", slow)])
    m = re.search(r"takes ([\d,.]+) days longer \(95% CI ([\d,.]+) to ([\d,.]+)\) than with fast", text)
    assert m, text
    point, low, high = (float(g.replace(",", "")) for g in m.groups())
    assert low < point < high and row["delta_days_low"] < row["delta_days"] < row["delta_days_high"]
    # half the link rate: the slow run takes longer, and the interval excludes no change
    assert low > 0


def _synthetic_run(path: Path, name: str, busbw: dict[float, float], reps: int, spread: float,
                   others: dict[str, dict[float, float]] | None = None) -> RunDir:
    """``reps`` repetitions whose log busbw at each size sits at the normal quantiles of a known
    spread around ``busbw`` (the same sample spread whatever ``reps``: only n changes); ``others``:
    curves of other collectives (alltoall, sendrecv), as suite torch measures them."""
    run = RunDir.create(path)
    run.write_run_info({"run_id": name, "suite": {"name": "training"}, "hosts": ["h1", "h2"], "state": "complete"})
    z = [NormalDist().inv_cdf((k + 0.5) / reps) for k in range(reps)]
    for op, curve in {"all_reduce": busbw, **(others or {})}.items():
        run.append_samples({"test": f"torch-{op}", "tool": "torch", "step": f"{op}-{rep:04d}", "rep": rep,
                            "pattern": "group", "kind": "summary", "collective": op, "nranks": 16,
                            "size_bytes": size, "busbw_GBps": bw * math.exp(spread * z[rep])}
                           for rep in range(reps) for size, bw in curve.items())
    return run


@pytest.mark.parametrize("workload", ["llama-70b-1024", "moe-8x7b-256"])
def test_the_interval_holds_the_estimate_and_shrinks_with_repetitions(tmp_path: Path, workload: str) -> None:
    """Synthetic curves with known spread (3% per repetition) and a true ratio of 0.8: the
    interval of the projected difference contains the point estimate, and is narrower with 12
    repetitions per run than with 3."""
    w = load_workload(workload)
    base = {float(1 << k): 40.0 * (1 - 0.5 ** (k - 9)) for k in range(10, 31, 2)}
    widths = []
    for reps in (3, 12):
        a = _synthetic_run(tmp_path / f"a{reps}", "A", base, reps, 0.03)
        b = _synthetic_run(tmp_path / f"b{reps}", "B", {s: v * 0.8 for s, v in base.items()}, reps, 0.03)
        comp = compare([a, b], workload=w)
        row = comp.projection["rows"][1]
        assert row["delta_days_low"] <= row["delta_days"] <= row["delta_days_high"], row
        assert row["delta_days"] > 0
        widths.append(row["delta_days_high"] - row["delta_days_low"])
        assert "95% CI" in comp.statements[0]["text"]
    assert widths[1] < widths[0] * 0.6, widths


# ---------------------------------------------------------------- requires: torch

OPTIONAL = """description: an optional torch step
settings: {repeat: 1, telemetry: "off"}
tests:
  - name: torch-allreduce
    tool: torch
    pattern: group
REQUIRES    params: {op: all_reduce, minbytes: 4K, maxbytes: 16K, iters: 1, warmup: 0}
    checks:
      - {metric: busbw_GBps, min: 90% baseline}
"""


@pytest.mark.parametrize("requires", [True, False])
def test_a_host_without_torch_skips_a_test_that_requires_it(tmp_path: Path, requires: bool) -> None:
    """A real interpreter without torch (python3 -S: no site-packages) on localhost: with
    ``requires: torch`` the step is skipped and JUnit says so, exit 0; without it, a failed step."""
    python = tmp_path / "python-without-torch"
    python.write_text('#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n')
    python.chmod(0o755)
    inventory = tmp_path / "hosts.ini"
    inventory.write_text(f"localhost ansible_connection=local torch_python={python} netdev=lo\n")
    suite = tmp_path / "optional.yaml"
    suite.write_text(OPTIONAL.replace("REQUIRES", "    requires: torch\n" if requires else ""))
    out, junit = tmp_path / "run", tmp_path / "junit.xml"
    res = subprocess.run([sys.executable, "-m", "benchharness", "run", f"suite={suite}", f"hosts={inventory}",
                          f"out={out}", f"junit={junit}"], capture_output=True, text=True, timeout=300)
    (step,) = RunDir(out).steps()
    root = ET.parse(junit).getroot()
    if requires:
        assert res.returncode == 0, res.stdout + res.stderr
        assert (step["status"], step["kind"], step["host"]) == ("skipped", "requirement", "localhost")
        assert step["message"] == "skipped: torch not found on localhost"
        assert (root.get("failures"), root.get("errors")) == ("0", "0")
        skipped = {c.get("name"): c.find("skipped").get("message") for c in root.iter("testcase")
                   if c.find("skipped") is not None}
        assert skipped[f"torch-allreduce: step {step['step']}"] == "skipped: torch not found on localhost"
        assert skipped["torch-allreduce: busbw_GBps >= 90% baseline"] == "skipped: torch not found on localhost"
    else:
        assert res.returncode == 3, res.stdout + res.stderr
        assert (step["status"], step["kind"]) == ("failed", "tool_missing") and "has no torch" in step["message"]
        assert root.get("errors") == "1" and root.get("failures") != "0"  # the step; its check has no samples


# ---------------------------------------------------------------- all-to-all and send/recv terms

SIZES = [float(1 << k) for k in range(16, 31, 2)]


def _entry(busbw: float, n: int = 8) -> dict:
    curve = pj.Curve(tuple(SIZES), tuple(busbw for _ in SIZES), n)
    ones = [1.0] * len(SIZES)
    return {"curve": curve, "test": "t", "sizes": SIZES, "ratio": ones, "ratio_low": ones, "ratio_high": ones,
            "n": [1] * len(SIZES)}


def test_expert_all_to_all_uses_the_measured_all_to_all_curve() -> None:
    """moe-8x7b-256: tokens of 8192 x 4096 x bf16 = 64 MiB per rank, 4 all-to-alls per MoE layer;
    at busbw B the time of one is S (E-1)/E / B (nccl-tests' all-to-all busbw factor)."""
    w = load_workload("moe-8x7b-256")
    tokens = 8192 * 4096 * 2
    a2a_curve = pj.Curve(tuple(SIZES), tuple(5.0 for _ in SIZES), 8)
    on_allreduce = pj.project(w, _entry(40.0)["curve"])
    measured = pj.project(w, _entry(40.0)["curve"], alltoall=a2a_curve)
    assert measured.a2a_ms == pytest.approx(4 * 32 * tokens * 7 / 8 / 5e9 * 1e3)
    assert measured.a2a_ms == pytest.approx(8 * on_allreduce.a2a_ms)  # 5 GB/s instead of 40
    assert measured.exposed_ms == on_allreduce.exposed_ms  # the gradient all-reduce is unchanged
    assert measured.p2p_ms == 0.0  # no pipeline in this workload

    both = {lab: {**_entry(40.0), "terms": {"alltoall": _entry(bw)}} for lab, bw in (("A", 10.0), ("B", 5.0))}
    used, notes = pj.term_curves(w, both, ["A", "B"])
    assert used == ["alltoall"] and notes == ["expert all-to-all: projected from each run's alltoall curve"]
    rows = pj.compare_projection(w, both, ["A", "B"], used)
    assert rows[1]["a2a_ms"] == pytest.approx(2 * rows[0]["a2a_ms"]) and rows[1]["delta_days"] > 0
    assert rows[1]["exposed_ms"] == rows[0]["exposed_ms"]


def test_a_run_without_the_curve_falls_back_to_all_reduce_for_every_run_and_says_so() -> None:
    w = load_workload("moe-8x7b-256")
    curves = {"A": {**_entry(40.0), "terms": {"alltoall": _entry(10.0)}}, "B": _entry(20.0)}
    used, notes = pj.term_curves(w, curves, ["A", "B"])
    assert used == []
    assert notes == ["expert all-to-all: projected from the all-reduce curve (no alltoall curve in B; "
                     "run suite torch to measure it)"]
    rows = pj.compare_projection(w, curves, ["A", "B"], used)
    # the same collective for both runs: the all-reduce's busbw, half in B
    assert rows[1]["a2a_ms"] == pytest.approx(2 * rows[0]["a2a_ms"])


def test_pipeline_send_recv_uses_the_sendrecv_curve() -> None:
    """llama-70b-1024: 16 micro-batches of 64 MiB, forward and back: 2 x 16 x S / B (busbw factor 1)."""
    w = load_workload("llama-70b-1024")
    p2p = pj.Curve(tuple(SIZES), tuple(8.0 for _ in SIZES), 2)
    measured = pj.project(w, _entry(40.0)["curve"], sendrecv=p2p)
    assert measured.p2p_ms == pytest.approx(2 * 16 * 64 * pj.MIB / 8e9 * 1e3)
    assert measured.a2a_ms == 0.0
    curves = {lab: {**_entry(40.0), "terms": {"sendrecv": _entry(8.0), "alltoall": _entry(1.0)}} for lab in "AB"}
    used, notes = pj.term_curves(w, curves, ["A", "B"])
    assert used == ["sendrecv"]  # llama has no experts: its all-to-all curve is not used
    assert notes == ["pipeline send/recv: projected from each run's sendrecv curve"]


def test_compare_reads_the_torch_suites_curves_and_intervals_cover_every_term(tmp_path: Path) -> None:
    """Stored runs with all_reduce, alltoall and sendrecv samples (as suite torch stores them):
    bench compare's projection uses the all-to-all curve, says so, and has an interval."""
    w = load_workload("moe-8x7b-256")
    base = {s: 40.0 for s in SIZES}
    a = _synthetic_run(tmp_path / "a", "A", base, 5, 0.02, {"alltoall": {s: 10.0 for s in SIZES}})
    b = _synthetic_run(tmp_path / "b", "B", base, 5, 0.02, {"alltoall": {s: 5.0 for s in SIZES}})
    comp = compare([a, b], workload=w)
    proj = comp.projection
    # the synthetic runs have one rank per host: a TP 1 group of 8 ranks per node drives 8 NICs
    assert proj["notes"][0] == "expert all-to-all: projected from each run's alltoall curve"
    assert [n.split(": ", 1)[1] for n in proj["notes"] if n.startswith("gradient all-reduce")] == [
        "the 16 ranks, 1 per node curve x 8 (a DP group of 8 rank(s) per node with TP 1 drives "
        "8 of the node's 8 NICs)"] * 2
    assert proj["notes"][3:] == [  # no NIC price or power in these runs' inventories: said, not guessed
        "NIC and optics price not in the projection: no run has it (inventory nic_price_usd / optic_price_usd)",
        "NIC and optics power not in the projection: no run has it (inventory nic_power_w / optic_power_w, "
        "or measured NIC power)"]
    rows = proj["rows"]
    assert rows[1]["a2a_ms"] == pytest.approx(2 * rows[0]["a2a_ms"], rel=0.01)
    assert rows[1]["exposed_ms"] == pytest.approx(rows[0]["exposed_ms"], rel=0.01)
    assert rows[1]["delta_days_low"] < rows[1]["delta_days"] < rows[1]["delta_days_high"]
    assert "95% CI" in comp.statements[0]["text"]


# ---------------------------------------------------------------- NUMA placement of torchrun's ranks

INVENTORIES = Path(__file__).resolve().parent.parent / "inventories"


def rail_hosts(name: str = "dgx-b200-8rail.ini", **override: object) -> tuple[Host, ...]:
    """The worked 8-rail inventory's two GPU nodes (rails with nearest_gpu and numa_node)."""
    hs = load_inventory(INVENTORIES / name).hosts
    return tuple(dataclasses.replace(h, rails=tuple(dataclasses.replace(r, **override) for r in h.rails))
                 if override else h for h in hs)


def test_torchrun_ranks_get_their_gpus_numa_nodes_from_the_rails() -> None:
    tool = get_tool("torch")
    for cmd in tool.commands(step({}, hs=rail_hosts())):
        argv = list(cmd.argv)
        assert argv[argv.index("--nproc_per_node") + 1] == "8"
        assert argv[-2:] == ["--numa-nodes", "0,0,0,0,1,1,1,1"]  # local rank i -> GPU i's node
    # four ranks per host: GPUs 0-3, all on node 0
    four = tool.commands(step({"procs_per_host": 4}, hs=rail_hosts()))[0].argv
    assert list(four[-2:]) == ["--numa-nodes", "0,0,0,0"]
    # no NUMA facts, or CPU hosts: no binding asked for
    assert "--numa-nodes" not in tool.commands(step({}, hs=rail_hosts(numa_node=None)))[0].argv
    assert "--numa-nodes" not in tool.commands(step({}))[0].argv
    mi300x = tool.commands(step({}, hs=rail_hosts("mi300x-8rail.ini")))[1].argv
    assert list(mi300x[-2:]) == ["--numa-nodes", "0,0,0,0,1,1,1,1"]
    train = get_tool("torch-train").commands(step({"proxy": "ddp"}, tool="torch-train", hs=rail_hosts()))
    assert list(train[0].argv[-2:]) == ["--numa-nodes", "0,0,0,0,1,1,1,1"]


def test_cpulist_parses_ranges_and_single_cpus() -> None:
    from benchharness.onhost.torch_dist import parse_cpulist

    assert parse_cpulist("0-3,8-11\n") == {0, 1, 2, 3, 8, 9, 10, 11}
    assert parse_cpulist("5") == {5} and parse_cpulist("\n") == set()


BIND = """import os, sys
sys.path.insert(0, sys.argv[1])
import torch_dist
before = os.sched_getaffinity(0)
got = torch_dist.bind_numa(sys.argv[3], int(sys.argv[4]), root=sys.argv[2])
print(sorted(got) if got is not None else None, sorted(os.sched_getaffinity(0)) == sorted(before))
print(sorted(os.sched_getaffinity(0)))
"""


def test_a_rank_binds_itself_to_its_numa_nodes_cpus(tmp_path: Path) -> None:
    """The host program's own binding, in a real process, against a fake sysfs node tree: local
    rank 1 of ``--numa-nodes 0,1`` takes node1's CPUs (the first CPU this process may use)."""
    from benchharness.onhost import torch_dist

    cpu = min(os.sched_getaffinity(0))
    for node, cpus in (("node0", "0-4095"), ("node1", str(cpu))):
        (tmp_path / "sys" / node).mkdir(parents=True)
        (tmp_path / "sys" / node / "cpulist").write_text(cpus + "\n")
    folder = str(Path(torch_dist.__file__).parent)

    def run(nodes: str, local: int) -> tuple[list[str], str]:
        proc = subprocess.run([sys.executable, "-c", BIND, folder, str(tmp_path / "sys"), nodes, str(local)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines(), proc.stderr

    out, err = run("0,1", 1)
    assert out == [f"[{cpu}] False", f"[{cpu}]"] and err == ""
    out, err = run("0,7", 1)  # no node7 in this sysfs: said, and the rank runs unbound
    assert out[0] == "None True" and "cannot bind to NUMA node 7" in err and "not bound" in err
    out, err = run("0", 3)
    assert out[0] == "None True" and "local rank 3 has no NUMA node" in err


def test_an_interval_too_wide_to_decide_is_said_not_printed(tmp_path: Path) -> None:
    """Two repetitions with a wide spread give a ratio interval that spans orders of magnitude:
    the sentence says so and how many repetitions would narrow it, and prints no bounds."""
    fast, slow = {s: 40.0 for s in SIZES}, {s: 20.0 for s in SIZES}
    text, row = _sentence_and_row([_synthetic_run(tmp_path / "a", "A", fast, 2, 0.8),
                                   _synthetic_run(tmp_path / "b", "B", slow, 2, 0.8)])
    assert "delta_days_low" in row and pj.too_wide(row["delta_days_low"], row["delta_days_high"]), row
    assert "(interval too wide to decide: repeat=8 would narrow it)" in text and "95% CI" not in text, text
    text, row = _sentence_and_row([_synthetic_run(tmp_path / "c", "A", fast, 5, 0.02),
                                   _synthetic_run(tmp_path / "d", "B", slow, 5, 0.02)])
    assert "95% CI" in text and "too wide" not in text, text
    assert pj.too_wide(-1.0, 5.0) and pj.too_wide(1.0, 3.5) and not pj.too_wide(1.0, 2.9)
