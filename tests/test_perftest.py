"""perftest adapter: parser against fixtures in perftest's real formats, command lines, step parsing.

There is no RDMA here (the kernel has no InfiniBand support), so result fixtures are written in
the exact printf formats of perftest's perftest_parameters.h (4.x, 6.x) and the layouts real runs print;
``err_no_device_real.txt`` is what the installed ib_write_bw printed on this machine. The real
binaries are still run once below: they fail at device lookup, which the adapter must classify.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Step
from benchharness.tools import get_tool
from benchharness.tools import perftest_parse as pp
from benchharness.tools.perftest import ADAPTER, READY_PATTERN

FIXTURES = Path(__file__).parent / "fixtures" / "perftest"
CASES = sorted(FIXTURES.glob("*.txt"))


def _expected(path: Path) -> dict:
    return json.loads(path.with_suffix("").with_suffix(".expected.json").read_text())


def _approx_records(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert set(g) == set(w)
        for key, value in w.items():
            if isinstance(value, float):
                assert g[key] == pytest.approx(value, rel=1e-9), key
            else:
                assert g[key] == value, key


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture_parses_as_expected(path: Path) -> None:
    want = _expected(path)
    text = path.read_text()
    if "error" in want:
        with pytest.raises(ToolFailure) as exc:
            pp.parse_text(text)
        assert exc.value.kind == want["error"]["kind"]
        assert want["error"]["quote"] in exc.value.message
    else:
        _approx_records(pp.parse_text(text), want["records"])


def test_every_fixture_has_an_expected_parse() -> None:
    assert len(CASES) >= 20
    for path in CASES:
        assert path.with_suffix("").with_suffix(".expected.json").exists(), path.name


def _one(name: str) -> dict:
    rows = pp.parse_text((FIXTURES / name).read_text())
    assert len(rows) == 1
    return rows[0]


def test_mb_per_sec_is_mebibytes_and_keeps_the_tools_figure() -> None:
    rec = _one("write_bw_4x_mb_roce.txt")
    assert rec["bw_avg_MBps_tool"] == 11030.45
    assert rec["bw_avg_gbps"] == pytest.approx(11030.45 * 2**20 * 8 / 1e9, abs=1e-6)
    assert rec["bw_peak_gbps"] == pytest.approx(11030.78 * 2**20 * 8 / 1e9, abs=1e-6)
    assert (rec["device"], rec["link_type"], rec["gid_index"], rec["mtu"]) == ("mlx5_0", "Ethernet", 3, 1024)
    assert rec["role"] == "client"


def test_gbit_table_is_exact_and_has_no_tool_figure() -> None:
    rec = _one("read_bw_gbits_ib_interrupted.txt")
    assert rec["bw_avg_gbps"] == 328.61 and rec["bw_peak_gbps"] == 328.64
    assert "bw_avg_MBps_tool" not in rec
    assert rec["perftest_test"] == "ib_read_bw" and rec["transport"] == "IB"


def test_server_output_is_labelled_server() -> None:
    assert _one("write_bw_4x_mb_server.txt")["role"] == "server"


def test_bidirectional_title_and_qps_are_read() -> None:
    rec = _one("write_bw_bidir_gbits.txt")
    assert rec["bidir"] is True and rec["qps"] == 2


def test_all_sizes_sweep_gives_one_record_per_size_in_order() -> None:
    rows = pp.parse_text((FIXTURES / "send_bw_all_mib_srd.txt").read_text())
    assert [r["size_bytes"] for r in rows] == [2 << i for i in range(13)]
    assert {r["connection"] for r in rows} == {"SRD"}


def test_duration_mode_peak_zero_is_not_a_measurement_and_cpu_util_is_kept() -> None:
    rec = _one("write_bw_duration_cpu_util.txt")
    assert "bw_peak_gbps" not in rec and "bw_peak_MBps_tool" not in rec
    assert rec["bw_avg_gbps"] == 91.73 and rec["cpu_util_pct"] == 3.56


def test_latency_percentiles_old_and_duration_variants() -> None:
    new = _one("send_lat_percentiles.txt")
    assert (new["lat_typical_us"], new["lat_p99_us"], new["lat_p999_us"]) == (1.27, 1.37, 5.19)
    old = _one("send_lat_3x_no_percentiles.txt")
    assert "lat_p99_us" not in old and old["lat_typical_us"] == 1.07
    dur = _one("read_lat_duration_tps.txt")
    assert dur["lat_avg_us"] == 2.42 and dur["tps_avg"] == 413812.77 and "lat_min_us" not in dur


def test_histogram_lines_inside_a_table_are_not_rows() -> None:
    rec = _one("write_lat_histogram_interrupted.txt")
    assert rec["size_bytes"] == 12288 and rec["iterations"] == 6


def test_out_json_is_used_when_valid_or_fixable_else_stdout() -> None:
    assert _one("json_write_bw_valid.txt")["parsed_from"] == "out_json"
    lat = _one("json_write_lat_invalid_keys.txt")
    assert lat["parsed_from"] == "out_json" and lat["lat_p999_us"] == 4.03
    assert _one("json_write_bw_truncated.txt")["parsed_from"] == "stdout"


def test_lenient_json_fixes_unquoted_keys_and_trailing_commas() -> None:
    data = pp._lenient_json('{\ntest_info: {\ntest: RDMA_Write_BW_Test,\nDevice: "mlx5_0",\n},\n'
                            'results: {\nMsgSize: 65536,\nBW_average: 11030.45,\n},\n}')
    assert data == {"test_info": {"test": "RDMA_Write_BW_Test", "Device": "mlx5_0"},
                    "results": {"MsgSize": 65536, "BW_average": 11030.45}}
    assert pp._lenient_json("{ results: {") is None


def test_out_json_bandwidth_without_a_known_unit_is_not_guessed() -> None:
    text = '{"results": {"MsgSize": 65536, "n_iterations": 5000, "BW_peak": 1, "BW_average": 1, "MsgRate": 1}}'
    assert pp.parse_out_json(text, None) is None
    rows = pp.parse_out_json(text, "Gb/sec")
    assert rows is not None and rows[0]["bw_avg_gbps"] == 1.0


def test_exit_127_without_text_is_tool_missing_and_empty_output_is_no_result() -> None:
    with pytest.raises(ToolFailure) as exc:
        pp.parse_output("", "", rc=127)
    assert exc.value.kind == "tool_missing"
    with pytest.raises(ToolFailure) as exc:
        pp.parse_output("", "", rc=1)
    assert exc.value.kind == "no_result" and "exit code 1" in exc.value.message


def test_rows_win_over_a_later_error_line() -> None:
    text = (FIXTURES / "write_bw_4x_mb_roce.txt").read_text()
    rows = pp.parse_output(text, "Failed to close connection between server and client\n", rc=1)
    assert rows[0]["bw_avg_MBps_tool"] == 11030.45


# ---- adapter: parameters and command lines -----------------------------------------------------

SERVER = Host("srv", "10.0.0.1", data_ip="198.18.0.1",
              vars={"rdma_dev": "mlx5_0", "rdma_port": 1, "gid_index": 3, "netdev": "ens1f0"})
CLIENT = Host("cli", "10.0.0.2", data_ip="198.18.0.2",
              vars={"rdma_dev": "mlx5_1", "rdma_port": 1, "gid_index": 3, "numa_node": 1})


def _step(params: dict, hosts: tuple[Host, ...] = (SERVER, CLIENT), pattern: str = "pairs") -> Step:
    return Step(id="s0001", test="write-bw", tool="perftest", params=params, hosts=hosts,
                pattern=pattern, port=18515, labels={"size": params.get("size")})


def test_registered_under_its_name() -> None:
    assert get_tool("perftest") is ADAPTER


def test_pair_commands_server_first_with_ready_banner() -> None:
    server, client = ADAPTER.commands(_step({"test": "ib_write_bw", "size": "64K", "bidir": True,
                                             "duration": 5}))
    assert server.background and server.role == "server" and not client.background
    assert server.argv[:2] == ("stdbuf", "-oL")  # perftest does not flush its banner otherwise
    assert re.search(server.ready_pattern or "", "* Waiting for client to connect... *")
    tool = server.argv[server.argv.index("ib_write_bw"):]
    assert tool == ("ib_write_bw", "-p", "18515", "-d", "mlx5_0", "-i", "1", "-x", "3", "-F", "-s", "65536",
                    "-D", "5", "-b", "--report_gbits")
    assert client.argv[-1] == "198.18.0.1"
    assert client.argv[:3] == ("numactl", "--cpunodebind=1", "--membind=1")  # inventory numa_node
    assert "-d" in client.argv and client.argv[client.argv.index("-d") + 1] == "mlx5_1"
    assert server.timeout_s > client.timeout_s >= 5


def test_numa_from_sysfs_and_numa_off() -> None:
    server, _ = ADAPTER.commands(_step({"test": "ib_send_lat", "size": 2, "iters": 1000}))
    i = server.argv.index("sh")
    assert server.argv[i + 4] == "/sys/class/net/ens1f0/device/numa_node"
    off, _ = ADAPTER.commands(_step({"test": "ib_send_lat", "numa": False}))
    assert "sh" not in off.argv and "numactl" not in off.argv
    assert "-n" not in off.argv and "-s" not in off.argv  # tool defaults


def test_latency_tests_take_no_bw_options() -> None:
    _, client = ADAPTER.commands(_step({"test": "ib_read_lat", "size": 64, "iters": 500}))
    assert "--report_gbits" not in client.argv and "-b" not in client.argv
    assert client.argv[client.argv.index("-n"):client.argv.index("-n") + 2] == ("-n", "500")


def test_all_sizes_and_options_map_to_flags() -> None:
    _, client = ADAPTER.commands(_step({
        "test": "ib_write_bw", "all": True, "iters": 1000, "qps": 4, "rdma_cm": True,
        "connection": "UC", "mtu": 4096, "tx_depth": 256, "use_cuda": 0, "rate_limit": 100,
        "burst_size": 64, "rate_units": "g", "report_gbits": False, "extra_args": "--odp -F"}))
    argv = client.argv
    for flag in ("-a", "-R", "--use_cuda=0", "--rate_limit=100", "--burst_size=64", "--rate_units=g",
                 "--odp", "-F"):
        assert flag in argv
    for flag, value in (("-q", "4"), ("-c", "UC"), ("-m", "4096"), ("-t", "256"), ("-n", "1000")):
        assert argv[argv.index(flag) + 1] == value
    assert "--report_gbits" not in argv and "-s" not in argv


@pytest.mark.parametrize("params, word", [
    ({"test": "ib_write_bandwidth"}, "test"),
    ({"test": "ib_write_lat", "bidir": True}, "bidir"),
    ({"test": "ib_write_bw", "all": True, "duration": 5}, "all"),
    ({"test": "ib_write_bw", "cpu_util": True, "iters": 100}, "cpu_util"),
    ({"test": "ib_write_bw", "connection": "UD"}, "connection"),
    ({"test": "ib_read_bw", "connection": "UC"}, "connection"),
    ({"test": "ib_write_bw", "mtu": 1500}, "mtu"),
    ({"test": "ib_write_bw", "iters": 2}, "iters"),
    ({"test": "ib_write_bw", "size": "big"}, "size"),
    ({"test": "ib_write_bw", "color": "red"}, "color"),
])
def test_bad_params_name_the_parameter(params: dict, word: str) -> None:
    with pytest.raises(ValueError, match=word):
        ADAPTER.check_params(params)


def test_iters_win_over_a_suite_duration() -> None:
    _, client = ADAPTER.commands(_step({"test": "ib_write_lat", "iters": 10000, "duration": 5}))
    assert "-n" in client.argv and "-D" not in client.argv


def test_timeout_scales_with_duration_and_sizes() -> None:
    assert ADAPTER.timeout_s({"test": "ib_write_bw", "duration": 10}) == 55.0
    big = ADAPTER.timeout_s({"test": "ib_write_bw", "size": "8M", "iters": 5000})
    small = ADAPTER.timeout_s({"test": "ib_write_bw", "size": 2, "iters": 5000})
    assert big > small + 300  # 5000 x 8 MiB at the 1 Gbit/s floor is ~335 s
    assert ADAPTER.timeout_s({"test": "ib_write_bw", "timeout": "90"}) == 90.0


def test_incast_gives_one_server_port_per_sender_and_unique_names() -> None:
    third = Host("c2", "10.0.0.3", vars={"rdma_dev": "mlx5_0"})
    cmds = ADAPTER.commands(_step({"test": "ib_write_bw"}, (SERVER, CLIENT, third), "incast"))
    servers = [c for c in cmds if c.role == "server"]
    assert [c.argv[c.argv.index("-p") + 1] for c in servers] == ["18515", "18516"]
    assert len({c.name for c in cmds}) == 4
    assert all(c.argv[-1] == "198.18.0.1" for c in cmds if c.role == "client")


def test_self_pattern_runs_both_sides_on_one_host() -> None:
    server, client = ADAPTER.commands(_step({"test": "ib_write_bw"}, (SERVER,), "self"))
    assert server.host == client.host == SERVER and server.name != client.name


def test_out_json_wraps_the_client_only() -> None:
    server, client = ADAPTER.commands(_step({"test": "ib_write_bw", "out_json": True}))
    assert "--out_json" not in server.argv
    path = "/tmp/bench-s0001-cli.json"
    assert client.argv[:2] == ("sh", "-c") and client.argv[4] == path
    assert f"--out_json_file={path}" in client.argv and client.argv[-1] == "198.18.0.1"


# ---- the wrapper scripts, run for real with /bin/sh --------------------------------------------

def test_json_wrapper_appends_the_file_and_keeps_the_exit_code(tmp_path: Path) -> None:
    from benchharness.tools.perftest import _JSON_SCRIPT
    out = tmp_path / "r.json"
    tool = f'echo " table"; echo "{{\\"results\\": {{}}}}" > {out}; exit 3'
    proc = subprocess.run(["sh", "-c", _JSON_SCRIPT, "bench-json", str(out), "sh", "-c", tool],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == 3
    head, tail = pp.split_json(proc.stdout)
    assert head == " table\n" and tail is not None and json.loads(tail) == {"results": {}}
    assert not out.exists()


def test_numa_wrapper_pins_when_sysfs_has_a_node_and_runs_unpinned_otherwise(tmp_path: Path) -> None:
    from benchharness.tools.common import _NUMA_SCRIPT
    none = tmp_path / "none"
    none.write_text("-1\n")
    proc = subprocess.run(["sh", "-c", _NUMA_SCRIPT, "bench-numa", str(none), "echo", "ran"],
                          capture_output=True, text=True, timeout=10)
    assert proc.stdout == "ran\n" and pp.numa_node(proc.stderr) is None and "BENCH_NUMA=none" in proc.stderr
    if shutil.which("numactl") and Path("/sys/devices/system/node/node0").exists():
        zero = tmp_path / "zero"
        zero.write_text("0\n")
        proc = subprocess.run(["sh", "-c", _NUMA_SCRIPT, "bench-numa", str(zero), "echo", "ran"],
                              capture_output=True, text=True, timeout=10)
        assert proc.stdout == "ran\n" and pp.numa_node(proc.stderr) == 0


# ---- parse_step ------------------------------------------------------------------------------

def _result(cmd: Command, stdout: str = "", stderr: str = "", rc: int | None = 0,
            stopped: bool = False) -> CommandResult:
    return CommandResult(cmd, rc, stdout, stderr, time.time(), time.time(), stopped=stopped)


def test_parse_step_takes_client_rows_with_labels_and_hosts() -> None:
    step = _step({"test": "ib_write_bw", "size": "64K", "report_gbits": False})
    server, client = ADAPTER.commands(step)
    results = [_result(client, (FIXTURES / "write_bw_4x_mb_roce.txt").read_text(), "BENCH_NUMA=1\n"),
               _result(server, (FIXTURES / "write_bw_4x_mb_server.txt").read_text())]
    [rec] = ADAPTER.parse_step(step, results)
    assert rec["step"] == "s0001" and rec["test"] == "write-bw" and rec["perftest_test"] == "ib_write_bw"
    assert (rec["client_host"], rec["server_host"], rec["role"]) == ("cli", "srv", "client")
    assert rec["numa_node"] == 1 and rec["size_bytes"] == 65536 and "tool_warning" not in rec


def test_server_error_is_the_root_cause_of_a_client_connect_failure() -> None:
    step = _step({"test": "ib_write_bw"})
    server, client = ADAPTER.commands(step)
    results = [_result(client, "", (FIXTURES / "err_connect_failed.txt").read_text(), rc=1),
               _result(server, "", (FIXTURES / "err_no_device_real.txt").read_text(), rc=1)]
    with pytest.raises(ToolFailure) as exc:
        ADAPTER.parse_step(step, results)
    assert exc.value.kind == "no_device"
    assert "server-srv on srv" in exc.value.message and "s0001" in exc.value.message


def test_client_error_names_step_and_host() -> None:
    step = _step({"test": "ib_write_bw"})
    server, client = ADAPTER.commands(step)
    results = [_result(client, "", "Failed to modify QP 264 to RTR\n", rc=1),
               _result(server, "", "", rc=None, stopped=True)]
    with pytest.raises(ToolFailure) as exc:
        ADAPTER.parse_step(step, results)
    assert exc.value.kind == "modify_qp_failed" and "client-cli on cli" in exc.value.message


# ---- the installed perftest, run for real: no RDMA here, so it must fail as no_device ------------

@pytest.mark.skipif(shutil.which("ib_write_bw") is None, reason="perftest is not installed")
def test_real_ib_write_bw_fails_with_no_device_through_the_adapters_command_lines() -> None:
    lo = Host("lo", "127.0.0.1", local=True, vars={"rdma_dev": "mlx5_0", "netdev": "lo"})
    step = Step(id="real", test="write-bw", tool="perftest", params={"test": "ib_write_bw", "iters": 5},
                hosts=(lo,), pattern="self", port=18690)
    results = []
    for cmd in ADAPTER.commands(step):
        proc = subprocess.run(list(cmd.argv), capture_output=True, text=True, timeout=20)
        results.append(_result(cmd, proc.stdout, proc.stderr, proc.returncode))
        err = ADAPTER.classify(results[-1])
        assert err is not None and err.kind == "no_device"
    with pytest.raises(ToolFailure) as exc:
        ADAPTER.parse_step(step, results)
    assert exc.value.kind == "no_device" and "Infiniband/RoCE device" in exc.value.message


def test_ready_pattern_matches_both_banners() -> None:
    assert re.search(READY_PATTERN, " Waiting for client rdma_cm QP to connect")
    assert not re.search(READY_PATTERN, "Waiting for connection...")


def test_rows_printed_before_a_failure_are_kept_with_the_reason() -> None:
    step = _step({"test": "ib_write_bw", "report_gbits": False})
    server, client = ADAPTER.commands(step)
    out = (FIXTURES / "write_bw_4x_mb_roce.txt").read_text()
    results = [_result(client, out, "Failed to close connection between server and client\n", rc=1),
               _result(server, "", "", rc=None, stopped=True)]
    [rec] = ADAPTER.parse_step(step, results)
    assert rec["bw_avg_MBps_tool"] == 11030.45 and rec["tool_warning"] == "exit code 1"


def test_real_rxe_clock_estimate_failure_is_its_own_kind() -> None:
    """Captured in the soft-RoCE VM: perftest's CPU clock estimate failed, every figure is inf."""
    from benchharness.tools.perftest_parse import parse_output as parse_rxe

    text = (Path(__file__).parent / "fixtures" / "captured" / "soft-roce-vm" / "ib_send_lat-2B-clock-estimate-failed.txt").read_text()
    with pytest.raises(ToolFailure) as err:
        parse_rxe(text)
    assert err.value.kind == "clock" and "r^2: 0.778721 < 0.9" in str(err.value)


