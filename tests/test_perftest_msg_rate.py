"""perftest at a NIC's scale: message rate (-q, -l, -Q, several processes per rail), bursts at a
share of the line rate, and latency under bulk load on the same and the neighbouring rail.

Step outputs are real published perftest outputs (tests/fixtures/real/perftest, see SOURCES there):
linux-rdma/perftest#273 (``Post List``/``CQ Moderation`` 128, 7.498617 Mpps at 8 B) and
schmaustech/nvidia-tools-image (16 QPs, 181.46 Gbit/s), used as the stdout of each process.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchharness.core.model import Command, CommandResult, Host, Rail, Step
from benchharness.tools.perftest import ADAPTER

REAL = Path(__file__).parent / "fixtures" / "real" / "perftest"
POST_LIST = (REAL / "write_bw_post_list_duration_gbits_ib0_peak_zero.txt").read_text()
QP16 = (REAL / "write_bw_rdma_cm_duration_16qp_cuda_client.txt").read_text()


def _host(name: str, last: int) -> Host:
    rails = tuple(Rail(index=i, rdma_dev=f"mlx5_{i}", netdev=f"ib{i}", data_ip=f"198.18.{i + 1}.{last}",
                       numa_node=i // 2, line_rate_gbps=400.0) for i in range(4))
    return Host(name, f"192.0.2.{last}", rails=rails, vars={"nic_line_rate_gbps": 400})


def _step(params: dict, rail: int = 1, pattern: str = "pairs") -> Step:
    srv, cli = _host("h1", 1), _host("h2", 2)
    hosts = (srv.on_rail(srv.rails[rail]), cli.on_rail(cli.rails[rail]))
    return Step(id="s0007", test="msg-rate", tool="perftest", params=params, hosts=hosts, pattern=pattern,
                port=20000, labels={"rail": f"rail{rail}"})


def _result(cmd: Command, stdout: str) -> CommandResult:
    return CommandResult(cmd, 0, stdout, "BENCH_NUMA=0\n", time.time(), time.time())


def _value(argv: tuple[str, ...], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_message_rate_options_and_one_pinned_process_per_port() -> None:
    step = _step({"test": "ib_write_bw", "size": 64, "qps": 8, "post_list": 32, "cq_mod": 8, "processes": 4,
                  "duration": 10})
    cmds = ADAPTER.commands(step)
    servers = [c for c in cmds if c.role == "server"]
    clients = [c for c in cmds if c.role == "client"]
    assert len(servers) == len(clients) == 4
    assert [_value(c.argv, "-p") for c in clients] == ["20000", "20001", "20002", "20003"]
    assert [_value(c.argv, "-p") for c in servers] == ["20000", "20001", "20002", "20003"]
    for c in clients:
        assert c.argv[:3] == ("numactl", "--cpunodebind=0", "--membind=0")  # rail 1's NUMA node
        assert (_value(c.argv, "-q"), _value(c.argv, "-l"), _value(c.argv, "-Q")) == ("8", "32", "8")
        assert _value(c.argv, "-d") == "mlx5_1" and c.argv[-1] == "198.18.2.1"
    assert len({c.label for c in cmds}) == 8
    assert ADAPTER.ports_per_flow(step.params, step.hosts) == 4


def test_a_rails_processes_are_summed_and_each_kept() -> None:
    step = _step({"test": "ib_write_bw", "size": 8, "post_list": 128, "cq_mod": 128, "processes": 2,
                  "duration": 60})
    cmds = ADAPTER.commands(step)
    results = [_result(c, POST_LIST if c.role == "client" else "") for c in cmds]
    records = ADAPTER.parse_step(step, results)
    [total] = [r for r in records if r.get("kind") is None]
    procs = [r for r in records if r.get("kind") == "process"]
    assert total["msg_rate_mpps"] == pytest.approx(2 * 7.498617)
    assert total["bw_avg_gbps"] == pytest.approx(0.96) and total["iterations"] == 2 * 224958464
    assert total["processes"] == 2 and "partial" not in total and "port" not in total
    assert (total["post_list"], total["cq_mod"], total["rail"]) == (128, 128, "rail1")
    assert [p["port"] for p in procs] == [20000, 20001] and [p["process"] for p in procs] == [0, 1]
    assert all(p["msg_rate_mpps"] == 7.498617 for p in procs)


def test_a_process_without_rows_fails_the_step_naming_it() -> None:
    from benchharness.core.errors import ToolFailure

    step = _step({"test": "ib_write_bw", "size": 65536, "processes": 2, "duration": 60})
    cmds = ADAPTER.commands(step)
    clients = [c for c in cmds if c.role == "client"]
    results = [_result(c, QP16 if c is clients[0] else "") for c in cmds]
    with pytest.raises(ToolFailure) as err:
        ADAPTER.parse_step(step, results)
    assert clients[1].label in err.value.message and "h2" in err.value.message


def test_bursts_at_a_share_of_the_line_rate() -> None:
    step = _step({"test": "ib_write_bw", "size": "64K", "qps": 8, "rate_limit": "95%", "burst_size": 64,
                  "rate_limit_type": "SW"})
    client = next(c for c in ADAPTER.commands(step) if c.role == "client")
    assert "--rate_limit=380" in client.argv and "--rate_units=g" in client.argv
    bare = Step(id="s1", test="t", tool="perftest", params=step.params, pattern="pairs", port=1,
                hosts=(Host("a", "192.0.2.1", data_ip="198.18.0.1"), Host("b", "192.0.2.2")))
    with pytest.raises(ValueError, match="host a rail0 has no nic_line_rate_gbps"):
        ADAPTER.commands(bare)


@pytest.mark.parametrize(("params", "word"), [
    ({"test": "ib_write_lat", "post_list": 8}, "post_list"),
    ({"test": "ib_send_lat", "processes": 2}, "processes"),
    ({"test": "ib_write_bw", "cq_mod": 0}, "cq_mod"),
    ({"test": "ib_write_bw", "load": "same"}, "load"),
    ({"test": "ib_write_lat", "load": "sideways"}, "load"),
    ({"test": "ib_write_bw", "rate_limit": "95%", "rate_units": "M"}, "rate_limit"),
])
def test_bad_message_rate_and_load_params_name_the_parameter(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        ADAPTER.check_params(params)


def test_latency_under_load_on_the_same_and_the_neighbouring_rail() -> None:
    step = _step({"test": "ib_write_lat", "size": 2, "iters": 20000, "load": "both", "load_qps": 8}, rail=3)
    cmds = ADAPTER.commands(step)
    load_servers = [c for c in cmds if c.role == "load-server"]
    loads = [c for c in cmds if c.role == "load"]
    [probe] = [c for c in cmds if c.role == "client"]
    assert [_value(c.argv, "-d") for c in loads] == ["mlx5_3", "mlx5_0"]  # rail 3, then its neighbour rail 0
    assert [c.argv[-1] for c in loads] == ["198.18.4.1", "198.18.1.1"]
    assert [_value(c.argv, "-p") for c in loads] == ["20001", "20002"] == [_value(c.argv, "-p") for c in load_servers]
    assert all("ib_write_bw" in c.argv and _value(c.argv, "-q") == "8" and _value(c.argv, "-D") == "15" for c in loads)
    assert loads[1].argv[:3] == ("numactl", "--cpunodebind=0", "--membind=0")  # the neighbour's own node
    assert probe.start_delay_s == 2.0 and all(c.start_delay_s == 0 for c in loads)
    assert "ib_write_lat" in probe.argv and _value(probe.argv, "-p") == "20000"
    assert ADAPTER.ports_per_flow(step.params, step.hosts) == 3


def test_load_records_are_their_own_kind() -> None:
    lat = (Path(__file__).parent / "fixtures" / "perftest" / "send_lat_percentiles.txt").read_text()
    step = _step({"test": "ib_send_lat", "size": 2, "iters": 1000, "load": "neighbour"})
    cmds = ADAPTER.commands(step)
    out = {"client": lat, "load": QP16}
    records = ADAPTER.parse_step(step, [_result(c, out.get(c.role, "")) for c in cmds])
    [probe] = [r for r in records if r.get("kind") is None]
    [load] = [r for r in records if r.get("kind") == "load"]
    assert probe["lat_p99_us"] == 1.37 and probe["load"] == "neighbour" and probe["rail"] == "rail1"
    assert load["bw_avg_gbps"] == 181.46 and load["load_rail"] == "rail2" and load["perftest_test"] == "ib_write_bw"


def test_neighbour_load_needs_several_rails() -> None:
    one = Host("a", "192.0.2.1", data_ip="198.18.0.1", vars={"rdma_dev": "mlx5_0"})
    step = Step(id="s2", test="t", tool="perftest", params={"test": "ib_write_lat", "load": "neighbour"},
                hosts=(one, one), pattern="pairs", port=1)
    with pytest.raises(ValueError, match="load: neighbour needs hosts with several rails"):
        ADAPTER.commands(step)
