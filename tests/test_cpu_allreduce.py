"""mpirun argv builder, collective adapters' command lines, and REAL runs of the CPU benchmark.

The real runs use Open MPI 4.1 (Debian openmpi-bin) and mpi4py on this machine, localhost only,
3 ranks over the TCP BTL on loopback: a few seconds each. Multi-host runs go through the lab.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchharness.core.errors import ConfigError, ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.tools import get_tool, nccl_tests
from benchharness.tools.mpi_launch import build_mpirun, check_env
from benchharness.tools.nccl_parse import parse_nccl_tests, strip_tags
from benchharness.transport.base import wrap_command

REPO = Path(__file__).resolve().parents[1]
LOCAL = Host("localhost", "127.0.0.1", local=True)
HOSTILE = "a b; $(touch /tmp/bench-pwned) 'q' \"dq\" `id` \\ %s {x}"

pytestmark = [pytest.mark.skipif(shutil.which("mpirun") is None, reason="Open MPI's mpirun is not installed"),
              pytest.mark.xdist_group("loopback")]  # fixed ports on this machine's loopback (tests/turns.py)


def lab_hosts() -> tuple[Host, ...]:
    agent = "/run/benchlab/ssh-agent.sh"
    return tuple(Host(f"lab{i}", f"198.18.0.{i}", user="root", data_ip=f"198.18.1.{i}",
                      vars={"mpi_rsh_agent": agent, "bench_python": "/work/main/.venv/bin/python"})
                 for i in (1, 2, 3))


def test_mpirun_argv_for_lab_hosts() -> None:
    argv = build_mpirun(lab_hosts(), 1, ["python3", "prog.py", "-b", "8"], {"UCX_TLS": "tcp"},
                        rsh_agent="/run/benchlab/ssh-agent.sh", if_include="198.18.1.0/24",
                        allow_run_as_root=True)
    # mpirun reaches the hosts by their management address, not the data address
    assert argv == ["mpirun", "--allow-run-as-root", "--tag-output", "-np", "3",
                    "-H", "198.18.0.1:1,198.18.0.2:1,198.18.0.3:1", "--map-by", "ppr:1:node",
                    "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",
                    "--mca", "btl_tcp_if_include", "198.18.1.0/24", "--mca", "oob_tcp_if_include", "198.18.1.0/24",
                    "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "plm_rsh_agent", "/run/benchlab/ssh-agent.sh",
                    "-x", "UCX_TLS=tcp", "python3", "prog.py", "-b", "8"]


def test_hostile_env_values_stay_one_argument() -> None:
    argv = build_mpirun([LOCAL], 2, ["true"], {"NCCL_SOCKET_IFNAME": HOSTILE})
    assert argv[argv.index("-x") + 1] == f"NCCL_SOCKET_IFNAME={HOSTILE}"
    # what a transport sends through ssh: quoted, and split back to the very same argv
    assert shlex.split(wrap_command(argv))[-len(argv):] == argv


@pytest.mark.parametrize("env", [{"BAD-NAME": "1"}, {"1X": "1"}, {"A B": "1"}, {"X": "a\nb"}, {"X": "a\0b"},
                                 {"OMPI_COMM_WORLD_RANK": "0"}, {"X": ["list"]}])
def test_env_is_checked(env: dict) -> None:
    with pytest.raises(ValueError, match="env"):
        check_env(env)


def test_slots_and_arguments_checked() -> None:
    with pytest.raises(ValueError):
        build_mpirun([], 1, ["true"])
    with pytest.raises(ValueError):
        build_mpirun([LOCAL], 0, ["true"])
    assert check_env({"NCCL_IB_DISABLE": 1, "NCCL_NET_GDR_READ": True}) == {"NCCL_IB_DISABLE": "1",
                                                                           "NCCL_NET_GDR_READ": "1"}


def gpu_host(name: str, gpus: int, vendor: str | None = None, **extra: object) -> Host:
    vars_: dict[str, object] = {"gpus": gpus, **extra}
    if vendor:
        vars_["gpu_vendor"] = vendor
    return Host(name, f"10.3.0.{len(name)}", user="bench", data_ip=f"10.4.0.{ord(name[-1])}", vars=vars_)


def test_collective_picks_backend_per_inventory() -> None:
    nv = (gpu_host("gpu1", 8), gpu_host("gpu2", 8))
    amd = (gpu_host("mi1", 8, "amd", rccl_tests_dir="/opt/rccl-tests/build"), gpu_host("mi2", 8, "AMD"))
    cpu = (Host("c1", "198.18.0.1"), Host("c2", "198.18.0.2", vars={"gpus": 0}))
    assert nccl_tests.backend_for(nv) is nccl_tests.NCCL
    assert nccl_tests.backend_for(amd) is nccl_tests.RCCL
    assert nccl_tests.backend_for(cpu) is nccl_tests.CPU
    with pytest.raises(ConfigError, match="mix"):
        nccl_tests.backend_for((nv[0], cpu[0]))
    tool = get_tool("collective")
    params = {"op": "all_reduce", "minbytes": "8", "maxbytes": "128M", "redop": "sum", "gpus_per_proc": 2,
              "env": {"NCCL_IB_HCA": "mlx5_0,mlx5_1"}}
    (cmd,) = tool.commands(Step("s", "t", "collective", params, amd, pattern="group"))
    argv = list(cmd.argv)
    assert cmd.host.name == "mi1" and argv[0] == "mpirun" and "--allow-run-as-root" not in argv
    assert argv[argv.index("-np") + 1] == "8"  # 2 hosts x (8 GPUs / 2 per process)
    assert argv[argv.index("-H") + 1] == "10.3.0.3:4,10.3.0.3:4"  # management addresses
    assert "btl_tcp_if_include" not in argv  # no interface guessed from an address
    assert argv[argv.index("--map-by") + 1] == "ppr:4:node" and argv[argv.index("--bind-to") + 1] == "numa"
    tail = argv[argv.index("/opt/rccl-tests/build/all_reduce_perf"):]
    assert tail == ["/opt/rccl-tests/build/all_reduce_perf", "-b", "8", "-e", "134217728", "-f", "2", "-n", "20",
                    "-w", "5", "-c", "1", "-o", "sum", "-g", "2"]
    assert "NCCL_IB_HCA=mlx5_0,mlx5_1" in argv


@pytest.mark.parametrize(("params", "words"), [
    ({"op": "allreduce"}, "op"), ({"minbytes": "1G", "maxbytes": "1M"}, "minbytes"), ({"iters": 0}, "iters"),
    ({"env": {"BAD NAME": "x"}}, "env"), ({"require_gdr": "yes"}, "require_gdr"), ({"redop": "xor"}, "redop"),
    ({"bogus": 1}, "unknown"),
])
def test_params_checked(params: dict, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        get_tool("nccl-tests").check_params(params)


def test_cpu_backend_refuses_gpu_only_ops() -> None:
    step = Step("s", "t", "collective", {"op": "sendrecv"}, (Host("c1", "198.18.0.1"),), pattern="group")
    with pytest.raises(ConfigError, match="sendrecv"):
        get_tool("collective").commands(step)


def run_mpirun(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=REPO, check=False)


def test_hostile_env_value_arrives_intact_through_mpirun() -> None:
    argv = build_mpirun([LOCAL], 1, [sys.executable, "-c", "import os; print(os.environ['BENCH_HOSTILE'])"],
                        {"BENCH_HOSTILE": HOSTILE}, if_include="127.0.0.0/8", allow_run_as_root=True)
    proc = run_mpirun(argv, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert strip_tags(proc.stdout).strip() == HOSTILE
    assert not Path("/tmp/bench-pwned").exists()


def test_real_cpu_allreduce_three_ranks_localhost() -> None:
    program = [sys.executable, "-m", "benchharness.onhost.mpi_allreduce", "-b", "8", "-e", "1M", "-f", "4",
               "-n", "5", "-w", "2"]
    argv = build_mpirun([LOCAL], 3, program, {"PYTHONPATH": str(REPO)}, if_include="127.0.0.0/8",
                        allow_run_as_root=True, oversubscribe=True)
    proc = run_mpirun(argv)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = parse_nccl_tests(proc.stdout + proc.stderr)
    assert run.meta["collective"] == "all_reduce" and len(run.ranks) == 3
    sizes = [8 * 4**k for k in range(9)]  # 8 .. 512K; 2M is above -e 1M
    assert sorted({r["size_bytes"] for r in run.records}) == sizes
    assert len(run.records) == 2 * len(sizes)
    assert all(r["wrong"] == 0 for r in run.records)
    for rec in run.records:  # algbw = size / time (10^9 B/s), printed with 2 decimals
        assert rec["time_us"] > 0
        assert rec["algbw_GBps"] == pytest.approx(rec["size_bytes"] / rec["time_us"] / 1e3, abs=0.006)
    assert run.meta["out_of_bounds"] == 0


def test_real_cpu_collectives_through_the_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    program = tmp_path / "mpi_allreduce.py"
    monkeypatch.setattr(nccl_tests, "CPU_PROGRAM", str(program))
    host = Host("localhost", "127.0.0.1", local=True, vars={"bench_python": sys.executable})
    tool = get_tool("collective")
    for op in ("all_gather", "reduce_scatter", "alltoall", "broadcast"):
        params = {"op": op, "minbytes": "1K", "maxbytes": "64K", "stepfactor": 8, "iters": 3, "warmup": 1,
                  "procs_per_host": 3}
        tool.check_params(params)
        step = Step(f"s-{op}", "collectives", "collective", params, (host,), pattern="group")
        (cmd,) = tool.commands(step)
        for local, remote in cmd.uploads:  # what the runner does before starting the command
            shutil.copy(local, remote)
        argv = [cmd.argv[0], "--oversubscribe", *cmd.argv[1:]]  # 3 ranks on this 2-core machine
        started = time.time()
        proc = run_mpirun(argv)
        result = CommandResult(command=cmd, rc=proc.returncode, stdout=proc.stdout, stderr=proc.stderr,
                               started=started, ended=time.time())
        records = tool.parse_step(step, [result])
        results = [r for r in records if r["kind"] == "summary"]
        assert {r["collective"] for r in results} == {op}
        assert len(results) == 6 and all(r["wrong"] == 0 for r in results)
        assert all(r["backend"] == "mpi4py" and r["nccl_network"] is None and r["step"] == step.id
                   for r in results)
        assert records[-1]["kind"] == "footer" and records[-1]["nranks"] == 3
        assert tool.parse_text(proc.stdout)[0]["backend"] == "mpi4py"


FAULTY = """
import sys
import numpy as np
from benchharness.onhost import mpi_allreduce as m
real = m.Bench.run
def run(self, send, recv, in_place):
    real(self, send, recv, in_place)
    if self.rank == 1 and recv.size:
        recv[-1] += np.float32(1.0)  # one element off on one rank
m.Bench.run = run
sys.exit(m.main(["-b", "64", "-e", "1K", "-f", "4", "-n", "1", "-w", "0"]))
"""


def test_real_wrong_results_are_counted_and_fail() -> None:
    argv = build_mpirun([LOCAL], 2, [sys.executable, "-c", FAULTY], {"PYTHONPATH": str(REPO)},
                        if_include="127.0.0.0/8", allow_run_as_root=True, oversubscribe=True, tag_output=False)
    proc = run_mpirun(argv)
    assert proc.returncode != 0
    assert "# Out of bounds values : 6 FAILED" in proc.stdout  # 3 sizes x 2 placements
    with pytest.raises(ToolFailure) as info:
        parse_nccl_tests(proc.stdout + proc.stderr)
    assert info.value.kind == "wrong_results" and "1 wrong elements at 64 B" in str(info.value)
