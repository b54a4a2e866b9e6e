"""ucx_perftest adapter: parser against real captured outputs, command lines, and one real run.

Fixtures ending in ``_tcp``, ``_threads2``, ``_numeric``, ``err_*`` and ``server_waiting`` were
captured from the installed ucx-utils 1.13 between two processes on 127.0.0.1 (UCX_TLS=tcp), on a
loaded 2-core machine, hence the modest figures. ``tag_bw_1m_old_format.txt`` is written in the
pre-1.10 format (no Stage column) from ucx's perftest.c printf formats.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Step
from benchharness.tools import get_tool
from benchharness.tools.ucx_perftest import ADAPTER, READY_PATTERN, parse_output

pytestmark = pytest.mark.xdist_group("loopback")  # fixed ports on this machine's loopback: one worker (tests/turns.py)
FIXTURES = Path(__file__).parent / "fixtures" / "ucx_perftest"
CASES = sorted(FIXTURES.glob("*.txt"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture_parses_as_expected(path: Path) -> None:
    want = json.loads(path.with_suffix("").with_suffix(".expected.json").read_text())
    if "error" in want:
        with pytest.raises(ToolFailure) as exc:
            parse_output(path.read_text())
        assert exc.value.kind == want["error"]["kind"]
        assert want["error"]["quote"] in exc.value.message
    else:
        [got] = parse_output(path.read_text())
        [rec] = want["records"]
        assert set(got) == set(rec)
        for key, value in rec.items():
            assert got[key] == (pytest.approx(value) if isinstance(value, float) else value), key


def test_final_row_mib_per_s_to_gbps() -> None:
    [rec] = parse_output((FIXTURES / "tag_bw_64k_tcp.txt").read_text())
    assert rec["bw_avg_MBps_tool"] == 100.18  # the "overall" column of the Final: row
    assert rec["bw_avg_gbps"] == pytest.approx(100.18 * 2**20 * 8 / 1e9, abs=1e-6)
    assert rec["msg_rate_mpps"] == pytest.approx(1603 / 1e6)
    assert "overhead_avg_us" in rec and "lat_avg_us" not in rec  # streaming test: overhead


def test_latency_test_reads_percentile_and_overall_latency() -> None:
    [rec] = parse_output((FIXTURES / "tag_lat_8b_tcp.txt").read_text())
    assert (rec["lat_p50_us"], rec["lat_avg_us"], rec["iterations"]) == (11.765, 337.879, 2000)


def test_progress_rows_without_a_final_row_are_no_result() -> None:
    text = (FIXTURES / "err_killed_no_final.txt").read_text()
    assert "[thread 0]" in text
    with pytest.raises(ToolFailure) as exc:
        parse_output(text)
    assert exc.value.kind == "no_result"


def test_old_format_last_row_is_final_and_hint_overrides_column_title() -> None:
    text = (FIXTURES / "tag_bw_1m_old_format.txt").read_text()
    [rec] = parse_output(text, pingpong=False)
    assert rec["overhead_typical_us"] == 90.401 and rec["iterations"] == 30000
    assert rec["size_bytes"] == 1048576


def test_thousands_separators_are_read() -> None:
    text = ("|    Stage     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  overall  |\n"
            "Final:             1,000,000      1.234     1.300     1.300       6.08       6.08     769,231     769,231\n")
    [rec] = parse_output(text, pingpong=True)
    assert rec["iterations"] == 1_000_000 and rec["msg_rate_mpps"] == pytest.approx(0.769231)


# ---- adapter ---------------------------------------------------------------------------------

SRV = Host("srv", "10.0.0.1", data_ip="198.18.0.1", vars={"netdev": "veth-srv"})
CLI = Host("cli", "10.0.0.2", data_ip="198.18.0.2", vars={"netdev": "veth-cli", "rdma_dev": "mlx5_0"})


def _step(params: dict, hosts: tuple[Host, ...] = (SRV, CLI), port: int = 18600) -> Step:
    return Step(id="u1", test="tag-bw", tool="ucx_perftest", params=params, hosts=hosts, port=port)


def test_registered_under_its_name() -> None:
    assert get_tool("ucx_perftest") is ADAPTER


def test_commands_server_waits_client_carries_the_test() -> None:
    server, client = ADAPTER.commands(_step({"test": "tag_lat", "size": "1K", "iters": 500, "warmup": 50}))
    assert server.background and server.argv == ("stdbuf", "-oL", "ucx_perftest", "-p", "18600")
    assert re.search(server.ready_pattern or "", "Waiting for connection...")
    assert client.argv == ("ucx_perftest", "198.18.0.1", "-p", "18600", "-t", "tag_lat", "-s", "1024",
                           "-n", "500", "-w", "50")
    assert server.env == {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "veth-srv"}
    assert client.env == {"UCX_TLS": "tcp", "UCX_NET_DEVICES": "veth-cli"}


def test_env_for_rdma_transports_and_explicit_devices() -> None:
    assert ADAPTER.env({"tls": "rc,tcp"}, CLI) == {"UCX_TLS": "rc,tcp", "UCX_NET_DEVICES": "mlx5_0:1,veth-cli"}
    assert ADAPTER.env({"tls": "tcp", "net_devices": "all"}, CLI) == {"UCX_TLS": "tcp"}
    assert ADAPTER.env({"tls": "tcp", "net_devices": "eth9"}, SRV)["UCX_NET_DEVICES"] == "eth9"


def test_suite_env_reaches_both_sides_over_the_derived_variables() -> None:
    env = ADAPTER.env({"tls": "tcp", "env": {"UCX_UD_TIMEOUT": "3s", "UCX_TLS": "rc"}}, CLI)
    assert env == {"UCX_TLS": "rc", "UCX_NET_DEVICES": "veth-cli", "UCX_UD_TIMEOUT": "3s"}


@pytest.mark.parametrize("params, word", [
    ({"test": "tag_bandwidth"}, "test"),
    ({"test": "am_bw"}, "uct_device"),
    ({"iters": -1}, "iters"),
    ({"size": "huge"}, "size"),
    ({"flavour": 1}, "flavour"),
    ({"env": {"UCX X": 1}}, "env"),
    ({"env": "UCX_TLS=rc"}, "env"),
])
def test_bad_params_name_the_parameter(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        ADAPTER.check_params(params)


def _result(cmd: Command, out: str, err: str = "", rc: int | None = 0, stopped: bool = False) -> CommandResult:
    return CommandResult(cmd, rc, out, err, time.time(), time.time(), stopped=stopped)


def test_parse_step_connect_failure_names_step_and_host() -> None:
    step = _step({"test": "tag_bw"})
    server, client = ADAPTER.commands(step)
    text = (FIXTURES / "err_connect_refused.txt").read_text()
    with pytest.raises(ToolFailure) as exc:
        ADAPTER.parse_step(step, [_result(client, text, rc=255), _result(server, "", rc=None, stopped=True)])
    assert exc.value.kind == "connect_failed" and "u1, client-cli on cli" in exc.value.message


# ---- one real run over TCP on loopback -----------------------------------------------------------

def _free_port() -> int:
    for port in range(18600 + os.getpid() % 50, 18700):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.skip("no free port in 18600-18699")


def _run_local(cmd: Command) -> subprocess.Popen[str]:
    """Start a command as the local transport would: its argv, with its env added."""
    return subprocess.Popen(list(cmd.argv), env={**os.environ, **cmd.env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.skipif(shutil.which("ucx_perftest") is None, reason="ucx-utils is not installed")
def test_real_tag_bw_between_two_processes_on_loopback() -> None:
    lo = Host("lo", "127.0.0.1", local=True)
    step = _step({"test": "tag_bw", "size": "64K", "iters": 2000, "warmup": 100}, (lo,), _free_port())
    server_cmd, client_cmd = ADAPTER.commands(step)
    server = _run_local(server_cmd)
    try:
        sel = selectors.DefaultSelector()
        assert server.stdout is not None
        sel.register(server.stdout, selectors.EVENT_READ)
        seen, deadline = "", time.monotonic() + 20
        while not re.search(READY_PATTERN, seen) and time.monotonic() < deadline and sel.select(1):
            seen += server.stdout.readline()
        assert re.search(READY_PATTERN, seen), f"server not ready: {seen!r}"
        client = subprocess.run(list(client_cmd.argv), env={**os.environ, **client_cmd.env},
                                capture_output=True, text=True, timeout=60)
        s_out, s_err = server.communicate(timeout=20)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    results = [_result(client_cmd, client.stdout, client.stderr, client.returncode),
               _result(server_cmd, seen + s_out, s_err, server.returncode)]
    [rec] = ADAPTER.parse_step(step, results)
    assert client.returncode == 0 and server.returncode == 0
    assert rec["size_bytes"] == 65536 and rec["iterations"] == 2000 and rec["tls"] == "tcp"
    assert rec["bw_avg_gbps"] > 0 and rec["msg_rate_mpps"] > 0
    # bandwidth and message rate are two views of one measurement
    assert rec["bw_avg_MBps_tool"] * 2**20 / 65536 == pytest.approx(rec["msg_rate_mpps"] * 1e6, rel=0.01)


RXE = Path(__file__).parent / "fixtures" / "captured" / "soft-roce-vm"


def test_rxe_abort_is_classified_by_the_fatal_line_not_the_warning_before_it() -> None:
    """ucx_perftest 1.13 over soft-RoCE in the VM: a WARN about 'dc', then UD wire-up aborts."""
    text = (RXE / "ucx_perftest-tag_bw-rc-dc-rxe-ud-timeout.txt").read_text()
    with pytest.raises(ToolFailure) as err:
        parse_output(text)
    assert err.value.kind == "fatal"
    assert "UD endpoint" in str(err.value) and "unhandled timeout error" in str(err.value)


def test_gid_index_of_the_inventory_reaches_ucx_over_verbs() -> None:
    host = Host("h1", "198.18.0.1", vars={"rdma_dev": "rxe0", "rdma_port": 1, "gid_index": 1, "netdev": "eth0"})
    assert ADAPTER.env({"tls": "auto"}, host) == {"UCX_TLS": "rc,dc,sm,self", "UCX_NET_DEVICES": "rxe0:1",
                                                  "UCX_IB_GID_INDEX": "1"}
    assert "UCX_IB_GID_INDEX" not in ADAPTER.env({"tls": "tcp"}, host)


@pytest.mark.skipif(shutil.which("ucx_info") is None, reason="ucx_info (ucx-utils) is not installed")
def test_the_ib_traffic_class_variable_reaches_every_verbs_transport() -> None:
    """The adapter sets UCX_IB_TRAFFIC_CLASS on RoCE rails; the real ucx_info -c shows UCX taking it
    for rc_verbs, rc_mlx5, dc_mlx5, ud_verbs and ud_mlx5 (UCX 1.13: they inherit UCX_IB_*)."""
    host = Host("r1", "10.0.0.1", vars={"rdma_dev": "mlx5_0", "netdev": "ens1f0np0", "traffic_class": 106,
                                        "gid_index": 3, "link_layer": "Ethernet"})
    env = ADAPTER.env({"tls": "auto"}, host)
    assert env["UCX_IB_TRAFFIC_CLASS"] == "106"
    ib = Host("i1", "10.0.0.1", vars={"rdma_dev": "mlx5_0", "netdev": "ibp5s0", "traffic_class": 106})
    assert "UCX_IB_TRAFFIC_CLASS" not in ADAPTER.env({"tls": "auto"}, ib)

    def config(**extra: str) -> dict[str, str]:
        out = subprocess.run(["ucx_info", "-c"], capture_output=True, text=True, timeout=60,
                             env={**os.environ, **extra}).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if line.startswith("UCX_") and "=" in line)

    before, after = config(), config(UCX_IB_TRAFFIC_CLASS=env["UCX_IB_TRAFFIC_CLASS"])
    classes = {k for k in before if k.endswith("_TRAFFIC_CLASS")}
    assert {"UCX_RC_VERBS_TRAFFIC_CLASS", "UCX_UD_VERBS_TRAFFIC_CLASS"} <= classes
    assert {before[k] for k in classes} == {"auto"}
    assert {after[k] for k in classes} == {"106"}
