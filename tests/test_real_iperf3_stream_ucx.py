"""Figures of real published iperf3 --json-stream / error documents and pre-1.10 ucx_perftest
outputs that matter beyond the fixture subsets (tests/fixtures/real, SOURCES there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure
from benchharness.tools.iperf3_parse import join_stream_events, split_documents

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(rel: str) -> str:
    return (REAL / rel).read_text(encoding="utf-8")


def test_json_stream_error_event_is_the_runs_error_not_a_missing_summary() -> None:
    # before: each event read as a -J document of its own -> no_results ("no end summary")
    with pytest.raises(ToolFailure) as info:
        get_parser("iperf3")(_text("iperf3/json_stream_3.17_error_server_busy_then_empty_end_prompt.txt"))
    assert info.value.kind == "server_busy"
    assert "document" not in info.value.message  # one run, not two documents


def test_json_stream_events_join_into_one_document_per_start() -> None:
    docs = split_documents(_text("iperf3/json_stream_3.17_error_server_busy_then_empty_end_prompt.txt"))
    assert join_stream_events(docs) == [{"intervals": [], "error": "the server is busy running a test. "
                                                                  "try again later", "end": {}}]
    start = {"event": "start", "data": {"test_start": {"protocol": "TCP", "num_streams": 1}}}
    interval = {"event": "interval", "data": {"sum": {"start": 0, "end": 1, "seconds": 1, "bytes": 8,
                                                       "bits_per_second": 64, "sender": True}}}
    two_runs = join_stream_events([start, interval, start, interval])
    assert len(two_runs) == 2 and all(len(d["intervals"]) == 1 for d in two_runs)
    whole = {"start": {}, "intervals": [], "end": {}}  # a -J document passes through
    assert join_stream_events([whole]) == [whole]


def test_json_stream_bidir_interval_keeps_both_directions_apart() -> None:
    # before: the event object read as a -J document without intervals -> no_results
    rows = get_parser("iperf3")(_text("iperf3/json_stream_tcp_bidir_one_interval_event_fenced.txt"))
    intervals = [r for r in rows if r["kind"] == "interval"]
    assert [(r["direction"], r["bytes"]) for r in intervals] == [("forward", 3935043584), ("reverse", 3690070016)]
    assert all(r["partial"] for r in rows if r["kind"] == "summary")


def test_iperf3_3_0_11_error_document_is_connect_failed() -> None:
    with pytest.raises(ToolFailure) as info:
        get_parser("iperf3")(_text("iperf3/json_3.0.11_error_no_route_to_host_empty_end.json"))
    assert info.value.kind == "connect_failed"
    assert json.loads(_text("iperf3/json_3.0.11_error_no_route_to_host_empty_end.json"))["start"]["version"] \
        == "iperf 3.0.11"


@pytest.mark.parametrize(("rel", "mbps"), [
    ("ucx_perftest/tag_bw_pre_1.10_ib_server_box_between_header_and_row.txt", 10474.41),
    ("ucx_perftest/tag_bw_pre_1.10_nvlink_rst_section_server_box_row_last.txt", 22904.52),
])
def test_pre_1_10_bandwidth_test_reads_overhead_with_the_server_box(rel: str, mbps: float) -> None:
    # before: the box after the header was lost (no size, no test name) and the columns were
    # read as latency because pre-1.10 releases title every test "latency (usec)"
    [rec] = get_parser("ucx_perftest")(_text(rel))
    assert rec["bw_avg_MBps_tool"] == mbps
    assert rec["size_bytes"] == 100_000_000 and rec["ucx_test_desc"] == "tag match bandwidth"
    assert "overhead_avg_us" in rec and not any(k.startswith("lat_") for k in rec)
