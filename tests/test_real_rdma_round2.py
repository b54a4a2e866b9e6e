"""RDMA host tools against more published outputs (see tests/fixtures/real/SOURCES): the listing
forms of ``ibstat`` and quotes that start inside an ``ibv_devinfo`` block."""

from __future__ import annotations

from pathlib import Path

from benchharness.telemetry.parsers.rdma import parse_ibstat, parse_ibv_devinfo

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(rel: str) -> str:
    return (REAL / rel).read_text(encoding="utf-8")


def test_ibstat_l_names_each_ca_and_p_each_port_guid() -> None:
    assert [ca["device"] for ca in parse_ibstat(_text("ibstat/list_l_two_cas_hash_prompt.txt"))] == ["mlx4_0", "mlx4_1"]
    guids = parse_ibstat(_text("ibstat/port_list_p_four_guids_hash_prompt.txt"))
    assert [g["port_guid"] for g in guids] == ["0xec0d9a03000c8981", "0xec0d9a03000c8982",
                                               "0xf45214030033b851", "0xf45214030033b852"]


def test_ibstat_p_of_a_named_ca_and_listings_without_their_command() -> None:
    assert parse_ibstat("$ ibstat -p mlx4_1\n0xf45214030033b851\n0xf45214030033b852\n")[1] == \
        {"device": "mlx4_1", "port_guid": "0xf45214030033b852"}
    assert parse_ibstat("mlx5_0\nmlx5_1\n") == [{"device": "mlx5_0", "ports": []}, {"device": "mlx5_1", "ports": []}]
    assert parse_ibstat("0x1070fd03008eb580\n")[0]["port_guid"] == "0x1070fd03008eb580"
    assert parse_ibstat("mlx5_0\nsomething else: here\n") == []  # not a listing: nothing read


def test_ibstat_l_then_a_full_ibstat_keeps_both() -> None:
    listing = _text("ibstat/list_l_two_cas_hash_prompt.txt")
    full = _text("ibstat/cx7_roce_dollar_prompt_cut_in_third_ca.txt")
    got = parse_ibstat(listing + full)
    assert [ca["device"] for ca in got] == ["mlx4_0", "mlx4_1", "mlx5_0", "mlx5_1", "mlx5_10"]
    assert got[2]["ports"][0]["rate_gbps"] == 200.0


def test_ibv_devinfo_quote_from_inside_a_port_keeps_the_port_lines_before_the_first_hca_id() -> None:
    first = parse_ibv_devinfo(_text("ibv_devinfo/cx7_roce_quote_starts_at_max_mtu_bash_fence.txt"))[0]
    assert first["device"] is None and first["ports"][0]["max_mtu"] == 4096  # the quote's first line
    head = parse_ibv_devinfo(_text("ibv_devinfo/cx7_roce_quote_starts_at_sys_image_guid_cut_in_port.txt"))[0]
    assert head["device"] is None and head["sys_image_guid"] == "a088:c203:007d:ab62"
    assert head["ports"][0]["port"] == 1
