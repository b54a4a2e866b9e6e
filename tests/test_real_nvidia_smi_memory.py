"""Real GPU telemetry outputs whose figures matter more than a subset: nvidia-smi -q memory sections."""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

REAL = Path(__file__).parent / "fixtures" / "real"


def _parse(name: str, path: str) -> object:
    return get_parser(name)((REAL / path).read_text())


def test_nvidia_smi_q_memory_sections_and_performance_state() -> None:
    gpus = _parse("nvidia-smi-q", "nvidia-smi-q/a10_550_full_listing_memory_utilization_pstate.txt")
    assert isinstance(gpus, list) and len(gpus) == 1
    a10 = gpus[0]
    fb = a10["memory"]["fb"]
    # as printed: 526 + 1 + 22503 is 23030, two MiB over the total (nvidia-smi rounds each figure)
    assert (fb["total_mib"], fb["reserved_mib"], fb["used_mib"], fb["free_mib"]) == (23028, 526, 1, 22503)
    assert a10["memory"]["bar1"]["total_mib"] == 32768 and a10["performance_state"] == "P8"
    assert a10["utilization"]["current"]["gpu_pct"] == 0


def test_nvidia_smi_q_fb_bar1_and_protected_memory_of_a_580_driver() -> None:
    gpus = _parse("nvidia-smi-q", "nvidia-smi-q/rtxpro6000_580_fb_bar1_protected_utilization_trimmed.txt")
    assert isinstance(gpus, list)
    fb = gpus[0]["memory"]["fb"]
    assert (fb["total_mib"], fb["reserved_mib"], fb["used_mib"], fb["free_mib"]) == (97887, 2288, 5952, 89648)
    assert gpus[0]["memory"]["protected"] == {"total_mib": 0, "used_mib": 0, "free_mib": 0}
