"""Transceiver temperatures over a step: the sampler reads ``ethtool -m`` (a stand-in that prints a
real published output, tests/fixtures/health/real/SOURCES), the controller folds it into sensors.

The real sampler runs here on this machine; its PATH starts with the stand-in's folder, as
``telemetry_path`` puts it there on a host."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.config.suites import load_suite
from benchharness.core.errors import ConfigError
from benchharness.core.model import Host
from benchharness.telemetry.collect import sampler_argv, split_sampler_output
from benchharness.telemetry.module_step import module_temperatures
from benchharness.telemetry.temperature_checks import sensor_kind

REAL = Path(__file__).parent / "fixtures" / "health" / "real" / "ethtool_m_sfp_temperature_grep.txt"
SAMPLER = Path(__file__).parents[1] / "benchharness" / "onhost" / "sampler.py"


def stand_in_ethtool(root: Path) -> Path:
    """``ethtool -m good0`` prints the real output and counts the call; ``-m slow0`` does too,
    after 2 s; ``-m bad0`` fails as a port without a transceiver does; anything else goes to the
    real ethtool when there is one."""
    (root / "bin").mkdir(parents=True)
    (root / "module.txt").write_text(REAL.read_text())
    tool = root / "bin" / "ethtool"
    tool.write_text(f"""#!/bin/sh
case "$1 $2" in
  "-m good0") echo x >> '{root}/good.calls'; cat '{root}/module.txt' ;;
  "-m slow0") sleep 2; cat '{root}/module.txt' ;;
  "-m bad0") echo x >> '{root}/bad.calls'; echo "netlink error: Operation not supported" >&2; exit 1 ;;
  *) [ -x /usr/sbin/ethtool ] && exec /usr/sbin/ethtool "$@"; exit 0 ;;
esac
""")
    tool.chmod(0o755)
    return root / "bin"


def test_sampler_reads_transceivers_every_n_seconds_and_skips_a_port_without_one(tmp_path: Path) -> None:
    bin_dir = stand_in_ethtool(tmp_path)
    proc = subprocess.run([sys.executable, str(SAMPLER), "--interval", "0.25", "--count", "9", "--no-psutil",
                           "--netdev", "good0", "--netdev", "bad0", "--module-every", "1",
                           "--path-prefix", str(bin_dir)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    raw_lines = [json.loads(line) for line in proc.stdout.splitlines()]
    read = [i for i, line in enumerate(raw_lines) if "module_raw" in line]
    # about once a second while lines come every 0.25 s: reads are put at least 1 s apart, so the
    # lines can carry at most one per second of their span (and one more at its start)
    stamps = [line["ts"] for line in raw_lines]
    assert 2 <= len(read) <= (stamps[-1] - stamps[0]) + 2 and len(read) < len(raw_lines), (read, stamps)
    assert raw_lines[read[0]]["module_raw"]["bad0"]["error"].startswith("netlink error: Operation not supported")
    assert all("bad0" not in raw_lines[i]["module_raw"] for i in read[1:])  # asked once, then left alone
    assert (tmp_path / "bad.calls").read_text().count("x") == 1
    assert (tmp_path / "good.calls").read_text().count("x") >= len(read)
    lines, _ = split_sampler_output(proc.stdout)
    temps = [line["temps"]["good0/ethtool-m/module"] for line in lines if "good0/ethtool-m/module" in line.get("temps", {})]
    assert temps == [57.09] * len(read)
    assert not any("module_raw" in line for line in lines)


def test_a_slow_transceiver_read_does_not_hold_the_sample_lines_back(tmp_path: Path) -> None:
    """A module that takes 2 s to answer: the lines keep coming every 0.25 s meanwhile (the reads
    run in a thread of their own), and the read arrives in a later line."""
    bin_dir = stand_in_ethtool(tmp_path)
    proc = subprocess.run([sys.executable, str(SAMPLER), "--interval", "0.25", "--count", "14", "--no-psutil",
                           "--netdev", "slow0", "--module-every", "1", "--path-prefix", str(bin_dir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    raw_lines = [json.loads(line) for line in proc.stdout.splitlines()]
    stamps = [line["ts"] for line in raw_lines]
    assert max(b - a for a, b in itertools.pairwise(stamps)) < 1.5, stamps  # never stalled by the 2 s read
    assert any("slow0" in line.get("module_raw", {}) for line in raw_lines)
    assert "module_raw" not in raw_lines[0]  # the first read was still under way


def test_module_sensors_are_judged_as_modules_and_failed_reads_give_none() -> None:
    assert sensor_kind("eth3/ethtool-m/module") == "module"
    assert module_temperatures({"eth0": {"text": REAL.read_text()}, "eth1": {"error": "no module"},
                                "eth2": {"text": "Identifier : 0x11 (QSFP28)\n"}}) == {"eth0/ethtool-m/module": 57.09}
    assert module_temperatures(None) == {}


def test_module_interval_reaches_the_sampler_and_is_checked_with_its_line(tmp_path: Path) -> None:
    host = Host("a", "198.18.0.1", vars={"netdev": "eth0", "telemetry_path": "/opt/stand-ins"})
    argv = sampler_argv(host, "/tmp/s.py", 1.0, module_every=10)
    assert argv[argv.index("--module-every") + 1] == "10"
    assert argv[argv.index("--path-prefix") + 1] == "/opt/stand-ins"  # not only for GPU hosts
    assert "--module-every" not in sampler_argv(host, "/tmp/s.py", 1.0)
    path = tmp_path / "s.yaml"
    path.write_text("settings:\n  duration: 1\n  module_interval: 0.5\ntests:\n  - {name: t, tool: iperf3}\n")
    with pytest.raises(ConfigError, match=r"s\.yaml:3.*module_interval must be 0 \(off\) or seconds"):
        load_suite(str(path))
    path.write_text("settings:\n  duration: 1\n  module_interval: 0\ntests:\n  - {name: t, tool: iperf3}\n")
    assert load_suite(str(path)).settings["module_interval"] == 0
