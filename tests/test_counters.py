"""Counter snapshots and deltas: wrap, reset, saturation, highlights; the sampler for real."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from benchharness.telemetry.counters import delta, parse_snapshot, snapshot_commands
from benchharness.telemetry.parsers.sampler import parse_sampler_output

SAMPLER = Path(__file__).parents[1] / "benchharness" / "onhost" / "sampler.py"
FIXTURES = Path(__file__).parent / "fixtures" / "telemetry"


def test_snapshot_commands_are_argv_lists() -> None:
    cmds = snapshot_commands({"netdev": "ens1f0np0", "rdma_dev": "mlx5_0", "rdma_port": 2})
    assert cmds == [
        ["ethtool", "-S", "ens1f0np0"],
        ["grep", "-H", "-r", "-s", "", "/sys/class/net/ens1f0np0/statistics"],
        ["grep", "-H", "-r", "-s", "", "/sys/class/infiniband/mlx5_0/ports/2/counters",
         "/sys/class/infiniband/mlx5_0/ports/2/hw_counters"],
    ]
    (one,) = snapshot_commands({"netdev": "eth0"}, sampler_path="/tmp/bh/sampler.py")
    assert one == ["python3", "/tmp/bh/sampler.py", "--snapshot", "--netdev", "eth0"]


def test_parse_snapshot_of_command_output_names_the_netdev() -> None:
    text = (FIXTURES / "parsers" / "counters-snapshot" / "eth0-commands.txt").read_text()
    snap = parse_snapshot(text)
    assert snap["ethtool:eth0:tx_kicks"] > 0  # netdev taken from the sysfs lines
    assert snap["ib:mlx5_2/1:port_xmit_data"] == 2**32 - 1
    assert snap["ib_hw:mlx5_2/1:np_cnp_sent"] == 598
    assert parse_snapshot("NIC statistics:\n     rx_prio3_pause: 7\n", netdev="ens3")["ethtool:ens3:rx_prio3_pause"] == 7


def test_delta_wraps_32bit_ib_counters_and_marks_resets() -> None:
    before = {"ib:mlx5_0/1:port_xmit_data": 2**32 - 100, "ethtool:e:rx_prio3_pause": 500,
              "ethtool:e:tx_bytes": 10**15, "ib_hw:mlx5_0/1:np_cnp_sent": 40, "net:e:rx_bytes": 1}
    after = {"ib:mlx5_0/1:port_xmit_data": 50, "ethtool:e:rx_prio3_pause": 520,
             "ethtool:e:tx_bytes": 1000, "ib_hw:mlx5_0/1:np_cnp_sent": 52, "ib_hw:mlx5_0/1:out_of_sequence": 3}
    d = delta(before, after)
    assert d["counters"]["ib:mlx5_0/1:port_xmit_data"] == 150
    assert d["wrapped"] == ["ib:mlx5_0/1:port_xmit_data"]
    assert d["counters"]["ethtool:e:tx_bytes"] == 1000 and d["reset"] == ["ethtool:e:tx_bytes"]
    assert d["missing"] == ["net:e:rx_bytes"] and d["new"] == ["ib_hw:mlx5_0/1:out_of_sequence"]
    hl = d["highlights"]
    assert hl["pfc_pause"]["rx"] == {"3": 20}
    assert hl["ecn_cnp"] == {"np_cnp_sent": 12}
    assert hl["ib_bytes"]["xmit"] == 600  # 4-octet words


def test_delta_explicit_width_and_saturation() -> None:
    d = delta({"x:y:z": 2**16 - 10}, {"x:y:z": 5}, width_bits=16)
    assert d["counters"]["x:y:z"] == 15 and d["wrapped"] == ["x:y:z"]
    d64 = delta({"x:y:z": 2**40}, {"x:y:z": 5}, width_bits=64)
    assert d64["reset"] == ["x:y:z"] and d64["counters"]["x:y:z"] == 5
    sat = delta({"ib:m/1:port_rcv_data": 2**32 - 1}, {"ib:m/1:port_rcv_data": 2**32 - 1})
    assert sat["saturated"] == ["ib:m/1:port_rcv_data"] and sat["counters"]["ib:m/1:port_rcv_data"] == 0


def test_snapshot_mode_for_real() -> None:
    out = subprocess.run([sys.executable, str(SAMPLER), "--snapshot", "--netdev", "lo"],
                         capture_output=True, text=True, timeout=30, check=True)
    snap = parse_snapshot(out.stdout)
    assert snap["net:lo:rx_bytes"] >= 0 and "net:lo:tx_packets" in snap


def test_sampler_two_intervals_for_real() -> None:
    out = subprocess.run([sys.executable, str(SAMPLER), "--interval", "0.3", "--netdev", "lo", "--count", "2",
                          "--no-psutil"], capture_output=True, text=True, timeout=30, check=True)
    lines = parse_sampler_output(out.stdout)
    assert len(lines) == 2
    for line in lines:
        assert line["source"] == "proc" and 0.2 < line["interval_s"] < 1.0
        assert len(line["cpu"]["per_core_pct"]) >= 1 and 0 <= line["cpu"]["total_pct"] <= 100
        assert line["net"]["lo"]["rx_bytes_per_s"] >= 0 and "tx_gbps" in line["net"]["lo"]
        assert line["mem"]["total_bytes"] > 0
    assert lines[1]["ts"] > lines[0]["ts"]


def test_sampler_exits_cleanly_on_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, str(SAMPLER), "--interval", "0.2", "--netdev", "lo"],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.7)
    proc.send_signal(signal.SIGTERM)
    stdout, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert len(parse_sampler_output(stdout)) >= 1


def test_sampler_output_parser_skips_a_cut_line() -> None:
    text = (FIXTURES / "parsers" / "sampler" / "eth0-two-lines-and-cut.jsonl").read_text()
    lines = parse_sampler_output(text)
    assert len(lines) == 2 and all(line["net"]["eth0"]["rx_bytes_per_s"] >= 0 for line in lines)


def test_rdma_statistic_of_a_shared_rxe_device_seen_from_a_namespace() -> None:
    """In a network namespace a shared-mode RDMA device has no hw_counters in sysfs; the sampler
    reads ``rdma -j statistic show link`` instead (output captured in the soft-RoCE VM)."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "benchharness" / "onhost"))
    try:
        import sampler
    finally:
        sys.path.pop(0)
    text = (Path(__file__).parent / "fixtures" / "captured" / "soft-roce-vm" / "rdma-statistic-show-link-rxe0.json").read_text()
    got = sampler.parse_rdma_statistic(text)
    assert got["sent_pkts"] == 0 and got["rdma_recvs"] == 0 and len(got) == 15
    assert "ifname" not in got and "port" not in got
    nested = '[{"ifindex": 3, "ifname": "mlx5_0", "port": 1, "counters": {"rx_write_requests": 7}}]'
    assert sampler.parse_rdma_statistic(nested) == {"rx_write_requests": 7}
