"""nccl-tests / rccl-tests outputs as published (tests/fixtures/real, SOURCES there): the figures and
facts that matter more than an expectation subset.

* Sizes a collective rounds down to no element repeat as 0 B rows at the start of one sweep: they are
  no second cycle (the rows after them were all numbered cycle 2 .. 5).
* A ``-N`` run of one size still numbers its repeated rows as cycles.
* A table whose figures a writer masked (``XXXXX``) is refused naming its line, never rows without figures.
* Outputs a writer cut to their last rank line and table, under Markdown headings, stay apart, each with
  the rank count its last rank line gives.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchharness.cli.parsers import get_parser
from benchharness.core.errors import ToolFailure
from benchharness.tools.nccl_parse import _OPENS, NcclRun, _header_line, _number_cycles, parse_nccl_tests

REAL = Path(__file__).parent / "fixtures" / "real" / "nccl-tests"


def _read(name: str) -> list[dict[str, Any]]:
    return list(get_parser("nccl-tests")((REAL / name).read_text()))


def _rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("kind") in ("summary", "invalid")]


@pytest.mark.parametrize("name", ["all_gather_8x_a100_no_redop_column_zero_size_rows_check_off.log",
                                  "reduce_8x_a100_root_and_error_columns_zero_size_rows.log",
                                  "all_gather_2x_a3mega_markdown_list_indent_zero_size_rows.txt"])
def test_repeated_zero_byte_rows_are_one_sweep(name: str) -> None:
    rows = _rows(_read(name))
    assert not any("cycle" in r for r in rows)
    zero = [r for r in rows if r["size_bytes"] == 0 and r["placement"] == "out-of-place"]
    assert len(zero) >= 2
    sizes = [r["size_bytes"] for r in rows if r["placement"] == "out-of-place"]
    assert sizes == sorted(sizes) and sizes[-1] == 8589934592


def test_cycles_of_a_one_size_run_and_of_a_sweep_that_starts_at_zero() -> None:
    def rec(size: int) -> dict[str, Any]:
        return {"size_bytes": size, "type": "float", "redop": "sum", "root": -1, "placement": "out-of-place"}
    same = [rec(1 << 30) for _ in range(3)]
    _number_cycles(same, one_size=True)
    assert [r["cycle"] for r in same] == [1, 2, 3]
    swept = [rec(0), rec(0), rec(32), rec(64), rec(0), rec(0), rec(32), rec(64)]
    _number_cycles(swept, one_size=False)
    assert [r["cycle"] for r in swept] == [1, 1, 1, 1, 2, 2, 2, 2]
    # the settings line says the sweep is one size: -b 1G -e 1G -N 3
    text = ("# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0\n"
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
            + "  1073741824     268435456     float     sum      -1   5808.0  184.87  365.90      0   5882.2  182.54  361.28      0\n" * 3)
    run = parse_nccl_tests(text)
    assert [r["cycle"] for r in run.records] == [1, 1, 2, 2, 3, 3]
    assert (run.meta["min_bytes"], run.meta["max_bytes"], run.meta["graph"]) == (1073741824, 1073741824, 0)


def test_masked_figures_are_refused_naming_the_line() -> None:
    with pytest.raises(ToolFailure) as info:
        parse_nccl_tests((REAL / "all_gather_masked_figures_refused.txt").read_text())
    assert info.value.kind == "unreadable"
    assert "line 6" in info.value.message and "XXXXX" in info.value.message
    done = subprocess.run([sys.executable, "-m", "benchharness", "parse", "nccl-tests",
                           str(REAL / "all_gather_masked_figures_refused.txt")], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr


def test_outputs_under_markdown_headings_cut_to_their_last_rank_line() -> None:
    records = _read("all_reduce_gb200_three_outputs_markdown_headings_last_rank_only.txt")
    footers = [r for r in records if r.get("kind") == "footer"]
    assert [(f["run"], f["run_label"], f["nranks"], f["ranks_elided"], f["avg_busbw_GBps"]) for f in footers] == [
        (1, "Single Rack", 72, True, 745.53), (2, "2 Racks", 144, True, 688.487), (3, "20 Racks", 1440, True, 297.808)]
    rows = _rows(records)
    assert [sum(r["run"] == n for r in rows) for n in (1, 2, 3)] == [10, 12, 12]
    assert not any("cycle" in r for r in rows)
    peak = max((r for r in rows if r["run"] == 3), key=lambda r: r["busbw_GBps"])
    assert (peak["size_bytes"], peak["placement"], peak["busbw_GBps"]) == (17179869184, "out-of-place", 405.74)


def test_settings_line_of_a_kubectl_logs_paste() -> None:
    records = _read("all_reduce_h100_64_kubectl_logs_prompts_elided.txt")
    footer = records[-1]
    assert (footer["ngpus"], footer["warmup_iters"], footer["iters"], footer["validation"]) == (1, 50, 50, 1)
    assert "agg_iters" not in footer and "graph" not in footer  # that nccl-tests printed neither
    assert [r["busbw_GBps"] for r in _rows(records) if r["placement"] == "out-of-place"] == \
        [356.01, 365.90, 380.73, 383.23, 386.56]


def test_rccl_tests_version_line_and_concluded_line() -> None:
    """rccl-tests 2.17.9 (ROCm 7.1 on) prints nccl-tests' version line under its own name, and closes each
    output with "# Collective test concluded: NAME"; the lines as published in
    https://github.com/ROCm/rocm-systems/pull/3415 (review by speriaswamy-amd, 2026-02-26) and
    https://github.com/ROCm/rccl/pull/2075 (description by ChihayaK)."""
    run = NcclRun(meta={})
    line = ("# rccl-tests version 2.17.9-users/speriaswamy-amd/gfx1151-rccl-tests-enablement:f220897c9b "
            "rccl-headers=22803 rccl-library=22803")
    _header_line(line, run, None, None, "", None)
    assert run.meta == {"rccl_tests_version": "2.17.9-users/speriaswamy-amd/gfx1151-rccl-tests-enablement:f220897c9b",
                        "rccl_library_version": 22803}
    name, *_ = _header_line("# Collective test concluded: broadcast_perf", run, None, None, "", None)
    assert name == "broadcast_perf"
    assert _OPENS.match(line)  # a second output opens at it
