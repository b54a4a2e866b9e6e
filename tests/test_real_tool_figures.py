"""Figures of published benchmark outputs that a subset check does not pin down.

The texts are fixtures under tests/fixtures/real (see SOURCES there): iperf3 ``--timestamps``
outputs whose lines start with a date and time or with epoch seconds, ucx_perftest texts with
several tests or the ``-f`` header, the nccl-tests version line with its git hash.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure
from benchharness.tools.iperf3_text import parse_text_output
from benchharness.tools.textclean import clean_line
from benchharness.tools.ucx_perftest import parse_output as parse_ucx

REAL = Path(__file__).parent / "fixtures" / "real"


@pytest.mark.parametrize(("name", "first", "last", "count"), [
    # "Wed May 14 11:21:02 2025 [  5]  15.00-16.00  sec   106 MBytes   889 Mbits/sec  204 ..."
    ("server_3.18_timestamps_default_format_p_streams_cut.txt", (0.889, 204), (0.375, 106), 7),
    # "2021-28-09 13:12:35 [  5]   0.00-1.03   sec  39.4 KBytes   314 Kbits/sec"
    ("tcp_client_3.9_nrf_timestamps_custom_format_cut.txt", (0.000314, None), (0.000303, None), 5),
    # "1601064279 [  5]   0.00-1.00   sec  3.76 GBytes  32.3 Gbits/sec    0   2.00 MBytes"
    ("tcp_client_timestamps_epoch_seconds_format_cut.txt", (32.3, 0), (32.3, 0), 1),
])
def test_iperf3_timestamped_intervals_are_read_and_kept_without_a_summary(
        name: str, first: tuple[float, int | None], last: tuple[float, int | None], count: int) -> None:
    with pytest.raises(ToolFailure) as info:
        parse_text_output((REAL / "iperf3" / name).read_text())
    assert info.value.kind == "no_results" and "only interval lines" in str(info.value)
    kept = info.value.records
    assert len(kept) == count and all(r["kind"] == "interval" for r in kept)
    for rec, (gbps, retr) in ((kept[0], first), (kept[-1], last)):
        assert rec["bw_avg_gbps"] == pytest.approx(gbps)
        assert rec.get("retransmits") == retr


@pytest.mark.parametrize(("line", "rest"), [
    ("Wed May 14 11:21:02 2025 [  5]  15.00-16.00  sec", "[  5]  15.00-16.00  sec"),  # iperf3 "%c "
    ("    Wed May 14 11:21:02 2025 - - - - -", "- - - - -"),                            # indented block
    ("2021-28-09 13:12:33       Cookie: nrf9160", "      Cookie: nrf9160"),             # "%Y-%d-%m %H:%M:%S "
    ("Tue Sep 28 13:12:33 UTC 2021 Connecting to host", "Connecting to host"),          # date(1)
    ("09/28/21 13:12:33 NCCL INFO Using network IB", "NCCL INFO Using network IB"),     # a word is no zone
    ("Time: Tue, 28 Sep 2021 13:12:33 GMT", "Time: Tue, 28 Sep 2021 13:12:33 GMT"),     # iperf3's own line
    ("        8192          2048     float     sum", "        8192          2048     float     sum"),
])
def test_a_date_and_time_before_a_line_is_stripped_and_nothing_else(line: str, rest: str) -> None:
    assert clean_line(line) == rest


def test_ucx_perftest_reads_each_test_and_never_a_progress_row() -> None:
    text = (REAL / "ucx_perftest" / "tag_bw_then_tag_sync_bw_banners_second_cut.txt").read_text()
    records = parse_ucx(text)
    assert [r["ucx_test"] for r in records] == ["tag_bw"]  # tag_sync_bw is cut before its rows
    assert records[0]["iterations"] == 1000  # the Final: row, not the [thread 0] row of 622
    assert records[0]["bw_avg_MBps_tool"] == pytest.approx(46743.62)
    # the progress row alone is no result
    progress_only = "\n".join(ln for ln in text.splitlines() if not ln.startswith("Final:"))
    with pytest.raises(ToolFailure):
        parse_ucx(progress_only.split("=== tag_sync_bw")[0])


def test_ucx_perftest_test_header_without_rows_is_no_result() -> None:
    with pytest.raises(ToolFailure) as info:
        parse_ucx((REAL / "ucx_perftest" / "ucp_put_bw_f_test_header_proto_info_cut.txt").read_text())
    assert info.value.kind == "no_result"


def test_nccl_tests_version_line_with_git_hash_keeps_the_library_version() -> None:
    text = (REAL / "nccl-tests" / "all_reduce_2x_gb10_v2_20_collective_starting_pci_domain_cut.txt").read_text()
    footer = next(r for r in get_parser("nccl-tests")(text) if r["kind"] == "footer")
    assert footer["nccl_tests_version"] == "2.20.0"
    assert footer["nccl_library_version"] == 23102
