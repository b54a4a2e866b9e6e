"""``bench parse nvidia-smi-q``: the Temperature and power sections of three driver generations
(R530 Tesla T4, R550 GH200 with T.Limit and module power, R595 ``-d POWER`` with average and
instantaneous draw), and the throttle reasons beside them. Real published outputs:
tests/fixtures/health/real (SOURCES there); the figures below are read by hand from those texts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.cli.parsers import describe, get_parser
from benchharness.core.errors import ToolFailure

REAL = Path(__file__).parent / "fixtures" / "health" / "real"
parse = get_parser("nvidia-smi-q")


def _one(name: str) -> dict:
    (gpu,) = parse((REAL / name).read_text())
    return gpu


def test_r530_t4_absolute_thresholds_and_power_readings() -> None:
    t4 = _one("nvidia_smi_q_t4_530_throttle_temp_power_prompt.txt")
    assert t4["gpu"] == "00000000:00:08.0"
    assert t4["temperature"] == {"gpu_current_temp_c": 38, "gpu_shutdown_temp_c": 96, "gpu_slowdown_temp_c": 93,
                                 "gpu_max_operating_temp_c": 85}  # Target and Memory are N/A: absent
    power = t4["power"]["gpu"]
    assert (power["draw_w"], power["limit_w"], power["enforced_power_limit_w"]) == (14.04, 70.0, 70.0)
    assert power["power_management"] == "Supported" and set(t4["power"]) == {"gpu"}
    assert t4["active"] == ["Idle"] and t4["reasons"]["SW Thermal Slowdown"] is False


def test_r550_gh200_tlimit_is_relative_and_module_power_is_its_own_scope() -> None:
    gh = _one("nvidia_smi_q_gh200_550_tlimit_module_power.txt")
    temp = gh["temperature"]
    assert temp["gpu_tlimit_temp_c"] == 55 and temp["gpu_shutdown_tlimit_temp_c"] == -8
    assert temp["memory_current_temp_c"] == 39 and "gpu_shutdown_temp_c" not in temp
    gpu, memory, module = gh["power"]["gpu"], gh["power"]["memory"], gh["power"]["module"]
    assert (gpu["draw_w"], gpu["limit_w"], gpu["requested_power_limit_w"]) == (87.88, 700.0, 900.0)
    assert memory == {"power_draw_w": 18.51, "draw_w": 18.51}
    assert (module["draw_w"], module["limit_w"]) == (169.77, 1000.0)
    assert gh["active"] == ["Idle"]


def test_r595_power_display_average_instantaneous_and_samples() -> None:
    new = _one("nvidia_smi_q_d_power_595_average_instantaneous_samples.txt")
    gpu = new["power"]["gpu"]
    assert (gpu["draw_w"], gpu["instantaneous_power_draw_w"], gpu["limit_w"]) == (11.67, 10.85, 180.0)
    assert new["power"]["samples"] == {"duration_s": 2.36, "number_of_samples": 119, "max_w": 16.48,
                                       "min_w": 10.43, "avg_w": 11.93}
    assert "module" not in new["power"] and "memory" not in new["power"]  # every reading N/A
    assert "reasons" not in new and "temperature" not in new  # not printed: absent, not "none active"


def test_same_fact_across_versions_draw_and_limit() -> None:
    draws = [_one(n)["power"]["gpu"]["draw_w"] for n in (
        "nvidia_smi_q_t4_530_throttle_temp_power_prompt.txt", "nvidia_smi_q_gh200_550_tlimit_module_power.txt",
        "nvidia_smi_q_d_power_595_average_instantaneous_samples.txt")]
    assert draws == [14.04, 87.88, 11.67]


def test_throttle_only_outputs_still_read() -> None:
    gb10 = _one("nvidia_smi_performance_gb10_580.txt")
    assert gb10["counters_us"]["SW Power Capping"] == 50284264713 and "temperature" not in gb10


def test_a_reading_without_its_number_names_the_line() -> None:
    text = (REAL / "nvidia_smi_q_t4_530_throttle_temp_power_prompt.txt").read_text()
    bad = text.replace("Power Draw                        : 14.04 W", "Power Draw                        : 14,04 W")
    with pytest.raises(ToolFailure) as info:
        parse(bad)
    assert info.value.kind == "unreadable" and "line 42" in info.value.message and "14,04 W" in info.value.message


def test_listed_and_exit_codes(tmp_path: Path) -> None:
    assert "T.Limit" in describe()["nvidia-smi-q"] and "Module Power Readings" in describe()["nvidia-smi-q"]
    other = tmp_path / "other.txt"
    other.write_text("GPU 00000000:01:00.0\n    ECC Errors\n        Volatile\n            SRAM Correctable : 0\n")
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", "nvidia-smi-q", str(other)],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode == 3, (res.returncode, res.stdout)
