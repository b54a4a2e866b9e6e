"""Figures of real published ethtool -a / -S / -m outputs that matter beyond the fixture subsets
(tests/fixtures/real, SOURCES there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(rel: str) -> str:
    return (REAL / rel).read_text(encoding="utf-8")


def test_pause_block_alone_out_of_a_paste_with_the_port_settings() -> None:
    # the 'ethtool ens6f0' show after it has no pause line the -a reader could take
    got = get_parser("ethtool-a")(_text("ethtool-a/ice_25g_show_pause_then_settings_mail.txt"))
    assert got == {"netdev": "ens6f0", "autoneg": True, "rx": True, "tx": True,
                   "rx_negotiated": True, "tx_negotiated": True}
    settings = get_parser("ethtool")(_text("ethtool-a/ice_25g_show_pause_then_settings_mail.txt"))
    assert settings["speed_mbps"] == 25000 and settings["netdev"] == "ens6f0"


def test_pause_statistics_and_unsupported_driver() -> None:
    got = get_parser("ethtool-a")(_text("ethtool-a/hibmcge_include_statistics_tabs_rx_pause_100_mail.txt"))
    assert got["stats"] == {"tx_pause_frames": 0, "rx_pause_frames": 100}
    none = get_parser("ethtool-a")(_text("ethtool-a/sos_wlan_not_supported_stderr_first.txt"))
    assert none["not_supported"] is True and "rx" not in none
    with pytest.raises(ToolFailure) as info:
        get_parser("ethtool-a")("Pause parameters for eth0:\n")
    assert info.value.kind == "unreadable"


def test_two_outputs_of_one_port_stay_apart() -> None:
    # before: one merged listing holding the 5.15 values (setdefault), the 6.5 figures lost
    got = get_parser("ethtool-S")(_text("ethtool-S/mlx5_core_xdp_two_kernels_banners_perf_top_between_mail.txt"))
    first, second = got["snapshots"]
    assert first["counters"]["rx_discards_phy"] == 58591428329
    assert second["counters"]["rx_discards_phy"] == 441063206498
    assert "rx_pp_alloc_fast" not in first["counters"] and "rx_cache_reuse" not in second["counters"]
    assert got["counters"] is not first["counters"] and got["counters"] == second["counters"]


def test_cmis_lane_status_is_the_last_show() -> None:
    got = get_parser("ethtool-m")(_text("ethtool-m/cmis_16_lanes_grep_los_lol_three_shows_then_empty_port_mail.txt"))
    swp11 = got["netdevs"]["swp11"]
    assert sum(swp11["lane_status"]["rx_loss_of_signal"]) == 16
    assert swp11["lane_status"]["tx_loss_of_lock"] == [True] * 8 + [False] * 8
    assert list(got["netdevs"]) == ["swp11"]  # swp1's grep printed nothing
    with pytest.raises(ToolFailure):
        get_parser("ethtool-m")("Laser wavelength without a colon\n")
