"""Real GPU telemetry outputs whose figures matter more than a subset: R375 samples,
amd-smi sections beyond power and temperature, amd-smi topology --json, rocm-smi Product Info."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure

REAL = Path(__file__).parent / "fixtures" / "real"


def _parse(name: str, path: str) -> object:
    return get_parser(name)((REAL / path).read_text())


def test_a_wrapped_samples_duration_is_no_duration() -> None:
    gpus = _parse("nvidia-smi-q", "nvidia-smi-q/r375_d_utilization_prompt_samples_wrapped_duration_cut.txt")
    assert isinstance(gpus, list) and len(gpus) == 1
    samples = gpus[0]["utilization"]["gpu_samples"]
    # "Duration : 18446744073709.22 sec" is 2**64 us less a little: a negative window, not 584942 years
    assert "duration_s" not in samples
    assert (samples["number_of_samples"], samples["max_pct"], samples["min_pct"], samples["avg_pct"]) == (99, 45, 31, 0)


def test_tail_excerpts_before_a_listing_do_not_become_a_gpu() -> None:
    gpus = _parse("nvidia-smi-q", "nvidia-smi-q/windows_566_laptop_doc_tail_excerpts_then_full_listing.txt")
    assert isinstance(gpus, list)
    # the "| tail -n 4" lines (Max / Min / Avg without their section) belong to no GPU and no section
    assert [g["gpu"] for g in gpus] == ["00000000:01:00.0"]
    assert "protected" not in gpus[0]["memory"]  # printed N/A: no reading


def test_every_h100_reports_the_power_brake_slowdown() -> None:
    gpus = _parse("nvidia-smi-q", "nvidia-smi-q/hgx_h100_535_161_hw_slowdown_power_brake_8gpu_full_listing.txt")
    assert isinstance(gpus, list) and len(gpus) == 8
    for gpu in gpus:
        assert gpu["active"] == ["HW Slowdown", "HW Power Brake Slowdown"], gpu["gpu"]
        assert gpu["reasons"]["Idle"] is False
        assert "module" not in gpu["power"] or "draw_w" not in gpu["power"]["module"]  # all N/A


def test_amd_smi_usage_partition_pcie_and_ecc_sections() -> None:
    usage = _parse("amd-smi", "amd-smi/rocm63_metric_usage_2gpu_xcp_lists_prompt.txt")
    assert usage == [{"index": 0, "utilization_pct": 0.0, "memory_utilization_pct": 0.0},
                     {"index": 1, "utilization_pct": 0.0, "memory_utilization_pct": 0.0}]
    part = _parse("amd-smi", "amd-smi/rocm63_static_partition_cpx_nps4_prompt.txt")
    assert part == [{"index": 0, "compute_partition": "CPX", "memory_partition": "NPS4", "partition_id": 0}]
    ecc = _parse("amd-smi", "amd-smi/rocm611_metric_ecc_ecc_blocks_elided_prompt.txt")
    assert isinstance(ecc, list) and ecc[0]["ecc_uncorrectable_count"] == 0
    assert isinstance(ecc[0]["ecc_uncorrectable_count"], int)


def test_amd_smi_text_with_an_output_truncated_note_is_text_not_json() -> None:
    gpus = _parse("amd-smi", "amd-smi/mi300x_metric_text_output_truncated_note.txt")
    assert isinstance(gpus, list) and len(gpus) == 1
    assert (gpus[0]["power_w"], gpus[0]["utilization_pct"], gpus[0]["clock_gfx_mhz"]) == (234.0, 100.0, 2102.0)


def test_amd_smi_refuses_a_jq_fragment_and_blocks_it_cannot_read() -> None:
    with pytest.raises(ToolFailure) as info:
        _parse("amd-smi", "amd-smi/static_json_jq_vram_fragment_refused.txt")
    assert info.value.kind == "unreadable" and "line 2" in str(info.value)
    ecc_blocks_only = "$ amd-smi metric --ecc-block\nGPU: 0\n    ECC_BLOCKS:\n        UMC:\n            CORRECTABLE_COUNT: 0\n"
    with pytest.raises(ToolFailure) as info:
        get_parser("amd-smi")(ecc_blocks_only)
    assert "GPU: 0" in str(info.value)


def test_amd_smi_topology_json_old_layout() -> None:
    topo = _parse("amd-smi-topology", "amd-smi-topology/rocm61_json_gpu_n_maps_2gpu_pcie_prompt.txt")
    assert isinstance(topo, dict) and topo["gpus"] == ["gpu_0", "gpu_1"]
    assert topo["tables"]["WEIGHT"]["gpu_1"] == {"gpu_0": "40", "gpu_1": "0"}
    assert topo["tables"]["LINK TYPE"]["gpu_0"]["gpu_1"] == "PCIE"


def test_amd_smi_topology_json_links_layout_keys_by_bdf() -> None:
    text = ('[\n    {\n        "gpu": 0,\n        "bdf": "0000:0b:00.0",\n        "links": [\n            {\n'
            '                "gpu": 0,\n                "bdf": "0000:0b:00.0",\n                "weight": 0,\n'
            '                "link_status": "ENABLED",\n                "link_type": "SELF",\n'
            '                "num_hops": 0,\n                "bandwidth": "N/A"\n            }\n        ]\n    }\n]\n')
    topo = get_parser("amd-smi-topology")(text)
    assert topo["gpus"] == ["0000:0b:00.0"]
    assert topo["tables"]["HOPS"] == {"0000:0b:00.0": {"0000:0b:00.0": "0"}}
    assert topo["tables"]["ACCESS"]["0000:0b:00.0"]["0000:0b:00.0"] == "ENABLED"


def test_rocm_smi_product_info_per_gpu() -> None:
    got = _parse("rocm-smi", "rocm-smi/showproductname_6x_mi210_markdown_damage.txt")
    assert isinstance(got, dict)
    products = got["products"]
    assert [p["gpu"] for p in products] == [0, 1, 2, 3, 4, 5]
    assert all(p["card_model"] == "0x0c34" for p in products)
    mi300x = _parse("rocm-smi", "rocm-smi/showproductname_mi300x_rocm6_tabs_indented.txt")
    assert isinstance(mi300x, dict) and mi300x["products"][0]["gfx_version"] == "gfx942"
