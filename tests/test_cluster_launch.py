"""Collective launch lines for GPU clusters: `bench plan` golden files for 2 and 16 nodes x 8 GPUs x
8 rails (INI and YAML inventories, jump host), and the settings behind them.

What the lines follow: Open MPI's mpirun(1) (``--map-by ppr:N:node``, ``--bind-to numa``,
``-x NAME``, ``--prefix``, ``--mca plm_rsh_agent`` / ``plm_rsh_args``, ``pml ucx``,
``btl_tcp_if_include`` / ``oob_tcp_if_include``), NCCL's environment variables (``NCCL_IB_HCA`` with
``=`` for exact device names and ``:port``, ``NCCL_SOCKET_IFNAME``, ``NCCL_IB_GID_INDEX``,
``NCCL_IB_TC``, ``NCCL_IB_SL``) and Slurm's srun(1) (``--gpus-per-node``, ``--cpu-bind=ldoms``,
``--gpu-bind``, ``--export=ALL``). Set BENCH_UPDATE_GOLDEN=1 to rewrite the golden files.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.config.suites import load_suite
from benchharness.core.errors import ConfigError
from benchharness.core.model import Host, Rail, Step
from benchharness.planning.describe import describe_plan
from benchharness.planning.plan import build_plan
from benchharness.tools import get_tool
from benchharness.tools.mpi_launch import build_mpirun, gpu_count, launch_settings, rsh_args
from benchharness.tools.nccl_tests import CPU, NCCL, RCCL
from benchharness.tools.ucx_perftest import UcxPerftestAdapter

FIXTURES = Path(__file__).parent / "fixtures"
INVENTORIES = FIXTURES / "inventories" / "gpucluster"
GOLDEN = FIXTURES / "golden"


def rails(node: int) -> tuple[Rail, ...]:
    """8 RoCE rails, one per GPU, each on its own /24 (rail i: 10.(200+i).0.node), GID index 3."""
    return tuple(Rail(i, netdev=f"ens{i + 1}np0", rdma_dev=f"mlx5_{i}", rdma_port=1, data_ip=f"10.{200 + i}.0.{node}",
                      gid_index=3, numa_node=i // 4, nearest_gpus=(i,)) for i in range(8))


def cluster(name: str) -> list[Host]:
    inv = load_inventory(INVENTORIES / name)
    return [dataclasses.replace(h, rails=rails(n)) for n, h in enumerate(inv.hosts, start=1)]


def plan_text(name: str, launcher: str) -> str:
    hosts = cluster(name)
    text = describe_plan(build_plan(load_suite("allreduce"), hosts, launcher=launcher))
    return text.replace(str(Path(load_suite("allreduce").path)), "suites/allreduce.yaml")


@pytest.mark.parametrize("nodes", [2, 16])
@pytest.mark.parametrize("launcher", ["ssh", "slurm"])
def test_bench_plan_golden_for_gpu_clusters(nodes: int, launcher: str) -> None:
    text = plan_text(f"gpu{nodes}.ini", launcher)
    assert plan_text(f"gpu{nodes}.yml", launcher) == text  # INI and YAML say the same
    golden = GOLDEN / f"allreduce-{nodes}x8-{launcher}.txt"
    if os.environ.get("BENCH_UPDATE_GOLDEN"):
        golden.write_text(text + "\n")
    assert text + "\n" == golden.read_text()


def test_two_node_mpirun_line_exactly() -> None:
    hosts = tuple(cluster("gpu2.ini"))
    (cmd,) = NCCL.commands(Step("s", "allreduce", "nccl-tests", {"maxbytes": "8G"}, hosts, pattern="group"))
    hca = ",".join(f"mlx5_{i}:1" for i in range(8))
    ucx = ",".join(f"mlx5_{i}:1" for i in range(8))
    assert list(cmd.argv) == [
        "mpirun", "--tag-output", "--prefix", "/opt/openmpi", "-np", "16", "-H", "dgx01:8,dgx02:8",
        "--map-by", "ppr:4:numa", "--bind-to", "numa",  # GPUs 0-3 on NUMA 0, 4-7 on NUMA 1
        "--mca", "pml", "ucx", "--mca", "osc", "ucx", "--mca", "btl", "^openib",
        "--mca", "oob_tcp_if_include", "eno1", "--mca", "plm_rsh_no_tree_spawn", "1",
        "--mca", "plm_rsh_agent", "ssh", "--mca", "plm_rsh_args",
        # no key or known_hosts path of the controller: the launch node uses its own
        "-l bench -o StrictHostKeyChecking=yes -J bench@bastion.example.net:2222 -o BatchMode=yes",
        "-x", "PATH", "-x", "LD_LIBRARY_PATH",
        "-x", f"NCCL_IB_HCA=={hca}", "-x", "NCCL_SOCKET_IFNAME==eno1", "-x", "NCCL_IB_GID_INDEX=3",
        "-x", "NCCL_DEBUG=INFO", "-x", "NCCL_DEBUG_SUBSYS=INIT,NET",  # require_network: IB by default
        "-x", f"UCX_NET_DEVICES={ucx}",
        "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8589934592", "-f", "2", "-n", "20", "-w", "5",
        "-c", "1", "-g", "1"]


def test_two_node_srun_line_and_environment_exactly() -> None:
    hosts = tuple(cluster("gpu2.yml"))
    step = Step("s", "allreduce", "nccl-tests", {"ib_tc": 106, "ib_sl": 3}, hosts, pattern="group")
    (cmd,) = NCCL.commands(step, launcher="slurm")
    assert list(cmd.argv[:cmd.argv.index("--")]) == [
        "srun", "--nodelist=dgx01,dgx02", "-N2", "--ntasks-per-node=8", "--mpi=pmix", "--kill-on-bad-exit=1",
        "--overlap", "--export=ALL", "--gpus-per-node=8", "--gpu-bind=none", "--distribution=block:block",
        "--cpu-bind=ldoms"]
    hca = ",".join(f"mlx5_{i}:1" for i in range(8))
    assert dict(cmd.env) == {
        "OMPI_MCA_pml": "ucx", "OMPI_MCA_osc": "ucx", "OMPI_MCA_btl": "^openib", "OMPI_MCA_oob_tcp_if_include": "eno1",
        "UCX_NET_DEVICES": hca, "NCCL_IB_HCA": f"={hca}", "NCCL_SOCKET_IFNAME": "=eno1", "NCCL_IB_GID_INDEX": "3",
        "NCCL_IB_TC": "106", "NCCL_IB_SL": "3", "NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}


def test_a_suites_env_overrides_what_the_inventory_tells_nccl() -> None:
    hosts = tuple(cluster("gpu2.ini"))
    step = Step("s", "t", "nccl-tests", {"env": {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_IB_GID_INDEX": 1}}, hosts,
                pattern="group")
    argv = NCCL.commands(step)[0].argv
    assert "NCCL_IB_HCA==mlx5_0:1" in argv and "NCCL_IB_GID_INDEX=1" in argv
    assert not any(a.startswith("NCCL_IB_HCA==mlx5_0:1,") for a in argv)
    # RCCL reads the same NCCL_* names
    amd = tuple(dataclasses.replace(h, vars={**h.vars, "gpu_vendor": "amd"}) for h in hosts)
    assert "NCCL_IB_GID_INDEX=3" in RCCL.commands(Step("s", "t", "rccl-tests", {}, amd, pattern="group"))[0].argv


def test_rails_that_disagree_on_the_gid_index_are_a_config_error() -> None:
    a, b = cluster("gpu2.ini")
    odd = dataclasses.replace(b, rails=(*b.rails[:7], dataclasses.replace(b.rails[7], gid_index=1)))
    with pytest.raises(ConfigError, match=r"dgx02/rail7=1"):
        NCCL.commands(Step("s", "t", "nccl-tests", {}, (a, odd), pattern="group"))


def test_hosts_with_different_ssh_settings_cannot_share_one_rsh_line() -> None:
    a, b = cluster("gpu2.ini")
    with pytest.raises(ValueError, match="differ in ssh settings"):
        rsh_args([a, dataclasses.replace(b, user="root")])
    with pytest.raises(ValueError, match="space"):
        rsh_args([dataclasses.replace(a, vars={**a.vars, "launch_ssh_key": "/home/my keys/id"})])
    assert "-p 2200" in (rsh_args([dataclasses.replace(a, port=2200)]) or "")


def test_the_launch_node_gets_its_own_key_never_the_controllers() -> None:
    a, b = cluster("gpu2.ini")
    assert a.key_file and a.key_file not in (rsh_args([a, b]) or "")
    key = {"launch_ssh_key": "/home/bench/.ssh/launch_ed25519", "launch_known_hosts": "/etc/ssh/cluster_known_hosts"}
    both = [dataclasses.replace(h, vars={**h.vars, **key}) for h in (a, b)]
    assert rsh_args(both) == ("-l bench -i /home/bench/.ssh/launch_ed25519 -o IdentitiesOnly=yes "
                              "-o UserKnownHostsFile=/etc/ssh/cluster_known_hosts -o StrictHostKeyChecking=yes "
                              "-J bench@bastion.example.net:2222 -o BatchMode=yes")


def test_interfaces_come_from_the_inventory_never_from_an_address() -> None:
    plain = Host("n1", "10.0.0.1", data_ip="10.1.0.1")
    assert launch_settings([plain], gpus=False).if_include is None
    lab = Host("h1", "198.18.4.1", vars={"bench_lab_subnet": "198.18.4.0/24"})
    assert launch_settings([lab], gpus=False).if_include == "198.18.4.0/24"
    pinned = Host("n1", "10.0.0.1", vars={"mpi_if_include": "10.9.0.0/16", "mgmt_netdev": "eno1"})
    assert launch_settings([pinned], gpus=False).if_include == "10.9.0.0/16"
    argv = build_mpirun([pinned], 2, ["x"], launch=launch_settings([pinned], gpus=False))
    assert argv[argv.index("btl") + 1] == "tcp,vader,self" and argv[argv.index("btl_tcp_if_include") + 1] == "10.9.0.0/16"
    assert argv[argv.index("--bind-to") + 1] == "none"
    with pytest.raises(ValueError, match="mpi_pml"):
        launch_settings([Host("n1", "a", vars={"mpi_pml": "psm2"})], gpus=True)


def test_gpus_as_a_list_and_gpus_per_process() -> None:
    hosts = tuple(Host(f"g{i}", f"g{i}", user="bench", vars={"gpus": [0, 1, 2, 3], "mpi_bind_to": "none",
                                                            "mpi_export": []}) for i in (1, 2))
    assert gpu_count(hosts[0]) == 4
    argv = NCCL.commands(Step("s", "t", "nccl-tests", {"gpus_per_proc": 2}, hosts, pattern="group"))[0].argv
    assert argv[argv.index("-np") + 1] == "4" and argv[argv.index("--map-by") + 1] == "ppr:2:node"
    assert argv[argv.index("--bind-to") + 1] == "none" and "PATH" not in argv and argv[-2:] == ("-g", "2")


def test_the_cpu_benchmark_stops_at_cpu_maxbytes() -> None:
    host = Host("localhost", "127.0.0.1", local=True)
    step = Step("s", "t", "collective", {"maxbytes": "8G", "cpu_maxbytes": "16M"}, (host,), pattern="group")
    argv = list(CPU.commands(step)[0].argv)
    assert argv[argv.index("-e") + 1] == str(16 << 20)
    small = Step("s", "t", "collective", {"maxbytes": "1M"}, (host,), pattern="group")
    assert list(CPU.commands(small)[0].argv)[list(CPU.commands(small)[0].argv).index("-e") + 1] == str(1 << 20)
    with pytest.raises(ValueError, match="ib_tc"):
        get_tool("nccl-tests").check_params({"ib_tc": 300})


def test_ucx_auto_picks_verbs_where_rdma_devices_exist() -> None:
    env = UcxPerftestAdapter.env({"tls": "auto"}, Host("n", "n", vars={"rdma_dev": "mlx5_0", "netdev": "ens1"}))
    assert env == {"UCX_TLS": "rc,dc,sm,self", "UCX_NET_DEVICES": "mlx5_0:1"}
    assert UcxPerftestAdapter.env({"tls": "auto"}, Host("h1", "198.18.0.1", vars={"netdev": "eth0"})) == \
        {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "eth0"}


def test_inventory_gpus_as_a_list(tmp_path: Path) -> None:
    inv = tmp_path / "hosts.ini"
    inv.write_text("[gpu]\ng1 gpus=0,1,2,3\ng2 gpus=8\n")
    g1, g2 = load_inventory(inv).hosts
    assert (gpu_count(g1), gpu_count(g2)) == (4, 8)
    inv.write_text("[gpu]\ng1 gpus=0,x\n")
    with pytest.raises(ConfigError, match="gpus"):
        load_inventory(inv)
