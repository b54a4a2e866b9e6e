"""mlxlink's ``--json`` document read into the fields of its text form, and a path-prefixed
``grep . .../aer_dev_*`` paste read per device and file, from real published outputs
(``tests/fixtures/real/mlxlink/`` and ``aer/``, see SOURCES there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure

REAL = Path(__file__).parent / "fixtures" / "real" / "mlxlink"
JSON_CUT = REAL / "lshca_issue11_ib_edr_json_cut.txt"
TEXT = REAL / "cx6dx_100g_eth_an_fsm_enable_prompt_crlf.txt"
FIELDS = ("state", "physical_state", "speed", "width", "fec", "auto_negotiation", "speed_gbps", "sections")


def test_json_and_text_forms_give_the_same_fields() -> None:
    parse = get_parser("mlxlink")
    from_json, from_text = parse(JSON_CUT.read_text()), parse(TEXT.read_text())
    for field in FIELDS:
        assert field in from_json and field in from_text, field
    assert (from_json["state"], from_json["physical_state"], from_json["speed_gbps"]) == ("Active", "LinkUp", 100)
    assert (from_text["state"], from_text["physical_state"], from_text["speed_gbps"]) == \
        ("Active", "ETH_AN_FSM_ENABLE", 100)
    assert from_json["format"] == "json" and "format" not in from_text


def test_a_json_document_cut_at_any_line_is_read_or_refused_never_empty() -> None:
    """Every prefix of the real paste: read (flagged truncated) or an error naming a line."""
    parse = get_parser("mlxlink")
    lines = JSON_CUT.read_text().splitlines()
    read = 0
    for end in range(2, len(lines) + 1):
        text = "\n".join(lines[:end]) + "\n"
        try:
            data = parse(text)
        except ToolFailure as err:
            assert err.kind == "unreadable" and "line " in err.message, err.message
            continue
        read += 1
        assert data["truncated"] is True and data["sections"], text
    assert read >= len(lines) // 2


def test_a_json_document_broken_inside_names_the_line() -> None:
    lines = JSON_CUT.read_text().splitlines()
    broken = [line.replace('"FEC" : "No FEC",', '"FEC" "No FEC",') for line in lines]
    with pytest.raises(ToolFailure) as info:
        get_parser("mlxlink")("\n".join(broken) + "\n")
    assert info.value.kind == "unreadable" and '"FEC" "No FEC"' in info.value.message
    assert "line 7" in info.value.message


def test_prose_before_the_json_is_refused() -> None:
    text = "the port looks fine\n" + JSON_CUT.read_text()
    with pytest.raises(ToolFailure, match="line 1"):
        get_parser("mlxlink")(text)


AER_PATHS = Path(__file__).parent / "fixtures" / "real" / "aer" / "drm_card1_grep_paths_correctable_fatal_prompt_cut.txt"


def test_aer_grep_paste_is_read_per_device_and_file() -> None:
    data = get_parser("aer")(AER_PATHS.read_text())
    (dev,) = data["devices"]
    assert set(dev["files"]) == {"correctable", "fatal"}
    assert "TOTAL_ERR_COR" not in dev["files"]["correctable"]["counters"]
    assert dev["files"]["fatal"]["total_from"] == "sum"  # the paste stops before TOTAL_ERR_FATAL
    assert not any("/" in name for rec in dev["files"].values() for name in rec["counters"])


def test_aer_grep_line_that_is_not_name_value_names_the_line() -> None:
    lines = AER_PATHS.read_text().splitlines()
    lines[3] = lines[3].replace("BadTLP 0", "BadTLP")
    with pytest.raises(ToolFailure) as info:
        get_parser("aer")("\n".join(lines) + "\n")
    assert info.value.kind == "unreadable" and "aer_dev_correctable:BadTLP" in info.value.message
