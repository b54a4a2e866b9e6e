"""perftest rows whose figures a copy ran together: perftest separates some columns by tabs only
(``REPORT_FMT_LAT``: ``%-7.2f\\t\\t%-7.2f``; perftest_parameters.h), so a figure of 7 characters or more
touches the next one when a paste drops the tabs. The reader splits them at the printed precision
(2 decimals for times and rates, 6 for MsgRate); a run-together figure that does not split so names
its line (exit 3). The outputs are real (tests/fixtures/real/perftest, SOURCES there) or in the tool's
layout (tests/fixtures/formats/perftest), with the tabs of one row removed here."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure

FIX = Path(__file__).parent / "fixtures"
parse = get_parser("perftest")


def test_latency_row_with_wide_figures_and_dropped_tabs() -> None:
    text = (FIX / "formats" / "perftest" / "send_lat_srd_all_tabs.txt").read_text()
    row = " 2       1000          12.95          986.52       13.45    \t       21.08       \t75.89  \t\t14.54   \t\t986.52"
    assert row in text
    wide = row.replace("21.08", "1021.08").replace("75.89  ", "1075.89").replace("14.54   ", "1014.54")
    plain = parse(text.replace(row, wide))
    glued = parse(text.replace(row, wide.replace("\t", "")))
    assert "1075.891014.54" in wide.replace("\t", "")
    assert glued == plain
    first = next(r for r in glued if r.get("size_bytes") == 2)
    assert (first["lat_avg_us"], first["lat_stdev_us"], first["lat_p99_us"]) == (1021.08, 1075.89, 1014.54)


def test_bandwidth_row_peak_and_average_run_together() -> None:
    text = (FIX / "real" / "perftest" / "write_bw_gbits_rdma_cm_4qp_tos_oci.txt").read_text()
    row = " 65536      20000            98.01              98.01  \t\t   0.186932"
    assert row in text
    (plain,) = [r for r in parse(text) if "bw_avg_gbps" in r]
    (glued,) = [r for r in parse(text.replace(row, " 65536      20000            98.0198.01\t\t   0.186932"))
                if "bw_avg_gbps" in r]
    assert glued == plain and glued["bw_avg_gbps"] == 98.01 and glued["msg_rate_mpps"] == 0.186932


def test_figures_that_do_not_split_name_the_line() -> None:
    text = (FIX / "real" / "perftest" / "write_bw_gbits_rdma_cm_4qp_tos_oci.txt").read_text()
    row = " 65536      20000            98.01              98.01  \t\t   0.186932"
    line_no = text.splitlines().index(row) + 1
    with pytest.raises(ToolFailure) as info:
        parse(text.replace(row, " 65536      20000            98.0.198.01\t\t   0.186932"))
    assert info.value.kind == "unreadable" and f"line {line_no}" in info.value.message
