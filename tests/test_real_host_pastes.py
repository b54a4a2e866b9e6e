"""Host-fact parsers on published outputs where a figure matters more than a subset: lspci names
a mail wrapped, the AER status bits of ``lspci -vv``, an interrupts row the listing cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.telemetry.parsers.interrupts import parse_interrupts
from benchharness.telemetry.parsers.lspci import parse_lspci

REAL = Path(__file__).parent / "fixtures" / "real"


def test_a_device_name_a_mail_wrapped_is_read_whole() -> None:
    (dev,) = parse_lspci((REAL / "lspci" / "quoted_mail_bcm57416_bnxt_en_vvv_devsta_correrr_unsupreq.txt").read_text())
    assert dev["name"] == "Broadcom Inc. and subsidiaries BCM57416 NetXtreme-E Dual-Media 10G RDMA Ethernet Controller (rev 01)"
    # the tail joins only when the device's fields go on after it: prose after a one-line listing stays out
    (one,) = parse_lspci("01:00.0 Ethernet controller: Intel Corporation Ethernet Controller E810-XXV (rev 02)\n"
                         "That is all lspci shows.\nAny idea?\n")
    assert one["name"] == "Intel Corporation Ethernet Controller E810-XXV (rev 02)"
    (nn,) = parse_lspci("01:00.0 Ethernet controller [0200]: Intel Corporation Ethernet Controller E810-XXV for SFP\n"
                        "[8086:159b] (rev 02)\n\tSubsystem: Intel Corporation Ethernet 25G 2P E810-XXV Adapter [8086:0003]\n")
    assert (nn["name"], nn["vendor_id"], nn["device_id"]) == (
        "Intel Corporation Ethernet Controller E810-XXV for SFP (rev 02)", "8086", "159b")


def test_lspci_vv_aer_status_bits_of_a_published_e810() -> None:
    (dev,) = parse_lspci((REAL / "lspci" / "e810_xxv_vv_prompt_vfio_aer_acs_gen4_x8_ok.txt").read_text())
    assert dev["aer_uncorrectable"] == [] and dev["aer_correctable"] == ["AdvNonFatalErr"]
    assert dev["dev_sta_errors"] == [] and dev["downgraded"] is False
    # no AER capability printed (-v, a grep): no AER fields, not an empty "no errors"
    (bare,) = parse_lspci("01:00.0 Ethernet controller: X\n\tLnkSta: Speed 16GT/s (ok), Width x8 (ok)\n")
    assert "aer_uncorrectable" not in bare and "aer_correctable" not in bare


def test_an_interrupts_row_the_listing_cut_is_marked_cut() -> None:
    got = parse_interrupts((REAL / "interrupts" / "ice_e810_72cpu_rows_run_together_cut.txt").read_text())
    *whole, last = got["irqs"]
    assert last == {"irq": 295, "counts": [0, 0], "total": 0, "chip": None, "hwirq": None, "name": None, "cut": True}
    assert all("cut" not in row for row in whole) and len(whole[0]["counts"]) == 72
    # with a header: short at the end is a cut, short in the middle names its line
    header = "           CPU0       CPU1       CPU2\n"
    cut = parse_interrupts(header + "  24:   5   6   7  PCI-MSI 1-edge  mlx5_async\n  25:   1   2")
    assert cut["irqs"][-1]["cut"] is True and cut["irqs"][-1]["counts"] == [1, 2]
    with pytest.raises(ToolFailure, match="line 3: 2 counts under 3 CPU columns"):
        parse_interrupts(header + "  24:   5   6   7  PCI-MSI 1-edge  mlx5_async\n  25:   1   2\n"
                                  "  26:   1   2   3  PCI-MSI 2-edge  mlx5_comp0\n")


def test_netstat_lines_with_a_readers_note_after_the_value_keep_their_mib_names() -> None:
    """Tutorials publish netstat -s with a note after each value (``4 segments retransmitted //...``):
    the phrase is read without it, so RetransSegs is still RetransSegs."""
    from benchharness.telemetry.parsers.netstat import parse_netstat

    got = parse_netstat("Ip:\n    Forwarding: 1          //开启转发\n    31 total packets received    //总收包数\n"
                        "Tcp:\n    21 segments sent out      //已发送报文数\n    4 segments retransmitted    //重传报文数\n")
    assert got == {"ip:-:Forwarding": 1, "ip:-:InReceives": 31, "tcp:-:OutSegs": 21, "tcp:-:RetransSegs": 4}