RXE = Path(__file__).parent / "fixtures" / "captured" / "soft-roce-vm"


def test_real_rxe_clock_fallback_keeps_its_figures_and_says_where_the_mhz_came_from() -> None:
    """Captured in the soft-RoCE VM: the sampled estimate failed (r^2 0.897903) and perftest fell
    back to /proc/cpuinfo's MHz; the figures are kept, marked with their clock's source."""
    from benchharness.tools.perftest_parse import parse_output as parse_rxe

    (row,) = parse_rxe((RXE / "ib_write_lat-4K-n1000-clock-fallback.txt").read_text())
    assert row["cpu_mhz_source"] == "proc_cpuinfo"
    assert (row["size_bytes"], row["lat_min_us"], row["lat_p99_us"]) == (4096, 74.70, 184.68)
    (normal,) = parse_rxe((RXE / "ib_write_lat-2B-n1000.txt").read_text())
    assert "cpu_mhz_source" not in normal


@pytest.mark.parametrize("name, test, size, metric", [
    ("ib_write_bw-64K-D2.txt", "RDMA_Write BW", 65536, "bw_avg_gbps"),
    ("ib_read_bw-64K-D2.txt", "RDMA_Read BW", 65536, "bw_avg_gbps"),
    ("ib_send_bw-64K-D2.txt", "Send BW", 65536, "bw_avg_gbps"),
    ("ib_write_bw-64K-n300-bidir-q2.txt", "RDMA_Write Bidirectional BW", 65536, "bw_avg_gbps"),
    ("ib_write_bw-64K-D2-server.txt", "RDMA_Write BW", 65536, "bw_avg_gbps"),
    ("ib_write_lat-2B-n1000.txt", "RDMA_Write Latency", 2, "lat_p99_us"),
    ("ib_send_lat-2B-n1000.txt", "Send Latency", 2, "lat_p99_us"),
    ("ib_read_lat-2B-n1000.txt", "RDMA_Read Latency", 2, "lat_p99_us"),
])
def test_real_rxe_outputs_parse(name: str, test: str, size: int, metric: str) -> None:
    """Outputs of the soft-RoCE VM (tests/test_rdma_vm.py): rxe0, RoCE v2 GID 1, Ethernet link."""
    from benchharness.tools.perftest_parse import parse_output as parse_rxe

    text = (RXE / name).read_text()
    assert test in text
    (row,) = parse_rxe(text)
    assert (row["size_bytes"], row["device"], row["gid_index"], row["link_type"]) == (size, "rxe0", 1, "Ethernet")
    assert row[metric] > 0
    if metric == "lat_p99_us":
        assert row["iterations"] == 1000
        assert 0 < row["lat_min_us"] <= row["lat_typical_us"] <= row["lat_p99_us"] <= row["lat_p999_us"]
    else:
        assert row["msg_rate_mpps"] > 0


def test_gpu_memory_latency_only_where_perftest_takes_it() -> None:
    with pytest.raises(ValueError, match="use_cuda: perftest measures GPU memory latency only with ib_read_lat"):
        ADAPTER.check_params({"test": "ib_write_lat", "use_cuda": 0})
    ADAPTER.check_params({"test": "ib_send_lat", "use_cuda": 0})
    ADAPTER.check_params({"test": "ib_read_lat", "use_rocm": 0})
