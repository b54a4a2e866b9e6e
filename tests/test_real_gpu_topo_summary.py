"""Real GPU telemetry outputs whose figures matter more than a subset: nvidia-smi
topo -m as writers publish it, the bare amd-smi summary table, dcgmi dmon and nvidia-smi -q."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(path: str) -> str:
    return (REAL / path).read_text()


def test_topo_a_rule_under_the_header_is_no_row_and_short_headings_still_give_numa() -> None:
    topo = get_parser("nvidia-smi-topo")(
        _text("nvidia-smi-topo/8gpu_9nic_h200_writer_rule_short_numa_headings_bond_legend.txt"))
    assert isinstance(topo, dict)
    assert list(topo["matrix"]) == [f"GPU{i}" for i in range(8)] + [f"NIC{i}" for i in range(9)]
    assert {g: a["numa"] for g, a in topo["affinity"].items()} == {f"GPU{i}": i // 4 for i in range(8)}
    assert topo["nics"]["NIC8"] == "mlx5_bond_0"


def test_topo_header_without_its_leading_blanks_is_still_the_header() -> None:
    text = _text("nvidia-smi-topo/3gpu_2nic_prompt_phb_pix_nic_pair.txt")
    flush = "\n".join(line.lstrip() if "GPU0    GPU1" in line else line for line in text.splitlines())
    topo = get_parser("nvidia-smi-topo")(flush)
    assert isinstance(topo, dict)
    assert topo["devices"] == ["GPU0", "GPU1", "GPU2", "NIC0", "NIC1"]
    assert topo["matrix"]["NIC1"]["NIC0"] == "PIX"


def test_topo_a_row_short_of_its_cells_inside_the_matrix_names_its_line() -> None:
    text = _text("nvidia-smi-topo/3gpu_2nic_prompt_phb_pix_nic_pair.txt")
    damaged = text.replace("GPU2    NODE    NODE     X      PHB     PHB     64-71   1               N/A",
                           "GPU2    NODE    NODE     X")
    with pytest.raises(ToolFailure) as failure:
        get_parser("nvidia-smi-topo")(damaged)
    assert "GPU2    NODE    NODE     X" in str(failure.value)


def test_amd_smi_summary_table_gives_each_gpu_its_figures() -> None:
    gpus = get_parser("amd-smi")(_text("amd-smi/rocm72_default_table_4x_mi300a_doc_prompt.txt"))
    assert isinstance(gpus, list)
    assert [(g["index"], g["bus_id"], g["power_w"], g["temperature_c"]) for g in gpus] == [
        (0, "0000:01:00.0", 110.0, 47.0), (1, "0001:01:00.0", 106.0, 46.0),
        (2, "0002:01:00.0", 109.0, 43.0), (3, "0003:01:00.0", 107.0, 44.0)]
    assert all((g["compute_partition"], g["memory_partition"], g["vram_total_mb"]) == ("SPX", "NPS1", 96432.0)
               for g in gpus)


def test_amd_smi_summary_table_process_box_is_no_gpu_and_na_partition_is_absent() -> None:
    gpus = get_parser("amd-smi")(_text("amd-smi/rocm702_default_table_rx9070xt_process_row_fenced.txt"))
    assert isinstance(gpus, list) and len(gpus) == 1
    gpu = gpus[0]
    assert (gpu["model"], gpu["power_w"], gpu["power_limit_w"], gpu["fan_speed_pct"]) == \
        ("AMD Radeon RX 9070 XT", 189.0, 266.0, 29.8)
    assert not {"oam_id", "compute_partition", "memory_partition"} & set(gpu)


def test_amd_smi_summary_row_of_another_layout_names_its_line() -> None:
    text = _text("amd-smi/rocm702_default_table_rx9070xt_process_row_fenced.txt").replace("62 °C", "hot")
    with pytest.raises(ToolFailure) as failure:
        get_parser("amd-smi")(text)
    assert "0000:2d:00.0" in str(failure.value)
