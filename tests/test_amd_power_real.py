"""``bench parse rocm-smi`` / ``rocm-smi-power`` on real published ``rocm-smi -a`` sections of three
ROCm generations (tests/fixtures/health/real, SOURCES there): an MI210's Average Graphics Package
Power, an APU whose power cap is "Not supported" (no cap: absent, not 0) and four MI300X with a 750 W
cap and socket power. Figures read by hand."""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

REAL = Path(__file__).parent / "fixtures" / "health" / "real"


def _power(name: str) -> list[tuple]:
    return [(p["gpu"], p["reading"], p["power_w"]) for p in get_parser("rocm-smi-power")((REAL / name).read_text())]


def test_apu_without_a_power_cap() -> None:
    assert _power("rocm_smi_6_1_apu_power_cap_unsupported_socket_power.txt") == [
        (0, "current_socket_graphics_package_power", 15.171)]
    whole = get_parser("rocm-smi")((REAL / "rocm_smi_6_1_apu_power_cap_unsupported_socket_power.txt").read_text())
    assert whole["temperatures"] == [{"gpu": 0, "sensor": "edge", "temperature_c": 55.0}]


def test_mi300x_cap_and_socket_power_per_gpu() -> None:
    got = _power("rocm_smi_mi300x_4gpu_junction_memory_cap_750_socket_power.txt")
    assert [g for g in got if g[1] == "max_graphics_package_power"] == [
        (i, "max_graphics_package_power", 750.0) for i in range(4)]
    assert [w for _, r, w in got if r == "current_socket_graphics_package_power"] == [133.0, 130.0, 131.0, 136.0]
    temps = get_parser("rocm-smi")((REAL / "rocm_smi_mi300x_4gpu_junction_memory_cap_750_socket_power.txt")
                                   .read_text())["temperatures"]
    assert {(t["gpu"], t["sensor"]): t["temperature_c"] for t in temps}[(3, "junction")] == 39.0 and len(temps) == 8


def test_mi210_average_package_power() -> None:
    assert _power("rocm_smi_mi210_product_memory_temp_power.txt") == [
        (0, "average_graphics_package_power", 42.0)]
