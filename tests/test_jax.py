"""The jax tool: command lines, parsing of its real output, and the NCCL transport judge on real logs.

The tables under tests/fixtures/captured/jax are process 0's stdout of ``onhost/jax_dist.py`` from a
real ``bench run suite=frameworks`` over 3 lab hosts (SOURCES there). No GPU here: the GPU path's
NCCL judgement is tested with real published NCCL logs (tests/fixtures/nccl/debug, SOURCES there)
as the ranks' stderr, as the runner would hand them to ``parse_step``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.core.errors import ConfigError, ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.tools import get_tool
from benchharness.transport.base import wrap_command

CAPTURED = Path(__file__).parent / "fixtures" / "captured" / "jax"
NCCL_LOGS = Path(__file__).parent / "fixtures" / "nccl" / "debug"
VENV_PYTHON = "/opt/venv/bin/python"
HOSTILE = "a b; $(touch /tmp/bench-pwned) 'q' `id`"


def hosts(n: int = 3, **extra: object) -> tuple[Host, ...]:
    return tuple(Host(f"h{i}", f"198.18.0.{i}", user="root", data_ip=f"198.18.0.{i}",
                      vars={"netdev": "eth0", "jax_python": VENV_PYTHON, **extra}) for i in range(1, n + 1))


def step(params: dict, hs: tuple[Host, ...] | None = None) -> Step:
    return Step("0000-x", "x", "jax", params, hs or hosts(), pattern="group", port=29650)


def arg(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_one_process_per_cpu_host_rendezvous_on_the_first_gloo_on_the_data_netdev() -> None:
    cmds = get_tool("jax").commands(step({"op": "alltoall", "minbytes": "1K", "maxbytes": "64M"}))
    assert [c.host.name for c in cmds] == ["h1", "h2", "h3"]
    for i, c in enumerate(cmds):
        assert c.argv[:2] == (VENV_PYTHON, "/tmp/benchharness/jax_dist.py")
        assert arg(c.argv, "--coordinator") == "198.18.0.1:29650" and arg(c.argv, "--nprocs") == "3"
        assert arg(c.argv, "--node-rank") == str(i) and arg(c.argv, "--nproc") == "1"
        assert arg(c.argv, "--platform") == "cpu" and arg(c.argv, "--gloo-interface") == "eth0"
        assert arg(c.argv, "--op") == "alltoall"
        assert arg(c.argv, "-e") == str(16 << 20)  # CPU hosts stop at cpu_maxbytes
        assert {Path(dst).name for _, dst in c.uploads} == {"jax_dist.py", "torch_dist.py", "iter_json.py"}
        assert all(Path(src).is_file() for src, _ in c.uploads)


def test_gpu_hosts_one_process_per_gpu_with_nccl_tests_environment() -> None:
    hs = hosts(2, gpus=8, rdma_dev="mlx5_0", mgmt_netdev="eno1")
    cmds = get_tool("jax").commands(step({"env": {"XLA_FLAGS": HOSTILE}}, hs=hs))
    c = cmds[1]
    assert arg(c.argv, "--platform") == "gpu" and arg(c.argv, "--nproc") == "8" and arg(c.argv, "--nprocs") == "16"
    assert arg(c.argv, "-e") == str(128 << 20)
    assert c.env["NCCL_IB_HCA"] == "=mlx5_0:1" and c.env["NCCL_SOCKET_IFNAME"] == "=eno1"
    # RDMA rails: NCCL must use IB with GPUDirect, so its debug log is asked for
    assert c.env["NCCL_DEBUG"] == "INFO" and c.env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert c.env["XLA_FLAGS"] == HOSTILE
    argv = list(c.argv)
    assert shlex.split(wrap_command(argv))[-len(argv):] == argv


def test_host_without_a_netdev_binds_gloo_to_its_address_and_mixed_hosts_are_refused() -> None:
    bare = tuple(Host(f"h{i}", f"198.18.0.{i}", user="root") for i in (1, 2))
    c = get_tool("jax").commands(step({}, hs=bare))[1]
    assert arg(c.argv, "--local-addr") == "198.18.0.2" and c.argv[0] == "python3"
    with pytest.raises(ConfigError, match="mix GPU and CPU"):
        get_tool("jax").commands(step({}, hs=(*hosts(1, gpus=8), *hosts(2)[1:])))


@pytest.mark.parametrize("params, word", [({"op": "reduce_scatter"}, "op"), ({"iters": 0}, "iters"),
                                          ({"minbytes": "8M", "maxbytes": "1M"}, "minbytes"),
                                          ({"nope": 1}, "unknown"), ({"python": ""}, "python"),
                                          ({"require_gdr": "yes"}, "require_gdr"), ({"backend": "mpi"}, "backend")])
def test_bad_params_name_the_parameter(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        get_tool("jax").check_params(params)


def test_real_sweep_parses_like_nccl_tests_with_versions() -> None:
    recs = get_tool("jax").parse_text((CAPTURED / "all_reduce_3hosts_gloo.txt").read_text())
    rows = [r for r in recs if r["kind"] == "summary"]
    assert [r["size_bytes"] for r in rows] == [64 << 10, 256 << 10, 1 << 20]
    assert all(r["collective"] == "all_reduce" and r["wrong"] == 0 and r["backend"] == "jax" for r in rows)
    assert rows[-1]["busbw_GBps"] == pytest.approx(rows[-1]["algbw_GBps"] * 4 / 3, rel=0.01)  # 2(n-1)/n
    assert rows[0]["jax_version"] == rows[0]["jaxlib_version"] and rows[0]["jax_backend"] == "gloo"
    assert rows[0]["jax_platform"] == "cpu" and rows[0]["nccl_version"] is None
    assert [r["host"] for r in recs[-1]["ranks"]] == ["h1", "h2", "h3"]
    a2a = [r for r in get_tool("jax").parse_text((CAPTURED / "alltoall_3hosts_gloo.txt").read_text())
           if r["kind"] == "summary"]
    assert a2a[-1]["busbw_GBps"] == pytest.approx(a2a[-1]["algbw_GBps"] * 2 / 3, rel=0.01)  # (n-1)/n


def _results(s: Step, stdout: str, stderr: str = "", rc: int = 0) -> list[CommandResult]:
    cmds = get_tool("jax").commands(s)
    return [CommandResult(c, rc, stdout if i == 0 else "", stderr, 1.0, 2.0) for i, c in enumerate(cmds)]


def test_gpu_step_judged_by_nccls_own_log_like_nccl_tests() -> None:
    table = (CAPTURED / "all_reduce_3hosts_gloo.txt").read_text()
    s = step({}, hs=hosts(2, gpus=8, rdma_dev="mlx5_0"))
    ib = (NCCL_LOGS / "nccl-2.21-ib-gdr.log").read_text()
    recs = get_tool("jax").parse_step(s, _results(s, table, ib))
    assert {r["nccl_network"] for r in recs if r["kind"] == "summary"} == {"IB"}
    assert all(r["nccl_gdr"] is True for r in recs if r["kind"] == "summary")
    fallback = (NCCL_LOGS / "nccl-2.11-socket-fallback.log").read_text()
    with pytest.raises(ToolFailure, match=r"NCCL used Socket.*requires IB") as exc:
        get_tool("jax").parse_step(s, _results(s, table, fallback))
    assert exc.value.kind == "transport_mismatch"


def test_missing_jax_is_tool_missing_naming_the_host_and_a_crash_keeps_its_tail() -> None:
    s = step({})
    cmds = get_tool("jax").commands(s)
    real = "ModuleNotFoundError: No module named 'jax'\n"  # CPython's own message for a missing module
    res = [CommandResult(c, 1 if i == 2 else 0, "", real if i == 2 else "", 1.0, 2.0) for i, c in enumerate(cmds)]
    with pytest.raises(ToolFailure, match="h3: /opt/venv/bin/python has no jax") as exc:
        get_tool("jax").parse_step(s, res)
    assert exc.value.kind == "tool_missing" and exc.value.host == "h3"
    with pytest.raises(ToolFailure, match="exited with status 1: boom") as crash:
        get_tool("jax").parse_step(s, _results(s, "", "boom", rc=1))
    assert crash.value.kind == "crashed"


def test_gpu_processes_get_their_gpus_numa_nodes_and_every_rails_hca() -> None:
    """The worked 8-rail inventory (inventories/dgx-b200-8rail.ini): process k of a host drives GPU
    k, bound to its NUMA node (the rails' nearest_gpu and numa_node, as nccl-tests' placement)."""
    nodes = load_inventory(Path(__file__).resolve().parent.parent / "inventories" / "dgx-b200-8rail.ini").hosts
    cmds = get_tool("jax").commands(step({}, hs=nodes))
    hcas = {f"{r.rdma_dev}:{r.rdma_port}" for r in nodes[0].nics()}
    for i, c in enumerate(cmds):
        assert arg(c.argv, "--nproc") == "8" and arg(c.argv, "--node-rank") == str(i)
        assert arg(c.argv, "--numa-nodes") == "0,0,0,0,1,1,1,1" and arg(c.argv, "--nprocs") == str(8 * len(nodes))
        assert set(c.env["NCCL_IB_HCA"].lstrip("=").split(",")) == hcas and len(hcas) == 8
        assert c.env["NCCL_DEBUG"] == "INFO"  # RDMA rails: IB with GPUDirect is required, from NCCL's log
