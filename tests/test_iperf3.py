"""iperf3 adapter: fixture parses, unit conversions, errors, command lines, parameters, one real run.

The fixtures under fixtures/iperf3/ are real outputs of iperf3 3.12 on 127.0.0.1, captured by
fixtures/iperf3/capture.sh. Each ``NAME.json`` has its reviewed parse in ``NAME.expected.json``
(records, or {"error": {"kind", "message"}}). After a parser change, regenerate them with
``.venv/bin/python tests/test_iperf3.py --regen`` and review the diff by eye.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.core.model import Command, CommandResult, Host, Step
from benchharness.tools import iperf3_parse
from benchharness.tools.iperf3 import ADAPTER, parse_client_result

pytestmark = pytest.mark.xdist_group("loopback")  # fixed ports on this machine's loopback: one worker (tests/turns.py)
FIXTURES = Path(__file__).parent / "fixtures" / "iperf3"
RAW = sorted(p for p in FIXTURES.glob("*.json") if not p.name.endswith(".expected.json"))

H1 = Host("h1", "10.0.0.1", data_ip="198.18.0.1")
H2 = Host("h2", "10.0.0.2", data_ip="198.18.0.2")
H3 = Host("h3", "10.0.0.3", data_ip="198.18.0.3")
LOCAL = Host("localhost", "127.0.0.1", local=True)


def _expected_for(raw: Path) -> Path:
    return raw.with_name(raw.stem + ".expected.json")


def _parse_fixture(raw: Path) -> Any:
    """What the parser makes of a fixture, as JSON-ready data (records or the error)."""
    try:
        return json.loads(json.dumps(ADAPTER.parse_text(raw.read_text())))
    except ToolFailure as exc:
        return {"error": {"kind": exc.kind, "message": exc.message}}


def _raw(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return doc


def _step(hosts: tuple[Host, ...], pattern: str = "pairs", port: int = 5201, **params: Any) -> Step:
    return Step(id="s1", test="tcp-bw", tool="iperf3", params=params, hosts=hosts, pattern=pattern,
                port=port)


def _result(command: Command, stdout: str = "", stderr: str = "", rc: int | None = 0,
            **kw: Any) -> CommandResult:
    return CommandResult(command=command, rc=rc, stdout=stdout, stderr=stderr, started=0.0, ended=1.0,
                         **kw)


# ---------------------------------------------------------------------------- fixtures


def test_every_fixture_has_an_expected_parse() -> None:
    assert len(RAW) >= 10
    missing = [p.name for p in RAW if not _expected_for(p).exists()]
    assert not missing


@pytest.mark.parametrize("raw", RAW, ids=[p.stem for p in RAW])
def test_fixture_parses_to_expected(raw: Path) -> None:
    assert _parse_fixture(raw) == json.loads(_expected_for(raw).read_text())


def test_registry_and_parse_text_agree() -> None:
    from benchharness.tools import get_tool

    assert get_tool("iperf3") is ADAPTER
    assert ADAPTER.parse_text((FIXTURES / "tcp.json").read_text())[-1]["kind"] == "summary"


# ---------------------------------------------------------------------------- units and semantics


def test_tcp_summary_is_receiver_side_in_gbps() -> None:
    end = _raw("tcp.json")["end"]
    summary = ADAPTER.parse_text((FIXTURES / "tcp.json").read_text())[-1]
    assert summary["bw_avg_gbps"] == end["sum_received"]["bits_per_second"] / 1e9
    assert summary["bw_sent_gbps"] == end["sum_sent"]["bits_per_second"] / 1e9
    assert summary["bytes"] == end["sum_received"]["bytes"]
    assert summary["cpu_local_pct"] == end["cpu_utilization_percent"]["host_total"]
    assert summary["cpu_remote_pct"] == end["cpu_utilization_percent"]["remote_total"]
    assert 1 < summary["bw_avg_gbps"] < 1000  # loopback: Gbit/s, not bit/s nor Tbit/s


def test_unit_conversions_on_a_hand_made_document() -> None:
    doc = {"start": {"test_start": {"protocol": "UDP", "num_streams": 1, "blksize": 64, "reverse": 0,
                                    "duration": 2, "bytes": 0, "blocks": 0}},
           "intervals": [],
           "end": {"sum_sent": {"seconds": 2.0, "bytes": 64_000_000, "bits_per_second": 2.56e8,
                                "packets": 1_000_000},
                   "sum_received": {"seconds": 2.0, "bytes": 57_600_000, "bits_per_second": 2.304e8,
                                    "jitter_ms": 0.5, "lost_packets": 100_000, "packets": 1_000_000,
                                    "lost_percent": 10.0}}}
    (summary,) = iperf3_parse.parse_document(doc)
    assert summary["bw_avg_gbps"] == pytest.approx(0.2304)
    assert summary["bw_sent_gbps"] == pytest.approx(0.256)
    # 900 000 delivered datagrams in 2 s = 0.45 Mpps
    assert summary["msg_rate_mpps"] == pytest.approx(0.45)
    assert (summary["loss_pct"], summary["lost_packets"], summary["packets"]) == (10.0, 100_000, 1_000_000)


def test_udp_message_rate_matches_raw_counts() -> None:
    received = _raw("udp_small.json")["end"]["sum_received"]
    summary = ADAPTER.parse_text((FIXTURES / "udp_small.json").read_text())[-1]
    pps = (received["packets"] - received["lost_packets"]) / received["seconds"]
    assert summary["msg_rate_mpps"] == pytest.approx(pps / 1e6)
    assert summary["size_bytes"] == 64
    # delivered datagrams x 64 bytes is what the receiver counted
    assert (received["packets"] - received["lost_packets"]) * 64 == received["bytes"]


def test_bidir_gives_both_directions_and_reverse_is_reverse() -> None:
    bidir = ADAPTER.parse_text((FIXTURES / "tcp_bidir.json").read_text())
    end = _raw("tcp_bidir.json")["end"]
    summaries = {r["direction"]: r for r in bidir if r["kind"] == "summary"}
    assert set(summaries) == {"forward", "reverse"}
    assert summaries["reverse"]["bytes"] == end["sum_received_bidir_reverse"]["bytes"]
    assert {r["direction"] for r in bidir if r["kind"] == "interval"} == {"forward", "reverse"}
    reverse = ADAPTER.parse_text((FIXTURES / "tcp_reverse.json").read_text())
    assert {r["direction"] for r in reverse} == {"reverse"}


def test_interrupted_run_keeps_intervals_and_a_partial_summary() -> None:
    records = ADAPTER.parse_text((FIXTURES / "interrupted.json").read_text())
    intervals = [r for r in records if r["kind"] == "interval"]
    (summary,) = [r for r in records if r["kind"] == "summary"]
    assert len(intervals) == len(_raw("interrupted.json")["intervals"]) >= 2
    assert summary["partial"] is True and "interrupt" in summary["partial_reason"]
    assert summary["bytes"] == sum(r["bytes"] for r in intervals)
    assert summary["bw_avg_gbps"] == pytest.approx(
        summary["bytes"] * 8 / sum(r["duration_s"] for r in intervals) / 1e9)
    assert "cpu_remote_pct" not in summary  # the server's figures never arrived


def test_fewer_intervals_than_the_duration_is_partial() -> None:
    doc = _raw("tcp.json")
    short = copy.deepcopy(doc)
    short["start"]["test_start"]["duration"] = 5  # asked for 5 s, got 1 s of intervals
    summary = iperf3_parse.parse_document(short)[-1]
    assert summary["partial"] is True and "cover" in summary["partial_reason"]
    no_end = copy.deepcopy(doc)
    no_end["end"] = {}
    summary = iperf3_parse.parse_document(no_end)[-1]
    assert summary["partial"] is True and summary["bytes"] == sum(i["sum"]["bytes"] for i in doc["intervals"])
    assert "partial" not in iperf3_parse.parse_document(doc)[-1]


def test_two_documents_are_both_parsed() -> None:
    records = ADAPTER.parse_text((FIXTURES / "two_docs.json").read_text())
    summaries = [r for r in records if r["kind"] == "summary"]
    assert [(s["doc"], s["streams"]) for s in summaries] == [(0, 1), (1, 2)]


def test_garbage_between_documents_is_skipped() -> None:
    text = (FIXTURES / "tcp.json").read_text()
    records = ADAPTER.parse_text("warning: something\n" + text + "\n{ truncated")
    assert records[-1]["kind"] == "summary"


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("name", "kind", "text"), [
    ("refused.json", "connect_failed", "unable to connect to server: Connection refused"),
    ("server_busy.json", "server_busy", "the server is busy running a test"),
])
def test_error_documents_raise(name: str, kind: str, text: str) -> None:
    with pytest.raises(ToolFailure) as info:
        ADAPTER.parse_text((FIXTURES / name).read_text())
    assert info.value.kind == kind and text in info.value.message


@pytest.mark.parametrize(("message", "kind"), [
    ("unable to connect to server: No route to host", "connect_failed"),
    ("control socket has closed unexpectedly", "server_terminated"),
    ("unable to start listener for connections: Address already in use", "port_in_use"),
    ("some new failure", "tool_error"),
])
def test_error_kinds(message: str, kind: str) -> None:
    assert iperf3_parse.classify_error(message) == kind


def test_empty_output_errors() -> None:
    client = ADAPTER.commands(_step((H1, H2)))[1]
    with pytest.raises(ToolFailure) as info:
        parse_client_result(_result(client, stderr="bash: line 1: iperf3: command not found", rc=127))
    assert info.value.kind == "tool_missing" and "command not found" in info.value.message
    with pytest.raises(ToolFailure) as info:
        parse_client_result(_result(client, stderr="iperf3: error - bad option", rc=1))
    assert info.value.kind == "crashed" and "bad option" in info.value.message
    with pytest.raises(ToolFailure) as info:
        parse_client_result(_result(client, stdout="Segmentation fault\n", rc=139))
    assert info.value.kind == "unparsable"


def test_parse_step_labels_and_failures() -> None:
    step = _step((H1, H2))
    server, client = ADAPTER.commands(step)
    ok = _result(client, stdout=(FIXTURES / "tcp.json").read_text())
    records = ADAPTER.parse_step(step, [_result(server, stopped=True), ok])
    assert {(r["server"], r["client"], r["step"], r["tool"]) for r in records} == {("h1", "h2", "s1", "iperf3")}

    refused = _result(client, stdout=(FIXTURES / "refused.json").read_text())
    crashed = _result(server, stderr="iperf3: error - unable to start listener for connections: "
                                     "Address already in use", rc=1)
    with pytest.raises(ToolFailure) as info:
        ADAPTER.parse_step(step, [crashed, refused])
    assert info.value.kind == "connect_failed"
    assert "server-h1-5201 (rc 1)" in info.value.message and "Address already in use" in info.value.message
    with pytest.raises(ToolFailure) as info:
        ADAPTER.parse_step(step, [refused])
    assert "no result was recorded for its server" in info.value.message
    with pytest.raises(ToolFailure) as info:
        ADAPTER.parse_step(step, [_result(server)])
    assert info.value.kind == "missing_result" and "client-h2-5201" in info.value.message


# ---------------------------------------------------------------------------- commands


def test_pairs_commands() -> None:
    server, client = ADAPTER.commands(_step((H1, H2), streams=4, length="128K", bitrate="100M/64",
                                            window="4M", connect_timeout=3000, parallel="threads"))
    assert server.argv == ("iperf3", "-s", "-p", "5201", "-1", "-B", "198.18.0.1", "--forceflush")
    assert (server.host, server.background, server.label) == (H1, True, "server-h1-5201")
    assert re.search(server.ready_pattern or "", "Server listening on 5201 (test #1)")
    assert client.argv == ("iperf3", "-c", "198.18.0.1", "-p", "5201", "-J", "-t", "5", "-i", "1",
                           "-B", "198.18.0.2", "-P", "4", "-l", "131072", "-b", "100000000/64",
                           "-w", "4194304", "--connect-timeout", "3000")
    assert (client.host, client.background, client.label) == (H2, False, "client-h2-5201")
    assert 5 + 10 <= client.timeout_s <= 5 + 120


NEW1 = Host("n1", "10.0.0.1", data_ip="198.18.0.1", vars={"iperf3_version": "3.16"})
NEW2 = Host("n2", "10.0.0.2", data_ip="198.18.0.2", vars={"iperf3_version": "3.17.1"})


def test_streams_are_threads_only_where_both_ends_run_iperf3_3_16() -> None:
    _, client = ADAPTER.commands(_step((NEW1, NEW2), streams=8))
    assert client.argv[client.argv.index("-P") + 1] == "8"
    assert ADAPTER.ports_per_flow({"streams": 8}, (NEW1, NEW2)) == 1
    old = Host("o", "10.0.0.3", data_ip="198.18.0.3", vars={"iperf3_version": "3.12"})
    for hosts in ((NEW1, old), (H1, H2)):  # one end before 3.16, or versions unknown: processes
        assert ADAPTER.ports_per_flow({"streams": 8}, hosts) == 8
    assert ADAPTER.ports_per_flow({"streams": 8, "parallel": "processes"}, (NEW1, NEW2)) == 8
    assert ADAPTER.ports_per_flow({"streams": 1}, (H1, H2)) == 1


def test_several_processes_one_stream_each_on_ports_of_their_own() -> None:
    cmds = ADAPTER.commands(_step((H1, H2, H3), pattern="incast", port=6000, streams=3))
    servers = [c for c in cmds if c.role == "server"]
    clients = [c for c in cmds if c.role == "client"]
    assert [(c.host.name, c.argv[c.argv.index("-p") + 1]) for c in servers] == [
        ("h1", str(p)) for p in range(6000, 6006)]
    assert [(c.host.name, c.argv[c.argv.index("-p") + 1], c.label) for c in clients] == [
        ("h2", "6000", "client-h2-6000"), ("h2", "6001", "client-h2-6001"), ("h2", "6002", "client-h2-6002"),
        ("h3", "6003", "client-h3-6003"), ("h3", "6004", "client-h3-6004"), ("h3", "6005", "client-h3-6005")]
    assert all("-P" not in c.argv for c in clients)
    assert {c.start_delay_s for c in clients} == {0.0}  # all at the step's one agreed instant
    assert len({c.label for c in cmds}) == len(cmds)


def test_servers_and_clients_run_on_the_nics_numa_node() -> None:
    a = Host("a", "10.0.0.1", data_ip="198.18.0.1", vars={"numa_node": 1, "netdev": "eth2"})
    b = Host("b", "10.0.0.2", data_ip="198.18.0.2", vars={"netdev": "eth3"})
    server, client = ADAPTER.commands(_step((a, b)))
    assert server.argv[:4] == ("numactl", "--cpunodebind=1", "--membind=1", "iperf3")
    assert client.argv[:2] == ("sh", "-c") and "/sys/class/net/eth3/device/numa_node" in client.argv
    assert client.argv[client.argv.index("/sys/class/net/eth3/device/numa_node") + 1] == "iperf3"
    server, client = ADAPTER.commands(_step((a, b), numa=False))
    assert server.argv[0] == client.argv[0] == "iperf3"


def test_processes_are_summed_into_one_sample_and_kept_each() -> None:
    step = _step((H1, H2), streams=2, protocol="udp")
    cmds = ADAPTER.commands(step)
    clients = [c for c in cmds if c.role == "client"]
    doc = _raw("udp_small.json")
    results = [_result(c, stdout=json.dumps(doc)) for c in cmds]
    records = ADAPTER.parse_step(step, results)
    one = [r for r in iperf3_parse.parse_document(doc) if r["kind"] == "summary"]
    (summed,) = [r for r in records if r["kind"] == "summary"]
    (single,) = one
    assert summed["bw_avg_gbps"] == pytest.approx(2 * single["bw_avg_gbps"])
    assert summed["packets"] == 2 * single["packets"] and summed["processes"] == 2
    assert summed["loss_pct"] == pytest.approx(single["loss_pct"])  # recomputed, not added
    assert summed["streams"] == 2 * single["streams"]
    per = [r for r in records if r["kind"] == "process"]
    assert [(r["process"], r["port"]) for r in per] == [(0, 5201), (1, 5202)]
    assert all(r["bw_avg_gbps"] == single["bw_avg_gbps"] and r["client"] == "h2" for r in per)
    intervals = [r for r in records if r["kind"] == "interval"]
    assert len(intervals) == len([r for r in iperf3_parse.parse_document(doc) if r["kind"] == "interval"])
    # one process failing fails the flow, naming that process
    bad = [_result(cmds[0]), _result(cmds[1]), _result(clients[0], stdout=json.dumps(doc)),
           _result(clients[1], stdout=(FIXTURES / "refused.json").read_text())]
    with pytest.raises(ToolFailure) as info:
        ADAPTER.parse_step(step, bad)
    assert "client-h2-5202" in info.value.message


def test_udp_and_flags() -> None:
    _, client = ADAPTER.commands(_step((LOCAL, LOCAL), pattern="self", protocol="udp", duration=2,
                                       omit=1, interval=0.5, reverse=True, zerocopy=True,
                                       extra_args=["--cport", "40000"]))
    assert client.argv == ("iperf3", "-c", "127.0.0.1", "-p", "5201", "-J", "-t", "2", "-i", "0.5", "-u",
                           "-O", "1", "-b", "1000000000", "-R", "-Z", "--cport", "40000")
    assert client.timeout_s >= 3
    _, client = ADAPTER.commands(_step((H1, H2), protocol="udp", bitrate="0", bidir=True))
    assert client.argv[client.argv.index("-b"):][:2] == ("-b", "0") and "--bidir" in client.argv


def test_self_commands_use_the_hosts_traffic_ip() -> None:
    for hosts in ((H3, H3), (H3,)):
        server, client = ADAPTER.commands(_step(hosts, pattern="self"))
        assert server.host == client.host == H3
        assert server.argv[server.argv.index("-B") + 1] == "198.18.0.3"
        assert client.argv[2] == "198.18.0.3" and "-B" not in client.argv
        assert server.label != client.label


def test_incast_commands() -> None:
    cmds = ADAPTER.commands(_step((H1, H2, H3), pattern="incast", port=6000))
    servers, clients = cmds[:2], cmds[2:]
    assert [(c.host, c.argv[3], c.label) for c in servers] == [
        (H1, "6000", "server-h1-6000"), (H1, "6001", "server-h1-6001")]
    assert [(c.host, c.argv[2], c.argv[4], c.label) for c in clients] == [
        (H2, "198.18.0.1", "6000", "client-h2-6000"), (H3, "198.18.0.1", "6001", "client-h3-6001")]
    assert all(c.background for c in servers) and not any(c.background for c in clients)


def test_one_to_many_and_all_to_all_labels_are_unique() -> None:
    cmds = ADAPTER.commands(_step((H1, H2, H3), pattern="one-to-many"))
    assert [(c.host.name, c.argv[2], c.label) for c in cmds if c.role == "client"] == [
        ("h1", "198.18.0.2", "client-h1-to-h2-5201"), ("h1", "198.18.0.3", "client-h1-to-h3-5201")]
    cmds = ADAPTER.commands(_step((H1, H2, H3), pattern="all-to-all"))
    assert len(cmds) == 12 and len({c.label for c in cmds}) == 12
    # every server port on a receiver is distinct
    servers = [(c.host.name, c.argv[3]) for c in cmds if c.role == "server"]
    assert len(set(servers)) == 6


def test_wrong_host_count_is_refused() -> None:
    with pytest.raises(ValueError, match="needs"):
        ADAPTER.commands(_step((H1, H2, H3)))


# ---------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(("params", "name"), [
    ({"protocol": "sctp"}, "protocol"),
    ({"duration": 0}, "duration"),
    ({"duration": 2.5}, "duration"),
    ({"duration": True}, "duration"),
    ({"duration": "1.5s"}, "duration"),
    ({"duration": "soon"}, "duration"),
    ({"omit": -1}, "omit"),
    ({"streams": 0}, "streams"),
    ({"streams": 200}, "streams"),
    ({"streams": 2.5}, "streams"),
    ({"length": "12Q"}, "length"),
    ({"length": 0}, "length"),
    ({"protocol": "udp", "length": "128K"}, "length"),
    ({"bitrate": "fast"}, "bitrate"),
    ({"bitrate": "100M/x"}, "bitrate"),
    ({"bidir": "yes"}, "bidir"),
    ({"bidir": True, "reverse": True}, "reverse"),
    ({"window": "-1"}, "window"),
    ({"interval": 0.05}, "interval"),
    ({"interval": "2h"}, "interval"),
    ({"connect_timeout": "3s"}, "connect_timeout"),
    ({"extra_args": "--title 'unclosed"}, "extra_args"),
    ({"timeout": 0}, "timeout"),
    ({"extra_args": ["-V", 3]}, "extra_args"),
    ({"sreams": 4}, "sreams"),
])
def test_check_params_rejects(params: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError) as info:
        ADAPTER.check_params(params)
    assert name in str(info.value)
    assert repr(params[name]) in str(info.value)


def test_check_params_accepts_defaults_and_typical_values() -> None:
    ADAPTER.check_params({})
    ADAPTER.check_params({"protocol": "udp", "length": 64, "bitrate": "2G", "interval": 0.1,
                          "streams": 8, "window": "4M", "connect_timeout": 500, "extra_args": []})
    # durations as suites write them
    _, client = ADAPTER.commands(_step((H1, H2), duration="1m", omit="2s", interval="500ms"))
    assert client.argv[6:10] == ("-t", "60", "-i", "0.5") and client.argv[12:14] == ("-O", "2")
    assert client.timeout_s >= 62


# ---------------------------------------------------------------------------- real run


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed")
def test_real_loopback_run() -> None:
    step = _step((LOCAL, LOCAL), pattern="self", port=15211, duration=1, interval=0.5)
    server_cmd, client_cmd = ADAPTER.commands(step)
    server = subprocess.Popen(server_cmd.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        deadline = time.monotonic() + 10
        seen = ""
        while time.monotonic() < deadline and not re.search(server_cmd.ready_pattern or "", seen):
            seen += server.stdout.readline()
        assert re.search(server_cmd.ready_pattern or "", seen), seen
        client = subprocess.run(client_cmd.argv, capture_output=True, text=True, timeout=client_cmd.timeout_s)
        server_out, server_err = server.communicate(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    results = [_result(server_cmd, stdout=seen + server_out, stderr=server_err, rc=server.returncode),
               _result(client_cmd, stdout=client.stdout, stderr=client.stderr, rc=client.returncode)]
    records = ADAPTER.parse_step(step, results)
    (summary,) = [r for r in records if r["kind"] == "summary"]
    assert summary["bw_avg_gbps"] > 0.1 and summary["bytes"] > 0
    assert 0.9 < summary["duration_s"] < 3.0 and "partial" not in summary
    assert len([r for r in records if r["kind"] == "interval"]) >= 2
    assert summary["server"] == summary["client"] == "localhost"


def _regen() -> None:
    for raw in RAW:
        _expected_for(raw).write_text(json.dumps(_parse_fixture(raw), indent=1) + "\n")
        print("wrote", _expected_for(raw).name)


if __name__ == "__main__":
    if sys.argv[1:] == ["--regen"]:
        _regen()


def test_extra_args_as_a_string_are_split_not_shelled() -> None:
    server, client = Host("h1", "198.18.0.11"), Host("h2", "198.18.0.12")
    step = Step(id="s", test="t", tool="iperf3", params={**ADAPTER.params, "extra_args": "--title 'a b; rm -rf /'"},
                hosts=(server, client), port=5201)
    argv = next(c for c in ADAPTER.commands(step) if c.role == "client").argv
    assert argv[-2:] == ("--title", "a b; rm -rf /")


def test_all_to_all_on_one_host_gives_loopback_flows() -> None:
    h = Host("localhost", "127.0.0.1", local=True)
    step = Step(id="s", test="t", tool="iperf3", params=dict(ADAPTER.params), hosts=(h, h), pattern="all-to-all",
                port=5201)
    assert len([c for c in ADAPTER.commands(step) if c.role == "client"]) == 2


def test_iperf3_bin_host_variable_and_one_line_errors() -> None:
    server = Host("h1", "198.18.0.11", vars={"iperf3_bin": "/opt/iperf/bin/iperf3"})
    client = Host("h2", "198.18.0.12")
    step = Step(id="s", test="t", tool="iperf3", params=dict(ADAPTER.params), hosts=(server, client), port=5201)
    argv = {c.role: c.argv[0] for c in ADAPTER.commands(step)}
    assert argv == {"server": "/opt/iperf/bin/iperf3", "client": "iperf3"}
    usage = "iperf3: option requires an argument -- 'x'\n" + "\n".join(f"  -{c}  usage line" for c in "abcdefgh")
    cmd = next(c for c in ADAPTER.commands(step) if c.role == "client")
    with pytest.raises(ToolFailure) as info:
        ADAPTER.parse_step(step, [CommandResult(cmd, 1, "", usage, 0.0, 1.0)])
    assert "option requires an argument" in info.value.message and "usage line" not in info.value.message
