"""The horovod tool: command lines, the ranks' Horovod environment, parsing of its real output, and
the NCCL transport judge on real logs.

The tables under tests/fixtures/captured/horovod are rank 0's stdout of ``onhost/horovod_dist.py``
from a real ``bench run suite=frameworks`` over 3 lab hosts (SOURCES there). No GPU here: the GPU
path's NCCL judgement is tested with real published NCCL logs (tests/fixtures/nccl/debug, SOURCES
there) as the ranks' stderr, as the runner would hand them to ``parse_step``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from benchharness.config.inventory import load_inventory
from benchharness.core.errors import ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.onhost import horovod_dist
from benchharness.tools import get_tool
from benchharness.transport.base import wrap_command

CAPTURED = Path(__file__).parent / "fixtures" / "captured" / "horovod"
NCCL_LOGS = Path(__file__).parent / "fixtures" / "nccl" / "debug"
VENV_PYTHON = "/opt/hvd/bin/python"
HOSTILE = "a b; $(touch /tmp/bench-pwned) 'q' `id`"


def hosts(n: int = 3, **extra: object) -> tuple[Host, ...]:
    return tuple(Host(f"h{i}", f"198.18.0.{i}", user="root", data_ip=f"198.18.0.{i}",
                      vars={"netdev": "eth0", "horovod_python": VENV_PYTHON, **extra}) for i in range(1, n + 1))


def step(params: dict, hs: tuple[Host, ...] | None = None, port: int | None = 29650) -> Step:
    return Step("0000-x", "x", "horovod", params, hs or hosts(), pattern="group", port=port)


def arg(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_one_command_per_cpu_host_rendezvous_on_the_first_gloo_on_the_data_netdev() -> None:
    cmds = get_tool("horovod").commands(step({"op": "alltoall", "minbytes": "1K", "maxbytes": "64M"}))
    assert [c.host.name for c in cmds] == ["h1", "h2", "h3"]
    for i, c in enumerate(cmds):
        assert c.argv[:2] == (VENV_PYTHON, "/tmp/benchharness/horovod_dist.py")
        assert arg(c.argv, "--hosts") == "198.18.0.1:1,198.18.0.2:1,198.18.0.3:1"
        assert arg(c.argv, "--port") == "29650" and arg(c.argv, "--index") == str(i)
        assert arg(c.argv, "--nproc") == "1" and arg(c.argv, "--iface") == "eth0" and "--numa-nodes" not in c.argv
        assert arg(c.argv, "--op") == "alltoall" and arg(c.argv, "-e") == str(16 << 20)  # CPU: cpu_maxbytes
        assert {Path(dst).name for _, dst in c.uploads} == {"horovod_dist.py", "torch_dist.py", "iter_json.py"}
        assert all(Path(src).is_file() for src, _ in c.uploads)
        assert c.env.get("GLOO_SOCKET_IFNAME") == "eth0" and "NCCL_DEBUG" not in c.env
    # no port from the planner: the tool's own default; no netdev: the program finds the interface
    bare = tuple(Host(f"h{i}", f"198.18.0.{i}", user="root") for i in (1, 2))
    c = get_tool("horovod").commands(step({}, hs=bare, port=None))[1]
    assert arg(c.argv, "--port") == "29480" and "--iface" not in c.argv and c.argv[0] == "python3"


def test_gpu_hosts_one_rank_per_gpu_on_its_numa_node_with_every_rails_hca() -> None:
    """The worked 8-rail inventory (inventories/dgx-b200-8rail.ini): rank k of a host drives GPU k,
    bound to its NUMA node (the rails' nearest_gpu and numa_node, as nccl-tests' placement)."""
    nodes = load_inventory(Path(__file__).resolve().parent.parent / "inventories" / "dgx-b200-8rail.ini").hosts
    cmds = get_tool("horovod").commands(step({"env": {"HOROVOD_FUSION_THRESHOLD": HOSTILE}}, hs=nodes))
    hcas = {f"{r.rdma_dev}:{r.rdma_port}" for r in nodes[0].nics()}
    for i, c in enumerate(cmds):
        assert arg(c.argv, "--nproc") == "8" and arg(c.argv, "--index") == str(i)
        assert arg(c.argv, "--hosts") == ",".join(f"{h.address}:8" for h in nodes)
        assert arg(c.argv, "--numa-nodes") == "0,0,0,0,1,1,1,1" and arg(c.argv, "-e") == str(128 << 20)
        assert set(c.env["NCCL_IB_HCA"].lstrip("=").split(",")) == hcas and len(hcas) == 8
        assert c.env["NCCL_DEBUG"] == "INFO"  # RDMA rails: IB with GPUDirect is required, from NCCL's log
        assert c.env["HOROVOD_FUSION_THRESHOLD"] == HOSTILE
        argv = list(c.argv)
        assert shlex.split(wrap_command(argv))[-len(argv):] == argv


@pytest.mark.parametrize("params, word", [({"op": "reduce_scatter"}, "op"), ({"iters": 0}, "iters"),
                                          ({"minbytes": "8M", "maxbytes": "1M"}, "minbytes"),
                                          ({"nope": 1}, "unknown"), ({"python": ""}, "python"),
                                          ({"require_gdr": "yes"}, "require_gdr"), ({"init_timeout": 0}, "init_timeout"),
                                          ({"env": {"A B": "1"}}, "env|A B")])
def test_bad_params_name_the_parameter(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        get_tool("horovod").check_params(params)


def test_each_rank_gets_the_environment_horovodrun_gloo_gives_it() -> None:
    """Known truth from Horovod's slot plan (runner/common/util/hosts.get_host_assignments): hosts
    a:2,b:2 give the second rank of b global rank 3 of 4, local 1 of 2, cross rank 1 of 2."""
    a = horovod_dist.parser().parse_args(["--hosts", "198.18.0.1:2,198.18.0.2:2", "--index", "1", "--port", "29480",
                                          "--iface", "eth0", "--init-timeout", "30"])
    env = horovod_dist.rank_env(a, 1)
    assert {k: env[k] for k in ("HOROVOD_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
                                "HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE")} == {
        "HOROVOD_RANK": "3", "HOROVOD_SIZE": "4", "HOROVOD_LOCAL_RANK": "1", "HOROVOD_LOCAL_SIZE": "2",
        "HOROVOD_CROSS_RANK": "1", "HOROVOD_CROSS_SIZE": "2"}
    assert env["HOROVOD_GLOO_RENDEZVOUS_ADDR"] == "198.18.0.1" and env["HOROVOD_GLOO_RENDEZVOUS_PORT"] == "29480"
    assert env["HOROVOD_CONTROLLER"] == env["HOROVOD_CPU_OPERATIONS"] == "gloo"
    assert env["HOROVOD_GLOO_IFACE"] == "eth0" and env["HOROVOD_HOSTNAME"] == "198.18.0.2"
    assert env["HOROVOD_GLOO_TIMEOUT_SECONDS"] == "30"
    assert horovod_dist.iface_of("127.0.0.1") == "lo" and horovod_dist.iface_of("198.19.255.254") is None


def test_missing_horovod_is_tool_missing_naming_the_host() -> None:
    s = step({})
    cmds = get_tool("horovod").commands(s)
    real = "ModuleNotFoundError: No module named 'horovod'\n"  # CPython's own message for a missing module
    res = [CommandResult(c, 1 if i == 1 else 0, "", real if i == 1 else "", 1.0, 2.0) for i, c in enumerate(cmds)]
    with pytest.raises(ToolFailure, match="h2: /opt/hvd/bin/python has no horovod") as exc:
        get_tool("horovod").parse_step(s, res)
    assert exc.value.kind == "tool_missing" and exc.value.host == "h2"


def test_real_sweep_parses_like_nccl_tests_with_versions() -> None:
    recs = get_tool("horovod").parse_text((CAPTURED / "all_reduce_3hosts_gloo.txt").read_text())
    rows = [r for r in recs if r["kind"] == "summary"]
    assert [r["size_bytes"] for r in rows] == [64 << 10, 256 << 10, 1 << 20]
    assert all(r["collective"] == "all_reduce" and r["wrong"] == 0 and r["backend"] == "horovod" for r in rows)
    assert rows[-1]["busbw_GBps"] == pytest.approx(rows[-1]["algbw_GBps"] * 4 / 3, rel=0.01)  # 2(n-1)/n
    assert rows[0]["horovod_version"] == "0.28.1" and rows[0]["torch_version"].startswith("1.13")
    assert rows[0]["horovod_controller"] == rows[0]["horovod_backend"] == "gloo" and rows[0]["horovod_nccl"] is None
    assert [r["host"] for r in recs[-1]["ranks"]] == ["h1", "h2", "h3"]
    a2a = [r for r in get_tool("horovod").parse_text((CAPTURED / "alltoall_3hosts_gloo.txt").read_text())
           if r["kind"] == "summary"]
    assert a2a and a2a[-1]["busbw_GBps"] == pytest.approx(a2a[-1]["algbw_GBps"] * 2 / 3, rel=0.01)  # (n-1)/n


def _results(s: Step, stdout: str, stderr: str = "", rc: int = 0) -> list[CommandResult]:
    cmds = get_tool("horovod").commands(s)
    return [CommandResult(c, rc, stdout if i == 0 else "", stderr, 1.0, 2.0) for i, c in enumerate(cmds)]


def test_gpu_step_judged_by_nccls_own_log_like_nccl_tests() -> None:
    table = (CAPTURED / "all_reduce_3hosts_gloo.txt").read_text()
    s = step({}, hs=hosts(2, gpus=8, rdma_dev="mlx5_0"))
    ib = (NCCL_LOGS / "nccl-2.21-ib-gdr.log").read_text()
    recs = get_tool("horovod").parse_step(s, _results(s, table, ib))
    assert {r["nccl_network"] for r in recs if r["kind"] == "summary"} == {"IB"}
    assert all(r["nccl_gdr"] is True for r in recs if r["kind"] == "summary")
    fallback = (NCCL_LOGS / "nccl-2.11-socket-fallback.log").read_text()
    with pytest.raises(ToolFailure, match=r"NCCL used Socket.*requires IB") as exc:
        get_tool("horovod").parse_step(s, _results(s, table, fallback))
    assert exc.value.kind == "transport_mismatch"
    with pytest.raises(ToolFailure, match="exited with status 1: boom") as crash:
        get_tool("horovod").parse_step(s, _results(s, "", "boom", rc=1))
    assert crash.value.kind == "crashed"
