"""nccl-tests / rccl-tests output parser.

No GPUs here: the fixtures under tests/fixtures/nccl/ are written in the tools' real printf formats
(nccl-tests src/common.cu for 2.0-2.16, src/util.cu for 2.17, rccl-tests src/common.cu and its
Reporter for CSV/JSON); the mpirun_*.txt fixtures are real Open MPI 4.1 output captured on this
machine. Each fixture has its expected parse beside it (``*.expected.json``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchharness.core.errors import ToolFailure
from benchharness.results import measures
from benchharness.tools.nccl_parse import collective_name, parse_nccl_tests, strip_tags
from benchharness.tools.nccl_tests import NCCL, RCCL

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
CASES = sorted(p for p in FIXTURES.iterdir() if p.is_file() and not p.name.endswith(".expected.json"))


def expected_for(path: Path) -> dict:
    return json.loads(path.with_name(path.stem + ".expected.json").read_text())


def parse(name: str, collective: str | None = None):
    return parse_nccl_tests((FIXTURES / name).read_text(), collective)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.name)
def test_fixture_matches_expected_parse(path: Path) -> None:
    expected = expected_for(path)
    text = path.read_text()
    if "error" in expected:
        with pytest.raises(ToolFailure) as info:
            parse_nccl_tests(text, expected["collective_arg"])
        assert info.value.kind == expected["error"]["kind"]
        assert str(info.value) == expected["error"]["message"]
    else:
        assert parse_nccl_tests(text, expected["collective_arg"]).all_records() == expected["records"]


def test_every_collective_has_a_fixture() -> None:
    found = set()
    for path in CASES:
        expected = expected_for(path)
        for rec in expected.get("records", []):
            found.add(rec.get("collective"))
    found |= {"alltoall"}  # its fixture is the wrong-results one, which has no records
    assert {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv",
            "gather", "scatter", "hypercube"} <= found


def test_nccl_tests_217_table_values_ranks_and_footer() -> None:
    run = parse("nccl-tests-2.17-all_reduce-2x4-h100.txt")
    assert run.meta["collective"] == "all_reduce"  # from "# Collective test starting: all_reduce_perf"
    assert run.meta["nccl_tests_version"] == "2.17.6"
    assert run.meta["avg_busbw_GBps"] == pytest.approx(76.5382)
    assert run.meta["out_of_bounds"] == 0
    first = run.records[0]
    assert (first["size_bytes"], first["count"], first["type"], first["redop"], first["root"]) == (8, 2, "float",
                                                                                                      "sum", -1)
    assert (first["placement"], first["time_us"], first["wrong"]) == ("out-of-place", 20.0, 0)
    last = run.records[-1]
    assert (last["size_bytes"], last["placement"]) == (134217728, "in-place")
    # printed "%6s" with getFloatStr: busbw = algbw * 2(n-1)/n for 8 ranks, to the printed precision
    assert last["busbw_GBps"] / last["algbw_GBps"] == pytest.approx(1.75, rel=1e-3)
    assert len(run.ranks) == 8
    assert run.ranks[5] == {"rank": 5, "group": 0, "pid": 40101, "host": "gpu02", "device": 1,
                            "bus_id": "0000:43:00", "gpu": "NVIDIA H100 80GB HBM3"}


def test_tag_output_and_log_lines_inside_a_row() -> None:
    run = parse("nccl-tests-2.15-all_gather-tag-output.txt", "all_gather")
    sizes = sorted({r["size_bytes"] for r in run.records})
    assert sizes == [1024, 8192, 65536, 524288, 4194304, 33554432]
    # the first row was cut by NCCL's lazy-connect log lines, glued to its root column
    first = run.records[:2]
    assert [(r["placement"], r["time_us"], r["root"]) for r in first] == [("out-of-place", 30.05, -1),
                                                                           ("in-place", 29.45, -1)]
    assert [r["host"] for r in run.ranks] == ["node01", "node01", "node02", "node02"]
    assert run.ranks[0]["bus_id"] == "0x07"
    assert "[1,0]" not in strip_tags("[1,0]<stdout>:a[1,0]<stdout>:\n[1,12]<stderr>:b")


def test_adapter_parse_text_attaches_nccl_transport() -> None:
    records = NCCL.parse_text((FIXTURES / "nccl-tests-2.15-all_gather-tag-output.txt").read_text())
    results = [r for r in records if r["kind"] == "summary"]
    assert results and all(r["nccl_network"] == "IB" and r["nccl_gdr"] is True for r in results)
    assert records[-1]["kind"] == "footer" and records[-1]["nranks"] == 4


def test_check_off_prints_na_and_gives_none() -> None:
    run = parse("nccl-tests-2.15-reduce_scatter-check-off.txt", "reduce_scatter")
    assert len(run.records) == 8
    assert all(r["wrong"] is None for r in run.records)


def test_wrong_elements_raise_not_numbers() -> None:
    with pytest.raises(ToolFailure) as info:
        parse("nccl-tests-2.15-alltoall-wrong.txt", "alltoall")
    assert info.value.kind == "wrong_results"
    assert "262144 wrong elements at 1048576 B in-place" in str(info.value)


def test_wrong_rows_are_kept_flagged_with_their_figures_never_as_measurements() -> None:
    with pytest.raises(ToolFailure) as info:
        parse("nccl-tests-2.15-alltoall-wrong.txt", "alltoall")
    rows = [r for r in info.value.records if r["kind"] != "footer"]
    assert len(rows) == 6 and info.value.records[-1]["kind"] == "footer"
    bad = [r for r in rows if r.get("valid") is False]
    assert [(r["size_bytes"], r["placement"], r["wrong"], r["busbw_GBps"]) for r in bad] == [
        (1048576, "in-place", 262144, 9.64), (16777216, "out-of-place", 17, 14.48)]
    assert all(r["kind"] == "invalid" and "wrong elements" in r["invalid_reason"] for r in bad)
    assert not any(measures.is_summary(r) for r in bad)
    assert all(measures.is_summary(r) for r in rows if r not in bad)  # rows with 0 wrong stay measurements


def test_bench_parse_prints_the_kept_rows_and_fails() -> None:
    res = subprocess.run([sys.executable, "-m", "benchharness", "parse", "nccl-tests",
                          str(FIXTURES / "nccl-tests-2.15-alltoall-wrong.txt")],
                         capture_output=True, text=True, timeout=60, check=False)
    assert res.returncode != 0 and "wrong_results" in res.stderr
    kept = json.loads(res.stdout)
    assert sum(1 for r in kept if r.get("valid") is False) == 2


def test_old_error_column_is_a_delta_not_a_count() -> None:
    run = parse("nccl-tests-2.4-broadcast-error-column.txt", "broadcast")
    assert all(r["wrong"] is None and r["max_delta_tool"] == 0.0 for r in run.records)
    assert run.records[0]["root"] == 0 and run.records[0]["redop"] is None
    cube = parse("nccl-tests-2.4-hypercube-no-redop-root.txt", "hypercube")
    assert cube.records[0]["root"] is None and cube.records[0]["type"] == "float"
    with pytest.raises(ToolFailure) as info:  # "9e-02*": above the threshold, and Out of bounds FAILED
        parse("nccl-tests-2.7-reduce-error-flagged.txt", "reduce")
    assert info.value.kind == "wrong_results"


def test_nccl_tests_json_output() -> None:
    doc = json.loads((FIXTURES / "nccl-tests-2.17-reduce.json").read_text())
    run = parse("nccl-tests-2.17-reduce.json")
    assert run.meta["collective"] == "reduce"  # from args[0] ./build/reduce_perf
    assert len(run.records) == 2 * len(doc["results"])
    rec = run.records[3]
    src = doc["results"][1]["in_place"]
    assert (rec["placement"], rec["root"], rec["size_bytes"]) == ("in-place", 0, doc["results"][1]["size"])
    assert (rec["time_us"], rec["algbw_GBps"], rec["busbw_GBps"], rec["wrong"]) == (
        src["time"], src["alg_bw"], src["bus_bw"], 0)
    assert [r["bus_id"] for r in run.ranks] == ["0000:1b:00", "0000:43:00", "0000:52:00", "0000:61:00"]


def test_rccl_csv_new_and_old_headers() -> None:
    run = parse("rccl-tests-all_reduce.csv")
    assert run.meta["nranks"] == 16 and run.meta["collective"] == "all_reduce"
    assert [r["placement"] for r in run.records[:2]] == ["out-of-place", "in-place"]
    assert run.records[-1]["busbw_GBps"] / run.records[-1]["algbw_GBps"] == pytest.approx(2 * 15 / 16, rel=1e-5)
    old = parse("rccl-tests-all_gather-old.csv")
    # the old MPI rows carry one more value (nodes) than the header names; values align from the right
    assert [r["size_bytes"] for r in old.records] == [8192, 8192, 524288, 524288, 33554432, 33554432]
    assert all(r["collective"] == "all_gather" and r["wrong"] == 0 for r in old.records)


def test_rccl_json_and_text() -> None:
    run = parse("rccl-tests-gather.json")
    assert run.meta["collective"] == "gather" and all(r["wrong"] is None for r in run.records)
    text = parse("rccl-tests-scatter-mi300x.txt", "scatter")
    assert text.meta["rccl_tests_version"] == "develop:9f8ddad"
    assert text.ranks[0] == {"rank": 0, "group": None, "pid": 51200, "host": "mi300-01", "device": 0,
                             "bus_id": "0000:0c:00.0", "gpu": "AMD Instinct MI300X"}
    assert RCCL.parse_text((FIXTURES / "rccl-tests-scatter-mi300x.txt").read_text())[0]["backend"] == "rccl-tests"


@pytest.mark.parametrize(("name", "kind", "words"), [
    ("nccl-tests-nccl-failure.txt", "nccl_error", "unhandled system error"),
    ("nccl-tests-cuda-failure.txt", "cuda_error", "out of memory"),
    ("mpirun_not_enough_slots.txt", "launch_failed", "not enough slots"),
    ("mpirun_orte_daemons.txt", "launch_failed", "daemons"),
    ("mpirun_executable_missing.txt", "tool_missing", "/nonexistent/nccl-tests/build/all_reduce_perf"),
])
def test_failures_have_kinds(name: str, kind: str, words: str) -> None:
    with pytest.raises(ToolFailure) as info:
        parse(name)
    assert info.value.kind == kind
    assert words in str(info.value)


HEAD = ("#       size         count      type   redop    root  {t}   algbw   busbw #wrong  {t}   algbw   busbw "
        "#wrong\n")
BANNER = "#                                                              out-of-place                       in-place\n"


def test_large_wrong_count_in_g_format_and_cputime() -> None:
    text = BANNER + HEAD.format(t="cputime") + (
        "        1024           256     float     sum      -1    12.10    0.08    0.15      0    11.90    0.09    0.16"
        "      0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.155 \n")
    rec = parse_nccl_tests(text, "all_reduce").records[0]
    assert rec["time_is_cputime"] is True and rec["time_us"] == 12.10
    bad = text.replace("0.16      0\n", "0.16  1.23457e+06\n")
    with pytest.raises(ToolFailure, match="1234570 wrong elements"):
        parse_nccl_tests(bad, "all_reduce")


def test_in_place_only_and_timestamps_and_per_iteration() -> None:
    only_in = ("#                                                  in-place\n"
               "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
               "        4096          1024     float     sum      -1    20.00    0.20    0.36      0\n")
    (rec,) = parse_nccl_tests(only_in, "all_reduce").records
    assert rec["placement"] == "in-place" and rec["busbw_GBps"] == 0.36
    stamped = BANNER + HEAD.format(t="time").rstrip("\n") + " timestamp\n" + (
        "        4096          1024     float     sum      -1    20.00    0.20    0.36      0    19.00    0.22"
        "    0.38      0  2025-06-02 14:11:09\n")
    recs = parse_nccl_tests(stamped, "all_reduce").records
    assert [r["timestamp"] for r in recs] == ["2025-06-02 14:11:09"] * 2
    per_iter = ("#  out-of-place (+ per-iteration)   in-place (+ per-iteration)\n"
                "#  size count type redop root time algbw busbw #wrong i_min i_max i_p99 i_cv% "
                "time algbw busbw #wrong i_min i_max i_p99 i_cv%\n"
                "  1024  256  float  sum  -1  10.00  0.10  0.18  0  9.50  12.00  11.80  4.20"
                "  9.90  0.10  0.18  0  9.40  11.00  10.90  3.10\n")
    out, inp = parse_nccl_tests(per_iter, "all_reduce").records
    assert (out["iter_p99_us"], out["iter_cv_pct"], inp["iter_min_us"]) == (11.80, 4.20, 9.40)


def test_no_rows_crash_and_min_bandwidth() -> None:
    with pytest.raises(ToolFailure) as info:
        parse_nccl_tests("# nThread 1 nGpus 1\n", "all_reduce")
    assert info.value.kind == "no_results"
    crash = ("mpirun noticed that process rank 1 with PID 0 on node gpu02 exited on signal 11 "
             "(Segmentation fault).\n")
    with pytest.raises(ToolFailure) as info:
        parse_nccl_tests(crash)
    assert info.value.kind == "crashed"
    slow = BANNER + HEAD.format(t="time") + (
        "        4096          1024     float     sum      -1    20.00    0.20    0.36      0    19.00    0.22"
        "    0.38      0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.37 FAILED\n")
    with pytest.raises(ToolFailure) as info:
        parse_nccl_tests(slow, "all_reduce")
    assert info.value.kind == "below_min_bw"


@pytest.mark.parametrize(("name", "op"), [("all_reduce_perf", "all_reduce"), ("./build/alltoall_perf", "alltoall"),
                                          ("AllReduce", "all_reduce"), ('"ReduceScatter"', "reduce_scatter"),
                                          ("SendRecv", "sendrecv"), ("HyperCube", "hypercube"),
                                          ("bcast", "broadcast"), (None, None)])
def test_collective_names(name: str | None, op: str | None) -> None:
    assert collective_name(name) == op
