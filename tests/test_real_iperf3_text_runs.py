"""iperf3 text figures of published outputs that a subset check does not pin down.

The texts are fixtures under tests/fixtures/real/iperf3 (see SOURCES there): clients stopped by ^C
(the far end's 0.00 Bytes line is no measurement), a ``-T`` title before every line, two clients'
outputs in one paste (each its own run), ``-O`` omitted intervals and ``nan%`` loss of 0/0 datagrams.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.tools.iperf3_text import parse_text_output

REAL = Path(__file__).parent / "fixtures" / "real" / "iperf3"


def _read(name: str) -> list[dict]:
    return parse_text_output((REAL / name).read_text())


def _summaries(records: list[dict]) -> list[dict]:
    return [r for r in records if r["kind"] == "summary"]


def test_an_interrupted_client_is_read_from_the_line_it_measured_never_the_zero_receiver_line() -> None:
    # "[  4]   0.00-25.91  sec   638 MBytes   207 Mbits/sec    0   sender" then "0.00 Bytes ... receiver"
    records = _read("tcp_client_3.1_rst_indented_ctrl_c_receiver_zero.txt")
    (summary,) = _summaries(records)
    assert summary["measured_at"] == "sender" and summary["bw_avg_gbps"] == pytest.approx(0.207)
    assert summary["bytes"] == 638 * 1024 ** 2 and summary["partial"] is True
    assert "interrupt" in summary["partial_reason"] and "receiver" in summary["partial_reason"]
    # "  ^C[  4]  25.00-25.91  sec ..." is still an interval
    assert [r["t_end_s"] for r in records if r["kind"] == "interval"][-1] == pytest.approx(25.91)


def test_a_titled_reverse_client_stopped_by_ctrl_c_keeps_its_received_figures_and_no_sent_rate() -> None:
    records = _read("tcp_client_title_T_reverse_ctrl_c_interrupt.txt")
    (summary,) = _summaries(records)
    assert summary["direction"] == "reverse" and summary["measured_at"] == "receiver"
    assert summary["bw_avg_gbps"] == pytest.approx(172e3 / 1e9) and summary["partial"] is True
    assert "bw_sent_gbps" not in summary  # the server's "0.00 Bytes ... sender" never came
    assert len([r for r in records if r["kind"] == "interval"]) == 6


@pytest.mark.parametrize(("name", "want"), [
    ("tcp_clients_3.1_tap_then_tun_markdown_details_two_runs.txt",
     [(1, "forward", 0.272, 487), (2, "forward", 0.283, 558)]),
    ("tcp_clients_3.x_and_and_reverse_then_forward_two_runs.txt",
     [(1, "reverse", 0.403, 1769), (2, "forward", 0.218, 0)]),
])
def test_two_clients_in_one_paste_stay_two_runs(name: str, want: list[tuple]) -> None:
    got = [(r["run"], r["direction"], r["bw_avg_gbps"], r["retransmits"]) for r in _summaries(_read(name))]
    assert [(run, d, pytest.approx(bw), rt) for run, d, bw, rt in want] == got


def test_omitted_intervals_are_flagged_and_nan_loss_is_no_loss_rate() -> None:
    with pytest.raises(ToolFailure) as info:
        _read("udp_reverse_client_omitted_nan_percent_cut.txt")
    assert info.value.kind == "no_results"
    rows = info.value.records
    assert [r["omitted"] for r in rows] == [True] * 5 + [False] * 8
    assert rows[0]["loss_pct"] == 0.0 and rows[0]["packets"] == 14
    assert all("loss_pct" not in r and r["packets"] == 0 for r in rows[1:])  # "0/0 (nan%)"
    assert rows[1]["jitter_ms"] == pytest.approx(44260133838.438)

