"""GPU heat and clock throttling over a step: the sampler runs the vendor's tool (a stand-in that
prints real published outputs), the controller parses and judges what it read.

Real outputs (tests/fixtures/health/real/SOURCES): nvidia-smi -q -d PERFORMANCE of a GB10 (driver
580, with "Clocks Event Reasons Counters"), an older "Clocks Throttle Reasons" excerpt with SW
Thermal Slowdown active, and AMD's documented ``amd-smi metric --throttle`` of an MI300."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchharness.core.model import Host
from benchharness.telemetry import load
from benchharness.telemetry.collect import sampler_argv, sampler_gpu_edges, split_sampler_output
from benchharness.telemetry.gpu_step import interval_temperatures, sampler_gpu_vendor, throttle_record
from benchharness.telemetry.parsers.gpu_throttle import parse_amd_throttle

REAL = Path(__file__).parent / "fixtures" / "health" / "real"
SAMPLER = Path(__file__).parents[1] / "benchharness" / "onhost" / "sampler.py"
GB10 = (REAL / "nvidia_smi_performance_gb10_580.txt").read_text()
SW_THERMAL = (REAL / "nvidia_smi_clocks_throttle_sw_thermal_active.txt").read_text()
MI300 = (REAL / "amd_smi_metric_throttle_mi300.txt").read_text()


def nv(text: str) -> dict[str, object]:
    return {"cmd": "nvidia-smi -q -d PERFORMANCE", "rc": 0, "text": text}


def amd(text: str) -> dict[str, object]:
    return {"cmd": "amd-smi metric --throttle", "rc": 0, "text": text}


def judged(record: dict, mode: str) -> dict[str, list[str]]:
    return {g["gpu"]: load.throttled(g["active"], mode) for g in record["gpus"]}


def test_amd_throttle_real_output_parses() -> None:
    gpus = parse_amd_throttle(MI300)
    assert [g["gpu"] for g in gpus] == ["0", "1"]
    assert gpus[0]["accumulated"] == {"PROCHOT": 0, "PPT": 12, "SOCKET_THERMAL": 0, "VR_THERMAL": 0,
                                      "HBM_THERMAL": 0}
    assert gpus[0]["active"] == [] and gpus[0]["reasons"]["SOCKET_THERMAL"] is False


def test_a_quiet_step_passes_on_every_real_output() -> None:
    for raw in (nv(GB10), amd(MI300)):
        record = throttle_record(raw, raw)
        assert record is not None and record["gpus"], raw
        assert all(not r for r in judged(record, "none").values()), record


def test_a_throttle_that_came_and_went_during_the_step_is_seen_by_its_counter() -> None:
    # the GB10 at the step's end: 2.5 s more of SW power capping, 0.4 s of HW thermal slowdown;
    # every reason reads "Not Active" again by then
    end = GB10.replace("50284264713 us", "50286764713 us").replace(
        "HW Thermal Slowdown               : 0 us", "HW Thermal Slowdown               : 400000 us")
    record = throttle_record(nv(GB10), nv(end))
    assert record is not None
    (gpu,) = record["gpus"]
    assert gpu["active"] == ["SW Power Capping during the step (2.5 s)",
                             "HW Thermal Slowdown during the step (0.4 s)"]
    assert judged(record, "thermal") == {gpu["gpu"]: ["HW Thermal Slowdown during the step (0.4 s)"]}
    assert len(judged(record, "none")[gpu["gpu"]]) == 2


def test_active_at_the_end_on_a_real_output() -> None:
    record = throttle_record(None, nv(SW_THERMAL))
    assert record is not None
    assert judged(record, "none") == {"0": ["SW Power Cap", "SW Thermal Slowdown"]}
    assert judged(record, "thermal") == {"0": ["SW Thermal Slowdown"]}


def test_amd_violation_counters_and_active_flags() -> None:
    end = MI300.replace("SOCKET_THERMAL_ACCUMULATED: 0", "SOCKET_THERMAL_ACCUMULATED: 3811", 1)
    end = end.replace("PPT_VIOLATION_ACTIVE: NOT ACTIVE", "PPT_VIOLATION_ACTIVE: ACTIVE", 1)
    end = end.replace("PPT_ACCUMULATED: 12", "PPT_ACCUMULATED: 400", 1)
    record = throttle_record(amd(MI300), amd(end))
    assert record is not None
    # GPU 0 throttled; the PPT counter's growth is not listed twice beside its active flag
    assert judged(record, "none") == {"0": ["PPT violation", "SOCKET_THERMAL during the step (+3811 accumulated)"],
                                      "1": []}
    assert judged(record, "thermal") == {"0": ["SOCKET_THERMAL during the step (+3811 accumulated)"], "1": []}


def test_a_tool_that_answered_nothing_is_said_not_passed() -> None:
    record = throttle_record(None, {"cmd": "nvidia-smi -q -d PERFORMANCE", "error": "nvidia-smi not found on PATH"})
    assert record == {"gpus": [], "source": "nvidia-smi -q -d PERFORMANCE", "error": "nvidia-smi not found on PATH"}
    assert throttle_record(None, nv("GPU 00000000:01:00.0\n    Clocks Event Reasons : N/A\n"))["error"]
    assert throttle_record(None, None) is None


def test_interval_temperatures_of_both_vendors() -> None:
    got = interval_temperatures({"cmd": "nvidia-smi --query-gpu=...", "text": "0, 41, 55\n1, 43, [N/A]\n"})
    assert got == {"gpu0/nvidia-smi/core": 41.0, "gpu0/nvidia-smi/memory": 55.0, "gpu1/nvidia-smi/core": 43.0}
    real = (Path(__file__).parent / "fixtures" / "real" / "rocm-smi-temp"
            / "mi300a_junction_memory_no_gpu_prefix.txt").read_text()
    assert interval_temperatures({"cmd": "rocm-smi --showtemp", "text": real}) == {
        "gpu0/rocm-smi/junction": 43.0, "gpu0/rocm-smi/memory": 37.0}
    assert load.sensor_kind("gpu0/rocm-smi/junction") == "gpu"
    assert interval_temperatures({"cmd": "rocm-smi --showtemp", "error": "exit 2"}) == {}


def test_sampler_runs_the_gpu_tool_only_on_gpu_hosts() -> None:
    assert sampler_gpu_vendor(Host("a", "198.18.0.1", vars={})) is None
    assert sampler_gpu_vendor(Host("b", "198.18.0.2", vars={"gpus": 8})) == "nvidia"
    amd_host = Host("c", "198.18.0.3", vars={"gpus": 8, "gpu_vendor": "amd", "telemetry_path": "/opt/x/bin"})
    argv = sampler_argv(amd_host, "/tmp/s.py", 1.0)
    assert argv[argv.index("--gpu") + 1] == "amd" and argv[argv.index("--path-prefix") + 1] == "/opt/x/bin"
    assert "--gpu" not in sampler_argv(Host("a", "198.18.0.1", vars={}), "/tmp/s.py", 1.0)


def test_the_real_sampler_reads_a_stand_in_nvidia_smi(tmp_path: Path) -> None:
    """The sampler process with --gpu nvidia: temperatures every line, throttle state at both edges."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "perf.txt").write_text(SW_THERMAL)
    tool = bin_dir / "nvidia-smi"
    tool.write_text("#!/bin/sh\n"
                    'case "$*" in\n'
                    f"  \"-q -d PERFORMANCE\") cat '{tmp_path / 'perf.txt'}' ;;\n"
                    '  "--query-gpu=index,temperature.gpu,temperature.memory --format=csv,noheader,nounits")'
                    ' printf "0, 71, 80\\n1, 69, [N/A]\\n" ;;\n'
                    '  *) echo "unsupported: $*" >&2; exit 2 ;;\nesac\n')
    tool.chmod(0o755)
    proc = subprocess.run([sys.executable, str(SAMPLER), "--interval", "0.2", "--count", "2", "--no-psutil",
                           "--edge-snapshots", "--gpu", "nvidia", "--path-prefix", str(bin_dir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines, _ = split_sampler_output(proc.stdout)
    assert len(lines) == 2 and all("gpu_raw" not in line for line in lines)
    assert all(line["temps"]["gpu0/nvidia-smi/core"] == 71.0 and line["temps"]["gpu0/nvidia-smi/memory"] == 80.0
               and "gpu1/nvidia-smi/memory" not in line["temps"] for line in lines)
    edges = sampler_gpu_edges(proc.stdout)
    assert set(edges) == {"start", "end"}
    record = throttle_record(edges["start"], edges["end"])
    assert record is not None and judged(record, "thermal") == {"0": ["SW Thermal Slowdown"]}
    # without the tool: the error travels, nothing is judged as "not throttled"
    proc = subprocess.run([sys.executable, str(SAMPLER), "--interval", "0.2", "--count", "1", "--no-psutil",
                           "--edge-snapshots", "--gpu", "amd", "--path-prefix", str(bin_dir)],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": str(bin_dir)})
    assert proc.returncode == 0, proc.stderr
    end = sampler_gpu_edges(proc.stdout)["end"]
    assert "amd-smi not found" in end["error"], end
    assert json.dumps(throttle_record(None, end)).count("not found") == 1
