"""RDMA host tools against more published outputs (see tests/fixtures/real/SOURCES): the listing
forms of ``ibstat`` and quotes that start inside an ``ibv_devinfo`` block."""

from __future__ import annotations

from pathlib import Path

from benchharness.telemetry.parsers.rdma import (
    parse_ibstat,
    parse_ibv_devinfo,
    parse_rdma,
    parse_rdma_statistic,
)

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(rel: str) -> str:
    return (REAL / rel).read_text(encoding="utf-8")


def test_ibstat_l_names_each_ca_and_p_each_port_guid() -> None:
    assert [ca["device"] for ca in parse_ibstat(_text("ibstat/list_l_two_cas_hash_prompt.txt"))] == ["mlx4_0", "mlx4_1"]
    guids = parse_ibstat(_text("ibstat/port_list_p_four_guids_hash_prompt.txt"))
    assert [g["port_guid"] for g in guids] == ["0xec0d9a03000c8981", "0xec0d9a03000c8982",
                                               "0xf45214030033b851", "0xf45214030033b852"]


def test_ibstat_listings_without_their_command_line() -> None:
    """The published listings with the ``#ibstat -l`` / ``#ibstat -p`` line cut off read the same; a
    name among other lines is no listing."""
    for rel in ("ibstat/list_l_two_cas_hash_prompt.txt", "ibstat/port_list_p_four_guids_hash_prompt.txt"):
        text = _text(rel)
        bare = "\n".join(line for line in text.splitlines() if not line.startswith("#ibstat"))
        assert parse_ibstat(bare) == parse_ibstat(text)
    assert parse_ibstat("mlx4_0\nLog ibstat:\n") == []


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


def test_rdma_statistic_qp_counters_are_kept_apart_from_the_port_totals() -> None:
    """``rdma stat qp show`` (a counter bound to QP 178) beside ``rdma stat show`` of another port:
    the QP counter's figures are not the port's ``hw_counters``; its ``LQPN: <178>`` line was refused."""
    text = _text("rdma-statistic/qp_show_lqpn_then_show_and_p_mail_quoted.txt")
    got = parse_rdma_statistic(text)
    assert len(got) == 39
    assert sum(k.startswith("ib_hw_qp:mlx5_2/1/5:") for k in got) == 18
    assert not any(k.startswith("ib_hw:mlx5_2/") for k in got)
    qp = parse_rdma(text)["qp_counters"][0]
    assert (qp["cntn"], qp["pid"], qp["comm"], qp["lqpn"]) == (5, 31609, "client.1", [178])
    assert "cntn" not in qp["counters"] and "pid" not in qp["counters"]


def test_rdma_statistic_mode_records_hold_no_figures() -> None:
    text = _text("rdma-statistic/mode_supported_optional_counters_then_show.txt")
    got = parse_rdma_statistic(text)
    assert len(got) == 30 and got["ib_hw:rocep8s0f0/1:cc_rx_cnp_pkts"] == 0
    assert parse_rdma_statistic("2/1: mlx5_2/1: qp auto type on\n3/1: mlx5_3/1: qp auto off\n") == {}
    assert parse_rdma("2/1: mlx5_2/1: qp auto type on\n")["ports"][0]["mode"] == "qp auto type on"

