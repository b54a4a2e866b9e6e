"""Transceiver heat judged over a real step on the loopback lab, against known truth.

Both lab hosts put a stand-in ``ethtool`` first on the sampler's PATH (``telemetry_path``): for
``ethtool -m eth0`` it prints the real published output of tests/fixtures/health/real (an SFP at
57.09 °C), anything else goes to the real ethtool. h1's module stays at 57.09 °C; h2's climbs
4 °C per read from 66 °C (past the suite's 75 °C by its fourth read). The verdicts must fail h2
on peak and slope, naming its transceiver, and pass h1.

Real sshd in namespaces, real iperf3, the real `bench` command and sampler."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import health_verdicts, run_with_host_vars

pytestmark = pytest.mark.lab

HERE = Path(__file__).parent
SUITE = HERE / "fixtures" / "health" / "lab-module-heat.yaml"
REAL = HERE / "fixtures" / "health" / "real" / "ethtool_m_sfp_temperature_grep.txt"


def stand_in(root: Path, start_c: float, step_c: int) -> Path:
    """A stand-in ethtool whose ``-m eth0`` is the real output with the temperature climbing
    ``step_c`` per read from ``start_c``."""
    root.mkdir(parents=True)
    head, tail = REAL.read_text().split("57.09", 1)
    (root / "head.txt").write_text(head)
    (root / "tail.txt").write_text(tail.split("\n", 1)[1])
    tool = root / "bin" / "ethtool"
    tool.parent.mkdir()
    tool.write_text(f"""#!/bin/sh
cd '{root}' || exit 9
if [ "$1 $2" = "-m eth0" ]; then
  n=$(cat reads.n 2>/dev/null || echo 0); echo $((n + 1)) > reads.n
  c=$(awk "BEGIN {{ printf \\"%.2f\\", {start_c} + {step_c} * $n }}")
  f=$(awk "BEGIN {{ printf \\"%.2f\\", ({start_c} + {step_c} * $n) * 9 / 5 + 32 }}")
  cat head.txt; echo "$c degrees C / $f degrees F"; cat tail.txt
  exit 0
fi
[ -x /usr/sbin/ethtool ] && exec /usr/sbin/ethtool "$@"
exit 0
""")
    tool.chmod(0o755)
    return tool.parent


def test_a_heating_transceiver_fails_its_host_and_the_cool_one_passes(lab_maker, tmp_path: Path) -> None:
    tools = {"h1": stand_in(tmp_path / "h1", 57.09, 0), "h2": stand_in(tmp_path / "h2", 66, 4)}
    with lab_maker("mh1", 2) as info:
        out, res = run_with_host_vars(info, tmp_path, SUITE, {h: f"telemetry_path={d}" for h, d in tools.items()})
    got = health_verdicts(out, "health: temperature")
    status = {k: v["status"] for k, v in got.items()}
    assert status == {("health: temperature peak", "h1"): "pass", ("health: temperature peak", "h2"): "fail",
                      ("health: temperature slope", "h1"): "pass", ("health: temperature slope", "h2"): "fail"}, \
        (status, res.stdout + res.stderr)
    assert "eth0/ethtool-m/module" in got[("health: temperature peak", "h2")]["message"]
    assert (tmp_path / "h1" / "reads.n").read_text().strip() != "0"  # h1's module was read, and stayed cool
    assert res.returncode == 1, res.stdout + res.stderr
