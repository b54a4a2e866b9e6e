"""Several runs of perftest, nccl-tests and rccl-tests in one paste are read run by run.

The pastes are real published outputs (tests/fixtures/real, SOURCES there): one that holds several
runs as published (four MI325X runs an egrep kept, a server's and a client's ib_send_bw), and two
published outputs one after the other, as an operator pastes a sweep. Each run reads as it reads
alone, numbered ``run`` 1, 2 ...; nothing of one run leaks into another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.tools.nccl_parse import _number_cycles

REAL = Path(__file__).parent / "fixtures" / "real"


def _read(parser: str, name: str) -> Any:
    return get_parser(parser)((REAL / parser / name).read_text())


def _without(rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in keys} for r in rows]


@pytest.mark.parametrize(("first", "second"), [
    ("write_bw_rdma_cm_duration_16qp_cuda_server.txt", "write_bw_rdma_cm_duration_16qp_cuda_client.txt"),
    ("write_lat_server_cx3_two_cpu_freq_warnings_tabs.txt", "write_bw_cx3_fdr10_cpu_freq_warning_between_header_and_row.txt"),
    ("write_bw_all_gbits_cuda_dmabuf_h200.txt", "write_bw_gbits_rdma_cm_4qp_tos_oci.txt"),
])
def test_perftest_two_outputs_one_after_the_other(first: str, second: str) -> None:
    a, b = (REAL / "perftest" / first).read_text(), (REAL / "perftest" / second).read_text()
    alone = [get_parser("perftest")(a), get_parser("perftest")(b)]
    both = get_parser("perftest")(a.rstrip("\n") + "\n" + b)
    assert [r["run"] for r in both] == [1] * len(alone[0]) + [2] * len(alone[1])
    assert _without(both, "run") == alone[0] + alone[1]


def test_perftest_server_and_client_of_one_run_as_published() -> None:
    rows = _read("perftest", "send_bw_bidir_duration_server_then_client_in_c_comments.txt")
    assert [(r["run"], r["role"], r["iterations"]) for r in rows] == [(1, "server", 8758300), (2, "client", 8768313)]
    assert all(r["perftest_test"] == "ib_send_bw" and r["bidir"] for r in rows)


def test_perftest_a_run_without_a_table_gives_no_rows_and_the_others_stay() -> None:
    empty = (REAL / "perftest" / "atomic_bw_server_perftest_2.0_no_table.txt").read_text()
    client = (REAL / "perftest" / "write_bw_gbits_rdma_cm_4qp_tos_oci.txt").read_text()
    rows = get_parser("perftest")(empty.rstrip("\n") + "\n" + client)
    assert {r["run"] for r in rows} == {2}
    assert _without(rows, "run") == get_parser("perftest")(client)


def test_perftest_a_waiting_banner_after_a_table_is_not_that_runs_side() -> None:
    """A server's banner pasted after a client's table (the server of the next run, which printed
    nothing more) leaves the client a client."""
    client = (REAL / "perftest" / "write_bw_gbits_rdma_cm_4qp_tos_oci.txt").read_text()
    server = (REAL / "perftest" / "write_bw_server_waiting_only_echo_line.txt").read_text()
    rows = get_parser("perftest")(client.rstrip("\n") + "\n" + server)
    assert rows == get_parser("perftest")(client)
    assert {r["role"] for r in rows} == {"client"}


def test_nccl_tests_two_outputs_one_after_the_other_keep_their_footers() -> None:
    a = (REAL / "nccl-tests" / "all_reduce_2x_p5_srun_label.txt").read_text()
    b = (REAL / "nccl-tests" / "all_gather_2x8_b200_gib.txt").read_text()
    parse = get_parser("nccl-tests")
    alone_a, alone_b = parse(a), parse(b)
    both = parse(a.rstrip("\n") + "\n" + b)
    footers = [r for r in both if r["kind"] == "footer"]
    assert [f["run"] for f in footers] == [1, 2]
    assert [f["collective"] for f in footers] == [alone_a[-1]["collective"], alone_b[-1]["collective"]]
    assert [f["nranks"] for f in footers] == [alone_a[-1]["nranks"], alone_b[-1]["nranks"]]
    rows = [r for r in both if r["kind"] != "footer"]
    assert _without([r for r in rows if r["run"] == 1], "run") == alone_a[:-1]
    assert _without([r for r in rows if r["run"] == 2], "run") == alone_b[:-1]


def test_rccl_four_runs_an_egrep_kept_without_column_titles() -> None:
    data = _read("rccl-tests", "all_reduce_mi325x_four_runs_egrep_rows_no_header.txt")
    footers = [r for r in data if r["kind"] == "footer"]
    assert [(f["run"], f["run_label"]) for f in footers] == [(1, "1-node"), (2, "2-node"), (3, "4-node"), (4, "8-node")]
    rows = [r for r in data if r["kind"] != "footer"]
    for run in (1, 2, 3, 4):
        mine = [r for r in rows if r["run"] == run]
        assert [r["size_bytes"] for r in mine[::2]] == [4294967296, 8589934592, 17179869184]
        assert all(r["collective"] == "all_reduce" and r["wrong"] == 0 for r in mine)
    # the 8-node run's 8 GiB row as printed: 48321 us, 177.77 / 349.98 GB/s out of place
    row = next(r for r in rows if r["run"] == 4 and r["size_bytes"] == 8589934592 and r["placement"] == "out-of-place")
    assert (row["time_us"], row["algbw_GBps"], row["busbw_GBps"]) == (48321.0, 177.77, 349.98)


def test_rccl_library_version_banner_is_read_and_one_run_has_no_run_number() -> None:
    data = _read("rccl-tests", "all_reduce_2x8_mi300x_rocm642_rccl_version_banner.txt")
    footer = data[-1]
    assert (footer["rccl_version"], footer["rccl_tests_version"], footer["nranks"]) == \
        ("2.22.3-HEAD:7d8d67c", "develop:448c4c7", 16)
    assert not any("run" in r for r in data)  # two mpirun command lines before the output open no run


def test_repeated_sweeps_are_numbered_as_cycles() -> None:
    """nccl-tests -N prints its sweep again with no line between: a size that does not grow for the
    same type, op, root and placement is the next cycle; -d all sweeps (another type) are not."""
    def rec(size: int, dtype: str = "float", placement: str = "out-of-place") -> dict[str, Any]:
        return {"size_bytes": size, "type": dtype, "redop": "sum", "root": -1, "placement": placement}
    rows = [rec(8), rec(8, placement="in-place"), rec(16), rec(8, "double"), rec(16, "double"), rec(8), rec(16)]
    _number_cycles(rows)
    assert [r["cycle"] for r in rows] == [1, 1, 1, 1, 1, 2, 2]
    once = [rec(8), rec(16), rec(8, "double")]
    _number_cycles(once)
    assert not any("cycle" in r for r in once)
