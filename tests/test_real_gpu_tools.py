"""GPU tools and NCCL logs against real published outputs (tests/fixtures/real, SOURCES there):
what the fixtures' expectations cannot say — refusals that name their line, scopes that must be
absent, and NCCL lines behind a timestamp prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure
from benchharness.tools.nccl_debug import hcas_used

REAL = Path(__file__).parent / "fixtures" / "real"


def test_h100_module_power_all_na_is_absent_and_clocks_are_read() -> None:
    gpus = get_parser("nvidia-smi-q")((REAL / "nvidia-smi-q" / "hgx_h100_sxm_565_8gpu_full_listing.txt").read_text())
    assert len(gpus) == 8 and all("module" not in g["power"] for g in gpus)
    assert [g["clocks"]["max"]["sm_mhz"] for g in gpus] == [1980] * 8


@pytest.mark.parametrize(("parser", "fixture", "row", "cut"), [
    # an amd-smi monitor row short of a cell
    ("amd-smi", "amd-smi/rocm61_monitor_ptumv_8gpu_prompt.txt", "  3  172 W     33 °C", "  3  172 W"),
    # a rocm-smi concise row cut before its columns
    ("rocm-smi", "rocm-smi/mi250x_8gcd_concise_node_out_prefix_rocm5.txt",
     "2    46.0c  97.0W   800Mhz  1600Mhz  0%   auto  560.0W    0%   0%", "2    46.0c  97.0W"),
])
def test_a_table_row_cut_short_names_its_line(parser: str, fixture: str, row: str, cut: str) -> None:
    text = (REAL / fixture).read_text()
    assert row in text
    with pytest.raises(ToolFailure) as info:
        get_parser(parser)(text.replace(row, cut, 1))
    assert info.value.kind == "unreadable" and "line 6" in info.value.message


def test_amd_smi_text_skips_cpu_blocks() -> None:
    gpus = get_parser("amd-smi")((REAL / "amd-smi" / "mi300a_static_text_4gpu_4cpu_blocks_prompt.txt").read_text())
    assert [g["index"] for g in gpus] == [0, 1, 2, 3]
    assert [g["bus_id"] for g in gpus] == [f"000{i}:01:00.0" for i in range(4)]


def test_rocm_smi_concise_n_a_partition_rows_have_no_readings() -> None:
    rows = get_parser("rocm-smi")((REAL / "rocm-smi" / "dpx_partitions_node_ids_na_rows_cut.txt").read_text())["concise"]
    odd = [r for r in rows if r["gpu"] % 2]
    assert odd and not any({"temperature_c", "power_w", "sclk_mhz", "power_cap_w", "perf"} & set(r) for r in odd)


def test_nccl_hcas_per_rank_behind_a_timestamp_prefix() -> None:
    """NCCL 2.26+ can print ``[date time] `` before ``host:pid:tid`` (NCCL_DEBUG_TIMESTAMP_FORMAT)."""
    lines = (REAL / "nccl-debug" / "roce_2.19.3_two_dgx_h100_nccl_tests_rank_line.log").read_text().splitlines()
    stamped = "\n".join(f"[2025-08-22 17:44:36] {ln}" if " NCCL INFO " in ln else ln for ln in lines)
    opened, _ = hcas_used(stamped)
    assert opened == ["mlx5_10:1", "mlx5_11:1"]
    data = get_parser("nccl-debug")(stamped)
    assert data["network"] == "IB" and data["nccl_version"] == "2.19.3+cuda12.3"
