"""perftest, nccl-tests and NCCL debug logs as published (tests/fixtures/real, SOURCES there): the
figures and facts that matter more than an expectation subset.

* A perftest output pasted under both commands (the receiver's, then the client's) is the client's:
  the output follows the last command line; a long option's value (``--force-link IB``) is no host.
* Tables pasted without their test titles, one after the other, are two runs; figures a reader
  put in Markdown bold are read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchharness.cli.parsers import get_parser
from benchharness.tools import perftest_parse

REAL = Path(__file__).parent / "fixtures" / "real"


def _text(parser: str, name: str) -> str:
    return (REAL / parser / name).read_text()


def _read(parser: str, name: str) -> Any:
    return get_parser(parser)(_text(parser, name))


def test_perftest_output_under_the_receivers_and_the_clients_command_is_the_clients() -> None:
    text = _text("perftest", "write_lat_rdma_cm_dgx_spark_receiver_then_client_commands.txt")
    receiver = next(line for line in text.splitlines() if line.startswith("ib_write_lat -d"))
    # the receiver's own line: '--force-link IB' takes IB as its value, so no host is named
    assert perftest_parse._side_of_command(receiver) == "server"
    [row] = _read("perftest", "write_lat_rdma_cm_dgx_spark_receiver_then_client_commands.txt")
    assert (row["role"], row["perftest_test"], row["lat_p99_us"], row["lat_p999_us"]) == \
        ("client", "ib_write_lat", 1.57, 1.93)


def test_perftest_long_options_with_a_separate_value_are_not_hosts() -> None:
    assert perftest_parse._side_of_command("ib_write_bw -d mlx5_0 --iters 5000 --size 65536") == "server"
    assert perftest_parse._side_of_command("ib_write_bw --use_cuda 0 -a 10.0.0.2") == "client"
    assert perftest_parse._side_of_command("ib_write_bw --report_gbits --run_infinitely") == "server"


def test_perftest_untitled_tables_one_after_the_other_are_two_runs_with_bold_figures() -> None:
    rows = _read("perftest", "send_bw_two_runs_markdown_bold_figures_no_title.txt")
    assert [(r["run"], r["size_bytes"], r["bw_avg_MBps_tool"]) for r in rows] == \
        [(1, 1024, 5544.28), (2, 1024, 920.13)]
    assert not any("bw_peak_gbps" in r for r in rows)  # 0.00 printed: no peak measured


def test_nccl_debug_a_plugin_whose_ib_transport_found_no_device_is_not_the_network() -> None:
    """HPC-X's RDMA plugin (IBext) and SHARP load, then 'NET/IB : No device found.': the quote stops
    before the line that names the network, so the network is unknown, never 'NCCL RDMA Plugin'."""
    got = _read("nccl-debug", "ibext_plugin_2.21.5_no_ib_device_cut_before_socket_line.log")
    assert (got["network"], got["plugins"], got["devices"], got["nccl_version"]) == \
        (None, ["NCCL RDMA Plugin", "SHARP"], [], "2.21.5+cuda11.8")
