"""launcher=slurm: command lines (pure), then a real local Slurm on a 3-host loopback lab.

The real part starts Debian's munged, slurmctld and one slurmd per lab host (tests/slurm_cluster.py)
and drives the real `bench` command: the CPU all-reduce suite runs as one ``srun --mpi=pmix``
over the three nodes, iperf3 servers and clients run as job steps, and the run's own allocation
is released at the end. Skipped with the reason when slurm-wlm or munge is not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import make_lab
from slurm_cluster import LocalSlurm, local_slurm, slurm_missing

from benchharness.core.errors import UsageError
from benchharness.core.model import Host, Step
from benchharness.execution.launchers import launcher_name
from benchharness.lab.control import LabInfo
from benchharness.results.store import RunDir
from benchharness.tools.mpi_launch import build_srun
from benchharness.tools.nccl_tests import CPU, NCCL
from benchharness.transport.slurm import SlurmLauncher, join_allocation, step_argv


def _hosts(n: int, **vars: object) -> list[Host]:
    return [Host(name=f"h{i}", address=f"198.18.9.{i}", vars={"slurm_node": f"node{i:02d}", **vars})
            for i in range(1, n + 1)]


# -- command lines ---------------------------------------------------------------------------

def test_step_argv_runs_one_task_on_the_hosts_node_inside_the_allocation() -> None:
    host = _hosts(1, slurm_partition="nic", slurm_args="--exclude=bad01 --qos=high")[0]
    argv = step_argv(host, ["iperf3", "-s", "-p", "5201"], "42", limit_s=61)
    assert argv[:2] == ["srun", "--jobid=42"]
    assert "--nodelist=node01" in argv and "-N1" in argv and "-n1" in argv and "--overlap" in argv
    assert "--time=2" in argv  # minutes, rounded up
    assert argv[argv.index("--") - 3:argv.index("--")] == ["--partition=nic", "--exclude=bad01", "--qos=high"]
    assert argv[argv.index("--") + 1:] == ["iperf3", "-s", "-p", "5201"]
    assert "--jobid=42" not in step_argv(host, ["true"], None, None)


def test_an_adapters_own_srun_joins_the_allocation_unless_it_names_one() -> None:
    assert join_allocation(["srun", "-N2", "--", "x"], "7") == ["srun", "--jobid=7", "-N2", "--", "x"]
    assert join_allocation(["srun", "--jobid=3", "x"], "7") == ["srun", "--jobid=3", "x"]
    assert join_allocation(["srun", "x"], None) == ["srun", "x"]


def test_build_srun_puts_mca_settings_in_the_environment() -> None:
    argv, env = build_srun(["n1", "n2", "n3"], 4, ["all_reduce_perf", "-g", "1"], {"NCCL_DEBUG": "INFO"},
                           if_include="198.18.9.0/24", mca={"btl_tcp_links": "2"})
    assert argv[:6] == ["srun", "--nodelist=n1,n2,n3", "-N3", "--ntasks-per-node=4", "--mpi=pmix",
                        "--kill-on-bad-exit=1"]
    assert argv[-4:] == ["--", "all_reduce_perf", "-g", "1"]
    assert env == {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,vader,self", "OMPI_MCA_btl_tcp_if_include": "198.18.9.0/24",
                   "OMPI_MCA_oob_tcp_if_include": "198.18.9.0/24", "OMPI_MCA_btl_tcp_links": "2",
                   "NCCL_DEBUG": "INFO"}
    with pytest.raises(ValueError, match="same number of ranks"):
        build_srun(["n1", "n2"], [8, 4], ["x"])


def test_collectives_use_srun_when_the_hosts_launch_through_slurm() -> None:
    hosts = tuple(_hosts(2, gpus=8, slurm_mpi="pmi2"))
    step = Step(id="s1", test="ar", tool="nccl-tests", params={"op": "all_reduce"}, hosts=hosts,
                pattern="group")
    (cmd,) = NCCL.commands(step, launcher="slurm")
    assert cmd.argv[0] == "srun" and cmd.role == "launcher" and cmd.host.name == "h1"
    assert "--nodelist=node01,node02" in cmd.argv and "--ntasks-per-node=8" in cmd.argv
    assert "--mpi=pmi2" in cmd.argv and "mpirun" not in cmd.argv
    assert cmd.argv[cmd.argv.index("--") + 1].endswith("all_reduce_perf")
    ssh_step = Step(id="s2", test="ar", tool="mpi-collective", params={}, hosts=tuple(_hosts(2)), pattern="group")
    assert CPU.commands(ssh_step)[0].argv[0] == "mpirun"


def test_launcher_name_comes_from_the_command_line_or_the_inventory() -> None:
    assert launcher_name(None, _hosts(2)) == "ssh"
    assert launcher_name(None, _hosts(2, bench_launcher="slurm")) == "slurm"
    assert launcher_name("ssh", _hosts(2, bench_launcher="slurm")) == "ssh"
    with pytest.raises(UsageError, match="unknown"):
        launcher_name("pbs", _hosts(1))
    mixed = [*_hosts(1, bench_launcher="slurm"), Host(name="x", address="198.18.9.9")]
    mixed.append(Host(name="y", address="198.18.9.10", vars={"bench_launcher": "ssh"}))
    with pytest.raises(UsageError, match="disagree"):
        launcher_name(None, mixed)


def test_a_users_own_allocation_is_used_and_never_cancelled() -> None:
    launcher = SlurmLauncher(_hosts(2), env={"SLURM_JOB_ID": "99", "PATH": os.environ.get("PATH", "")})
    assert launcher.allocation() == "99"
    launcher.close()  # must not scancel 99: bench did not make it
    assert launcher.jobid == "99"


# -- a real Slurm on the lab -----------------------------------------------------------------

@pytest.fixture(scope="module")
def slurm_lab() -> Iterator[tuple[LabInfo, LocalSlurm]]:
    reason = slurm_missing()
    if reason:
        pytest.skip(reason)
    with make_lab("sl3", 3) as info, local_slurm(info) as cluster:
        yield info, cluster


def bench(cluster: LocalSlurm, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=timeout, env=cluster.env)


@pytest.mark.lab
def test_allreduce_suite_runs_through_a_real_slurm(slurm_lab, tmp_path: Path) -> None:
    info, cluster = slurm_lab
    out = tmp_path / "run"
    res = bench(cluster, "run", "suite=allreduce", f"hosts={info.inventory}", "launcher=slurm",
                "maxbytes=1M", "repeat=1", "nccl_algo=default", f"out={out}")
    assert res.returncode == 0, res.stderr + cluster.log("slurmctld")[-2000:]
    run = RunDir(out)
    assert run.run_info()["launcher"] == "slurm"
    (meta,) = [json.loads(p.read_text()) for p in run.raw_files()]
    assert meta["argv"][0] == "srun" and "--mpi=pmix" in meta["argv"] and "-N3" in meta["argv"]
    rows = [s for s in run.samples() if s.get("busbw_GBps") is not None]
    assert rows and all(s["nhosts"] == 3 and s["busbw_GBps"] >= 0 for s in rows)
    assert {s["size_bytes"] for s in rows} >= {8, 1 << 20}
    assert max(s["busbw_GBps"] for s in rows if s["size_bytes"] == 1 << 20) > 0  # 8 B rounds to 0.00
    # the run made its own allocation and gave it back
    jobs = cluster.run("squeue", "-h", "-o", "%i %j %T").stdout.split()
    assert "bench" not in jobs, jobs


@pytest.mark.lab
def test_iperf3_pairs_run_as_job_steps(slurm_lab, tmp_path: Path) -> None:
    info, cluster = slurm_lab
    out = tmp_path / "run"
    res = bench(cluster, "run", "suite=quick", f"hosts={info.inventory}", "launcher=slurm",
                "length=128K", "duration=1", f"out={out}")
    assert res.returncode == 0, res.stderr
    run = RunDir(out)
    summaries = [s for s in run.samples() if s.get("kind", "summary") == "summary"]
    assert {frozenset((s["server"], s["client"])) for s in summaries} == {
        frozenset(p) for p in (("h1", "h2"), ("h2", "h3"), ("h1", "h3"))}
    assert all(s["bw_avg_gbps"] > 0.1 for s in summaries)
    # every server ran on its own node: it listened on that host's lab address, which exists only there
    servers = [(json.loads(p.read_text()), p.with_suffix(".stdout").read_text()) for p in run.raw_files()]
    servers = [(m, text) for m, text in servers if m["role"] == "server"]
    assert len(servers) == 3 and all(m["rc"] == 0 for m, _ in servers)
    assert all("Server listening" in text for _, text in servers)
    # ... and each server and client was a job step that a slurmd launched
    launched = sum(cluster.log(f"slurmd-{h}").count("launch task StepId=") for h in cluster.nodes)
    assert launched >= 2 * len(run.steps())
    assert cluster.run("squeue", "-h").stdout.strip() == ""
