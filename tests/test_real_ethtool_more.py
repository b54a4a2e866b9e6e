"""Figures of the ethtool / mlnx_qos / dcb parsers that matter beyond the subset checks of
``test_real_outputs.py``: the whole link-mode list of a port that claims every mode up to 800G,
``ethtool --json`` strings a mail wrapped, and mlnx_qos sessions cut where a paste stops."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import describe, get_parser

REAL = Path(__file__).parent / "fixtures" / "real"
SCOPE = ("ethtool", "ethtool-S", "ethtool-i", "ethtool-k", "ethtool-l", "ethtool-g", "ethtool-c", "ethtool-m",
         "ethtool-x", "ethtool-rx-flow-hash", "dcb-pfc", "mlnx_qos")


def _read(path: str) -> str:
    return (REAL / path).read_text(encoding="utf-8")


def test_every_link_mode_to_800g_is_kept_in_order() -> None:
    data = get_parser("ethtool")(_read("ethtool/phylink_all_modes_to_800g_speed_unknown_mail.txt"))
    modes = data["supported_link_modes"]
    assert len(modes) == 89
    assert modes[:3] == ["10baseT/Half", "10baseT/Full", "100baseT/Half"]
    assert "10000baseR_FEC" in modes  # printed among the link modes by ethtool itself
    assert modes.index("400000baseCR8/Full") < modes.index("800000baseVR8/Full")
    fx = modes.index("100baseFX/Half")
    assert modes[fx:fx + 2] == ["100baseFX/Half", "100baseFX/Full"]
    assert modes[-1] == "10baseT1S_P2MP/Half"


def test_json_strings_wrapped_by_a_mail_are_joined() -> None:
    wrapped = get_parser("ethtool")(_read("ethtool/json_6_10_quoted_twice_wrapped_strings_mail.txt"))
    plain = get_parser("ethtool")(_read("ethtool/json_6_10_enp2s0_sudo_password_line_mail.txt"))
    assert wrapped["supported_link_modes"][-1] == "1000baseT/Full"
    assert wrapped == plain


def test_mlnx_qos_session_reads_its_last_show() -> None:
    data = get_parser("mlnx_qos")(_read("qos/mlnx_qos-set-x-trust-then-pfc-prio3-cable-len.txt"))
    assert data == {"trust": "dscp", "dcbx": "OS controlled", "pfc_enabled": [3]}


def test_mlnx_qos_cut_after_its_pfc_title_names_the_line() -> None:
    text = _read("qos/mlnx_qos-set-x-trust-then-pfc-prio3-cable-len.txt")
    cut = text[:text.index("PFC configuration:") + len("PFC configuration:")] + "\n"
    with pytest.raises(ValueError, match=rf"^line {cut.count(chr(10))}: .*PFC configuration"):
        get_parser("mlnx_qos")(cut)


def test_each_parser_in_scope_says_what_it_reads() -> None:
    reads = describe()
    for name in SCOPE:
        doc = get_parser(name).__doc__ or ""
        assert reads[name] and reads[name] != doc.strip().splitlines()[0], name
