"""The tensorflow tool: command lines, parsing of its real output, the NCCL transport judge on real logs.

tests/fixtures/captured/tensorflow holds worker 0's stdout of ``onhost/tf_dist.py`` from a real run
over 3 lab hosts (SOURCES there); the GPU path's NCCL judgement reads real published NCCL logs
(tests/fixtures/nccl/debug, SOURCES there) as the workers' stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.tools import get_tool

CAPTURED = Path(__file__).parent / "fixtures" / "captured" / "tensorflow"
NCCL_LOGS = Path(__file__).parent / "fixtures" / "nccl" / "debug"


def hosts(n: int = 3, **extra: object) -> tuple[Host, ...]:
    return tuple(Host(f"h{i}", f"198.18.0.{i}", user="root", vars={"netdev": "eth0", "tf_python": "/v/python",
                                                                    **extra}) for i in range(1, n + 1))


def step(params: dict, hs: tuple[Host, ...] | None = None) -> Step:
    return Step("0000-x", "x", "tensorflow", params, hs or hosts(), pattern="group", port=29700)


def arg(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_one_worker_per_host_with_the_whole_cluster_and_its_index() -> None:
    cmds = get_tool("tensorflow").commands(step({"maxbytes": "1G"}))
    for i, c in enumerate(cmds):
        assert c.argv[:2] == ("/v/python", "/tmp/benchharness/tf_dist.py") and arg(c.argv, "--index") == str(i)
        assert arg(c.argv, "--workers") == "198.18.0.1:29700,198.18.0.2:29700,198.18.0.3:29700"
        assert arg(c.argv, "--implementation") == "auto" and arg(c.argv, "-e") == str(16 << 20)
        assert {Path(dst).name for _, dst in c.uploads} == {"tf_dist.py", "torch_dist.py", "iter_json.py"}
    gpu = get_tool("tensorflow").commands(step({}, hs=hosts(2, gpus=8, rdma_dev="mlx5_0", mgmt_netdev="eno1")))[0]
    assert gpu.env["NCCL_IB_HCA"] == "=mlx5_0:1" and gpu.env["NCCL_DEBUG"] == "INFO"
    assert arg(gpu.argv, "-e") == str(128 << 20)


@pytest.mark.parametrize("params, word", [({"op": "alltoall"}, "all_reduce only"), ({"implementation": "MPI"},
                                          "implementation"), ({"iters": 0}, "iters"), ({"nope": 1}, "unknown")])
def test_bad_params_name_the_parameter(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        get_tool("tensorflow").check_params(params)


def test_real_sweep_parses_like_nccl_tests_with_versions() -> None:
    recs = get_tool("tensorflow").parse_text((CAPTURED / "all_reduce_3hosts_ring.txt").read_text())
    rows = [r for r in recs if r["kind"] == "summary"]
    assert [r["size_bytes"] for r in rows] == [64 << 10, 256 << 10, 1 << 20]
    assert all(r["collective"] == "all_reduce" and r["wrong"] == 0 and r["backend"] == "tensorflow" for r in rows)
    assert rows[-1]["busbw_GBps"] == pytest.approx(rows[-1]["algbw_GBps"] * 4 / 3, rel=0.01)
    assert rows[0]["tf_version"] == "2.21.0" and rows[0]["tf_backend"] == "ring" and rows[0]["tf_platform"] == "cpu"
    assert recs[-1]["nranks"] == 3


def _results(s: Step, stdout: str, stderr: str = "", rc: int = 0) -> list[CommandResult]:
    cmds = get_tool("tensorflow").commands(s)
    return [CommandResult(c, rc, stdout if i == 0 else "", stderr, 1.0, 2.0) for i, c in enumerate(cmds)]


def test_gpu_step_judged_by_nccls_own_log_and_missing_tensorflow_is_tool_missing() -> None:
    table = (CAPTURED / "all_reduce_3hosts_ring.txt").read_text()
    s = step({}, hs=hosts(2, gpus=8, rdma_dev="mlx5_0"))
    recs = get_tool("tensorflow").parse_step(s, _results(s, table, (NCCL_LOGS / "nccl-2.21-ib-gdr.log").read_text()))
    assert {(r["nccl_network"], r["nccl_gdr"]) for r in recs if r["kind"] == "summary"} == {("IB", True)}
    with pytest.raises(ToolFailure, match=r"NCCL used Socket.*requires IB"):
        get_tool("tensorflow").parse_step(s, _results(s, table, (NCCL_LOGS / "nccl-2.11-socket-fallback.log").read_text()))
    plain = step({})
    res = _results(plain, "", "ModuleNotFoundError: No module named 'tensorflow'\n", rc=1)
    with pytest.raises(ToolFailure, match=r"h1: /v/python has no tensorflow .*tf_python") as exc:
        get_tool("tensorflow").parse_step(plain, res)
    assert exc.value.kind == "tool_missing"
