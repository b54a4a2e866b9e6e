"""RDMA counter listings and ibdev2netdev as operators paste them (real published outputs in
tests/fixtures/real/counters-snapshot and ibdev2netdev): every counter with the device and port the
text names, nothing else read as a counter, and a form that cannot be read refused with its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.telemetry.counters import parse_snapshot
from benchharness.telemetry.parsers.rdma import parse_ibdev2netdev

REAL = Path(__file__).parent / "fixtures" / "real"


def _read(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_a_shell_loop_with_echo_banners_reads_every_port_counter_of_the_prompts_directory() -> None:
    """``echo "=== $file ==="; cat "$file"`` over a port's ``counters`` (the prompt names the
    directory): 21 counters, all ``ib:mlx5_1/1``; the loop's own lines are not counters."""
    got = parse_snapshot(_read("counters-snapshot/gpud_for_file_find_echo_banners_cx7_counters.txt"))
    assert len(got) == 21
    assert {key.rsplit(":", 1)[0] for key in got} == {"ib:mlx5_1/1"}
    assert got["ib:mlx5_1/1:port_xmit_wait"] == 4294967295  # saturated 32-bit counter kept as printed
    assert got["ib:mlx5_1/1:link_downed"] == 255 and got["ib:mlx5_1/1:port_xmit_discards"] == 65535


def test_an_omnipath_printf_listing_after_cd_is_the_hfi1_ports_hw_counters() -> None:
    got = parse_snapshot(_read("counters-snapshot/netdata_omnipath_hfi1_printf_hw_counters_cut.txt"))
    assert len(got) == 37  # DmaWait .. RcvHdrOvr23; the cut RcvHdrOvr24 has no value
    assert all(key.startswith("ib_hw:hfi1_0/1:") for key in got)
    assert got["ib_hw:hfi1_0/1:RcAcks"] == 19918731 and got["ib_hw:hfi1_0/1:PktDrop"] == 134


def test_an_iwarp_device_whose_counters_all_read_na_is_refused() -> None:
    with pytest.raises(ToolFailure, match="all 8 counters read N/A"):
        parse_snapshot(_read("counters-snapshot/i40iw_grep_s_sys_devices_no_pma_cut.txt"))


def test_file_banners_of_other_shell_loops_read_the_same() -> None:
    """``==> f <==`` (head/tail), ``=== f ===`` and ``--- f ---`` banners, each above its value."""
    base = "cd /sys/class/infiniband/mlx5_0/ports/1/hw_counters\n"
    for head, tail in (("==> ", " <=="), ("=== ", " ==="), ("--- ", " ---"), ("=== ./", " ===")):
        text = base + f"{head}out_of_sequence{tail}\n12\n{head}np_cnp_sent{tail}\n3\n"
        assert parse_snapshot(text) == {"ib_hw:mlx5_0/1:out_of_sequence": 12, "ib_hw:mlx5_0/1:np_cnp_sent": 3}
    # a banner whose next line is not a number is not a counter
    assert parse_snapshot("=== out_of_sequence ===\nn/a\n") == {}


def test_ibdev2netdev_v_splits_the_hca_type_from_the_part_number() -> None:
    rows = parse_ibdev2netdev(_read("ibdev2netdev/verbose_cx7_igx_mt4129_wide_description_padding.txt"))
    assert [r["part"] for r in rows] == ["MT4129 - P3740-0002"] * 2  # the VPD's padding removed
    assert rows[0]["hca_type"] == "MT4129" and rows[0]["part_number"] == "P3740-0002"
    assert rows[0]["description"].endswith("InfiniBand and Ethernet, PCIe5")
    vf = parse_ibdev2netdev(_read("ibdev2netdev/verbose_vfs_padded_down_state_then_plain.txt"))[-1]
    assert vf["hca_type"] == "MT4116" and vf["part_number"] is None  # the script's "NA": no VPD


def test_ibdev2netdev_v_line_wrapped_by_a_terminal_or_mail_reads_whole() -> None:
    text = _read("ibdev2netdev/verbose_bluefield3_supernic_ndr_ib_and_eth_sh_prompt.txt")
    lines = text.splitlines()
    wrapped = [lines[0]]
    for line in lines[1:]:
        cut = line.index("QSFP112,") + len("QSFP112,")
        wrapped += [line[:cut], line[cut:].lstrip()]
    assert parse_ibdev2netdev("\n".join(wrapped)) == parse_ibdev2netdev(text)
    assert [r["netdev"] for r in parse_ibdev2netdev("\n".join(wrapped))] == ["ibs2f0", "ens8f0np0"]


def test_ibdev2netdev_old_style_and_unreadable_lines() -> None:
    """The script's old style (``echo "$1 port $2 <===> $3"``: no link state) is read; a line that
    maps a port to a netdev in another form names its line."""
    assert parse_ibdev2netdev("mlx4_0 port 1 <===> eth2\n") == [
        {"device": "mlx4_0", "port": 1, "netdev": "eth2", "netdev_state": None}]
    with pytest.raises(ToolFailure, match="line 2"):
        parse_ibdev2netdev("mlx5_0 port 1 ==> ib0 (Up)\nmlx5_1 port one ==> ib1 (Down)\n")
