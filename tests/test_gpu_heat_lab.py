"""GPU heat and clock throttling judged over a real step on the loopback lab, against known truth.

Both lab hosts say ``gpus=1`` and put a stand-in ``nvidia-smi`` first on the sampler's PATH
(``telemetry_path``). h1's GPU stays at 50 °C and its throttle state (the real GB10 output of
tests/fixtures/health/real) does not change. h2's GPU climbs 4 °C per reading from 80 °C (past
the 85 °C limit by its third reading), and between the step's start and end its "HW Thermal
Slowdown" counter grows by 0.4 s while every reason reads "Not Active" again: a throttle that
came and went within the step. The verdicts must fail h2 on peak, slope and throttle, and pass h1.

Real sshd in namespaces, real iperf3, the real `bench` command and sampler."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import health_verdicts, run_with_host_vars

pytestmark = pytest.mark.lab

HERE = Path(__file__).parent
SUITE = HERE / "fixtures" / "health" / "lab-gpu-heat.yaml"
GB10 = HERE / "fixtures" / "health" / "real" / "nvidia_smi_performance_gb10_580.txt"
QUERY = "--query-gpu=index,temperature.gpu,temperature.memory --format=csv,noheader,nounits"


def stand_in(root: Path, start_c: int, step_c: int, throttled_after_first: bool) -> Path:
    """A stand-in nvidia-smi: temperatures that climb ``step_c`` per reading; the throttle state
    of the real GB10 output, its HW Thermal Slowdown counter grown after the first reading."""
    root.mkdir(parents=True)
    later = GB10.read_text()
    if throttled_after_first:
        later = later.replace("HW Thermal Slowdown               : 0 us", "HW Thermal Slowdown               : 400000 us")
    (root / "perf-first.txt").write_text(GB10.read_text())
    (root / "perf-later.txt").write_text(later)
    tool = root / "bin" / "nvidia-smi"
    tool.parent.mkdir()
    tool.write_text(f"""#!/bin/sh
cd '{root}' || exit 9
case "$*" in
  "{QUERY}")
    n=$(cat temp.n 2>/dev/null || echo 0); echo $((n + 1)) > temp.n
    echo "0, $(({start_c} + {step_c} * n)), 60" ;;
  "-q -d PERFORMANCE")
    if [ -e perf.seen ]; then cat perf-later.txt; else touch perf.seen; cat perf-first.txt; fi ;;
  *) echo "stand-in nvidia-smi: unsupported: $*" >&2; exit 2 ;;
esac
""")
    tool.chmod(0o755)
    return tool.parent


def test_a_heating_throttled_gpu_fails_its_host_and_the_cool_one_passes(lab_maker, tmp_path: Path) -> None:
    tools = {"h1": stand_in(tmp_path / "h1", 50, 0, False), "h2": stand_in(tmp_path / "h2", 80, 4, True)}
    with lab_maker("gh1", 2) as info:
        out, res = run_with_host_vars(info, tmp_path, SUITE, {h: f"gpus=1 telemetry_path={d}" for h, d in tools.items()})
    got = health_verdicts(out)
    status = {k: v["status"] for k, v in got.items()}
    assert status == {("health: temperature peak", "h1"): "pass", ("health: temperature peak", "h2"): "fail",
                      ("health: temperature slope", "h1"): "pass", ("health: temperature slope", "h2"): "fail",
                      ("health: throttle", "h1"): "pass", ("health: throttle", "h2"): "fail"}, \
        (status, res.stdout + res.stderr)
    assert "gpu0/nvidia-smi/core" in got[("health: temperature peak", "h2")]["message"]
    assert "HW Thermal Slowdown during the step (0.4 s)" in got[("health: throttle", "h2")]["message"]
    assert res.returncode == 1, res.stdout + res.stderr
    assert list((out / "telemetry" / "gpu").glob("*/h2.json"))
