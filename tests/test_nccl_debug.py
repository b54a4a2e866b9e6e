"""NCCL_DEBUG=INFO log parser and the adapters' transport checks.

No GPUs or RDMA here: the logs under tests/fixtures/nccl/debug/ are written in NCCL's real log
format ("host:pid:tid [dev] NCCL INFO ...", messages from init.cc, net_ib.cc, net_socket.cc,
transport/net.cc and the aws-ofi-nccl plugin), each with its expected parse beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.tools.nccl_debug import network_matches, parse_nccl_debug, parse_nccl_debug_text
from benchharness.tools.nccl_tests import NCCL

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
LOGS = sorted((FIXTURES / "debug").glob("*.log"))


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_log_matches_expected_parse(path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    assert parse_nccl_debug(path.read_text()) == expected


def log(name: str) -> dict:
    return parse_nccl_debug((FIXTURES / "debug" / name).read_text())


def test_ib_with_gpudirect_rdma() -> None:
    got = log("nccl-2.21-ib-gdr.log")
    assert (got["network"], got["gdr"], got["socket_fallback"], got["channels"]) == ("IB", True, False, 2)
    assert got["devices"] == [{"name": "mlx5_0", "port": 1, "link": "RoCE"},
                              {"name": "mlx5_1", "port": 1, "link": "RoCE"}]
    assert got["nccl_version"] == "2.21.5+cuda12.4"
    assert got["warnings"] == ["NET/IB : mlx5_1:1 Got async event : port error"]


def test_socket_fallback_after_ib_found_no_device() -> None:
    got = log("nccl-2.11-socket-fallback.log")
    assert (got["network"], got["socket_fallback"], got["gdr"]) == ("Socket", True, False)
    assert {"name": "ib0", "address": "192.168.30.21"} in got["devices"]
    assert got["nccl_version"] == "2.11.4+cuda11.4"  # printed bare by rank 0 in 2.11


def test_plugins_and_no_gdr() -> None:
    efa = log("nccl-2.18-aws-ofi-efa.log")
    assert (efa["network"], efa["gdr"], efa["channels"]) == ("AWS Libfabric", True, 8)
    assert efa["plugins"] == ["AWS Libfabric"]
    ibext = log("nccl-2.19-ibext-no-gdr.log")  # also under mpirun --tag-output
    assert (ibext["network"], ibext["gdr"], ibext["net_channels"]) == ("IBext_v7", False, 3)


def test_unknown_without_net_channels_or_logs() -> None:
    got = parse_nccl_debug("gpu01:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n")
    assert (got["network"], got["gdr"], got["socket_fallback"], got["channels"]) == (None, None, False, None)
    socket_by_choice = parse_nccl_debug("h:1:1 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
                                        "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
                                        "h:1:1 [0] NCCL INFO Using network Socket\n")
    assert socket_by_choice["network"] == "Socket" and socket_by_choice["socket_fallback"] is False


@pytest.mark.parametrize(("required", "used", "ok"), [
    ("IB", "IB", True), ("ib", "IBext_v8", True), ("IB", "Socket", False), ("Socket", "Socket", True),
    ("OFI", "AWS Libfabric", True), ("EFA", "AWS Libfabric", True), ("IB", None, False),
    ("AWS Libfabric", "AWS Libfabric", True), ("Socket", "IB", False),
])
def test_network_matches(required: str, used: str | None, ok: bool) -> None:
    assert network_matches(required, used) is ok


def test_registered_as_bench_parse_parser() -> None:
    assert get_parser("nccl-debug").__wrapped__ is parse_nccl_debug_text  # type: ignore[attr-defined]
    text = (FIXTURES / "debug" / "nccl-2.21-ib-gdr.log").read_text()
    assert parse_nccl_debug_text(text) == parse_nccl_debug(text)


WARN_ONLY = ("NCCL version 2.21.5+cuda12.4\n"
             "gpu01:811:902 [0] transport/net_ib.cc:1234 NCCL WARN NET/IB : Got completion from peer "
             "192.0.2.12<40311> with status=12 opcode=0 len=0 vendor err 129 (Send)\n"
             "gpu01:811:902 [0] proxy.cc:1522 NCCL WARN [Proxy Thread] Error encountered progressing operation\n")


def test_bench_parse_rejects_a_log_without_info_lines() -> None:
    """NCCL_DEBUG=WARN (or unset): no network to report, so ``bench parse`` fails instead of ``network: null``."""
    with pytest.raises(ToolFailure) as info:
        parse_nccl_debug_text(WARN_ONLY)
    assert info.value.kind == "nccl_error" and "\n" not in info.value.message
    assert "transport/net_ib.cc:1234 NCCL WARN NET/IB : Got completion from peer 192.0.2.12<40311>" in info.value.message
    assert "Proxy Thread" not in info.value.message  # the first WARN line only
    with pytest.raises(ToolFailure) as info:
        parse_nccl_debug_text("#  Rank  0 Group  0 Pid  12044 on      gpu03 device  0 [0x18] NVIDIA H100\n")
    assert info.value.kind == "no_results"
    # the runner's own use keeps returning the facts it can read
    assert parse_nccl_debug(WARN_ONLY)["network"] is None
    assert parse_nccl_debug(WARN_ONLY)["nccl_version"] == "2.21.5+cuda12.4"


def step_with(params: dict) -> Step:
    hosts = (Host("gpu01", "10.1.0.11", user="root", vars={"gpus": 4, "nccl_tests_dir": "/opt/nccl-tests/build"}),
             Host("gpu02", "10.1.0.12", user="root", vars={"gpus": 4}))
    return Step(id="s1", test="allreduce", tool="nccl-tests", params=params, hosts=hosts, pattern="group")


def finished(step: Step, stdout: str) -> list[CommandResult]:
    (cmd,) = NCCL.commands(step)
    return [CommandResult(command=cmd, rc=0, stdout=stdout, stderr="", started=0.0, ended=1.0)]


GATHER = (FIXTURES / "nccl-tests-2.15-all_gather-tag-output.txt").read_text()
FALLBACK = (FIXTURES / "debug" / "nccl-2.11-socket-fallback.log").read_text()


def test_transport_required_and_found() -> None:
    step = step_with({"op": "all_gather", "require_network": "IB", "require_gdr": True})
    records = NCCL.parse_step(step, finished(step, GATHER))
    results = [r for r in records if r["kind"] == "summary"]
    assert len(results) == 12
    assert all(r["nccl_network"] == "IB" and r["nccl_gdr"] is True for r in results)
    assert all(r["test"] == "allreduce" and r["nhosts"] == 2 and r["backend"] == "nccl-tests" for r in results)


def test_transport_mismatch_socket_fallback() -> None:
    step = step_with({"op": "all_gather", "require_network": "IB"})
    with pytest.raises(ToolFailure) as info:
        NCCL.parse_step(step, finished(step, FALLBACK + GATHER.replace("Using network IB", "")))
    assert info.value.kind == "transport_mismatch"
    assert str(info.value) == "step s1 on gpu01: NCCL used Socket (fell back from IB), suite requires IB"


def test_gdr_required_but_not_used() -> None:
    step = step_with({"op": "all_gather", "require_gdr": True})
    no_gdr = GATHER.replace("/GDRDMA", "")
    with pytest.raises(ToolFailure, match="did not use GPUDirect RDMA") as info:
        NCCL.parse_step(step, finished(step, no_gdr))
    assert info.value.kind == "transport_mismatch"


def test_require_network_turns_nccl_debug_on() -> None:
    (cmd,) = NCCL.commands(step_with({"op": "all_reduce", "require_network": "IB"}))
    assert "NCCL_DEBUG=INFO" in cmd.argv and "NCCL_DEBUG_SUBSYS=INIT,NET" in cmd.argv
    (plain,) = NCCL.commands(step_with({"op": "all_reduce"}))
    assert not any(a.startswith("NCCL_DEBUG") for a in plain.argv)


def test_every_listed_hca_must_be_opened_and_carry_channels() -> None:
    real = (FIXTURES / "debug-hca" / "nccl-2.19-dgxh100-2-roce-hcas.log").read_text()
    NCCL.check_hcas("=mlx5_10:1,mlx5_11:1", real)
    NCCL.check_hcas("^mlx5_0", real)  # an exclusion list names nothing that must be used
    with pytest.raises(ToolFailure, match=r"did not open mlx5_12:1 of NCCL_IB_HCA \(opened mlx5_10:1, mlx5_11:1\)"):
        NCCL.check_hcas("=mlx5_10:1,mlx5_11:1,mlx5_12:1", real)
    gdr = (FIXTURES / "debug" / "nccl-2.21-ib-gdr.log").read_text()
    NCCL.check_hcas("=mlx5_0:1,mlx5_1:1", gdr)  # channels 00 over NET/IB/0, 01 over NET/IB/1
    one_rail = "\n".join(ln for ln in gdr.splitlines() if "via NET/IB/1/" not in ln)
    with pytest.raises(ToolFailure, match=r"no NCCL channel ran over mlx5_1:1 \(channels over mlx5_0:1\)"):
        NCCL.check_hcas("=mlx5_0:1,mlx5_1:1", one_rail)


def test_rdma_hosts_require_ib_and_gdr_unless_the_suite_says_any() -> None:
    from benchharness.core.model import Host, Rail
    from benchharness.tools.nccl_tests import PARAMS, requirements

    rdma = [Host("g1", "a", rails=(Rail(0, rdma_dev="mlx5_0", data_ip="10.0.0.1"),))]
    assert (requirements(PARAMS, rdma)["require_network"], requirements(PARAMS, rdma)["require_gdr"]) == ("IB", True)
    off = requirements({**PARAMS, "require_network": "any", "require_gdr": "any"}, rdma)
    assert (off["require_network"], off["require_gdr"]) == (None, None)
    assert requirements(PARAMS, [Host("c1", "b")])["require_network"] is None  # no RDMA device: no demand
