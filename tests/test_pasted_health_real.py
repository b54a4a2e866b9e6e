"""``bench health BEFORE AFTER seconds=N`` on published pairs of snapshots: the same command run
twice on one host, a stated interval apart (tests/fixtures/health/real, SOURCES there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchharness.telemetry.counters import parse_snapshot
from benchharness.telemetry.parsers.netstat import parse_netstat

REAL = Path(__file__).parent / "fixtures" / "health" / "real"
INCAST = "netstat_s_egrep_retransmited_sleep_1_riak_incast"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchharness", *args], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))


def test_netstat_lines_grepped_out_of_their_sections_keep_their_mib() -> None:
    before = parse_snapshot((REAL / f"{INCAST}.before.txt").read_text())
    assert before == {"ip:-:OutRequests": 1542387771, "tcp:-:RetransSegs": 521663296,
                      "ipext:-:OutOctets": 1222021825}
    after = parse_snapshot((REAL / f"{INCAST}.after.txt").read_text())
    assert after["tcp:-:RetransSegs"] - before["tcp:-:RetransSegs"] == 92
    # the same phrases under their headers read as before; a phrase two tables share stays unread
    # without its header (Udp's "packets received" is UdpLite's too), and ethtool -S names stay ethtool's
    assert parse_netstat("Tcp:\n    48108 segments retransmitted\nIpExt:\n    OutOctets: 5\n") == {
        "tcp:-:RetransSegs": 48108, "ipext:-:OutOctets": 5}
    assert parse_netstat("    7 packets received\n") == {}
    assert parse_snapshot("NIC statistics:\n     rx_bytes: 10\n     OutOctets_x: 3\n") == {
        "ethtool:-:rx_bytes": 10, "ethtool:-:OutOctets_x": 3}


def test_bench_health_fails_the_retransmissions_of_a_published_tcp_incast() -> None:
    """A Riak node in TCP incast: 92 segments retransmitted in the 1 s of the post's "sleep 1"."""
    res = bench("health", str(REAL / f"{INCAST}.before.txt"), str(REAL / f"{INCAST}.after.txt"), "seconds=1")
    assert res.returncode == 1, res.stdout + res.stderr
    fails = [line for line in res.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and fails[0].split()[1] == "host", res.stdout
    # no OutSegs in the paste: the IP packets sent (+10604) bound TCP's segments from above, so
    # 92 / 10604 is the least the rate can be, and it is over the limit (100 per million)
    assert "retransmissions: RetransSegs +92 in 1 s: at least 8676 per million TCP segments sent" in fails[0]


def test_the_published_block_whole_is_judged_as_its_two_files(tmp_path: Path) -> None:
    """The post's code block as it was published, one paste (its command line, then the first
    netstat's three lines, then the second's): split where both halves hold the same counters,
    the interval from its own 'sleep 1', the same failing verdict as the two files."""
    block = tmp_path / "riak_incast_block.txt"
    block.write_text((REAL / f"{INCAST}.before.txt").read_text() + (REAL / f"{INCAST}.after.txt").read_text())
    res = bench("health", str(block))
    assert res.returncode == 1, res.stdout + res.stderr
    fails = [line for line in res.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "retransmissions: RetransSegs +92 in 1 s: at least 8676 per million" in fails[0]
    assert "seconds=1 (the paste's 'sleep 1' between its two runs)" in res.stdout
    one = bench("health", str(REAL / f"{INCAST}.before.txt"), "seconds=1")  # one snapshot only
    assert one.returncode == 3 and "not two snapshots of the same counters" in one.stderr, one.stderr
