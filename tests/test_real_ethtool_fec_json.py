"""Figures of the ethtool parsers that the subset checks of ``test_real_outputs.py`` do not pin:
``--show-fec`` statistics read the same from the text and the JSON of one published example,
``ethtool --json -S`` gives the names the text form prints, and a session that changes the speed
reads as its last show."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser

REAL = Path(__file__).parent / "fixtures" / "real"


def _read(path: str) -> str:
    return (REAL / path).read_text(encoding="utf-8")


def test_show_fec_text_and_json_give_the_same_figures() -> None:
    text = get_parser("ethtool")(_read("ethtool/show_fec_6_18_histogram_per_lane_mail.txt"))
    js = get_parser("ethtool")(_read("ethtool/show_fec_json_6_18_histogram_mail.txt"))
    for key in ("netdev", "fec_configured", "fec_active", "fec_stats", "fec_stats_lanes"):
        assert text[key] == js[key], key
    assert text["fec_stats"]["uncorrectable_blocks"] == 4
    assert sum(text["fec_stats_lanes"]["fec_symbol_err_0"]) == text["fec_stats"]["fec_symbol_err_0"]


@pytest.mark.parametrize("name", ["show_fec_ice_e810_auto_rs_baser_stats_mail.txt",
                                  "show_fec_fbnic_rs_stats_bracket_prompt_mail.txt"])
def test_supported_configured_fec_line_is_read(name: str) -> None:
    data = get_parser("ethtool")(_read(f"ethtool/{name}"))
    assert data["fec_configured"] and data["fec_active"] == "RS"
    assert data["fec_stats"] == {"corrected_blocks": 0, "uncorrectable_blocks": 0}


def test_json_standard_stats_use_the_text_names() -> None:
    text = get_parser("ethtool-S")(_read("ethtool-S/groups_eth_phy_mac_rmon_stats_for_mail.txt"))["counters"]
    js = get_parser("ethtool-S")(_read("ethtool-S/json_groups_eth_phy_mac_rmon_jq_mail.txt"))["counters"]
    assert set(js) == set(text)
    # the two examples were captured at different moments: only FrameTooLongErrors and Jabbers differ
    assert {k for k in js if js[k] != text[k]} == {"eth-mac-FrameTooLongErrors", "rmon-etherStatsJabbers"}


def test_speed_change_session_reads_its_last_show() -> None:
    data = get_parser("ethtool")(_read("ethtool/fbnic_100g_partner_modes_two_shows_speed_50g_prompt_mail.txt"))
    assert data["speed_mbps"] == 50000
    assert data["advertised_link_modes"] == []  # "Not reported" in the second show
    assert data["partner_link_modes"] == ["100000baseCR2/Full"]
