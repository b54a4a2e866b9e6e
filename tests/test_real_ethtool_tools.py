"""ethtool, netstat/nstat, numactl and QoS parsers on real published outputs: the properties the
figure files under tests/fixtures/real/ cannot state (what must be absent, what must be refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.telemetry.counters import delta
from benchharness.telemetry.parsers.ethtool import parse_settings, parse_stats

REAL = Path(__file__).parent / "fixtures" / "real"


@pytest.mark.parametrize("name", [
    "bnxt_en_6_6_queue_index_prefixes_pfc_cos", "gve_patch_bracket_queue_suffix",
    "ionic_kernel_doc_driver_queue_firmware_blocks", "virtio_net_hw_totals_truncated_duplicate_names",
    "bnx2x_queue_index_prefixes",
])
def test_per_queue_counters_stay_out_of_the_port_highlights(name: str) -> None:
    data = json.loads(json.dumps(parse_stats((REAL / "ethtool-S" / f"{name}.txt").read_text())))
    for group in ("discards", "errors", "out_of_buffer"):
        for counter in data["highlights"][group]:
            assert counter == counter.strip() and "[" not in counter, (name, counter)
            assert not counter.startswith(("rx_0_", "tx_0_", "queue_", "rx_queue", "tx_queue")), (name, counter)


def test_bnxt_queue_discards_are_not_summed_under_a_blank_name() -> None:
    hl = parse_stats((REAL / "ethtool-S" / "bnxt_en_6_6_queue_index_prefixes_pfc_cos.txt").read_text())["highlights"]
    assert " rx_discards" not in hl["discards"] and hl["discards"]["rx_total_ring_discards"] == 655430134


@pytest.mark.parametrize("name", ["bnxt_en_6_6_queue_index_prefixes_pfc_cos", "bnx2x_queue_index_prefixes"])
def test_a_runs_counter_delta_keeps_queue_counters_out_as_the_parser_does(name: str) -> None:
    """The sampler keys every counter ``ethtool:NETDEV:NAME``; a queue's ``[3]: rx_discards`` stays
    the queue's in a run's delta too, not the port's ``rx_discards`` (health verdicts read these)."""
    counters = parse_stats((REAL / "ethtool-S" / f"{name}.txt").read_text())["counters"]
    after = {f"ethtool:eth0:{k}": v for k, v in counters.items()}
    before = dict.fromkeys(after, 0)
    from_run = delta(before, after)["highlights"]
    assert from_run["discards"] == parse_stats((REAL / "ethtool-S" / f"{name}.txt").read_text())["highlights"]["discards"]
    # the port's own rx_discards (bnx2x prints one) is its value alone, the queues' not added to it
    assert from_run["discards"].get("rx_discards") == counters.get("rx_discards")
    assert " rx_discards" not in from_run["discards"]
    assert any(k.startswith("[") and k.endswith("rx_discards") for k in counters)  # the queues have theirs


def test_a_name_printed_twice_keeps_its_first_value() -> None:
    text = "NIC statistics:\n     tx_hw_packets_allowance_exceede: 3\n     tx_hw_packets_allowance_exceede: 0\n"
    assert parse_stats(text)["counters"] == {"tx_hw_packets_allowance_exceede": 3}


@pytest.mark.parametrize(("parser", "text"), [
    (parse_stats, "no stats available\n"),
    (parse_settings, "Cannot get device settings: No such device\n"),
])
def test_text_without_any_line_of_the_tool_names_its_line(parser, text: str) -> None:
    with pytest.raises(ToolFailure) as info:
        parser(text)
    assert info.value.kind == "unreadable" and "line 1" in info.value.message


def test_settings_ignore_fec_and_link_partner_continuations() -> None:
    text = ("Settings for eth1:\n\tSupported link modes:   10baseT/Full\n\t                        100baseT/Full\n"
            "\tLink partner advertised link modes:  10baseT/Half 10baseT/Full\n"
            "\t                                     1000baseT/Full\n\tSpeed: 1000Mb/s\n")
    out = parse_settings(text)
    assert out["supported_link_modes"] == ["10baseT/Full", "100baseT/Full"] and out["speed_mbps"] == 1000


def test_rss_paste_with_two_shows_reads_as_the_last() -> None:
    """Two real ``ethtool -x`` shows one after the other (as a paste of "before" and "after" an
    ``ethtool -L`` has them): the second table replaces the first instead of adding to it."""
    from benchharness.telemetry.parsers.ethtool import parse_rss

    first = (REAL / "ethtool-x" / "i40e_quoted_34_rings_snip_mail.txt").read_text()
    second = (REAL / "ethtool-x" / "ixgbe_82599_63_rings_16_used_tabs_mail.txt").read_text()
    data = parse_rss(first + second)
    assert (data["netdev"], data["rx_rings"], data["table_size"], data["elided"]) == ("eno5", 63, 128, False)
    assert data["rings_used"] == list(range(16))
    data = parse_rss(second + first)
    assert (data["netdev"], data["rx_rings"], data["table_size"], data["elided"]) == ("eth0", 34, 40, True)
