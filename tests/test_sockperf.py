"""sockperf adapter: the parser on real published and captured outputs (tests/fixtures/sockperf,
SOURCES says where each came from), its command lines, and one real run over loopback."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.core.model import CommandResult, Host, Step
from benchharness.planning.plan import ports_reserved
from benchharness.tools import get_tool, tool_facts
from benchharness.tools.sockperf import ADAPTER, SOCKPERF, parse_output

pytestmark = pytest.mark.xdist_group("loopback")  # fixed ports on this machine's loopback: one worker (tests/turns.py)
FIXTURES = Path(__file__).parent / "fixtures" / "sockperf"

#: A few values of each fixture, read off the published text.
EXPECTED = {
    "pp_udp_64_kernel_baremetal_bookpanda": {
        "lat_avg_us": 32.867, "lat_stddev_us": 1.389, "lat_p50_us": 32.3, "lat_p90_us": 34.654,
        "lat_p99_us": 37.93, "lat_p999_us": 44.733, "lat_p9999_us": 49.778, "lat_p99999_us": 59.501,
        "lat_max_us": 143.884, "lat_min_us": 31.554, "observations": 449213, "dropped_messages": 0},
    "pp_udp_64_kernel_samenode_stats_bookpanda": {
        "lat_avg_us": 26.535, "lat_stddev_us": 5.928, "lat_p99_us": 44.974, "lat_p999_us": 71.528,
        "lat_max_us": 280.38, "valid_s": 29.55, "sent_messages": 543577},
    "pp_tcp_old_avglat_issue106": {"lat_avg_us": 121.88, "lat_p99_us": 121.88, "observations": 1},
    "pp_tcp_avglat_spaced_issue77_excerpt": {"lat_avg_us": 6.703, "lat_p99_us": 16.096, "lat_p50_us": 5.901,
                                             "received_messages": 100},
    "pp_tcp_fullrtt_38_issue172_excerpt": {"rtt_avg_us": 1892.6, "rtt_stddev_us": 422.741,
                                           "observations": 105413, "sockperf_version": "3.8-0.git31ee322aa82a"},
    "tp_tcp_32k_37_issue140": {"msg_rate_mpps": 0.155961, "bw_avg_MBps_tool": 4873.781,
                               "bw_avg_gbps": 4873.781 * 2**20 * 8 / 1e9, "pkt_rate_mpps": 3.587103,
                               "ip_frags_per_msg": 23, "sent_messages": 1559669, "sockperf_version": "3.7-no.git"},
    "pp_udp_64_37_debian_loopback": {"lat_p99_us": 12.643, "lat_p999_us": 21.69, "lat_max_us": 1278.451,
                                     "observations": 208571},
    "pp_tcp_1k_37_debian_loopback": {"lat_p50_us": 7.328, "lat_p99_us": 15.599, "lat_p999_us": 21.374},
    "ul_udp_64_37_debian_loopback": {"lat_p99_us": 1310.579, "observations": 2548, "sent_messages": 25471,
                                     "received_messages": 2548},
    "tp_udp_1472_37_debian_loopback": {"msg_rate_mpps": 0.191044, "bw_avg_MBps_tool": 268.189, "valid_s": 3.0},
    "tp_tcp_65000_37_debian_loopback": {"msg_rate_mpps": 0.028592, "bw_avg_MBps_tool": 1772.385},
}
ERRORS = {"err_no_server_udp_37_debian": ("connect_failed", "No messages were received from the server"),
          "err_connect_refused_tcp_37_debian": ("connect_failed", "Can`t connect socket"),
          "err_bad_size_37_debian": ("bad_args", "Invalid message size: 70000")}


def test_every_fixture_has_a_source_and_an_expectation() -> None:
    listed = {line.split(":", 1)[0] for line in (FIXTURES / "SOURCES").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    files = {p.name for p in FIXTURES.glob("*.txt")}
    assert files == listed
    assert {p.stem for p in FIXTURES.glob("*.txt")} == set(EXPECTED) | set(ERRORS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_parses(name: str) -> None:
    [rec] = parse_output((FIXTURES / f"{name}.txt").read_text())
    for key, value in EXPECTED[name].items():
        assert rec[key] == (pytest.approx(value) if isinstance(value, float) else value), key


def test_full_rtt_output_is_named_rtt_not_latency() -> None:
    [rec] = parse_output((FIXTURES / "pp_tcp_fullrtt_38_issue172_excerpt.txt").read_text())
    assert not any(k.startswith("lat_") for k in rec)


def test_latency_percentile_names_follow_the_metric_suffixes() -> None:
    [rec] = parse_output((FIXTURES / "pp_udp_64_37_debian_loopback.txt").read_text())
    assert {k for k in rec if k.startswith("lat_")} == {
        "lat_avg_us", "lat_stddev_us", "lat_min_us", "lat_max_us", "lat_p25_us", "lat_p50_us", "lat_p75_us",
        "lat_p90_us", "lat_p99_us", "lat_p999_us", "lat_p9999_us", "lat_p99999_us"}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_outputs_are_classified(name: str) -> None:
    kind, quote = ERRORS[name]
    with pytest.raises(ToolFailure) as exc:
        parse_output((FIXTURES / f"{name}.txt").read_text())
    assert exc.value.kind == kind and quote in exc.value.message


def test_version_is_read_from_both_forms() -> None:
    assert SOCKPERF.parse_version("sockperf, version 3.7-no.git\n   compiled 2021-08-23") == "3.7"
    assert SOCKPERF.parse_version("sockperf: == version #3.10-no.git == ") == "3.10"
    assert tool_facts()["sockperf"].apt == ("sockperf",)
    assert get_tool("sockperf") is ADAPTER


SRV = Host("srv", "10.0.0.1", data_ip="198.18.0.1")
CLI = Host("cli", "10.0.0.2", data_ip="198.18.0.2")


def _step(port: int = 11111, **params: object) -> Step:
    return Step(id="0000-lat-srv-cli-r0", test="lat", tool="sockperf", params=dict(params), hosts=(SRV, CLI),
                pattern="pairs", repetition=0, round=0, port=port, labels={})


def test_probe_alone_is_a_server_and_a_client() -> None:
    cmds = ADAPTER.commands(_step(mode="under-load", protocol="tcp", size="1K", mps=5000, reply_every=10,
                                  duration=3, numa=False))
    assert [(c.role, c.host.name, c.background) for c in cmds] == [("server", "srv", True), ("client", "cli", False)]
    assert cmds[0].argv == ("sockperf", "server", "-i", "198.18.0.1", "-p", "11111", "--tcp")
    assert cmds[1].argv == ("sockperf", "under-load", "-i", "198.18.0.1", "-p", "11111", "-m", "1024", "-t", "3",
                            "--tcp", "--mps=5000", "--reply-every=10")
    assert cmds[1].start_delay_s == 0.0 and "--full-rtt" not in cmds[1].argv


def test_bulk_load_both_ways_gets_its_own_servers_and_ports() -> None:
    params = {"mode": "ping-pong", "load_streams": 2, "load_direction": "both", "duration": 4, "numa": False}
    cmds = ADAPTER.commands(_step(port=6000, **params))
    loads = [c for c in cmds if c.role == "load"]
    servers = [c for c in cmds if c.role == "load-server"]
    assert [(c.host.name, c.argv[c.argv.index("-p") + 1]) for c in loads] == [
        ("cli", "6001"), ("cli", "6002"), ("srv", "6003"), ("srv", "6004")]
    assert [(c.host.name, c.argv[-2]) for c in servers] == [("srv", "6001"), ("srv", "6002"), ("cli", "6003"),
                                                          ("cli", "6004")]
    assert all(c.argv[1] == "throughput" and "--tcp" in c.argv and c.argv[c.argv.index("-t") + 1] == "7"
               for c in loads)  # the load outlasts the probe: 1 s lead + 4 s + 2 s margin
    probe = cmds[-1]
    assert probe.role == "client" and probe.start_delay_s == 1.0
    assert ports_reserved("sockperf", "pairs", params, (SRV, CLI)) == 5
    assert ports_reserved("sockperf", "pairs", {"mode": "ping-pong"}, (SRV, CLI)) == 1


@pytest.mark.parametrize("params, quote", [
    ({"mode": "pingpong"}, "mode='pingpong'"),
    ({"size": "64K"}, "14..65507"),
    ({"mode": "throughput", "load_streams": 1}, "not beside throughput"),
    ({"mode": "ping-pong", "reply_every": 10}, "only for mode under-load"),
    ({"mps": 0}, "mps=0"),
    ({"duration": "1.5s"}, "whole seconds"),
    ({"load_direction": "up"}, "forward, reverse, both"),
    ({"window": 3}, "unknown parameter"),
])
def test_bad_parameters_are_named(params: dict[str, object], quote: str) -> None:
    with pytest.raises(ValueError) as exc:
        ADAPTER.check_params(params)
    assert quote in str(exc.value)


@pytest.mark.skipif(shutil.which("sockperf") is None, reason="sockperf not installed (./setup.sh installs it)")
def test_real_probe_under_real_load_over_loopback() -> None:
    """The adapter's own command lines, run for real on 127.0.0.1, parsed by parse_step."""
    lo = Host("lo", "127.0.0.1", local=True)
    step = Step(id="0000-ul-lo-r0", test="ul", tool="sockperf", hosts=(lo, lo), pattern="self", repetition=0,
                round=0, port=15611, labels={"pair": "lo-lo"},
                params={"mode": "under-load", "size": 64, "mps": 1000, "reply_every": 2, "duration": 2,
                        "load_streams": 1, "numa": False})
    cmds = ADAPTER.commands(step)
    servers = [(c, subprocess.Popen(c.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
               for c in cmds if c.background]
    results = []
    try:
        time.sleep(0.5)
        clients = []
        for c in sorted((c for c in cmds if not c.background), key=lambda c: c.start_delay_s):
            time.sleep(c.start_delay_s - (clients[-1][0].start_delay_s if clients else 0.0))
            clients.append((c, subprocess.Popen(c.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        for c, proc in clients:
            out, err = proc.communicate(timeout=60)
            results.append(CommandResult(c, proc.returncode, out, err, 0.0, 1.0))
    finally:
        for c, proc in servers:
            proc.terminate()
            out, _ = proc.communicate(timeout=10)
            results.append(CommandResult(c, 0, out, "", 0.0, 1.0, stopped=True))
    records = ADAPTER.parse_step(step, results)
    [probe] = [r for r in records if r.get("kind") != "load"]
    [load] = [r for r in records if r.get("kind") == "load"]
    assert probe["sockperf_mode"] == "under-load" and probe["protocol"] == "udp" and probe["load_streams"] == 1
    assert 0 < probe["lat_p50_us"] <= probe["lat_p99_us"] <= probe["lat_p999_us"] <= probe["lat_max_us"]
    assert probe["observations"] > 100 and probe["pair"] == "lo-lo"
    assert load["sockperf_mode"] == "throughput" and load["protocol"] == "tcp" and load["bw_avg_gbps"] > 0


def test_a_log_of_latency_runs_then_a_throughput_run_keeps_every_run() -> None:
    """Two published outputs one after the other (two ping-pong runs, then a throughput run): three
    records, the throughput one no longer dropped because latency summaries came first."""
    real = Path(__file__).parent / "fixtures" / "real" / "sockperf"
    text = (real / "pp_tcp_3_10_i40e_prior_after_two_runs_root_prompt.txt").read_text() + \
        (real / "tp_tcp_3_10_ntb_elided_packet_rate_same_line.txt").read_text()
    records = parse_output(text)
    assert [r.get("lat_avg_us") for r in records] == [24.571, 24.965, None]
    assert records[2]["msg_rate_mpps"] == 0.008636
