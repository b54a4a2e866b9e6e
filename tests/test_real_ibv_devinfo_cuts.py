"""RDMA readers on more real published outputs: an ``ibv_devinfo | head`` that stops at a port line,
an old soft-RoCE listing without ``link_layer``, the EFA counters of ``rdma -p statistic show``.

The texts are the fixtures under tests/fixtures/real (SOURCES there says where each came from).
"""

from __future__ import annotations

from pathlib import Path

from benchharness.cli.parsers import get_parser

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(folder: str, name: str) -> str:
    return (REAL / folder / name).read_text()


def test_a_head_cut_listing_is_flagged_cut_not_read_as_a_bare_port() -> None:
    (dev,) = get_parser("ibv_devinfo")(_text("ibv_devinfo", "efa_head_cut_at_port_line_fenced.txt"))
    assert dev["device"] == "efa_0" and dev["cut"] is True
    (port,) = dev["ports"]
    assert port == {"port": 1, "gids": [], "cut": True}  # no state, MTU or link layer made up


def test_an_old_listing_without_link_layer_is_whole() -> None:
    (dev,) = get_parser("ibv_devinfo")(_text("ibv_devinfo", "rxe_librxe_no_link_layer_root_prompt.txt"))
    assert "cut" not in dev and "cut" not in dev["ports"][0]
    assert dev["ports"][0]["port_lmc"] == "0x00" and dev["ports"][0]["active_mtu"] == 1024


def test_a_quote_that_stops_inside_a_port_is_cut_there() -> None:
    devs = get_parser("ibv_devinfo")(_text("ibv_devinfo", "cx7_roce_quote_starts_at_sys_image_guid_cut_in_port.txt"))
    assert devs[-1]["ports"][-1]["cut"] is True
    assert "cut" not in devs[0]["ports"][0]  # the whole port before it is not


def test_two_listings_in_one_paste_stay_apart() -> None:
    head = _text("ibv_devinfo", "efa_head_cut_at_port_line_fenced.txt")
    rxe = _text("ibv_devinfo", "rxe_librxe_no_link_layer_root_prompt.txt")
    efa, soft = get_parser("ibv_devinfo")(head + rxe)
    assert efa["device"] == "efa_0" and efa["ports"] == [{"port": 1, "gids": [], "cut": True}]
    assert soft["device"] == "rxe0" and "cut" not in soft and soft["ports"][0]["state"] == "PORT_ACTIVE"


def test_efa_counters_every_one_read() -> None:
    counters = get_parser("rdma-statistic")(_text("rdma-statistic", "efa_p_before_statistic_nohighlight_fence.txt"))
    assert len(counters) == 21 and set(counters.values()) == {0}
    assert all(k.startswith("ib_hw:rdmap0s31/1:") for k in counters)
